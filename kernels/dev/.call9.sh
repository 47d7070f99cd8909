export OUT; . harness/dev/device-common.sh
meson setup build-dev -Dgpu_arch=90 > /tmp/setup.log 2>&1 || { tail -20 /tmp/setup.log; exit 1; }
ninja -C build-dev kernels/psh_bench tests/kernels/test_psh_gpu > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
B=build-dev/kernels/psh_bench; T=build-dev/tests/kernels/test_psh_gpu
F3D_SOURCE_ROOT=$PWD timeout 240 $T > $OUT/test.log 2>&1; echo "test_psh_gpu rc=$?"; grep -E 'PASSED|FAILED|ERROR|OK \]' $OUT/test.log | tail -9
export F3D_BENCH_POOL=0
F3D_PSH_VARIANTS=v2,v4,v9 $B 4000000 10 512 64 2>&1 | grep -E '^v[0-9]|ratio v2|checks|FAIL|fail' > $OUT/b4m.txt; cat $OUT/b4m.txt
F3D_PSH_VARIANTS=v2,v4,v9 F3D_BENCH_HASHES=xor-mod,xor-div $B 600000 10 512 64 2>&1 | grep -E '^v[0-9]'
for tool in memcheck racecheck; do F3D_PSH_VARIANTS=v4 timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 $T > /tmp/san-$tool.log 2>&1; echo "$tool rc=$?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool.log; done
