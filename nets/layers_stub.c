/*
 * layers_stub.c - the GPU dense layers in a build without CUDA: every entry point returns HX_ENODEV with a
 * sentence saying so; nl_blas_destroy accepts the NULL that nl_blas_create leaves.
 */
#include "nets/nets.h"

#define NL_NODEV(what) hx_errf(err, HX_ENODEV, "%s: built without CUDA", what)

hx_status nl_blas_create(nl_blas **out, int pick, hx_err *err) {
  (void)pick;
  if (out) *out = NULL;
  return NL_NODEV("nl_blas_create");
}

void nl_blas_destroy(nl_blas *b) { (void)b; }

void nl_blas_stats_get(const nl_blas *b, nl_blas_stats *out) {
  (void)b;
  if (out) *out = (nl_blas_stats){0, 0, 0, 0.0, 0.0};
}

hx_status nl_linear_gpu(nl_blas *blas, void *d_y, const void *d_x, const void *d_w, const void *d_b, size_t rows,
                        size_t in, size_t out, nl_act act, int accumulate, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err) {
  (void)blas, (void)d_y, (void)d_x, (void)d_w, (void)d_b, (void)rows, (void)in, (void)out, (void)act;
  (void)accumulate, (void)dt, (void)stream;
  return NL_NODEV("nl_linear_gpu");
}

hx_status nl_linear_ld_gpu(nl_blas *blas, void *d_y, const void *d_x, size_t ldx, const void *d_w, const void *d_b,
                           size_t rows, size_t in, size_t out, nl_act act, int accumulate, net_dtype dt,
                           struct CUstream_st *stream, hx_err *err) {
  (void)blas, (void)d_y, (void)d_x, (void)ldx, (void)d_w, (void)d_b, (void)rows, (void)in, (void)out, (void)act;
  (void)accumulate, (void)dt, (void)stream;
  return NL_NODEV("nl_linear_gpu");
}

hx_status nl_layernorm_gpu(void *d_y, const void *d_x, const float *d_g, const float *d_b, size_t rows, size_t C,
                           float eps, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_g, (void)d_b, (void)rows, (void)C, (void)eps, (void)dt, (void)stream;
  return NL_NODEV("nl_layernorm_gpu");
}

hx_status nl_layernorm_rows_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t x_rows, const float *d_g,
                                const float *d_b, size_t rows, size_t C, float eps, net_dtype dt,
                                struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_idx, (void)x_rows, (void)d_g, (void)d_b, (void)rows, (void)C, (void)eps, (void)dt;
  (void)stream;
  return NL_NODEV("nl_layernorm_rows_gpu");
}

hx_status nl_layernorm_add_gpu(void *d_y, const void *d_x, const float *d_g, const float *d_b, size_t rows, size_t C,
                               float eps, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_g, (void)d_b, (void)rows, (void)C, (void)eps, (void)dt, (void)stream;
  return NL_NODEV("nl_layernorm_add_gpu");
}

hx_status nl_affine_act_gpu(void *d_y, const void *d_x, const float *d_scale, const float *d_shift, size_t rows,
                            size_t C, nl_act act, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_scale, (void)d_shift, (void)rows, (void)C, (void)act, (void)dt, (void)stream;
  return NL_NODEV("nl_affine_act_gpu");
}

int nl_linear_swiglu_gpu_runs(size_t C, size_t H) {
  (void)C, (void)H;
  return 0;
}

int nl_mlp_gpu_runs(size_t C, size_t H, nl_mlp_kind kind, int ln) {
  (void)C, (void)H, (void)kind, (void)ln;
  return 0;
}

hx_status nl_mlp_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, const void *d_w2, const void *d_b2,
                     size_t rows, size_t C, size_t H, nl_mlp_kind kind, void *d_scratch, size_t *scratch_bytes,
                     net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_w1, (void)d_b1, (void)d_w2, (void)d_b2, (void)rows, (void)C, (void)H, (void)kind,
      (void)d_scratch, (void)scratch_bytes, (void)dt, (void)stream;
  return NL_NODEV("nl_mlp_gpu");
}

hx_status nl_ln_mlp_gpu(void *d_y, const float *d_g, const float *d_beta, float eps, const void *d_w1, const void *d_b1,
                        const void *d_w2, const void *d_b2, size_t rows, size_t C, size_t H, nl_mlp_kind kind,
                        void *d_scratch, size_t *scratch_bytes, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err) {
  (void)d_y, (void)d_g, (void)d_beta, (void)eps, (void)d_w1, (void)d_b1, (void)d_w2, (void)d_b2, (void)rows, (void)C,
      (void)H, (void)kind, (void)d_scratch, (void)scratch_bytes, (void)dt, (void)stream;
  return NL_NODEV("nl_ln_mlp_gpu");
}

hx_status nl_ln_linear_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t x_rows, const float *d_g,
                           const float *d_beta, float eps, const void *d_w, const void *d_b, size_t rows, size_t C,
                           size_t N, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_idx, (void)x_rows, (void)d_g, (void)d_beta, (void)eps, (void)d_w, (void)d_b,
      (void)rows, (void)C, (void)N, (void)dt, (void)stream;
  return NL_NODEV("nl_ln_linear_gpu");
}

hx_status nl_linear_ln_add_gpu(void *d_y, const void *d_x, const void *d_w, const void *d_b, const float *d_g,
                               const float *d_beta, float eps, size_t rows, size_t C, net_dtype dt,
                               struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_w, (void)d_b, (void)d_g, (void)d_beta, (void)eps, (void)rows, (void)C, (void)dt,
      (void)stream;
  return NL_NODEV("nl_linear_ln_add_gpu");
}

hx_status nl_swiglu_gpu(void *d_y, const void *d_x, size_t rows, size_t H, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err) {
  (void)d_y, (void)d_x, (void)rows, (void)H, (void)dt, (void)stream;
  return NL_NODEV("nl_swiglu_gpu");
}

hx_status nl_linear_swiglu_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, size_t rows, size_t C,
                               size_t H, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_w1, (void)d_b1, (void)rows, (void)C, (void)H, (void)dt, (void)stream;
  return NL_NODEV("nl_linear_swiglu_gpu");
}

hx_status nl_add_gpu(void *d_y, const void *d_x, size_t n, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)n, (void)dt, (void)stream;
  return NL_NODEV("nl_add_gpu");
}

hx_status nl_gather_rows_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t rows, size_t C, net_dtype dt,
                             struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_idx, (void)rows, (void)C, (void)dt, (void)stream;
  return NL_NODEV("nl_gather_rows_gpu");
}

hx_status nl_gather_add_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, const void *d_u, size_t rows, size_t C,
                            net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_idx, (void)d_u, (void)rows, (void)C, (void)dt, (void)stream;
  return NL_NODEV("nl_gather_add_gpu");
}

hx_status nl_from_f32_gpu(void *d_y, const float *d_x, size_t n, net_dtype dt, struct CUstream_st *stream,
                          hx_err *err) {
  (void)d_y, (void)d_x, (void)n, (void)dt, (void)stream;
  return NL_NODEV("nl_from_f32_gpu");
}

hx_status nl_to_f32_gpu(float *d_y, const void *d_x, size_t n, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)n, (void)dt, (void)stream;
  return NL_NODEV("nl_to_f32_gpu");
}

hx_status nl_segment_max_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, const uint32_t *d_ptr,
                             size_t segments, size_t C, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  (void)d_y, (void)d_x, (void)d_idx, (void)d_ptr, (void)segments, (void)C, (void)dt, (void)stream;
  return NL_NODEV("nl_segment_max_gpu");
}

hx_status nl_windows_gpu(uint32_t *d_start, uint32_t *d_count, const uint32_t *d_off, uint32_t B, uint32_t nb,
                         uint32_t S, struct CUstream_st *stream, hx_err *err) {
  (void)d_start, (void)d_count, (void)d_off, (void)B, (void)nb, (void)S, (void)stream;
  return NL_NODEV("nl_windows_gpu");
}
