/*
 * layers.c - the plain C references of the dense layers (the nl_ part of nets.h) and the activation dtype
 * helpers. Every GPU layer in layers.cu is checked against these (tests/nets/test_layers_gpu.c).
 *
 * Invariants: inputs and outputs are row-major fp32; reductions (dot products, LayerNorm statistics) are
 * accumulated in double and rounded once to fp32, so a reference is at least as accurate as the fp32-accumulating
 * GPU path it judges. GELU is the exact erf form of torch.nn.GELU(): 0.5 x (1 + erf(x / sqrt 2)). Every routine
 * validates its arguments first and writes nothing when it returns an error.
 */
#include "kernels/kernels.h"
#include "nets/nets_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- activation dtype ------------------------------------------------------------------------------ */

const char *net_dtype_name(net_dtype t) {
  switch (t) {
  case NET_F16: return "fp16";
  case NET_BF16: return "bf16";
  }
  return "?";
}

hx_status net_dtype_parse(const char *name, net_dtype *out, hx_err *err) {
  if (!name || !out) return hx_errf(err, HX_EINVAL, "net_dtype_parse: NULL argument");
  if (strcmp(name, "fp16") == 0 || strcmp(name, "f16") == 0) *out = NET_F16;
  else if (strcmp(name, "bf16") == 0) *out = NET_BF16;
  else return hx_errf(err, HX_EINVAL, "unknown dtype '%s' (fp16, f16, bf16)", name);
  return HX_OK;
}

/* One conversion in the tree: the attention module's (round to nearest even, subnormals, overflow to
 * infinity, NaN kept NaN), reached through the equal-valued enums. */
uint16_t net_from_float(net_dtype t, float x) { return battn_from_float(t == NET_BF16 ? BATTN_BF16 : BATTN_F16, x); }
float net_to_float(net_dtype t, uint16_t h) { return battn_to_float(t == NET_BF16 ? BATTN_BF16 : BATTN_F16, h); }

/* ---- helpers ----------------------------------------------------------------------------------------- */

static float gelu_erf(float x) { return (float)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752440))); }

static float act_apply(nl_act act, float x) { return act == NL_ACT_GELU ? gelu_erf(x) : x; }

static int act_valid(nl_act act) { return act == NL_ACT_NONE || act == NL_ACT_GELU; }

/* ---- Linear ------------------------------------------------------------------------------------------ */

typedef struct lin_job {
  float *y;
  const float *x, *w, *b;
  size_t in, out;
  nl_act act;
  int accumulate;
} lin_job;

/* y[r][o] = act(b[o] + sum over i ascending of x[r][i] w[o][i]) in double. Four outputs at a time, each its own
 * chain of adds in that order (the same bits as one output at a time): one serial chain kept the host at about one
 * multiply-add per add latency, and this reference is the sweep's PTv3 check. */
static void lin_rows(void *ctx, size_t r0, size_t r1) {
  const lin_job *j = ctx;
  const size_t in = j->in;
  for (size_t r = r0; r < r1; ++r) {
    const float *xr = j->x + r * in;
    float *yr = j->y + r * j->out;
    for (size_t o = 0; o < j->out; o += 4) {
      const size_t no = j->out - o < 4 ? j->out - o : 4;
      double s[4];
      for (size_t q = 0; q < 4; ++q) s[q] = j->b && q < no ? (double)j->b[o + q] : 0.0;
      const float *w0 = j->w + o * in, *w1 = no > 1 ? w0 + in : w0, *w2 = no > 2 ? w0 + 2 * in : w0,
                  *w3 = no > 3 ? w0 + 3 * in : w0; /* past out: row o again, its sums unused */
      for (size_t i = 0; i < in; ++i) {
        const double xi = (double)xr[i];
        s[0] += xi * (double)w0[i], s[1] += xi * (double)w1[i], s[2] += xi * (double)w2[i], s[3] += xi * (double)w3[i];
      }
      for (size_t q = 0; q < no; ++q) {
        const float v = act_apply(j->act, (float)s[q]);
        yr[o + q] = j->accumulate ? yr[o + q] + v : v;
      }
    }
  }
}

hx_status nl_linear_cpu(float *y, const float *x, const float *w, const float *b, size_t rows, size_t in,
                        size_t out, nl_act act, int accumulate, hx_err *err) {
  if (in == 0 || out == 0) return hx_errf(err, HX_EINVAL, "nl_linear_cpu: in = %zu, out = %zu (both must be > 0)", in, out);
  if (!act_valid(act)) return hx_errf(err, HX_EINVAL, "nl_linear_cpu: unknown activation %d", (int)act);
  if (rows == 0) return HX_OK;
  if (!y || !x || !w) return hx_errf(err, HX_EINVAL, "nl_linear_cpu: NULL y, x or w");
  lin_job j = {y, x, w, b, in, out, act, accumulate};
  /* rows are independent: split them over the CPUs when the work is worth a thread (~64k multiply-adds) */
  hx_par_for(rows, 1 + 65536 / (in * out), lin_rows, &j);
  return HX_OK;
}

/* ---- LayerNorm ------------------------------------------------------------------------------------- */

/* rows of y; x has x_rows rows, read in order (idx NULL) or x[idx[r]] */
static hx_status layernorm_cpu(float *y, const float *x, const uint32_t *idx, size_t x_rows, const float *g,
                               const float *b, size_t rows, size_t C, float eps, int add, const char *fn, hx_err *err) {
  if (C == 0) return hx_errf(err, HX_EINVAL, "%s: C = 0", fn);
  if (!(eps >= 0.0f) || isinf(eps)) return hx_errf(err, HX_EINVAL, "%s: eps = %g (must be finite, >= 0)", fn, (double)eps);
  if (rows == 0) return HX_OK;
  if (!y || !x || !g || !b) return hx_errf(err, HX_EINVAL, "%s: NULL y, x, g or b", fn);
  const uintptr_t ya = (uintptr_t)y, xa = (uintptr_t)x, ybytes = (uintptr_t)(rows * C * sizeof(float)),
                  xbytes = (uintptr_t)(x_rows * C * sizeof(float));
  if ((add || idx) && ya < xa + xbytes && xa < ya + ybytes) return hx_errf(err, HX_EINVAL, "%s: y overlaps x", fn);
  for (size_t r = 0; idx && r < rows; ++r)
    if (idx[r] >= x_rows)
      return hx_errf(err, HX_EINVAL, "%s: idx[%zu] = %u, x has %zu rows", fn, r, idx[r], x_rows);
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + (idx ? (size_t)idx[r] : r) * C;
    float *yr = y + r * C;
    double s = 0.0, q = 0.0;
    for (size_t c = 0; c < C; ++c) s += (double)xr[c];
    const double mean = s / (double)C;
    for (size_t c = 0; c < C; ++c) q += ((double)xr[c] - mean) * ((double)xr[c] - mean);
    const double rstd = 1.0 / sqrt(q / (double)C + (double)eps); /* biased variance, as torch */
    for (size_t c = 0; c < C; ++c) {
      const double v = ((double)xr[c] - mean) * rstd * (double)g[c] + (double)b[c];
      yr[c] = add ? (float)((double)yr[c] + v) : (float)v;
    }
  }
  return HX_OK;
}

hx_status nl_layernorm_cpu(float *y, const float *x, const float *g, const float *b, size_t rows, size_t C,
                           float eps, hx_err *err) {
  return layernorm_cpu(y, x, NULL, rows, g, b, rows, C, eps, 0, "nl_layernorm_cpu", err);
}

hx_status nl_layernorm_rows_cpu(float *y, const float *x, const uint32_t *idx, size_t x_rows, const float *g,
                                const float *b, size_t rows, size_t C, float eps, hx_err *err) {
  if (rows && !idx) return hx_errf(err, HX_EINVAL, "nl_layernorm_rows_cpu: NULL idx");
  return layernorm_cpu(y, x, idx, x_rows, g, b, rows, C, eps, 0, "nl_layernorm_rows_cpu", err);
}

hx_status nl_layernorm_add_cpu(float *y, const float *x, const float *g, const float *b, size_t rows, size_t C,
                               float eps, hx_err *err) {
  return layernorm_cpu(y, x, NULL, rows, g, b, rows, C, eps, 1, "nl_layernorm_add_cpu", err);
}

/* ---- folded BatchNorm + activation ------------------------------------------------------------------ */

void nl_bn_fold(float *scale, float *shift, const float *gamma, const float *beta, const float *mean,
                const float *var, size_t C, float eps) {
  for (size_t c = 0; c < C; ++c) {
    const double s = (double)gamma[c] / sqrt((double)var[c] + (double)eps);
    scale[c] = (float)s;
    shift[c] = (float)((double)beta[c] - (double)mean[c] * s);
  }
}

hx_status nl_affine_act_cpu(float *y, const float *x, const float *scale, const float *shift, size_t rows, size_t C,
                            nl_act act, hx_err *err) {
  if (C == 0) return hx_errf(err, HX_EINVAL, "nl_affine_act_cpu: C = 0");
  if (!act_valid(act)) return hx_errf(err, HX_EINVAL, "nl_affine_act_cpu: unknown activation %d", (int)act);
  if (rows == 0) return HX_OK;
  if (!y || !x || !scale || !shift) return hx_errf(err, HX_EINVAL, "nl_affine_act_cpu: NULL y, x, scale or shift");
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < C; ++c) y[r * C + c] = act_apply(act, x[r * C + c] * scale[c] + shift[c]);
  return HX_OK;
}

/* ---- MLP (fc1 + GELU or SwiGLU, fc2 + residual) ------------------------------------------------------ */

int nl_mlp_gpu_takes(size_t C, size_t H, nl_mlp_kind kind) {
  if (kind == NL_MLP_GELU) return (C == 32 || C == 64 || C == 128 || C == 256) && H == 4 * C;
  return kind == NL_MLP_SWIGLU && H == 4 * C &&
         (C == 32 || C == 48 || C == 64 || C == 80 || C == 96 || C == 128 || C == 160 || C == 192);
}

hx_status nl_mlp_cpu(float *y, const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
                     size_t rows, size_t C, size_t H, nl_mlp_kind kind, hx_err *err) {
  if (C == 0 || H == 0) return hx_errf(err, HX_EINVAL, "nl_mlp_cpu: C = %zu, H = %zu", C, H);
  if (kind != NL_MLP_GELU && kind != NL_MLP_SWIGLU) return hx_errf(err, HX_EINVAL, "nl_mlp_cpu: unknown kind %d", (int)kind);
  if (rows == 0) return HX_OK;
  if (!y || !x || !w1 || !w2) return hx_errf(err, HX_EINVAL, "nl_mlp_cpu: NULL y, x, w1 or w2");
  const int swi = kind == NL_MLP_SWIGLU;
  float *h = malloc((swi ? 3 : 1) * H * sizeof *h), *h1 = h + H; /* h1: SwiGLU's fc1 row of 2H */
  if (!h) return hx_errf(err, HX_ENOMEM, "nl_mlp_cpu: %zu floats", (swi ? 3 : 1) * H);
  hx_status st = HX_OK;
  for (size_t r = 0; r < rows && st == HX_OK; ++r) {
    if (swi) {
      st = nl_linear_cpu(h1, x + r * C, w1, b1, 1, C, 2 * H, NL_ACT_NONE, 0, err);
      if (st == HX_OK) st = nl_swiglu_cpu(h, h1, 1, H, err);
    } else {
      st = nl_linear_cpu(h, x + r * C, w1, b1, 1, C, H, NL_ACT_GELU, 0, err);
    }
    if (st == HX_OK) st = nl_linear_cpu(y + r * C, h, w2, b2, 1, H, C, NL_ACT_NONE, 1, err);
  }
  free(h);
  return st;
}

hx_status nl_ln_mlp_cpu(float *y, const float *g, const float *beta, float eps, const float *w1, const float *b1,
                        const float *w2, const float *b2, size_t rows, size_t C, size_t H, nl_mlp_kind kind,
                        hx_err *err) {
  if (C == 0 || H == 0) return hx_errf(err, HX_EINVAL, "nl_ln_mlp_cpu: C = %zu, H = %zu", C, H);
  if (rows == 0) return HX_OK;
  if (!y || !g || !beta) return hx_errf(err, HX_EINVAL, "nl_ln_mlp_cpu: NULL y, gamma or beta");
  float *t = malloc(rows * C * sizeof *t);
  if (!t) return hx_errf(err, HX_ENOMEM, "nl_ln_mlp_cpu: %zu x %zu floats", rows, C);
  hx_status st = nl_layernorm_cpu(t, y, g, beta, rows, C, eps, err);
  if (st == HX_OK) st = nl_mlp_cpu(y, t, w1, b1, w2, b2, rows, C, H, kind, err);
  free(t);
  return st;
}

/* ---- LayerNorm + Linear ---------------------------------------------------------------------------- */

int nl_ln_linear_gpu_takes(size_t C, size_t N) { return (C == 32 || C == 48 || C == 64 || C == 96) && N == 3 * C; }

hx_status nl_ln_linear_cpu(float *y, const float *x, const uint32_t *idx, size_t x_rows, const float *g,
                           const float *beta, float eps, const float *w, const float *b, size_t rows, size_t C, size_t N,
                           hx_err *err) {
  if (C == 0 || N == 0) return hx_errf(err, HX_EINVAL, "nl_ln_linear_cpu: C = %zu, N = %zu", C, N);
  if (rows == 0) return HX_OK;
  if (!y || !w) return hx_errf(err, HX_EINVAL, "nl_ln_linear_cpu: NULL y or w");
  float *t = malloc(rows * C * sizeof *t);
  if (!t) return hx_errf(err, HX_ENOMEM, "nl_ln_linear_cpu: %zu x %zu floats", rows, C);
  hx_status st = HX_OK;
  if (idx)
    st = nl_layernorm_rows_cpu(t, x, idx, x_rows, g, beta, rows, C, eps, err);
  else if (x_rows < rows)
    st = hx_errf(err, HX_EINVAL, "nl_ln_linear_cpu: %zu rows in order from x's %zu", rows, x_rows);
  else
    st = nl_layernorm_cpu(t, x, g, beta, rows, C, eps, err);
  if (st == HX_OK) st = nl_linear_cpu(y, t, w, b, rows, C, N, NL_ACT_NONE, 0, err);
  free(t);
  return st;
}

/* ---- Linear + LayerNorm + residual ------------------------------------------------------------------ */

int nl_linear_ln_add_gpu_takes(size_t C) { return C == 32 || C == 64; }

hx_status nl_linear_ln_add_cpu(float *y, const float *x, const float *w, const float *b, const float *g,
                               const float *beta, float eps, size_t rows, size_t C, hx_err *err) {
  if (C == 0) return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_cpu: C = 0");
  if (rows == 0) return HX_OK;
  if (!y || !x || !w) return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_cpu: NULL y, x or w");
  float *t = malloc(rows * C * sizeof *t);
  if (!t) return hx_errf(err, HX_ENOMEM, "nl_linear_ln_add_cpu: %zu x %zu floats", rows, C);
  hx_status st = nl_linear_cpu(t, x, w, b, rows, C, C, NL_ACT_NONE, 0, err);
  if (st == HX_OK) st = nl_layernorm_add_cpu(y, t, g, beta, rows, C, eps, err);
  free(t);
  return st;
}

/* ---- fc1 + SwiGLU -------------------------------------------------------------------------------- */

int nl_linear_swiglu_gpu_takes(size_t C, size_t H) {
  return (C == 32 || C == 64 || C == 96 || (C >= 128 && C % 16 == 0)) && H >= 64 && H % 64 == 0;
}

hx_status nl_linear_swiglu_cpu(float *y, const float *x, const float *w1, const float *b1, size_t rows, size_t C,
                               size_t H, hx_err *err) {
  if (C == 0 || H == 0) return hx_errf(err, HX_EINVAL, "nl_linear_swiglu_cpu: C = %zu, H = %zu", C, H);
  if (rows == 0) return HX_OK;
  if (!y || !x || !w1) return hx_errf(err, HX_EINVAL, "nl_linear_swiglu_cpu: NULL y, x or w1");
  float *h = malloc(2 * H * sizeof *h);
  if (!h) return hx_errf(err, HX_ENOMEM, "nl_linear_swiglu_cpu: %zu floats", 2 * H);
  hx_status st = HX_OK;
  for (size_t r = 0; r < rows && st == HX_OK; ++r) {
    st = nl_linear_cpu(h, x + r * C, w1, b1, 1, C, 2 * H, NL_ACT_NONE, 0, err);
    if (st == HX_OK) st = nl_swiglu_cpu(y + r * H, h, 1, H, err);
  }
  free(h);
  return st;
}

/* ---- SwiGLU ---------------------------------------------------------------------------------------- */

hx_status nl_swiglu_cpu(float *y, const float *x, size_t rows, size_t H, hx_err *err) {
  if (H == 0) return hx_errf(err, HX_EINVAL, "nl_swiglu_cpu: H = 0");
  if (rows == 0) return HX_OK;
  if (!y || !x) return hx_errf(err, HX_EINVAL, "nl_swiglu_cpu: NULL y or x");
  for (size_t r = 0; r < rows; ++r) {
    const float *a = x + r * 2 * H, *g = a + H;
    for (size_t h = 0; h < H; ++h) y[r * H + h] = a[h] / (1.0f + expf(-a[h])) * g[h]; /* silu(a) * b */
  }
  return HX_OK;
}

/* ---- residual add ------------------------------------------------------------------------------------ */

hx_status nl_add_cpu(float *y, const float *x, size_t n, hx_err *err) {
  if (n == 0) return HX_OK;
  if (!y || !x) return hx_errf(err, HX_EINVAL, "nl_add_cpu: NULL y or x");
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
  return HX_OK;
}

hx_status nl_gather_add_cpu(float *y, const float *x, const uint32_t *idx, const float *u, size_t rows, size_t C,
                            hx_err *err) {
  if (C == 0) return hx_errf(err, HX_EINVAL, "nl_gather_add_cpu: C = 0");
  if (rows == 0) return HX_OK;
  if (!y || !x || !idx || !u) return hx_errf(err, HX_EINVAL, "nl_gather_add_cpu: NULL y, x, idx or u");
  if (y == x || y == u) return hx_errf(err, HX_EINVAL, "nl_gather_add_cpu: y is x or u (it cannot run in place)");
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + (size_t)idx[r] * C, *ur = u + r * C;
    float *yr = y + r * C;
    for (size_t c = 0; c < C; ++c) yr[c] = xr[c] + ur[c];
  }
  return HX_OK;
}

/* ---- segment max --------------------------------------------------------------------------------- */

/* An empty segment gives 0 (torch_scatter's segment_csr "max" fills empty segments with 0); a NaN in a
 * segment gives NaN (propagated, like torch.max). idx NULL reads x[j] directly. */
hx_status nl_segment_max_cpu(float *y, const float *x, const uint32_t *idx, const uint32_t *ptr, size_t segments,
                             size_t C, hx_err *err) {
  if (C == 0) return hx_errf(err, HX_EINVAL, "nl_segment_max_cpu: C = 0");
  if (segments == 0) return HX_OK;
  if (!y || !ptr) return hx_errf(err, HX_EINVAL, "nl_segment_max_cpu: NULL y or ptr");
  for (size_t s = 0; s < segments; ++s)
    if (ptr[s + 1] < ptr[s])
      return hx_errf(err, HX_EINVAL, "nl_segment_max_cpu: ptr decreases at segment %zu (%u > %u)", s, ptr[s],
                     ptr[s + 1]);
  if (ptr[segments] > ptr[0] && !x) return hx_errf(err, HX_EINVAL, "nl_segment_max_cpu: NULL x");
  for (size_t s = 0; s < segments; ++s) {
    float *ys = y + s * C;
    if (ptr[s] == ptr[s + 1]) {
      for (size_t c = 0; c < C; ++c) ys[c] = 0.0f;
      continue;
    }
    for (uint32_t j = ptr[s]; j < ptr[s + 1]; ++j) {
      const float *xr = x + (size_t)(idx ? idx[j] : j) * C;
      for (size_t c = 0; c < C; ++c) /* the first value, then any larger one or a NaN; a NaN stays */
        if (j == ptr[s] || (!isnan(ys[c]) && (xr[c] > ys[c] || isnan(xr[c])))) ys[c] = xr[c];
    }
  }
  return HX_OK;
}

hx_status nl_windows_cpu(uint32_t *start, uint32_t *count, const uint32_t *off, uint32_t B, uint32_t nb, uint32_t S,
                         hx_err *err) {
  if (!start || !count || !off) return hx_errf(err, HX_EINVAL, "nl_windows_cpu: NULL argument");
  if (S == 0 || nb == 0) return hx_errf(err, HX_EINVAL, "nl_windows_cpu: %u windows of %u rows", nb, S);
  if ((uint64_t)B * nb >= UINT32_MAX) return hx_errf(err, HX_EINVAL, "nl_windows_cpu: %u x %u windows", B, nb);
  for (uint32_t c = 0; c < B; ++c) { /* every cloud checked before anything is written */
    if (off[c + 1] < off[c])
      return hx_errf(err, HX_EINVAL, "nl_windows_cpu: offsets decrease at cloud %u (%u > %u)", c, off[c], off[c + 1]);
    if ((uint64_t)off[c + 1] - off[c] > (uint64_t)nb * S)
      return hx_errf(err, HX_EINVAL, "nl_windows_cpu: cloud %u has %u rows, more than %u windows of %u", c,
                     off[c + 1] - off[c], nb, S);
  }
  for (uint32_t c = 0; c < B; ++c)
    for (uint32_t w = 0; w < nb; ++w) {
      const uint64_t s = (uint64_t)off[c] + (uint64_t)w * S, e = s + S;
      const uint32_t s1 = s < off[c + 1] ? (uint32_t)s : off[c + 1], e1 = e < off[c + 1] ? (uint32_t)e : off[c + 1];
      start[(size_t)c * nb + w] = s1, count[(size_t)c * nb + w] = e1 - s1;
    }
  start[(size_t)B * nb] = off[B], count[(size_t)B * nb] = 0;
  return HX_OK;
}
