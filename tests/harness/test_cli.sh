#!/bin/sh
# test_cli.sh - f3dbench as a user runs it: exit codes (0 ok, 1 failure, 2 usage), --help on every
# subcommand, error lines "f3dbench: <what>: <why>", gen, a tiny sweep, and an interrupted sweep that
# must leave its run directory marked incomplete with no results.csv.
# usage: test_cli.sh PATH/TO/f3dbench
set -u
BIN=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/f3d-test-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect CODE CMD...: run, capture stdout/stderr in $T/out $T/err, check the exit code
expect() {
  want=$1; shift
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  [ "$got" -eq "$want" ] || { fail "$* exited $got, expected $want"; sed 's/^/  stderr: /' "$T/err"; }
}

expect 0 "$BIN" --help
grep -q '^usage: f3dbench' "$T/out" || fail "--help prints no usage"
expect 0 "$BIN" --version
expect 2 "$BIN"
expect 2 "$BIN" no-such-command
grep -q '^f3dbench: no-such-command: ' "$T/err" || fail "unknown command error line: $(cat "$T/err")"

cmds=$("$BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$cmds" ] || fail "no commands listed"
for c in $cmds; do
  expect 0 "$BIN" "$c" --help
  grep -qi 'usage' "$T/out" || fail "$c --help prints no usage on stdout"
  expect 2 "$BIN" "$c" --no-such-option
done

expect 0 "$BIN" info
grep -q '^devices: ' "$T/out" || fail "info does not report devices"

expect 2 "$BIN" gen
grep -q '^f3dbench: gen: ' "$T/err" || fail "gen without --out: $(cat "$T/err")"
expect 2 "$BIN" gen --out "$T/x.ply" --points abc
expect 2 "$BIN" gen --out "$T/x.txt"
expect 0 "$BIN" gen --kind uniform --points 2000 --voxel 0.05 --seed 3 --out "$T/u.ply"
[ -s "$T/u.ply" ] || fail "gen wrote no file"
head -c 3 "$T/u.ply" | grep -q ply || fail "gen output is not PLY"
expect 0 "$BIN" gen --kind lidar --points 1500 --out "$T/l.bin"
[ "$(wc -c <"$T/l.bin")" -eq 24000 ] || fail "l.bin is not 1500 records of 16 bytes"

expect 2 "$BIN" sweep --sizes abc
expect 2 "$BIN" sweep --workloads nosuch
expect 2 "$BIN" sweep --reps 0
expect 2 "$BIN" sweep --pipelines nosuch
grep -q "'nosuch' is not a pipeline" "$T/err" || fail "unknown pipeline message: $(cat "$T/err")"
expect 0 "$BIN" sweep --list-pipelines
grep -q '^  workload ' "$T/out" || fail "workload pipeline not listed"

expect 0 "$BIN" sweep --workloads uniform,clusters --sizes 2k,3k --reps 2 --out-dir "$T/res" --run-id run1
D="$T/res/run1"
[ -f "$D/results.csv" ] || fail "sweep wrote no results.csv"
[ -f "$D/INCOMPLETE" ] && fail "finished sweep still marked INCOMPLETE"
[ "$(head -n 1 "$D/results.csv")" = "workload,n_points,batch,pipeline,kernel,variant,metric,value,unit" ] ||
  fail "results.csv header"
grep -q '^clusters,3000,1,workload,make_exact,cpu,time_median,' "$D/results.csv" || fail "no make_exact row"
[ "$(grep -c ',workload,generate,cpu,time,' "$D/samples.csv")" -eq 8 ] || fail "samples: 2 workloads x 2 sizes x 2 reps"
grep -q '^status,complete$' "$D/context.csv" || fail "context status not complete"
grep -q '^seed,1$' "$D/context.csv" || fail "context has no seed"
grep -q "^results: $D" "$T/out" || fail "sweep does not name its directory"
tr -d '\n' <"$T/err" | grep -q "$(printf '\r')" && fail "progress line written to a non-terminal"
expect 1 "$BIN" sweep --sizes 2k --reps 1 --out-dir "$T/res" --run-id run1 # never rewrites a run

# a recorded input (here a generated PLY) and a batch: workload named after the file, read_input timed
expect 0 "$BIN" sweep --input "$T/u.ply" --sizes 1000 --batch 2 --reps 2 --out-dir "$T/res" --run-id run3
grep -q '^u,1000,2,workload,read_input,cpu,time_median,' "$T/res/run3/results.csv" || fail "no read_input row for u.ply"
grep -q '^input_u,' "$T/res/run3/context.csv" || fail "context does not record the input file"
expect 1 "$BIN" sweep --input "$T/missing.ply" --sizes 1000 --reps 1 --out-dir "$T/res"
grep -q '^f3dbench: sweep: .*missing.ply' "$T/err" || fail "missing input error: $(cat "$T/err")"

# SIGINT in the middle of a long sweep: exit 130, INCOMPLETE, status interrupted, no results.csv.
"$BIN" sweep --sizes 600k,600k,600k,600k,600k --reps 50 --out-dir "$T/res" --run-id run2 >"$T/out" 2>"$T/err" &
pid=$!
# the handlers are installed before the run directory is created: wait for it, then 1 s into the run
i=0
while [ ! -f "$T/res/run2/context.csv" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
kill -INT "$pid"
wait "$pid"
rc=$?
D="$T/res/run2"
[ "$rc" -eq 130 ] || fail "interrupted sweep exited $rc, expected 130"
[ -f "$D/INCOMPLETE" ] || fail "interrupted run not marked INCOMPLETE"
[ -f "$D/results.csv" ] && fail "interrupted run has a results.csv"
ls "$D" | grep -q partial && fail "interrupted run left partial files: $(ls "$D")"
grep -q '^status,interrupted$' "$D/context.csv" || fail "context status of interrupted run: $(grep status "$D/context.csv")"

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
