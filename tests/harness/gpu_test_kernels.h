/*
 * gpu_test_kernels.h - small CUDA kernels with known behaviour for the measurement and counter tests
 * (private to tests/harness). All return HX_ENODEV in a build without CUDA (gpu_test_kernels_stub.c).
 */
#ifndef F3D_TESTS_HARNESS_GPU_TEST_KERNELS_H
#define F3D_TESTS_HARNESS_GPU_TEST_KERNELS_H

#include "harness/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices (0 without a driver or in a CPU-only build). */
int tk_device_count(void);
hx_status tk_malloc(void **p, size_t bytes);
void tk_free(void *p);
hx_status tk_sync(void);
/* dst[i] = src[i] for n floats (n a multiple of 4): pure DRAM streaming, no tensor work. */
hx_status tk_copy(float *d_dst, const float *d_src, size_t n, void *stream);
/* A loop of mma.sync m16n8k16 f16 -> f32 on every warp of `blocks` x 256 threads, `iters` rounds of 4
 * independent MMAs; d_out receives one float per thread so the work cannot be removed. */
hx_status tk_mma(float *d_out, int blocks, int iters, void *stream);
/* One thread spinning on %globaltimer for `ns` nanoseconds: a kernel of known duration. */
hx_status tk_spin(uint64_t ns, void *stream);
/* The same spin as a kernel of its own that only the lazy-loading test launches, so that its first
 * launch (which loads it) happens inside a measurement. */
hx_status tk_spin_fresh(uint64_t ns, void *stream);
/* SM count of device 0. */
int tk_sm_count(void);

#ifdef __cplusplus
}
#endif
#endif
