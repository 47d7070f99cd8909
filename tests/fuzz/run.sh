#!/usr/bin/env bash
# run.sh BUILD_DIR [SECONDS] - run every libFuzzer target of BUILD_DIR/tests/fuzz (a build configured with
# CC=clang -Dfuzz=true -Dcuda=disabled) for SECONDS each (default 30) on a copy of its seed corpus
# tests/fuzz/corpus/<name>, under AddressSanitizer and UndefinedBehaviorSanitizer (fatal). Prints one line per
# target, "fuzz_pcd: 183402 executions clean in 30 s", or the report's head and the saved input on a crash, a
# sanitizer report, a leak, a timeout (one input > 10 s) or a broken invariant; ends with
# "fuzz: N passed, N failed" and exits 1 when one failed (or no target was found). Inputs that failed are kept
# in BUILD_DIR/fuzz-artifacts/ (copy one into the corpus once fixed: the 'fuzz' test suite replays it).
# Scratch files (corpus copies, the targets' temporary files) live in one folder removed at the end, on
# /dev/shm when there is one (the results reader's merge fsyncs its files: cheap on tmpfs).
set -u
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
[[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || { echo "run.sh: SECONDS must be a positive integer, not '$secs'" >&2; exit 2; }
targets=()
for exe in "$build"/tests/fuzz/fuzz_*; do
  [[ -f $exe && -x $exe ]] && targets+=("$exe")
done
if (( ${#targets[@]} == 0 )); then
  echo "run.sh: no fuzz targets in $build/tests/fuzz (configure with CC=clang -Dfuzz=true -Dcuda=disabled)" >&2
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
base=/tmp
[[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
scratch=$(mktemp -d "$base/f3dfuzz-run.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
arts="$build/fuzz-artifacts"
mkdir -p "$arts"
# libFuzzer turns every sanitizer report into a crash; these make UBSan fatal with a stack and keep ASan's
# leak check on (LeakSanitizer runs after each input that allocated more than it freed).
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:+$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
passed=0
failed=0
for exe in "${targets[@]}"; do
  name=$(basename "$exe")
  corpus="$scratch/corpus/$name"
  mkdir -p "$corpus" "$scratch/tmp/$name"
  if [[ -d $here/corpus/${name#fuzz_} ]]; then cp "$here/corpus/${name#fuzz_}"/* "$corpus"/ 2>/dev/null; fi
  log="$scratch/$name.log"
  start=$(date +%s)
  TMPDIR="$scratch/tmp/$name" "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$arts/$name-" "$corpus" >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  # the final statistics (-print_final_stats), else the "#N DONE" line
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
  [[ -n $runs ]] || runs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -n 1)
  if (( rc == 0 )) && [[ -n $runs ]] && (( runs > 0 )); then
    echo "$name: $runs executions clean in $took s (corpus $(ls "$corpus" | wc -l) inputs after)"
    passed=$(( passed + 1 ))
  else
    echo "$name: FAILED (exit status $rc after ${runs:-?} executions, $took s); report:"
    pat='^==[0-9]+==ERROR|runtime error|invariant broken|ERROR: libFuzzer'
    if grep -q -E "$pat" "$log"; then grep -m 1 -A 30 -E "$pat" "$log"; else tail -n 30 "$log"; fi | sed 's/^/    /'
    ls "$arts"/"$name"-* 2>/dev/null | sed 's/^/    saved input: /'
    failed=$(( failed + 1 ))
  fi
done
echo "fuzz: $passed passed, $failed failed"
(( failed == 0 ))
