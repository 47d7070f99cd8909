#!/bin/sh
# test_cli.sh - f3dbench as a user runs it: exit codes (0 ok, 1 failure, 2 usage), --help on every
# subcommand, error lines "f3dbench: <what>: <why>", gen, a tiny sweep, the sweep's measurement flags
# (usage errors, -vv, --timing paper on the CPU), shards and merge, compare and plot on sweep output,
# the progress line on a terminal, and an interrupted sweep that must leave its run directory marked
# incomplete with no results.csv. Correct with and without a GPU (f3dbench info says which); sweeps that
# are not about GPU timing use --timing basic and small sizes so the test stays quick on a GPU machine
# too (the NVBench-style timing is test_sweep_gpu.sh's and test_measure_gpu.c's job): what costs there is
# the host's share, each attention plan's check against the double reference (about 0.3 s per plan and
# variant at 1000-1500 rows) and the backbones' CPU forwards (seconds each), so the case grid runs the
# workload pipeline alone, ptv3 and flash3d run on one small case, and no sweep here runs the backbones.
# usage: test_cli.sh PATH/TO/f3dbench [SOURCE_ROOT]
set -u
BIN=$1
SRC=${2:-}
. "$(dirname "$0")/../lib.sh"
# GPU=1 when f3dbench sees a CUDA device ("devices: N", N >= 1), 0 for "devices: no CUDA device (...)"
if has_gpu "$BIN"; then GPU=1; else GPU=0; fi
B="--timing basic"
t_setup test-cli

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
  grep -q "^f3dbench: $c: unrecognized option '--no-such-option'" "$T/err" || fail "$c --no-such-option: $(head -1 "$T/err")"
done

# sweep: a repeated size, workload or pipeline would record every key twice
expect 2 "$BIN" sweep --sizes 2k,2k --reps 1 $B --out-dir "$T/res"
grep -q 'given twice' "$T/err" || fail "sweep with a repeated size: $(cat "$T/err")"
expect 2 "$BIN" sweep --workloads lidar,lidar --sizes 2k --reps 1 $B --out-dir "$T/res"
expect 2 "$BIN" sweep --pipelines workload,workload --sizes 2k --reps 1 $B --out-dir "$T/res"
# an empty item in a list is refused (it was skipped), as is an empty --out-dir (exit 1, naming "results")
for a in "--sizes 1k,,2k" "--workloads lidar,,uniform" "--pipelines workload," "--workloads ,"; do
  expect 2 "$BIN" sweep --check-args $a
done
grep -q "^f3dbench: sweep: --workloads ',': an empty item" "$T/err" || fail "sweep --workloads ,: $(cat "$T/err")"
expect 2 "$BIN" sweep --check-args --out-dir ''
grep -q "^f3dbench: sweep: --out-dir '': an empty path" "$T/err" || fail "sweep --out-dir '': $(cat "$T/err")"
expect 2 "$BIN" sweep --check-args --input ''
grep -q "^f3dbench: sweep: --input '': an empty path" "$T/err" || fail "sweep --input '': $(cat "$T/err")"

# attn: values that would run nothing, or check nothing, are refused before any work
expect 2 "$BIN" attn --variant ''
expect 2 "$BIN" attn --variant cpu,v1
expect 2 "$BIN" attn --variant cpu --rows 0
expect 2 "$BIN" attn --variant cpu --rows 0x10
expect 2 "$BIN" attn --variant cpu --check-rows nan
grep -q "^f3dbench: attn: --check-rows 'nan': a whole count from 0 to 2147483647" "$T/err" ||
  fail "attn --check-rows nan: $(cat "$T/err")"
# a bad value's message names the option, the value and what the option takes
for a in "--rows 1G:--rows '1G': a whole count from 1 to 2147483647" \
         "--heads 100000:--heads '100000': a whole count from 1 to 65535" \
         "--bucket-size 1e30:--bucket-size '1e30': a whole count from 1 to 1073741824" \
         "--dtype fp32:--dtype 'fp32': fp16 or bf16"; do
  expect 2 "$BIN" attn --variant cpu ${a%%:*}
  grep -qF "f3dbench: attn: ${a#*:}" "$T/err" || fail "attn ${a%%:*}: $(cat "$T/err")"
done
# a plan argument is a decimal count (strtoul wrapped -1, and cut 2^32+1 down to a valid 1)
expect 2 "$BIN" attn --variant cpu --rows 64 --plan swin:-1
expect 2 "$BIN" attn --variant cpu --rows 64 --plan swin:4294967297
grep -q "bad plan 'swin:4294967297'" "$T/err" || fail "attn --plan swin:4294967297: $(cat "$T/err")"
# --save's directory is checked before the run, not after it
expect 2 "$BIN" attn --variant cpu --rows 64 --save "$T/no-such-dir/npy"
grep -q "is not an existing directory" "$T/err" || fail "attn --save into a missing directory: $(cat "$T/err")"
grep -q '^attn cpu' "$T/out" && fail "attn --save into a missing directory ran first"
expect 2 "$BIN" attn --variant cpu --rows 64 --save ''
ln -s "$T/nowhere" "$T/dangling"
expect 2 "$BIN" attn --variant cpu --rows 64 --save "$T/dangling"
grep -q "a link to nothing" "$T/err" || fail "attn --save to a dangling link: $(cat "$T/err")"
# --save writes all its files or none: a folder where o.npy goes is found before any file moves in, so the earlier
# q.npy stays and no file of this save appears (q, k and v were once written in place first); a save that works
# writes all eight and leaves no staging folder
A="--variant cpu --rows 64 --bucket-size 16 --scope-buckets 2 --reps 1 --warmup 0"
mkdir -p "$T/attn-keep/o.npy"
printf 'earlier' > "$T/attn-keep/q.npy"
expect 1 "$BIN" attn $A --save "$T/attn-keep"
grep -q "^f3dbench: attn: --save: $T/attn-keep/o.npy: is a directory: nothing saved" "$T/err" ||
  fail "attn --save onto a folder o.npy: $(cat "$T/err")"
[ "$(cat "$T/attn-keep/q.npy")" = earlier ] || fail "a failed attn --save replaced the earlier q.npy"
[ "$(ls -A "$T/attn-keep" | tr '\n' ' ')" = 'o.npy q.npy ' ] ||
  fail "a failed attn --save left files behind: $(ls -A "$T/attn-keep" | tr '\n' ' ')"
expect 0 "$BIN" attn $A --save "$T/attn-npy"
[ "$(ls -A "$T/attn-npy" | tr '\n' ' ')" = \
  'bucket_count.npy bucket_start.npy k.npy lse.npy o.npy q.npy scope.npy v.npy ' ] ||
  fail "attn --save wrote: $(ls -A "$T/attn-npy" | tr '\n' ' ')"
# attn without --variant runs the recommended kernel (auto: v9, v24 where v9 cannot run), not the first one
# written; auto runs alone
"$BIN" attn --help | grep -q 'auto (default)' || fail "attn --help does not name the auto default"
expect 2 "$BIN" attn --variant auto,v1 --rows 64
grep -q "'auto' runs alone" "$T/err" || fail "attn --variant auto,v1: $(cat "$T/err")"
# a head dim no kernel takes is a usage error before any device is opened (it was the no-device error)
expect 2 "$BIN" attn --head-dim 24
grep -q "^f3dbench: attn: --head-dim '24': one of 16, 32, 64 or 128" "$T/err" || fail "attn --head-dim 24: $(cat "$T/err")"
# every command's errors name the command, options and unreadable inputs included
expect 2 "$BIN" serialize --out "$T/ser.csv" --orders z,foo "$T/none.ply"
grep -q "^f3dbench: serialize: --orders: unknown order 'foo'" "$T/err" || fail "serialize --orders foo: $(cat "$T/err")"
expect 2 "$BIN" serialize --out "$T/ser.csv" --grid x "$T/none.ply"
grep -q "^f3dbench: serialize: --grid 'x'" "$T/err" || fail "serialize --grid x: $(cat "$T/err")"
# a cloud past the hashes' grid (2^21 voxels an axis) is refused by name, not folded into the last voxel
printf -- '-100000 0 0\n1 1 1\n100000 0 0\n' >"$T/far.xyz"
for c in psh pool; do
  expect 1 "$BIN" $c --out "$T/far.csv" "$T/far.xyz"
  grep -q "spans 200000 m along x: more than 2097151 voxels of 0.05 m" "$T/err" || fail "$c on a far cloud: $(cat "$T/err")"
  [ -e "$T/far.csv" ] && fail "$c on a far cloud left $T/far.csv"
done
# an output that cannot be written names the command and the folder, not the temporary
"$BIN" gen --kind uniform --points 500 --out "$T/small.ply" >/dev/null 2>&1 || fail "gen small.ply"
for c in serialize psh pool; do
  expect 1 "$BIN" $c --out "$T/no-such/o.csv" "$T/small.ply"
  grep -q "^f3dbench: $c: $T/no-such/o.csv: cannot write in $T/no-such: No such file or directory" "$T/err" ||
    fail "$c --out into a missing folder: $(cat "$T/err")"
done
if [ -w /dev/full ]; then
  expect 1 "$BIN" psh --out /dev/full "$T/small.ply"
  grep -q "^f3dbench: psh: /dev/full: write failed: No space left on device" "$T/err" || fail "psh --out /dev/full: $(cat "$T/err")"
fi
for c in serialize psh pool; do
  expect 1 "$BIN" $c --out "$T/ser.csv" "$T/none.ply"
  grep -q "^f3dbench: $c: $T/none.ply: cannot open" "$T/err" || fail "$c on a missing input: $(cat "$T/err")"
  [ -e "$T/ser.csv" ] && fail "$c on a missing input left $T/ser.csv"
done
if [ "$GPU" -eq 0 ]; then
  expect 1 "$BIN" attn --rows 4096
  grep -q '^f3dbench: attn: v9: ' "$T/err" || fail "attn's default without a GPU does not name v9: $(cat "$T/err")"
else
  expect 0 "$BIN" attn --rows 4096 --reps 2 --warmup 1 --check-rows 64
  grep -Eq '^attn (v9 |v24 ).*median' "$T/out" || fail "attn's default timed neither v9 nor v24: $(cat "$T/out")"
  grep -q '^attn v1 ' "$T/out" && fail "attn's default ran v1"
fi

expect 0 "$BIN" info
grep -q '^devices: ' "$T/out" || fail "info does not report devices"
# a failed write of standard output is a failure, not a truncated report with status 0
if [ -w /dev/full ]; then
  for args in "info" "--help" "gen --help"; do
    # shellcheck disable=SC2086  # args is split into words on purpose
    "$BIN" $args >/dev/full 2>"$T/err"
    rc=$?
    [ "$rc" -eq 1 ] || fail "f3dbench $args >/dev/full exited $rc, expected 1"
    grep -q '^f3dbench: standard output: write error' "$T/err" || fail "f3dbench $args >/dev/full: $(cat "$T/err")"
  done
fi
# where git cannot see the tree (GIT_DIR pointing nowhere stands in for a copy without .git), the
# commit comes from F3D_GIT_COMMIT / F3D_GIT_DIRTY; a value that is not a plain name is ignored
expect 0 env GIT_DIR=/nonexistent F3D_GIT_COMMIT=abc1234 F3D_GIT_DIRTY=yes "$BIN" info
grep -q '^  git commit     abc1234 (dirty)$' "$T/out" || fail "info ignores F3D_GIT_COMMIT: $(grep 'git commit' "$T/out")"
expect 0 env GIT_DIR=/nonexistent "F3D_GIT_COMMIT=a;b" "$BIN" info
grep -q '^  git commit     unknown$' "$T/out" || fail "info took a bad F3D_GIT_COMMIT: $(grep 'git commit' "$T/out")"
expect 0 env GIT_DIR=/nonexistent F3D_GIT_COMMIT=abc1234 "$BIN" sweep --pipelines workload --workloads uniform \
  --sizes 1000 --reps 1 $B --out-dir "$T/res" --run-id envcommit
grep -q '^git_commit,abc1234$' "$T/res/envcommit/context.csv" || fail "context ignores F3D_GIT_COMMIT"
# an explicit F3D_GIT_COMMIT also wins where git does see a checkout (a copied tree can carry a stale
# .git); without it, info reports git's own commit of the source tree when there is one
expect 0 env F3D_GIT_COMMIT=def5678 F3D_GIT_DIRTY=no "$BIN" info
grep -q '^  git commit     def5678$' "$T/out" || fail "git overrode F3D_GIT_COMMIT: $(grep 'git commit' "$T/out")"
if [ -n "$SRC" ] && own=$(git -C "$SRC" rev-parse --short=7 HEAD 2>/dev/null) && [ -n "$own" ]; then
  expect 0 env -u F3D_GIT_COMMIT "$BIN" info
  grep -q "^  git commit     $own" "$T/out" || fail "info without F3D_GIT_COMMIT: $(grep 'git commit' "$T/out"), git says $own"
fi

expect 2 "$BIN" gen
grep -q '^f3dbench: gen: ' "$T/err" || fail "gen without --out: $(cat "$T/err")"
expect 2 "$BIN" gen --out "$T/x.ply" --points abc
expect 2 "$BIN" gen --out "$T/x.ply" --points 2e9 # past the sweep's largest size
# a generation that fails says why (the message was dropped for the bare status)
expect 1 "$BIN" gen --out "$T/x.ply" --voxel 100 --points 100
grep -q "^f3dbench: gen: make_exact: lidar gives only .* unique voxels" "$T/err" || fail "gen at voxel 100: $(cat "$T/err")"
[ -e "$T/x.ply" ] && fail "a failed gen left $T/x.ply"
expect 2 "$BIN" gen --out "$T/x.txt"
expect 0 "$BIN" gen --kind uniform --points 2000 --voxel 0.05 --seed 3 --out "$T/u.ply"
[ -s "$T/u.ply" ] || fail "gen wrote no file"
head -c 3 "$T/u.ply" | grep -q ply || fail "gen output is not PLY"
expect 0 "$BIN" gen --kind lidar --points 1500 --out "$T/l.bin"
[ "$(wc -c <"$T/l.bin")" -eq 24000 ] || fail "l.bin is not 1500 records of 16 bytes"

# the backbones have no CPU stage: without a device, a sweep of them alone is refused with no run written, and
# beside another pipeline they are named as adding no rows
if [ "$GPU" -eq 0 ]; then
  expect 1 "$BIN" sweep --pipelines ptv3-net,flash3d-net --sizes 1000 $B --out-dir "$T/res" --run-id gpuonly
  grep -q '^f3dbench: sweep: ptv3-net, flash3d-net need a CUDA device, and .*no run written' "$T/err" ||
    fail "sweep of the backbones alone without a device: $(cat "$T/err")"
  [ -e "$T/res/gpuonly" ] && fail "sweep of the backbones alone without a device wrote a run"
  expect 0 "$BIN" sweep --pipelines workload,ptv3-net --workloads uniform --sizes 1000 --reps 1 $B --out-dir "$T/res" \
    --run-id gpumixed
  grep -q '^f3dbench: sweep: note: ptv3-net: GPU only, no rows without a CUDA device' "$T/err" ||
    fail "sweep with a backbone without a device does not name it: $(cat "$T/err")"
  # bf16 applies to GPU stages only: without a device a run that says bf16 would hold fp32 CPU rows
  expect 1 "$BIN" sweep --dtype bf16 --pipelines workload --sizes 1000 --reps 1 $B --out-dir "$T/res" --run-id bf16cpu
  grep -q '^f3dbench: sweep: --dtype bf16 applies to the GPU stages, and .*no run written$' "$T/err" ||
    fail "sweep --dtype bf16 without a device: $(cat "$T/err")"
  [ -e "$T/res/bf16cpu" ] && fail "sweep --dtype bf16 without a device wrote a run"
fi
for id in '' a/b . .. ../x; do # refused as a usage error, by --check-args too, before anything is created
  expect 2 "$BIN" sweep --check-args --run-id "$id" --out-dir "$T/res"
  expect 2 "$BIN" sweep --pipelines workload --sizes 1000 --run-id "$id" --out-dir "$T/res-id"
  grep -q "^f3dbench: sweep: --run-id '$id': a plain directory name" "$T/err" || fail "--run-id '$id': $(cat "$T/err")"
done
# a run-id of 256 bytes is a usage error too (it was cut to 255 bytes silently); 255 is a directory name
long=$(printf 'a%.0s' $(seq 1 256))
expect 2 "$BIN" sweep --pipelines workload --sizes 1000 --run-id "$long" --out-dir "$T/res-id"
grep -q "^f3dbench: sweep: --run-id 'a\{40\}\.\.\.': 256 bytes, a directory name holds at most 255\$" "$T/err" ||
  fail "--run-id of 256 bytes: $(cat "$T/err")"
[ -e "$T/res-id" ] && fail "a refused --run-id created its output directory"
expect 0 "$BIN" sweep --check-args --run-id "${long#a}" --out-dir "$T/res"
expect 2 "$BIN" sweep --sizes abc
grep -q "^f3dbench: sweep: --sizes 'abc': expected counts" "$T/err" || fail "--sizes error line: $(cat "$T/err")"
expect 2 "$BIN" sweep --check-args --sizes 1e15 # past any device: a usage error, not a failed allocation in the run
expect 2 "$BIN" sweep --check-args --sizes 1M..1e12:1M
expect 2 "$BIN" sweep --workloads nosuch
expect 2 "$BIN" sweep --check-args --dtype fp32
grep -q "^f3dbench: sweep: --dtype 'fp32': expected fp16 or bf16\$" "$T/err" || fail "--dtype fp32: $(cat "$T/err")"
expect 0 "$BIN" sweep --check-args --dtype bf16
expect 2 "$BIN" sweep --reps 0
expect 2 "$BIN" sweep --pipelines nosuch
grep -q "'nosuch' is not a pipeline" "$T/err" || fail "unknown pipeline message: $(cat "$T/err")"
expect 0 "$BIN" sweep --list-pipelines
grep -q '^  workload ' "$T/out" || fail "workload pipeline not listed"

# the case grid (2 workloads x 2 sizes) on the workload pipeline: rows, samples, context, the run directory
expect 0 "$BIN" sweep --workloads uniform,clusters --sizes 2k,3k --reps 3 $B --pipelines workload --out-dir "$T/res" \
  --run-id run1
D="$T/res/run1"
[ -f "$D/results.csv" ] || fail "sweep wrote no results.csv"
[ -f "$D/INCOMPLETE" ] && fail "finished sweep still marked INCOMPLETE"
[ "$(head -n 1 "$D/results.csv")" = "workload,n_points,batch,pipeline,kernel,variant,metric,value,unit" ] ||
  fail "results.csv header"
grep -q '^clusters,3000,1,workload,make_exact,cpu,time_median,' "$D/results.csv" || fail "no make_exact row"
[ "$(grep -c ',workload,generate,cpu,time,' "$D/samples.csv")" -eq 12 ] || fail "samples: 2 workloads x 2 sizes x 3 reps"
grep -q '^status,complete$' "$D/context.csv" || fail "context status not complete"
grep -q '^seed,1$' "$D/context.csv" || fail "context has no seed"
grep -q '^dtype,fp16$' "$D/context.csv" || fail "context has no dtype (fp16 by default)"
grep -q "^results: $D" "$T/out" || fail "sweep does not name its directory"
tr -d '\n' <"$T/err" | grep -q "$(printf '\r')" && fail "progress line written to a non-terminal"
expect 1 "$BIN" sweep --sizes 2k --reps 1 $B --out-dir "$T/res" --run-id run1 # never rewrites a run
grep -q '^command_line,"f3dbench sweep --workloads uniform,clusters --sizes 2k,3k ' "$D/context.csv" ||
  fail "command line not recorded as typed: $(grep command_line "$D/context.csv")"
grep -q '^timing,' "$D/context.csv" || fail "context has no timing key"

# ptv3 and flash3d on the main path, one case (M)
expect 0 "$BIN" sweep --pipelines ptv3,flash3d --workloads uniform --sizes 1500 --reps 3 $B --out-dir "$T/res" --run-id main
M="$T/res/main"
# the buckets each hash can reach: 1500 points at S = 512 make 4 buckets, all reachable (2^bits >= 4)
grep -q '^uniform,1500,1,flash3d,psh.xor-mod,cpu,reachable_buckets,4,count$' "$M/results.csv" ||
  fail "no reachable_buckets row: $(grep reachable "$M/results.csv" | head -3)"
# attention needs a GPU (its only CPU path is the double reference): without one, both pipelines say
# why on stderr and write no attn.* rows
if [ "$GPU" -eq 0 ]; then
  for p in ptv3 flash3d; do
    grep -q "^f3dbench: $p: attention skipped (no GPU): " "$T/err" || fail "$p: no attention skip reason: $(cat "$T/err")"
  done
  grep -q ',attn\.' "$M/results.csv" && fail "attention rows without a GPU"
fi
# counters are off either way here, for the reason that applies: no device, or --timing basic (which
# has no counter pass) on a GPU; GPU stages ran only with a GPU
if [ "$GPU" -eq 0 ]; then
  grep -q '^counters,"\{0,1\}off (.*no CUDA device' "$M/context.csv" ||
    fail "context does not say counters are off without a GPU: $(grep '^counters,' "$M/context.csv")"
  grep -q ',v[0-9][0-9]*,time_median,' "$M/results.csv" && fail "GPU variant rows without a GPU"
else
  grep -q '^counters,"\{0,1\}off (--timing basic)' "$M/context.csv" ||
    fail "context does not say --timing basic turned counters off: $(grep '^counters,' "$M/context.csv")"
  grep -q '^timing,basic$' "$M/context.csv" || fail "--timing basic not recorded: $(grep '^timing,' "$M/context.csv")"
  grep -q ',time_noise,' "$M/results.csv" && fail "--timing basic wrote NVBench-style rows"
  # the main path: serialization's best entry (v2) only, PSH v1, v2 and the best entry, no ladder-only stage
  grep -q '^uniform,1500,1,ptv3,serialize,v2,time_median,' "$M/results.csv" || fail "no GPU rows with a GPU"
  grep -q '^uniform,1500,1,flash3d,psh.xor-mod,v1,time_median,' "$M/results.csv" || fail "main path: no PSH v1 row"
  grep -q '^uniform,1500,1,flash3d,psh.xor-mod,v2,time_median,' "$M/results.csv" || fail "main path: no PSH v2 row"
  for k in 'ptv3,serialize,v0' 'ptv3,dedup,' 'ptv3,encode_all,' 'ptv3,copy_qkv_C64,' 'flash3d,psh.xor-mod,v3,' \
    'flash3d,pool_assign,' 'flash3d,psh.xor-mod,cpu,time_median'; do
    grep -q ",$k" "$M/results.csv" && fail "main path ran a ladder-only stage: $k"
  done
fi
# the main path, and how many GPU stages each case had (the time budget's arithmetic, cmd_sweep.c)
grep -q '^stage_selection,"\{0,1\}main ' "$M/context.csv" || fail "context: no stage_selection main"
grep -q '^gpu_stages_per_case,"\{0,1\}uniform:1500:[0-9]' "$M/context.csv" ||
  fail "context: no gpu_stages_per_case: $(grep gpu_stages "$M/context.csv")"
[ "$GPU" -eq 0 ] && ! grep -q '^gpu_stages_per_case,"\{0,1\}uniform:1500:0"\{0,1\}$' "$M/context.csv" &&
  fail "GPU stages counted without a GPU: $(grep gpu_stages "$M/context.csv")"
# --ladder: every rung (the CPU references timed too)
expect 0 "$BIN" sweep --ladder --pipelines ptv3,flash3d --workloads uniform --sizes 1000 --reps 2 $B --out-dir "$T/res" \
  --run-id ladder
grep -q '^stage_selection,"\{0,1\}ladder ' "$T/res/ladder/context.csv" || fail "context: no stage_selection ladder"
grep -q '^uniform,1000,1,flash3d,psh.xor-mod,cpu,time_median,' "$T/res/ladder/results.csv" ||
  fail "--ladder: the PSH CPU reference not timed"
if [ "$GPU" -eq 1 ]; then
  for k in 'ptv3,serialize,v0,time_median' 'ptv3,serialize,v1,time_median' 'ptv3,encode_all,v0,time_median' \
    'ptv3,copy_qkv_C64,memcpy,time_median' 'ptv3,gather_qkv_C64,v0,time_median' 'flash3d,psh.xor-mod,v3,time_median' \
    'flash3d,pool_assign,v1+v9,time_median' 'flash3d,pool,v1+v5,time_median'; do
    grep -q "^uniform,1000,1,$k," "$T/res/ladder/results.csv" || fail "--ladder: no row $k"
  done
else
  grep -q '^uniform,1500,1,flash3d,psh.xor-mod,cpu,time_median,' "$M/results.csv" ||
    fail "without a GPU the main path times the PSH CPU reference (its only PSH)"
fi

# GPU measurement flags: documented, and usage errors exit 2 before anything is created
expect 0 "$BIN" sweep --help
for f in --timing nvbench paper basic --no-counters --metrics --max-time --time-budget --shard --ladder; do
  grep -q -- "$f" "$T/out" || fail "sweep --help does not document $f"
done
expect 2 "$BIN" sweep --timing fast
grep -q "^f3dbench: sweep: --timing 'fast'" "$T/err" || fail "--timing error line: $(cat "$T/err")"
expect 2 "$BIN" sweep --shard 3/2
expect 2 "$BIN" sweep --shard 1/0
expect 2 "$BIN" sweep --shard 1
expect 2 "$BIN" sweep --max-time 0
expect 2 "$BIN" sweep --time-budget -5
expect 2 "$BIN" sweep --timing basic --metrics sm_active
expect 2 "$BIN" sweep --timing paper --max-time 1
[ -d "$T/res/run-x" ] && fail "a usage error created a run directory"

# -vv: one line per stage on a non-terminal; --timing paper keeps 19 CPU samples by default
expect 0 "$BIN" sweep -vv --timing paper --no-counters --pipelines workload --workloads uniform --sizes 1000 --out-dir "$T/res" \
  --run-id paper
grep -q '^\[1/1\] uniform n=1000 batch=1: workload generate cpu$' "$T/err" || fail "-vv per-stage line: $(cat "$T/err")"
[ "$(grep -c ',workload,generate,cpu,time,' "$T/res/paper/samples.csv")" -eq 19 ] || fail "paper: 19 CPU samples"
# without a GPU, --metrics cannot be checked: the sweep says so instead of taking a typo silently (with
# a GPU, an unknown name is a usage error: test_sweep_gpu.sh)
if [ "$GPU" -eq 0 ]; then
  expect 0 "$BIN" sweep --timing paper --metrics bogus_metric --pipelines workload --workloads uniform --sizes 1000 \
    --reps 1 --out-dir "$T/res" --run-id metrics-nogpu
  grep -q "^f3dbench: sweep: note: --metrics 'bogus_metric' not checked and not used" "$T/err" ||
    fail "--metrics without a GPU: no note: $(cat "$T/err")"
fi

# shards: 0/2 and 2/2 (1-based numbering of the same split) partition 2 workloads x 3 sizes; merge
# joins them into the rows of the unsharded sweep; one shard alone is refused
for sh in 0/2 2/2 1/2; do
  expect 0 "$BIN" sweep --workloads uniform,clusters --sizes 1000,1500,2000 --reps 2 $B --pipelines workload \
    --out-dir "$T/sh" --run-id "s${sh%/*}" --shard "$sh"
done
[ "$(grep '^shard,' "$T/sh/s1/context.csv")" = "shard,1/2" ] || fail "shard context key"
cases() { sed -n '2,$p' "$1/results.csv" | cut -d, -f1,2 | sort -u; }
[ "$(cases "$T/sh/s0")" = "$(printf 'clusters,1500\nuniform,1000\nuniform,2000')" ] || fail "shard 0/2 cases: $(cases "$T/sh/s0")"
[ "$(cases "$T/sh/s1")" = "$(printf 'clusters,1000\nclusters,2000\nuniform,1500')" ] || fail "shard 1/2 cases: $(cases "$T/sh/s1")"
[ "$(cases "$T/sh/s0")" = "$(cases "$T/sh/s2")" ] || fail "shard 2/2 is not shard 0/2"
expect 0 "$BIN" merge -o "$T/sh/merged" "$T/sh/s0" "$T/sh/s1"
[ "$(cases "$T/sh/merged" | wc -l)" -eq 6 ] || fail "merged shards do not hold the 6 cases"
[ "$(($(wc -l <"$T/sh/s0/results.csv") + $(wc -l <"$T/sh/s1/results.csv") - 1))" -eq "$(wc -l <"$T/sh/merged/results.csv")" ] ||
  fail "merged rows are not the sum of the shards' rows"
expect 1 "$BIN" merge -o "$T/sh/half" "$T/sh/s0"
grep -q 'shards given' "$T/err" || fail "merge of one shard of two: $(cat "$T/err")"
# OUT's folder must exist; the message names it, not merge's temporary
expect 2 "$BIN" merge -o "$T/sh/no-such/m" "$T/sh/s0" "$T/sh/s1"
grep -q "^f3dbench: merge: -o $T/sh/no-such/m: $T/sh/no-such is not an existing folder" "$T/err" ||
  fail "merge -o into a missing folder: $(cat "$T/err")"
# the merged context counts the cases of both shards; --force merges one shard of two but marks the result
# incomplete and says so (it once said status complete, nothing on stderr)
grep -q '^cases_total,6$' "$T/sh/merged/context.csv" ||
  fail "merged cases_total: $(grep cases_total "$T/sh/merged/context.csv")"
expect 0 "$BIN" merge --force -o "$T/sh/halfforced" "$T/sh/s0"
grep -q '^f3dbench: merge: warning: .*incomplete run (partial: merged with --force from 1 of 2 shards, missing 1/2' \
  "$T/err" || fail "forced merge of one shard of two: $(cat "$T/err")"
grep -q '^status,partial$' "$T/sh/halfforced/context.csv" && [ -f "$T/sh/halfforced/INCOMPLETE" ] ||
  fail "forced merge of one shard of two is not marked incomplete: $(ls "$T/sh/halfforced")"
expect 2 "$BIN" merge -o "" "$T/sh/s0" "$T/sh/s1"
grep -q "^f3dbench: merge: -o '': an empty directory name\$" "$T/err" || fail "merge -o '': $(cat "$T/err")"
expect 1 "$BIN" merge -o "$T/sh/s0" "$T/sh/s0" "$T/sh/s1" # never over an existing directory (here an input)
grep -q 'already exists' "$T/err" || fail "merge into an input: $(cat "$T/err")"
# more shards than cases: a shard without a case (cases_total 0, a header-only results.csv) is whole and merges;
# a merged run merges again, naming its inputs once (merged_from is not copied from the first input)
for sh in 0/3 1/3 2/3; do
  expect 0 "$BIN" sweep --sizes 1000 --reps 2 $B --pipelines workload --out-dir "$T/sh3" --run-id "s${sh%/*}" --shard "$sh"
done
grep -q '^cases_total,0$' "$T/sh3/s2/context.csv" || fail "shard 2/3 of one case: $(grep cases_total "$T/sh3/s2/context.csv")"
expect 0 "$BIN" merge -o "$T/sh3/m" "$T/sh3/s0" "$T/sh3/s1" "$T/sh3/s2"
grep -q '^status,complete$' "$T/sh3/m/context.csv" || fail "merge of 3 shards of one case: $(cat "$T/sh3/m/context.csv")"
expect 0 "$BIN" merge -o "$T/sh3/mm" "$T/sh3/m" "$T/sh/merged"
[ "$(grep -c '^merged_from,' "$T/sh3/mm/context.csv")" -eq 1 ] || fail "a merge of a merged run: merged_from twice"

# compare: a run against itself is all "same" (exit 0), the main-path run too (its GPU keys with a GPU); two
# sweeps of the same options give one verdict per key with raw samples (exit 0 or 1: CPU timings on a shared
# machine may differ)
expect 0 "$BIN" compare "$T/res/run1" "$T/res/run1"
grep -q ' 0 slower, ' "$T/out" || fail "self-compare reports something slower: $(tail -n 1 "$T/out")"
if [ -w /dev/full ]; then # compare's 1 means "slower": a verdict it could not write is an error, 2
  "$BIN" compare "$T/res/run1" "$T/res/run1" >/dev/full 2>"$T/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "compare >/dev/full exited $rc, expected 2"
  grep -q '^f3dbench: standard output: write error' "$T/err" || fail "compare >/dev/full: $(cat "$T/err")"
fi
expect 0 "$BIN" compare "$M" "$M"
grep -q ' 0 slower, ' "$T/out" || fail "self-compare of the main path reports something slower: $(tail -n 1 "$T/out")"
# ... but a comparison that could test no key (samples.csv missing) must not pass the gate
cp -r "$T/res/run1" "$T/res/run1ns" && rm "$T/res/run1ns/samples.csv"
expect 2 "$BIN" compare "$T/res/run1" "$T/res/run1ns"
grep -q 'no key could be tested' "$T/err" || fail "compare without samples: $(cat "$T/err")"
"$BIN" sweep --workloads uniform,clusters --sizes 2k,3k --reps 3 $B --pipelines workload --out-dir "$T/res" \
  --run-id run1b >/dev/null 2>&1 ||
  fail "second sweep for compare failed"
"$BIN" compare "$T/res/run1" "$T/res/run1b" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -le 1 ] || { fail "compare of two sweeps exited $rc"; cat "$T/err"; }
keys=$(sed -n '2,$p' "$T/res/run1/samples.csv" | cut -d, -f1-7 | sort -u | wc -l)
tail -n 1 "$T/out" | awk -v k="$keys" '{ if ($1 + $3 + $5 + $7 != k) exit 1 }' ||
  fail "compare verdicts do not cover the $keys sampled keys: $(tail -n 1 "$T/out")"

# plot --json on a sweep's output: results.json and REPORT.md always, figures when gnuplot exists
expect 0 "$BIN" plot --json "$M"
[ -s "$M/results.json" ] || fail "plot --json wrote no results.json"
[ -s "$M/REPORT.md" ] || fail "plot wrote no REPORT.md"
if command -v gnuplot >/dev/null 2>&1; then
  [ -s "$M/plots/latency.png" ] || fail "plot wrote no latency.png although gnuplot exists"
  # scripts missing: refused before anything is drawn, naming -s
  before=$(cksum <"$M/plots/latency.dat")
  expect 2 "$BIN" plot -a --scripts "$T/no-such-scripts" "$M"
  grep -q "^f3dbench: plot: no gnuplot scripts in $T/no-such-scripts (its lines.gp: No such file or directory): .* -s DIR" \
    "$T/err" || fail "plot with scripts missing: $(cat "$T/err")"
  # a failed plot (a script gnuplot cannot run) keeps the previous figures whole and leaves no temporary directory
  mkdir -p "$T/bad-scripts"
  echo 'this is not gnuplot' >"$T/bad-scripts/lines.gp"
  expect 1 "$BIN" plot -a --scripts "$T/bad-scripts" "$M"
  head -n 1 "$T/err" | grep -q '^f3dbench: plot: gnuplot failed' || fail "plot failure's first line: $(head -n 1 "$T/err")"
  [ "$(cksum <"$M/plots/latency.dat")" = "$before" ] || fail "a failed plot changed the previous figures"
  ls "$M" | grep -q 'plots\.' && fail "a failed plot left $(ls "$M" | grep 'plots\.')"
fi

# the progress line goes to a terminal (script(1) gives the sweep one)
if command -v script >/dev/null 2>&1; then
  script -qec "'$BIN' sweep --workloads uniform --sizes 1000 --reps 2 $B --pipelines workload --out-dir '$T/res' --run-id tty" \
    /dev/null >"$T/tty" 2>&1 </dev/null
  grep -q "$(printf '\r')"'.*\[1/1\] uniform n=1000 batch=1: workload' "$T/tty" || fail "no progress line on a terminal"
  [ -f "$T/res/tty/results.csv" ] || fail "sweep under a terminal did not finish"
fi

# a recorded input (here a generated PLY) and a batch: workload named after the file, read_input timed
expect 0 "$BIN" sweep --input "$T/u.ply" --sizes 1000 --batch 2 --reps 2 $B --pipelines workload --out-dir "$T/res" \
  --run-id run3
grep -q '^u,1000,2,workload,read_input,cpu,time_median,' "$T/res/run3/results.csv" || fail "no read_input row for u.ply"
grep -q '^input_u,' "$T/res/run3/context.csv" || fail "context does not record the input file"
expect 1 "$BIN" sweep --input "$T/missing.ply" --sizes 1000 --reps 1 $B --out-dir "$T/res"
grep -q '^f3dbench: sweep: .*missing.ply' "$T/err" || fail "missing input error: $(cat "$T/err")"

# SIGINT in the middle of a long sweep: exit 130, INCOMPLETE, status interrupted, no results.csv. The sweep stops
# at the next stage; at 200k points no stage of these pipelines takes a second on the CPU (at 600k one took 4 s),
# and the backbones, whose CPU check takes seconds, are left out.
SL="--sizes 200k,201k,202k,203k,204k --reps 50 $B --pipelines workload,ptv3,flash3d"
"$BIN" sweep $SL --out-dir "$T/res" --run-id run2 >"$T/out" 2>"$T/err" &
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
# stopped_run DIR WHAT: the sweep's line says how many cases it kept; with none the run directory, which holds
# nothing measured, is removed; with some it stays marked INCOMPLETE, status interrupted, no .partial files
stopped_run() {
  if grep -q "interrupted (SIGINT received) after 0 of 5 cases: nothing kept, removed the run directory $1\$" "$T/err"
  then
    [ -e "$1" ] && fail "$2: a run that kept no case left its directory: $(ls "$1")"
  elif grep -q "interrupted (SIGINT received) after [1-9][0-9]* of 5 cases: the finished cases are kept" "$T/err"; then
    [ -f "$1/INCOMPLETE" ] || fail "$2: run not marked INCOMPLETE"
    ls "$1" | grep -q partial && fail "$2: run left partial files: $(ls "$1")"
    grep -q '^status,interrupted$' "$1/context.csv" || fail "$2: context status: $(grep status "$1/context.csv")"
  else
    fail "$2: $(cat "$T/err")"
  fi
}
stopped_run "$D" "interrupted sweep"

# The same stop delivered twice at once (`timeout -s INT` signals the sweep, then its process group, as a
# terminal's Ctrl-C does) is one orderly stop, not a kill that leaves the run "running" with .partial files.
timeout -s INT 4 "$BIN" sweep $SL --out-dir "$T/res" --run-id run4 >"$T/out" 2>"$T/err"
stopped_run "$T/res/run4" "sweep under timeout -s INT"

# A sweep that fails after a finished case keeps it, as an interrupted one does (its second case cannot be made:
# uniform at a 2 m voxel holds 10,001 voxels): exit 1, status failed, INCOMPLETE, the first case's rows, readable
expect 1 "$BIN" sweep --workloads uniform --voxel 2 --sizes 1000,3000000 $B --pipelines workload --reps 2 \
  --out-dir "$T/res" --run-id failed2
grep -q "the 1 finished case is kept, run marked incomplete in $T/res/failed2\$" "$T/err" ||
  fail "a sweep failing at its second case: $(cat "$T/err")"
[ -f "$T/res/failed2/INCOMPLETE" ] && grep -q '^status,failed$' "$T/res/failed2/context.csv" &&
  grep -q '^cases_done,1$' "$T/res/failed2/context.csv" || fail "failed sweep's run: $(ls "$T/res/failed2")"
expect 0 "$BIN" plot --partial "$T/res/failed2"

t_done "all CLI checks passed"
