/*
 * spconv_stub.c - the GPU entry points of the submanifold convolution in a CPU-only build: every one returns
 * HX_ENODEV. The variants come from the one list in spconv_internal.h, so the table spconv.c builds lists the
 * same names as a CUDA build.
 */
#include "nets/nets.h"
#include "nets/spconv_internal.h"

hx_status spc_map_gpu(spc_map *m, int32_t *d_nbr, int32_t *d_rule, void *d_scratch, size_t *scratch_bytes,
                      const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, uint32_t k, int count_pairs,
                      struct CUstream_st *stream, hx_err *err) {
  (void)m, (void)d_nbr, (void)d_rule, (void)d_scratch, (void)d_grid, (void)d_batch, (void)n, (void)k;
  (void)count_pairs, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "spc_map_gpu: this build has no CUDA");
}

hx_status spc_map_pair_gpu(spc_map *m5, int32_t *d_nbr5, spc_map *m3, int32_t *d_nbr3, void *d_scratch,
                           size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n,
                           struct CUstream_st *stream, hx_err *err) {
  (void)m5, (void)d_nbr5, (void)m3, (void)d_nbr3, (void)d_scratch, (void)d_grid, (void)d_batch, (void)n, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "spc_map_pair_gpu: this build has no CUDA");
}

hx_status spc_mask_order_gpu(uint32_t *d_order, const spc_map *m, void *d_scratch, size_t *scratch_bytes,
                             struct CUstream_st *stream, hx_err *err) {
  (void)d_order, (void)m, (void)d_scratch, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "spc_mask_order_gpu: this build has no CUDA");
}

hx_status spc_mask_tiles_gpu(uint32_t *d_order, uint32_t *d_tiles, uint32_t tile_rows, const spc_map *m,
                             void *d_scratch, size_t *scratch_bytes, struct CUstream_st *stream, hx_err *err) {
  (void)d_order, (void)d_tiles, (void)tile_rows, (void)m, (void)d_scratch, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "spc_mask_tiles_gpu: this build has no CUDA");
}

hx_status spc_weights_upload(spc_weights *w, const float *h_w, const float *h_b, size_t in, size_t out, uint32_t K,
                             net_dtype dt, const net_alloc *alloc, hx_err *err) {
  (void)h_w, (void)h_b, (void)in, (void)out, (void)K, (void)dt, (void)alloc;
  if (w) memset(w, 0, sizeof *w);
  return hx_errf(err, HX_ENODEV, "spc_weights_upload: this build has no CUDA");
}

void spc_weights_free(spc_weights *w) {
  if (w) memset(w, 0, sizeof *w);
}

hx_status spc_ctx_create(spc_ctx **out, hx_err *err) {
  if (out) *out = NULL;
  return hx_errf(err, HX_ENODEV, "spc_ctx_create: this build has no CUDA");
}

void spc_ctx_destroy(spc_ctx *c) { (void)c; }

#define SPC_STUB_(id_, name_, fn_, rule_, order_)                                                                   \
  hx_status fn_(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,          \
                size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, struct CUstream_st *stream, hx_err *err) { \
    (void)d_y, (void)d_x, (void)w, (void)m, (void)d_scratch, (void)ctx, (void)dt, (void)stream;               \
    if (scratch_bytes) *scratch_bytes = 0;                                                                    \
    return hx_errf(err, HX_ENODEV, "submanifold convolution %s: this build has no CUDA", name_);              \
  }
SPC_VARIANT_LIST(SPC_STUB_)
#undef SPC_STUB_

hx_status spc_launch_plan(int *tile_rows, int *stages, const spc_map *m, const spc_weights *w, int deep,
                          int smem_optin, hx_err *err) {
  (void)m, (void)w, (void)deep, (void)smem_optin;
  if (tile_rows) *tile_rows = 0;
  if (stages) *stages = 0;
  return hx_errf(err, HX_ENODEV, "spc_launch_plan: this build has no CUDA");
}

hx_status spc_v5_halo_rows(uint32_t *rows, const spc_weights *w, int smem_optin, int smem_sm, hx_err *err) {
  (void)w, (void)smem_optin, (void)smem_sm;
  if (rows) *rows = 0;
  return hx_errf(err, HX_ENODEV, "spc_v5_halo_rows: this build has no CUDA");
}

hx_status spc_stem_gpu(void *d_y, const void *d_x, const spc_weights *w, const float *d_scale, const float *d_shift,
                       nl_act act, spc_map *m5, spc_map *m3, int32_t *d_nbr3, void *d_scratch, size_t *scratch_bytes,
                       const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, int count_pairs, net_dtype dt,
                       struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)w, (void)d_scale, (void)d_shift, (void)act, (void)m5, (void)m3, (void)d_nbr3;
  (void)d_scratch, (void)d_grid, (void)d_batch, (void)n, (void)count_pairs, (void)dt, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "spc_stem_gpu: this build has no CUDA");
}
