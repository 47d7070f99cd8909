/*
 * psh_stub.c - the GPU entry points of PSH bucketing and in-bucket pooling in a CPU-only build: the variant
 * tables of psh.cu / bpool.cu expanded from the same list (variants_internal.h), each entry returning HX_ENODEV,
 * so the CLI, sweep and tests can list them and skip.
 */
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/variants_internal.h"

static hx_status psh_no_gpu(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                            const psh_params *p, void *stream, hx_err *err) {
  (void)d_scratch, (void)out, (void)in, (void)p, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}

/* the CUDA build's variants (the one list, variants_internal.h), each returning HX_ENODEV here */
#define PSH_ROW(id, name, summary, fn) {id, name, summary, psh_no_gpu},
static const psh_variant psh_table[] = {PSH_VARIANT_LIST(PSH_ROW)};
#undef PSH_ROW

hx_status psh_run_v2(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *p,
                     void *stream, hx_err *err) {
  return psh_no_gpu(d_scratch, scratch_bytes, out, in, p, stream, err);
}

const psh_variant *psh_variants(size_t *count) {
  if (count) *count = sizeof psh_table / sizeof psh_table[0];
  return psh_table;
}

const psh_variant *psh_floor_variant(void) {
  static const psh_variant floor = {PSH_FLOOR_ID, "floor", "not a PSH: v10's data-movement floor (needs CUDA)", psh_no_gpu};
  return &floor;
}

const psh_variant *psh_variant_find(const char *name) {
  for (size_t i = 0; i < sizeof psh_table / sizeof psh_table[0]; i++)
    if (name && strcmp(psh_table[i].name, name) == 0) return &psh_table[i];
  return NULL;
}

hx_status psh_variant_best(const psh_variant **out, uint32_t n, uint32_t nclouds, const psh_params *p, hx_err *err) {
  (void)n, (void)nclouds, (void)p;
  *out = NULL;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA (the best variant depends on the device)");
}

hx_status psh_pad_gpu(uint32_t *d_perm_pad, uint32_t *d_slot_pad, const uint32_t *d_bucket, const uint32_t *d_offset,
                      const uint32_t *d_bucket_start, const uint32_t *d_bucket_count, uint32_t nbuckets, uint32_t n,
                      uint32_t cap, const uint32_t *d_perm, void *stream, hx_err *err) {
  (void)d_perm_pad, (void)d_slot_pad, (void)d_bucket, (void)d_offset, (void)d_bucket_start, (void)d_bucket_count;
  (void)nbuckets, (void)n, (void)cap, (void)d_perm, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}

hx_status psh_gather_rows_gpu(void *d_out, const void *d_in, const uint32_t *d_src, uint32_t rows, size_t row_bytes,
                              void *stream, hx_err *err) {
  (void)d_out, (void)d_in, (void)d_src, (void)rows, (void)row_bytes, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}

static hx_status bpool_assign_no_gpu(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, const float *d_xyz_in,
                                     uint32_t n_rows, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                                     const uint32_t *d_out_start, uint32_t nbuckets, uint32_t rho, void *stream,
                                     hx_err *err) {
  (void)d_members, (void)d_parent, (void)d_xyz_out, (void)d_xyz_in, (void)n_rows, (void)d_bucket_start;
  (void)d_bucket_count, (void)d_out_start, (void)nbuckets, (void)rho, (void)stream;
  return hx_errf(err, HX_ENODEV, "bpool: this build has no CUDA");
}

static hx_status bpool_reduce_no_gpu(void *d_feat_out, const void *d_feat_in, const uint32_t *d_members,
                                     uint32_t n_out, uint32_t rho, uint32_t channels, psh_dtype dt, bpool_op op,
                                     void *stream, hx_err *err) {
  (void)d_feat_out, (void)d_feat_in, (void)d_members, (void)n_out, (void)rho, (void)channels, (void)dt, (void)op;
  (void)stream;
  return hx_errf(err, HX_ENODEV, "bpool: this build has no CUDA");
}

static hx_status bpool_unpool_no_gpu(void *d_up, const void *d_down, const void *d_residual, const uint32_t *d_parent,
                                     uint32_t n_rows, uint32_t channels, psh_dtype dt, void *stream, hx_err *err) {
  (void)d_up, (void)d_down, (void)d_residual, (void)d_parent, (void)n_rows, (void)channels, (void)dt, (void)stream;
  return hx_errf(err, HX_ENODEV, "bpool: this build has no CUDA");
}

/* the CUDA build's pooling variants (the one list), each returning HX_ENODEV here; no fused pool or assign_plan */
#define BPOOL_ROW(id, name, summary, assign, reduce, unpool, pool, assign_plan) \
  {id, name, summary, bpool_assign_no_gpu, bpool_reduce_no_gpu, bpool_unpool_no_gpu, NULL, NULL},
static const bpool_variant bpool_table[] = {BPOOL_VARIANT_LIST(BPOOL_ROW)};
#undef BPOOL_ROW

const bpool_variant *bpool_variants(size_t *count) {
  if (count) *count = sizeof bpool_table / sizeof bpool_table[0];
  return bpool_table;
}

const bpool_variant *bpool_variant_find(const char *name) {
  for (size_t i = 0; i < sizeof bpool_table / sizeof bpool_table[0]; i++)
    if (name && strcmp(bpool_table[i].name, name) == 0) return &bpool_table[i];
  return NULL;
}

const bpool_variant *bpool_variant_best(void) { return bpool_variant_find("v9"); }

hx_status bpool_pool(const bpool_variant *v, const bpool_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                     hx_err *err) {
  (void)v, (void)p, (void)d_scratch, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "bpool: this build has no CUDA");
}

hx_status bpool_plan_gpu(void *d_scratch, size_t *scratch_bytes, uint32_t *d_out_start, uint32_t *d_out_count,
                         const uint32_t *d_bucket_count, uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err) {
  (void)d_scratch, (void)d_out_start, (void)d_out_count, (void)d_bucket_count, (void)nbuckets, (void)rho, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "bpool: this build has no CUDA");
}

hx_status psh_gpu_create(psh_gpu **out, const psh_in *h_in, const psh_params *p, uint32_t channels, hx_err *err) {
  (void)h_in, (void)p, (void)channels;
  *out = NULL;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
void psh_gpu_free(psh_gpu *g) { (void)g; }
size_t psh_gpu_device_bytes(const psh_gpu *g) {
  (void)g;
  return 0;
}
hx_status psh_gpu_run(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err) {
  (void)g, (void)v, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_run_graph(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err) {
  (void)g, (void)v, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_unpool_xyz(psh_gpu *g, const bpool_variant *v, float *h_up, hx_err *err) {
  (void)g, (void)v, (void)h_up;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_phase_trace(psh_gpu *g, const psh_variant *v, double phase_us[6], hx_err *err) {
  (void)g, (void)v, (void)phase_us;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_block_trace(psh_gpu *g, const psh_variant *v, double st[16][4], uint32_t *nblocks, hx_err *err) {
  (void)g, (void)v, (void)st, (void)nblocks;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_scatter_feat(psh_gpu *g, psh_dtype dt, void *stream, hx_err *err) {
  (void)g, (void)dt, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_pool_plan(psh_gpu *g, uint32_t rho, uint32_t *n_out, void *stream, hx_err *err) {
  (void)g, (void)rho, (void)n_out, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_pool(psh_gpu *g, const bpool_variant *v, bpool_op op, psh_dtype dt, void *stream, hx_err *err) {
  (void)g, (void)v, (void)op, (void)dt, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
hx_status psh_gpu_poison(psh_gpu *g, void *stream, hx_err *err) {
  (void)g, (void)stream;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}

hx_status psh_gpu_download(psh_gpu *g, const psh_out *h_out, uint32_t *members, uint32_t *parent, float *xyz_out,
                           uint32_t *n_out, hx_err *err) {
  (void)g, (void)h_out, (void)members, (void)parent, (void)xyz_out, (void)n_out;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}

hx_status psh_gpu_download_feat(psh_gpu *g, psh_dtype dt, void *h_packed, void *h_pooled, hx_err *err) {
  (void)g, (void)dt, (void)h_packed, (void)h_pooled;
  return hx_errf(err, HX_ENODEV, "psh: this build has no CUDA");
}
