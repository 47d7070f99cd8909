/*
 * test_layers_gpu.c - every GPU dense layer (nets.h, nl_*_gpu) against its CPU reference in layers.c, in fp16
 * and bf16, on random inputs drawn from a fresh seed each run (printed; NETS_TEST_SEED=<n> repeats a run), with
 * rows 1, 7, 1000, 65537 and row lengths 8 .. 2048 (and 12, which takes the one-value path). Inputs are
 * dtype values, and the reference runs in fp32 on exactly those values. Outputs are poisoned with 0xFF bytes
 * (NaN in fp16, bf16 and fp32) before each call, sit between guard elements that must keep the poison, and
 * every output element must be written. Elementwise ops also run on pointers one element off 16-byte
 * alignment (the scalar path). Exits 77 without a CUDA device.
 *
 * Tolerances (eps = 2^-10 for fp16, 2^-7 for bf16: the spacing of the dtype's values at 1):
 *   linear         |err| <= 4 eps sum_i |x_i w_i| (+ |b|, + |y| when accumulating) + eps |ref|, and with GELU the
 *                  first term times 1.13 (the largest slope of GELU) plus 4.74e-4, the measured largest gap
 *                  between cuBLASLt's tanh GELU and the erf reference (test_layers.c); a hardware tanh of
 *                  relative error 2^-11 adds at most 2^-12 sum|x w|, inside the first term. Also, over all
 *                  checked elements, rms(err) <= eps rms(ref) (+ 4.74e-4 with GELU): output rounding alone gives
 *                  about 0.29 eps rms(ref), so a dropped or doubled term shows there. With small integer inputs
 *                  every sum is exact, and the output must equal the reference bit for bit.
 *   layernorm      |err| <= eps |ref| + 2 |g| C 2^-24 (max|x| / sigma + |xhat|) + 1e-6: fp32 sums of C terms
 *                  (relative error <= C 2^-24) move the mean by max|x| C 2^-24 and the inverse deviation by
 *                  C 2^-24 relative.
 *   mlp            y += fc2(GELU(fc1(x))) against the fp32 erf reference: |err| <= eps sum_h |w2_h h_h| (the hidden
 *                  row's rounding to dtype, as the kernel multiplies it in dtype) + eps |ref| + 2^-20 sum_h |w2_h|
 *                  (|h_h| + 1.13 s_h) (fp32 sums; s_h = sum_c |x_c w1_hc| + |b1_h|) + sum_h |w2_h| (4.74e-4 +
 *                  2^-12 s_h) (the kernel's GELU is the tanh form on tanh.approx: the form's gap to erf, and the
 *                  hardware tanh's 2^-11 relative error times |v| / 2 <= s_h / 2) + 1e-6; SwiGLU (h = silu(a) b,
 *                  |a| <= s_a, |b| <= s_b) the same with 2^-20 sum_h |w2_h| (|h_h| + 2.2 s_a s_b) for the fp32 sums
 *                  (silu's slope <= 1.1) and sum_h |w2_h| 2^-12 s_a s_b for silu's hardware tanh; the guard row past
 *                  y keeps its poison, so no row past `rows` is written.
 *   affine_act, swiglu   |err| <= eps |ref| + 2^-20 (sum of the magnitudes entering the last fp32 operation) + 1e-6.
 *   add, gather, conversions, segment max   exact (bit for bit; any NaN matches any NaN).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "f3d_config.h"
#include "nets/nets.h"

#if F3D_HAVE_CUDA
#include <cuda_runtime.h>
#include "tests/nets/test_select.h"
#include "tests/nets/test_sm90a.h"

#define GELU_TANH_MAX_DIFF 4.74e-4

typedef struct tctx {
  uint64_t seed;
  nl_blas *blas;
  cudaStream_t stream;
  int forced;     /* t->blas forces a candidate of the heuristic's list: a shape whose list is shorter is skipped */
  size_t skipped; /* such shapes (test_linear_candidates) */
} tctx;

static const size_t kRows[] = {1, 7, 1000, 65537};

/* ---- helpers ---------------------------------------------------------------------------------------- */

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  assert_non_null(p);
  return p;
}
static void *dmalloc(size_t bytes) {
  void *p = NULL;
  assert_int_equal(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess);
  return p;
}
static void h2d(void *d, const void *h, size_t bytes) {
  assert_int_equal(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}
static void d2h(void *h, const void *d, size_t bytes) {
  assert_int_equal(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}
static void poison(void *d, size_t bytes) { assert_int_equal(cudaMemset(d, 0xFF, bytes), cudaSuccess); }

static double eps_of(net_dtype dt) { return dt == NET_F16 ? 0x1p-10 : 0x1p-7; }

static int is_nan_bits(net_dtype t, uint16_t h) {
  return t == NET_F16 ? ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0) : ((h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0);
}

static float unit(uint64_t seed, uint64_t stream, uint64_t i) {
  return (float)(2.0 * hx_rng_unit(seed, stream, i) - 1.0); /* [-1, 1) */
}

/* n dtype values offset + scale * U[-1, 1); f (optional) gets them back as fp32. */
static void fill(net_dtype dt, uint16_t *h, float *f, size_t n, uint64_t seed, uint64_t stream, float scale,
                 float offset) {
  for (size_t i = 0; i < n; ++i) {
    h[i] = net_from_float(dt, offset + scale * unit(seed, stream, i));
    if (f) f[i] = net_to_float(dt, h[i]);
  }
}
static void to_f32(net_dtype dt, float *f, const uint16_t *h, size_t n) {
  for (size_t i = 0; i < n; ++i) f[i] = net_to_float(dt, h[i]);
}

/* A case's seed: the run's seed mixed with the case's parameters. */
static uint64_t case_seed(const tctx *t, uint64_t a, uint64_t b, uint64_t c) {
  return hx_rng_u64(t->seed, a * 1000003u + b, c);
}

/* Mismatch tally: prints the first few failures of a case. */
typedef struct tally {
  char what[160];
  size_t bad, n;
  double worst; /* largest |err| / tol among the passing elements */
} tally;

static void tally_init(tally *t, const char *fmt, ...) {
  memset(t, 0, sizeof *t);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->what, sizeof t->what, fmt, ap);
  va_end(ap);
}
static void tally_close(tally *t, size_t i, double got, double ref, double tol) {
  t->n++;
  const double d = fabs(got - ref);
  if (!(d <= tol)) {
    if (t->bad < 5)
      fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (|err| %.3g > tol %.3g)\n", t->what, i, got, ref, d, tol);
    t->bad++;
  } else if (tol > 0 && d / tol > t->worst) {
    t->worst = d / tol;
  }
}
static void tally_bits(tally *t, net_dtype dt, size_t i, uint16_t got, uint16_t want) {
  t->n++;
  if (got == want || (is_nan_bits(dt, got) && is_nan_bits(dt, want))) return;
  if (t->bad < 5)
    fprintf(stderr, "  %s: element %zu: got %04x (%.9g), want %04x (%.9g)\n", t->what, i, got,
            (double)net_to_float(dt, got), want, (double)net_to_float(dt, want));
  t->bad++;
}
/* Elements [from, to) must still hold the 0xFFFF poison (guards around an output). */
static void tally_guard(tally *t, const uint16_t *h, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    if (h[i] != 0xFFFFu) {
      if (t->bad < 5) fprintf(stderr, "  %s: guard element %zu overwritten (%04x)\n", t->what, i, h[i]);
      t->bad++;
    }
}
/* Every element of an output must have been written (no poison left, nothing non-finite). */
/* For an update y += f(..) of rows that started finite (so poison cannot show a row the kernel skipped): 1, with a
 * FAIL line, when a row of h ([rows, C]) is still its y0 row bit for bit. */
static int rows_unchanged(const tally *t, const uint16_t *h, const uint16_t *y0, size_t rows, size_t C) {
  size_t same = 0;
  for (size_t r = 0; r < rows; ++r) same += memcmp(h + r * C, y0 + r * C, C * 2) == 0;
  if (same) printf("  FAIL %s: %zu rows left as they were\n", t->what, same);
  return same != 0;
}

static void tally_written(tally *t, net_dtype dt, const uint16_t *h, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (is_nan_bits(dt, h[i]) || (h[i] & 0x7FFFu) == (dt == NET_F16 ? 0x7C00u : 0x7F80u)) {
      if (t->bad < 5) fprintf(stderr, "  %s: element %zu not written or not finite (%04x)\n", t->what, i, h[i]);
      t->bad++;
    }
}
static size_t tally_end(const tally *t, int verbose) {
  if (t->bad) fprintf(stderr, "FAIL %s: %zu of %zu elements\n", t->what, t->bad, t->n);
  else if (verbose) printf("  ok %s: %zu elements, worst |err|/tol %.3f\n", t->what, t->n, t->worst);
  return t->bad;
}

static hx_status sync_status(const tctx *t, hx_status s, const hx_err *err, const char *what) {
  if (s != HX_OK) {
    fprintf(stderr, "FAIL %s: %s: %s\n", what, hx_status_str(s), err->msg);
    return s;
  }
  assert_int_equal(cudaStreamSynchronize(t->stream), cudaSuccess);
  return HX_OK;
}

/* The output of an elementwise op read back from dbuf (tot elements, the n outputs at off between guards that must
 * keep the poison), each equal bit for bit to the rounded fp32 reference yf; the tally's failures. */
static size_t tally_exact(tally *ta, net_dtype dt, uint16_t *hy, const uint16_t *dbuf, size_t off, size_t n,
                          size_t tot, const float *yf) {
  d2h(hy, dbuf, tot * 2);
  tally_guard(ta, hy, 0, off);
  tally_guard(ta, hy, off + n, tot);
  for (size_t i = 0; i < n; ++i) tally_bits(ta, dt, i, hy[off + i], net_from_float(dt, yf[i]));
  return tally_end(ta, 0);
}

/* Rows whose values are checked (every row is checked for being written): all up to 96, else the first 32,
 * the last 32 and 32 from the middle. */
static size_t pick_rows(size_t rows, size_t *sel, uint64_t seed) {
  size_t k = 0;
  if (rows <= 96) {
    for (size_t r = 0; r < rows; ++r) sel[k++] = r;
    return k;
  }
  for (size_t r = 0; r < 32; ++r) sel[k++] = r;
  for (size_t r = rows - 32; r < rows; ++r) sel[k++] = r;
  for (uint64_t i = 0; i < 32; ++i) sel[k++] = 32 + (size_t)(hx_rng_u64(seed, 99, i) % (rows - 64));
  return k;
}

/* ---- linear ---------------------------------------------------------------------------------------- */

typedef struct lin_epi {
  nl_act act;
  int bias, acc;
  const char *name;
} lin_epi;
static const lin_epi kEpis[] = {
    {NL_ACT_NONE, 0, 0, "plain"},      {NL_ACT_NONE, 1, 0, "bias"},          {NL_ACT_GELU, 1, 0, "bias+gelu"},
    {NL_ACT_GELU, 0, 0, "gelu"},       {NL_ACT_NONE, 1, 1, "bias+residual"}, {NL_ACT_NONE, 0, 1, "residual"},
};

/* exact: x, w in {-1, 0, 1}, b in {-2..2}, y0 in {-8..8} and in <= 128, so every sum is an integer of at most
 * 138 in magnitude: exact in fp32 and in both dtypes. */
static size_t run_linear_ld(tctx *t, net_dtype dt, size_t rows, size_t in, size_t ldx, size_t out, int exact) {
  const double eps = eps_of(dt);
  const uint64_t seed = case_seed(t, (uint64_t)dt * 7 + (uint64_t)exact + 16 * (ldx - in), rows, in * 4096 + out);
  uint16_t *hx = xmalloc(rows * ldx * 2), *hw = xmalloc(out * in * 2), *hy0 = xmalloc(rows * out * 2);
  uint16_t *hy = xmalloc((rows + 1) * out * 2);
  float *wf = xmalloc(out * in * 4), *bf = xmalloc(out * 4), *xr = xmalloc(in * 4), *yr = xmalloc(out * 4);
  size_t *sel = xmalloc(96 * sizeof *sel);
  const size_t nsel = pick_rows(rows, sel, seed);
  if (exact) {
    for (size_t i = 0; i < rows * ldx; ++i) hx[i] = net_from_float(dt, (float)((int)(hx_rng_u64(seed, 1, i) % 3) - 1));
    for (size_t i = 0; i < out * in; ++i) hw[i] = net_from_float(dt, (float)((int)(hx_rng_u64(seed, 2, i) % 3) - 1));
    for (size_t i = 0; i < out; ++i) bf[i] = (float)((int)(hx_rng_u64(seed, 3, i) % 5) - 2);
    for (size_t i = 0; i < rows * out; ++i) hy0[i] = net_from_float(dt, (float)((int)(hx_rng_u64(seed, 4, i) % 17) - 8));
    to_f32(dt, wf, hw, out * in);
  } else {
    fill(dt, hx, NULL, rows * ldx, seed, 1, 1.0f, 0.0f);
    fill(dt, hw, wf, out * in, seed, 2, (float)(2.0 / sqrt((double)in)), 0.0f); /* pre-activations of order 1 */
    for (size_t i = 0; i < out; ++i) bf[i] = 0.5f * unit(seed, 3, i);
    fill(dt, hy0, NULL, rows * out, seed, 4, 1.0f, 0.0f);
  }
  /* the bias lives in the activation dtype (nets.h): round it, and let the reference use the rounded values */
  uint16_t *hb = xmalloc(out * 2);
  for (size_t i = 0; i < out; ++i) hb[i] = net_from_float(dt, bf[i]), bf[i] = net_to_float(dt, hb[i]);
  void *dx = dmalloc(rows * ldx * 2), *dw = dmalloc(out * in * 2), *dy = dmalloc((rows + 1) * out * 2);
  void *db = dmalloc(out * 2);
  h2d(dx, hx, rows * ldx * 2), h2d(dw, hw, out * in * 2), h2d(db, hb, out * 2);
  size_t bad = 0;
  for (size_t e = 0; e < sizeof kEpis / sizeof kEpis[0]; ++e) {
    const lin_epi *ep = &kEpis[e];
    if (exact && ep->act == NL_ACT_GELU) continue;
    tally ta;
    tally_init(&ta, "linear%s %s rows %zu in %zu (rows %zu apart) out %zu %s", exact ? " (exact)" : "",
               net_dtype_name(dt), rows, in, ldx, out, ep->name);
    poison(dy, (rows + 1) * out * 2);
    if (ep->acc) h2d(dy, hy0, rows * out * 2);
    hx_err err = {HX_OK, ""};
    const hx_status ls = nl_linear_ld_gpu(t->blas, dy, dx, ldx, dw, ep->bias ? db : NULL, rows, in, out, ep->act,
                                          ep->acc, dt, t->stream, &err);
    if (ls == HX_EUNSUPPORTED && t->forced && strstr(err.msg, "forced")) { /* a shorter list for this shape */
      t->skipped++;
      continue;
    }
    if (sync_status(t, ls, &err, ta.what) != HX_OK) {
      bad++;
      continue;
    }
    /* the plan is built now (a tuned one ran every candidate into y first): the checked output is one call's */
    poison(dy, (rows + 1) * out * 2);
    if (ep->acc) h2d(dy, hy0, rows * out * 2);
    if (sync_status(t, nl_linear_ld_gpu(t->blas, dy, dx, ldx, dw, ep->bias ? db : NULL, rows, in, out, ep->act,
                                        ep->acc, dt, t->stream, &err),
                    &err, ta.what) != HX_OK) {
      bad++;
      continue;
    }
    d2h(hy, dy, (rows + 1) * out * 2);
    tally_written(&ta, dt, hy, rows * out);
    tally_guard(&ta, hy, rows * out, (rows + 1) * out);
    double se = 0.0, sr = 0.0;
    for (size_t k = 0; k < nsel; ++k) {
      const size_t r = sel[k];
      to_f32(dt, xr, hx + r * ldx, in); /* the columns past in are never read */
      if (ep->acc) to_f32(dt, yr, hy0 + r * out, out);
      assert_int_equal(nl_linear_cpu(yr, xr, wf, ep->bias ? bf : NULL, 1, in, out, ep->act, ep->acc, NULL), HX_OK);
      for (size_t o = 0; o < out; ++o) {
        const size_t i = r * out + o;
        if (exact) {
          tally_bits(&ta, dt, i, hy[i], net_from_float(dt, yr[o]));
          continue;
        }
        double sabs = ep->bias ? fabs((double)bf[o]) : 0.0;
        for (size_t c = 0; c < in; ++c) sabs += fabs((double)xr[c] * (double)wf[o * in + c]);
        double tol = 4 * eps * sabs * (ep->act == NL_ACT_GELU ? 1.13 : 1.0) + eps * fabs((double)yr[o]) + 1e-6;
        if (ep->acc) tol += 4 * eps * fabs((double)net_to_float(dt, hy0[i]));
        if (ep->act == NL_ACT_GELU) tol += GELU_TANH_MAX_DIFF;
        const double got = (double)net_to_float(dt, hy[i]);
        tally_close(&ta, i, got, (double)yr[o], tol);
        se += (got - (double)yr[o]) * (got - (double)yr[o]);
        sr += (double)yr[o] * (double)yr[o];
      }
    }
    if (!exact && ta.n) {
      const double n = (double)ta.n, rms_err = sqrt(se / n), rms_ref = sqrt(sr / n);
      const double lim = eps * rms_ref + (ep->act == NL_ACT_GELU ? GELU_TANH_MAX_DIFF : 0.0);
      if (!(rms_err <= lim)) {
        fprintf(stderr, "  %s: rms error %.4g > %.4g (eps %.3g x rms ref %.4g)\n", ta.what, rms_err, lim, eps, rms_ref);
        ta.bad++;
      }
    }
    bad += tally_end(&ta, rows == 1000 && (in == 2048 || exact));
  }
  cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(db);
  free(hx), free(hw), free(hy0), free(hy), free(wf), free(bf), free(hb), free(xr), free(yr), free(sel);
  return bad;
}

static size_t run_linear(tctx *t, net_dtype dt, size_t rows, size_t in, size_t out, int exact) {
  return run_linear_ld(t, dt, rows, in, in, out, exact);
}

static void test_linear(void **state) {
  tctx *t = *state;
  static const size_t shapes[][2] = {{8, 8}, {32, 64}, {64, 32}, {256, 256}, {512, 2048}, {2048, 512}};
  static const size_t exact_shapes[][2] = {{8, 8}, {32, 64}, {64, 32}, {128, 128}};
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri) {
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
        bad += run_linear(t, (net_dtype)d, kRows[ri], shapes[si][0], shapes[si][1], 0);
      for (size_t si = 0; si < sizeof exact_shapes / sizeof exact_shapes[0]; ++si)
        bad += run_linear(t, (net_dtype)d, kRows[ri], exact_shapes[si][0], exact_shapes[si][1], 1);
      /* x's rows apart, as Flash3D's projection reads the attention's output over q's columns of qkv */
      bad += run_linear_ld(t, (net_dtype)d, kRows[ri], 48, 144, 48, 0);
      bad += run_linear_ld(t, (net_dtype)d, kRows[ri], 96, 288, 96, 1);
    }
  hx_err err = {HX_OK, ""};
  void *d = dmalloc(4096);
  assert_int_equal(nl_linear_ld_gpu(t->blas, d, (char *)d + 2048, 40, d, NULL, 4, 48, 8, NL_ACT_NONE, 0, NET_F16,
                                    t->stream, &err), HX_EINVAL); /* a row stride under in */
  assert_non_null(strstr(err.msg, "stride"));
  assert_int_equal(nl_linear_ld_gpu(t->blas, d, (char *)d + 2048, 52, d, NULL, 4, 48, 8, NL_ACT_NONE, 0, NET_F16,
                                    t->stream, &err), HX_EINVAL); /* not a multiple of 8 */
  cudaFree(d);
  assert_int_equal(bad, 0);
}

/* Every algorithm the tuner may pick (NL_BLAS_TUNED: the heuristic's first NL_BLAS_CANDIDATES) against the CPU
 * reference on its own, each forced in turn (nl_blas_create's pick) on the networks' kinds of shape: 65537 rows,
 * 128 -> 384 (PTv3's qkv at level 2, where the first is far from the best), 256 -> 768, 64 -> 64, and the
 * small-integer exact cases, every epilogue. At 65537 x 256 -> 768 the heuristic must offer more than one algorithm
 * (else there is nothing to tune and the test says so by failing). A copy of the fixture carries the forced object,
 * so a failed assertion leaves the shared one as it was. */
static void test_linear_candidates(void **state) {
  const tctx *t0 = *state;
  tctx tc = *t0;
  tctx *t = &tc;
  static const size_t shapes[][2] = {{128, 384}, {256, 768}, {64, 64}};
  size_t bad = 0, ran_big = 0;
  for (int c = 0; c < NL_BLAS_CANDIDATES; ++c) {
    hx_err err = {HX_OK, ""};
    nl_blas *b = NULL;
    assert_int_equal(nl_blas_create(&b, c, &err), HX_OK);
    t->blas = b, t->forced = 1;
    for (int d = 0; d < 2; ++d) {
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        const size_t skipped = t->skipped;
        bad += run_linear(t, (net_dtype)d, 65537, shapes[si][0], shapes[si][1], 0);
        if (si == 1 && d == 0 && t->skipped == skipped) ran_big++;
      }
      bad += run_linear(t, (net_dtype)d, 1000, 128, 128, 1);
    }
    nl_blas_stats bs;
    nl_blas_stats_get(b, &bs);
    assert_int_equal(bs.tuned, 0); /* a forced candidate is never timed */
    nl_blas_destroy(b);
  }
  printf("  candidates: 65537 x 256 -> 768 ran on %zu of %d; %zu shape and epilogue cases past their list's end\n",
         ran_big, NL_BLAS_CANDIDATES, t->skipped);
  assert_int_equal(bad, 0);
  assert_true(ran_big >= 2);
}

/* NL_BLAS_TUNED times a shape once, when its plan is built, and only where it may: a Linear that overwrites Y,
 * outside a graph capture (timing there would synchronise a capturing stream and break the capture); an
 * accumulating one (beta 1 would add each timed run into Y) and one first run under capture keep the heuristic's
 * first. NL_BLAS_FIRST times nothing. Out-of-range picks are refused. */
static void test_linear_tuned(void **state) {
  tctx *t = *state;
  hx_err err = {HX_OK, ""};
  nl_blas *b = NULL;
  assert_int_equal(nl_blas_create(&b, NL_BLAS_CANDIDATES, &err), HX_EINVAL);
  assert_null(b);
  assert_int_equal(nl_blas_create(&b, -3, &err), HX_EINVAL);
  const size_t rows = 65537, in = 128, out = 384;
  void *dx = dmalloc(rows * 256 * 2), *dw = dmalloc(768 * 256 * 2), *dy = dmalloc(rows * 768 * 2), *db = dmalloc(768 * 2);
  assert_int_equal(cudaMemset(dx, 0, rows * 256 * 2), cudaSuccess);
  assert_int_equal(cudaMemset(dw, 0, 768 * 256 * 2), cudaSuccess);
  assert_int_equal(cudaMemset(db, 0, 768 * 2), cudaSuccess);
  for (int first = 0; first < 2; ++first) {
    assert_int_equal(nl_blas_create(&b, first ? NL_BLAS_FIRST : NL_BLAS_TUNED, &err), HX_OK);
    nl_blas_stats bs;
    for (int k = 0; k < 2; ++k) /* the second call finds the plan */
      assert_int_equal(nl_linear_gpu(b, dy, dx, dw, db, rows, in, out, NL_ACT_NONE, 0, NET_F16, t->stream, &err), HX_OK);
    assert_int_equal(nl_linear_gpu(b, dy, dx, dw, db, rows, in, in, NL_ACT_NONE, 1, NET_F16, t->stream, &err), HX_OK);
    cudaGraph_t graph = NULL;
    assert_int_equal(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const hx_status cs = nl_linear_gpu(b, dy, dx, dw, db, rows, 256, 768, NL_ACT_GELU, 0, NET_F16, t->stream, &err);
    assert_int_equal(cudaStreamEndCapture(t->stream, &graph), cudaSuccess);
    assert_int_equal(cs, HX_OK);
    cudaGraphExec_t exec = NULL;
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(exec, t->stream), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(t->stream), cudaSuccess);
    cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
    nl_blas_stats_get(b, &bs);
    printf("  %s: %zu plans, %zu timed, %zu moved off the first; timed shapes %.4f ms first, %.4f ms picked\n",
           first ? "NL_BLAS_FIRST" : "NL_BLAS_TUNED", bs.plans, bs.tuned, bs.moved, bs.first_ms, bs.pick_ms);
    assert_int_equal(bs.plans, 3);
    assert_int_equal(bs.tuned, first ? 0 : 1);
    if (!first) assert_true(bs.pick_ms > 0 && bs.first_ms > 0); /* both timed */
    nl_blas_destroy(b);
  }
  cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(db);
}

/* ---- fused MLP --------------------------------------------------------------------------------------- */

/* an attribute of the current device (0 when the runtime cannot say) */
static int device_attr(enum cudaDeviceAttr a) {
  int dev = 0, v = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) return 0;
  return v;
}

/* nl_mlp_gpu's scratch for the call (the size query; both entries ask the same), poisoned with words of 1: a ready
 * flag left unzeroed reads as set, and a partial sum read before it is written as ~0 */
static void *mlp_scratch(size_t rows, size_t C, size_t H, nl_mlp_kind kind, net_dtype dt, size_t *sb) {
  hx_err err = {HX_OK, ""};
  *sb = 0;
  assert_int_equal(nl_mlp_gpu(NULL, NULL, NULL, NULL, NULL, NULL, rows, C, H, kind, NULL, sb, dt, NULL, &err), HX_OK);
  void *d = dmalloc(*sb ? *sb : 16);
  if (*sb) {
    uint32_t *h = xmalloc(*sb);
    for (size_t i = 0; i < *sb / 4; ++i) h[i] = 1u;
    h2d(d, h, *sb);
    free(h);
  }
  return d;
}

/* y [rows, C] += fc2(act(fc1(x))), weights of Linear's scale (pre-activations of order 1), y0 random; nb: no biases;
 * kind GELU (fc1 [H, C]) or SwiGLU (fc1 [2H, C]). ln: y += MLP(LN(y)) (nl_ln_mlp_gpu), y0 centred on 2 with a
 * spread by row, against nl_ln_mlp_cpu; the tolerance then also holds the normalised row's rounding to dtype
 * (eps relative per value, through |w1| and the activation's slope into the hidden row, through |w2| into y). */
static size_t run_mlp(tctx *t, net_dtype dt, size_t rows, size_t C, size_t H, nl_mlp_kind kind, int nb, int ln) {
  const double eps = eps_of(dt);
  const int swi = kind == NL_MLP_SWIGLU;
  const size_t H1 = swi ? 2 * H : H;
  /* the fp16 wgmma kernel (C >= 128) computes GELU in half2 from the pre-activation rounded once: its input rounding,
   * three roundings inside tanh's argument and tanh.approx.f16's error come to under 2^-9 |x| <= 2^-9 s1 */
  const int h2 = !swi && dt == NET_F16 && C >= 128;
  const float ln_eps = 1e-5f;
  /* GELU keeps its earlier seeds (31 + 2 dt + nb) */
  const uint64_t seed = case_seed(t, (swi ? 61 : 31) + (uint64_t)dt * 2 + (uint64_t)nb + (ln ? 100u : 0u), rows, C);
  uint16_t *hx = xmalloc(rows * C * 2), *hw1 = xmalloc(H1 * C * 2), *hw2 = xmalloc(C * H * 2), *hb1 = xmalloc(H1 * 2);
  uint16_t *hb2 = xmalloc(C * 2), *hy0 = xmalloc(rows * C * 2), *hy = xmalloc((rows + 1) * C * 2);
  float *w1 = xmalloc(H1 * C * 4), *w2 = xmalloc(C * H * 4), *b1 = xmalloc(H1 * 4), *b2 = xmalloc(C * 4);
  float *xr = xmalloc(C * 4), *yr = xmalloc(C * 4), *h = xmalloc(H1 * 4), *h1 = xmalloc(H1 * 4), *s1 = xmalloc(H1 * 4);
  float *lg = xmalloc(C * 4), *lb = xmalloc(C * 4);
  size_t *sel = xmalloc(96 * sizeof *sel);
  const size_t nsel = pick_rows(rows, sel, seed);
  fill(dt, hx, NULL, rows * C, seed, 1, 1.0f, 0.0f);
  for (size_t c = 0; c < C; ++c) lg[c] = 1.0f + 0.5f * unit(seed, 8, c), lb[c] = 0.5f * unit(seed, 9, c);
  fill(dt, hw1, w1, H1 * C, seed, 2, (float)(2.0 / sqrt((double)C)), 0.0f);
  fill(dt, hw2, w2, C * H, seed, 3, (float)(2.0 / sqrt((double)H)), 0.0f);
  fill(dt, hb1, b1, H1, seed, 4, 0.5f, 0.0f);
  fill(dt, hb2, b2, C, seed, 5, 0.5f, 0.0f);
  if (ln) { /* the mean matters: rows centred on 2, spreads 0.5 .. 2.5; row 0 constant (variance 0: eps decides) */
    for (size_t r = 0; r < rows; ++r) fill(dt, hy0 + r * C, NULL, C, seed, 16 + r, 0.5f + (float)(r % 3), 2.0f);
    fill(dt, hy0, NULL, C, seed, 15, 0.0f, 1.5f);
  } else
    fill(dt, hy0, NULL, rows * C, seed, 6, 1.0f, 0.0f);
  void *dx = dmalloc(rows * C * 2), *dy = dmalloc((rows + 1) * C * 2), *dw1 = dmalloc(H1 * C * 2);
  void *dw2 = dmalloc(C * H * 2), *db1 = dmalloc(H1 * 2), *db2 = dmalloc(C * 2);
  float *dlg = dmalloc(C * 4), *dlb = dmalloc(C * 4);
  h2d(dx, hx, rows * C * 2), h2d(dw1, hw1, H1 * C * 2), h2d(dw2, hw2, C * H * 2), h2d(db1, hb1, H1 * 2);
  h2d(db2, hb2, C * 2), h2d(dlg, lg, C * 4), h2d(dlb, lb, C * 4);
  poison(dy, (rows + 1) * C * 2);
  h2d(dy, hy0, rows * C * 2);
  tally ta;
  tally_init(&ta, "%smlp %s %s rows %zu C %zu H %zu%s", ln ? "ln + " : "", swi ? "swiglu" : "gelu", net_dtype_name(dt),
             rows, C, H, nb ? " no bias" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 0, sb = 0;
  void *scr = mlp_scratch(rows, C, H, kind, dt, &sb);
  const hx_status st =
      ln ? nl_ln_mlp_gpu(dy, dlg, dlb, ln_eps, dw1, nb ? NULL : db1, dw2, nb ? NULL : db2, rows, C, H, kind, scr, &sb,
                         dt, t->stream, &err)
         : nl_mlp_gpu(dy, dx, dw1, nb ? NULL : db1, dw2, nb ? NULL : db2, rows, C, H, kind, scr, &sb, dt, t->stream,
                      &err);
  /* the C = 80 SwiGLU kernel on sm_80; the wgmma kernel's widths (GELU 128 and 256, SwiGLU 96 to 192) on a device
   * other than compute capability 9.0 (on 9.0 the refusal is a failure: the build's sm_90a image must run) */
  if (st == HX_EUNSUPPORTED &&
      (strstr(err.msg, "shared memory a CTA") || (strstr(err.msg, "sm_90a") && !t_sm90a_runs()))) {
    printf("  skip %s: %s\n", ta.what, err.msg);
  } else if (sync_status(t, st, &err, ta.what) != HX_OK) {
    bad = 1;
  } else {
    d2h(hy, dy, (rows + 1) * C * 2);
    tally_guard(&ta, hy, rows * C, (rows + 1) * C);
    /* every row must differ from its y0 (the random MLP adds a change of order 1 to each value) */
    if (rows_unchanged(&ta, hy, hy0, rows, C)) bad = 1;
    for (size_t k = 0; k < nsel; ++k) {
      const size_t r = sel[k];
      to_f32(dt, yr, hy0 + r * C, C);
      if (ln) { /* the reference, and the normalised row the sums below describe */
        assert_int_equal(nl_layernorm_cpu(xr, yr, lg, lb, 1, C, ln_eps, NULL), HX_OK);
        assert_int_equal(nl_ln_mlp_cpu(yr, lg, lb, ln_eps, w1, nb ? NULL : b1, w2, nb ? NULL : b2, 1, C, H, kind, NULL),
                         HX_OK);
      } else {
        to_f32(dt, xr, hx + r * C, C);
        assert_int_equal(nl_mlp_cpu(yr, xr, w1, nb ? NULL : b1, w2, nb ? NULL : b2, 1, C, H, kind, NULL), HX_OK);
      }
      if (swi) {
        assert_int_equal(nl_linear_cpu(h1, xr, w1, nb ? NULL : b1, 1, C, H1, NL_ACT_NONE, 0, NULL), HX_OK);
        assert_int_equal(nl_swiglu_cpu(h, h1, 1, H, NULL), HX_OK);
      } else {
        assert_int_equal(nl_linear_cpu(h, xr, w1, nb ? NULL : b1, 1, C, H, NL_ACT_GELU, 0, NULL), HX_OK);
      }
      for (size_t j = 0; j < H1; ++j) {
        double s = nb ? 0.0 : fabs((double)b1[j]);
        for (size_t c = 0; c < C; ++c) s += fabs((double)xr[c] * (double)w1[j * C + c]);
        s1[j] = (float)s;
      }
      for (size_t o = 0; o < C; ++o) {
        double sh = 0.0, sf = nb ? 0.0 : fabs((double)b2[o]), sg = 0.0, sl = 0.0;
        for (size_t j = 0; j < H; ++j) {
          const double w = fabs((double)w2[o * H + j]);
          sh += w * fabs((double)h[j]);
          if (swi) { /* |a| <= s_a, |b| <= s_b; silu's slope <= 1.1; the hardware tanh 2^-11 relative in silu */
            const double ab = (double)s1[j] * (double)s1[H + j];
            sf += w * (fabs((double)h[j]) + 2.2 * ab);
            sg += w * 0x1p-12 * ab;
            sl += w * 2.2 * ab;
          } else {
            sf += w * (fabs((double)h[j]) + 1.13 * (double)s1[j]);
            sg += w * (GELU_TANH_MAX_DIFF + (h2 ? 0x1p-9 : 0x1p-12) * (double)s1[j]);
            sl += w * 1.13 * (double)s1[j];
          }
        }
        const double tol =
            eps * sh + eps * fabs((double)yr[o]) + 0x1p-20 * sf + sg + (ln ? eps * sl + 0x1p-18 * sf : 0.0) + 1e-6;
        tally_close(&ta, r * C + o, (double)net_to_float(dt, hy[r * C + o]), (double)yr[o], tol);
      }
    }
    bad += tally_end(&ta, rows == 1000);
  }
  cudaFree(dx), cudaFree(dy), cudaFree(dw1), cudaFree(dw2), cudaFree(db1), cudaFree(db2), cudaFree(dlg), cudaFree(dlb);
  cudaFree(scr);
  free(hx), free(hw1), free(hw2), free(hb1), free(hb2), free(hy0), free(hy), free(w1), free(w2), free(b1), free(b2);
  free(xr), free(yr), free(h), free(h1), free(s1), free(sel), free(lg), free(lb);
  return bad;
}

/* y [rows, 3C] = LN(x[idx[r]]) W^T + b (nl_ln_linear_gpu) against nl_ln_linear_cpu: idx drawn at random over x_rows
 * rows (repeats, unread rows), x rows centred on 2 with spreads by row, y poisoned with a guard row past the end;
 * tolerance: y's rounding (eps |y|), the normalised row's rounding to dtype (eps sum |w| |ln|), fp32 sums (2^-18
 * sum |w| |ln| + |b|). */
static size_t run_ln_linear(tctx *t, net_dtype dt, size_t rows, size_t x_rows, size_t C, int nb, int inorder) {
  const double eps = eps_of(dt);
  const float ln_eps = 1e-5f;
  const size_t N = 3 * C;
  const uint64_t seed = case_seed(t, 91 + (uint64_t)dt * 2 + (uint64_t)nb, rows, C);
  uint16_t *hx = xmalloc(x_rows * C * 2), *hw = xmalloc(N * C * 2), *hb = xmalloc(N * 2), *hy = xmalloc((rows + 1) * N * 2);
  float *xf = xmalloc(x_rows * C * 4), *w = xmalloc(N * C * 4), *b = xmalloc(N * 4), *g = xmalloc(C * 4);
  float *bt = xmalloc(C * 4), *ln = xmalloc(C * 4), *yr = xmalloc(N * 4);
  uint32_t *idx = xmalloc(rows * 4);
  size_t *sel = xmalloc(96 * sizeof *sel);
  const size_t nsel = pick_rows(rows, sel, seed);
  for (size_t r = 0; r < x_rows; ++r)
    fill(dt, hx + r * C, xf + r * C, C, seed, 16 + r, 0.5f + (float)(r % 3), 2.0f);
  fill(dt, hx, xf, C, seed, 15, 0.0f, 1.5f); /* x's row 0 constant: its variance is 0, eps decides (LN = beta) */
  fill(dt, hw, w, N * C, seed, 2, (float)(2.0 / sqrt((double)C)), 0.0f);
  fill(dt, hb, b, N, seed, 3, 0.5f, 0.0f);
  for (size_t c = 0; c < C; ++c) g[c] = 1.0f + 0.5f * unit(seed, 8, c), bt[c] = 0.5f * unit(seed, 9, c);
  for (size_t r = 0; r < rows; ++r) idx[r] = inorder ? (uint32_t)r : (uint32_t)(hx_rng_u64(seed, 7, r) % x_rows);
  idx[0] = 0; /* the constant row is read (row 0 is always among the checked rows) */
  void *dx = dmalloc(x_rows * C * 2), *dy = dmalloc((rows + 1) * N * 2), *dw = dmalloc(N * C * 2), *db = dmalloc(N * 2);
  float *dg = dmalloc(C * 4), *dbt = dmalloc(C * 4);
  uint32_t *didx = dmalloc(rows * 4);
  h2d(dx, hx, x_rows * C * 2), h2d(dw, hw, N * C * 2), h2d(db, hb, N * 2), h2d(dg, g, C * 4), h2d(dbt, bt, C * 4);
  h2d(didx, idx, rows * 4);
  poison(dy, (rows + 1) * N * 2);
  tally ta;
  tally_init(&ta, "ln + linear %s rows %zu of %zu%s C %zu%s", net_dtype_name(dt), rows, x_rows,
             inorder ? " in order" : "", C, nb ? " no bias" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 0;
  const hx_status st = nl_ln_linear_gpu(dy, dx, inorder ? NULL : didx, x_rows, dg, dbt, ln_eps, dw, nb ? NULL : db,
                                        rows, C, N, dt, t->stream, &err);
  if (sync_status(t, st, &err, ta.what) != HX_OK) {
    bad = 1;
  } else {
    d2h(hy, dy, (rows + 1) * N * 2);
    tally_guard(&ta, hy, rows * N, (rows + 1) * N);
    tally_written(&ta, dt, hy, rows * N);
    for (size_t k = 0; k < nsel; ++k) {
      const size_t r = sel[k];
      assert_int_equal(nl_ln_linear_cpu(yr, xf, idx + r, x_rows, g, bt, ln_eps, w, nb ? NULL : b, 1, C, N, NULL), HX_OK);
      assert_int_equal(nl_layernorm_cpu(ln, xf + (size_t)idx[r] * C, g, bt, 1, C, ln_eps, NULL), HX_OK);
      for (size_t o = 0; o < N; ++o) {
        double sw = nb ? 0.0 : fabs((double)b[o]);
        for (size_t c = 0; c < C; ++c) sw += fabs((double)w[o * C + c] * (double)ln[c]);
        const double tol = eps * fabs((double)yr[o]) + eps * sw + 0x1p-18 * sw + 1e-6;
        tally_close(&ta, r * N + o, (double)net_to_float(dt, hy[r * N + o]), (double)yr[o], tol);
      }
    }
    bad += tally_end(&ta, rows == 1000);
  }
  cudaFree(dx), cudaFree(dy), cudaFree(dw), cudaFree(db), cudaFree(dg), cudaFree(dbt), cudaFree(didx);
  free(hx), free(hw), free(hb), free(hy), free(xf), free(w), free(b), free(g), free(bt), free(ln), free(yr), free(idx);
  free(sel);
  return bad;
}

/* y [rows, C] += LN(x W^T + b) (nl_linear_ln_add_gpu) against nl_linear_ln_add_cpu, y0 random (spread 3, centred
 * on 1), y poisoned past the end. The GPU rounds the Linear's row to dtype before its LayerNorm (as the unfused path
 * stores it): a perturbation d of a value moves LN's output by at most |g| (2 + |vhat|) d / sigma, d = eps / 2 of the
 * row's largest |v| plus the fp32 sums (2^-18 of sum |w x| + |b|); then y's rounding (eps |y|) and LN's fp32
 * arithmetic (nl_layernorm_gpu's test's term). */
static size_t run_linear_ln_add(tctx *t, net_dtype dt, size_t rows, size_t C, int nb) {
  const double eps = eps_of(dt);
  const float ln_eps = 1e-5f;
  const uint64_t seed = case_seed(t, 95 + (uint64_t)dt * 2 + (uint64_t)nb, rows, C);
  uint16_t *hx = xmalloc(rows * C * 2), *hw = xmalloc(C * C * 2), *hb = xmalloc(C * 2), *hy0 = xmalloc(rows * C * 2);
  uint16_t *hy = xmalloc((rows + 1) * C * 2);
  float *xf = xmalloc(C * 4), *w = xmalloc(C * C * 4), *b = xmalloc(C * 4), *g = xmalloc(C * 4), *bt = xmalloc(C * 4);
  float *v = xmalloc(C * 4), *yr = xmalloc(C * 4);
  size_t *sel = xmalloc(96 * sizeof *sel);
  const size_t nsel = pick_rows(rows, sel, seed);
  fill(dt, hx, NULL, rows * C, seed, 1, 1.0f, 0.0f);
  if (nb) fill(dt, hx, NULL, C, seed, 1, 0.0f, 0.0f); /* x's row 0 zero: without a bias the Linear's row is 0, eps decides */
  fill(dt, hw, w, C * C, seed, 2, (float)(2.0 / sqrt((double)C)), 0.0f);
  fill(dt, hb, b, C, seed, 3, 0.5f, 0.0f);
  fill(dt, hy0, NULL, rows * C, seed, 6, 3.0f, 1.0f);
  for (size_t c = 0; c < C; ++c) g[c] = 1.0f + 0.5f * unit(seed, 8, c), bt[c] = 0.5f * unit(seed, 9, c);
  void *dx = dmalloc(rows * C * 2), *dy = dmalloc((rows + 1) * C * 2), *dw = dmalloc(C * C * 2), *db = dmalloc(C * 2);
  float *dg = dmalloc(C * 4), *dbt = dmalloc(C * 4);
  h2d(dx, hx, rows * C * 2), h2d(dw, hw, C * C * 2), h2d(db, hb, C * 2), h2d(dg, g, C * 4), h2d(dbt, bt, C * 4);
  poison(dy, (rows + 1) * C * 2);
  h2d(dy, hy0, rows * C * 2);
  tally ta;
  tally_init(&ta, "linear + ln + add %s rows %zu C %zu%s", net_dtype_name(dt), rows, C, nb ? " no bias" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 0;
  const hx_status st =
      nl_linear_ln_add_gpu(dy, dx, dw, nb ? NULL : db, dg, dbt, ln_eps, rows, C, dt, t->stream, &err);
  if (sync_status(t, st, &err, ta.what) != HX_OK) {
    bad = 1;
  } else {
    d2h(hy, dy, (rows + 1) * C * 2);
    tally_guard(&ta, hy, rows * C, (rows + 1) * C);
    tally_written(&ta, dt, hy, rows * C);
    if (rows_unchanged(&ta, hy, hy0, rows, C)) bad = 1;
    for (size_t k = 0; k < nsel; ++k) {
      const size_t r = sel[k];
      to_f32(dt, xf, hx + r * C, C);
      to_f32(dt, yr, hy0 + r * C, C);
      assert_int_equal(nl_linear_ln_add_cpu(yr, xf, w, nb ? NULL : b, g, bt, ln_eps, 1, C, NULL), HX_OK);
      assert_int_equal(nl_linear_cpu(v, xf, w, nb ? NULL : b, 1, C, C, NL_ACT_NONE, 0, NULL), HX_OK);
      double m = 0, var = 0, vmax = 0, smax = 0;
      for (size_t o = 0; o < C; ++o) {
        double sw = nb ? 0.0 : fabs((double)b[o]);
        for (size_t c = 0; c < C; ++c) sw += fabs((double)w[o * C + c] * (double)xf[c]);
        smax = fmax(smax, sw), vmax = fmax(vmax, fabs((double)v[o])), m += (double)v[o];
      }
      m /= (double)C;
      for (size_t o = 0; o < C; ++o) var += ((double)v[o] - m) * ((double)v[o] - m);
      const double sigma = sqrt(var / (double)C + (double)ln_eps), d = 0.5 * eps * vmax + 0x1p-18 * smax;
      for (size_t o = 0; o < C; ++o) {
        const double vh = fabs(((double)v[o] - m) / sigma), gg = fabs((double)g[o]);
        const double tol = eps * fabs((double)yr[o]) + gg * (2.0 + vh) * d / sigma +
                           2.0 * gg * (double)C * 0x1p-24 * (vmax / sigma + vh) + 1e-6;
        tally_close(&ta, r * C + o, (double)net_to_float(dt, hy[r * C + o]), (double)yr[o], tol);
      }
    }
    bad += tally_end(&ta, rows == 1000);
  }
  cudaFree(dx), cudaFree(dy), cudaFree(dw), cudaFree(db), cudaFree(dg), cudaFree(dbt);
  free(hx), free(hw), free(hb), free(hy0), free(hy), free(xf), free(w), free(b), free(g), free(bt), free(v), free(yr);
  free(sel);
  return bad;
}

/* The LayerNorm inside the kernel of its Linear: nl_ln_linear_gpu and nl_linear_ln_add_gpu at both widths, rows past the 128-row tiles
 * (1, 7, 1000, 65537) and enough that every CTA of the persistent grid walks several; nl_ln_mlp_gpu at every
 * width nl_mlp_gpu takes. */
static void test_ln_fused(void **state) {
  tctx *t = *state;
  static const struct { size_t C, H; nl_mlp_kind kind; } shapes[] = {
      {32, 128, NL_MLP_GELU},   {64, 256, NL_MLP_GELU},   {128, 512, NL_MLP_GELU},  {256, 1024, NL_MLP_GELU},
      {32, 128, NL_MLP_SWIGLU}, {48, 192, NL_MLP_SWIGLU}, {64, 256, NL_MLP_SWIGLU}, {80, 320, NL_MLP_SWIGLU},
      {96, 384, NL_MLP_SWIGLU}, {128, 512, NL_MLP_SWIGLU}, {160, 640, NL_MLP_SWIGLU}, {192, 768, NL_MLP_SWIGLU}};
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri) {
      bad += run_ln_linear(t, (net_dtype)d, kRows[ri], kRows[ri] + 5, 32, 0, 0);
      bad += run_ln_linear(t, (net_dtype)d, kRows[ri], kRows[ri] / 2 + 1, 64, 0, 0);
      /* Flash3D's norm + qkv: its rows in order at C = 48 and 96 (and by an index, the same kernels') */
      bad += run_ln_linear(t, (net_dtype)d, kRows[ri], kRows[ri], 48, 0, 1);
      bad += run_ln_linear(t, (net_dtype)d, kRows[ri], kRows[ri] + 3, 96, 0, 1);
      bad += run_ln_linear(t, (net_dtype)d, kRows[ri], kRows[ri] / 3 + 1, 96, 0, 0);
      bad += run_linear_ln_add(t, (net_dtype)d, kRows[ri], 32, 0) + run_linear_ln_add(t, (net_dtype)d, kRows[ri], 64, 0);
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
        bad += run_mlp(t, (net_dtype)d, kRows[ri], shapes[si].C, shapes[si].H, shapes[si].kind, 0, 1);
    }
  bad += run_ln_linear(t, NET_F16, 300000, 280000, 64, 0, 0) + run_ln_linear(t, NET_BF16, 1000, 1000, 32, 1, 0);
  bad += run_ln_linear(t, NET_F16, 1000, 3, 64, 1, 0);
  bad += run_ln_linear(t, NET_F16, 600000, 600000, 96, 0, 1) + run_ln_linear(t, NET_BF16, 1000, 1000, 48, 1, 1);
  bad += run_linear_ln_add(t, NET_F16, 300000, 64, 0) + run_linear_ln_add(t, NET_BF16, 1000, 32, 1);
  bad += run_mlp(t, NET_F16, 300000, 64, 256, NL_MLP_GELU, 0, 1) + run_mlp(t, NET_BF16, 1000, 64, 256, NL_MLP_GELU, 1, 1);
  bad += run_mlp(t, NET_F16, 1000, 128, 512, NL_MLP_GELU, 1, 1) + run_mlp(t, NET_BF16, 129, 256, 1024, NL_MLP_GELU, 1, 1);
  /* Flash3D's LayerNormMLP on the wgmma kernel: C = 96 and 160 normalise rows of a partial last 64-value block */
  bad += run_mlp(t, NET_F16, 200000, 96, 384, NL_MLP_SWIGLU, 0, 1) + run_mlp(t, NET_F16, 150000, 192, 768, NL_MLP_SWIGLU, 0, 1);
  bad += run_mlp(t, NET_BF16, 1000, 160, 640, NL_MLP_SWIGLU, 1, 1);
  assert_int_equal(bad, 0);
}

static void test_mlp(void **state) {
  tctx *t = *state;
  static const struct { size_t C, H; nl_mlp_kind kind; } shapes[] = {
      {32, 128, NL_MLP_GELU},   {64, 256, NL_MLP_GELU},   {128, 512, NL_MLP_GELU},  {256, 1024, NL_MLP_GELU},
      {32, 128, NL_MLP_SWIGLU}, {48, 192, NL_MLP_SWIGLU}, {64, 256, NL_MLP_SWIGLU}, {80, 320, NL_MLP_SWIGLU},
      {96, 384, NL_MLP_SWIGLU}, {128, 512, NL_MLP_SWIGLU}, {160, 640, NL_MLP_SWIGLU}, {192, 768, NL_MLP_SWIGLU}};
  const size_t ns = sizeof shapes / sizeof shapes[0];
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t si = 0; si < ns; ++si)
        bad += run_mlp(t, (net_dtype)d, kRows[ri], shapes[si].C, shapes[si].H, shapes[si].kind, 0, 0);
  /* enough tiles that every CTA of the persistent grid walks several (4 CTAs an SM at C = 32: 528 on an H200) */
  bad += run_mlp(t, NET_F16, 300000, 32, 128, NL_MLP_GELU, 0, 0);
  bad += run_mlp(t, NET_BF16, 300000, 48, 192, NL_MLP_SWIGLU, 0, 0);
  bad += run_mlp(t, NET_F16, 1000, 64, 256, NL_MLP_GELU, 1, 0);
  bad += run_mlp(t, NET_BF16, 129, 32, 128, NL_MLP_GELU, 1, 0);
  bad += run_mlp(t, NET_F16, 1000, 48, 192, NL_MLP_SWIGLU, 1, 0);
  bad += run_mlp(t, NET_BF16, 300, 80, 320, NL_MLP_SWIGLU, 1, 0);
  bad += run_mlp(t, NET_F16, 300, 128, 512, NL_MLP_GELU, 1, 0) + run_mlp(t, NET_BF16, 200000, 256, 1024, NL_MLP_GELU, 0, 0);
  /* SwiGLU on the wgmma kernel: no biases; many 128-row tiles a CTA at C = 96 and 160 */
  bad += run_mlp(t, NET_F16, 1000, 96, 384, NL_MLP_SWIGLU, 1, 0) + run_mlp(t, NET_BF16, 300, 192, 768, NL_MLP_SWIGLU, 1, 0);
  bad += run_mlp(t, NET_F16, 128 * 700 + 33, 96, 384, NL_MLP_SWIGLU, 0, 0);
  bad += run_mlp(t, NET_BF16, 128 * 400 + 65, 160, 640, NL_MLP_SWIGLU, 0, 0);
  /* C = 64 without LN (x's rows replaced by y's in the tile): several 128-row tiles a CTA, so the next tile's
   * copy is refilled many times, and a last tile of 77 rows */
  bad += run_mlp(t, NET_BF16, 128 * 1200 + 77, 64, 256, NL_MLP_GELU, 0, 0);
  /* whole tiles only (192 rows at C = 128, 128 at 256), several a CTA */
  bad += run_mlp(t, NET_F16, 192 * 400, 128, 512, NL_MLP_GELU, 0, 0) + run_mlp(t, NET_F16, 128 * 300, 256, 1024, NL_MLP_GELU, 0, 1);
  assert_int_equal(bad, 0);
}

/* The wgmma MLP's Stream-K split (mlp_wgmma.cu) gives the unsplit bits: a call 3.25 rounds of tiles long (one tile
 * a CTA of the persistent grid a round, SMs x BM rows; its last round a quarter full, so its CTAs split tiles and
 * scratch is asked for) equals, on every row, the same rows computed in slices of at most one round (whole tiles,
 * no scratch); a call 3.75 rounds long takes whole tiles (no scratch); both entries, both dtypes at one width each
 * (GELU), and SwiGLU at 96 (LN, fp16) and 192 (bf16).
 * The scratch is poisoned with words of 1, so a partial sum read before its CTA stored it would show; a FINISH
 * reading its flag before the PUBLISH it waits for is not provoked (the schedule puts them ~3 tiles apart). */
static void test_mlp_split(void **state) {
  tctx *t = *state;
  if (!t_sm90a_runs()) {
    printf("  skip mlp split: the wgmma kernel runs only where this build's sm_90a image does\n");
    return;
  }
  const int sms = device_attr(cudaDevAttrMultiProcessorCount);
  assert_true(sms > 0);
  size_t bad = 0;
  for (int k = 0; k < 6; ++k) {
    /* GELU at 128 and 256 (k < 4); SwiGLU at 96 with LN in fp16, at 192 without in bf16 */
    const nl_mlp_kind kind = k < 4 ? NL_MLP_GELU : NL_MLP_SWIGLU;
    const size_t C = k < 4 ? (k & 1 ? 256 : 128) : (k == 4 ? 96 : 192), H = 4 * C, H1 = k < 4 ? H : 2 * H;
    /* tiles of 64 rows a consumer warpgroup: three at GELU's 128, else two (mlp_wgmma.cu's Cfg) */
    const size_t BM = k < 4 && C == 128 ? 192 : 128, r1 = (size_t)sms * BM;
    const size_t rows = 3 * r1 + r1 / 4 + 5;
    const int ln = k < 4 ? k >> 1 : k == 4;
    const net_dtype dt = k == 1 || k == 2 || k == 5 ? NET_BF16 : NET_F16;
    const uint64_t seed = case_seed(t, 131 + (uint64_t)k, rows, C);
    size_t sb1 = 0, sb = 0, sb3 = 0;
    void *scr1 = mlp_scratch(r1, C, H, kind, dt, &sb1), *scr = mlp_scratch(rows, C, H, kind, dt, &sb);
    hx_err qe = {HX_OK, ""};
    assert_int_equal(nl_mlp_gpu(NULL, NULL, NULL, NULL, NULL, NULL, 3 * r1 + 3 * r1 / 4, C, H, kind, NULL, &sb3,
                                dt, NULL, &qe), HX_OK);
    if (sb1 != 0 || sb == 0 || sb3 != 0) {
      fprintf(stderr, "FAIL mlp split C %zu: scratch %zu bytes for one round, %zu for 3.25, %zu for 3.75\n", C, sb1,
              sb, sb3);
      ++bad;
    }
    uint16_t *hx = xmalloc(rows * C * 2), *hw1 = xmalloc(H1 * C * 2), *hw2 = xmalloc(C * H * 2), *hb1 = xmalloc(H1 * 2);
    uint16_t *hb2 = xmalloc(C * 2), *ha = xmalloc(rows * C * 2), *hb = xmalloc(rows * C * 2);
    float *lg = xmalloc(C * 4), *lb = xmalloc(C * 4);
    fill(dt, hx, NULL, rows * C, seed, 1, 1.0f, ln ? 2.0f : 0.0f);
    fill(dt, hw1, NULL, H1 * C, seed, 2, (float)(2.0 / sqrt((double)C)), 0.0f);
    fill(dt, hw2, NULL, C * H, seed, 3, (float)(2.0 / sqrt((double)H)), 0.0f);
    fill(dt, hb1, NULL, H1, seed, 4, 0.5f, 0.0f);
    fill(dt, hb2, NULL, C, seed, 5, 0.5f, 0.0f);
    for (size_t c = 0; c < C; ++c) lg[c] = 1.0f + 0.5f * unit(seed, 8, c), lb[c] = 0.5f * unit(seed, 9, c);
    uint16_t *dx = dmalloc(rows * C * 2), *dya = dmalloc(rows * C * 2), *dyb = dmalloc(rows * C * 2);
    void *dw1 = dmalloc(H1 * C * 2), *dw2 = dmalloc(C * H * 2), *db1 = dmalloc(H1 * 2), *db2 = dmalloc(C * 2);
    float *dlg = dmalloc(C * 4), *dlb = dmalloc(C * 4);
    h2d(dx, hx, rows * C * 2), h2d(dw1, hw1, H1 * C * 2), h2d(dw2, hw2, C * H * 2), h2d(db1, hb1, H1 * 2);
    h2d(db2, hb2, C * 2), h2d(dlg, lg, C * 4), h2d(dlb, lb, C * 4);
    /* y = x as the residual (and, with LN, as the input) */
    h2d(dya, hx, rows * C * 2), h2d(dyb, hx, rows * C * 2);
    hx_err err = {HX_OK, ""};
    hx_status st = ln ? nl_ln_mlp_gpu(dya, dlg, dlb, 1e-5f, dw1, db1, dw2, db2, rows, C, H, kind, scr, &sb, dt,
                                      t->stream, &err)
                      : nl_mlp_gpu(dya, dx, dw1, db1, dw2, db2, rows, C, H, kind, scr, &sb, dt, t->stream, &err);
    if (st == HX_OK) st = sync_status(t, st, &err, "mlp split");
    for (size_t r0 = 0; st == HX_OK && r0 < rows; r0 += r1) { /* the slices: at most one round each */
      const size_t n = rows - r0 < r1 ? rows - r0 : r1;
      st = ln ? nl_ln_mlp_gpu(dyb + r0 * C, dlg, dlb, 1e-5f, dw1, db1, dw2, db2, n, C, H, kind, scr1, &sb1, dt,
                              t->stream, &err)
              : nl_mlp_gpu(dyb + r0 * C, dx + r0 * C, dw1, db1, dw2, db2, n, C, H, kind, scr1, &sb1, dt,
                           t->stream, &err);
    }
    if (st == HX_OK) st = sync_status(t, st, &err, "mlp slices");
    if (st != HX_OK) {
      fprintf(stderr, "FAIL mlp split C %zu ln %d: %s\n", C, ln, err.msg);
      ++bad;
    } else {
      d2h(ha, dya, rows * C * 2), d2h(hb, dyb, rows * C * 2);
      size_t diff = 0, same_as_x = 0;
      for (size_t i = 0; i < rows * C; ++i) diff += ha[i] != hb[i], same_as_x += ha[i] == hx[i];
      printf("  mlp split C %zu %s%s rows %zu (rounds of %zu): %zu values differ from the slices', %zu unchanged\n", C,
             net_dtype_name(dt), ln ? " ln" : "", rows, r1, diff, same_as_x);
      if (diff || same_as_x > rows * C / 16) ++bad; /* the MLP changes nearly every value */
    }
    cudaFree(dx), cudaFree(dya), cudaFree(dyb), cudaFree(dw1), cudaFree(dw2), cudaFree(db1), cudaFree(db2);
    cudaFree(dlg), cudaFree(dlb), cudaFree(scr), cudaFree(scr1);
    free(hx), free(hw1), free(hw2), free(hb1), free(hb2), free(ha), free(hb), free(lg), free(lb);
  }
  assert_int_equal(bad, 0);
}

/* y [rows, H] = silu(x wa^T + ba) * (x wb^T + bb) (nl_linear_swiglu_gpu), weights of Linear's scale; nb: no bias */
static size_t run_lsw(tctx *t, net_dtype dt, size_t rows, size_t C, size_t H, int nb) {
  const double eps = eps_of(dt);
  const uint64_t seed = case_seed(t, 71 + (uint64_t)dt * 2 + (uint64_t)nb, rows, C);
  const size_t H2 = 2 * H;
  uint16_t *hx = xmalloc(rows * C * 2), *hw1 = xmalloc(H2 * C * 2), *hb1 = xmalloc(H2 * 2), *hy = xmalloc((rows + 1) * H * 2);
  float *w1 = xmalloc(H2 * C * 4), *b1 = xmalloc(H2 * 4), *xr = xmalloc(C * 4), *yr = xmalloc(H * 4), *s1 = xmalloc(H2 * 4);
  size_t *sel = xmalloc(96 * sizeof *sel);
  const size_t nsel = pick_rows(rows, sel, seed);
  fill(dt, hx, NULL, rows * C, seed, 1, 1.0f, 0.0f);
  fill(dt, hw1, w1, H2 * C, seed, 2, (float)(2.0 / sqrt((double)C)), 0.0f);
  fill(dt, hb1, b1, H2, seed, 4, 0.5f, 0.0f);
  void *dx = dmalloc(rows * C * 2), *dy = dmalloc((rows + 1) * H * 2), *dw1 = dmalloc(H2 * C * 2), *db1 = dmalloc(H2 * 2);
  h2d(dx, hx, rows * C * 2), h2d(dw1, hw1, H2 * C * 2), h2d(db1, hb1, H2 * 2);
  poison(dy, (rows + 1) * H * 2);
  tally ta;
  tally_init(&ta, "linear+swiglu %s rows %zu C %zu H %zu%s", net_dtype_name(dt), rows, C, H, nb ? " no bias" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 0;
  if (sync_status(t, nl_linear_swiglu_gpu(dy, dx, dw1, nb ? NULL : db1, rows, C, H, dt, t->stream, &err), &err,
                  ta.what) != HX_OK) {
    bad = 1;
  } else {
    d2h(hy, dy, (rows + 1) * H * 2);
    tally_written(&ta, dt, hy, rows * H);
    tally_guard(&ta, hy, rows * H, (rows + 1) * H);
    for (size_t k = 0; k < nsel; ++k) {
      const size_t r = sel[k];
      to_f32(dt, xr, hx + r * C, C);
      assert_int_equal(nl_linear_swiglu_cpu(yr, xr, w1, nb ? NULL : b1, 1, C, H, NULL), HX_OK);
      for (size_t j = 0; j < H2; ++j) {
        double sum = nb ? 0.0 : fabs((double)b1[j]);
        for (size_t c = 0; c < C; ++c) sum += fabs((double)xr[c] * (double)w1[j * C + c]);
        s1[j] = (float)sum;
      }
      for (size_t j = 0; j < H; ++j) { /* rounding once, silu's hardware tanh, fp32 sums (silu's slope <= 1.1) */
        const double ab = (double)s1[j] * (double)s1[H + j];
        const double tol = eps * fabs((double)yr[j]) + 0x1p-12 * ab + 0x1p-20 * 2.2 * ab + 1e-6;
        tally_close(&ta, r * H + j, (double)net_to_float(dt, hy[r * H + j]), (double)yr[j], tol);
      }
    }
    bad = tally_end(&ta, rows == 1000);
  }
  cudaFree(dx), cudaFree(dy), cudaFree(dw1), cudaFree(db1);
  free(hx), free(hw1), free(hb1), free(hy), free(w1), free(b1), free(xr), free(yr), free(s1), free(sel);
  return bad;
}

static void test_linear_swiglu(void **state) {
  tctx *t = *state;
  /* mma.sync at C <= 96; the wgmma GEMM past it (sm_90a): flash3d-46m's 400 and 784 (k-blocks zero-filled past C),
   * 128, and 144 with H = 64 (a k-block of 16 columns, a column tile half past H) */
  static const size_t shapes[][2] = {{32, 64}, {64, 256}, {96, 384}, {96, 128},
                                     {128, 512}, {144, 64}, {400, 1600}, {784, 3136}};
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        if (nl_linear_swiglu_gpu_takes(shapes[si][0], shapes[si][1]) &&
            !nl_linear_swiglu_gpu_runs(shapes[si][0], shapes[si][1]))
          continue; /* the wgmma widths off sm_90a: HX_EUNSUPPORTED, test_bad_args */
        bad += run_lsw(t, (net_dtype)d, kRows[ri], shapes[si][0], shapes[si][1], 0);
      }
  bad += run_lsw(t, NET_F16, 1000, 96, 384, 1);
  bad += run_lsw(t, NET_BF16, 300, 64, 256, 1);
  if (nl_linear_swiglu_gpu_runs(400, 1600)) bad += run_lsw(t, NET_F16, 1000, 400, 1600, 1);
  assert_int_equal(bad, 0);
}

/* ---- layernorm ------------------------------------------------------------------------------------- */

/* mode 0: y = LN(x) out of place, 1: in place, 2: y += LN(x) (nl_layernorm_add_gpu) on a random residual y,
 * 3 and 4: modes 0 and 2 with gamma and beta 4 bytes past 16-byte alignment (the kernels' scalar loads), 5: y[r] =
 * LN(x[idx[r]]) (nl_layernorm_rows_gpu) with idx drawn at random, repeats and unread rows included */
static size_t run_layernorm(tctx *t, net_dtype dt, size_t rows, size_t C, int mode) {
  const double eps = eps_of(dt);
  const float ln_eps = 1e-5f;
  const int in_place = mode == 1;
  /* modes 0 and 1 keep their earlier seeds (10 + 2 dt + in_place), so recorded run seeds still reproduce */
  const uint64_t seed = case_seed(t, mode < 2    ? 10 + (uint64_t)dt * 2 + (uint64_t)mode
                                     : mode == 2 ? 30 + (uint64_t)dt
                                     : mode == 5 ? 50 + (uint64_t)dt
                                                 : 40 + (uint64_t)dt * 2 + (uint64_t)(mode == 4),
                                  rows, C);
  const size_t goff = mode == 3 || mode == 4;
  const int add = mode == 2 || mode == 4;
  const size_t n = rows * C;
  uint16_t *hx = xmalloc(n * 2), *hy = xmalloc((n + 2 * C) * 2);
  float *xf = xmalloc(n * 4), *yf = xmalloc(n * 4), *g = xmalloc(C * 4), *b = xmalloc(C * 4);
  uint16_t *hr = add ? xmalloc(n * 2) : NULL;
  float *rf = add ? xmalloc(n * 4) : NULL;
  /* odd rows centred on 4 (the mean matters), spreads 0.5, 1.5, 2.5 by row */
  for (size_t r = 0; r < rows; ++r)
    fill(dt, hx + r * C, xf + r * C, C, seed, 1 + r, 0.5f + (float)(r % 3), r % 2 ? 4.0f : 0.0f);
  for (size_t c = 0; c < C; ++c) g[c] = 1.0f + 0.5f * unit(seed, 0, c), b[c] = 0.5f * unit(seed, 0, C + c);
  uint32_t *idx = NULL;
  if (mode == 5) { /* the reference on the gathered rows, which the tolerances below then describe */
    idx = xmalloc(rows * 4);
    float *xg = xmalloc(n * 4);
    for (size_t r = 0; r < rows; ++r) idx[r] = (uint32_t)(hx_rng_u64(seed, 7, r) % rows);
    for (size_t r = 0; r < rows; ++r) memcpy(xg + r * C, xf + (size_t)idx[r] * C, C * 4);
    assert_int_equal(nl_layernorm_rows_cpu(yf, xf, idx, rows, g, b, rows, C, ln_eps, NULL), HX_OK);
    float *yg = xmalloc(n * 4);
    assert_int_equal(nl_layernorm_cpu(yg, xg, g, b, rows, C, ln_eps, NULL), HX_OK);
    assert_memory_equal(yg, yf, n * 4); /* the CPU form is LN of the gathered rows */
    free(yg);
    memcpy(xf, xg, n * 4);
    free(xg);
  } else {
    assert_int_equal(nl_layernorm_cpu(yf, xf, g, b, rows, C, ln_eps, NULL), HX_OK);
  }
  if (add) { /* the residual: spread 3, so the sum's rounding is on a different scale than LN's */
    for (size_t r = 0; r < rows; ++r) fill(dt, hr + r * C, rf + r * C, C, seed ^ 0x5eedu, 1 + r, 3.0f, 1.0f);
    float *sum = xmalloc(n * 4);
    memcpy(sum, rf, n * 4);
    assert_int_equal(nl_layernorm_add_cpu(sum, xf, g, b, rows, C, ln_eps, NULL), HX_OK);
    for (size_t i = 0; i < n; ++i) assert_true(fabsf(sum[i] - (rf[i] + yf[i])) <= 1e-6f * (1.0f + fabsf(sum[i])));
    memcpy(yf, sum, n * 4);
    free(sum);
  }
  /* output between two guard rows */
  uint16_t *dbuf = dmalloc((n + 2 * C) * 2);
  float *dg0 = dmalloc((C + 1) * 4), *db0 = dmalloc((C + 1) * 4), *dg = dg0 + goff, *dbb = db0 + goff;
  uint16_t *dx = in_place ? dbuf + C : dmalloc(n * 2), *dy = dbuf + C;
  uint32_t *didx = idx ? dmalloc(rows * 4) : NULL;
  poison(dbuf, (n + 2 * C) * 2);
  h2d(dx, hx, n * 2), h2d(dg, g, C * 4), h2d(dbb, b, C * 4);
  if (idx) h2d(didx, idx, rows * 4);
  if (add) h2d(dy, hr, n * 2);
  tally ta;
  tally_init(&ta, "layernorm %s rows %zu C %zu%s", net_dtype_name(dt), rows, C,
             mode == 1 ? " in place" : mode == 2 ? " + residual" : mode == 3 ? " gamma unaligned"
             : mode == 4 ? " + residual, gamma unaligned" : mode == 5 ? " rows by index" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 0;
  const hx_status st = add    ? nl_layernorm_add_gpu(dy, dx, dg, dbb, rows, C, ln_eps, dt, t->stream, &err)
                       : idx ? nl_layernorm_rows_gpu(dy, dx, didx, rows, dg, dbb, rows, C, ln_eps, dt, t->stream, &err)
                             : nl_layernorm_gpu(dy, dx, dg, dbb, rows, C, ln_eps, dt, t->stream, &err);
  if (sync_status(t, st, &err, ta.what) != HX_OK) {
    bad = 1;
  } else {
    d2h(hy, dbuf, (n + 2 * C) * 2);
    tally_guard(&ta, hy, 0, C);
    tally_guard(&ta, hy, C + n, n + 2 * C);
    tally_written(&ta, dt, hy + C, n);
    for (size_t r = 0; r < rows; ++r) {
      double m = 0, v = 0, mx = 0;
      for (size_t c = 0; c < C; ++c) m += (double)xf[r * C + c], mx = fmax(mx, fabs((double)xf[r * C + c]));
      m /= (double)C;
      for (size_t c = 0; c < C; ++c) v += ((double)xf[r * C + c] - m) * ((double)xf[r * C + c] - m);
      const double sigma = sqrt(v / (double)C + (double)ln_eps);
      for (size_t c = 0; c < C; ++c) {
        const size_t i = r * C + c;
        const double xhat = ((double)xf[i] - m) / sigma;
        const double tol = eps * fabs((double)yf[i]) +
                           2 * fabs((double)g[c]) * (double)C * 0x1p-24 * (mx / sigma + fabs(xhat)) + 1e-6;
        tally_close(&ta, i, (double)net_to_float(dt, hy[C + i]), (double)yf[i], tol);
      }
    }
    if (add) { /* x is only read */
      uint16_t *hx2 = xmalloc(n * 2);
      d2h(hx2, dx, n * 2);
      if (memcmp(hx2, hx, n * 2)) {
        fprintf(stderr, "%s: x changed\n", ta.what);
        ++bad;
      }
      free(hx2);
    }
    bad += tally_end(&ta, rows == 1000);
  }
  cudaFree(dbuf), cudaFree(dg0), cudaFree(db0), cudaFree(didx);
  if (!in_place) cudaFree(dx);
  free(hx), free(hy), free(xf), free(yf), free(g), free(b), free(hr), free(rf), free(idx);
  return bad;
}

static void test_layernorm(void **state) {
  tctx *t = *state;
  /* every lane-group width (C / 8 rounded up to 1, 2, 4, 8, 16, 32 lanes a row) full and partial (24: 3 of 4
   * lanes, 40: 5 of 8, 72: 9 of 16, 136: 17 of 32), 2 to 4 vectors a lane (1000: the 4th partial), the block
   * kernel above 1024; each width again with gamma and beta off 16-byte alignment */
  static const size_t Cs[] = {8, 16, 24, 32, 40, 64, 72, 128, 136, 256, 512, 520, 1000, 1024, 1032, 2048};
  size_t bad = 0;
  for (int d = 0; d < 2; ++d) {
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ++ci)
        if (kRows[ri] < 65537 || Cs[ci] <= 512) bad += run_layernorm(t, (net_dtype)d, kRows[ri], Cs[ci], 0);
    bad += run_layernorm(t, (net_dtype)d, 1000, 256, 1);
    bad += run_layernorm(t, (net_dtype)d, 1001, 32, 1); /* 8 rows a warp, the last warp partly empty */
    bad += run_layernorm(t, (net_dtype)d, 7, 2048, 1);
    /* y += LN(x): both kernels, narrow rows sharing a warp (32), a partly empty last warp, several vectors a lane */
    bad += run_layernorm(t, (net_dtype)d, 1001, 32, 2);
    bad += run_layernorm(t, (net_dtype)d, 600, 256, 2);
    bad += run_layernorm(t, (net_dtype)d, 300, 1000, 2);
    bad += run_layernorm(t, (net_dtype)d, 7, 2048, 2);
    for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ++ci)
      bad += run_layernorm(t, (net_dtype)d, 1001, Cs[ci], 3) + run_layernorm(t, (net_dtype)d, 1001, Cs[ci], 4) +
             run_layernorm(t, (net_dtype)d, 1001, Cs[ci], 5);
    bad += run_layernorm(t, (net_dtype)d, 65537, 32, 5) + run_layernorm(t, (net_dtype)d, 7, 2048, 5);
  }
  assert_int_equal(bad, 0);
}

/* ---- affine + activation, swiglu --------------------------------------------------------------------- */

/* 40 and 7: groups of 8 and single values whose row length is not a power of two */
static const size_t kCs[] = {8, 32, 64, 256, 512, 12, 40, 7};

static size_t run_affine(tctx *t, net_dtype dt, size_t rows, size_t C, nl_act act, int off) {
  const double eps = eps_of(dt);
  const uint64_t seed = case_seed(t, 20 + (uint64_t)dt * 4 + (uint64_t)act * 2 + (uint64_t)off, rows, C);
  const size_t n = rows * C, tot = n + C + (size_t)off;
  uint16_t *hx = xmalloc(n * 2), *hy = xmalloc(tot * 2);
  float *xf = xmalloc(n * 4), *yf = xmalloc(n * 4), *sc = xmalloc(C * 4), *sh = xmalloc(C * 4);
  fill(dt, hx, xf, n, seed, 1, 3.0f, 0.0f);
  for (size_t c = 0; c < C; ++c) sc[c] = 1.5f * unit(seed, 2, c), sh[c] = unit(seed, 3, c);
  assert_int_equal(nl_affine_act_cpu(yf, xf, sc, sh, rows, C, act, NULL), HX_OK);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((n + 8) * 2);
  float *dsc = dmalloc(C * 4), *dsh = dmalloc(C * 4);
  uint16_t *dx = dxb + off, *dy = dbuf + off;
  poison(dbuf, tot * 2);
  h2d(dx, hx, n * 2), h2d(dsc, sc, C * 4), h2d(dsh, sh, C * 4);
  tally ta;
  tally_init(&ta, "affine_act %s rows %zu C %zu %s%s", net_dtype_name(dt), rows, C, act ? "gelu" : "none",
             off ? " unaligned" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_affine_act_gpu(dy, dx, dsc, dsh, rows, C, act, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    d2h(hy, dbuf, tot * 2);
    tally_guard(&ta, hy, 0, (size_t)off);
    tally_guard(&ta, hy, (size_t)off + n, tot);
    tally_written(&ta, dt, hy + off, n);
    for (size_t i = 0; i < n; ++i) {
      const double a = fabs((double)xf[i] * (double)sc[i % C]) + fabs((double)sh[i % C]);
      tally_close(&ta, i, (double)net_to_float(dt, hy[(size_t)off + i]), (double)yf[i],
                  eps * fabs((double)yf[i]) + 0x1p-20 * a + 1e-6);
    }
    bad = tally_end(&ta, rows == 1000 && C == 256);
  }
  cudaFree(dbuf), cudaFree(dxb), cudaFree(dsc), cudaFree(dsh);
  free(hx), free(hy), free(xf), free(yf), free(sc), free(sh);
  return bad;
}

static size_t run_swiglu(tctx *t, net_dtype dt, size_t rows, size_t H, int off) {
  const double eps = eps_of(dt);
  const uint64_t seed = case_seed(t, 30 + (uint64_t)dt * 2 + (uint64_t)off, rows, H);
  const size_t nx = rows * 2 * H, n = rows * H, tot = n + H + (size_t)off;
  uint16_t *hx = xmalloc(nx * 2), *hy = xmalloc(tot * 2);
  float *xf = xmalloc(nx * 4), *yf = xmalloc(n * 4);
  fill(dt, hx, xf, nx, seed, 1, 4.0f, 0.0f);
  assert_int_equal(nl_swiglu_cpu(yf, xf, rows, H, NULL), HX_OK);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((nx + 8) * 2);
  uint16_t *dx = dxb + off, *dy = dbuf + off;
  poison(dbuf, tot * 2);
  h2d(dx, hx, nx * 2);
  tally ta;
  tally_init(&ta, "swiglu %s rows %zu H %zu%s", net_dtype_name(dt), rows, H, off ? " unaligned" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_swiglu_gpu(dy, dx, rows, H, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    d2h(hy, dbuf, tot * 2);
    tally_guard(&ta, hy, 0, (size_t)off);
    tally_guard(&ta, hy, (size_t)off + n, tot);
    tally_written(&ta, dt, hy + off, n);
    for (size_t i = 0; i < n; ++i)
      tally_close(&ta, i, (double)net_to_float(dt, hy[(size_t)off + i]), (double)yf[i],
                  eps * fabs((double)yf[i]) + 0x1p-20 * fabs((double)yf[i]) + 1e-6);
    bad = tally_end(&ta, rows == 1000 && H == 256);
  }
  cudaFree(dbuf), cudaFree(dxb);
  free(hx), free(hy), free(xf), free(yf);
  return bad;
}

static void test_affine_swiglu(void **state) {
  tctx *t = *state;
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t ci = 0; ci < sizeof kCs / sizeof kCs[0]; ++ci)
        for (int off = 0; off < 2; ++off) {
          if (off && kRows[ri] == 65537) continue;
          bad += run_affine(t, (net_dtype)d, kRows[ri], kCs[ci], NL_ACT_NONE, off);
          bad += run_affine(t, (net_dtype)d, kRows[ri], kCs[ci], NL_ACT_GELU, off);
          bad += run_swiglu(t, (net_dtype)d, kRows[ri], kCs[ci], off);
        }
  /* in place affine */
  for (int d = 0; d < 2; ++d) {
    const net_dtype dt = (net_dtype)d;
    const size_t rows = 1000, C = 64, n = rows * C;
    uint16_t *hx = xmalloc(n * 2), *hy = xmalloc(n * 2), *hz = xmalloc(n * 2);
    float sc[64], sh[64];
    for (size_t c = 0; c < C; ++c) sc[c] = unit(t->seed, 41, c), sh[c] = unit(t->seed, 42, c);
    fill(dt, hx, NULL, n, t->seed, 43, 2.0f, 0.0f);
    uint16_t *dx = dmalloc(n * 2), *dy = dmalloc(n * 2);
    float *dsc = dmalloc(C * 4), *dsh = dmalloc(C * 4);
    h2d(dx, hx, n * 2), h2d(dsc, sc, C * 4), h2d(dsh, sh, C * 4);
    hx_err err = {HX_OK, ""};
    assert_int_equal(nl_affine_act_gpu(dy, dx, dsc, dsh, rows, C, NL_ACT_GELU, dt, t->stream, &err), HX_OK);
    assert_int_equal(nl_affine_act_gpu(dx, dx, dsc, dsh, rows, C, NL_ACT_GELU, dt, t->stream, &err), HX_OK);
    assert_int_equal(cudaStreamSynchronize(t->stream), cudaSuccess);
    d2h(hy, dy, n * 2), d2h(hz, dx, n * 2);
    assert_memory_equal(hy, hz, n * 2);
    cudaFree(dx), cudaFree(dy), cudaFree(dsc), cudaFree(dsh);
    free(hx), free(hy), free(hz);
  }
  assert_int_equal(bad, 0);
}

/* ---- add, gather, conversions (exact) ---------------------------------------------------------------- */

static size_t run_add(tctx *t, net_dtype dt, size_t n, int off, int in_place) {
  const uint64_t seed = case_seed(t, 50 + (uint64_t)dt * 4 + (uint64_t)off * 2 + (uint64_t)in_place, n, 0);
  const size_t tot = n + 8 + (size_t)off;
  uint16_t *hx = xmalloc(n * 2), *hy0 = xmalloc(n * 2), *hy = xmalloc(tot * 2);
  float *xf = xmalloc(n * 4), *yf = xmalloc(n * 4);
  fill(dt, hx, xf, n, seed, 1, 2.0f, 0.0f);
  fill(dt, hy0, yf, n, seed, 2, 3.0f, 0.0f);
  if (in_place) memcpy(xf, yf, n * 4);
  assert_int_equal(nl_add_cpu(yf, xf, n, NULL), HX_OK);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((n + 8) * 2);
  uint16_t *dy = dbuf + off, *dx = in_place ? dy : dxb + off;
  poison(dbuf, tot * 2);
  h2d(dy, hy0, n * 2);
  if (!in_place) h2d(dx, hx, n * 2);
  tally ta;
  tally_init(&ta, "add %s n %zu%s%s", net_dtype_name(dt), n, off ? " unaligned" : "", in_place ? " in place" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_add_gpu(dy, dx, n, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    /* two dtype values add exactly or within fp32 rounding, then one rounding: the CPU does the same ops */
    bad = tally_exact(&ta, dt, hy, dbuf, (size_t)off, n, tot, yf);
  }
  cudaFree(dbuf), cudaFree(dxb);
  free(hx), free(hy0), free(hy), free(xf), free(yf);
  return bad;
}

static size_t run_gather(tctx *t, net_dtype dt, size_t rows, size_t C, int off) {
  const uint64_t seed = case_seed(t, 60 + (uint64_t)dt * 2 + (uint64_t)off, rows, C);
  const size_t nx_rows = rows / 2 + 3, nx = nx_rows * C, n = rows * C, tot = n + C + (size_t)off;
  uint16_t *hx = xmalloc(nx * 2), *hy = xmalloc(tot * 2);
  uint32_t *idx = xmalloc(rows * 4);
  fill(dt, hx, NULL, nx, seed, 1, 5.0f, 0.0f);
  for (size_t r = 0; r < rows; ++r) idx[r] = (uint32_t)(hx_rng_u64(seed, 2, r) % nx_rows);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((nx + 8) * 2);
  uint32_t *didx = dmalloc(rows * 4);
  uint16_t *dx = dxb + off, *dy = dbuf + off;
  poison(dbuf, tot * 2);
  h2d(dx, hx, nx * 2), h2d(didx, idx, rows * 4);
  tally ta;
  tally_init(&ta, "gather %s rows %zu C %zu%s", net_dtype_name(dt), rows, C, off ? " unaligned" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_gather_rows_gpu(dy, dx, didx, rows, C, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    d2h(hy, dbuf, tot * 2);
    tally_guard(&ta, hy, 0, (size_t)off);
    tally_guard(&ta, hy, (size_t)off + n, tot);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < C; ++c) tally_bits(&ta, dt, r * C + c, hy[(size_t)off + r * C + c], hx[(size_t)idx[r] * C + c]);
    bad = tally_end(&ta, 0);
  }
  cudaFree(dbuf), cudaFree(dxb), cudaFree(didx);
  free(hx), free(hy), free(idx);
  return bad;
}

/* y[r] = x[idx[r]] + u[r]: one fp32 sum of two dtype values and one rounding, as the CPU does it on the same
 * values: bit for bit. idx draws rows of x at random (repeats and rows never taken). */
static size_t run_gather_add(tctx *t, net_dtype dt, size_t rows, size_t C, int off) {
  const uint64_t seed = case_seed(t, 90 + (uint64_t)dt * 2 + (uint64_t)off, rows, C);
  const size_t nx_rows = rows / 2 + 3, nx = nx_rows * C, n = rows * C, tot = n + C + (size_t)off;
  uint16_t *hx = xmalloc(nx * 2), *hu = xmalloc(n * 2), *hy = xmalloc(tot * 2);
  float *xf = xmalloc(nx * 4), *uf = xmalloc(n * 4), *yf = xmalloc(n * 4);
  uint32_t *idx = xmalloc(rows * 4);
  fill(dt, hx, xf, nx, seed, 1, 5.0f, 0.0f);
  fill(dt, hu, uf, n, seed, 3, 5.0f, 0.0f);
  for (size_t r = 0; r < rows; ++r) idx[r] = (uint32_t)(hx_rng_u64(seed, 2, r) % nx_rows);
  hx_err err = {HX_OK, ""};
  assert_int_equal(nl_gather_add_cpu(yf, xf, idx, uf, rows, C, &err), HX_OK);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((nx + 8) * 2), *dub = dmalloc((n + 8) * 2);
  uint32_t *didx = dmalloc(rows * 4);
  uint16_t *dx = dxb + off, *du = dub + off, *dy = dbuf + off;
  poison(dbuf, tot * 2);
  h2d(dx, hx, nx * 2), h2d(du, hu, n * 2), h2d(didx, idx, rows * 4);
  tally ta;
  tally_init(&ta, "gather add %s rows %zu C %zu%s", net_dtype_name(dt), rows, C, off ? " unaligned" : "");
  size_t bad = 1;
  if (sync_status(t, nl_gather_add_gpu(dy, dx, didx, du, rows, C, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    bad = tally_exact(&ta, dt, hy, dbuf, (size_t)off, n, tot, yf);
  }
  cudaFree(dbuf), cudaFree(dxb), cudaFree(dub), cudaFree(didx);
  free(hx), free(hu), free(hy), free(xf), free(uf), free(yf), free(idx);
  return bad;
}

/* fp32 -> dtype on values of every kind: random magnitudes over the whole exponent range, exact ties of the
 * dtype, subnormals, signed zeros, infinities, NaN; then dtype -> fp32 on all 65536 bit patterns. */
static size_t run_convert(tctx *t, net_dtype dt, size_t n, int off) {
  const uint64_t seed = case_seed(t, 70 + (uint64_t)dt * 2 + (uint64_t)off, n, 0);
  const size_t tot = n + 8 + (size_t)off;
  float *xf = xmalloc(n * 4);
  uint16_t *hy = xmalloc(tot * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = hx_rng_u64(seed, 1, i);
    switch (r % 8) {
    case 0: { /* the midpoint between two neighbouring dtype values: a tie */
      const uint16_t m = (uint16_t)((r >> 8) % (dt == NET_F16 ? 0x7BFFu : 0x7F7Fu));
      xf[i] = (float)(((double)net_to_float(dt, m) + (double)net_to_float(dt, (uint16_t)(m + 1u))) / 2);
      break;
    }
    case 1: { /* any fp32 bit pattern */
      const uint32_t u = (uint32_t)(r >> 16);
      memcpy(&xf[i], &u, 4);
      break;
    }
    case 2: {
      static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-24f, 0x1p-25f, 65520.0f, 65519.0f, 1e-40f};
      xf[i] = sp[(r >> 8) % (sizeof sp / sizeof sp[0])];
      break;
    }
    default: /* a random magnitude around the dtype's range */
      xf[i] = unit(seed, 2, i) * ldexpf(1.0f, (int)((r >> 8) % 40) - 26);
    }
  }
  float *dxb = dmalloc((n + 8) * 4);
  uint16_t *dbuf = dmalloc(tot * 2);
  poison(dbuf, tot * 2);
  h2d(dxb + off, xf, n * 4);
  tally ta;
  tally_init(&ta, "from_f32 %s n %zu%s", net_dtype_name(dt), n, off ? " unaligned" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_from_f32_gpu(dbuf + off, dxb + off, n, dt, t->stream, &err), &err, ta.what) == HX_OK) {
    bad = tally_exact(&ta, dt, hy, dbuf, (size_t)off, n, tot, xf);
  }
  cudaFree(dxb), cudaFree(dbuf);
  free(xf), free(hy);

  /* dtype -> fp32: every bit pattern, placed at the same offset */
  const size_t m = 65536, mt = m + 8 + (size_t)off;
  uint16_t *hp = xmalloc(m * 2);
  float *hf = xmalloc(mt * 4);
  for (size_t i = 0; i < m; ++i) hp[i] = (uint16_t)i;
  uint16_t *dp = dmalloc((m + 8) * 2);
  float *df = dmalloc(mt * 4);
  assert_int_equal(cudaMemset(df, 0xFF, mt * 4), cudaSuccess);
  h2d(dp + off, hp, m * 2);
  tally tb;
  tally_init(&tb, "to_f32 %s all patterns%s", net_dtype_name(dt), off ? " unaligned" : "");
  if (sync_status(t, nl_to_f32_gpu(df + off, dp + off, m, dt, t->stream, &err), &err, tb.what) == HX_OK) {
    d2h(hf, df, mt * 4);
    for (size_t i = 0; i < mt; ++i) {
      uint32_t got, want;
      memcpy(&got, &hf[i], 4);
      if (i < (size_t)off || i >= (size_t)off + m) {
        if (got != 0xFFFFFFFFu) tb.bad++;
        continue;
      }
      const float w = net_to_float(dt, hp[i - (size_t)off]);
      memcpy(&want, &w, 4);
      tb.n++;
      if (got != want && !(isnan(w) && isnan(hf[i]))) {
        if (tb.bad < 5) fprintf(stderr, "  %s: %04zx -> %08x, want %08x\n", tb.what, i - (size_t)off, got, want);
        tb.bad++;
      }
    }
    bad += tally_end(&tb, 0);
  } else {
    bad++;
  }
  cudaFree(dp), cudaFree(df);
  free(hp), free(hf);
  return bad;
}

static void test_add_gather_convert(void **state) {
  tctx *t = *state;
  static const size_t ns[] = {1, 7, 8, 1000, 65537 * 64 + 3};
  size_t bad = 0;
  for (int d = 0; d < 2; ++d) {
    const net_dtype dt = (net_dtype)d;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i)
      for (int off = 0; off < 2; ++off) {
        bad += run_add(t, dt, ns[i], off, 0);
        bad += run_convert(t, dt, ns[i], off);
      }
    bad += run_add(t, dt, 1000, 0, 1);
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t ci = 0; ci < sizeof kCs / sizeof kCs[0]; ++ci)
        for (int off = 0; off < 2; ++off) {
          bad += run_gather(t, dt, kRows[ri], kCs[ci], off);
          bad += run_gather_add(t, dt, kRows[ri], kCs[ci], off);
        }
  }
  assert_int_equal(bad, 0);
}

/* ---- segment max (exact) ------------------------------------------------------------------------------ */

static size_t run_segmax(tctx *t, net_dtype dt, size_t segments, size_t C, int use_idx, int off) {
  const uint64_t seed = case_seed(t, 80 + (uint64_t)dt * 4 + (uint64_t)use_idx * 2 + (uint64_t)off, segments, C);
  uint32_t *ptr = xmalloc((segments + 1) * 4);
  ptr[0] = 0;
  for (size_t s = 0; s < segments; ++s) ptr[s + 1] = ptr[s] + (uint32_t)(hx_rng_u64(seed, 1, s) % 7); /* 0..6 */
  const size_t members = ptr[segments], nx_rows = members + 1, nx = nx_rows * C;
  const size_t n = segments * C, tot = n + C + (size_t)off;
  uint32_t *idx = xmalloc(nx_rows * 4);
  for (size_t j = 0; j < nx_rows; ++j) idx[j] = (uint32_t)j;
  for (size_t j = nx_rows; j > 1; --j) { /* a random permutation of x's rows */
    const size_t k = (size_t)(hx_rng_u64(seed, 2, j) % j);
    const uint32_t tmp = idx[j - 1];
    idx[j - 1] = idx[k], idx[k] = tmp;
  }
  uint16_t *hx = xmalloc(nx * 2), *hy = xmalloc(tot * 2);
  float *xf = xmalloc(nx * 4), *yf = xmalloc(n * 4);
  fill(dt, hx, xf, nx, seed, 3, 4.0f, -1.0f); /* mostly negative: a clamp at 0 would show */
  assert_int_equal(nl_segment_max_cpu(yf, xf, use_idx ? idx : NULL, ptr, segments, C, NULL), HX_OK);
  uint16_t *dbuf = dmalloc(tot * 2), *dxb = dmalloc((nx + 8) * 2);
  uint32_t *didx = dmalloc(nx_rows * 4), *dptr = dmalloc((segments + 1) * 4);
  uint16_t *dx = dxb + off, *dy = dbuf + off;
  poison(dbuf, tot * 2);
  h2d(dx, hx, nx * 2), h2d(didx, idx, nx_rows * 4), h2d(dptr, ptr, (segments + 1) * 4);
  tally ta;
  tally_init(&ta, "segment_max %s segments %zu C %zu%s%s", net_dtype_name(dt), segments, C, use_idx ? "" : " no idx",
             off ? " unaligned" : "");
  hx_err err = {HX_OK, ""};
  size_t bad = 1;
  if (sync_status(t, nl_segment_max_gpu(dy, dx, use_idx ? didx : NULL, dptr, segments, C, dt, t->stream, &err), &err,
                  ta.what) == HX_OK) {
    bad = tally_exact(&ta, dt, hy, dbuf, (size_t)off, n, tot, yf);
  }
  cudaFree(dbuf), cudaFree(dxb), cudaFree(didx), cudaFree(dptr);
  free(ptr), free(idx), free(hx), free(hy), free(xf), free(yf);
  return bad;
}

static void test_segment_max(void **state) {
  tctx *t = *state;
  size_t bad = 0;
  for (int d = 0; d < 2; ++d)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ++ri)
      for (size_t ci = 0; ci < sizeof kCs / sizeof kCs[0]; ++ci) {
        bad += run_segmax(t, (net_dtype)d, kRows[ri], kCs[ci], 1, 0);
        bad += run_segmax(t, (net_dtype)d, kRows[ri], kCs[ci], 0, 0);
        if (kRows[ri] < 65537) bad += run_segmax(t, (net_dtype)d, kRows[ri], kCs[ci], 1, 1);
      }
  assert_int_equal(bad, 0);
}

/* ---- fixed windows over packed clouds (exact) --------------------------------------------------------- */

/* B clouds of random sizes (some empty, some exactly a multiple of S), nb windows enough for the largest; the
 * tables between poisoned guards. */
static size_t run_windows(tctx *t, uint32_t B, uint32_t S) {
  const uint64_t seed = case_seed(t, 90, B, S);
  uint32_t *off = xmalloc((B + 1) * 4);
  off[0] = 0;
  uint32_t most = 0;
  for (uint32_t c = 0; c < B; ++c) {
    const uint64_t r = hx_rng_u64(seed, 1, c);
    const uint32_t len = r % 5 == 0 ? 0 : r % 5 == 1 ? S * (uint32_t)(1 + r / 5 % 4) : (uint32_t)(r / 5 % (6 * S));
    off[c + 1] = off[c] + len, most = len > most ? len : most;
  }
  const uint32_t nb = (most + S - 1) / S + (uint32_t)(hx_rng_u64(seed, 2, 0) % 2); /* sometimes one spare */
  const uint32_t w = nb ? nb : 1;
  const size_t n = (size_t)B * w + 1, tot = n + 2;
  uint32_t *rs = xmalloc(n * 4), *rc = xmalloc(n * 4), *hs = xmalloc(tot * 4), *hc = xmalloc(tot * 4);
  assert_int_equal(nl_windows_cpu(rs, rc, off, B, w, S, NULL), HX_OK);
  uint32_t *ds = dmalloc(tot * 4), *dc = dmalloc(tot * 4), *doff = dmalloc((B + 1) * 4);
  poison(ds, tot * 4), poison(dc, tot * 4);
  h2d(doff, off, (B + 1) * 4);
  hx_err err = {HX_OK, ""};
  char what[96];
  snprintf(what, sizeof what, "windows B %u S %u nb %u", B, S, w);
  size_t bad = 1;
  if (sync_status(t, nl_windows_gpu(ds + 1, dc + 1, doff, B, w, S, t->stream, &err), &err, what) == HX_OK) {
    d2h(hs, ds, tot * 4), d2h(hc, dc, tot * 4);
    bad = 0;
    if (hs[0] != 0xFFFFFFFFu || hc[0] != 0xFFFFFFFFu || hs[tot - 1] != 0xFFFFFFFFu || hc[tot - 1] != 0xFFFFFFFFu) bad++;
    for (size_t i = 0; i < n; ++i)
      if (hs[i + 1] != rs[i] || hc[i + 1] != rc[i]) {
        if (bad < 5)
          fprintf(stderr, "  %s: window %zu: got [%u, +%u), want [%u, +%u)\n", what, i, hs[i + 1], hc[i + 1], rs[i],
                  rc[i]);
        bad++;
      }
    if (bad) fprintf(stderr, "  %s: %zu mismatches (guards included)\n", what, bad);
  }
  cudaFree(ds), cudaFree(dc), cudaFree(doff);
  free(off), free(rs), free(rc), free(hs), free(hc);
  return bad;
}

static void test_windows(void **state) {
  tctx *t = *state;
  size_t bad = 0;
  const uint32_t Bs[4] = {1, 2, 7, 300}, Ss[3] = {64, 512, 100};
  for (int b = 0; b < 4; ++b)
    for (int k = 0; k < 3; ++k) bad += run_windows(t, Bs[b], Ss[k]);
  assert_int_equal(bad, 0);
}

/* ---- bad arguments ------------------------------------------------------------------------------------ */

static void test_bad_args(void **state) {
  tctx *t = *state;
  uint16_t *d = dmalloc(4096 * 2);
  float *f = dmalloc(1024 * 4);
  hx_err err = {HX_OK, ""};
  cudaStream_t s = t->stream;
  size_t sbig = (size_t)1 << 40, szero = 0; /* scratch sizes handed to nl_mlp_gpu: enough, and none */
  assert_int_equal(nl_linear_gpu(NULL, d, d + 2048, d + 1024, NULL, 8, 8, 8, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, NULL, 8, 12, 8, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "multiples of 8"));
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, NULL, 8, 8, 0, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2049, d + 1024, NULL, 8, 8, 8, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "aligned"));
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, f + 1, 8, 8, 8, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, NULL, 8, 8, 8, NL_ACT_NONE, 0, (net_dtype)3, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, NULL, 8, 8, 8, (nl_act)5, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d, d + 1024, NULL, 8, 8, 8, NL_ACT_NONE, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, d + 16, 8, 8, 8, NL_ACT_NONE, 0, NET_F16, s, &err),
                   HX_EINVAL); /* the bias inside y */
  assert_non_null(strstr(err.msg, "overlaps"));
  assert_int_equal(nl_linear_gpu(t->blas, d, d + 2048, d + 1024, f, 8, 8, 8, NL_ACT_GELU, 1, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_gpu(t->blas, NULL, NULL, NULL, NULL, 0, 8, 8, NL_ACT_NONE, 0, NET_BF16, s, &err), HX_OK);
  assert_int_equal(nl_layernorm_gpu(d, d + 2048, f, f, 4, 12, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_gpu(d, d + 2048, f, f, 4, 8, -1.0f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_gpu(d, d + 2049, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_gpu(d, d + 4, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL); /* partial overlap */
  assert_int_equal(nl_layernorm_gpu(d, d + 2048, NULL, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_gpu(d, d + 2048, f, f, 4, 8, 1e-5f, (net_dtype)-1, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_add_gpu(d, d, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL); /* y += LN(y) */
  /* rows by index: no index, y overlapping x (also in place: a gathered row may be read after it is written) */
  assert_int_equal(nl_layernorm_rows_gpu(d, d + 2048, NULL, 4, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_rows_gpu(d, d, (const uint32_t *)f, 4, f, f, 4, 8, 1e-5f, NET_F16, s, &err),
                   HX_EINVAL);
  assert_int_equal(nl_layernorm_rows_gpu(d + 16, d, (const uint32_t *)f, 4, f, f, 2, 8, 1e-5f, NET_F16, s, &err),
                   HX_EINVAL); /* y's 2 rows clear x's first 2 but not its 4 */
  assert_int_equal(nl_layernorm_add_gpu(d, d + 4, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_add_gpu(d, d + 2048, f, f, 4, 12, 1e-5f, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_add_gpu(d, d + 2049, f, f, 4, 8, 1e-5f, NET_F16, s, &err), HX_EINVAL); /* unaligned */
  assert_int_equal(nl_affine_act_gpu(d, d + 2048, f, f, 4, 0, NL_ACT_NONE, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_affine_act_gpu(d, d + 2048, f, f, 4, 8, (nl_act)2, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 128, 256, NL_MLP_GELU, d, &sbig, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 112, 448, NL_MLP_SWIGLU, d, &sbig, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "GELU H = 4C at C = 32, 64, 128, 256"));
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 32, 64, NL_MLP_GELU, d, &sbig, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_mlp_gpu(d, d + 64, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, NET_F16, s, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "overlap"));
  assert_int_equal(nl_mlp_gpu(d, d + 2049, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_mlp_gpu(d, NULL, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, (net_dtype)3, s, &err), HX_EINVAL);
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 32, 128, (nl_mlp_kind)2, d, &sbig, NET_F16, s, &err),
                   HX_EINVAL);
  /* scratch: no size pointer; at C = 128, rows whose last round of tiles is at most half full need the Stream-K
   * partial sums (on the sm_90a kernel's device; elsewhere the call is HX_EUNSUPPORTED before it looks) */
  assert_int_equal(nl_mlp_gpu(d, d + 2048, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, NULL, NET_F16, s, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "scratch"));
  /* 3 rounds of 192-row tiles and one tile: the last round 1 tile of the SM count, so split on any device */
  const int sm_n = device_attr(cudaDevAttrMultiProcessorCount);
  assert_true(sm_n > 0);
  const size_t split_rows = (3 * (size_t)sm_n + 1) * 192;
  const hx_status sc = nl_ln_mlp_gpu(d, f, f, 1e-5f, d + 1024, NULL, d + 512, NULL, split_rows, 128, 512, NL_MLP_GELU,
                                     d, &szero, NET_F16, s, &err);
  if (t_sm90a_runs()) {
    assert_int_equal(sc, HX_EINVAL);
    assert_non_null(strstr(err.msg, "scratch of 0 bytes"));
  } else {
    assert_int_equal(sc, HX_EUNSUPPORTED);
  }
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, d + 1024, NULL, 4, 48, 192, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, d + 1024, NULL, 4, 96, 96, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, d + 1024, NULL, 4, 136, 544, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, d + 1024, NULL, 4, 128, 96, NET_F16, s, &err), HX_EUNSUPPORTED);
  /* the wgmma GEMM's widths: misaligned, or off sm_90a */
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2049, d + 1024, NULL, 4, 128, 512, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_swiglu_gpu_runs(400, 1600), t_sm90a_runs());
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2049, d + 1024, NULL, 4, 96, 128, NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 64, d + 1024, NULL, 4, 32, 64, NET_F16, s, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "overlap"));
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, NULL, NULL, 4, 32, 64, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_swiglu_gpu(d, d + 2048, d + 1024, NULL, 4, 32, 64, (net_dtype)3, s, &err), HX_EINVAL);
  assert_int_equal(nl_linear_swiglu_gpu(NULL, NULL, NULL, NULL, 0, 32, 64, NET_F16, s, &err), HX_OK); /* no rows */
  /* LayerNorm inside the kernel: widths it has no kernel for, NULLs, misalignment, overlap, dtype, kind */
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 2048, d + 1024, NULL, f, f + 64, 1e-5f, 4, 48, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 2049, d + 1024, NULL, f, f + 64, 1e-5f, 4, 32, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 64, d + 1024, NULL, f, f + 64, 1e-5f, 4, 32, NET_F16, s, &err),
                   HX_EINVAL); /* y (4 rows of 32) overlaps x */
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 2048, d + 1024, NULL, NULL, f + 64, 1e-5f, 4, 32, NET_F16, s, &err),
                   HX_EINVAL);
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 2048, d + 1024, NULL, f, f + 64, 1e-5f, 4, 32, (net_dtype)3, s, &err),
                   HX_EINVAL);
  assert_int_equal(nl_linear_ln_add_gpu(NULL, NULL, NULL, NULL, NULL, NULL, 1e-5f, 0, 32, NET_F16, s, &err), HX_OK);
  const uint32_t *ix = (const uint32_t *)(f + 512);
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, ix, 4, f, f + 64, 1e-5f, d + 1024, NULL, 4, 40, 120, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, ix, 4, f, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 64, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_ln_linear_gpu(d, d + 2049, ix, 4, f, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 96, NET_F16, s, &err),
                   HX_EUNSUPPORTED);
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, NULL, 3, f, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 96, NET_F16, s,
                                    &err), HX_EINVAL); /* 4 rows in order from 3 */
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, ix, 4, NULL, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 96, NET_F16, s, &err),
                   HX_EINVAL);
  assert_int_equal(nl_ln_linear_gpu(d, d + 64, ix, 4, f, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 96, NET_F16, s, &err),
                   HX_EINVAL); /* y (4 rows of 96) runs into x */
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, ix, 4, f, f + 64, 1e-5f, d + 1024, NULL, 4, 32, 96, (net_dtype)3, s,
                                    &err), HX_EINVAL);
  assert_int_equal(nl_ln_linear_gpu(NULL, NULL, NULL, 0, NULL, NULL, 1e-5f, NULL, NULL, 0, 32, 96, NET_F16, s, &err),
                   HX_OK); /* no rows */
  assert_int_equal(nl_ln_mlp_gpu(d, f, f + 64, 1e-5f, d + 1024, NULL, d + 512, NULL, 4, 128, 256, NL_MLP_GELU, d, &sbig, NET_F16, s,
                                 &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_ln_mlp_gpu(d + 1, f, f + 64, 1e-5f, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig,
                                 NET_F16, s, &err), HX_EUNSUPPORTED);
  assert_int_equal(nl_ln_mlp_gpu(d, NULL, f + 64, 1e-5f, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, NET_F16,
                                 s, &err), HX_EINVAL);
  assert_int_equal(nl_ln_mlp_gpu(d, f, f + 64, 1e-5f, d + 1024, NULL, d + 512, NULL, 4, 32, 128, (nl_mlp_kind)2, d, &sbig,
                                 NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_ln_mlp_gpu(d, f, f + 64, 1e-5f, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig,
                                 (net_dtype)3, s, &err), HX_EINVAL);
  /* eps as nl_layernorm_gpu takes it: finite, >= 0 */
  assert_int_equal(nl_linear_ln_add_gpu(d, d + 2048, d + 1024, NULL, f, f + 64, -1e-5f, 4, 32, NET_F16, s, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "eps"));
  assert_int_equal(nl_ln_linear_gpu(d, d + 2048, ix, 4, f, f + 64, NAN, d + 1024, NULL, 4, 32, 96, NET_F16, s, &err),
                   HX_EINVAL);
  assert_int_equal(nl_ln_mlp_gpu(d, f, f + 64, INFINITY, d + 1024, NULL, d + 512, NULL, 4, 32, 128, NL_MLP_GELU, d, &sbig, NET_F16,
                                 s, &err), HX_EINVAL);
  assert_int_equal(nl_swiglu_gpu(d, d + 2048, 4, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_swiglu_gpu(d, d + 4, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_add_gpu(NULL, d, 4, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_add_gpu(d, d + 1, 4, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_gather_rows_gpu(d, d, (const uint32_t *)f, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_gather_rows_gpu(d, d + 2048, NULL, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_gather_add_gpu(d, d + 2048, (const uint32_t *)f, d + 16, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "in place")); /* y overlaps u */
  assert_int_equal(nl_gather_add_gpu(d, d, (const uint32_t *)f, d + 1024, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_gather_add_gpu(d, d + 2048, NULL, d + 1024, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_gather_add_gpu(d, d + 2048, (const uint32_t *)f, d + 1024, 4, 0, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_from_f32_gpu(d, NULL, 4, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_to_f32_gpu(f, (const void *)f, 4, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_segment_max_gpu(d, d + 2048, NULL, NULL, 4, 8, NET_F16, s, &err), HX_EINVAL);
  assert_int_equal(nl_segment_max_gpu(d, d + 2048, NULL, (const uint32_t *)f, 4, 0, NET_F16, s, &err), HX_EINVAL);
  uint32_t *u = (uint32_t *)f;
  assert_int_equal(nl_windows_gpu(u, u + 64, NULL, 2, 3, 512, s, &err), HX_EINVAL);
  assert_int_equal(nl_windows_gpu(u, u + 64, u + 128, 2, 0, 512, s, &err), HX_EINVAL);
  assert_int_equal(nl_windows_gpu(u, u + 64, u + 128, 2, 3, 0, s, &err), HX_EINVAL);
  assert_int_equal(err.status, HX_EINVAL);
  assert_true(strlen(err.msg) > 0);
  /* nothing to do is fine, whatever the pointers */
  assert_int_equal(nl_add_gpu(NULL, NULL, 0, NET_F16, s, &err), HX_OK);
  assert_int_equal(nl_segment_max_gpu(NULL, NULL, NULL, NULL, 0, 8, NET_BF16, s, &err), HX_OK);
  assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
  cudaFree(d), cudaFree(f);
}

/* ---- set-up ----------------------------------------------------------------------------------------- */

static int setup(void **state) {
  tctx *t = calloc(1, sizeof *t);
  if (!t) return -1;
  const char *env = getenv("NETS_TEST_SEED");
  t->seed = env ? strtoull(env, NULL, 0) : hx_mix64((uint64_t)time(NULL)) ^ (uint64_t)clock();
  printf("nets layers GPU: seed %llu (NETS_TEST_SEED=%llu repeats this run)\n", (unsigned long long)t->seed,
         (unsigned long long)t->seed);
  hx_err err = {HX_OK, ""};
  if (cudaStreamCreate(&t->stream) != cudaSuccess || nl_blas_create(&t->blas, NL_BLAS_TUNED, &err) != HX_OK) {
    fprintf(stderr, "set-up failed: %s\n", err.msg);
    free(t);
    return -1;
  }
  *state = t;
  return 0;
}

static int teardown(void **state) {
  tctx *t = *state;
  nl_blas_destroy(t->blas);
  cudaStreamDestroy(t->stream);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_args),          cmocka_unit_test(test_linear),
      cmocka_unit_test(test_linear_candidates), cmocka_unit_test(test_linear_tuned),
      cmocka_unit_test(test_mlp), cmocka_unit_test(test_mlp_split), cmocka_unit_test(test_linear_swiglu),
      cmocka_unit_test(test_ln_fused),
      cmocka_unit_test(test_layernorm),         cmocka_unit_test(test_affine_swiglu),
      cmocka_unit_test(test_add_gather_convert), cmocka_unit_test(test_segment_max),
      cmocka_unit_test(test_windows),
  };
  /* arguments: test names to run (default all; tests/sanitize/run.sh names some) */
  const size_t n = sizeof tests / sizeof tests[0];
  return ts_gpu_main("nets_layers_gpu", tests, n, n, argc, argv, setup, teardown);
}
#else
int main(void) {
  printf("built without CUDA: skipping\n");
  return 77;
}
#endif
