#!/bin/sh
# test_sweep_gpu.sh - the sweep's GPU measurement end to end (suite gpu; exit 77 without a CUDA device):
# --timing nvbench writes cold and hot rows, noise, raw samples "time" and "time_hot", mem_used and the
# arena's mem_peak (per stage and per pipeline total, also with --timing basic), the
# timing protocol and ceilings in the context, and counter rows when counters are on (or the reason
# they are off); --no-counters, --timing paper and --timing basic change exactly what they say; a bad
# --metrics name is refused before a run directory exists (unless counters are unavailable here);
# GPU shards merge; plot renders the counter figures. A stage that synchronizes the host (ptv3 dedup)
# is detected and still measured; a stage that does not is never flagged. The nvbench run uses --ladder (every
# rung, copy and dedup stages included); one main-path run of both pipelines checks what the default sweep
# measures: the main path's stage count per case, the keys it keeps, and that its time budget cut nothing; one
# run of the backbone pipelines checks each model's forward against the CPU before timing it, and PTv3's sparse
# convolution alone (checked, timed; with nvbench timing its roofline rows and REPORT.md's table); one run in bf16
# (sweep --dtype bf16: its checks, floors and report, and compare refusing it against an fp16 run).
# Default (suite gpu): sampling caps of 0.05 s and the other ptv3 runs on the main path; --slow (suite slow): caps of
# 0.3 s (0.1 s on the main-path run) and --ladder for every ptv3 run, plus every backbone configuration (--ladder).
# usage: test_sweep_gpu.sh PATH/TO/f3dbench [--slow]
set -u
BIN=$1
SLOW=0
case "${2:-}" in
  --slow) SLOW=1 ;;
  '') ;;
  *) echo "usage: $0 PATH/TO/f3dbench [--slow]" >&2; exit 2 ;;
esac
if [ "$SLOW" -eq 1 ]; then MT=0.3 MT_MAIN=0.1 L=--ladder; else MT=0.05 MT_MAIN=0.05 L=; fi
"$BIN" info 2>/dev/null | grep -q '^devices: no CUDA device' && { echo "no CUDA device: skipped"; exit 77; }
"$BIN" info >/dev/null 2>&1 || { echo "FAIL: f3dbench info failed: $("$BIN" info 2>&1 | tail -2)"; exit 1; }
. "$(dirname "$0")/../lib.sh"
t_setup test-sweep-gpu
row() { grep -q "^$2" "$1/results.csv" || fail "$(basename "$1"): no row $2"; }
ctx() { grep -q "^$2" "$1/context.csv" || fail "$(basename "$1"): no context $2"; }
# small and quick: one size, ptv3 only, short caps; Q: the same on the main path (on the ladder with --slow)
S="--ladder --pipelines ptv3 --workloads uniform --sizes 20k --out-dir $T --max-time $MT --time-budget 0"
Q="$L --pipelines ptv3 --workloads uniform --sizes 20k --out-dir $T --max-time $MT --time-budget 0"

"$BIN" sweep $S --run-id nv >"$T/out" 2>"$T/err" || { fail "nvbench sweep failed"; cat "$T/err"; }
D=$T/nv
ctx "$D" 'timing,nvbench'
ctx "$D" "timing_opts,.*max_time_s=$MT "
ctx "$D" 'counters,'
ctx "$D" 'ceiling_copy_gbs,' # a GPU run measures its ceilings; one that could not has a "ceilings" reason instead
K='uniform,20000,1,ptv3,copy_qkv_C64,memcpy'
for m in time_median time_mean time_std time_min time_max reps time_noise noise_reached throttled_dropped \
  time_hot_median time_hot_mean time_hot_std hot_batch mem_used; do
  row "$D" "$K,$m,"
done
grep -q "^$K,time,0," "$D/samples.csv" || fail "no raw cold samples"
# device memory from the pipeline's arena: per stage, and the total with cudaMemGetInfo's figure beside it;
# ptv3 allocates by phase, so the C = 256 gathers hold more than grid and no stage exceeds the total
row "$D" "$K,mem_peak,"
row "$D" 'uniform,20000,1,ptv3,total,all,mem_peak,'
row "$D" 'uniform,20000,1,ptv3,total,all,mem_used,'
awk -F, '$4 == "ptv3" && $7 == "mem_peak" { if ($5 == "total") t = $8; else if ($8 > s) s = $8
           if ($5 == "grid") g = $8; if ($5 == "gather_qkv_C256") q = $8 }
         END { exit !(t > 0 && s == t && g > 0 && q > g) }' "$D/results.csv" ||
  fail "ptv3 mem_peak: want 0 < grid < gather_qkv_C256 and the largest stage equal to the total"
grep -q 'left .* device allocations' "$T/err" && fail "a pipeline left device memory in the arena: $(grep 'left' "$T/err")"
grep -q "^$K,time_hot,0," "$D/samples.csv" || fail "no raw hot samples"
row "$D" 'uniform,20000,1,ptv3,serialize,v0,time_hot_median,'
if grep -q '^counters,on' "$D/context.csv"; then
  # a metric without a value over the copy's range (NaN, e.g. no kernel in it) is no row, and
  # counters_undefined counts exactly those
  missing=0
  for m in sm_active sm_issue tensor_active dram_read_bw gpu_time; do
    grep -q "^$K,$m," "$D/results.csv" || missing=$((missing + 1))
  done
  undef=$(awk -F, -v k="$K,counters_undefined," 'index($0, k) == 1 { printf "%d", $8 }' "$D/results.csv")
  [ "$missing" -eq "${undef:-0}" ] || fail "copy: $missing counter rows missing, counters_undefined says ${undef:-0}"
  [ "$missing" -eq 0 ] || echo "note: copy: $missing counters without a value (counters_undefined)"
  # a copy never touches the tensor pipe; the serialization kernels keep SMs busy
  if grep -q "^$K,tensor_active," "$D/results.csv"; then
    awk -F, -v k="$K,tensor_active," 'index($0, k) == 1 { f = 1; ok = $8 < 1 } END { exit !(f && ok) }' \
      "$D/results.csv" || fail "copy tensor_active is not near 0"
  fi
  awk -F, -v k='uniform,20000,1,ptv3,serialize,v0,sm_active,' 'index($0, k) == 1 { f = 1; ok = $8 > 0 }
    END { exit !(f && ok) }' "$D/results.csv" || fail "serialize v0 sm_active is not above 0"
else
  echo "note: counters off here: $(grep '^counters,' "$D/context.csv")"
fi
grep -q '^status,complete' "$D/context.csv" || fail "nvbench run not complete"
# --ladder: PTv3's 36 GPU stages per case (grid, dedup, 4 encodes, encode_all, sort, inverse, 3 serializations,
# padding, 4 x (copy + 4 gathers), pool, 2 attention plans) and v0's 2 attention plans at 20k rows
grep -q '^gpu_stages_per_case,uniform:20000:38$' "$D/context.csv" ||
  fail "--ladder ptv3 stages per case: $(grep gpu_stages "$D/context.csv")"
# dedup synchronizes the host inside its call: detected, then timed without the hold, with enough
# samples for a noise figure even under a --max-time shorter than the 2 s hold time-out
row "$D" 'uniform,20000,1,ptv3,dedup,v0,sync_detected,'
row "$D" 'uniform,20000,1,ptv3,dedup,v0,time_noise,'
awk -F, 'index($0, "uniform,20000,1,ptv3,dedup,v0,reps,") == 1 { f = 1; ok = $8 >= 2 } END { exit !(f && ok) }' \
  "$D/results.csv" || fail "dedup: fewer than 2 kept samples"
# no false sync: a serialization kernel does not synchronize
grep -q '^uniform,20000,1,ptv3,serialize,v0,sync_detected,' "$D/results.csv" && fail "serialize v0: false sync_detected"

# the other timing modes on a stage of both selections: serialize v2 (the best entry)
KS='uniform,20000,1,ptv3,serialize,v2'
"$BIN" sweep $L --pipelines ptv3 --workloads uniform --sizes 20k --out-dir "$T" --run-id paper --timing paper --no-counters \
  >/dev/null 2>"$T/err" || { fail "--timing paper sweep failed"; cat "$T/err"; }
ctx "$T/paper" 'timing,paper'
grep -q "^$KS,reps,19,count" "$T/paper/results.csv" || fail "paper: not 19 kept GPU samples"
grep -q ',time_hot_median,' "$T/paper/results.csv" && fail "paper wrote hot rows"

"$BIN" sweep $L --pipelines ptv3 --workloads uniform --sizes 20k --out-dir "$T" --run-id basic --timing basic --reps 5 \
  >/dev/null 2>"$T/err" || { fail "--timing basic sweep failed"; cat "$T/err"; }
ctx "$T/basic" 'timing,basic'
grep -q "^$KS,reps,5,count" "$T/basic/results.csv" || fail "basic: not 5 GPU samples"
grep -q ',time_noise,' "$T/basic/results.csv" && fail "basic wrote nvbench rows"
grep -q "^$KS,mem_peak," "$T/basic/results.csv" || fail "basic: no mem_peak row (the arena does not need nvbench)"

"$BIN" sweep $Q --run-id badm --metrics sm__no_such_metric.sum >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" -eq 2 ]; then
  grep -q 'close names' "$T/err" || fail "unknown metric error lists no close names: $(cat "$T/err")"
  [ -d "$T/badm" ] && fail "an unknown metric still created a run directory"
elif [ "$rc" -ne 0 ] || grep -q '^counters,on' "$T/badm/context.csv"; then
  fail "unknown metric: exit $rc with counters on"
fi

# GPU shards (with --no-counters, which they must honour: the context says so and no counter row is written)
for sh in 0/2 1/2; do
  "$BIN" sweep $L --pipelines ptv3 --workloads uniform --sizes 20k,30k --out-dir "$T/sh" --run-id "s${sh%/*}" \
    --shard "$sh" --max-time "$MT" --no-counters >/dev/null 2>"$T/err" || { fail "shard $sh failed"; cat "$T/err"; }
  ctx "$T/sh/s${sh%/*}" 'counters,counters: off (--no-counters)'
  grep -q ',sm_active,' "$T/sh/s${sh%/*}/results.csv" && fail "--no-counters (shard $sh) wrote counter rows"
done
"$BIN" merge -o "$T/sh/m" "$T/sh/s0" "$T/sh/s1" >/dev/null 2>"$T/err" || { fail "merge of GPU shards"; cat "$T/err"; }
grep -q '^uniform,30000,1,ptv3,serialize,v2,time_hot_median,' "$T/sh/m/results.csv" || fail "merged GPU shards"
grep -q '^uniform,20000,1,ptv3,serialize,v2,time_hot_median,' "$T/sh/m/results.csv" || fail "merged GPU shards: 20k"

# the main path of both pipelines (the default sweep's selection): 10 ptv3 + 23 flash3d GPU stages per case, and
# the unfused attention v0's 2 + 3 plans at 20k rows; every one a distinct key, each the variant the best entry
# named; the budget (default) cut no cap
"$BIN" sweep --pipelines ptv3,flash3d --workloads uniform --sizes 20k --out-dir "$T" --run-id main --no-counters \
  --max-time "$MT_MAIN" >/dev/null 2>"$T/err" || { fail "main-path sweep failed"; cat "$T/err"; }
M=$T/main
grep -q '^gpu_stages_per_case,uniform:20000:38$' "$M/context.csv" ||
  fail "main path stages per case: $(grep gpu_stages "$M/context.csv")"
keys=$(awk -F, '$7 == "time_median" && $6 != "cpu" && $4 != "workload" { print $4 "/" $5 "/" $6 }' "$M/results.csv" | sort -u | wc -l)
[ "$keys" -eq 38 ] || fail "main path: $keys GPU keys timed, want 38"
grep -q '^time_budget_cut,no$' "$M/context.csv" || fail "main path: the budget cut caps: $(grep time_budget "$M/context.csv")"
for k in 'ptv3,serialize,v2' 'ptv3,gather_qkv_C64,v3' 'ptv3,gather_out_C64,v2' 'ptv3,gather_qkv_C256,v1' \
  'flash3d,psh.xor-div,v1' 'flash3d,psh.xor-div,v2' 'flash3d,psh.floor,movement' 'flash3d,pool,v1+v9' \
  'flash3d,attn.plain,v0'; do
  grep -q "^uniform,20000,1,$k,time_median," "$M/results.csv" || fail "main path: no row $k"
done
for k in 'ptv3,serialize,v0,' 'ptv3,dedup,' 'ptv3,copy_' 'flash3d,psh.xor-div,v3,' 'flash3d,pool_assign,' \
  'flash3d,pool,v1+v5,' 'flash3d,psh.xor-div,cpu,time_median'; do
  grep -q ",$k" "$M/results.csv" && fail "main path ran a ladder-only stage: $k"
done

# the backbones: every model checked against its fp32 CPU forward (the first 600 points of the cloud), then timed;
# PTv3-m1, Flash3D at equal parameters (the public bucket rule, buckets 75% full, the public code's windows) and,
# at the run's largest size, PTv3 over patches of 4096 (the paper's scope), Flash3D at equal memory and at PTv3's
# attention span (with --slow: --ladder, every configuration, the public one too)
"$BIN" sweep $L --pipelines ptv3-net,flash3d-net --workloads uniform --sizes 2k --out-dir "$T" --run-id nets \
  --timing basic --reps 2 >/dev/null 2>"$T/err" || { fail "backbone sweep failed"; cat "$T/err"; }
for m in ptv3-net,forward,ptv3 ptv3-net,forward,ptv3-patch4096 flash3d-net,forward,flash3d-46m \
  flash3d-net,forward,flash3d-46m-fill75 flash3d-net,forward,flash3d-46m-windows flash3d-net,forward,flash3d-129m \
  flash3d-net,forward,flash3d-46m-scope2; do
  row "$T/nets" "uniform,2000,1,$m,check,1,bool"
  row "$T/nets" "uniform,2000,1,$m,time_median,"
done
[ "$SLOW" -eq 1 ] && row "$T/nets" 'uniform,2000,1,flash3d-net,forward,flash3d-public,check,1,bool'
# each forward also replayed as one CUDA graph, its arena peak, its parameters, its cost rows, and its components
# (time, and time by part of the network)
for m in ptv3-net,forward,ptv3 flash3d-net,forward,flash3d-46m; do
  row "$T/nets" "uniform,2000,1,$m.graph,time_median,"
  for x in mem_peak, params, gemm_flops, floor_bytes,; do row "$T/nets" "uniform,2000,1,$m,$x"; done
done
for c in ptv3-net,cpe,ptv3 ptv3-net,attn,ptv3 ptv3-net,mlp,ptv3 flash3d-net,attn,flash3d-46m flash3d-net,mlp,flash3d-46m; do
  row "$T/nets" "uniform,2000,1,$c,time_median,"
  row "$T/nets" "uniform,2000,1,$c,part:enc0,"
done
# PTv3's k = 3 sparse convolution alone (pipe_spconv.c; 2k is this run's largest size): v0 and v1 at C = 64 and 256,
# each checked on sampled rows against the CPU reference, then timed with its FLOPs and bytes
main_spc=v3
# v6 needs this build's sm_90a image (info's arch line says "without sm_90a" for a -Dsm90a=false build)
"$BIN" info > "$T/info"
grep -q '^  \[0\] .*(sm_90,' "$T/info" && ! grep -q 'without sm_90a' "$T/info" && main_spc=v6
for k in spconv.k3_C64 spconv.k3_C256; do
  for v in v0 v1; do
    for m in check,1,bool check_rows, time_median, tflops, bandwidth, pairs, halo, map_bytes,; do
      row "$T/nets" "uniform,2000,1,ptv3-net,$k,$v,$m"
    done
  done
  # one best entry a kernel: the main path's variant (spc_variant_main: v6 where its sm_90a image runs, v3
  # elsewhere), never the cuBLAS baseline v0
  best=$(grep "^uniform,2000,1,ptv3-net,$k,[^,]*,best_entry,1,bool" "$T/nets/results.csv" | cut -d, -f6)
  [ "$best" = "$main_spc" ] || fail "spconv $k: best entry '$best', expected $main_spc (the main path's)"
done
# with nvbench timing the run's ceilings are in its context: roofline_ms and roofline_share = roofline_ms / median
# (ptv3 beside it: its attention at this size in fp16, which the bf16 run below is set against)
"$BIN" sweep --pipelines ptv3,ptv3-net --workloads uniform --sizes 2k --out-dir "$T" --run-id spc --max-time "$MT" \
  --time-budget 0 --no-counters >/dev/null 2>"$T/err" || { fail "ptv3-net nvbench sweep failed"; cat "$T/err"; }
ctx "$T/spc" 'ceiling_copy_gbs,'
{
  for k in spconv.k3_C64 spconv.k3_C256; do
    awk -F, -v k="uniform,2000,1,ptv3-net,$k,v1," 'index($0, k) == 1 { v[$7] = $8 }
      END { exit !(v["check"] == 1 && v["roofline_ms"] > 0 && v["time_median"] > 0 &&
                   (v["roofline_share"] - v["roofline_ms"] / v["time_median"]) ^ 2 < 1e-12 * v["roofline_share"] ^ 2) }' \
      "$T/spc/results.csv" || fail "spconv $k v1: no roofline_ms / roofline_share = roofline_ms / time_median"
  done
  "$BIN" plot "$T/spc" >/dev/null 2>"$T/err" || { fail "plot of the ptv3-net run"; cat "$T/err"; }
  grep -q '^### Sparse convolution alone' "$T/spc/REPORT.md" || fail "REPORT.md: no 'Sparse convolution alone' table"
  grep -q '^| spconv.k3_C256 | v1 |' "$T/spc/REPORT.md" || fail "REPORT.md: no spconv.k3_C256 v1 row"
  grep -Eq '^\| spconv.k3_C256 \| v[36] \(best\) \|' "$T/spc/REPORT.md" || fail "REPORT.md: no best spconv.k3_C256 row"
}

# sweep --dtype bf16: the backbones, both pipelines' attention and the convolution alone in bf16, each checked
# against its CPU reference at bf16's tolerance before it is timed; the floors and rooflines at the bf16 cuBLAS
# ceiling; the run named "<device>, bf16" in its report; compare refuses it against an fp16 run
"$BIN" sweep --dtype bf16 --pipelines ptv3,flash3d,ptv3-net,flash3d-net --workloads uniform --sizes 2k --out-dir "$T" \
  --run-id bf16 --max-time "$MT" --time-budget 0 --no-counters >/dev/null 2>"$T/err" ||
  { fail "bf16 sweep failed"; cat "$T/err"; }
ctx "$T/bf16" 'dtype,bf16$'
grep -q ',check,0,bool' "$T/bf16/results.csv" && fail "bf16: a stage failed its check: $(grep ',check,0,bool' "$T/bf16/results.csv")"
for m in ptv3-net,forward,ptv3 ptv3-net,forward,ptv3-patch4096 flash3d-net,forward,flash3d-46m \
  flash3d-net,forward,flash3d-129m; do
  row "$T/bf16" "uniform,2000,1,$m,check,1,bool"
  row "$T/bf16" "uniform,2000,1,$m,time_median,"
done
for k in flash3d,attn.plain ptv3,attn.patch1024 ptv3-net,spconv.k3_C64 ptv3-net,spconv.k3_C256; do
  row "$T/bf16" "uniform,2000,1,$k,[^,]*,check,1,bool"
  row "$T/bf16" "uniform,2000,1,$k,[^,]*,time_median,"
done
# what only bf16 gives, against the fp16 runs of the same case and seed: errors of a type with 8 bits of mantissa
# where fp16 has 11, so a stage that ignored --dtype fails here (2x asserted). The backbone's logits against the CPU
# forward and the convolution's worst sampled error read about 8x fp16's, the attention check's bound (twice the
# naive pass's error in the dtype, plus a floor) 3.7x (H200, 678be9f)
val() { awk -F, -v k="$2" -v m="$3" 'index($0, k) == 1 && $7 == m { print $8; exit }' "$1/results.csv"; }
for s in "nets uniform,2000,1,ptv3-net,forward,ptv3, check_rel_l2" \
  "nets uniform,2000,1,ptv3-net,spconv.k3_C64,$main_spc, check_err" \
  "nets uniform,2000,1,ptv3-net,spconv.k3_C256,$main_spc, check_err" \
  "spc uniform,2000,1,ptv3,attn.patch1024,v0, check_tol"; do
  set -- $s
  a=$(val "$T/bf16" "$2" "$3") b=$(val "$T/$1" "$2" "$3")
  echo "bf16 against fp16: $2 $3: ${a:-none} against ${b:-none}"
  awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { exit !(a > 0 && b > 0 && a > 2 * b) }' ||
    fail "bf16 against fp16: $2 $3 reads ${a:-none} against ${b:-none}, not 2x: not computed in bf16?"
done
ctx "$T/bf16" 'ceiling_gemm_bf16_tflops,'
# the convolution's roofline recomputed from the run's own rows: the most of its FLOPs at the bf16 ceiling and its
# bytes at the copy ceiling (at 2000 rows and C = 256 the FLOPs bound it, so an fp16 ceiling would read apart
# by their ratio; the context's ceilings are rounded to 0.1)
gb=$(sed -n 's/^ceiling_gemm_bf16_tflops,//p' "$T/bf16/context.csv")
cg=$(sed -n 's/^ceiling_copy_gbs,//p' "$T/bf16/context.csv")
for k in spconv.k3_C64 spconv.k3_C256; do
  awk -F, -v k="uniform,2000,1,ptv3-net,$k,$main_spc," -v g="$gb" -v c="$cg" 'index($0, k) == 1 { v[$7] = $8 }
    END { tf = v["flops"] / (g * 1e9); tb = v["bytes"] / (c * 1e6); r = tf > tb ? tf : tb;
          exit !(r > 0 && (v["roofline_ms"] - r) ^ 2 < 1e-6 * r ^ 2) }' "$T/bf16/results.csv" ||
    fail "bf16: $k $main_spc's roofline_ms is not max(flops at bf16's $gb TFLOP/s, bytes at $cg GB/s)"
done
"$BIN" plot "$T/bf16" >/dev/null 2>"$T/err" || { fail "plot of the bf16 run"; cat "$T/err"; }
grep -q '^| [^|]*/bf16 | [^|]*, bf16 |' "$T/bf16/REPORT.md" || fail "REPORT.md: the bf16 run is not named so"
grep -q 'floors at cuBLAS bf16 ' "$T/bf16/REPORT.md" || fail "REPORT.md: floors not at the bf16 ceiling"
grep -q 'points, bf16, ceilings: cuBLAS bf16 ' "$T/bf16/REPORT.md" || fail "REPORT.md: convolution not at bf16's"
"$BIN" compare --baseline "$T/spc" "$T/bf16" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q 'dtype = "fp16"' "$T/err" || fail "compare of an fp16 and a bf16 run: $(cat "$T/err")"

"$BIN" plot --json "$D" >/dev/null 2>"$T/err" || { fail "plot of the GPU run"; cat "$T/err"; }
[ -s "$D/REPORT.md" ] && [ -s "$D/results.json" ] || fail "plot wrote no REPORT.md/results.json"
if command -v gnuplot >/dev/null 2>&1 && grep -q '^counters,on' "$D/context.csv"; then
  [ -s "$D/plots/sm.png" ] || fail "no sm.png from a run with counters"
fi

t_done "all GPU sweep checks passed"
