/*
 * attn_internal.h - private to kernels/: the attention variants that live outside attn.cu, for its variant
 * table. v6 (attn_wgmma.cu) is built in its own library with the sm_90a target added.
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
 * at D = 64/128, v5 at D = 16/32; v10: v9's kernel at every head dim; v11: v10 without the ping-pong.
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

#endif
