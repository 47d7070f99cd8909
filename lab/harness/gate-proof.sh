#!/bin/sh
# gate-proof.sh - one device call that measures what the regression gate (f3dbench compare) calls slower
# when nothing changed (A/A pairs) and when one kernel was slowed down on purpose (planted pairs).
# From the repository root, .deps carried (cmocka/liblzf debs; device-common.sh unpacks them):
#   1. build: one build dir ($BUILD), f3dbench built three times: normal, then meson -Dplant_delay_pct=10 and =5
#      (baselines/shuf_gpu.cu: the main-path gather v3 of 384 B rows, ptv3/gather_qkv_C64/v3, does 10% / 5% more
#      rows; and nets/layers.cu: both backbones' unpooling gather-add, ptv3-net/unpool/ptv3 and
#      flash3d-net/unpool/flash3d-46m, does as many more rows; only libbaselines' CUDA objects, layers.cu and the
#      program are rebuilt between them); each binary is copied to
#      $BUILD/gate-bin/ and the build dir is set back to 0, so it is never left planted;
#   2. calibration: $CAL normal runs, `compare --calibrate` (kept in $BUILD/gate-bin/calibration.csv and reused by
#      later calls on a warm machine unless RECALIBRATE=1);
#   3. rounds: one normal run N0, then per round i = 1..PAIRS: planted 10% P10_i, planted 5% P5_i, normal N_i (the
#      order spreads drift over all three). A/A pair (N_{i-1}, N_i); planted pairs (N_{i-1}, P10_i), (N_{i-1}, P5_i):
#      the baseline is the run before, as in CI;
#   4. each pair is gated twice, plain (min effect and batch noise) and with the calibration, --csv kept;
#   5. pairs.tsv (one line per gated pair) and the summary table (also: gate-proof.sh summarize DIR...).
# Every run is `sweep --preset ci` narrowed to what fits: the full preset (ptv3 and flash3d at 100k and 300k,
# ~70 GPU stages, ~1-2 minutes) allows ~5 runs in a 10-minute call, and the proof needs 3 x PAIRS + 1 + CAL runs, so
# the default is the preset at one size and one pipeline (PIPELINES=ptv3 SIZES=300k: 10 GPU stages, one of them
# the planted one) with a shorter sampling cap (MAX_TIME=0.25 s), ~10 s a run; a round (3 runs) ~30 s. The script
# starts no round that would end after DEADLINE_S (540 s from its start, build included) and says how many pairs
# it made; the rest come from another call on the warm machine (SKIP_BUILD=1: the binaries and the calibration
# are kept in $BUILD) and `summarize` adds the outputs up.
# GPUS=N (N > 1, a host with N GPUs): after the one build, one instance per GPU in parallel (CUDA_VISIBLE_DEVICES=g,
# its own calibration, OUT/gpu<g>, WORK/gpu<g>, PAIRS / N rounds each, the deadline left), then the summary of all:
# N times the pairs in one call. Each GPU's A/A pairs are that GPU's own runs; the table adds them up.
# Knobs: OUT (./gate-proof-out)  PAIRS (20)  CAL (8)  GPUS (1)  SIZES (300k)  PIPELINES (ptv3)  MAX_TIME (0.25)
#        SWEEP_ARGS (extra sweep options)  DEADLINE_S (540)  NOISE_K, MIN_EFFECT (compare's defaults when empty)
#        PLANTS ("10 5")  PLANT_RE (awk regex on pipeline/kernel/variant: ^ptv3/gather_qkv_C64/; for the
#        backbones, PIPELINES=ptv3-net,flash3d-net PLANT_RE='^(ptv3|flash3d)-net/unpool/')  ARCH (90)
#        BUILD (build-gate-proof)  SKIP_BUILD (0)  RECALIBRATE (0)  WORK (/tmp/gate-proof: the runs, not returned)
#        MESON_ARGS (extra meson setup options; -Dcuda=disabled runs the mechanics on a CPU: nothing is planted there)
# usage: [knobs] sh lab/harness/gate-proof.sh            (on the device)
#        sh lab/harness/gate-proof.sh summarize DIR...    (anywhere: the table from one or more OUT folders)
set -u
PLANT_RE=${PLANT_RE:-^ptv3/gather_qkv_C64/}

# summary TSV...: the table over every pairs.tsv given. Columns of pairs.tsv:
#   kind (aa, p10, p5) round gate (plain, cal) gated slower faster plant_rows plant_slower plant_change_min
#   plant_threshold other_slower worst_ratio (largest |change| / threshold over the keys not planted) base new
summary() {
  awk -F'\t' '
    $1 == "kind" { next }
    {
      k = $1 SUBSEP $3
      n[k]++; gated[k] += $4; slower[k] += $5; other[k] += $11
      if ($11 > 0) pairs_other[k]++
      if ($12 + 0 > worst[k]) worst[k] = $12 + 0
      if ($1 != "aa") {
        if ($7 > 0 && $8 == $7) caught[k]++
        ch[k, n[k]] = $9
      }
      kinds[$1] = 1; gates[$3] = 1
    }
    END {
      printf "%-12s %-6s %6s %10s %16s %14s %14s  %s\n", "pairs", "gate", "pairs", "keys/pair", "pairs w/ other", "other slower",
             "worst ratio", "planted key (time): caught, change median [min, max]"
      # A/A first, then the plants, largest first (any PLANTS, e.g. "10 5" or "50 20")
      no = 0; if ("aa" in kinds) order[++no] = "aa"
      for (kk in kinds) {
        if (kk == "aa") continue
        v0 = substr(kk, 2) + 0; j = no
        while (j >= 1 && order[j] != "aa" && substr(order[j], 2) + 0 < v0) { order[j + 1] = order[j]; j-- }
        order[j + 1] = kk; no++
      }
      for (o = 1; o <= no; o++) for (g in gates) {
        kk = order[o]; k = kk SUBSEP g
        if (!(k in n)) continue
        line = sprintf("%-12s %-6s %6d %10.1f %16d %14d %14.2f", kk == "aa" ? "A/A" : "planted " substr(kk, 2) "%", g,
                       n[k], gated[k] / n[k], pairs_other[k], other[k], worst[k])
        if (kk != "aa") {
          m = n[k]; for (i = 1; i <= m; i++) v[i] = ch[k, i] + 0
          for (i = 2; i <= m; i++) { x = v[i]; j = i - 1; while (j >= 1 && v[j] > x) { v[j + 1] = v[j]; j-- } v[j + 1] = x }
          med = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
          line = line sprintf("  %d/%d, %+.1f%% [%+.1f%%, %+.1f%%]", caught[k], m, 100 * med, 100 * v[1], 100 * v[m])
        }
        print line
      }
      print "(other slower: keys called slower besides the planted one; worst ratio: the largest |change| / threshold"
      print " of those keys in any pair, 1 or more being a verdict when p < alpha; caught: every planted time row slower)"
    }' "$@"
}

if [ "${1:-}" = summarize ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: gate-proof.sh summarize OUT_DIR..." >&2; exit 2; }
  files=""
  for d in "$@"; do
    [ -f "$d/pairs.tsv" ] || { echo "gate-proof: $d/pairs.tsv: missing" >&2; exit 2; }
    files="$files $d/pairs.tsv"
  done
  # shellcheck disable=SC2086
  summary $files
  exit 0
fi

T0=$(date +%s)
OUT=${OUT:-$PWD/gate-proof-out}
BUILD=${BUILD:-build-gate-proof}
. lab/harness/device-common.sh
PAIRS=${PAIRS:-20}; CAL=${CAL:-8}; SIZES=${SIZES:-300k}; PIPELINES=${PIPELINES:-ptv3}; MAX_TIME=${MAX_TIME:-0.25}
DEADLINE_S=${DEADLINE_S:-540}; PLANTS=${PLANTS:-10 5}; WORK=${WORK:-/tmp/gate-proof}
BIN_DIR=$BUILD/gate-bin
elapsed() { echo $(( $(date +%s) - T0 )); }
GATE_OPTS=""
[ -n "${NOISE_K:-}" ] && GATE_OPTS="$GATE_OPTS --noise-k $NOISE_K"
[ -n "${MIN_EFFECT:-}" ] && GATE_OPTS="$GATE_OPTS --min-effect $MIN_EFFECT"
note "gate proof: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%Y-%m-%dT%H:%MZ)"
note "runs: sweep --preset ci --sizes $SIZES --pipelines $PIPELINES --max-time $MAX_TIME ${SWEEP_ARGS:-}"
note "gate: compare$GATE_OPTS (plain) and with --calibration; planted key: $PLANT_RE"

# ---- 1. build ---------------------------------------------------------------------------------------------
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$BIN_DIR/f3dbench-p0" ]; then
  note "build: kept ($BIN_DIR)"
else
  mkdir -p "$BIN_DIR"
  if [ ! -f "$BUILD/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$BUILD" -Dgpu_arch="$ARCH" -Dplant_delay_pct=0 ${MESON_ARGS:-} > "$OUT/setup.log" 2>&1 ||
      { note "FAIL meson setup (setup.log)"; tail -20 "$OUT/setup.log"; exit 1; }
  fi
  for p in 0 $PLANTS; do
    meson configure "$BUILD" -Dplant_delay_pct="$p" > /dev/null 2>&1 &&
      ninja -C "$BUILD" app/f3dbench > "$OUT/build-p$p.log" 2>&1 ||
      { note "FAIL build with plant_delay_pct=$p (build-p$p.log)"; tail -20 "$OUT/build-p$p.log"; meson configure "$BUILD" -Dplant_delay_pct=0 > /dev/null 2>&1; exit 1; }
    cp "$BUILD/app/f3dbench" "$BIN_DIR/f3dbench-p$p"
  done
  # back to 0: the objects are still planted, but their commands changed, so the next ninja rebuilds them
  meson configure "$BUILD" -Dplant_delay_pct=0 > /dev/null 2>&1
  note "build: $(elapsed) s (normal, plant $PLANTS; $BUILD left at plant_delay_pct=0)"
fi

# ---- one instance per GPU (GPUS > 1) ----------------------------------------------------------------------
GPUS=${GPUS:-1}
if [ "$GPUS" -gt 1 ]; then
  per=$(( (PAIRS + GPUS - 1) / GPUS ))
  left=$(( DEADLINE_S - $(elapsed) ))
  note "$GPUS instances in parallel, $per rounds each, $left s left"
  g=0
  while [ "$g" -lt "$GPUS" ]; do
    mkdir -p "$BUILD-gpu$g" && rm -rf "$BUILD-gpu$g/gate-bin" && cp -r "$BIN_DIR" "$BUILD-gpu$g/gate-bin"
    CUDA_VISIBLE_DEVICES=$g GPUS=1 SKIP_BUILD=1 PAIRS=$per DEADLINE_S=$left OUT="$OUT/gpu$g" WORK="$WORK/gpu$g" \
      BUILD="$BUILD-gpu$g" sh "$0" > "$OUT/gpu$g.log" 2>&1 &
    g=$((g + 1))
  done
  wait
  dirs=""
  g=0
  while [ "$g" -lt "$GPUS" ]; do
    note "gpu $g: $(grep -E '^(rounds|deadline|FAIL|calibration)' "$OUT/gpu$g/summary.txt" 2>/dev/null | tr '\n' ' ')"
    [ -f "$OUT/gpu$g/pairs.tsv" ] && dirs="$dirs $OUT/gpu$g"
    g=$((g + 1))
  done
  [ -n "$dirs" ] || { note "FAIL: no instance made a pair"; exit 1; }
  # shellcheck disable=SC2086
  sh "$0" summarize $dirs | tee -a "$SUM"
  note "keys called slower besides the planted one:"
  for d in $dirs; do sed -n '/^keys called slower besides/,$p' "$d/summary.txt" | tail -n +2 | sed "s|^|  $(basename "$d")|"; done |
    tee -a "$SUM"
  exit 0
fi

# ---- runs -------------------------------------------------------------------------------------------------
mkdir -p "$WORK/runs" "$OUT/compare"
RUNS="$OUT/runs.tsv"
[ -f "$RUNS" ] || printf 'run\tplant\tseconds\trc\n' > "$RUNS"
TAG=$(date -u +%H%M%S)
maxrun=0
# run NAME PLANT: one sweep into $WORK/runs/NAME; rc 0 when complete
run() {
  t=$(date +%s)
  # shellcheck disable=SC2086
  "$BIN_DIR/f3dbench-p$2" sweep --preset ci --sizes "$SIZES" --pipelines "$PIPELINES" --max-time "$MAX_TIME" \
    ${SWEEP_ARGS:-} --out-dir "$WORK/runs" --run-id "$1" > "$WORK/$1.log" 2>&1
  rc=$?
  d=$(( $(date +%s) - t ))
  [ "$d" -gt "$maxrun" ] && maxrun=$d
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$d" "$rc" >> "$RUNS"
  [ $rc -eq 0 ] || { note "run $1 (plant $2) failed, rc $rc:"; tail -5 "$WORK/$1.log" | tee -a "$SUM"; return $rc; }
  # the binary is what it claims: a planted build records plant_delay_pct, a normal one does not
  got=$(sed -n 's/^plant_delay_pct,//p' "$WORK/runs/$1/context.csv")
  [ "${got:-0}" = "$2" ] || { note "FAIL run $1: plant_delay_pct '${got:-0}' in its context, expected $2"; return 1; }
  return 0
}

# ---- 2. calibration ---------------------------------------------------------------------------------------
CALF=$BIN_DIR/calibration.csv
if [ -f "$CALF" ] && [ "${RECALIBRATE:-0}" != 1 ]; then
  note "calibration: kept ($CALF)"
else
  cal_runs=""
  for c in $(seq 1 "$CAL"); do
    run "cal$c-$TAG" 0 || exit 1
    cal_runs="$cal_runs $WORK/runs/cal$c-$TAG"
  done
  # shellcheck disable=SC2086
  "$BIN_DIR/f3dbench-p0" compare --calibrate "$CALF" $cal_runs > "$OUT/calibrate.log" 2>&1 ||
    { note "FAIL compare --calibrate"; cat "$OUT/calibrate.log"; exit 1; }
  note "calibration: $(cat "$OUT/calibrate.log") ($(elapsed) s)"
fi
cp "$CALF" "$OUT/calibration.csv"

# ---- 3-4. rounds and gates ----------------------------------------------------------------------------------
PT="$OUT/pairs.tsv"
[ -f "$PT" ] || printf 'kind\tround\tgate\tgated\tslower\tfaster\tplant_rows\tplant_slower\tplant_change_min\tplant_threshold\tother_slower\tworst_ratio\tbase\tnew\n' > "$PT"
# gate KIND ROUND BASE NEW: both gates of one pair into pairs.tsv
gate() {
  for g in plain cal; do
    extra=""
    [ $g = cal ] && extra="--calibration $CALF"
    csv="$OUT/compare/$1-$2-$g.csv"
    # shellcheck disable=SC2086
    "$BIN_DIR/f3dbench-p0" compare $GATE_OPTS $extra --csv "$csv" "$WORK/runs/$3" "$WORK/runs/$4" \
      > "$OUT/compare/$1-$2-$g.txt" 2>&1
    rc=$?
    [ $rc -le 1 ] || { note "compare $1 round $2 ($g) exited $rc: $(tail -1 "$OUT/compare/$1-$2-$g.txt")"; continue; }
    awk -F, -v re="$PLANT_RE" -v kind="$1" -v round="$2" -v g="$g" -v base="$3" -v new="$4" '
      NR == 1 { next }
      {
        key = $1 "/" $2 "/" $3
        if ($14 != "unknown") gated++
        if ($14 == "slower") slower++
        if ($14 == "faster") faster++
        if (key ~ re) {
          if ($7 == "time") {
            prow++; if ($14 == "slower") pslow++
            if (pmin == "" || $10 + 0 < pmin) { pmin = $10 + 0; pthr = $11 }
          }
        } else {
          if ($14 == "slower") other++
          if ($11 > 0) { r = ($10 < 0 ? -$10 : $10) / $11; if (r > worst) worst = r }
        }
      }
      END {
        printf "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%.3f\t%s\t%s\n", kind, round, g, gated, slower, faster, prow, pslow,
          pmin == "" ? "nan" : pmin, pthr == "" ? "nan" : pthr, other, worst, base, new
      }' "$csv" >> "$PT"
  done
}

prev="n0-$TAG"
run "$prev" 0 || exit 1
done_pairs=0
i=1
while [ "$i" -le "$PAIRS" ]; do
  n_plants=$(echo "$PLANTS" | wc -w)
  if [ $(( $(elapsed) + maxrun * (n_plants + 1) + 10 )) -gt "$DEADLINE_S" ]; then
    note "deadline: stopping after $done_pairs of $PAIRS rounds ($(elapsed) s; a run takes up to $maxrun s)"
    break
  fi
  ok=1
  for p in $PLANTS; do run "p$p-$i-$TAG" "$p" || ok=0; done
  run "n$i-$TAG" 0 || ok=0
  if [ $ok -eq 1 ]; then
    gate aa "$i-$TAG" "$prev" "n$i-$TAG"
    for p in $PLANTS; do gate "p$p" "$i-$TAG" "$prev" "p$p-$i-$TAG"; done
    done_pairs=$((done_pairs + 1))
    prev="n$i-$TAG"
  fi
  i=$((i + 1))
done
note "rounds: $done_pairs in $(elapsed) s (runs.tsv: seconds per run)"

# ---- 5. summary -------------------------------------------------------------------------------------------
summary "$PT" | tee -a "$SUM"
# every key called slower besides the planted one, with the rule that set its threshold: what to look at when
# the gate cried wolf (the compare outputs come back packed, but a caller may only read this summary)
note "keys called slower besides the planted one (pair, key, change, threshold, rule):"
awk -F, -v re="$PLANT_RE" '
  FNR == 1 { f = FILENAME; sub(/.*\//, "", f); sub(/\.csv$/, "", f); next }
  $14 == "slower" && ($1 "/" $2 "/" $3 "/") !~ re {
    printf "  %-22s %s/%s/%s %s %s  %+.2f%%  (threshold %.2f%%, %s)\n", f, $1, $2, $3, $5, $7, 100 * $10, 100 * $11, $12
    n++
  }
  END { if (!n) print "  none" }' "$OUT"/compare/*.csv | tee -a "$SUM"
cp "$WORK/runs/n0-$TAG/context.csv" "$OUT/context-n0.csv" 2>/dev/null
# one archive instead of ~170 files: the device tool returns a limited number of files
tar czf "$OUT/compare.tar.gz" -C "$OUT" compare && rm -rf "$OUT/compare"
exit 0
