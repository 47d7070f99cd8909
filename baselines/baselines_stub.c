/*
 * baselines_stub.c - the GPU entry points of baselines.h in a CPU-only build: every launcher returns
 * HX_ENODEV, and the variant tables are the CUDA build's, expanded from the same list (variants_internal.h), with
 * launchers that return HX_ENODEV, so callers and tests take their "no GPU" path.
 */
#include "baselines/baselines.h"
#include "baselines/variants_internal.h"

hx_status sfc_grid_gpu(uint32_t *d_grid, uint32_t *d_batch, uint32_t *d_max_coord, void *d_scratch,
                       size_t *scratch_bytes, const float *d_xyz, const size_t *offset, uint32_t B,
                       double grid_size, struct CUstream_st *stream) {
  (void)d_grid, (void)d_batch, (void)d_max_coord, (void)d_scratch, (void)scratch_bytes, (void)d_xyz;
  (void)offset, (void)B, (void)grid_size, (void)stream;
  return HX_ENODEV;
}
hx_status sfc_encode_gpu(uint64_t *d_code, const uint32_t *d_grid, const uint32_t *d_batch, size_t n,
                         int depth, const sfc_order *orders, int R, struct CUstream_st *stream) {
  (void)d_code, (void)d_grid, (void)d_batch, (void)n, (void)depth, (void)orders, (void)R, (void)stream;
  return HX_ENODEV;
}
hx_status sfc_sort_gpu(uint32_t *d_order, void *d_scratch, size_t *scratch_bytes, const uint64_t *d_code,
                       size_t n, int R, int key_bits, struct CUstream_st *stream) {
  (void)d_order, (void)d_scratch, (void)scratch_bytes, (void)d_code, (void)n, (void)R, (void)key_bits;
  (void)stream;
  return HX_ENODEV;
}
hx_status sfc_inverse_gpu(uint32_t *d_inverse, const uint32_t *d_order, size_t n, int R,
                          struct CUstream_st *stream) {
  (void)d_inverse, (void)d_order, (void)n, (void)R, (void)stream;
  return HX_ENODEV;
}
hx_status sfc_grid_host_gpu(uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                            uint32_t B, double grid_size, hx_err *err) {
  (void)grid, (void)max_coord, (void)xyz, (void)offset, (void)B, (void)grid_size;
  return hx_errf(err, HX_ENODEV, "this build has no CUDA");
}
hx_status sfc_encode_host_gpu(uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n, int depth,
                              const sfc_order *orders, int R, hx_err *err) {
  (void)code, (void)grid, (void)batch, (void)n, (void)depth, (void)orders, (void)R;
  return hx_errf(err, HX_ENODEV, "this build has no CUDA");
}
hx_status sfc_dedup_gpu(uint32_t *d_keep, size_t *offset_out, size_t *dropped, void *d_scratch,
                        size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch,
                        const size_t *offset, uint32_t B, int depth, struct CUstream_st *stream) {
  (void)d_keep, (void)offset_out, (void)dropped, (void)d_scratch, (void)scratch_bytes, (void)d_grid;
  (void)d_batch, (void)offset, (void)B, (void)depth, (void)stream;
  return HX_ENODEV;
}
hx_status sfc_dedup_host_gpu(uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                             const size_t *offset, uint32_t B, int depth, hx_err *err) {
  (void)keep, (void)offset_out, (void)dropped, (void)grid, (void)offset, (void)B, (void)depth;
  return hx_errf(err, HX_ENODEV, "this build has no CUDA");
}
static hx_status serial_no_gpu(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a,
                               struct CUstream_st *stream) {
  (void)d_scratch, (void)a, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return HX_ENODEV;
}
/* the CUDA build's variants (the one list, variants_internal.h), each returning HX_ENODEV here */
#define SFC_ROW(id, name, fn) {id, name, serial_no_gpu},
static const sfc_serial_variant sfc_serial_table[] = {SFC_SERIAL_VARIANT_LIST(SFC_ROW)};
#undef SFC_ROW
int sfc_serial_variant_count(void) { return (int)(sizeof sfc_serial_table / sizeof sfc_serial_table[0]); }
const sfc_serial_variant *sfc_serial_variant_get(int i) {
  return i >= 0 && i < sfc_serial_variant_count() ? &sfc_serial_table[i] : NULL;
}
const sfc_serial_variant *sfc_serial_variant_best(void) {
  for (int i = 0; i < sfc_serial_variant_count(); i++)
    if (sfc_serial_table[i].id == SFC_SERIAL_BEST_ID) return &sfc_serial_table[i];
  return NULL;
}
hx_status shuf_padding_gpu(uint32_t *d_pad, uint32_t *d_unpad, int32_t *d_cu_seqlens, const size_t *offset,
                           uint32_t B, uint32_t K, struct CUstream_st *stream) {
  (void)d_pad, (void)d_unpad, (void)d_cu_seqlens, (void)offset, (void)B, (void)K, (void)stream;
  return HX_ENODEV;
}
hx_status shuf_compose_gpu(uint32_t *d_order_p, uint32_t *d_inverse_p, const uint32_t *d_order_row,
                           const uint32_t *d_inverse_row, const uint32_t *d_pad, const uint32_t *d_unpad,
                           size_t n, size_t sum_p, struct CUstream_st *stream) {
  (void)d_order_p, (void)d_inverse_p, (void)d_order_row, (void)d_inverse_row, (void)d_pad, (void)d_unpad;
  (void)n, (void)sum_p, (void)stream;
  return HX_ENODEV;
}
static hx_status gather_no_gpu(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                               shuf_dtype dt, struct CUstream_st *stream) {
  (void)d_out, (void)d_in, (void)d_idx, (void)rows, (void)width, (void)dt, (void)stream;
  return HX_ENODEV;
}
#define SHUF_ROW(id, name, fn) {id, name, gather_no_gpu},
static const shuf_gather_variant shuf_gather_table[] = {SHUF_GATHER_VARIANT_LIST(SHUF_ROW)};
#undef SHUF_ROW
int shuf_gather_variant_count(void) { return (int)(sizeof shuf_gather_table / sizeof shuf_gather_table[0]); }
const shuf_gather_variant *shuf_gather_variant_get(int i) {
  return i >= 0 && i < shuf_gather_variant_count() ? &shuf_gather_table[i] : NULL;
}
const shuf_gather_variant *shuf_gather_variant_best(size_t width) {
  const int id = shuf_gather_best_id(width);
  for (int i = 0; i < shuf_gather_variant_count(); i++)
    if (shuf_gather_table[i].id == id) return &shuf_gather_table[i];
  return NULL;
}
hx_status spool_gpu(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                    struct CUstream_st *stream) {
  (void)out, (void)d_scratch, (void)scratch_bytes, (void)in, (void)stream;
  return HX_ENODEV;
}
hx_status spool_gpu_sized(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in, size_t n_out,
                          struct CUstream_st *stream) {
  (void)out, (void)d_scratch, (void)scratch_bytes, (void)in, (void)n_out, (void)stream;
  return HX_ENODEV;
}
