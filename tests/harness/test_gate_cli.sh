#!/bin/sh
# test_gate_cli.sh - `f3dbench compare` as CI runs it, on result directories written here with chosen samples
# (awk, deterministic): three keys, ptv3/gather_qkv_C64/v3 and flash3d/psh.xor-div/v9 (GPU stages) and
# flash3d/psh.xor-div/cpu (a CPU reference), 200 samples each with 1% noise.
#   - the verdict line comes first ("gate: pass|FAIL: ..."), the table after it, the totals line last; exit 0/1;
#   - --baseline DIR NEW is BASE NEW; a 10% slower GPU stage fails the gate (exit 1) and its row says slower;
#   - a 30% slower CPU reference is not gated in runs with a GPU, --include-cpu gates it; --keys gates a subset,
#     and a pattern that matches nothing tests nothing (exit 2);
#   - -q prints the verdict line alone; --csv writes one row per key;
#   - --calibrate / --calibration round trip; a calibration or baseline from another GPU model or build type,
#     a directory that is not a run, an incomplete run, runs with no shared keys, --normalize without ceilings:
#     one line on stderr, exit 2;
#   - sweep --preset ci: its options, context and pipelines, both backbones among them (checked without running
#     the GPU part).
# usage: test_gate_cli.sh PATH/TO/f3dbench
set -u
BIN=$1
. "$(dirname "$0")/../lib.sh"
t_setup test-gate-cli
one_line_err() { [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$1: expected one line on stderr, got: $(cat "$T/err")"; }

# mkrun DIR DEVICE BUILD SEED GATHER_SCALE CPU_SCALE [CEILINGS]: a complete run
mkrun() {
  mkdir -p "$1"
  {
    echo "key,value"
    echo "status,complete"
    echo "schema_version,1"
    echo "device,$2"
    echo "build_type,$3"
    [ -n "${7:-}" ] && echo "ceiling_copy_gbs,3000.0" && echo "ceiling_gemm_fp16_tflops,700.0"
  } >"$1/context.csv"
  awk -v seed="$4" -v g="$5" -v c="$6" -v dir="$1" 'BEGIN {
    srand(seed)
    print "workload,n_points,batch,pipeline,kernel,variant,metric,value,unit" > (dir "/results.csv")
    print "workload,n_points,batch,pipeline,kernel,variant,metric,sample,value,unit" > (dir "/samples.csv")
    split("ptv3,gather_qkv_C64,v3,0.05|flash3d,psh.xor-div,v9,0.1|flash3d,psh.xor-div,cpu,3.0", keys, "|")
    for (k = 1; k <= 3; k++) {
      split(keys[k], f, ",")
      scale = k == 1 ? g : k == 3 ? c : 1.0
      printf "lidar,100000,1,%s,%s,%s,time_median,%.6f,ms\n", f[1], f[2], f[3], f[4] * scale > (dir "/results.csv")
      for (i = 0; i < 200; i++)
        printf "lidar,100000,1,%s,%s,%s,time,%d,%.8f,ms\n", f[1], f[2], f[3], i,
          f[4] * scale * (1 + 0.02 * (rand() - 0.5)) > (dir "/samples.csv")
    }
  }'
}
R="$T/runs"
mkrun "$R/base" "NVIDIA H100 80GB HBM3" release 1 1.0 1.0
mkrun "$R/same" "NVIDIA H100 80GB HBM3" release 2 1.0 1.0
mkrun "$R/slow" "NVIDIA H100 80GB HBM3" release 3 1.1 1.0
mkrun "$R/cpuslow" "NVIDIA H100 80GB HBM3" release 4 1.0 1.3
mkrun "$R/a100" "NVIDIA A100-SXM4-80GB" release 5 1.0 1.0
mkrun "$R/debug" "NVIDIA H100 80GB HBM3" debug 6 1.0 1.0
mkrun "$R/bf16" "NVIDIA H100 80GB HBM3" release 2 1.0 1.0 # base's runs with another --dtype
echo "dtype,bf16" >>"$R/bf16/context.csv"

# pass: verdict first, table, totals last
expect 0 "$BIN" compare "$R/base" "$R/same"
head -n 1 "$T/out" | grep -q '^gate: pass: 0 faster, 0 slower, 2 same, 0 unknown of 2 keys gated; largest change [-+]' ||
  fail "verdict line: $(head -n 1 "$T/out")"
head -n 1 "$T/out" | grep -q 'not gated: 1 CPU stage keys' || fail "verdict does not count the CPU key: $(head -n 1 "$T/out")"
sed -n 2p "$T/out" | grep -q '^pipeline/kernel/variant .* threshold .* verdict' || fail "table header: $(sed -n 2p "$T/out")"
tail -n 1 "$T/out" | grep -q '^0 faster, 0 slower, 2 same, 0 unknown (alpha 0.01, min effect 3%, noise k 2' ||
  fail "totals line: $(tail -n 1 "$T/out")"
[ "$(wc -l <"$T/out")" -eq 5 ] || fail "compare printed $(wc -l <"$T/out") lines, expected 5"
expect 0 "$BIN" compare --baseline "$R/base" "$R/same"
head -n 1 "$T/out" | grep -q '^gate: pass:' || fail "--baseline: $(head -n 1 "$T/out")"
# a 10% slower GPU stage
expect 1 "$BIN" compare --baseline "$R/base" "$R/slow"
head -n 1 "$T/out" | grep -q '^gate: FAIL: 0 faster, 1 slower, 1 same, 0 unknown of 2 keys gated; largest change +[0-9.]*% ptv3/gather_qkv_C64/v3 lidar 100000 time' ||
  fail "slower verdict: $(head -n 1 "$T/out")"
grep -q '^ptv3/gather_qkv_C64/v3 .* min  .* slower' "$T/out" || fail "slower row: $(grep gather "$T/out")"
expect 1 "$BIN" compare -q "$R/base" "$R/slow"
[ "$(wc -l <"$T/out")" -eq 1 ] && grep -q '^gate: FAIL: 0 faster, 1 slower' "$T/out" || fail "-q: $(cat "$T/out")"
# CPU references: not gated by default in GPU runs
expect 0 "$BIN" compare "$R/base" "$R/cpuslow"
expect 1 "$BIN" compare --include-cpu "$R/base" "$R/cpuslow"
grep -q '^flash3d/psh.xor-div/cpu .* slower' "$T/out" || fail "--include-cpu row: $(grep /cpu "$T/out")"
# --keys
expect 0 "$BIN" compare --keys 'flash3d/*' "$R/base" "$R/slow"
head -n 1 "$T/out" | grep -q 'of 1 keys gated.*1 outside the key patterns' || fail "--keys verdict: $(head -n 1 "$T/out")"
expect 1 "$BIN" compare --keys 'flash3d/*,ptv3/gather_*/*' "$R/base" "$R/slow"
expect 2 "$BIN" compare --keys 'nothing/*' "$R/base" "$R/slow"
grep -q 'no key could be tested' "$T/err" || fail "--keys matching nothing: $(cat "$T/err")"
expect 2 "$BIN" compare --keys '' "$R/base" "$R/slow"
# --csv
expect 1 "$BIN" compare --csv "$T/gate.csv" "$R/base" "$R/slow"
[ "$(head -n 1 "$T/gate.csv")" = "pipeline,kernel,variant,workload,n_points,batch,metric,base_median,new_median,change,threshold,rule,p,verdict" ] ||
  fail "--csv header: $(head -n 1 "$T/gate.csv")"
[ "$(wc -l <"$T/gate.csv")" -eq 3 ] || fail "--csv rows: $(cat "$T/gate.csv")"
grep -q '^ptv3,gather_qkv_C64,v3,lidar,100000,1,time,.*,min,.*,slower$' "$T/gate.csv" || fail "--csv slower row: $(cat "$T/gate.csv")"
# a compare that reaches no verdict (exit 2) leaves an existing --csv file as it was; a missing folder is named first
cp "$T/gate.csv" "$T/gate.keep"
expect 2 "$BIN" compare --csv "$T/gate.csv" --keys 'nothing/*' "$R/base" "$R/slow"
cmp -s "$T/gate.csv" "$T/gate.keep" || fail "compare --csv with no verdict replaced the file: $(cat "$T/gate.csv")"
expect 2 "$BIN" compare --csv "$T/no-such/g.csv" "$R/base" "$R/slow"
grep -q "^f3dbench: compare: --csv '$T/no-such/g.csv': $T/no-such is not a folder" "$T/err" || fail "--csv into a missing folder: $(cat "$T/err")"
expect 2 "$BIN" compare --calibrate "$T/no-such/c.cal" "$R/base" "$R/same"
grep -q "^f3dbench: compare: --calibrate '$T/no-such/c.cal': $T/no-such is not a folder" "$T/err" ||
  fail "--calibrate into a missing folder: $(cat "$T/err")"

# calibration: written from A/A runs, used, refused for another device
expect 2 "$BIN" compare --calibrate "$T/cal.csv" "$R/base"
expect 2 "$BIN" compare --calibrate "$T/cal.csv" "$R/base" "$R/same" "$R/base/" # one run twice: not an A/A pair
grep -q 'are the same run directory' "$T/err" || fail "--calibrate with one run twice: $(cat "$T/err")"
[ -e "$T/cal.csv" ] && fail "--calibrate with one run twice wrote a calibration"
expect 0 "$BIN" compare --calibrate "$T/cal.csv" "$R/base" "$R/same" "$R/cpuslow"
grep -q '^calibration of 3 runs: 3 keys' "$T/out" || fail "--calibrate: $(cat "$T/out")"
expect 1 "$BIN" compare --calibration "$T/cal.csv" "$R/base" "$R/slow"
tail -n 1 "$T/out" | grep -q "; calibration $T/cal.csv)" || fail "calibration not named: $(tail -n 1 "$T/out")"
expect 0 "$BIN" compare --include-cpu --calibration "$T/cal.csv" "$R/base" "$R/cpuslow"
grep -q '^flash3d/psh.xor-div/cpu .* aa  .* same' "$T/out" || fail "the calibrated CPU key: $(grep /cpu "$T/out")"
expect 2 "$BIN" compare --calibrate "$T/cal2.csv" "$R/base" "$R/a100"
one_line_err "--calibrate over two devices"
expect 2 "$BIN" compare --calibration "$T/cal.csv" "$R/a100" "$R/a100"
one_line_err "calibration from another device"
grep -q 'refusing the calibration: different devices' "$T/err" || fail "calibration device: $(cat "$T/err")"
expect 2 "$BIN" compare --calibration "$T/no-such.csv" "$R/base" "$R/same"
one_line_err "missing calibration"
# a calibration that is not a regular file (a FIFO with no writer) is refused at once, never waited on
mkfifo "$T/cal.fifo"
expect 2 timeout 20 "$BIN" compare --calibration "$T/cal.fifo" "$R/base" "$R/same"
grep -q 'cal.fifo: not a regular file' "$T/err" || fail "--calibration FIFO: $(cat "$T/err")"

# bad input: one line, exit 2
expect 2 "$BIN" compare --baseline "$R/a100" "$R/base"
one_line_err "baseline from another GPU model"
grep -q 'the baseline is from another device, build or setting: different devices: device = "NVIDIA A100-SXM4-80GB"' "$T/err" ||
  fail "baseline device: $(cat "$T/err")"
expect 2 "$BIN" compare --baseline "$R/debug" "$R/base"
one_line_err "baseline of another build type"
grep -q 'different builds: build_type' "$T/err" || fail "baseline build: $(cat "$T/err")"
# a run in bf16 against one without the key (fp16): refused; --force compares them
expect 2 "$BIN" compare --baseline "$R/base" "$R/bf16"
one_line_err "runs of different dtypes"
grep -q 'different settings: dtype = "fp16" in .*/base but "bf16" in .*/bf16' "$T/err" || fail "dtype: $(cat "$T/err")"
expect 0 "$BIN" compare --force --baseline "$R/base" "$R/bf16"
grep -q 'warning: different settings: dtype' "$T/err" || fail "dtype --force: $(cat "$T/err")"
expect 2 "$BIN" compare --baseline "$R/base"
expect 2 "$BIN" compare --baseline "$R/base" "$R/same" "$R/slow"
expect 2 "$BIN" compare "$T" "$R/base"
one_line_err "not a run"
cp -r "$R/base" "$R/incomplete" && echo "interrupted: SIGINT received" >"$R/incomplete/INCOMPLETE"
expect 2 "$BIN" compare "$R/base" "$R/incomplete"
one_line_err "incomplete run"
mkdir -p "$R/other" && cp "$R/base/context.csv" "$R/other/" &&
  sed 's/gather_qkv_C64/gather_out_C64/; s/psh.xor-div/psh.zorder-div/' "$R/base/results.csv" >"$R/other/results.csv" &&
  sed 's/gather_qkv_C64/gather_out_C64/; s/psh.xor-div/psh.zorder-div/' "$R/base/samples.csv" >"$R/other/samples.csv"
expect 2 "$BIN" compare "$R/base" "$R/other"
grep -q 'no key could be tested (4 unknown: 4 with raw samples in one run only; ' "$T/err" ||
  fail "no shared keys: $(cat "$T/err")"
# two samples per key (sweep --reps 2): the keys are shared, but too few for the U test; the line says so (it said
# "no shared keys with raw samples")
for d in base same; do
  mkdir -p "$R/two-$d" && cp "$R/$d/context.csv" "$R/$d/results.csv" "$R/two-$d/" &&
    awk -F, 'NR == 1 || $8 < 2' "$R/$d/samples.csv" >"$R/two-$d/samples.csv"
done
expect 2 "$BIN" compare "$R/two-base" "$R/two-same"
grep -q 'no key could be tested (2 unknown: 2 with fewer than 3 raw samples on a side (sweep --reps 3 or more); other' \
  "$T/err" || fail "two samples per key: $(cat "$T/err")"
expect 2 "$BIN" compare --normalize "$R/base" "$R/same"
one_line_err "--normalize without ceilings"
grep -q 'ceiling_copy_gbs' "$T/err" || fail "--normalize: $(cat "$T/err")"
mkrun "$R/nbase" "NVIDIA H100 80GB HBM3" release 7 1.0 1.0 ceilings
mkrun "$R/nnew" "NVIDIA H100 80GB HBM3" release 8 1.0 1.0 ceilings
expect 0 "$BIN" compare --normalize "$R/nbase" "$R/nnew"
grep -q '(copy ceiling x1.0000)' "$T/out" || fail "--normalize note: $(sed -n 3p "$T/out")"

# sweep --preset ci: the options it sets, main path only
expect 0 "$BIN" sweep --preset ci --check-args
expect 2 "$BIN" sweep --preset ci --ladder --check-args
one_line_err "--preset ci --ladder"
expect 2 "$BIN" sweep --preset nightly --check-args
"$BIN" sweep --preset ci --sizes 2k --pipelines workload --out-dir "$T/res" --run-id ci >/dev/null 2>&1 ||
  fail "sweep --preset ci on the CPU failed"
grep -q '^preset,ci$' "$T/res/ci/context.csv" || fail "preset not in the context"
grep -q '^sizes,2000$' "$T/res/ci/context.csv" || fail "--sizes given did not win over the preset's"
# the preset's own pipelines: the component pipelines and both backbones (GPU-only: nothing runs here)
"$BIN" sweep --preset ci --sizes 2k --out-dir "$T/res" --run-id ci2 >/dev/null 2>&1 ||
  fail "sweep --preset ci (its own pipelines) on the CPU failed"
grep -q '^pipelines,ptv3 flash3d ptv3-net flash3d-net$' "$T/res/ci2/context.csv" ||
  fail "preset pipelines: $(grep '^pipelines,' "$T/res/ci2/context.csv")"

t_done "gate CLI: all checks passed"
