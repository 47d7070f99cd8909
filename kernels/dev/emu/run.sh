#!/bin/sh
# run.sh - check PSH v4's logic without a GPU: rewrite kernels/psh_v4.cu onto the host emulation in
# emu.h (drop the CUB include, lanemask from threadIdx, <<<...>>> launches as emu_launch), build it with
# the driver against a CPU-only build's libraries, and run the driver.
#   sh kernels/dev/emu/run.sh BUILD_CPU     (BUILD_CPU: a `meson setup ... -Dcuda=disabled` build, built)
# Run from the repository root. Takes about a minute on 2 cores (thousands of threads per launch).
set -eu
B=${1:?usage: run.sh BUILD_CPU}
D=${TMPDIR:-/tmp}/psh-v4-emu
mkdir -p "$D"
python3 - "$D/v4emu.cc" <<'PY'
import re, sys
s = open('kernels/psh_v4.cu').read()
s = s.replace('#include <cub/block/block_scan.cuh>\n', '').replace('#include <cuda_runtime.h>', '#include "emu.h"')
s = s.replace('asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));', 'm = (1u << (threadIdx.x & 31u)) - 1u;')
s, k = re.subn(r'(\w+)<<<(.*?), (\w+), 0, s>>>\(p\);', r'emu_launch(\1, \2, \3, p);', s)
assert k == 4, k
open(sys.argv[1], 'w').write(s)
PY
CXX="g++ -std=c++17 -O1 -g -Ikernels/dev/emu -I. -I$B"
$CXX -w -c "$D/v4emu.cc" -o "$D/v4emu.o"
$CXX -c kernels/dev/emu/emu.cc -o "$D/emu.o"
$CXX -c kernels/dev/emu/drv.cc -o "$D/drv.o"
g++ -o "$D/drv" "$D/drv.o" "$D/v4emu.o" "$D/emu.o" "$B/kernels/libkernels.a" "$B/harness/libharness.a" -lpthread -lm
"$D/drv"
