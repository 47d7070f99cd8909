/*
 * test_attn.c - CPU tests of bucket-swin attention: the double reference on hand-checkable cases, the
 * plan builders (plain, swin, stride, PTv3 patches), validation and the tolerance check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define E BATTN_EMPTY

static uint16_t *alloc16(size_t n) {
  uint16_t *x = malloc(n * sizeof *x);
  assert_non_null(x);
  return x;
}

static void fill_random(uint16_t *x, size_t n, battn_dtype dt, uint64_t seed, double amp) {
  for (size_t i = 0; i < n; ++i)
    x[i] = battn_from_float(dt, (float)(amp * (2.0 * hx_rng_unit(seed, 1, i) - 1.0)));
}

static void test_convert(void **state) {
  (void)state;
  const float vals[] = {0.0f, 1.0f, -2.5f, 0.333333f, 65504.0f, 1e-6f, -3.0e-5f};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; ++i) {
    float h = battn_to_float(BATTN_F16, battn_from_float(BATTN_F16, vals[i]));
    float b = battn_to_float(BATTN_BF16, battn_from_float(BATTN_BF16, vals[i]));
    assert_true(fabsf(h - vals[i]) <= fabsf(vals[i]) * (1.0f / 2048.0f) + 6e-8f);
    assert_true(fabsf(b - vals[i]) <= fabsf(vals[i]) * (1.0f / 256.0f));
  }
  assert_int_equal(battn_from_float(BATTN_F16, 1.0f), 0x3C00);
  assert_int_equal(battn_from_float(BATTN_BF16, 1.0f), 0x3F80);
  assert_int_equal(battn_from_float(BATTN_F16, 1.0f + 1.0f / 2048.0f), 0x3C00); /* tie to even */
  assert_int_equal(battn_from_float(BATTN_F16, 70000.0f), 0x7C00);             /* overflow */
  assert_int_equal(battn_from_float(BATTN_F16, 5.9604645e-8f), 0x0001);       /* smallest subnormal */
}

/* One key: the output is that key's V row exactly and LSE is its scaled score. */
static void test_one_key(void **state) {
  (void)state;
  const int H = 2, D = 16;
  uint32_t st[1] = {0}, ct[1] = {1}, cl[2] = {0, 1};
  battn_plan plan;
  assert_int_equal(battn_plan_plain(&plan, 4, st, ct, cl, 1, NULL), HX_OK);
  uint16_t *q = alloc16((size_t)(H * D)), *k = alloc16((size_t)(H * D)), *v = alloc16((size_t)(H * D));
  fill_random(q, (size_t)(H * D), BATTN_F16, 1, 1.0);
  fill_random(k, (size_t)(H * D), BATTN_F16, 2, 1.0);
  fill_random(v, (size_t)(H * D), BATTN_F16, 3, 1.0);
  battn_params p;
  battn_params_init(&p, 1, H, D, BATTN_F16, &plan);
  p.q = q, p.k = k, p.v = v;
  double o[2 * 16], lse[2];
  int64_t sel = 0;
  assert_int_equal(battn_reference_rows(&p, &plan, &sel, 1, 0, o, lse, NULL), HX_OK);
  for (int h = 0; h < H; ++h) {
    double dot = 0.0;
    for (int d = 0; d < D; ++d) {
      assert_true(o[h * D + d] == (double)battn_to_float(BATTN_F16, v[h * D + d]));
      dot += (double)battn_to_float(BATTN_F16, q[h * D + d]) * (double)battn_to_float(BATTN_F16, k[h * D + d]);
    }
    assert_true(fabs(lse[h] - dot * (double)p.scale) < 1e-12);
  }
  free(q), free(k), free(v);
  battn_plan_free(&plan);
}

/* q = 0 gives equal scores: the output is the mean of the scope's V rows and LSE = log(n). Also checks
 * that a padded layout's rows past a bucket's count are neither keys (their huge V would show) nor
 * written queries (battn_forward_cpu leaves them poisoned). */
static void test_uniform_and_mask(void **state) {
  (void)state;
  const int H = 1, D = 32;
  const int64_t rows = 16;
  uint32_t st[2] = {0, 8}, ct[2] = {5, 3}, cl[2] = {0, 2};
  battn_plan plan;
  assert_int_equal(battn_plan_plain(&plan, 2, st, ct, cl, 1, NULL), HX_OK);
  assert_int_equal(plan.num_scopes, 1);
  assert_int_equal(plan.max_scope_rows, 8);
  uint16_t *q = alloc16((size_t)(rows * D)), *k = alloc16((size_t)(rows * D)), *v = alloc16((size_t)(rows * D)),
           *o = alloc16((size_t)(rows * D));
  float lse[16];
  memset(q, 0, (size_t)(rows * D) * 2);
  fill_random(k, (size_t)(rows * D), BATTN_BF16, 5, 1.0);
  fill_random(v, (size_t)(rows * D), BATTN_BF16, 6, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    int pad = (r >= 5 && r < 8) || r >= 11;
    if (pad)
      for (int d = 0; d < D; ++d) v[r * D + d] = battn_from_float(BATTN_BF16, 1e6f);
  }
  for (size_t i = 0; i < (size_t)(rows * D); ++i) o[i] = 0xFFFF;
  for (int i = 0; i < 16; ++i) lse[i] = -1.0f;
  battn_params p;
  battn_params_init(&p, rows, H, D, BATTN_BF16, &plan);
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
  assert_int_equal(battn_forward_cpu(&p, &plan, NULL), HX_OK);
  const int valid[8] = {0, 1, 2, 3, 4, 8, 9, 10};
  for (int d = 0; d < D; ++d) {
    double mean = 0.0;
    for (int i = 0; i < 8; ++i) mean += (double)battn_to_float(BATTN_BF16, v[valid[i] * D + d]);
    mean /= 8.0;
    for (int i = 0; i < 8; ++i)
      assert_true(fabs((double)battn_to_float(BATTN_BF16, o[valid[i] * D + d]) - mean) <= 1e-2 * (1.0 + fabs(mean)));
  }
  for (int i = 0; i < 8; ++i) assert_true(fabs((double)lse[valid[i]] - log(8.0)) < 1e-6);
  for (int64_t r = 0; r < rows; ++r) {
    int pad = (r >= 5 && r < 8) || r >= 11;
    if (!pad) continue;
    assert_true(lse[r] == -1.0f);
    for (int d = 0; d < D; ++d) assert_int_equal(o[r * D + d], 0xFFFF);
  }
  free(q), free(k), free(v), free(o);
  battn_plan_free(&plan);
}

/* Two clouds of 5 and 11 buckets, K = 4. */
static void layout(uint32_t *st, uint32_t *ct, uint32_t *cl) {
  for (uint32_t b = 0; b < 16; ++b) st[b] = 10 * b, ct[b] = 1 + b % 7;
  cl[0] = 0, cl[1] = 5, cl[2] = 16;
}

static void expect_scopes(const battn_plan *pl, const uint32_t *want, uint32_t n) {
  assert_int_equal(pl->num_scopes, n);
  assert_int_equal(pl->buckets_per_scope, 4);
  for (uint32_t i = 0; i < n * 4; ++i) assert_int_equal(pl->scope[i], want[i]);
  battn_params p;
  battn_params_init(&p, 160, 1, 16, BATTN_F16, pl);
  assert_int_equal(battn_validate(&p, pl, NULL), HX_OK);
}

static void test_plans(void **state) {
  (void)state;
  uint32_t st[16], ct[16], cl[3];
  layout(st, ct, cl);
  battn_plan pl;
  assert_int_equal(battn_plan_plain(&pl, 4, st, ct, cl, 2, NULL), HX_OK);
  const uint32_t plain[] = {0, 1, 2, 3, 4, E, E, E, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, E};
  expect_scopes(&pl, plain, 5);
  uint32_t mx = 0;
  for (int b = 0; b < 16; ++b) mx = ct[b] > mx ? ct[b] : mx;
  assert_int_equal(pl.max_bucket_rows, mx);
  battn_plan_free(&pl);

  assert_int_equal(battn_plan_swin(&pl, 2, 4, st, ct, cl, 2, NULL), HX_OK);
  const uint32_t swin[] = {0, 1, E, E, 2, 3, 4, E, 5, 6, E, E, 7, 8, 9, 10, 11, 12, 13, 14, 15, E, E, E};
  expect_scopes(&pl, swin, 6);
  battn_plan_free(&pl);

  assert_int_equal(battn_plan_stride(&pl, 2, 4, st, ct, cl, 2, NULL), HX_OK);
  /* cloud 0 (5 buckets): chunk of 8 = {0,2,4,-}, {1,3,-,-}; cloud 1 (11): chunk {5,7,9,11}, {6,8,10,12},
   * then chunk at 13: {13,15}, {14} */
  const uint32_t stride[] = {0, 2, 4, E, 1, 3, E, E, 5, 7, 9, 11, 6, 8, 10, 12, 13, 15, E, E, 14, E, E, E};
  expect_scopes(&pl, stride, 6);
  battn_plan_free(&pl);

  /* no scope ever mixes clouds, for several shifts and strides */
  for (uint32_t k = 0; k < 4; ++k)
    for (int kind = 0; kind < 3; ++kind) {
      uint32_t arg = kind == 1 ? k : k + 1;
      assert_int_equal(battn_plan_build(&pl, (battn_plan_kind)kind, arg, 4, st, ct, cl, 2, NULL), HX_OK);
      for (uint32_t s = 0; s < pl.num_scopes; ++s) {
        int cloud = -1;
        for (uint32_t j = 0; j < 4; ++j) {
          uint32_t b = pl.scope[s * 4 + j];
          if (b == E) continue;
          int c = b < 5 ? 0 : 1;
          if (cloud < 0) cloud = c;
          assert_int_equal(c, cloud);
        }
        assert_true(cloud >= 0);
      }
      battn_params p;
      battn_params_init(&p, 160, 1, 16, BATTN_F16, &pl);
      assert_int_equal(battn_validate(&p, &pl, NULL), HX_OK);
      battn_plan_free(&pl);
    }
  assert_int_equal(battn_plan_swin(&pl, 4, 4, st, ct, cl, 2, NULL), HX_EINVAL); /* shift >= K */
  assert_int_equal(battn_plan_stride(&pl, 0, 4, st, ct, cl, 2, NULL), HX_EINVAL);
}

static void test_patches(void **state) {
  (void)state;
  const int64_t cu[4] = {0, 5, 5, 17};
  battn_plan pl;
  assert_int_equal(battn_plan_patches(&pl, cu, 3, 4, NULL), HX_OK);
  assert_int_equal(pl.num_buckets, 5);
  assert_int_equal(pl.num_scopes, 2);
  assert_int_equal(pl.buckets_per_scope, 3);
  const uint32_t st[5] = {0, 4, 5, 9, 13}, ct[5] = {4, 1, 4, 4, 4}, sc[6] = {0, 1, E, 2, 3, 4};
  for (int i = 0; i < 5; ++i) assert_int_equal(pl.bucket_start[i], st[i]), assert_int_equal(pl.bucket_count[i], ct[i]);
  for (int i = 0; i < 6; ++i) assert_int_equal(pl.scope[i], sc[i]);
  assert_int_equal(pl.max_scope_rows, 12);
  battn_params p;
  battn_params_init(&p, 17, 1, 16, BATTN_F16, &pl);
  assert_int_equal(battn_validate(&p, &pl, NULL), HX_OK);
  battn_plan_free(&pl);
}

/* Tile work by hand: scope {64, 64} (two buckets of one 128-row query tile's half each), scope {100, empty}, and a
 * lone bucket {0}. */
static void test_tile_work(void **state) {
  (void)state;
  const uint32_t st[5] = {0, 64, 128, 228, 228}, ct[5] = {64, 64, 100, 0, 0}, cl[2] = {0, 5};
  battn_plan pl;
  assert_int_equal(battn_plan_plain(&pl, 2, st, ct, cl, 1, NULL), HX_OK);
  assert_int_equal(pl.num_scopes, 3);
  battn_tile_work w;
  battn_tile_work_compute(&w, &pl, 128, 64);
  /* real: 128^2 + 100^2 + 0; bucket by bucket: (128 + 128) x (64 + 64) + 128 x 128; packed: 128 x 128 + 128 x 128 */
  assert_true(w.real == 16384.0 + 10000.0);
  assert_true(w.by_bucket == 256.0 * 128.0 + 128.0 * 128.0);
  assert_true(w.packed == 2.0 * 128.0 * 128.0);
  battn_tile_work_compute(&w, &pl, 1, 1); /* tiles of one row: no padding either way */
  assert_true(w.by_bucket == w.real && w.packed == w.real);
  battn_plan_free(&pl);
}

static void test_validate(void **state) {
  (void)state;
  uint32_t st[3] = {0, 4, 8}, ct[3] = {4, 4, 4}, cl[2] = {0, 3};
  battn_plan pl;
  assert_int_equal(battn_plan_plain(&pl, 2, st, ct, cl, 1, NULL), HX_OK);
  battn_params p;
  hx_err e;
  battn_params_init(&p, 12, 2, 24, BATTN_F16, &pl);
  assert_int_equal(battn_validate(&p, &pl, &e), HX_EINVAL); /* head dim 24 */
  assert_non_null(strstr(e.msg, "head dim"));
  battn_params_init(&p, 12, 2, 16, BATTN_F16, &pl);
  assert_int_equal(battn_validate(&p, &pl, NULL), HX_OK);
  p.q_row_stride = 36;
  assert_int_equal(battn_validate(&p, &pl, NULL), HX_EINVAL); /* stride not a multiple of 8 */
  battn_params_init(&p, 10, 2, 16, BATTN_F16, &pl);
  assert_int_equal(battn_validate(&p, &pl, NULL), HX_EINVAL); /* bucket 2 past rows */
  battn_params_init(&p, 12, 2, 16, BATTN_F16, &pl);
  pl.scope[2] = 0; /* bucket 0 twice, bucket 2 in no scope */
  assert_int_equal(battn_validate(&p, &pl, &e), HX_EINVAL);
  pl.scope[2] = 2;
  pl.bucket_start[1] = 2; /* overlap */
  assert_int_equal(battn_validate(&p, &pl, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "overlaps"));
  battn_plan_free(&pl);
}

/* The tolerance check passes the reference itself and fails a perturbed output. */
static void test_check(void **state) {
  (void)state;
  const int H = 2, D = 64;
  battn_plan pl;
  assert_int_equal(battn_plan_uniform(&pl, BATTN_PLAN_SWIN, 1, 3, 100, 16, NULL), HX_OK);
  const int64_t rows = 100;
  size_t n = (size_t)(rows * H * D);
  uint16_t *q = alloc16(n), *k = alloc16(n), *v = alloc16(n), *o = alloc16(n);
  float *lse = malloc((size_t)(rows * H) * sizeof *lse);
  fill_random(q, n, BATTN_F16, 7, 2.0);
  fill_random(k, n, BATTN_F16, 8, 2.0);
  fill_random(v, n, BATTN_F16, 9, 1.0);
  battn_params p;
  battn_params_init(&p, rows, H, D, BATTN_F16, &pl);
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
  assert_int_equal(battn_forward_cpu(&p, &pl, NULL), HX_OK);
  int64_t sel[100];
  for (int i = 0; i < 100; ++i) sel[i] = i;
  battn_check_report rep;
  assert_int_equal(battn_check_rows(&p, &pl, o, lse, sel, 100, &rep, NULL), HX_OK);
  assert_int_equal(rep.rows_checked, 100);
  assert_true(rep.o_naive_err > 0.0);
  o[37 * H * D + 5] = battn_from_float(BATTN_F16, battn_to_float(BATTN_F16, o[37 * H * D + 5]) + 0.05f);
  assert_int_equal(battn_check_rows(&p, &pl, o, lse, sel, 100, &rep, NULL), HX_ECHECK);
  o[37 * H * D + 5] = 0xFFFF;
  assert_int_equal(battn_check_rows(&p, &pl, o, lse, sel, 100, &rep, NULL), HX_ECHECK);
  assert_int_equal(rep.nonfinite, 1);
  free(q), free(k), free(v), free(o), free(lse);
  battn_plan_free(&pl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_convert),  cmocka_unit_test(test_one_key), cmocka_unit_test(test_uniform_and_mask),
      cmocka_unit_test(test_plans),    cmocka_unit_test(test_patches), cmocka_unit_test(test_validate),
      cmocka_unit_test(test_check),    cmocka_unit_test(test_tile_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
