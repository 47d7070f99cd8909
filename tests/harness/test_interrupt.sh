#!/bin/sh
# test_interrupt.sh - an interrupted sweep keeps the cases that finished, and says so.
#  1. Stopped at a case boundary (--stop-after-cases 2, which raises SIGINT itself: a test-only option) in a
#     4-case CPU sweep: exit 130; results.csv and samples.csv hold the 2 finished cases only, INCOMPLETE stays,
#     context status interrupted, cases_done 2 of cases_total 4, cases_finished lists them. plot and compare
#     refuse it naming "incomplete run (interrupted after 2 of 4 cases", never "no results.csv"; compare --force
#     compares it with a warning; plot --partial draws it and REPORT.md says so under its title.
#  2. SIGINT and SIGTERM from outside in the middle of the second case: the first is kept, the second's rows
#     (some already written) are cut away: every row of results.csv and samples.csv belongs to a listed case.
#  3. SIGINT before any case finished, or a failure: nothing is kept, and the run directory, which holds nothing
#     measured, is removed (the sweep says so), so the run-id can be used again.
#  4. SIGKILL after a case: the .partial files stay with status running; compare refuses the run ("killed while
#     running"), compare --force uses it with a warning naming the .partial files.
# Correct with and without a GPU: every sweep here runs CPU pipelines (workload, and ptv3 on small cases).
# usage: test_interrupt.sh PATH/TO/f3dbench
set -u
BIN=$1
. "$(dirname "$0")/../lib.sh"
t_setup test-interrupt
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$T"' EXIT
ctx() { sed -n "s/^$2,//p" "$1/context.csv"; }
# sizes DIR FILE: the distinct n_points of FILE's rows, space-separated
sizes() { awk -F, 'NR > 1 { print $2 }' "$1/$2" | sort -un | tr '\n' ' ' | sed 's/ $//'; }
# wait_cases DIR N: until context.csv says N cases finished (at most 60 s)
wait_cases() {
  i=0
  while ! grep -q "^cases_done,$2\$" "$1/context.csv" 2>/dev/null && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
  grep -q "^cases_done,$2\$" "$1/context.csv" 2>/dev/null || fail "$1: case $2 did not finish within 60 s"
}
# whole_rows FILE FIELDS: every line has FIELDS comma-separated fields and the file ends in a newline
whole_rows() {
  awk -F, -v n="$2" 'NF != n { bad++ } END { exit bad > 0 }' "$1" || fail "$1: a row without $2 fields"
  [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] || fail "$1 does not end in a newline"
}

# ---- 1. stopped after 2 of 4 cases -------------------------------------------------------------------------
D="$T/res/stop"
expect 130 "$BIN" sweep --sizes 1000,1500,2000,2500 --pipelines workload,ptv3 --reps 3 --timing basic \
  --out-dir "$T/res" --run-id stop --stop-after-cases 2
grep -q 'interrupted (SIGINT received) after 2 of 4 cases: the finished cases are kept' "$T/err" ||
  fail "sweep's interruption line: $(tail -1 "$T/err")"
[ -f "$D/INCOMPLETE" ] || fail "interrupted run not marked INCOMPLETE"
[ "$(ctx "$D" status)" = interrupted ] || fail "status: $(ctx "$D" status)"
[ "$(ctx "$D" cases_done)" = 2 ] || fail "cases_done: $(ctx "$D" cases_done)"
[ "$(ctx "$D" cases_total)" = 4 ] || fail "cases_total: $(ctx "$D" cases_total)"
[ "$(ctx "$D" cases_finished)" = "lidar:1000 lidar:1500" ] || fail "cases_finished: $(ctx "$D" cases_finished)"
for f in results.csv samples.csv; do
  [ -f "$D/$f" ] || { fail "interrupted run lost its finished cases: no $f ($(ls "$D"))"; continue; }
  [ "$(sizes "$D" $f)" = "1000 1500" ] || fail "$f holds sizes '$(sizes "$D" $f)', expected the finished 1000 1500"
done
whole_rows "$D/results.csv" 9
whole_rows "$D/samples.csv" 10
grep -q '^lidar,1500,1,ptv3,.*,time_median,' "$D/results.csv" || fail "the second case's ptv3 rows are missing"
ls "$D" | grep -q partial && fail "stopped run left .partial files: $(ls "$D")"

expect 1 "$BIN" plot "$D"
grep -q "incomplete run (interrupted after 2 of 4 cases" "$T/err" || fail "plot of a stopped run: $(cat "$T/err")"
grep -q -- "--partial" "$T/err" || fail "plot does not point to --partial: $(cat "$T/err")"
[ -f "$D/REPORT.md" ] && fail "plot without --partial wrote a report"
expect 2 "$BIN" compare "$D" "$D"
grep -q "incomplete run (interrupted after 2 of 4 cases" "$T/err" || fail "compare of a stopped run: $(cat "$T/err")"
grep -q 'no results.csv' "$T/err" && fail "compare still says no results.csv: $(cat "$T/err")"
expect 0 "$BIN" compare --force -q "$D" "$D"
grep -q "warning: .*incomplete run (interrupted after 2 of 4 cases" "$T/err" || fail "compare --force warns: $(cat "$T/err")"
grep -q ' 0 slower, [1-9][0-9]* same' "$T/out" || fail "compare --force of the run with itself: $(cat "$T/out")"
expect 0 "$BIN" plot --partial "$D"
[ -f "$D/REPORT.md" ] || fail "plot --partial wrote no REPORT.md"
head -1 "$D/REPORT.md" | grep -q '^# ' || fail "REPORT.md does not start with its title"
head -4 "$D/REPORT.md" | grep -q 'incomplete run (interrupted after 2 of 4 cases' ||
  fail "REPORT.md does not say at its top that the run was interrupted: $(head -4 "$D/REPORT.md")"
grep -q '^| .*| interrupted (incomplete) |$' "$D/REPORT.md" || fail "REPORT.md's run table does not mark the run"
expect 1 "$BIN" merge --out "$T/merged" "$D"
grep -q "incomplete run (interrupted after 2 of 4 cases" "$T/err" || fail "merge of a stopped run: $(cat "$T/err")"
[ -d "$T/merged" ] && fail "merge took an interrupted run without --force"

# ---- 2. a signal from outside in the middle of the second case ------------------------------------------------
# The second case (600k points, make_exact alone ~0.3 s a run here) is well under way when the signal comes: its
# first stages' rows are in the partial files and must be cut away.
for sig in INT TERM; do
  D="$T/res/sig$sig"
  "$BIN" sweep --sizes 1000,600k,601k --pipelines workload --reps 10 --timing basic --out-dir "$T/res" \
    --run-id "sig$sig" >"$T/out" 2>"$T/err" &
  pid=$!
  wait_cases "$D" 1
  sleep 1.2
  kill -$sig "$pid"
  wait "$pid"
  rc=$?
  pid=
  want=130
  [ $sig = TERM ] && want=143
  [ "$rc" -eq "$want" ] || fail "SIG$sig: exit $rc, expected $want"
  [ "$(ctx "$D" status)" = interrupted ] || fail "SIG$sig: status $(ctx "$D" status)"
  [ "$(ctx "$D" status_reason)" = "SIG$sig received" ] || fail "SIG$sig: status_reason $(ctx "$D" status_reason)"
  done_n=$(ctx "$D" cases_done)
  [ "$done_n" = 1 ] || fail "SIG$sig: cases_done $done_n (the signal came during the second case)"
  [ -f "$D/results.csv" ] || { fail "SIG$sig: no results.csv ($(ls "$D"))"; continue; }
  [ "$(sizes "$D" results.csv)" = 1000 ] || fail "SIG$sig: results.csv holds sizes '$(sizes "$D" results.csv)', expected 1000"
  [ "$(sizes "$D" samples.csv)" = 1000 ] || fail "SIG$sig: samples.csv holds sizes '$(sizes "$D" samples.csv)', expected 1000"
  whole_rows "$D/results.csv" 9
  whole_rows "$D/samples.csv" 10
  grep -q 'after 1 of 3 cases' "$T/err" || fail "SIG$sig: sweep's line: $(tail -1 "$T/err")"
done

# ---- 3. before any case finished ---------------------------------------------------------------------------------
D="$T/res/none"
"$BIN" sweep --sizes 600k,601k --pipelines workload --reps 10 --timing basic --out-dir "$T/res" --run-id none \
  >"$T/out" 2>"$T/err" &
pid=$!
i=0
while [ ! -f "$D/context.csv" ] && [ "$i" -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 130 ] || fail "early SIGINT: exit $rc, expected 130"
grep -q "interrupted (SIGINT received) after 0 of 2 cases: nothing kept, removed the run directory $D\$" "$T/err" ||
  fail "early SIGINT: $(cat "$T/err")"
# it holds nothing measured: removed (it once stayed with INCOMPLETE and context.csv, blocking the run-id)
[ -e "$D" ] && fail "a run stopped before any case finished left its directory: $(ls "$D")"
expect 0 "$BIN" sweep --sizes 1000 --pipelines workload --reps 2 --timing basic --out-dir "$T/res" --run-id none
# the same for a run that fails before any case: the error, then the directory removed
expect 1 "$BIN" sweep --sizes 1000 --pipelines workload --voxel 1e30 --reps 2 --timing basic --out-dir "$T/res" \
  --run-id failed
grep -q "^f3dbench: sweep: nothing measured was kept: removed the run directory $T/res/failed\$" "$T/err" ||
  fail "failed sweep: $(cat "$T/err")"
[ -e "$T/res/failed" ] && fail "a run that failed before any case finished left its directory: $(ls "$T/res/failed")"

# ---- 4. SIGKILL: the .partial files are not taken for a finished run ------------------------------------------
D="$T/res/killed"
"$BIN" sweep --sizes 1000,600k --pipelines workload --reps 10 --timing basic --out-dir "$T/res" --run-id killed \
  >"$T/out" 2>"$T/err" &
pid=$!
wait_cases "$D" 1
sleep 0.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null
pid=
[ "$(ctx "$D" status)" = running ] || fail "killed run: status $(ctx "$D" status)"
[ -f "$D/results.csv.partial" ] || fail "killed run: no results.csv.partial ($(ls "$D"))"
expect 2 "$BIN" compare "$D" "$D"
grep -q "incomplete run (killed while running, after 1 of 2 cases; rows read from the .partial files" "$T/err" ||
  fail "compare of a killed run: $(cat "$T/err")"
expect 0 "$BIN" compare --force -q "$D" "$D"
grep -q "warning: .*killed while running.*compared anyway: --force" "$T/err" || fail "compare --force of a killed run: $(cat "$T/err")"
expect 1 "$BIN" plot "$D"
grep -q "killed while running" "$T/err" || fail "plot of a killed run: $(cat "$T/err")"
# A partial file cut inside a row (the writer killed mid-write): the cut row is dropped, never read. Cut in its
# unit ("ms" -> "m") it would pass for a whole row; cut inside a quoted field it would fail the whole run.
cp -r "$D" "$T/res/torn"
printf 'lidar,1000,1,workload,generate,cpu,torn_metric,12.5,m' >>"$T/res/torn/results.csv.partial"
printf 'lidar,1000,1,workload,generate,cpu,time,0,"12' >>"$T/res/torn/samples.csv.partial"
expect 0 "$BIN" compare --force -q "$T/res/torn" "$D"
grep -q ' 0 slower,' "$T/out" || fail "compare of torn partial files: $(cat "$T/out")"
expect 0 "$BIN" plot --partial --json "$T/res/torn"
[ -f "$T/res/torn/results.json" ] || fail "plot --json of torn partial files wrote no results.json"
grep -q torn_metric "$T/res/torn/results.json" && fail "the row cut short at the end of results.csv.partial was read"
# The same cut row followed by a zero-filled tail (blocks past the writer's last sync after a crash): torn there too
cp -r "$D" "$T/res/nul"
printf 'lidar,1000,1,workload,generate,cpu,nul_metric,12.5,m' >>"$T/res/nul/results.csv.partial"
head -c 4096 /dev/zero >>"$T/res/nul/results.csv.partial"
head -c 100 /dev/zero >>"$T/res/nul/samples.csv.partial"
expect 0 "$BIN" plot --partial --json "$T/res/nul"
grep -q nul_metric "$T/res/nul/results.json" && fail "the row before the zero-filled tail was read"
[ "$(grep -c '"name"' "$T/res/nul/results.json")" -eq "$(grep -c '"name"' "$T/res/torn/results.json")" ] ||
  fail "a zero-filled tail lost rows before it"

t_done "all interruption checks passed"
