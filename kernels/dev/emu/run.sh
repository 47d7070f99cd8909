#!/bin/sh
# run.sh - check the logic of PSH v4, v5, v6, v7, v8 and v9 without a GPU: rewrite kernels/psh_v4.cu,
# psh_v5.cu, psh_v7.cu, psh_v8.cu and their shared kernels/psh_tiles.cuh onto the host emulation in emu.h
# (drop the CUB / cooperative-groups includes, lanemask from threadIdx; v4's <<<...>>> launches as
# emu_launch_dyn (blocks in turn); the cooperative launches of v5/v7 (coop_run in psh_tiles.cuh) and v8 as
# emu_launch_coop (every block at once, grid barriers real); v5's one shared struct per block; v7 is rewritten
# as v5), build them with the driver against a CPU-only build's libraries, and run the driver for v4, v5, v6
# (v5's launcher with the gather), v7 (twice: aligned, and with misaligned coordinates for its scalar gather
# paths), v8 (its dynamic shared memory as a per-block buffer; 1024-thread blocks, falling back to v7 where v8
# does) and v9 (v8's kernel with its kW changes: warp intrinsics __match_any_sync, __reduce_min_sync,
# __syncwarp).
#   [EMU_NOPAIR=1] sh kernels/dev/emu/run.sh BUILD_CPU [v4|v5|v6|v7|v8|v9|all]  (EMU_NOPAIR: see drv.cc; BUILD_CPU: a `meson setup ... -Dcuda=disabled` build, built)
# Run from the repository root. A few minutes on 2 cores (thousands of threads per launch).
set -eu
B=${1:?usage: run.sh BUILD_CPU [v4|v5|v6|v7|v8|v9|all]}
WHICH=${2:-all}
D=${TMPDIR:-/tmp}/psh-v4-emu
mkdir -p "$D"
python3 - "$D" <<'PY'
import re, sys
d = sys.argv[1]
def common(s):
    s = s.replace('#include <cub/block/block_scan.cuh>\n', '').replace('#include <cuda_runtime.h>', '#include "emu.h"')
    return s.replace('asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));', 'm = (1u << (threadIdx.x & 31u)) - 1u;')
import os
os.makedirs(d + '/kernels', exist_ok=True)  # the shared tile helpers, rewritten like the .cu files
h = common(open('kernels/psh_tiles.cuh').read()).replace('#include <cooperative_groups.h>\n', '')
assert 'lanemask_lt;' not in h
h, k1 = re.subn(r'cooperative_groups::this_grid\(\)\.sync\(\)', 'emu_grid_sync()', h)
# the split barrier (grid_arrive / grid_wait): the emulation waits for every thread in grid_wait
h, ka = re.subn(r'cooperative_groups::this_grid\(\)\.barrier_arrive\(\)', '0u', h)
h, kw = re.subn(r'cooperative_groups::this_grid\(\)\.barrier_wait\(static_cast<unsigned int &&>\(tok\)\)', '((void)tok, emu_grid_sync())', h)
assert (ka, kw) == (1, 1), (ka, kw)
h, k5 = re.subn(r'asm volatile\("mov.u64 %0, %%globaltimer;" : "=l"\(t\)\);', 't = emu_clock_ns();', h)
# coop_run, the launcher of v5/v6 and v7: its cooperative launch (every block at once, grid barriers real) and
# its two v4 fall-backs (counted)
h, k3 = re.subn(r'cudaLaunchCooperativeKernel\(\(const void \*\)(\w+), dim3\((.*?)\), dim3\((\w+)\), args,\s*0, \(cudaStream_t\)stream\)',
                r'emu_launch_coop(\1, \2, \3, p)', h, flags=re.S)
h, k4 = re.subn(r'return psh_run_v4\(d_scratch', 'return emu_fallbacks++, psh_run_v4(d_scratch', h)
assert (k1, k5, k3, k4) == (1, 1, 1, 2), (k1, k5, k3, k4)  # grid_sync and gtimer of every cooperative variant
open(d + '/kernels/psh_tiles.cuh', 'w').write(h)
s = common(open('kernels/psh_v4.cu').read())
# the four launches with their dynamic size (K2 and K4: 0 up to kDense buckets, their arrays in dynamic shared
# memory past it), and the dynamic arrays as a buffer of exactly that size, poisoned per block, with a canary
s, k = re.subn(r'([\w<>]+)<<<(.*?), (\w+), (\w+), s>>>\(p\);', r'emu_launch_dyn(\1, \2, \3, \4, p);', s)
s, kd = re.subn(r'extern __shared__ uint32_t s_dyn4\[\];', 'uint32_t *s_dyn4 = (uint32_t *)emu_dyn_smem();', s)
assert (k, kd) == (4, 2), (k, kd)
open(d + '/v4emu.cc', 'w').write(s)
def coop(src, dst):
  s = common(open(src).read())
  s, k2 = re.subn(r'__shared__ Smem sm;', 'Smem &sm = emu_smem<Smem>();', s)
  assert k2 == 1, k2
  open(dst, 'w').write(s)
coop('kernels/psh_v5.cu', d + '/v5emu.cc')
coop('kernels/psh_v7.cu', d + '/v7emu.cc')
def coop8(src, dst):  # v8: dynamic shared memory, 1024-thread blocks, falls back to v7
  s = common(open(src).read())
  s, k2 = re.subn(r'extern __shared__ __align__\(16\) unsigned char smraw\[\];',
                  'unsigned char *smraw = (unsigned char *)emu_smem_get(p.smem_bytes);', s)
  s, k3 = re.subn(r'cudaLaunchCooperativeKernel\(\(const void \*\)(\w+), dim3\((.*?)\), dim3\((\w+)\), args,\s*pl\.smem, \(cudaStream_t\)stream\)',
                  r'emu_launch_coop(\1, \2, \3, p)', s, flags=re.S)
  s, k4 = re.subn(r'return (psh_run_v7\(d_scratch|psh_run_paired\(psh_run_v7)', r'return emu_fallbacks++, \1', s)
  # v9 stages up to 4096 list entries per block in shared memory and appends the rest one by one: a stage of
  # 8 makes the small emulated clouds take both paths
  s, k6 = re.subn(r'constexpr uint32_t kStage8 = 4 \* kShort;', 'constexpr uint32_t kStage8 = 8;', s)
  assert (k2, k3, k6) == (2, 1, 1) and k4 >= 2, (k2, k3, k4, k6)  # k8_psh and k8_floor (not driven here); launch8
  open(dst, 'w').write(s)
coop8('kernels/psh_v8.cu', d + '/v8emu.cc')
PY
CXX="g++ -std=c++17 -O1 -g ${EMU_FLAGS:-} -Ikernels/dev/emu -I$D -I. -I$B"  # $D first: its psh_tiles.cuh; EMU_FLAGS: e.g. -DPSH_ZC_VERIFY
$CXX -w -c "$D/v4emu.cc" -o "$D/v4emu.o"
$CXX -w -c "$D/v5emu.cc" -o "$D/v5emu.o"
$CXX -w -c "$D/v7emu.cc" -o "$D/v7emu.o"
$CXX -w -c "$D/v8emu.cc" -o "$D/v8emu.o"
$CXX -c kernels/dev/emu/emu.cc -o "$D/emu.o"
$CXX -c kernels/dev/emu/drv.cc -o "$D/drv4.o"
$CXX -DEMU_RUN=psh_run_v5 -DEMU_SMS_MUL=4 -c kernels/dev/emu/drv.cc -o "$D/drv5.o"
$CXX -DEMU_RUN=psh_run_v6 -DEMU_SMS_MUL=4 -c kernels/dev/emu/drv.cc -o "$D/drv6.o"
$CXX -DEMU_RUN=psh_run_v7 -DEMU_SMS_MUL=4 -c kernels/dev/emu/drv.cc -o "$D/drv7.o"
$CXX -DEMU_RUN=psh_run_v7 -DEMU_SMS_MUL=4 -DEMU_MISALIGN -c kernels/dev/emu/drv.cc -o "$D/drv7u.o"
$CXX -DEMU_RUN=psh_run_v8 -DEMU_SMS_MUL=6 -DEMU_OWN_PAIR -c kernels/dev/emu/drv.cc -o "$D/drv8.o"
$CXX -DEMU_RUN=psh_run_v9 -DEMU_SMS_MUL=6 -DEMU_OWN_PAIR -c kernels/dev/emu/drv.cc -o "$D/drv9.o"
LIBS="$B/kernels/libkernels.a $B/harness/libharness.a -lpthread -lm"
g++ -o "$D/drv4" "$D/drv4.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv5" "$D/drv5.o" "$D/v5emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv6" "$D/drv6.o" "$D/v5emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv7" "$D/drv7.o" "$D/v7emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv7u" "$D/drv7u.o" "$D/v7emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv8" "$D/drv8.o" "$D/v8emu.o" "$D/v7emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
g++ -o "$D/drv9" "$D/drv9.o" "$D/v8emu.o" "$D/v7emu.o" "$D/v4emu.o" "$D/emu.o" $LIBS
rc=0
case "$WHICH" in all|v4) echo "== v4"; "$D/drv4" || rc=1;; esac
case "$WHICH" in all|v5) echo "== v5"; "$D/drv5" || rc=1;; esac
case "$WHICH" in all|v6) echo "== v6"; "$D/drv6" || rc=1;; esac
case "$WHICH" in all|v7) echo "== v7"; "$D/drv7" || rc=1
  echo "== v7, coordinates (and perm) 4/8 bytes off 16-byte alignment (hashes 1-3)"; "$D/drv7u" || rc=1;; esac
case "$WHICH" in all|v8) echo "== v8"; "$D/drv8" || rc=1;; esac
case "$WHICH" in all|v9) echo "== v9"; "$D/drv9" || rc=1;; esac
exit $rc
