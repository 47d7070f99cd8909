/*
 * gpu_util.cuh - private to baselines/: CUDA error checks and scratch carving shared by the .cu files.
 * Every launch is followed by BL_LAUNCHED(name), which turns a launch error into HX_ECUDA with a message.
 */
#ifndef F3D_BASELINES_GPU_UTIL_CUH
#define F3D_BASELINES_GPU_UTIL_CUH

#include <cuda_runtime.h>
#include <stdio.h>

#include "baselines/sfc_internal.h"

static inline hx_status bl_cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
  fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cudaGetErrorString(e));
  return HX_ECUDA;
}

#define BL_CUDA(expr)                                                                  \
  do {                                                                                 \
    cudaError_t bl_e_ = (expr);                                                        \
    if (bl_e_ != cudaSuccess) return bl_cuda_fail(bl_e_, #expr, __FILE__, __LINE__);   \
  } while (0)

#define BL_LAUNCHED(name)                                                              \
  do {                                                                                 \
    cudaError_t bl_e_ = cudaGetLastError();                                            \
    if (bl_e_ != cudaSuccess) return bl_cuda_fail(bl_e_, name, __FILE__, __LINE__);    \
  } while (0)

/* Carves consecutive 256-byte aligned pieces out of a scratch block; with base == NULL it only counts. */
typedef struct bl_carve {
  char *base;
  size_t used;
} bl_carve;

static inline void *bl_take(bl_carve *c, size_t bytes) {
  void *p = c->base ? c->base + c->used : NULL;
  c->used += sfc_align256(bytes);
  return p;
}

/* The CUB scratch protocol once every piece is carved out of c: d_scratch NULL asks for the size (written
 * to *scratch_bytes, *st = HX_OK); a scratch block smaller than c->used is refused (*st = HX_EINVAL).
 * Returns 1 when the launcher returns *st now, 0 when it goes on to launch. */
static inline int bl_scratch_answer(const void *d_scratch, const bl_carve *c, size_t *scratch_bytes, hx_status *st) {
  if (!d_scratch) {
    *scratch_bytes = c->used;
    *st = HX_OK;
    return 1;
  }
  if (*scratch_bytes < c->used) {
    *st = HX_EINVAL;
    return 1;
  }
  return 0;
}

static inline unsigned bl_blocks(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b == 0 ? 1 : b);
}

#endif /* F3D_BASELINES_GPU_UTIL_CUH */
