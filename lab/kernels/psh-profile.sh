#!/bin/sh
# psh-profile.sh - per-kernel profile of PSH (all variants; v4 in detail) and pooling on the GPU machine, plus
# compute-sanitizer memcheck/racecheck of the PSH GPU test. Run from the repository root with .deps carried
# (cmocka debs): sh lab/kernels/psh-profile.sh. Logs go to $OUT (default ./psh-profile-out), packed into
# profile.tar.gz except summary.txt. PARTS=bench,metrics,full,sanitizer (default: all) picks the steps.
#   metrics.csv      every PSH/pool kernel of `psh_bench 600000 1` (4 hashes x v1..v4, pooling): duration,
#                    SM / DRAM throughput, occupancy, grid, registers (ncu --metrics, --csv)
#   v4-<hash>-details.txt / -source.txt  ncu --set full of v4's four kernels (second run, direct launch)
#   assign-details.txt                    the same for the pooling assignment kernel
#   memcheck.log / racecheck.log          compute-sanitizer on test_psh_gpu
# Launch order in psh_bench with REPS=1: per hash (xor-mod, xor-div, zorder-mod, zorder-div), per variant,
# 9 PSH runs (check, 3+1 direct, 3+1 graph; one more graph launch at capture is not a launch); v4 has 4
# kernels (k4_bbox, k4_count, k4_probe, k4_scatter), so v4's second run of hash h is launches 36h+4..36h+7
# among kernels matching ^k4_.
set -u
OUT=${OUT:-$PWD/psh-profile-out}
mkdir -p "$OUT"
SUM="$OUT/summary.txt"
: > "$SUM"
note() { echo "$*" | tee -a "$SUM"; }
date -u | tee -a "$SUM"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$SUM"
mkdir -p /tmp/deps
for d in .deps/*.deb; do dpkg -x "$d" /tmp/deps; done
export PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig PKG_CONFIG_SYSROOT_DIR=/tmp/deps
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
B=/tmp/build-prof
t0=$(date +%s)
{ meson setup $B -Dgpu_arch=90 && ninja -C $B -j16 lab/psh_bench tests/kernels/test_psh_gpu; } > "$OUT/build.log" 2>&1 ||
  { note "BUILD FAILED"; tail -30 "$OUT/build.log"; exit 1; }
note "build $(( $(date +%s) - t0 )) s"
BENCH=$B/lab/psh_bench
NCU="ncu --clock-control none"
PARTS=${PARTS:-bench,metrics,full,sanitizer}
has() { case ",$PARTS," in *",$1,"*) return 0;; esac; return 1; }
if has bench; then timeout 120 $BENCH 100000,600000 20 512 64 > "$OUT/bench.txt" 2>&1; note "bench rc=$?"; fi
t0=$(date +%s)
has metrics && timeout 200 $NCU --kernel-name regex:'^k' --csv --metrics \
gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  $BENCH 600000 1 512 64 > "$OUT/metrics.csv" 2> "$OUT/metrics.err"
has metrics && note "ncu metrics rc=$? $(( $(date +%s) - t0 )) s, $(grep -c '^"' "$OUT/metrics.csv") rows"
h=0
has full && for hash in xor-mod xor-div zorder-mod zorder-div; do
  if [ "$hash" = xor-mod ] || [ "$hash" = zorder-div ]; then
    t0=$(date +%s)
    timeout 120 $NCU --set full --import-source yes --kernel-name regex:'^k4_' --launch-skip $((36 * h + 4)) --launch-count 4 \
      -o "$OUT/v4-$hash" -f $BENCH 600000 1 512 64 > "$OUT/ncu-$hash.log" 2>&1
    note "ncu full v4 $hash rc=$? $(( $(date +%s) - t0 )) s"
    ncu --import "$OUT/v4-$hash.ncu-rep" --page details > "$OUT/v4-$hash-details.txt" 2>&1
    ncu --import "$OUT/v4-$hash.ncu-rep" --page source --csv --print-source sass > "$OUT/v4-$hash-source.txt" 2>&1 ||
      ncu --import "$OUT/v4-$hash.ncu-rep" --page source --csv > "$OUT/v4-$hash-source.txt" 2>&1
  fi
  h=$((h + 1))
done
if has full; then
  timeout 90 $NCU --set full --import-source yes --kernel-name regex:'k_assign' --launch-count 1 -o "$OUT/assign" -f \
    $BENCH 600000 1 512 64 > "$OUT/ncu-assign.log" 2>&1
  note "ncu assign rc=$?"
  ncu --import "$OUT/assign.ncu-rep" --page details > "$OUT/assign-details.txt" 2>&1
fi
has sanitizer && for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/kernels/test_psh_gpu > "$OUT/$tool.log" 2>&1
  note "$tool test_psh_gpu rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|HAZARD' "$OUT/$tool.log" | sort | uniq -c | head -5 | tr '\n' ' ')"
done
# packed outside $OUT first: tar reading the folder it writes into fails ("file changed as we read it")
cd "$OUT" && tar czf /tmp/profile.tar.gz --exclude=summary.txt . && find . -mindepth 1 ! -name summary.txt -delete &&
  mv /tmp/profile.tar.gz "$OUT/"
cat "$SUM"
tar xzf profile.tar.gz -O ./bench.txt 2>/dev/null | tail -40
