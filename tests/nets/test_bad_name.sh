#!/bin/sh
# test_bad_name.sh - a nets GPU test program refuses a test name it does not have, before it looks for a device:
# exit 2 and "no test named '<name>'" on any machine (tests/sanitize/run.sh names tests to these programs).
# usage: test_bad_name.sh PROGRAM HAVE_CUDA   (HAVE_CUDA 0: the CUDA-less stub, which exits 77, is a skip)
set -u
prog=$1
out=$("$prog" test_no_such_test 2>&1)
rc=$?
if [ "$2" = 0 ]; then
  [ $rc -eq 77 ] && { echo "CPU-only build: the program is a stub (skipped)"; exit 77; }
  echo "FAIL: the CPU-only stub exited $rc, want 77"; exit 1
fi
[ $rc -eq 2 ] || { echo "FAIL: $prog test_no_such_test exited $rc, want 2 (the name check must come first)"; echo "$out"; exit 1; }
printf '%s\n' "$out" | grep -q "no test named 'test_no_such_test'" || { echo "FAIL: no 'no test named' message"; echo "$out"; exit 1; }
echo "$prog: unknown test name refused (exit 2)"
