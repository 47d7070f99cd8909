/*
 * attn_internal.h - private to kernels/: the attention variants that live outside attn.cu, for its variant
 * table, and (CUDA only) the K/V tile walk that the fused kernels of attn.cu and attn_wgmma.cu share.
 * v6 (attn_wgmma.cu) is built in its own library with the sm_90a target added.
 */
#ifndef F3D_ATTN_INTERNAL_H
#define F3D_ATTN_INTERNAL_H

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* v5 (attn.cu), for v6 to run at the head dims where wgmma does not pay. */
hx_status battn_v5_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                      hx_err *err);
/* v24 (attn.cu), for v9 at D = 16: v23 over each scope's rows packed end to end. */
hx_status battn_v24_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                       hx_err *err);
/* v6: wgmma (sm_90a) FlashAttention-3-style kernel. HX_EUNSUPPORTED (also for the scratch-size query)
 * unless the device is compute capability 9.0 and runs this file's sm_90a image. */
hx_status battn_v6_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                      hx_err *err);
/* v7: v6's kernel without the softmax/wait fence; v8: v6's kernel at every head dim (same gate). */
hx_status battn_v7_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                      hx_err *err);
hx_status battn_v8_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                      hx_err *err);
/* v9: warp-specialised wgmma kernel (producer warpgroup, mbarrier full/empty ring, ping-pong consumers)
 * at D = 32/64/128, v23 at D = 16; v10: v9's kernel at every head dim; v11: v10 without the ping-pong.
 * Same gate as v6. */
hx_status battn_v9_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                      hx_err *err);
hx_status battn_v10_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                       hx_err *err);
hx_status battn_v11_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                       hx_err *err);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* ---- device helpers of the fused kernels of attn.cu and attn_wgmma.cu (inlined into each) ---------- */

/* The K/V tile walk of one scope: slot by slot, BN rows at a time, skipping empty slots and buckets.
 * Start from {-1, 0, 0, 0}; each walk_next moves to the next tile (false past the scope's last), whose
 * rows are start + off .. start + off + walk_rows - 1. */
struct tile_walk {
  int slot;
  uint32_t off, start, count;
};
template <int BN>
static __device__ __forceinline__ bool walk_next(const battn_params &p, uint32_t scope, tile_walk &w) {
  w.off += BN;
  while (w.off >= w.count) {
    if (++w.slot >= (int)p.buckets_per_scope) return false;
    const uint32_t b = __ldg(p.scope + (size_t)scope * p.buckets_per_scope + w.slot);
    w.off = 0;
    if (b == BATTN_EMPTY) {
      w.count = 0;
      continue;
    }
    w.start = __ldg(p.bucket_start + b);
    w.count = __ldg(p.bucket_count + b);
  }
  return true;
}
/* valid key rows of the walk's current tile, 1 .. BN (fewer at a bucket's end) */
template <int BN> static __device__ __forceinline__ int walk_rows(const tile_walk &w) {
  return (int)min((uint32_t)BN, w.count - w.off);
}
#endif /* __CUDACC__ */

#endif
