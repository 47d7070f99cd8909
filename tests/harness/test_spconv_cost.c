/*
 * test_spconv_cost.c - the sparse-convolution stage's CPU arithmetic (app/spconv_cost.c, formulas in
 * app/pipe_spconv.h): on a hand-made map of 5 rows, the pairs, FLOPs, input rows read once per tile (a row named
 * twice in one tile counted once, in two tiles twice), bytes and halo, worked out by hand for tiles of 2, 5 and 1
 * rows; the roofline as the larger of the FLOP time and the byte time, and NaN without a ceiling; v1's tile rule;
 * bad maps refused naming the entry. The sub-problem of sampled rows: spc_conv_cpu on it gives bit for bit the
 * full problem's sampled rows (k = 3 and 5, a sample with repeated rows, row 0 and the last), its pairs are the
 * sampled rows' pairs, and on a real submanifold map one tile of all rows reads every row once while tiles of one
 * row read each pair's row.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/pipe_spconv.h"

#define K27 27u

/* 5 rows, k = 3: the centre (offset 13) of every row, plus
 *   row 0: o0 -> 1, o1 -> 4      row 1: o0 -> 0, o2 -> 4      row 2: o5 -> 1      row 3: -      row 4: o26 -> 0
 * pairs 5 + 2 + 2 + 1 + 0 + 1 = 11. Tiles of 2: {0,1} reads {0,1,4}, {2,3} reads {1,2,3}, {4} reads {0,4}: 8 rows. */
static void hand_map(int32_t *nbr) {
  for (uint32_t i = 0; i < 5 * K27; i++) nbr[i] = -1;
  for (int32_t i = 0; i < 5; i++) nbr[i * (int32_t)K27 + 13] = i;
  nbr[0 * K27 + 0] = 1, nbr[0 * K27 + 1] = 4;
  nbr[1 * K27 + 0] = 0, nbr[1 * K27 + 2] = 4;
  nbr[2 * K27 + 5] = 1;
  nbr[4 * K27 + 26] = 0;
}

static void test_cost_hand(void **state) {
  (void)state;
  int32_t nbr[5 * K27];
  hand_map(nbr);
  f3d_spc_cost c;
  hx_err e = {HX_OK, ""};
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 2, &e), HX_OK);
  assert_true(c.pairs == 11.0);
  assert_true(c.flops == 2.0 * 11 * 16 * 32); /* 11264 */
  assert_true(c.x_reads == 8.0);
  assert_true(c.halo == 8.0 / 5.0);
  assert_true(c.map_bytes == 5.0 * 27 * 4); /* 540 */
  /* x 8 * 16 * 2 = 256, y 5 * 32 * 2 = 320, map 540, weights 27 * 16 * 32 * 2 = 27648, bias 32 * 4 = 128 */
  assert_true(c.bytes == 256.0 + 320.0 + 540.0 + 27648.0 + 128.0);
  assert_int_equal(c.tile, 2);
  /* one tile of every row: each row read once */
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 5, &e), HX_OK);
  assert_true(c.x_reads == 5.0 && c.halo == 1.0);
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 4096, &e), HX_OK);
  assert_true(c.x_reads == 5.0);
  /* a tile per row: each pair's row (no row names a neighbour twice) */
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 1, &e), HX_OK);
  assert_true(c.x_reads == 11.0);
  /* empty map */
  assert_int_equal(f3d_spc_cost_count(&c, NULL, 0, K27, 16, 32, 2, &e), HX_OK);
  assert_true(c.pairs == 0.0 && c.x_reads == 0.0 && c.halo == 0.0 && c.bytes == 27.0 * 16 * 32 * 2 + 32 * 4);
}

static void test_cost_bad(void **state) {
  (void)state;
  int32_t nbr[5 * K27];
  hand_map(nbr);
  f3d_spc_cost c;
  hx_err e = {HX_OK, ""};
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 0, &e), HX_EINVAL);
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 0, 32, 2, &e), HX_EINVAL);
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, 0, 16, 32, 2, &e), HX_EINVAL);
  assert_int_equal(f3d_spc_cost_count(&c, NULL, 5, K27, 16, 32, 2, &e), HX_EINVAL);
  nbr[3 * K27 + 7] = 5;
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 2, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "(3, 7) = 5"));
  nbr[3 * K27 + 7] = -2;
  assert_int_equal(f3d_spc_cost_count(&c, nbr, 5, K27, 16, 32, 2, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "(3, 7) = -2"));
}

static void test_roofline(void **state) {
  (void)state;
  const char *b = NULL;
  /* 1 TFLOP at 500 TFLOP/s = 2 ms against 1 GB at 2000 GB/s = 0.5 ms: bound by FLOPs */
  assert_true(fabs(f3d_spc_roofline_ms(1e12, 1e9, 500.0, 2000.0, &b) - 2.0) < 1e-12);
  assert_string_equal(b, "FLOPs");
  /* 10 GB: 5 ms, bound by bytes */
  assert_true(fabs(f3d_spc_roofline_ms(1e12, 1e10, 500.0, 2000.0, &b) - 5.0) < 1e-12);
  assert_string_equal(b, "bytes");
  assert_true(isnan(f3d_spc_roofline_ms(1e12, 1e9, NAN, 2000.0, &b)));
  assert_string_equal(b, "");
  assert_true(isnan(f3d_spc_roofline_ms(1e12, 1e9, 500.0, 0.0, NULL)));
  assert_true(isnan(f3d_spc_roofline_ms(-1.0, 1e9, 500.0, 2000.0, NULL)));
}

/* n distinct voxels in a 16^3 box (a seeded shuffle of the cells), two clouds */
static void random_cloud(uint32_t *grid, uint32_t *batch, uint32_t n, uint64_t seed) {
  const uint32_t cells = 16 * 16 * 16;
  uint32_t *perm = malloc(cells * sizeof *perm);
  assert_non_null(perm);
  for (uint32_t i = 0; i < cells; i++) perm[i] = i;
  for (uint32_t i = cells - 1; i > 0; i--) {
    const uint32_t j = (uint32_t)(hx_rng_u64(seed, 9, i) % (i + 1u)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t v = perm[i % cells];
    grid[3 * i] = v % 16, grid[3 * i + 1] = v / 16 % 16, grid[3 * i + 2] = v / 256;
    batch[i] = i < cells ? 0 : 1;
  }
  free(perm);
}

static void sample_case(uint32_t k, uint32_t n, size_t in, size_t out) {
  uint32_t *grid = malloc((size_t)n * 3 * sizeof *grid), *batch = malloc((size_t)n * sizeof *batch);
  assert_true(grid && batch);
  random_cloud(grid, batch, n, 11 + k);
  spc_map m;
  hx_err e = {HX_OK, ""};
  assert_int_equal(spc_map_cpu(&m, grid, batch, n, k, &e), HX_OK);
  const uint32_t K = m.K;
  float *x = malloc((size_t)n * in * sizeof *x), *w = malloc((size_t)K * in * out * sizeof *w);
  float *b = malloc(out * sizeof *b), *y = malloc((size_t)n * out * sizeof *y);
  assert_true(x && w && b && y);
  for (size_t i = 0; i < (size_t)n * in; i++) x[i] = (float)(2.0 * hx_rng_unit(5, 1, i) - 1.0);
  for (size_t i = 0; i < (size_t)K * in * out; i++) w[i] = (float)(0.1 * (2.0 * hx_rng_unit(5, 2, i) - 1.0));
  for (size_t i = 0; i < out; i++) b[i] = (float)(0.1 * (2.0 * hx_rng_unit(5, 3, i) - 1.0));
  assert_int_equal(spc_conv_cpu(y, x, w, b, &m, in, out, &e), HX_OK);

  enum { S = 97 };
  uint32_t sel[S];
  for (uint32_t i = 0; i < S; i++) sel[i] = i == 0 ? 0 : i == 1 ? n - 1 : i == 2 ? 0 : (uint32_t)(hx_rng_u64(5, 4, i) % n);
  f3d_spc_sample sub;
  assert_int_equal(f3d_spc_sample_map(&sub, m.nbr, n, k, sel, S, &e), HX_OK);
  assert_int_equal(sub.S, S);
  assert_int_equal(sub.m.K, K);
  uint64_t pairs = 0;
  for (uint32_t i = 0; i < S; i++)
    for (uint32_t o = 0; o < K; o++) pairs += m.nbr[(size_t)sel[i] * K + o] >= 0;
  assert_int_equal(sub.m.pairs, pairs);
  for (size_t q = (size_t)S * K; q < (size_t)sub.m.n * K; q++) assert_int_equal(sub.m.nbr[q], -1);
  float *xs = calloc((size_t)sub.m.n * in, sizeof *xs), *ys = malloc((size_t)sub.m.n * out * sizeof *ys);
  assert_true(xs && ys);
  for (uint32_t r = 0; r < sub.m.n; r++) {
    if (r < S) {
      assert_int_equal(sub.src[r], UINT32_MAX);
      continue;
    }
    assert_true(sub.src[r] < n);
    memcpy(xs + (size_t)r * in, x + (size_t)sub.src[r] * in, in * sizeof *xs);
  }
  assert_int_equal(spc_conv_cpu(ys, xs, w, b, &sub.m, in, out, &e), HX_OK);
  for (uint32_t i = 0; i < S; i++)
    assert_memory_equal(ys + (size_t)i * out, y + (size_t)sel[i] * out, out * sizeof *ys);

  /* the cost on a submanifold map: every row is its own centre, so one tile of every row reads each row once and
   * tiles of one row read each pair's row */
  f3d_spc_cost c;
  assert_int_equal(f3d_spc_cost_count(&c, m.nbr, n, K, in, out, n, &e), HX_OK);
  assert_true(c.x_reads == (double)n && c.pairs == (double)m.pairs);
  assert_int_equal(f3d_spc_cost_count(&c, m.nbr, n, K, in, out, 1, &e), HX_OK);
  assert_true(c.x_reads == (double)m.pairs);
  assert_int_equal(f3d_spc_cost_count(&c, m.nbr, n, K, in, out, 128, &e), HX_OK);
  assert_true(c.x_reads > (double)n && c.x_reads < (double)m.pairs);

  f3d_spc_sample_free(&sub);
  free(xs), free(ys), free(x), free(w), free(b), free(y), free(grid), free(batch);
  spc_map_free_host(&m);
}

static void test_sample_k3(void **state) {
  (void)state;
  sample_case(3, 5000, 16, 24);
}
static void test_sample_k5(void **state) {
  (void)state;
  sample_case(5, 1500, 8, 16);
}

static void test_sample_bad(void **state) {
  (void)state;
  int32_t nbr[5 * K27];
  hand_map(nbr);
  f3d_spc_sample s;
  hx_err e = {HX_OK, ""};
  uint32_t sel[2] = {0, 5};
  assert_int_equal(f3d_spc_sample_map(&s, nbr, 5, 3, sel, 2, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "sampled row 5"));
  assert_int_equal(f3d_spc_sample_map(&s, nbr, 5, 3, sel, 0, &e), HX_EINVAL);
  assert_int_equal(f3d_spc_sample_map(&s, nbr, 5, 4, sel, 1, &e), HX_EINVAL);
  nbr[0 * K27 + 3] = 7;
  assert_int_equal(f3d_spc_sample_map(&s, nbr, 5, 3, sel, 1, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "(0, 3) = 7"));
  /* the hand map sampled at rows 1 and 1: sub rows 2.. hold 1, 0, 4 in first-seen order (o0 -> 0, o2 -> 4, o13) */
  hand_map(nbr);
  uint32_t twice[2] = {1, 1};
  assert_int_equal(f3d_spc_sample_map(&s, nbr, 5, 3, twice, 2, &e), HX_OK);
  assert_int_equal(s.m.n, 5);
  assert_int_equal(s.src[2], 0);
  assert_int_equal(s.src[3], 4);
  assert_int_equal(s.src[4], 1);
  assert_int_equal(s.m.nbr[0 * K27 + 0], 2);
  assert_int_equal(s.m.nbr[1 * K27 + 13], 4);
  assert_int_equal(s.m.pairs, 6);
  f3d_spc_sample_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cost_hand), cmocka_unit_test(test_cost_bad),  cmocka_unit_test(test_roofline),
      cmocka_unit_test(test_sample_k3), cmocka_unit_test(test_sample_k5), cmocka_unit_test(test_sample_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
