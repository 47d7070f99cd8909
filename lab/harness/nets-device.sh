#!/bin/sh
# nets-device.sh - one device call for the backbones: build through ./f3d (F3D_NO_APT=1, .deps carried), the
# named test programs, then `f3dbench net` per model and size (each checked against the CPU forward before it is
# timed), and optionally a sweep of the net pipelines whose result directory comes back packed.
#   OUT=...       log folder (default ./nets-out); summary.txt is printed last
#   TESTS="nets_layers_gpu nets_spconv_gpu nets_gpu"   meson test names (empty: none)
#   MODELS="ptv3 flash3d-46m"   SIZES="100k 300k 600k"   NET_ARGS="--graph --reps 20"
#   SPCONV="v1 v3"  PTv3 models once per xCPE convolution variant (net --spconv; empty: the main path's only)
#   SWEEP="--pipelines ptv3-net,flash3d-net --sizes 100k,300k,600k"   (empty: no sweep)
#   NCU_MODEL=ptv3   after the nets: Nsight Compute over `net --model NCU_MODEL` at the last of SIZES (kernel
#                    durations, caches and clocks left alone), summarised by lab/kernels/ncu_forward.py; NCU_START
#                    is the regex of a kernel each forward launches once (default 'stem_kernel|lookup_kernel<5>':
#                    PTv3's stem in one pass, or its map with --stem map)
#   NCU_STALLS=v3  after the nets: Nsight Compute's stall and pipe sections over the convolutions of one PTv3 600k
#                    forward per named xCPE variant (`--spconv V`; launches 45-66, after the check's forwards: 22
#                    convolutions a forward, the stem's not among them since it runs in one pass),
#                    summarised by lab/kernels/ncu_stalls.py (what bounds each launch: warps, stalls, pipes)
#   SANITIZE="racecheck,memcheck:nets-spconv"   after the sweep: tests/sanitize/run.sh with those tools over those
#                    commands (TOOLS:COMMANDS, run.sh's names), logs under OUT/sanitize, its table in the summary
#   F3D_GIT_COMMIT     the commit this tree is (the device copy has no .git)
set -u
OUT=${OUT:-$PWD/nets-out}
mkdir -p "$OUT"
SUM="$OUT/summary.txt"
: > "$SUM"
note() { echo "$*" | tee -a "$SUM"; }
export F3D_NO_APT=1 F3D_GPU_ARCH=${F3D_GPU_ARCH:-90} F3D_JOBS=${F3D_JOBS:-16}
export F3D_GIT_COMMIT=${F3D_GIT_COMMIT:-unknown}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$SUM"
date -u | tee -a "$SUM"
t0=$(date +%s)
sh lab/harness/touch-sources.sh # a warm machine may hold objects of an earlier call's sources
./f3d setup > "$OUT/setup.log" 2>&1 || { note "FAIL build"; tail -40 "$OUT/setup.log"; exit 1; }
note "build ok $(( $(date +%s) - t0 )) s"
BIN=build/app/f3dbench
for t in ${TESTS-nets_layers_gpu nets_spconv_gpu nets_gpu}; do
  t1=$(date +%s)
  meson test -C build "$t" --print-errorlogs > "$OUT/test-$t.log" 2>&1
  rc=$?
  note "test $t rc=$rc $(( $(date +%s) - t1 )) s"
  [ $rc -eq 0 ] || grep -E 'FAIL|ERROR|assert|error|rel L2|seed' "$OUT/test-$t.log" | head -20 | tee -a "$SUM"
done
for m in ${MODELS-ptv3 flash3d-46m}; do
  vs=main
  case $m in ptv3*) [ -n "${SPCONV:-}" ] && vs=$SPCONV ;; esac
  for n in ${SIZES-100k 300k 600k}; do
    for v in $vs; do
      t1=$(date +%s)
      extra=""
      [ "$v" = main ] || extra="--spconv $v"
      log="$OUT/net-$m-$n-$v.log"
      # shellcheck disable=SC2086
      $BIN net --model "$m" --points "$n" ${NET_ARGS---graph --reps 20} $extra > "$log" 2>&1
      rc=$?
      note "net $m $n ($v) rc=$rc $(( $(date +%s) - t1 )) s"
      grep -E '^(net:|check:|forward|graph|memory:)|^  [a-z]' "$log" | tee -a "$SUM"
      [ $rc -eq 0 ] || tail -5 "$log" | tee -a "$SUM"
    done
  done
done
if [ -n "${NCU_MODEL:-}" ]; then
  t1=$(date +%s)
  last=$(echo "${SIZES-100k 300k 600k}" | awk '{print $NF}')
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    "$BIN" net --model "$NCU_MODEL" --points "$last" --reps 1 --check-points 1000 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  note "ncu $NCU_MODEL $last rc=$? $(( $(date +%s) - t1 )) s"
  python3 lab/kernels/ncu_forward.py "$OUT/ncu.csv" "${NCU_START:-stem_kernel|lookup_kernel<5>}" 25 | tee -a "$SUM"
  gzip -f "$OUT/ncu.csv"
fi
for v in ${NCU_STALLS:-}; do
  t1=$(date +%s)
  timeout "${NCU_TIMEOUT:-200}" ncu --clock-control none --cache-control all -k "regex:conv_(wg_)?kernel" --launch-skip 44 \
    --launch-count 22 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section MemoryWorkloadAnalysis_Tables --csv --page raw \
    "$BIN" net --model ptv3 --points 600k --reps 1 --check-points 1000 --spconv "$v" > "$OUT/ncu-stalls-$v.csv" \
    2> "$OUT/ncu-stalls-$v.err"
  note "ncu stalls $v rc=$? $(( $(date +%s) - t1 )) s"
  python3 lab/kernels/ncu_stalls.py "$OUT/ncu-stalls-$v.csv" | tee -a "$SUM"
  gzip -f "$OUT/ncu-stalls-$v.csv"
done
if [ -n "${SWEEP:-}" ]; then
  t1=$(date +%s)
  RUN_ID=nets-$F3D_GIT_COMMIT
  $BIN sweep $SWEEP --run-id "$RUN_ID" > "$OUT/sweep.log" 2>&1
  note "sweep rc=$? $(( $(date +%s) - t1 )) s"
  tail -5 "$OUT/sweep.log" | tee -a "$SUM"
  [ -d "results/$RUN_ID" ] && tar czf "$OUT/results.tar.gz" -C results "$RUN_ID"
fi
if [ -n "${SANITIZE:-}" ]; then
  t1=$(date +%s)
  OUT=$OUT/sanitize bash tests/sanitize/run.sh --tool "${SANITIZE%%:*}" --only "${SANITIZE#*:}" build \
    > "$OUT/sanitize.log" 2>&1
  note "sanitize ${SANITIZE} rc=$? $(( $(date +%s) - t1 )) s"
  grep -E '^(memcheck|racecheck|synccheck|initcheck) ' "$OUT/sanitize.log" | sort -u | tee -a "$SUM"
  [ -d "$OUT/sanitize" ] && tar czf "$OUT/sanitize.tar.gz" -C "$OUT" sanitize && rm -rf "$OUT/sanitize"
fi
for f in "$OUT"/*.log; do gzip -f "$f"; done
