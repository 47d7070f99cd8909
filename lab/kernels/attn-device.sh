#!/usr/bin/env bash
# attn-device.sh - build, check and time bucket-swin attention on a GPU machine, standalone (nvcc + gcc
# straight from kernels/attn*.{c,cu}, harness/status.c, app/cmd_attn.c and the tests; no Meson,
# so other folders' work in progress cannot break it).
#
# Steps: build (ptxas -v to build.log) -> GPU correctness test (every variant x dtype x head dim x odd
# shape) -> timing sweep (D 16/32/64/128, fp16/bf16, plans plain/swin/stride/patches, scope 4096 =
# 8 buckets x 512) -> compute-sanitizer memcheck + racecheck on a small shape -> SASS instruction counts
# -> .npy round trip through numpy -> a short table last. Logs go to $OUT (or ./attn-out).
#
# usage: lab/kernels/attn-device.sh [quick|v6|v9]   (cmocka: carry .attn-carry/ with cmocka.h, libcmocka.so.0)
#   quick: D 16/64 only; v6: the wgmma variant next to v5 only (test, every plan, sanitizers), D 16..128;
#   v9: as v6 with VSET v6,v9,v10,v11 and VPLAN v6,v9 (the warp-specialised kernel next to v6; its SASS
#   counts and ncu next to v6's too).
# kernels/attn_wgmma.cu (v6) is compiled for sm_90 and sm_90a as Meson does (ATTN_V6_GENCODE overrides);
# if the driver then runs its sm_90 image (v6 reports "skipped"), it is rebuilt for sm_90a alone.
set -u
OUT=${OUT:-$PWD/attn-out}
mkdir -p "$OUT"
B=/tmp/attn-build
mkdir -p $B/cfg
MODE=${1:-full}
ARCH=${ATTN_ARCH:-90}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  | tee "$OUT/summary.txt"
date -u | tee -a "$OUT/summary.txt"
nvcc --version | tail -1 | tee -a "$OUT/summary.txt"

printf '#define F3D_HAVE_CUDA 1\n#define F3D_VERSION "attn-device"\n' > $B/cfg/f3d_config.h
printf 'int f3d_cmd_attn(int argc, char **argv);\nint main(int argc, char **argv) { return f3d_cmd_attn(argc, argv); }\n' > $B/main.c
if [ "$ARCH" = 90 ]; then
  V6GEN=${ATTN_V6_GENCODE:-"-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90a,code=sm_90a"}
else
  V6GEN="-arch=sm_$ARCH"
fi
CF="-std=c11 -O2 -Wall -Wextra -Wshadow -Wconversion -D_POSIX_C_SOURCE=200809L -I. -I$B/cfg -I/usr/local/cuda/include"
{
  set -x
  nvcc -O3 -std=c++17 -arch=sm_$ARCH -lineinfo -Xptxas -v -I. -I$B/cfg -c kernels/attn.cu -o $B/attn_cu.o &&
  nvcc -O3 -std=c++17 $V6GEN -lineinfo -Xptxas -v -I. -I$B/cfg -c kernels/attn_wgmma.cu -o $B/attn_wgmma.o &&
  gcc $CF -c kernels/attn.c -o $B/attn_c.o &&
  gcc $CF -c harness/status.c -o $B/status.o &&
  gcc $CF -c app/cmd_attn.c -o $B/cmd_attn.o &&
  gcc $CF -c $B/main.c -o $B/main.o &&
  nvcc -arch=sm_$ARCH $B/main.o $B/cmd_attn.o $B/attn_c.o $B/attn_cu.o $B/attn_wgmma.o $B/status.o -lcublas -o $B/attn &&
  gcc $CF -I.attn-carry -c tests/kernels/test_attn_gpu.c -o $B/tg.o &&
  nvcc -arch=sm_$ARCH $B/tg.o $B/attn_c.o $B/attn_cu.o $B/attn_wgmma.o $B/status.o -lcublas -L.attn-carry -lcmocka \
    -Xlinker -rpath=$PWD/.attn-carry -o $B/test_attn_gpu
  set +x
} > "$OUT/build.log" 2>&1
if [ ! -x $B/test_attn_gpu ]; then log "BUILD FAILED"; tail -40 "$OUT/build.log"; exit 1; fi
awk '/Compiling entry function/ {f=$7" "$9} /spill stores/ {sp=$5" B spill"} /Used [0-9]+ registers/ && f ~ /battn_(fwd|v6|v9)/ {print f, $5, "regs,", sp}' "$OUT/build.log" | sort -u | tee -a "$OUT/summary.txt"
grep -E "C75[0-9][0-9]" "$OUT/build.log" | sort -u | head -5 | tee -a "$OUT/summary.txt"
# which image of attn_wgmma.cu does the driver run? (v6 says "skipped" when not sm_90a)
if [ "$ARCH" = 90 ] && $B/attn --rows 600 --heads 1 --head-dim 16 --variant v6 --reps 1 --warmup 0 | grep -q skipped; then
  log "v6 skipped with [$V6GEN]: rebuilding attn_wgmma.cu for sm_90a alone"
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I. -I$B/cfg -c kernels/attn_wgmma.cu -o $B/attn_wgmma.o &&
  nvcc -arch=sm_$ARCH $B/main.o $B/cmd_attn.o $B/attn_c.o $B/attn_cu.o $B/attn_wgmma.o $B/status.o -lcublas -o $B/attn &&
  nvcc -arch=sm_$ARCH $B/tg.o $B/attn_c.o $B/attn_cu.o $B/attn_wgmma.o $B/status.o -lcublas -L.attn-carry -lcmocka \
    -Xlinker -rpath=$PWD/.attn-carry -o $B/test_attn_gpu >> "$OUT/build.log" 2>&1
fi

log "correctness: every variant x dtype x head dim x shape"
# v6 mode: the wgmma variants next to v5 (VSET overrides)
if [ "$MODE" = v9 ]; then # v9 mode = v6 mode over the warp-specialised variants
  MODE=v6
  VSET=${VSET:-v6,v9,v10,v11}
  VPLAN=${VPLAN:-v6,v9}
  # hang guard (v9..v11 were written offline): one small checked run per variant and ring depth, 20 s
  # each; a variant that hangs, fails its check or errors is dropped from the rest of the call
  for V in v9 v10 v11; do
    for D in 16 64 128; do
      [ $V = v9 ] && [ $D = 16 ] && continue # v9 runs v24 there
      timeout 20 $B/attn --rows 3000 --heads 2 --head-dim $D --bucket-size 200 --scope-buckets 6 --variant $V \
        --reps 2 --warmup 1 --check-rows 64 > "$OUT/guard_${V}_$D.txt" 2>&1
      rc=$?
      echo "guard $V D=$D rc=$rc $(grep -E '^attn' "$OUT/guard_${V}_$D.txt" | head -1)" | tee -a "$OUT/summary.txt"
      if [ $rc != 0 ]; then
        log "guard: dropping $V (rc=$rc; 124 = hang)"; tail -5 "$OUT/guard_${V}_$D.txt" | tee -a "$OUT/summary.txt"
        VSET=$(echo $VSET | tr ',' '\n' | grep -vx $V | paste -sd,)
        VPLAN=$(echo $VPLAN | tr ',' '\n' | grep -vx $V | paste -sd,)
        break
      fi
    done
  done
fi
VSET=${VSET:-v5,v6,v7,v8}
VPLAN=${VPLAN:-v5,v6} # bf16, plans, packed: these only
if [ "$MODE" = v6 ]; then export BATTN_TEST_VARIANTS=${BATTN_TEST_VARIANTS:-$VSET}; fi
timeout 240 $B/test_attn_gpu > "$OUT/test.log" 2>&1
echo "test rc=$?" | tee -a "$OUT/summary.txt"
grep -E "FAIL|failed|PASSED|skipped" "$OUT/test.log" | head -30 | tee -a "$OUT/summary.txt"

BENCH="$OUT/bench.log"
: > "$BENCH"
bench() { timeout 120 $B/attn "$@" --check-rows 48 >> "$BENCH" 2>&1 || echo "FAILED: $*" >> "$BENCH"; }
if [ "$MODE" = quick ]; then DIMS="16 64"; else DIMS="16 32 64 128"; fi
log "timing sweep"
if [ "$MODE" = v6 ]; then
  for D in $DIMS; do # the headline first (plain fp16), then the rest per head dim
    case $D in 16) R=1048576;; 32) R=524288;; 64) R=262144;; 128) R=131072;; esac
    bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant $VSET --reps 20
  done
  for D in $DIMS; do
    case $D in 16) R=1048576;; 32) R=524288;; 64) R=262144;; 128) R=131072;; esac
    bench --rows $R --heads 4 --head-dim $D --dtype bf16 --plan plain --variant $VPLAN --reps 20
    for P in swin:4 stride:2 patches; do bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan $P --variant $VPLAN --reps 20; done
    bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant $VPLAN --reps 20 --packed
    bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant $(echo $VSET | tr ',' '\n' | tac | paste -sd,) --reps 20 --no-check
  done
else
for D in $DIMS; do
  case $D in 16) R=1048576;; 32) R=524288;; 64) R=262144;; 128) R=131072;; esac
  bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant all --reps 20
  bench --rows $R --heads 4 --head-dim $D --dtype bf16 --plan plain --variant v1,v4,v5,v6 --reps 20
  for P in swin:4 stride:2 patches; do bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan $P --variant v1,v5,v6 --reps 20; done
  bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant v5,v6 --reps 20 --packed
done
# a second plain fp16 run of the fused variants: the spread between two runs of one version is the noise
for D in $DIMS; do
  case $D in 16) R=1048576;; 32) R=524288;; 64) R=262144;; 128) R=131072;; esac
  bench --rows $R --heads 4 --head-dim $D --dtype fp16 --plan plain --variant v1,v3,v4,v5,v6 --reps 20 --no-check
done
fi

log "compute-sanitizer"
SAN=compute-sanitizer
command -v $SAN >/dev/null || SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  for D in 16 64 128; do
    if [ "$MODE" = v6 ]; then SV=${SAN_VARIANTS:-$(echo $VSET | tr ',' ' ' | sed 's/v5 *//')}; else SV=${SAN_VARIANTS:-v1 v5 v6}; fi
    for V in $SV; do
      timeout 60 $SAN --tool $tool --error-exitcode 9 $B/attn --rows 1500 --heads 2 --head-dim $D --bucket-size 200 \
        --scope-buckets 3 --plan swin:1 --variant $V --reps 1 --warmup 0 --check-rows 32 > "$OUT/san_${tool}_${D}_$V.txt" 2>&1
      echo "$tool D=$D $V rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_${D}_$V.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
    done
  done
done
[ "$MODE" = v6 ] || timeout 120 $SAN --tool memcheck --error-exitcode 9 $B/attn --rows 1500 --heads 2 --head-dim 32 --bucket-size 200 \
  --scope-buckets 3 --plan stride:2 --variant v0 --reps 1 --warmup 0 --check-rows 32 > "$OUT/san_memcheck_v0.txt" 2>&1
echo "memcheck D=32 v0 rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/san_memcheck_v0.txt")" | tee -a "$OUT/summary.txt"
cat "$OUT"/san_*.txt > "$OUT/sanitizer.log"; rm -f "$OUT"/san_*.txt

if [ "$MODE" = v6 ] && command -v ncu >/dev/null; then
  log "ncu: variants at D=64 fp16 (one launch each; clocks left alone)"
  for V in ${NCU_VARIANTS:-$(echo $VSET | tr ',' ' ')}; do
    timeout 90 ncu --clock-control none --launch-skip 1 --launch-count 1 --kernel-name regex:battn \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      $B/attn --rows 65536 --heads 4 --head-dim 64 --variant $V --reps 1 --warmup 1 --no-check > "$OUT/ncu_$V.txt" 2>&1
    echo "ncu $V rc=$?" | tee -a "$OUT/summary.txt"
  done
  cat "$OUT"/ncu_*.txt > "$OUT/ncu.log"; rm -f "$OUT"/ncu_*.txt
fi

log "SASS of the D=16 (and v6 D=64) fp16 kernels (instruction counts)"
if command -v cuobjdump >/dev/null; then
  { cuobjdump --dump-sass $B/attn_cu.o; cuobjdump --dump-sass $B/attn_wgmma.o; } > $B/sass.txt 2>/dev/null
  awk '/Function :/ {f=$3} /MUFU|HMMA|HGMMA|WARPGROUP|LDSM|FFMA|FMNMX|F2FP|LDGSTS|BAR/ {for (i=1;i<=NF;i++) if ($i ~ /^(MUFU|HMMA|HGMMA|WARPGROUP|LDSM|FFMA|FMNMX|F2FP|LDGSTS|BAR)/) {split($i,a,"."); c[f" "a[1]]++}} END {for (k in c) print k, c[k]}' $B/sass.txt \
    | grep -E "Li16E|v6_kernelI6__halfLi64E|v9_kernelI6__halfLi64E" | sort > "$OUT/sass_counts.txt"
  cat "$OUT/sass_counts.txt" | tee -a "$OUT/summary.txt"
  grep -m5 "MUFU" $B/sass.txt | tee -a "$OUT/summary.txt"
fi

log ".npy round trip"
rm -rf $B/npy
$B/attn --rows 5000 --heads 2 --head-dim 32 --bucket-size 256 --scope-buckets 4 --plan stride:2 --variant v1 --reps 2 --save $B/npy > /dev/null 2>&1
python3 - $B/npy <<'EOF' 2>&1 | tee -a "$OUT/summary.txt"
import sys, numpy as np
d = sys.argv[1] + '/'
q, k, v = (np.load(d + n + '.npy').astype(np.float64) for n in 'qkv')
o, l = np.load(d + 'o.npy').astype(np.float64), np.load(d + 'lse.npy')
bs, bc, sc = np.load(d + 'bucket_start.npy'), np.load(d + 'bucket_count.npy'), np.load(d + 'scope.npy')
err = 0.0
for s in sc:
    rows = np.concatenate([np.arange(bs[b], bs[b] + bc[b]) for b in s if b != 0xFFFFFFFF])
    for h in range(q.shape[1]):
        S = q[rows, h] @ k[rows, h].T / np.sqrt(q.shape[2]); m = S.max(1, keepdims=True)
        P = np.exp(S - m); L = P.sum(1, keepdims=True)
        err = max(err, np.abs(P @ v[rows, h] / L - o[rows, h]).max(), np.abs((m + np.log(L))[:, 0] - l[rows, h]).max())
print('npy: numpy recomputation vs saved o/lse, max abs err %.3e (%s)' % (err, 'ok' if err < 5e-3 else 'FAIL'))
EOF

log "table (TFLOP/s, counted 4*D*H*sum scope_rows^2)"
grep -E "^attn (v|cpu)" "$BENCH" | awk '{for(i=1;i<=NF;i++){if($i~/^D=/)d=$i; if($i~/^plan=/)p=$i; if($i=="median")t=$(i+1)} print $2, $3, d, p, t" ms", $(NF-1), ($0 ~ /packed/ ? "packed" : "")}' | tee -a "$OUT/summary.txt"
grep -E "FAILED|FAIL" "$BENCH" | head | tee -a "$OUT/summary.txt"
