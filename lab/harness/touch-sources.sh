#!/bin/sh
# touch-sources.sh - run from the repository root before a device script builds: a warm device machine keeps build/
# between calls, and each call's copy of the tree carries the mtimes of the tree it came from, so a source that an
# earlier call changed (an A/B patch, reverted or not) and this copy restored can be older than the object built
# from the changed text, and ninja keeps that stale object (seen on an H200, 2026-11-30: "build 0 s" after an A/B
# call). Touching every source rebuilds them all, as a fresh machine does anyway (~65 s with F3D_GPU_ARCH=90).
find base kernels baselines workloads nets harness app tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
  -o -name '*.cuh' -o -name '*.cpp' \) -exec touch {} + 2>/dev/null
exit 0
