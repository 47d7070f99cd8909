#!/bin/sh
# test_report_cpu.sh - the report of a run without a GPU compares like with like, or says why it does not
# (suite cpu; exit 77 where f3dbench sees a CUDA device: this is about runs without one). A CPU sweep of two
# sizes and one of a single size, then `f3dbench plot`:
#   - the device column names the CPU, never the run's path; no ceiling prints as "?";
#   - a figure or table left out says why (counters off, no CUDA device, which series is missing), never the
#     bare "no rows for this figure";
#   - PTv3's serialization is compared with PSH only as a whole: the serialization-vs-PSH figure is drawn with
#     both sides or left out with its reason, and the per-stage figures stack PTv3's grid, encoding and sort
#     (a CPU run times them apart) beside Flash3D's PSH;
#   - a one-size figure labels its x axis with distinct sizes (it once read "20k 20k 20k");
#   - a CUDA build on a machine with no NVIDIA driver says so, not "driver version is insufficient".
# usage: test_report_cpu.sh PATH/TO/f3dbench
set -u
BIN=$1
. "$(dirname "$0")/../lib.sh"
has_gpu "$BIN" && { echo "a CUDA device is present: skipped"; exit 77; }
t_setup test-report-cpu
GP=0
gnuplot --version >/dev/null 2>&1 && GP=1

S="--reps 2 --warmup 0 --pipelines workload,ptv3,flash3d --out-dir $T"
"$BIN" sweep $S --sizes 20k,30k --run-id two >"$T/out" 2>&1 || { fail "sweep of two sizes"; cat "$T/out"; }
"$BIN" sweep $S --sizes 20k --run-id one >"$T/out" 2>&1 || { fail "sweep of one size"; cat "$T/out"; }
for r in two one; do
  "$BIN" plot "$T/$r" >"$T/plot-$r" 2>&1 || { fail "plot $r"; cat "$T/plot-$r"; }
done
R=$T/two/REPORT.md
[ -f "$R" ] || die "no REPORT.md"

# the run table's device column and the ceilings line
grep -q "^| $T/two | $T/two |" "$R" && fail "device column shows the run's path"
grep -q "^| $T/two | .*CPU" "$R" || fail "device column does not say CPU: $(grep "^| $T/two" "$R")"
grep -q '? GB/s\|bf16 ? \|fp16 ?\|(? GB/s)\|ceiling ?' "$R" && fail "a ceiling printed as ?: $(grep -m 1 '?' "$R")"
grep -q -i 'ceilings.*\(CPU\|no CUDA device\|not measured\)' "$R" || fail "the report does not say why it has no ceilings"

# figures and tables left out say why
grep -q 'no rows for this figure' "$R" && fail "a figure left out without a reason: $(grep -B 2 -m 1 'no rows for this figure' "$R" | head -n 1)"
for h in '### SM active' '### TensorCore active' '### DRAM read bandwidth'; do
  sed -n "/^$h/,/^###/p" "$R" | grep -q -i 'counters.*off\|no CUDA device' || fail "$h: left out without the counters' reason"
done
sed -n '/^### Device memory/,/^###/p' "$R" | grep -q -i 'CPU\|no CUDA device' || fail "memory figure: no reason"
# the gather table: GB/s per cell, or left out with a reason; never a table of dashes
grep -q '^| 20000 | - |$' "$R" && fail "a table whose every cell is '-'"

# serialization vs PSH: both sides, or left out and why
sec=$(sed -n '/^### PTv3 serialization vs Flash3D PSH/,/^###/p' "$R")
if printf '%s\n' "$sec" | grep -q 'serial_psh.png'; then
  grep -q '"ptv3/' "$T/two/plots/serial_psh.dat" || fail "serial_psh drawn with PSH alone"
else
  printf '%s\n' "$sec" | grep -q -i 'left out.*serialize' || fail "serial_psh left out without naming what is missing"
fi
grep -q -i 'serialization vs Flash3D PSH per hash\|left out.*serialize' "$R" ||
  fail "the serialization table is neither there nor explained"

if [ $GP -eq 1 ]; then
  # the per-stage figures: PTv3's serialization in its parts beside PSH, not its gather alone
  st=$T/two/plots/stages.dat
  for k in grid encode_all sort psh.xor-div; do
    head -n 1 "$st" | grep -q "\"$k\"" || fail "stages.dat has no stage $k: $(head -n 1 "$st")"
  done
  grep -q '"encode_all"' "$T/two/plots/treemap.dat" || fail "treemap.dat: PTv3's encoding left out"
  # one size: each x tick label once
  svg=$T/one/plots/latency.svg
  labels=$(grep -o '>[0-9.]*[kM]<' "$svg" | sort)
  [ -n "$labels" ] || fail "latency.svg of one size: no x tick label"
  [ "$(printf '%s\n' "$labels" | uniq -d)" = "" ] || fail "latency.svg repeats x tick labels: $(echo $labels)"
else
  echo "gnuplot missing: figure checks skipped"
fi

# no NVIDIA driver at all: a CUDA build says so
if "$BIN" info | grep -q '^  CUDA  *nvcc' && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  d=$("$BIN" info | grep '^devices:')
  case $d in *'no NVIDIA driver'*) ;; *) fail "info without a driver: $d" ;; esac
fi

t_done "report without a GPU: all checks passed"
