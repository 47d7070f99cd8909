#!/bin/sh
# ptv3-device.sh - run on the GPU machine from the repository root: builds the PTv3 baselines, runs their
# GPU tests and a short timing table, and writes every log under $OUT (default ./ptv3-device-out).
#   sh lab/baselines/ptv3-device.sh   (env: ARCH=90, N=600000 points, REPS=20, SWEEP_TIMEOUT=240 s, OUT)
# The whole script should stay under ~8 minutes on an H100 (the device tool allows 10 per command).
# Build: Meson (`meson setup build-dev -Dgpu_arch=$ARCH`, cmocka found through PKG_CONFIG_PATH); if that
# fails, a direct nvcc/gcc build of just baselines/ + harness/status.c (they need no generated config).
# Outputs: summary.txt (pass/fail of each step), test-*.log, bench-B1.txt, bench-B4.txt (the timing
# tables: whole 4-order serialization vs the <= 1 ms target, gathers vs a D2D copy), build logs.
set -u
OUT=${OUT:-$PWD/ptv3-device-out}
N=${N:-600000}
REPS=${REPS:-20}
# ARCH, BUILD, $SUM, note, step and the date/nvidia-smi/git records
# shellcheck source=lab/harness/device-common.sh
. "$(dirname "$0")/../harness/device-common.sh"

T=""; F=""; BENCH=""
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dgpu_arch="$ARCH" > "$OUT/meson-setup.log" 2>&1 || true
fi
if [ -f "$BUILD/build.ninja" ] &&
   ninja -C "$BUILD" -j16 tests/baselines/test_ptv3_gpu tests/baselines/test_sfc tests/baselines/test_shuf \
         tests/baselines/test_spool lab/ptv3_bench > "$OUT/build-meson.log" 2>&1; then
  note "build: meson ($BUILD)"
  T="$BUILD/tests/baselines"; BENCH="$BUILD/lab/ptv3_bench"
  ninja -C "$BUILD" -j16 app/f3dbench >> "$OUT/build-meson.log" 2>&1 && F="$BUILD/app/f3dbench"
else
  note "build: meson failed (see build-meson.log / meson-setup.log); direct nvcc build"
  D=${TMPDIR:-/tmp}/ptv3-direct
  mkdir -p "$D"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CUDA=$(dirname "$(dirname "$NVCC")")
  CF="-std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I. -I$CUDA/include"
  (
    set -e
    for f in sfc_gpu shuf_gpu spool_gpu; do
      "$NVCC" -O3 -std=c++17 -gencode "arch=compute_$ARCH,code=sm_$ARCH" -lineinfo -I. -c "baselines/$f.cu" -o "$D/$f.o"
    done
    for f in baselines/sfc baselines/shuf baselines/spool harness/status; do
      gcc $CF -c "$f.c" -o "$D/$(basename "$f").o"
    done
    LIBS="-L$CUDA/lib64 -lcudart_static -ldl -lrt -lpthread -lm"
    OBJS="$D/sfc_gpu.o $D/shuf_gpu.o $D/spool_gpu.o $D/sfc.o $D/shuf.o $D/spool.o $D/status.o"
    gcc $CF -c lab/baselines/ptv3_bench.c -o "$D/bench.o"
    g++ -o "$D/ptv3_bench" "$D/bench.o" $OBJS $LIBS
    CM=$(pkg-config --cflags --libs cmocka 2>/dev/null || echo -lcmocka)
    for t in sfc shuf spool; do
      gcc $CF "tests/baselines/test_$t.c" $OBJS -o "$D/test_$t" $CM $LIBS -lstdc++
    done
    gcc $CF -DBL_TEST_CUDA=1 tests/baselines/test_ptv3_gpu.c $OBJS -o "$D/test_ptv3_gpu" $CM $LIBS -lstdc++
  ) > "$OUT/build-direct.log" 2>&1 && { T="$D"; BENCH="$D/ptv3_bench"; note "build: direct ok ($D)"; } ||
    note "FAIL build (see build-direct.log)"
fi

if [ -n "$T" ]; then
  for t in sfc shuf spool; do step "test_$t (CPU reference)" "$OUT/test-$t.log" "$T/test_$t"; done
  # two fresh seeds, each printed in the log (F3D_TEST_SEED=S repeats one)
  step "test_ptv3_gpu (seed 1)" "$OUT/test-ptv3-gpu-1.log" "$T/test_ptv3_gpu"
  sleep 1
  step "test_ptv3_gpu (seed 2)" "$OUT/test-ptv3-gpu-2.log" "$T/test_ptv3_gpu"
fi
if [ -n "$F" ]; then
  step "serialize CLI reference codes" "$OUT/test-serialize-cli.log" sh tests/baselines/serialize_cli.sh "$F"
  step "serialize CLI gpu == cpu" "$OUT/test-serialize-cli-gpu.log" sh tests/baselines/serialize_cli.sh "$F" gpu
else
  note "SKIP serialize CLI (f3dbench not built)"
fi
if [ -n "$BENCH" ]; then
  step "bench N=$N B=1" "$OUT/bench-B1.txt" "$BENCH" "$N" 1 "$REPS"
  step "bench N=$N B=4" "$OUT/bench-B4.txt" "$BENCH" "$N" 4 "$REPS"
  step "bench N=$N B=1 grid 0.1 (depth 10, 32-bit keys)" "$OUT/bench-B1-g01.txt" "$BENCH" "$N" 1 "$REPS" 0.1
  grep -h "SERIALIZE\|gather\|copy\|MISMATCH" "$OUT"/bench-B*.txt >> "$SUM" 2>/dev/null
fi
if [ -n "$F" ]; then
  # the sweep pipeline itself (tidy results under $OUT/results; a short run: 2 sizes, 10 reps)
  step "sweep -p ptv3 (lidar, 100k and 600k)" "$OUT/sweep-ptv3.log" \
    timeout "${SWEEP_TIMEOUT:-240}" "$F" sweep -p ptv3 -w lidar -n 100k,600k -r 10 -o "$OUT/results"
  grep -h ",check,0," "$OUT"/results/*/results.csv >> "$SUM" 2>/dev/null && note "FAIL some ptv3 variant did not match the CPU"
fi
note "logs in $OUT"
