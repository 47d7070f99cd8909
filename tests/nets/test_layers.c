/*
 * test_layers.c - the CPU references of the dense layers (nets.h, nl_) and the dtype helpers: dtype names;
 * fp16 / bf16 conversion (exhaustive round trip of every bit pattern, round to nearest even on random values
 * and on exact ties, overflow, subnormals, NaN and Inf); GELU (known values, and the measured gap to the tanh
 * form that cuBLASLt's epilogue uses); Linear against a naive double loop with bias, GELU and accumulate;
 * LayerNorm (hand case, mean 0 / variance 1 before the affine, far-from-zero rows, in place); the BatchNorm
 * fold against the unfolded formula; SwiGLU's halves; residual add; gather and add; segment max (member order
 * through idx, empty segments, all-negative rows, NaN); and HX_EINVAL on bad arguments.
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

#include "nets/nets.h"

/* The largest |gelu_erf(x) - gelu_tanh(x)| over every x, measured below on a 1e-4 grid of [-12, 12]
 * (4.7324e-4 near |x| = 2.70; the two agree to 1e-7 beyond |x| = 6). The GPU test's tolerance for cuBLASLt's
 * fused GELU adds this. */
#define GELU_TANH_MAX_DIFF 4.74e-4

static float unit(uint64_t seed, uint64_t stream, uint64_t i) {
  return (float)(2.0 * hx_rng_unit(seed, stream, i) - 1.0); /* [-1, 1) */
}

static int is_nan_bits(net_dtype t, uint16_t h) {
  return t == NET_F16 ? ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0) : ((h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0);
}

static float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- dtype ------------------------------------------------------------------------------------------- */

static void test_dtype_names(void **state) {
  (void)state;
  net_dtype t = NET_BF16;
  assert_string_equal(net_dtype_name(NET_F16), "fp16");
  assert_string_equal(net_dtype_name(NET_BF16), "bf16");
  assert_int_equal(net_dtype_parse("fp16", &t, NULL), HX_OK);
  assert_int_equal(t, NET_F16);
  assert_int_equal(net_dtype_parse("bf16", &t, NULL), HX_OK);
  assert_int_equal(t, NET_BF16);
  assert_int_equal(net_dtype_parse("f16", &t, NULL), HX_OK);
  assert_int_equal(t, NET_F16);
  hx_err err = {HX_OK, ""};
  assert_int_equal(net_dtype_parse("fp32", &t, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "fp32"));
  assert_int_equal(t, NET_F16); /* untouched on failure */
  assert_int_equal(net_dtype_parse(NULL, &t, NULL), HX_EINVAL);
  assert_int_equal(net_dtype_parse("bf16", NULL, NULL), HX_EINVAL);
}

/* Hand-picked values: {input, fp16 bits, bf16 bits}. */
typedef struct conv_case {
  float x;
  uint16_t f16, bf16;
} conv_case;

static void test_dtype_edges(void **state) {
  (void)state;
  const conv_case cs[] = {
      {1.0f, 0x3C00, 0x3F80},
      {-2.0f, 0xC000, 0xC000},
      {0.0f, 0x0000, 0x0000},
      {-0.0f, 0x8000, 0x8000},
      {1.0f + 0x1p-11f, 0x3C00, 0x3F80},        /* fp16 tie between 1 and 1 + 2^-10: even (1) */
      {1.0f + 3 * 0x1p-11f, 0x3C02, 0x3F80},    /* fp16 tie between 1 + 2^-10 and 1 + 2^-9: even (up) */
      {1.0f + 0x1p-8f, 0x3C04, 0x3F80},         /* bf16 tie between 1 and 1 + 2^-7: even (1) */
      {1.0f + 3 * 0x1p-8f, 0x3C0C, 0x3F82},     /* bf16 tie, odd below: rounds up to even */
      {1.0f + 0x1p-8f + 0x1p-20f, 0x3C04, 0x3F81}, /* just above the bf16 tie: up */
      {65504.0f, 0x7BFF, 0x4780},               /* fp16 max */
      {65519.0f, 0x7BFF, 0x4780},               /* below the fp16 overflow tie */
      {65520.0f, 0x7C00, 0x4780},               /* the tie at 65520 rounds to even: infinity */
      {0x1p-24f, 0x0001, 0x3380},               /* the smallest fp16 subnormal */
      {0x1p-25f, 0x0000, 0x3300},               /* tie between 0 and 2^-24: even (0) */
      {3 * 0x1p-25f, 0x0002, 0x33C0},           /* tie between 2^-24 and 2^-23: even (2^-23) */
      {0x1p-14f, 0x0400, 0x3880},               /* the smallest fp16 normal */
      {3.0e38f, 0x7C00, 0x7F62},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
    if (net_from_float(NET_F16, cs[i].x) != cs[i].f16 || net_from_float(NET_BF16, cs[i].x) != cs[i].bf16)
      fprintf(stderr, "case %zu (%a): fp16 %04x (want %04x), bf16 %04x (want %04x)\n", i, (double)cs[i].x,
              net_from_float(NET_F16, cs[i].x), cs[i].f16, net_from_float(NET_BF16, cs[i].x), cs[i].bf16);
    assert_int_equal(net_from_float(NET_F16, cs[i].x), cs[i].f16);
    assert_int_equal(net_from_float(NET_BF16, cs[i].x), cs[i].bf16);
  }
  /* bf16: FLT_MAX rounds past the largest bf16 (0x7F7F) to infinity; one below the tie stays finite */
  assert_int_equal(net_from_float(NET_BF16, bits_to_f32(0x7F7FFFFFu)), 0x7F80);
  assert_int_equal(net_from_float(NET_BF16, bits_to_f32(0x7F7F7FFFu)), 0x7F7F);
  /* Inf and NaN: infinities kept with their sign, every NaN stays a NaN (a payload in the low bits only must not
   * become infinity) */
  for (int t = 0; t < 2; ++t) {
    const net_dtype dt = (net_dtype)t;
    assert_true(isinf(net_to_float(dt, net_from_float(dt, INFINITY))));
    assert_true(net_to_float(dt, net_from_float(dt, -INFINITY)) < 0.0f);
    assert_true(isinf(net_to_float(dt, net_from_float(dt, -INFINITY))));
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0x7F800100u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; ++i) {
      assert_true(is_nan_bits(dt, net_from_float(dt, bits_to_f32(nans[i]))));
      assert_true(isnan(net_to_float(dt, net_from_float(dt, bits_to_f32(nans[i])))));
    }
  }
}

/* Every bit pattern: to_float then from_float gives it back (NaNs: a NaN back). */
static void test_dtype_round_trip(void **state) {
  (void)state;
  for (int t = 0; t < 2; ++t) {
    const net_dtype dt = (net_dtype)t;
    for (uint32_t h = 0; h < 65536u; ++h) {
      const float f = net_to_float(dt, (uint16_t)h);
      if (is_nan_bits(dt, (uint16_t)h)) {
        assert_true(isnan(f));
        assert_true(is_nan_bits(dt, net_from_float(dt, f)));
      } else {
        assert_true(!isnan(f));
        if (net_from_float(dt, f) != h) fprintf(stderr, "%s %04x -> %a -> %04x\n", net_dtype_name(dt), h, (double)f, net_from_float(dt, f));
        assert_int_equal(net_from_float(dt, f), h);
      }
    }
  }
}

/* Round to nearest even on random finite floats of the dtype's range and on exact midpoints: the result is no
 * farther than either neighbour, and a tie goes to the even pattern. */
static void check_nearest(net_dtype dt, float x) {
  const uint16_t h = net_from_float(dt, x);
  const uint16_t inf = dt == NET_F16 ? 0x7C00u : 0x7F80u;
  const uint16_t m = (uint16_t)(h & 0x7FFFu), sign = (uint16_t)(h & 0x8000u);
  const double ax = fabs((double)x);
  assert_int_equal(sign != 0, signbit(x) != 0);
  if (m == inf) { /* overflow: |x| at least the midpoint between the largest finite value and 2^(emax+1) */
    const double top = (double)net_to_float(dt, (uint16_t)(inf - 1u));
    const double next = dt == NET_F16 ? 65536.0 : ldexp(1.0, 128);
    assert_true(ax >= (top + next) / 2);
    return;
  }
  const double v = (double)net_to_float(dt, m);
  const double d = fabs(ax - v);
  if (m > 0) {
    const double dlo = fabs(ax - (double)net_to_float(dt, (uint16_t)(m - 1u)));
    assert_true(d <= dlo);
    if (d == dlo) assert_int_equal(m & 1u, 0);
  }
  const double vhi = m + 1u < inf ? (double)net_to_float(dt, (uint16_t)(m + 1u)) : (dt == NET_F16 ? 65536.0 : ldexp(1.0, 128));
  const double dhi = fabs(ax - vhi);
  assert_true(d <= dhi);
  if (d == dhi) assert_int_equal(m & 1u, 0);
}

static void test_dtype_nearest_even(void **state) {
  (void)state;
  for (int t = 0; t < 2; ++t) {
    const net_dtype dt = (net_dtype)t;
    for (uint64_t i = 0; i < 200000; ++i) {
      const uint64_t r = hx_rng_u64(11, (uint64_t)t, i);
      /* exponents from below the smallest subnormal to just past the largest finite value */
      const uint32_t e = dt == NET_F16 ? 100u + (uint32_t)(r % 43u) : 1u + (uint32_t)(r % 254u);
      const uint32_t u = ((uint32_t)(r >> 40) & 0x80000000u) | (e << 23) | ((uint32_t)(r >> 8) & 0x7FFFFFu);
      check_nearest(dt, bits_to_f32(u));
      /* the exact midpoint between two neighbours of the dtype (exact in fp32) */
      const uint16_t inf = dt == NET_F16 ? 0x7C00u : 0x7F80u;
      const uint16_t m = (uint16_t)(r % (uint64_t)(inf - 1u));
      const double mid = ((double)net_to_float(dt, m) + (double)net_to_float(dt, (uint16_t)(m + 1u))) / 2;
      const uint16_t want = (uint16_t)((m & 1u) ? m + 1u : m);
      assert_int_equal(net_from_float(dt, (float)mid), want);
      assert_int_equal(net_from_float(dt, -(float)mid), want | 0x8000u);
    }
  }
}

/* ---- GELU ------------------------------------------------------------------------------------------ */

static double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

/* One GELU value through the Linear reference (in = 1, w = 1, no bias). */
static float gelu_via_linear(float x) {
  const float w = 1.0f;
  float y = 0.0f;
  assert_int_equal(nl_linear_cpu(&y, &x, &w, NULL, 1, 1, 1, NL_ACT_GELU, 0, NULL), HX_OK);
  return y;
}

static void test_gelu(void **state) {
  (void)state;
  /* exact erf values: 0.5 x (1 + erf(x / sqrt 2)) */
  assert_true(gelu_via_linear(0.0f) == 0.0f);
  assert_float_equal(gelu_via_linear(1.0f), 0.8413447460685429f, 1e-7f);
  assert_float_equal(gelu_via_linear(-1.0f), -0.15865525393145707f, 1e-7f);
  assert_float_equal(gelu_via_linear(2.0f), 1.9544997361036416f, 1e-6f);
  assert_float_equal(gelu_via_linear(-3.0f), -0.0040496993343183f, 1e-8f);
  assert_true(gelu_via_linear(12.0f) == 12.0f);
  assert_true(gelu_via_linear(-12.0f) == 0.0f || fabsf(gelu_via_linear(-12.0f)) < 1e-30f);
  /* the tanh approximation (cuBLASLt's fused GELU) against the erf form */
  double worst = 0.0, at = 0.0;
  for (int i = -120000; i <= 120000; ++i) {
    const float x = (float)i * 1e-4f;
    const double d = fabs((double)gelu_via_linear(x) - gelu_tanh((double)x));
    if (d > worst) worst = d, at = (double)x;
  }
  printf("GELU: max |erf form - tanh form| = %.4e at x = %.4f (grid 1e-4 over [-12, 12])\n", worst, at);
  assert_true(worst > 4.6e-4 && worst <= GELU_TANH_MAX_DIFF);
  assert_true(fabs(fabs(at) - 2.70) < 0.01);
  for (int i = 60000; i <= 120000; i += 7)
    assert_true(fabs((double)gelu_via_linear((float)i * 1e-4f) - gelu_tanh((double)i * 1e-4)) < 1e-6);
}

/* ---- Linear ------------------------------------------------------------------------------------------ */

static void test_linear_hand(void **state) {
  (void)state;
  const float x[6] = {1, 2, 3, 4, 5, 6};   /* [2, 3] */
  const float w[6] = {1, 0, -1, 2, 1, 0};  /* [2, 3]: y0 = x0 - x2, y1 = 2 x0 + x1 */
  const float b[2] = {0.5f, -1.0f};
  float y[4];
  assert_int_equal(nl_linear_cpu(y, x, w, b, 2, 3, 2, NL_ACT_NONE, 0, NULL), HX_OK);
  const float want[4] = {-1.5f, 3.0f, -1.5f, 12.0f};
  for (int i = 0; i < 4; ++i) assert_true(y[i] == want[i]);
  assert_int_equal(nl_linear_cpu(y, x, w, NULL, 2, 3, 2, NL_ACT_NONE, 0, NULL), HX_OK);
  const float want_nb[4] = {-2.0f, 4.0f, -2.0f, 13.0f};
  for (int i = 0; i < 4; ++i) assert_true(y[i] == want_nb[i]);
  /* accumulate: y += x W^T + b */
  for (int i = 0; i < 4; ++i) y[i] = 10.0f;
  assert_int_equal(nl_linear_cpu(y, x, w, b, 2, 3, 2, NL_ACT_NONE, 1, NULL), HX_OK);
  for (int i = 0; i < 4; ++i) assert_true(y[i] == 10.0f + want[i]);
  /* accumulate with GELU adds gelu(.) to y: gelu(3) and gelu(-1.5) */
  for (int i = 0; i < 4; ++i) y[i] = 1.0f;
  assert_int_equal(nl_linear_cpu(y, x, w, b, 2, 3, 2, NL_ACT_GELU, 1, NULL), HX_OK);
  assert_float_equal(y[1], 1.0f + 2.9959502f, 1e-6f);
  assert_float_equal(y[0], 1.0f - 0.1002108f, 1e-6f);
  /* rows = 0: nothing to do, NULL buffers allowed */
  assert_int_equal(nl_linear_cpu(NULL, NULL, NULL, NULL, 0, 3, 2, NL_ACT_NONE, 0, NULL), HX_OK);
}

static void test_linear_naive(void **state) {
  (void)state;
  const size_t shapes[][3] = {{1, 1, 1}, {5, 13, 7}, {33, 64, 24}, {3, 257, 9}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const size_t rows = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
    float *x = malloc(rows * in * 4), *w = malloc(out * in * 4), *b = malloc(out * 4);
    float *y = malloc(rows * out * 4), *y0 = malloc(rows * out * 4);
    assert_true(x && w && b && y && y0);
    for (size_t i = 0; i < rows * in; ++i) x[i] = 2.0f * unit(5, 1, i);
    for (size_t i = 0; i < out * in; ++i) w[i] = unit(5, 2, i);
    for (size_t i = 0; i < out; ++i) b[i] = unit(5, 3, i);
    for (size_t i = 0; i < rows * out; ++i) y0[i] = unit(5, 4, i);
    for (int act = 0; act < 2; ++act)
      for (int acc = 0; acc < 2; ++acc)
        for (int hb = 0; hb < 2; ++hb) {
          memcpy(y, y0, rows * out * 4);
          assert_int_equal(nl_linear_cpu(y, x, w, hb ? b : NULL, rows, in, out, (nl_act)act, acc, NULL), HX_OK);
          for (size_t r = 0; r < rows; ++r)
            for (size_t o = 0; o < out; ++o) {
              double s = hb ? (double)b[o] : 0.0;
              for (size_t i = 0; i < in; ++i) s += (double)x[r * in + i] * (double)w[o * in + i];
              if (!act && !acc) { /* the sums' order is the reference's: i ascending from the bias, in double */
                const float want = (float)s;
                assert_memory_equal(&y[r * out + o], &want, sizeof want);
              }
              if (act) s = 0.5 * s * (1.0 + erf(s / sqrt(2.0)));
              if (acc) s += (double)y0[r * out + o];
              assert_true(fabs((double)y[r * out + o] - s) <= 1e-6 * (1.0 + fabs(s)));
            }
        }
    free(x), free(w), free(b), free(y), free(y0);
  }
}

/* ---- LayerNorm ------------------------------------------------------------------------------------- */

static void test_layernorm_hand(void **state) {
  (void)state;
  const float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1}, b[4] = {0, 0, 0, 0};
  float y[4];
  assert_int_equal(nl_layernorm_cpu(y, x, g, b, 1, 4, 0.0f, NULL), HX_OK);
  const double s = sqrt(1.25); /* mean 2.5, biased variance 1.25 */
  for (int i = 0; i < 4; ++i) assert_float_equal(y[i], (float)(((double)i + 1.0 - 2.5) / s), 1e-6f);
  /* eps enters under the root: variance 1.25 + 0.75 = 2 */
  assert_int_equal(nl_layernorm_cpu(y, x, g, b, 1, 4, 0.75f, NULL), HX_OK);
  assert_float_equal(y[3], (float)(1.5 / sqrt(2.0)), 1e-6f);
  /* affine: y = xhat * g + b per channel */
  const float g2[4] = {2, -1, 0, 0.5f}, b2[4] = {1, 2, 3, 4};
  assert_int_equal(nl_layernorm_cpu(y, x, g2, b2, 1, 4, 0.0f, NULL), HX_OK);
  for (int i = 0; i < 4; ++i) assert_float_equal(y[i], (float)(((double)i + 1.0 - 2.5) / s * (double)g2[i] + (double)b2[i]), 1e-6f);
}

static void test_layernorm_properties(void **state) {
  (void)state;
  const size_t rows = 17, Cs[] = {8, 96, 1024, 1032};
  for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ++ci) {
    const size_t C = Cs[ci];
    float *x = malloc(rows * C * 4), *y = malloc(rows * C * 4), *z = malloc(rows * C * 4);
    float *g = malloc(C * 4), *b = malloc(C * 4), *one = malloc(C * 4), *zero = malloc(C * 4);
    assert_true(x && y && z && g && b && one && zero);
    for (size_t c = 0; c < C; ++c) g[c] = 1.0f + unit(9, 1, c), b[c] = unit(9, 2, c), one[c] = 1.0f, zero[c] = 0.0f;
    /* rows far from zero (offset 1000, spread 1): a one-pass E[x^2] - E[x]^2 in fp32 would lose the variance */
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < C; ++c) x[r * C + c] = (r % 2 ? 1000.0f : 0.0f) + (1.0f + (float)r) * unit(9, 3, r * C + c);
    assert_int_equal(nl_layernorm_cpu(y, x, one, zero, rows, C, 1e-12f, NULL), HX_OK);
    for (size_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (size_t c = 0; c < C; ++c) m += (double)y[r * C + c];
      m /= (double)C;
      for (size_t c = 0; c < C; ++c) v += ((double)y[r * C + c] - m) * ((double)y[r * C + c] - m);
      v /= (double)C;
      assert_true(fabs(m) < 1e-6);
      assert_true(fabs(v - 1.0) < 1e-5);
    }
    /* the affine is g * xhat + b on the normalised row */
    assert_int_equal(nl_layernorm_cpu(z, x, g, b, rows, C, 1e-12f, NULL), HX_OK);
    for (size_t i = 0; i < rows * C; ++i) assert_true(fabsf(z[i] - (y[i] * g[i % C] + b[i % C])) <= 1e-5f);
    /* LN of rows by index (reversed, row 3 twice, row 0 never): row r is z's row idx[r]; an index past x's rows, a
     * missing index and y overlapping x are refused */
    {
      uint32_t idx[17];
      float *yr = malloc(rows * C * 4);
      assert_true(yr != NULL);
      for (size_t r = 0; r < rows; ++r) idx[r] = (uint32_t)(rows - 1 - r);
      idx[rows - 1] = 3;
      assert_int_equal(nl_layernorm_rows_cpu(yr, x, idx, rows, g, b, rows, C, 1e-12f, NULL), HX_OK);
      for (size_t r = 0; r < rows; ++r) assert_memory_equal(yr + r * C, z + (size_t)idx[r] * C, C * 4);
      hx_err e = {HX_OK, ""};
      idx[5] = (uint32_t)rows;
      assert_int_equal(nl_layernorm_rows_cpu(yr, x, idx, rows, g, b, rows, C, 1e-12f, &e), HX_EINVAL);
      assert_non_null(strstr(e.msg, "idx[5]"));
      idx[5] = 0;
      assert_int_equal(nl_layernorm_rows_cpu(yr, x, NULL, rows, g, b, rows, C, 1e-12f, &e), HX_EINVAL);
      assert_int_equal(nl_layernorm_rows_cpu(x, x, idx, rows, g, b, rows, C, 1e-12f, &e), HX_EINVAL);
      free(yr);
    }
    /* y += LN(x): the residual plus the out-of-place result, to fp32 rounding; y overlapping x is refused */
    float *w = malloc(rows * C * 4);
    assert_true(w != NULL);
    for (size_t i = 0; i < rows * C; ++i) w[i] = 100.0f * unit(9, 4, i);
    assert_int_equal(nl_layernorm_add_cpu(w, x, g, b, rows, C, 1e-12f, NULL), HX_OK);
    for (size_t i = 0; i < rows * C; ++i)
      assert_true(fabsf(w[i] - (100.0f * unit(9, 4, i) + z[i])) <= 1e-4f * (1.0f + fabsf(w[i])));
    hx_err err = {HX_OK, ""};
    assert_int_equal(nl_layernorm_add_cpu(x, x, g, b, rows, C, 1e-12f, &err), HX_EINVAL);
    float *o = malloc((rows * C + 1) * 4); /* y = o + 1 over x = o: one row-major buffer, shifted by a value */
    assert_true(o != NULL);
    memcpy(o, x, rows * C * 4), o[rows * C] = 0.0f;
    assert_int_equal(nl_layernorm_add_cpu(o + 1, o, g, b, rows, C, 1e-12f, &err), HX_EINVAL);
    free(o), free(w);
    /* in place equals out of place */
    assert_int_equal(nl_layernorm_cpu(x, x, g, b, rows, C, 1e-12f, NULL), HX_OK);
    assert_memory_equal(x, z, rows * C * 4);
    free(x), free(y), free(z), free(g), free(b), free(one), free(zero);
  }
}

/* ---- BatchNorm fold + activation ---------------------------------------------------------------------- */

static void test_bn_fold(void **state) {
  (void)state;
  enum { C = 24, R = 9 };
  float gamma[C], beta[C], mean[C], var[C], scale[C], shift[C], x[R * C], y[R * C];
  for (int c = 0; c < C; ++c) {
    gamma[c] = 1.0f + 0.5f * unit(3, 1, (uint64_t)c), beta[c] = unit(3, 2, (uint64_t)c);
    mean[c] = unit(3, 3, (uint64_t)c), var[c] = 0.5f + (float)hx_rng_unit(3, 4, (uint64_t)c);
  }
  for (int i = 0; i < R * C; ++i) x[i] = 3.0f * unit(3, 5, (uint64_t)i);
  const float eps = 1e-3f;
  nl_bn_fold(scale, shift, gamma, beta, mean, var, C, eps);
  for (int act = 0; act < 2; ++act) {
    assert_int_equal(nl_affine_act_cpu(y, x, scale, shift, R, C, (nl_act)act, NULL), HX_OK);
    for (int i = 0; i < R * C; ++i) {
      const int c = i % C;
      /* unfolded BatchNorm1d (inference): (x - mean) / sqrt(var + eps) * gamma + beta */
      double u = ((double)x[i] - (double)mean[c]) / sqrt((double)var[c] + (double)eps) * (double)gamma[c] + (double)beta[c];
      if (act) u = 0.5 * u * (1.0 + erf(u / sqrt(2.0)));
      assert_true(fabs((double)y[i] - u) <= 2e-6 * (1.0 + fabs(u)));
    }
  }
  /* in place */
  float z[R * C];
  memcpy(z, x, sizeof z);
  assert_int_equal(nl_affine_act_cpu(z, z, scale, shift, R, C, NL_ACT_GELU, NULL), HX_OK);
  assert_memory_equal(z, y, sizeof z);
}

/* ---- SwiGLU ---------------------------------------------------------------------------------------- */

static double silu(double a) { return a / (1.0 + exp(-a)); }

static void test_swiglu(void **state) {
  (void)state;
  /* one row, H = 2: x = (a0, a1 | b0, b1) */
  const float x[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  float y[2];
  assert_int_equal(nl_swiglu_cpu(y, x, 1, 2, NULL), HX_OK);
  assert_true(y[0] == 0.0f);                          /* silu(0) * 2 */
  assert_float_equal(y[1], 3.0f * 0.7310585786f, 1e-6f); /* silu(1) * 3 */
  /* the first half is the activated one: b = 1 gives silu(a), a = 30 gives 30 b; random rows match */
  enum { R = 5, H = 16 };
  float xx[R * 2 * H], yy[R * H];
  for (int i = 0; i < R * 2 * H; ++i) xx[i] = 4.0f * unit(4, 1, (uint64_t)i);
  for (int h = 0; h < H; ++h) xx[2 * H + H + h] = 1.0f, xx[4 * H + h] = 30.0f; /* row 1: b = 1; row 2: a = 30 */
  assert_int_equal(nl_swiglu_cpu(yy, xx, R, H, NULL), HX_OK);
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < H; ++h) {
      const double a = (double)xx[r * 2 * H + h], b = (double)xx[r * 2 * H + H + h];
      assert_true(fabs((double)yy[r * H + h] - silu(a) * b) <= 1e-6 * (1.0 + fabs(silu(a) * b)));
      if (r == 1) assert_float_equal(yy[r * H + h], (float)silu(a), 1e-6f);
      if (r == 2) assert_float_equal(yy[r * H + h], (float)(30.0 * b), 1e-5f);
    }
}

/* ---- MLP ------------------------------------------------------------------------------------------- */

static void test_mlp(void **state) {
  (void)state;
  /* C = 2, H = 3 by hand: fc1 = rows (1, 0), (0, 1), (1, 1) + b1 (0, 0, -1); fc2 = rows (1, 0, 1), (0, 1, -1)
   * + b2 (1, -1); x = (1, -1), y0 = (10, 20): h = GELU(1, -1, -1) = (g1, g-1, g-1); y = y0 + (g1 + g-1 + 1,
   * g-1 - g-1 - 1) = (11 + g1 + g-1, 19), with g1 + g-1 = Phi(1) - Phi(-1) = erf(1 / sqrt 2) for the erf GELU
   * (x Phi(x)); the tanh form would miss it by about 3e-4. */
  const float w1[6] = {1, 0, 0, 1, 1, 1}, b1[3] = {0, 0, -1}, w2[6] = {1, 0, 1, 0, 1, -1}, b2[2] = {1, -1};
  const float x[2] = {1, -1};
  float y[2] = {10, 20};
  assert_int_equal(nl_mlp_cpu(y, x, w1, b1, w2, b2, 1, 2, 3, NL_MLP_GELU, NULL), HX_OK);
  assert_float_equal(y[0], (float)(11.0 + erf(0.70710678118654752)), 2e-6f);
  assert_float_equal(y[1], 19.0f, 1e-5f);
  /* random rows: the two Linears it stands for, bit for bit, and no bias when b1 and b2 are NULL */
  enum { R = 3, C = 8, H = 24 };
  float xx[R * C], ww1[H * C], bb1[H], ww2[C * H], bb2[C], ya[R * C], yb[R * C], h[H];
  for (int i = 0; i < R * C; ++i) xx[i] = unit(5, 1, (uint64_t)i), ya[i] = yb[i] = unit(5, 2, (uint64_t)i);
  for (int i = 0; i < H * C; ++i) ww1[i] = unit(5, 3, (uint64_t)i), ww2[i] = unit(5, 4, (uint64_t)i);
  for (int i = 0; i < H; ++i) bb1[i] = unit(5, 5, (uint64_t)i);
  for (int i = 0; i < C; ++i) bb2[i] = unit(5, 6, (uint64_t)i);
  for (int nb = 0; nb < 2; ++nb) {
    assert_int_equal(nl_mlp_cpu(ya, xx, ww1, nb ? NULL : bb1, ww2, nb ? NULL : bb2, R, C, H, NL_MLP_GELU, NULL), HX_OK);
    for (int r = 0; r < R; ++r) {
      assert_int_equal(nl_linear_cpu(h, xx + r * C, ww1, nb ? NULL : bb1, 1, C, H, NL_ACT_GELU, 0, NULL), HX_OK);
      assert_int_equal(nl_linear_cpu(yb + r * C, h, ww2, nb ? NULL : bb2, 1, H, C, NL_ACT_NONE, 1, NULL), HX_OK);
    }
    assert_memory_equal(ya, yb, sizeof ya);
  }
  /* SwiGLU, C = 2, H = 1 by hand: fc1 = rows (1, 0), (0, 1) + b1 (0, 1); x = (2, 3): fc1 = (2, 4), hidden
   * silu(2) 4 = 8 / (1 + e^-2); fc2 = rows (1), (-1), no bias; y0 = (1, 1) */
  const float sw1[4] = {1, 0, 0, 1}, sb1[2] = {0, 1}, sw2[2] = {1, -1}, sx[2] = {2, 3};
  float sy[2] = {1, 1};
  assert_int_equal(nl_mlp_cpu(sy, sx, sw1, sb1, sw2, NULL, 1, 2, 1, NL_MLP_SWIGLU, NULL), HX_OK);
  const double hs = 8.0 / (1.0 + exp(-2.0));
  assert_float_equal(sy[0], (float)(1.0 + hs), 2e-6f);
  assert_float_equal(sy[1], (float)(1.0 - hs), 2e-6f);
  /* random rows, SwiGLU: the Linear, SwiGLU and Linear it stands for, bit for bit (fc1 2H wide) */
  float sww1[2 * H * C], sbb1[2 * H], h2[2 * H];
  for (int i = 0; i < 2 * H * C; ++i) sww1[i] = unit(5, 7, (uint64_t)i);
  for (int i = 0; i < 2 * H; ++i) sbb1[i] = unit(5, 8, (uint64_t)i);
  for (int i = 0; i < R * C; ++i) ya[i] = yb[i] = unit(5, 2, (uint64_t)i);
  assert_int_equal(nl_mlp_cpu(ya, xx, sww1, sbb1, ww2, bb2, R, C, H, NL_MLP_SWIGLU, NULL), HX_OK);
  for (int r = 0; r < R; ++r) {
    assert_int_equal(nl_linear_cpu(h2, xx + r * C, sww1, sbb1, 1, C, 2 * H, NL_ACT_NONE, 0, NULL), HX_OK);
    assert_int_equal(nl_swiglu_cpu(h, h2, 1, H, NULL), HX_OK);
    assert_int_equal(nl_linear_cpu(yb + r * C, h, ww2, bb2, 1, H, C, NL_ACT_NONE, 1, NULL), HX_OK);
  }
  assert_memory_equal(ya, yb, sizeof ya);
  /* fc1 + SwiGLU alone (nl_linear_swiglu_cpu): the Linear and SwiGLU it stands for, bit for bit, and by hand (the
   * hidden row of the SwiGLU case above, without fc2: 8 / (1 + e^-2)) */
  float gsw[R * H], gref[R * H];
  assert_int_equal(nl_linear_swiglu_cpu(gsw, xx, sww1, sbb1, R, C, H, NULL), HX_OK);
  for (int r = 0; r < R; ++r) {
    assert_int_equal(nl_linear_cpu(h2, xx + r * C, sww1, sbb1, 1, C, 2 * H, NL_ACT_NONE, 0, NULL), HX_OK);
    assert_int_equal(nl_swiglu_cpu(gref + r * H, h2, 1, H, NULL), HX_OK);
  }
  assert_memory_equal(gsw, gref, sizeof gsw);
  float g1[1];
  assert_int_equal(nl_linear_swiglu_cpu(g1, sx, sw1, sb1, 1, 2, 1, NULL), HX_OK);
  assert_float_equal(g1[0], (float)hs, 2e-6f);
  hx_err e = {HX_OK, ""};
  assert_int_equal(nl_linear_swiglu_cpu(g1, sx, sw1, sb1, 1, 0, 1, &e), HX_EINVAL);
  assert_int_equal(nl_linear_swiglu_cpu(g1, sx, NULL, sb1, 1, 2, 1, &e), HX_EINVAL);
  assert_int_equal(nl_linear_swiglu_cpu(NULL, NULL, NULL, NULL, 0, 2, 1, &e), HX_OK); /* no rows */
  assert_true(nl_linear_swiglu_gpu_takes(96, 384) && nl_linear_swiglu_gpu_takes(32, 64));
  /* the wgmma GEMM's widths: flash3d-46m's 400 and 784, flash3d-public's 256 and 512 */
  assert_true(nl_linear_swiglu_gpu_takes(128, 512) && nl_linear_swiglu_gpu_takes(400, 1600) &&
              nl_linear_swiglu_gpu_takes(784, 3136) && nl_linear_swiglu_gpu_takes(256, 64));
  assert_false(nl_linear_swiglu_gpu_takes(48, 192) || nl_linear_swiglu_gpu_takes(112, 448) ||
               nl_linear_swiglu_gpu_takes(96, 96) || nl_linear_swiglu_gpu_takes(136, 544) ||
               nl_linear_swiglu_gpu_takes(400, 1632) || nl_linear_swiglu_gpu_takes(0, 64));
  assert_int_equal(nl_mlp_cpu(y, x, w1, b1, w2, b2, 1, 0, 3, NL_MLP_GELU, &e), HX_EINVAL);
  assert_int_equal(nl_mlp_cpu(y, NULL, w1, b1, w2, b2, 1, 2, 3, NL_MLP_GELU, &e), HX_EINVAL);
  assert_int_equal(nl_mlp_cpu(y, x, w1, b1, w2, b2, 1, 2, 3, (nl_mlp_kind)7, &e), HX_EINVAL);
  assert_int_equal(nl_mlp_cpu(NULL, NULL, NULL, NULL, NULL, NULL, 0, 2, 3, NL_MLP_GELU, &e), HX_OK); /* no rows */
  /* the widths the GPU kernel takes */
  for (size_t c = 16; c <= 512; c += 16)
    assert_int_equal(nl_mlp_gpu_takes(c, 4 * c, NL_MLP_GELU), c == 32 || c == 64 || c == 128 || c == 256);
  assert_false(nl_mlp_gpu_takes(64, 128, NL_MLP_GELU) || nl_mlp_gpu_takes(128, 256, NL_MLP_GELU) ||
               nl_mlp_gpu_takes(256, 512, NL_MLP_GELU));
  for (size_t c = 16; c <= 512; c += 16)
    assert_int_equal(nl_mlp_gpu_takes(c, 4 * c, NL_MLP_SWIGLU),
                     c == 32 || c == 48 || c == 64 || c == 80 || c == 96 || c == 128 || c == 160 || c == 192);
  assert_false(nl_mlp_gpu_takes(48, 96, NL_MLP_SWIGLU) || nl_mlp_gpu_takes(32, 128, (nl_mlp_kind)7));
}

/* ---- residual add -------------------------------------------------------------------------------- */

/* The LayerNorm-first forms. By hand: x = (1, 3) normalises to (-1, 1) (eps 0), gamma (2, 1), beta (0.5, -0.5):
 * (-1.5, 0.5); W = rows (1, 1), (2, 0), (0, -1) + b (0, 1, 2): y = (-1, -2, 1.5). Invariance: LN(a x + c) = LN(x)
 * for a > 0 at eps 0, so rows scaled by 3 and shifted by 5 give the same outputs to fp32 rounding; an index names
 * the rows read (repeats allowed), a NULL index the rows in order (the identity index's outputs); a row's outputs are
 * nl_mlp_cpu's on the normalised row; idx past x's rows, more rows in order than x has and C = 0 are refused. */
static void test_ln_first(void **state) {
  (void)state;
  const float xh[2] = {1, 3}, gh[2] = {2, 1}, bh[2] = {0.5f, -0.5f}, wh[6] = {1, 1, 2, 0, 0, -1}, bw[3] = {0, 1, 2};
  const uint32_t i0 = 0;
  float yh[3];
  assert_int_equal(nl_ln_linear_cpu(yh, xh, &i0, 1, gh, bh, 0.0f, wh, bw, 1, 2, 3, NULL), HX_OK);
  assert_float_equal(yh[0], -1.0f, 1e-6f);
  assert_float_equal(yh[1], -2.0f, 1e-6f);
  assert_float_equal(yh[2], 1.5f, 1e-6f);
  enum { R = 4, C = 16, N = 48, H = 64 };
  float x[R * C], xs[R * C], g[C], b[C], w[N * C], bb[N], ya[R * N], yb[R * N], w1[H * C], b1[H], w2[C * H], b2[C];
  for (int i = 0; i < R * C; ++i) x[i] = unit(9, 1, (uint64_t)i), xs[i] = 3.0f * x[i] + 5.0f;
  for (int i = 0; i < C; ++i) g[i] = 1.0f + 0.5f * unit(9, 2, (uint64_t)i), b[i] = unit(9, 3, (uint64_t)i);
  for (int i = 0; i < N * C; ++i) w[i] = unit(9, 4, (uint64_t)i);
  for (int i = 0; i < N; ++i) bb[i] = unit(9, 5, (uint64_t)i);
  for (int i = 0; i < H * C; ++i) w1[i] = unit(9, 6, (uint64_t)i), w2[i] = unit(9, 7, (uint64_t)i);
  for (int i = 0; i < H; ++i) b1[i] = unit(9, 8, (uint64_t)i);
  for (int i = 0; i < C; ++i) b2[i] = unit(9, 9, (uint64_t)i);
  const uint32_t idx[R] = {2, 0, 2, 3}, id[R] = {0, 1, 2, 3};
  assert_int_equal(nl_ln_linear_cpu(ya, x, idx, R, g, b, 0.0f, w, bb, R, C, N, NULL), HX_OK);
  assert_int_equal(nl_ln_linear_cpu(yb, xs, idx, R, g, b, 0.0f, w, bb, R, C, N, NULL), HX_OK);
  for (int i = 0; i < R * N; ++i) assert_float_equal(ya[i], yb[i], 1e-4f * (1.0f + fabsf(ya[i])));
  for (int i = 0; i < N; ++i) assert_true(ya[i] == ya[2 * N + i]); /* rows 0 and 2 both read x's row 2 */
  assert_true(memcmp(ya, ya + N, N * sizeof *ya) != 0);
  /* y += MLP(LN(y)): the same invariance on the normalised part, and nl_mlp_cpu on the normalised row */
  float y0[R * C], y1[R * C], t[R * C], y2[R * C];
  memcpy(y0, x, sizeof x), memcpy(y1, xs, sizeof xs), memcpy(y2, x, sizeof x);
  assert_int_equal(nl_ln_mlp_cpu(y0, g, b, 0.0f, w1, b1, w2, b2, R, C, H, NL_MLP_GELU, NULL), HX_OK);
  assert_int_equal(nl_ln_mlp_cpu(y1, g, b, 0.0f, w1, b1, w2, b2, R, C, H, NL_MLP_GELU, NULL), HX_OK);
  for (int i = 0; i < R * C; ++i) assert_float_equal(y1[i] - xs[i], y0[i] - x[i], 1e-3f * (1.0f + fabsf(y0[i] - x[i])));
  assert_int_equal(nl_layernorm_rows_cpu(t, x, id, R, g, b, R, C, 0.0f, NULL), HX_OK);
  assert_int_equal(nl_mlp_cpu(y2, t, w1, b1, w2, b2, R, C, H, NL_MLP_GELU, NULL), HX_OK);
  for (int i = 0; i < R * C; ++i) assert_float_equal(y2[i], y0[i], 1e-6f * (1.0f + fabsf(y0[i])));
  hx_err e = {HX_OK, ""};
  const uint32_t far[1] = {R};
  assert_int_equal(nl_ln_linear_cpu(ya, x, far, R, g, b, 1e-5f, w, bb, 1, C, N, &e), HX_EINVAL);
  assert_int_equal(nl_ln_linear_cpu(ya, x, NULL, R - 1, g, b, 1e-5f, w, bb, R, C, N, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "in order"));
  assert_int_equal(nl_ln_linear_cpu(ya, x, NULL, R, g, b, 1e-5f, w, bb, R, C, N, NULL), HX_OK);
  assert_int_equal(nl_ln_linear_cpu(yb, x, id, R, g, b, 1e-5f, w, bb, R, C, N, NULL), HX_OK);
  assert_memory_equal(ya, yb, sizeof ya);
  assert_int_equal(nl_ln_linear_cpu(ya, x, idx, R, g, b, 1e-5f, w, bb, 1, 0, N, &e), HX_EINVAL);
  assert_int_equal(nl_ln_linear_cpu(ya, x, idx, R, g, b, 1e-5f, NULL, bb, 1, C, N, &e), HX_EINVAL);
  /* y += LN(x W^T + b): the Linear's row normalised, so W scaled by 3 with b scaled by 3 changes nothing (eps 0) */
  float wl[C * C], bl[C], wl3[C * C], bl3[C], z0[R * C], z1[R * C];
  for (int i = 0; i < C * C; ++i) wl[i] = unit(9, 10, (uint64_t)i), wl3[i] = 3.0f * wl[i];
  for (int i = 0; i < C; ++i) bl[i] = unit(9, 11, (uint64_t)i), bl3[i] = 3.0f * bl[i];
  for (int i = 0; i < R * C; ++i) z0[i] = z1[i] = unit(9, 12, (uint64_t)i);
  assert_int_equal(nl_linear_ln_add_cpu(z0, x, wl, bl, g, b, 0.0f, R, C, NULL), HX_OK);
  assert_int_equal(nl_linear_ln_add_cpu(z1, x, wl3, bl3, g, b, 0.0f, R, C, NULL), HX_OK);
  for (int i = 0; i < R * C; ++i) assert_float_equal(z0[i], z1[i], 1e-4f * (1.0f + fabsf(z0[i])));
  float zr[C];
  for (int r = 0; r < R; ++r) { /* each row: y0 + (a row whose mean is beta's mean and whose spread is gamma's) */
    double s0 = 0;
    for (int c = 0; c < C; ++c) zr[c] = z0[r * C + c] - unit(9, 12, (uint64_t)(r * C + c)), s0 += (double)(zr[c] - b[c]) / (double)g[c];
    assert_true(fabs(s0) < 1e-4 * C);
  }
  assert_int_equal(nl_linear_ln_add_cpu(z0, x, NULL, bl, g, b, 0.0f, R, C, &e), HX_EINVAL);
  assert_int_equal(nl_linear_ln_add_cpu(z0, x, wl, bl, g, b, 0.0f, R, 0, &e), HX_EINVAL);
  assert_int_equal(nl_ln_mlp_cpu(y0, NULL, b, 1e-5f, w1, b1, w2, b2, R, C, H, NL_MLP_GELU, &e), HX_EINVAL);
  assert_int_equal(nl_ln_mlp_cpu(y0, g, b, 1e-5f, w1, b1, w2, b2, R, C, 0, NL_MLP_GELU, &e), HX_EINVAL);
}

static void test_add(void **state) {
  (void)state;
  float y[5] = {1, 2, 3, 4, 5};
  const float x[5] = {0.5f, -2, 0, 1e-3f, -5};
  assert_int_equal(nl_add_cpu(y, x, 5, NULL), HX_OK);
  const float want[5] = {1.5f, 0, 3, 4.001f, 0};
  for (int i = 0; i < 5; ++i) assert_true(y[i] == want[i]);
  assert_int_equal(nl_add_cpu(NULL, NULL, 0, NULL), HX_OK);
}

/* y[i] = x[idx[i]] + u[i]: rows of x taken twice, out of order and never, C = 2 */
static void test_gather_add(void **state) {
  (void)state;
  const float x[6] = {1, 2, 10, 20, 100, 200}, u[8] = {0.5f, -1, 0, 0, -100, 1, 3, 4};
  const uint32_t idx[4] = {2, 0, 2, 1};
  float y[8] = {0};
  assert_int_equal(nl_gather_add_cpu(y, x, idx, u, 4, 2, NULL), HX_OK);
  const float want[8] = {100.5f, 199, 1, 2, 0, 201, 13, 24};
  for (int i = 0; i < 8; ++i) assert_true(y[i] == want[i]);
  assert_int_equal(nl_gather_add_cpu(NULL, NULL, NULL, NULL, 0, 2, NULL), HX_OK);
  hx_err err = {HX_OK, ""};
  float z[8] = {0};
  assert_int_equal(nl_gather_add_cpu(z, x, idx, u, 4, 0, &err), HX_EINVAL);
  assert_int_equal(nl_gather_add_cpu(z, x, NULL, u, 4, 2, &err), HX_EINVAL);
  assert_int_equal(nl_gather_add_cpu(z, x, idx, NULL, 4, 2, &err), HX_EINVAL);
  float w[8] = {0.5f, -1, 0, 0, -100, 1, 3, 4};
  assert_int_equal(nl_gather_add_cpu(w, x, idx, w, 4, 2, &err), HX_EINVAL); /* in place */
  assert_non_null(strstr(err.msg, "in place"));
  for (int i = 0; i < 8; ++i) assert_true(z[i] == 0.0f);
}

/* ---- segment max ----------------------------------------------------------------------------------- */

static void test_segment_max(void **state) {
  (void)state;
  /* x: 6 rows, C = 2 */
  const float x[12] = {1, -1, 5, -7, -3, -2, 2, 8, -9, -9, 0, -0.5f};
  /* segments {rows 4, 0}, {} (empty), {rows 3, 1, 5}, {row 2} through idx */
  const uint32_t idx[6] = {4, 0, 3, 1, 5, 2};
  const uint32_t ptr[5] = {0, 2, 2, 5, 6};
  float y[8];
  assert_int_equal(nl_segment_max_cpu(y, x, idx, ptr, 4, 2, NULL), HX_OK);
  const float want[8] = {1, -1, 0, 0, 5, 8, -3, -2};
  for (int i = 0; i < 8; ++i) assert_true(y[i] == want[i]);
  /* idx NULL: consecutive rows */
  const uint32_t ptr2[3] = {0, 4, 6};
  assert_int_equal(nl_segment_max_cpu(y, x, NULL, ptr2, 2, 2, NULL), HX_OK);
  const float want2[4] = {5, 8, 0, -0.5f};
  for (int i = 0; i < 4; ++i) assert_true(y[i] == want2[i]);
  /* all-negative segment stays negative (not clamped at 0) */
  const uint32_t ptr3[2] = {4, 5};
  assert_int_equal(nl_segment_max_cpu(y, x, NULL, ptr3, 1, 2, NULL), HX_OK);
  assert_true(y[0] == -9.0f && y[1] == -9.0f);
  /* a NaN anywhere in a segment propagates, and stays even if a larger value follows */
  float xn[6] = {1, NAN, 3, 2, 4, 5};
  const uint32_t ptrn[2] = {0, 3};
  assert_int_equal(nl_segment_max_cpu(y, xn, NULL, ptrn, 1, 2, NULL), HX_OK); /* rows (1,NaN) (3,2) (4,5) */
  assert_true(y[0] == 4.0f && isnan(y[1]));
  /* a decreasing ptr is refused */
  const uint32_t bad[3] = {0, 3, 2};
  hx_err err = {HX_OK, ""};
  assert_int_equal(nl_segment_max_cpu(y, x, NULL, bad, 2, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "ptr"));
}

/* ---- fixed windows over packed clouds ---------------------------------------------------------------- */

static void test_windows(void **state) {
  (void)state;
  /* clouds of 10, 0, 4 and 8 rows; windows of 4, 3 a cloud: [0,4) [4,8) [8,10) | empty x 3 | [10,14) [14,14)
   * [14,14) | [14,18) [18,22) [22,22); then the total */
  const uint32_t off[5] = {0, 10, 10, 14, 22};
  uint32_t st[13], ct[13];
  memset(st, 0xAB, sizeof st), memset(ct, 0xAB, sizeof ct);
  assert_int_equal(nl_windows_cpu(st, ct, off, 4, 3, 4, NULL), HX_OK);
  const uint32_t want_s[13] = {0, 4, 8, 10, 10, 10, 10, 14, 14, 14, 18, 22, 22};
  const uint32_t want_c[13] = {4, 4, 2, 0, 0, 0, 4, 0, 0, 4, 4, 0, 0};
  for (int i = 0; i < 13; ++i) assert_int_equal(st[i], want_s[i]), assert_int_equal(ct[i], want_c[i]);
  /* a cloud longer than its windows, decreasing offsets, no windows: refused, nothing written */
  hx_err err = {HX_OK, ""};
  memset(st, 0, sizeof st), memset(ct, 0, sizeof ct);
  assert_int_equal(nl_windows_cpu(st, ct, off, 4, 2, 4, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "cloud 0 has 10 rows"));
  const uint32_t dec[3] = {0, 5, 3};
  assert_int_equal(nl_windows_cpu(st, ct, dec, 2, 3, 4, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "decrease at cloud 1"));
  assert_int_equal(nl_windows_cpu(st, ct, off, 4, 0, 4, &err), HX_EINVAL);
  assert_int_equal(nl_windows_cpu(st, ct, off, 4, 3, 0, &err), HX_EINVAL);
  for (int i = 0; i < 13; ++i) assert_int_equal(st[i], 0), assert_int_equal(ct[i], 0);
}

/* ---- bad arguments ------------------------------------------------------------------------------------ */

static void test_bad_args(void **state) {
  (void)state;
  float a[16] = {0}, b[16] = {0};
  hx_err err = {HX_OK, ""};
  assert_int_equal(nl_linear_cpu(a, b, b, NULL, 1, 0, 2, NL_ACT_NONE, 0, &err), HX_EINVAL);
  assert_int_equal(nl_linear_cpu(a, b, b, NULL, 1, 2, 0, NL_ACT_NONE, 0, &err), HX_EINVAL);
  assert_int_equal(nl_linear_cpu(a, b, b, NULL, 1, 2, 2, (nl_act)7, 0, &err), HX_EINVAL);
  assert_int_equal(nl_linear_cpu(NULL, b, b, NULL, 1, 2, 2, NL_ACT_NONE, 0, &err), HX_EINVAL);
  assert_int_equal(nl_linear_cpu(a, b, NULL, NULL, 1, 2, 2, NL_ACT_NONE, 0, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_cpu(a, b, b, b, 1, 0, 1e-5f, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_cpu(a, b, b, b, 1, 4, -1.0f, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_cpu(a, b, b, b, 1, 4, NAN, &err), HX_EINVAL);
  assert_int_equal(nl_layernorm_cpu(a, b, NULL, b, 1, 4, 1e-5f, &err), HX_EINVAL);
  assert_int_equal(nl_affine_act_cpu(a, b, b, b, 1, 0, NL_ACT_NONE, &err), HX_EINVAL);
  assert_int_equal(nl_affine_act_cpu(a, b, b, NULL, 1, 4, NL_ACT_NONE, &err), HX_EINVAL);
  assert_int_equal(nl_affine_act_cpu(a, b, b, b, 1, 4, (nl_act)-1, &err), HX_EINVAL);
  assert_int_equal(nl_swiglu_cpu(a, b, 1, 0, &err), HX_EINVAL);
  assert_int_equal(nl_swiglu_cpu(a, NULL, 1, 4, &err), HX_EINVAL);
  assert_int_equal(nl_add_cpu(NULL, b, 3, &err), HX_EINVAL);
  assert_int_equal(nl_segment_max_cpu(a, b, NULL, NULL, 1, 2, &err), HX_EINVAL);
  assert_int_equal(nl_segment_max_cpu(a, b, NULL, (const uint32_t[]){0, 1}, 1, 0, &err), HX_EINVAL);
  assert_int_equal(err.status, HX_EINVAL);
  assert_true(strlen(err.msg) > 0);
  /* nothing written on failure */
  for (int i = 0; i < 16; ++i) assert_true(a[i] == 0.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_names),        cmocka_unit_test(test_dtype_edges),
      cmocka_unit_test(test_dtype_round_trip),   cmocka_unit_test(test_dtype_nearest_even),
      cmocka_unit_test(test_gelu),               cmocka_unit_test(test_linear_hand),
      cmocka_unit_test(test_linear_naive),       cmocka_unit_test(test_layernorm_hand),
      cmocka_unit_test(test_layernorm_properties), cmocka_unit_test(test_bn_fold),
      cmocka_unit_test(test_swiglu),             cmocka_unit_test(test_mlp),
      cmocka_unit_test(test_ln_first),           cmocka_unit_test(test_add),
      cmocka_unit_test(test_gather_add),
      cmocka_unit_test(test_segment_max),        cmocka_unit_test(test_windows),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
