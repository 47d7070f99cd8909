#!/bin/sh
# test_oom_gpu.sh - on a GPU, a pipeline that does not fit the device memory it is given is skipped with the bytes
# it needed and had, and the sweep goes on to a complete run. `sweep --device-memory 64K` caps the arena far below
# what any GPU pipeline needs at 20k points: the run exits 0 with results.csv and no INCOMPLETE, the workload
# pipeline (host only) is measured as usual, each GPU pipeline (ptv3, flash3d; the backbones ptv3-net and
# flash3d-net, refused by their fit check or their checked forward) has skipped_bytes_needed > 64 KiB and
# skipped_bytes_free = 64 KiB (the cap, below the device's free memory), stderr names each skip, and plot reads the
# run. The CPU side of the skip (capacity and backend refusals, what stays a failure) is test_sweep_oom.c.
# The option's parsing is checked on any machine first; the rest exits 77 (skipped) without a CUDA device.
# usage: test_oom_gpu.sh PATH/TO/f3dbench
set -u
BIN=$1
. "$(dirname "$0")/../lib.sh"
t_setup test-oom-gpu

"$BIN" sweep --help | grep -q -- '--device-memory BYTES' || fail "sweep --help does not document --device-memory"
for bad in 0 abc 1.5 -1M 1KB; do
  "$BIN" sweep --device-memory "$bad" --sizes 1k --out-dir "$T/res" >/dev/null 2>"$T/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "--device-memory '$bad' exited $rc, expected 2"
  grep -q -- "--device-memory '$bad'" "$T/err" || fail "--device-memory '$bad': $(cat "$T/err")"
done
[ -d "$T/res" ] && fail "a refused --device-memory created the output directory"
need_gpu "$BIN"

D="$T/res/cap"
"$BIN" sweep --device-memory 64K --sizes 20k --workloads uniform --reps 3 --timing basic \
  --pipelines workload,ptv3,flash3d,ptv3-net,flash3d-net --out-dir "$T/res" --run-id cap >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] || { fail "sweep --device-memory 64K exited $rc"; sed 's/^/  stderr: /' "$T/err"; }
[ -f "$D/results.csv" ] || fail "no results.csv: the run did not complete"
[ -f "$D/INCOMPLETE" ] && fail "run still marked INCOMPLETE: $(cat "$D/INCOMPLETE")"
grep -q '^device_memory_cap_bytes,65536$' "$D/context.csv" || fail "context has no device_memory_cap_bytes,65536"
grep -q '^uniform,20000,1,workload,generate,cpu,time_median,' "$D/results.csv" || fail "the workload pipeline was not measured"
for p in ptv3 flash3d ptv3-net flash3d-net; do
  # total/all for a pipeline refused by the arena, forward/<model> for a backbone refused by its fit check
  need=$(awk -F, -v p="$p" '$4 == p && $7 == "skipped_bytes_needed" { print $8; exit }' "$D/results.csv")
  have=$(awk -F, -v p="$p" '$4 == p && $7 == "skipped_bytes_free" { print $8; exit }' "$D/results.csv")
  [ -n "$need" ] || { fail "$p: no skipped_bytes_needed row"; continue; }
  awk -v n="$need" 'BEGIN { exit !(n > 65536) }' || fail "$p: skipped_bytes_needed $need is not above the 64 KiB cap"
  [ "$have" = 65536 ] || fail "$p: skipped_bytes_free '$have', expected the cap 65536"
done
grep -q 'pipeline ptv3 skipped: it needed at least' "$T/err" || fail "no note for the skipped ptv3: $(cat "$T/err")"
"$BIN" plot "$D" >"$T/out" 2>"$T/err" || { fail "plot of a run with skipped pipelines"; sed 's/^/  stderr: /' "$T/err"; }

t_done "all out-of-memory checks passed"
