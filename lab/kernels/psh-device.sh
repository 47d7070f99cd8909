#!/bin/sh
# psh-device.sh - run on the GPU machine from the repository root: builds the PSH / pooling kernels, runs
# their CPU and GPU tests, the CLI on a generated cloud (cpu vs gpu), and a short timing table, and writes
# every log under $OUT (default ./psh-device-out).
#   sh lab/kernels/psh-device.sh        (ARCH=90; SIZES=100000,200000,400000,600000; REPS=20; S=512; C=64;
#                                        SAN=v5,v6: compute-sanitizer memcheck + racecheck of those variants,
#                                        after the bench; NCU=kernel-regex,...: ncu --set full of one launch each;
#                                        NCUT=kernel-regex: every launch's duration, ncut-N.csv;
#                                        SANPOOL=1: compute-sanitizer memcheck + racecheck of the pooling tests
#                                        (SANPOOL=v5,v9: of those pooling variants only);
#                                        SANTOOLS="memcheck": the sanitizer tools SAN and SANPOOL run;
#                                        F3D_PSH_V8_BT=1: the bench times PSH v8's per-block-stamped build)
# Build: Meson (`meson setup build-dev -Dgpu_arch=$ARCH`, cmocka through PKG_CONFIG_PATH); if that fails,
# a direct nvcc/gcc build of kernels/psh*, kernels/bpool*, harness/status.c and the two workloads files
# the bench needs (no generated config needed except for the GPU test, which gets a minimal one).
# Outputs: summary.txt (PASS/FAIL/SKIP per step), test-*.log, bench.txt (the table: PSH per variant and
# hash with the first/probe/overflow counts, feature scatter and pooling bandwidth next to a D2D copy),
# nsys-kernels.txt (per-kernel times of one PSH run of each variant, when nsys exists), build logs.
set -u
OUT=${OUT:-$PWD/psh-device-out}
SIZES=${SIZES:-100000,200000,400000,600000}
REPS=${REPS:-20}
S=${S:-512}
C=${C:-64}
# ARCH, BUILD, $SUM, note, step and the date/nvidia-smi/git records
# shellcheck source=lab/harness/device-common.sh
. "$(dirname "$0")/../harness/device-common.sh"

T=""; BENCH=""; F=""
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dgpu_arch="$ARCH" > "$OUT/meson-setup.log" 2>&1 || true
fi
if [ -f "$BUILD/build.ninja" ] &&
   ninja -C "$BUILD" -j16 tests/kernels/test_psh_cpu tests/kernels/test_bpool_cpu tests/kernels/test_psh_gpu \
         lab/psh_bench > "$OUT/build-meson.log" 2>&1; then
  note "build: meson ($BUILD)"
  T="$BUILD/tests/kernels"; BENCH="$BUILD/lab/psh_bench"
  ninja -C "$BUILD" -j16 app/f3dbench >> "$OUT/build-meson.log" 2>&1 && F="$BUILD/app/f3dbench"
else
  note "build: meson failed (see build-meson.log / meson-setup.log); direct nvcc build"
  D=${TMPDIR:-/tmp}/psh-direct
  mkdir -p "$D/cfg"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CUDA=$(dirname "$(dirname "$NVCC")")
  # the GPU test only needs F3D_HAVE_CUDA from the generated config
  printf '#define F3D_HAVE_CUDA 1\n#define F3D_HAVE_LZF 0\n#define F3D_HAVE_CUPTI 0\n' > "$D/cfg/f3d_config.h"
  CF="-std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I$D/cfg -I. -I$CUDA/include"
  (
    set -e
    for f in psh psh_v4 psh_v5 psh_v7 psh_v8 bpool psh_host; do
      "$NVCC" -O3 -std=c++17 -gencode "arch=compute_$ARCH,code=sm_$ARCH" -lineinfo -I. -c "kernels/$f.cu" -o "$D/${f}_cu.o"
    done
    for f in kernels/psh kernels/bpool harness/status workloads/wl_core workloads/wl_generate; do
      gcc $CF -c "$f.c" -o "$D/$(basename "$f").o"
    done
    LIBS="-L$CUDA/lib64 -lcudart_static -ldl -lrt -lpthread -lm"
    OBJS="$D/psh_cu.o $D/psh_v4_cu.o $D/psh_v5_cu.o $D/psh_v7_cu.o $D/psh_v8_cu.o $D/bpool_cu.o $D/psh_host_cu.o $D/psh.o $D/bpool.o $D/status.o"
    gcc $CF -c lab/kernels/psh_bench.c -o "$D/bench.o"
    g++ -o "$D/psh_bench" "$D/bench.o" $OBJS "$D/wl_core.o" "$D/wl_generate.o" $LIBS
    CM=$(pkg-config --cflags --libs cmocka 2>/dev/null || echo -lcmocka)
    for t in psh_cpu bpool_cpu psh_gpu; do
      gcc $CF "tests/kernels/test_$t.c" $OBJS -o "$D/test_$t" $CM $LIBS -lstdc++
    done
  ) > "$OUT/build-direct.log" 2>&1 && { T="$D"; BENCH="$D/psh_bench"; note "build: direct ok ($D)"; } ||
    note "FAIL build (see build-direct.log)"
fi

if [ -n "$T" ]; then
  step "test_psh_cpu (reference)" "$OUT/test-psh-cpu.log" "$T/test_psh_cpu"
  step "test_bpool_cpu (reference)" "$OUT/test-bpool-cpu.log" "$T/test_bpool_cpu"
  step "test_psh_gpu (variants vs invariants and CPU; pooling bitwise)" "$OUT/test-psh-gpu.log" \
    timeout "${TEST_TIMEOUT:-200}" "$T/test_psh_gpu"
fi
if [ -n "$F" ]; then
  "$F" gen --out "$OUT/lidar.ply" --kind lidar --points 200k --seed 1 > /dev/null 2>&1
  "$F" gen --out "$OUT/indoor.bin" --kind indoor --points 80k --seed 2 > /dev/null 2>&1
  for dev in cpu gpu; do
    step "f3dbench psh --device $dev" "$OUT/cli-psh-$dev.log" "$F" psh --device "$dev" --out "$OUT/psh-$dev.csv" \
      "$OUT/lidar.ply" "$OUT/indoor.bin"
    step "f3dbench pool --device $dev" "$OUT/cli-pool-$dev.log" "$F" pool --device "$dev" --rho 4 --out "$OUT/pool-$dev.csv" \
      "$OUT/lidar.ply" "$OUT/indoor.bin"
  done
  # the pooled output of the same PSH assignment must agree; the PSH assignment itself may differ (racing)
  cat "$OUT"/cli-p*-*.log >> "$SUM" 2>/dev/null
else
  note "SKIP CLI (f3dbench not built)"
fi
if [ -n "$BENCH" ]; then
  step "bench sizes=$SIZES" "$OUT/bench.txt" timeout "${BENCH_TIMEOUT:-200}" "$BENCH" "$SIZES" "$REPS" "$S" "$C"
  cat "$OUT/bench.txt" >> "$SUM"
  if command -v nsys > /dev/null 2>&1; then
    nsys profile -o "$OUT/psh-nsys" --force-overwrite true "$BENCH" 600000 5 "$S" "$C" > "$OUT/nsys-run.log" 2>&1 &&
      nsys stats --report cuda_gpu_kern_sum "$OUT/psh-nsys.nsys-rep" > "$OUT/nsys-kernels.txt" 2>&1 &&
      note "nsys per-kernel summary: nsys-kernels.txt" || note "nsys failed (see nsys-run.log)"
  fi
fi
# sanitize LABEL LOGPREFIX VAR=VALUE: memcheck and racecheck of test_psh_gpu with that variable set
sanitize() {
  for tool in ${SANTOOLS:-memcheck racecheck}; do
    step "compute-sanitizer $tool test_psh_gpu ($1)" "$OUT/$2-$tool.log" env "$3" \
      timeout "${SAN_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$T/test_psh_gpu"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$2-$tool.log" >> "$SUM" 2>/dev/null
  done
}
if [ -n "$T" ] && command -v compute-sanitizer > /dev/null 2>&1; then
  # SAN=v5,v6: the PSH test restricted to those variants; SANPOOL=1: the pooling tests alone (every pooling
  # variant, every layout)
  [ -n "${SAN:-}" ] && sanitize "$SAN" san "F3D_PSH_VARIANTS=$SAN"
  if [ -n "${SANPOOL:-}" ]; then
    [ "$SANPOOL" != 1 ] && export F3D_BPOOL_VARIANTS="$SANPOOL"
    sanitize "pooling $SANPOOL" sanpool F3D_BPOOL_ONLY=1
    unset F3D_BPOOL_VARIANTS
  fi
fi
if [ -n "$BENCH" ] && [ -n "${NCU:-}" ] && command -v ncu > /dev/null 2>&1; then
  # NCU=k5_psh,k4_count: ncu --set full of the first launch of each kernel the regex names (600k, first hash);
  # demangled names are matched, e.g. k5_psh<(bool)0> is v5's kernel, k5_psh<(bool)1> v6's, k7_psh v7's,
  # k8_psh<(bool)0, (bool)0> v8's and k8_psh<(bool)0, (bool)1> v9's (regex: k8_psh<.bool.0, .bool.1>)
  echo "$NCU" | tr ',' '\n' | while read -r k; do
    f=$(echo "$k" | tr -c 'A-Za-z0-9_\n' '_')
    timeout "${NCU_TIMEOUT:-90}" ncu --clock-control none --set full --import-source yes --kernel-name-base demangled \
      --kernel-name "regex:$k" --launch-count 1 -o "$OUT/ncu-$f" -f "$BENCH" 600000 1 "$S" "$C" > "$OUT/ncu-$f.log" 2>&1
    note "ncu $k rc=$?"
    ncu --import "$OUT/ncu-$f.ncu-rep" --page details > "$OUT/ncu-$f-details.txt" 2>&1
    ncu --import "$OUT/ncu-$f.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-$f-source.csv" 2>&1
    ncu --import "$OUT/ncu-$f.ncu-rep" --page source --csv --print-source cuda > "$OUT/ncu-$f-cuda.csv" 2>&1
    { python3 "$(dirname "$0")/ncu_source_top.py" "$OUT/ncu-$f-cuda.csv" 40
      python3 "$(dirname "$0")/ncu_source_top.py" "$OUT/ncu-$f-source.csv" 25; } > "$OUT/ncu-$f-top.txt" 2>&1
  done
fi
if [ -n "$BENCH" ] && [ -n "${NCUT:-}" ] && command -v ncu > /dev/null 2>&1; then
  # NCUT=kernel-regex: every launch's duration (gpu__time_duration) of the kernels the regex names in one
  # short bench run per size of SIZES (reps 1), as CSV: the per-kernel split of a launch sequence (nsys is
  # not on the device image)
  for n in $(echo "$SIZES" | tr ',' ' '); do
    timeout "${NCU_TIMEOUT:-120}" ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      --kernel-name-base demangled --kernel-name "regex:$NCUT" "$BENCH" "$n" 1 "$S" "$C" > "$OUT/ncut-$n.csv" 2>&1
    note "ncu durations $NCUT n=$n rc=$?"
    python3 "$(dirname "$0")/ncu_durations.py" "$OUT/ncut-$n.csv" > "$OUT/ncut-$n.txt" 2>&1 && sed "s/^/  n=$n /" "$OUT/ncut-$n.txt" >> "$SUM"
  done
fi
note "logs in $OUT"
