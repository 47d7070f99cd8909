#!/usr/bin/env bash
# test_run.sh - tests/sanitize/run.sh's verdicts without a GPU (suite cpu): a stand-in compute-sanitizer
# prints what the real one prints for a clean run, a memcheck report in a kernel, a racecheck summary with
# an error and a warning, and a program that fails its own check; a stand-in f3dbench claims a device, and
# stand-in GPU test programs sit beside it as in a build (BUILD/app/f3dbench, BUILD/tests/nets/).
# Checks: one line per (tool, command) with PASS/FAIL, the error count and the kernel named; the summary
# table last and in OUT/summary.txt; exit 1 on a failure, 0 when all pass, 77 without a sanitizer or a
# device, 2 on a bad option.
# usage: test_run.sh PATH/TO/run.sh
set -u
run=$1
. "$(dirname "$0")/../lib.sh"
t_setup test-sanitize
has() { grep -q -E "$2" "$1" || { fail "$(basename "$1"): no line matching '$2'"; sed 's/^/    /' "$1"; }; }

mkdir -p "$T/build/app" "$T/build/tests/nets"
F=$T/build/app/f3dbench
for p in layers spconv; do
  printf '#!/bin/sh\necho "%s $*"\nexit 0\n' "$p" > "$T/build/tests/nets/test_nets_${p}_gpu"
  chmod +x "$T/build/tests/nets/test_nets_${p}_gpu"
done
cat > "$F" <<'EOF'
#!/bin/sh
case $1 in
info) [ -n "${FAKE_NODEV:-}" ] && { echo "devices: no CUDA device (no NVIDIA driver)"; exit 0; }
      echo "devices: 1"; echo "  0: NVIDIA H100 80GB HBM3" ;;
gen) while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done ;;
attn) [ -n "${FAKE_ATTN_FAIL:-}" ] && { echo "check v9 rows 64: max|o-ref| 1e-1 -> FAIL"; exit 1; } ;;
esac
exit 0
EOF
# The sanitizer's output as compute-sanitizer 2025 prints it (one report record, then the summary).
cat > "$T/compute-sanitizer" <<'EOF'
#!/bin/sh
tool=memcheck
while [ $# -gt 0 ]; do
  case $1 in --tool) tool=$2; shift 2 ;; --version) echo "Compute Sanitizer Version 2025.3.0"; exit 0 ;;
  --error-exitcode|--print-limit|--leak-check|--kernel-name-exclude) shift 2 ;;
  --kernel-name) [ -n "${FILTER_LOG:-}" ] && echo "$tool $2" >> "$FILTER_LOG"; shift 2 ;; *) break ;; esac
done
prog=$1; shift
[ -n "${FILTER_LOG:-}" ] && echo "$tool ran $1 $2 $3" >> "$FILTER_LOG"
"$prog" "$@"; rc=$?
[ $rc -ne 0 ] && { echo "========= Error: process didn't terminate successfully"; echo "========= ERROR SUMMARY: 0 errors"; exit $rc; }
if [ "$tool" = memcheck ] && [ "$1" = pool ]; then
  echo "========= Invalid __global__ read of size 4 bytes"
  echo "=========     at void bpool_reduce_kernel<(int)2>(const float *, unsigned int)+0x1f0 in /src/kernels/bpool.cu:412"
  echo "=========     by thread (5,0,0) in block (3,0,0)"
  echo "========= ERROR SUMMARY: 1 error"
  exit 99
fi
if [ "$tool" = racecheck ] && [ "$1" = psh ]; then
  echo "========= Error: Race reported between Write access at psh_v8_kernel(psh_params)+0x70 in /src/kernels/psh_v8.cu:640"
  echo "=========     and Read access at psh_v8_kernel(psh_params)+0x90 in /src/kernels/psh_v8.cu:650 [128 hazards]"
  echo "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)"
  exit 99
fi
[ "$tool" = racecheck ] && echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
echo "========= ERROR SUMMARY: 0 errors"
exit 0
EOF
chmod +x "$F" "$T/compute-sanitizer"
export COMPUTE_SANITIZER=$T/compute-sanitizer

# a clean pass: every line PASS, exit 0
OUT=$T/clean bash "$run" --tool synccheck "$F" > "$T/clean.out" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "clean run: exit $rc, want 0"
[ "$(grep -c -E '^synccheck +[a-z0-9-]+ +PASS +errors 0 ' "$T/clean.out")" -eq 16 ] ||
  fail "clean run: want 8 PASS lines and the same 8 in the summary table"
has "$T/clean.out" '^sanitize: 8 passed, 0 failed, 0 skipped$'
[ -f "$T/clean/synccheck-net-flash3d.log" ] || fail "clean run: no log OUT/synccheck-net-flash3d.log"
[ -f "$T/clean/synccheck-nets-spconv.log" ] || fail "clean run: no log OUT/synccheck-nets-spconv.log"
[ "$(wc -l < "$T/clean/summary.txt")" -eq 8 ] || fail "OUT/summary.txt: want 8 lines"

# reports and a failing program: FAIL with the count and the kernel, or with the program's last words
OUT=$T/bad FAKE_ATTN_FAIL=1 bash "$run" --tool memcheck,racecheck --only psh,pool,attn "$F" > "$T/bad.out" 2>&1
rc=$?; [ $rc -eq 1 ] || fail "failing run: exit $rc, want 1"
has "$T/bad.out" '^memcheck +psh +PASS +errors 0 '
has "$T/bad.out" '^memcheck +pool +FAIL +errors 1 .*kernels: bpool_reduce_kernel$'
has "$T/bad.out" '^memcheck +attn +FAIL .*exit 1: check v9 rows 64: .* -> FAIL$'
has "$T/bad.out" '^racecheck +psh +FAIL +errors 1 .*kernels: psh_v8_kernel$'
has "$T/bad.out" '^racecheck +pool +PASS +errors 0 '
has "$T/bad.out" '^sanitize: 2 passed, 4 failed, 0 skipped$'
tail -n 1 "$T/bad/summary.txt" | grep -q "log $T/bad/racecheck-attn.log" || fail "summary.txt names no log"

# racecheck and initcheck skip the forwards (cuBLAS inside) and run the nets-* test programs on the tests
# run.sh names; memcheck and synccheck run the forwards
OUT=$T/fw FILTER_LOG=$T/fw.log bash "$run" --only net-ptv3,nets-layers,nets-spconv "$F" > "$T/fw.out" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "default forwards run: exit $rc, want 0"
has "$T/fw.out" '^racecheck +net-ptv3 +SKIP .*cuBLAS GEMMs inside.*--forwards runs it$'
has "$T/fw.out" '^initcheck +net-ptv3 +SKIP '
has "$T/fw.out" '^memcheck +net-ptv3 +PASS '
has "$T/fw.out" '^racecheck +nets-spconv +PASS '
has "$T/fw.out" '^sanitize: 10 passed, 0 failed, 2 skipped$'
has "$T/fw.log" '^racecheck ran test_map test_conv_v1_boundary test_conv_v2$'
has "$T/fw.log" '^initcheck ran test_layernorm test_mlp test_linear_swiglu$'
grep -q -E '^(racecheck|initcheck) ran net ' "$T/fw.log" && fail "racecheck/initcheck ran a forward without --forwards"
# the test names run.sh gives the programs are tests of theirs (the programs refuse others with exit 2)
for pair in layers:test_layers_gpu.c spconv:test_spconv_gpu.c; do
  src=$(dirname "$run")/../nets/${pair#*:}
  names=$(awk -v c="  nets-${pair%%:*})" 'index($0, c) == 1 { getline; sub(/.*cmd=\(/, ""); sub(/\).*/, ""); print }' \
          "$run")
  [ -n "$names" ] || fail "run.sh: no test names for nets-${pair%%:*}"
  for n in $names; do grep -q "cmocka_unit_test($n)" "$src" || fail "run.sh names $n, not a test of $src"; done
done
# a test program that is missing: FAIL, named (a suite that did not run its programs must not pass)
mv "$T/build/tests/nets/test_nets_layers_gpu" "$T/tl"
OUT=$T/miss bash "$run" --tool memcheck --only nets-layers "$F" > "$T/miss.out" 2>&1
rc=$?; [ $rc -eq 1 ] || fail "missing test program: exit $rc, want 1"
has "$T/miss.out" '^memcheck +nets-layers +FAIL .*no test program .*test_nets_layers_gpu '
# --nets-tests names the programs wherever they are
OUT=$T/given FILTER_LOG=$T/given.log bash "$run" --tool synccheck --only nets-layers --nets-tests "$T/tl,$T/none" "$F" \
  > "$T/given.out" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "--nets-tests: exit $rc, want 0"
has "$T/given.log" '^synccheck ran test_layernorm '
bash "$run" --nets-tests "$T/tl" "$F" > "$T/usage3" 2>&1
rc=$?; [ $rc -eq 2 ] || fail "--nets-tests without a comma: exit $rc, want 2"
mv "$T/tl" "$T/build/tests/nets/test_nets_layers_gpu"

# with --forwards, the kernel filter: racecheck checks the net-* forwards' nets/ kernels only (one
# --kernel-name kns= per kernel); memcheck, synccheck and initcheck (which must see every write) every launch,
# other commands every launch; --net-kernels all drops it
OUT=$T/filt FILTER_LOG=$T/filt.log bash "$run" --forwards --only serialize,net-ptv3 "$F" > "$T/filt.out" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "filter run: exit $rc, want 0"
has "$T/filt.log" "^racecheck kns=conv_kernel$"
has "$T/filt.log" "^racecheck kns=ln_block_kernel$"
[ "$(grep -c "^racecheck kns=" "$T/filt.log")" -eq "$(sed -n '/^NETS_KERNELS=/,/"$/p' "$run" | tr -d '"' | sed 's/NETS_KERNELS=//' | wc -w)" ] ||
  fail "racecheck: want one kernel filter per NETS_KERNELS entry (one net command)"
grep -q -E '^(memcheck|synccheck|initcheck) kns=' "$T/filt.log" && fail "memcheck/synccheck/initcheck got a kernel filter"
OUT=$T/filt2 FILTER_LOG=$T/filt2.log bash "$run" --tool racecheck --forwards --only net-flash3d --net-kernels all "$F" \
  > "$T/filt2.out" 2>&1
grep -q 'kns=' "$T/filt2.log" && fail "--net-kernels all still filtered"
has "$T/filt2.log" '^racecheck ran net --model flash3d-tiny'
OUT=$T/filt3 FILTER_LOG=$T/filt3.log bash "$run" --tool racecheck --only net-ptv3 --net-kernels conv_kernel,ln_warp \
  "$F" > "$T/filt3.out" 2>&1
[ "$(grep -c '^racecheck kns=' "$T/filt3.log")" -eq 2 ] || fail "--net-kernels conv_kernel,ln_warp: want 2 filters"
has "$T/filt3.log" '^racecheck kns=ln_warp$'
bash "$run" --net-kernels '-x' "$F" > "$T/usage2" 2>&1
rc=$?; [ $rc -eq 2 ] || fail "--net-kernels -x: exit $rc, want 2"
# the list is every __global__ function of nets/ (a kernel added there is checked, or this fails)
src=$(cd "$(dirname "$run")/../../nets" && pwd)
want=$(grep -h -A2 '__global__' "$src"/*.cu | grep -o '[a-z0-9_]*_kernel(' | tr -d '(' | sort -u | tr '\n' ' ')
got=$(sed -n '/^NETS_KERNELS=/,/"$/p' "$run" | tr -d '"' | sed 's/NETS_KERNELS=//' | tr ' ' '\n' | grep . | sort -u |
      tr '\n' ' ')
[ "$want" = "$got" ] || fail "run.sh's NETS_KERNELS ($got) is not the __global__ list of nets/ ($want)"

# skips and usage errors
COMPUTE_SANITIZER=$T/none bash "$run" "$F" > "$T/skip1" 2>&1
rc=$?; [ $rc -eq 77 ] || fail "no sanitizer: exit $rc, want 77"
FAKE_NODEV=1 bash "$run" "$F" > "$T/skip2" 2>&1
rc=$?; [ $rc -eq 77 ] || fail "no device: exit $rc, want 77"
has "$T/skip2" 'no CUDA device'
bash "$run" --tool helgrind "$F" > "$T/usage" 2>&1
rc=$?; [ $rc -eq 2 ] || fail "unknown tool: exit $rc, want 2"

t_done "sanitize run.sh: all checks passed"
