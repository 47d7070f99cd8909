#!/bin/sh
# where-time-goes.sh - one device call: where the default sweep's wall time goes, and the kernels of one
# backbone forward. Builds through ./f3d (F3D_NO_APT=1, .deps carried), then
#   1. sweep --sizes $SIZES -vv with a timestamp on every progress line (stage.log: wall time per stage,
#      its checks and CPU references included) and the context's pipeline_wall_s (total / in GPU stages);
#   2. the same with --no-counters (what the counter passes cost);
#   3. nsys (or ncu) kernel summary of `f3dbench net --model $MODEL --points $POINTS --reps 3`.
#   OUT=dir  SIZES=600k  MODEL=ptv3  POINTS=600k  F3D_GIT_COMMIT=...
set -u
OUT=${OUT:-$PWD/wtg-out}; mkdir -p "$OUT"; SUM="$OUT/summary.txt"; : > "$SUM"
note() { echo "$*" | tee -a "$SUM"; }
export F3D_NO_APT=1 F3D_GPU_ARCH=${F3D_GPU_ARCH:-90} F3D_JOBS=${F3D_JOBS:-16} F3D_GIT_COMMIT=${F3D_GIT_COMMIT:-unknown}
SIZES=${SIZES:-600k}; MODEL=${MODEL:-ptv3}; POINTS=${POINTS:-600k}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader | tee -a "$SUM"
t0=$(date +%s)
sh lab/harness/touch-sources.sh # a warm machine may hold objects of an earlier call's sources
./f3d setup > "$OUT/setup.log" 2>&1 || { note "FAIL build"; tail -30 "$OUT/setup.log"; exit 1; }
note "build ok $(( $(date +%s) - t0 )) s"
BIN=build/app/f3dbench
stamp() { perl -MTime::HiRes=time -ne 'BEGIN{$|=1} printf "%.3f %s", time, $_'; }
for mode in counters nocounters; do
  extra=""; [ $mode = nocounters ] && extra=--no-counters
  t1=$(date +%s)
  $BIN sweep --sizes "$SIZES" --run-id "wtg-$mode" -vv $extra 2>&1 >/dev/null | stamp > "$OUT/stage-$mode.log"
  note "sweep $mode $(( $(date +%s) - t1 )) s: $(grep -E '^(pipeline_wall_s|duration_s|time_budget_cut)' results/wtg-$mode/context.csv | tr '\n' ' ')"
done
# per-stage wall: the gap to the next progress line, top 25
awk '{ if (prev != "") printf "%.2f %s\n", $1 - pt, prev; pt = $1; $1 = ""; prev = $0 }' "$OUT/stage-counters.log" |
  sort -rn | head -25 | tee -a "$SUM"
if command -v nsys >/dev/null 2>&1; then
  nsys profile -o "$OUT/net" -t cuda,nvtx --force-overwrite true $BIN net --model "$MODEL" --points "$POINTS" --reps 3 > "$OUT/nsys.log" 2>&1
  nsys stats -r cuda_gpu_kern_sum -f csv "$OUT/net.nsys-rep" > "$OUT/kern.csv" 2>/dev/null
  head -30 "$OUT/kern.csv" | cut -c1-220 | tee -a "$SUM"
  rm -f "$OUT"/net.nsys-rep "$OUT"/net.sqlite
else
  note "no nsys on PATH"
fi
gzip -f "$OUT"/*.log
