/*
 * arena_gpu.cu - the device backend of the memory arena (arena.c holds the bookkeeping): cudaMalloc and
 * cudaFree on the current device, and cudaMemGetInfo for the bytes in use. cudaMalloc returns 256-byte
 * aligned memory, what the arena checks. An out-of-memory cudaMalloc is not a sticky error; the last
 * error is cleared so a later cudaGetLastError() after a launch does not report it.
 */
#include "harness/harness.h"

#include <cuda_runtime.h>

static hx_status dev_alloc(void *ctx, void **p, size_t bytes, hx_err *err) {
  (void)ctx;
  cudaError_t e = cudaMalloc(p, bytes);
  if (e == cudaSuccess) return HX_OK;
  (void)cudaGetLastError();
  *p = NULL;
  /* out of memory is HX_ENOMEM: the sweep skips the pipeline and goes on, any other failure stops it */
  return hx_errf(err, e == cudaErrorMemoryAllocation ? HX_ENOMEM : HX_ECUDA, "cudaMalloc of %zu B: %s", bytes,
                 cudaGetErrorString(e));
}

static void dev_release(void *ctx, void *p) {
  (void)ctx;
  cudaFree(p);
}

extern "C" hx_arena_backend hx_arena_device_backend(void) {
  hx_arena_backend b = {dev_alloc, dev_release, NULL};
  return b;
}

extern "C" hx_status hx_device_mem_used(size_t *bytes, hx_err *err) {
  size_t free_b = 0, total = 0;
  *bytes = 0;
  cudaError_t e = cudaMemGetInfo(&free_b, &total);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return hx_errf(err, HX_ECUDA, "cudaMemGetInfo: %s", cudaGetErrorString(e));
  }
  *bytes = total - free_b;
  return HX_OK;
}
