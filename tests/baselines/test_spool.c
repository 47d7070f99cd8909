/*
 * test_spool.c - CPU serialized pooling reference (baselines/spool.c): a hand-made cloud with known
 * clusters, and on random clouds the identity "pooled codes = encoding of grid >> 1 at depth - 1".
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"

typedef struct pool_buf {
  spool_out o;
  void *mem[12];
} pool_buf;

static void pool_alloc(pool_buf *p, size_t n, size_t C, int R) {
  memset(p, 0, sizeof *p);
  p->o.cluster = p->mem[0] = calloc(n, 4);
  p->o.head = p->mem[1] = calloc(n, 4);
  p->o.idx_ptr = p->mem[2] = calloc(n + 1, 4);
  p->o.code = p->mem[3] = calloc((size_t)R * n, 8);
  p->o.order = p->mem[4] = calloc((size_t)R * n, 4);
  p->o.inverse = p->mem[5] = calloc((size_t)R * n, 4);
  p->o.feat = p->mem[6] = calloc(n * C, 4);
  p->o.coord = p->mem[7] = calloc(n * 3, 4);
  p->o.grid = p->mem[8] = calloc(n * 3, 4);
  p->o.batch = p->mem[9] = calloc(n, 4);
  for (int i = 0; i < 10; i++) assert_non_null(p->mem[i]);
}

static void pool_free(pool_buf *p) {
  for (int i = 0; i < 12; i++) free(p->mem[i]);
}

/* Two clouds at depth 2: cloud 0 has three points in parent voxel (0,0,0) and one in (1,0,0); cloud 1
 * one point in (0,0,0). */
static void test_hand_made(void **state) {
  (void)state;
  const size_t n = 5, C = 2;
  const uint32_t grid[15] = {1, 1, 0, 2, 0, 1, 0, 0, 0, 0, 1, 1, 3, 3, 3};
  const uint32_t batch[5] = {0, 0, 0, 0, 1};
  const float coord[15] = {1, 2, 3, 9, 9, 9, 3, 4, 5, 5, 6, 7, 0, 0, 0};
  const float feat[10] = {1, -5, 7, 7, -1, 2, 4, 0, 3, 3};
  const sfc_order orders[2] = {SFC_Z, SFC_HILBERT};
  uint64_t code[10];
  uint32_t order[10], inv[10];
  assert_int_equal(sfc_encode_cpu(code, grid, batch, n, 2, orders, 2, NULL), HX_OK);
  assert_int_equal(sfc_sort_cpu(order, inv, code, n, 2, NULL), HX_OK);
  spool_in in = {code, order, feat, coord, grid, batch, n, C, 2, 2, 2, {1, 0, 0, 0}};
  pool_buf p;
  pool_alloc(&p, n, C, 2);
  assert_int_equal(spool_cpu(&p.o, &in, NULL), HX_OK);
  assert_int_equal(p.o.n_out, 3);
  assert_int_equal(p.o.depth, 1);
  /* clusters by code >> 3 with batch at bit 3: cloud 0 parent (0,0,0) = 0, (1,0,0) = 4, cloud 1 = 8 */
  const uint32_t want_cluster[5] = {0, 1, 0, 0, 2};
  for (int i = 0; i < 5; i++) assert_int_equal(p.o.cluster[i], want_cluster[i]);
  assert_int_equal(p.o.head[0], 0);
  assert_int_equal(p.o.head[1], 1);
  assert_int_equal(p.o.head[2], 4);
  assert_int_equal(p.o.idx_ptr[0], 0);
  assert_int_equal(p.o.idx_ptr[1], 3);
  assert_int_equal(p.o.idx_ptr[3], 5);
  const float want_feat[6] = {4, 2, 7, 7, 3, 3};
  for (int k = 0; k < 6; k++) assert_true(p.o.feat[k] == want_feat[k]);
  const float want_coord[9] = {3, 4, 5, 9, 9, 9, 0, 0, 0};
  for (int k = 0; k < 9; k++) assert_true(p.o.coord[k] == want_coord[k]);
  const uint32_t want_grid[9] = {0, 0, 0, 1, 0, 0, 1, 1, 1};
  for (int k = 0; k < 9; k++) assert_int_equal(p.o.grid[k], want_grid[k]);
  assert_int_equal(p.o.batch[2], 1);
  /* row 0 of the pooled codes is the old row perm[0] = 1 (hilbert) >> 3: depth-1 Hilbert + batch bit 3 */
  for (size_t k = 0; k < 3; k++) {
    const uint32_t *g = p.o.grid + 3 * k;
    assert_int_equal(p.o.code[k], (uint64_t)p.o.batch[k] << 3 | sfc_code_point(SFC_HILBERT, g[0], g[1], g[2], 1));
    assert_int_equal(p.o.code[3 + k], (uint64_t)p.o.batch[k] << 3 | sfc_code_point(SFC_Z, g[0], g[1], g[2], 1));
  }
  for (uint32_t r = 0; r < 2; r++)
    for (uint32_t j = 0; j < 3; j++) assert_int_equal(p.o.inverse[r * 3 + p.o.order[r * 3 + j]], j);
  pool_free(&p);
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void test_random_equals_reencode(void **state) {
  (void)state;
  const size_t offset[3] = {0, 3000, 5000}, n = 5000, C = 5;
  const int d = 6, R = 4;
  uint32_t *grid = malloc(n * 12), *batch = malloc(n * 4), *order = malloc(n * 16), *keep = malloc(n * 4);
  float *coord = malloc(n * 12), *feat = malloc(n * C * 4);
  uint64_t *code = malloc(n * 32);
  assert_true(grid && batch && order && keep && coord && feat && code);
  for (size_t i = 0; i < 3 * n; i++) coord[i] = (float)(hx_rng_unit(9, 0, i) * 3.2);
  for (size_t i = 0; i < n * C; i++) feat[i] = (float)hx_rng_unit(9, 1, i) - 0.5f;
  uint32_t gmax;
  assert_int_equal(sfc_grid_cpu(grid, &gmax, coord, offset, 2, 0.05, NULL), HX_OK);
  assert_int_equal(sfc_batch_index_cpu(batch, offset, 2, NULL), HX_OK);
  const sfc_order orders[4] = {SFC_Z_TRANS, SFC_HILBERT, SFC_Z, SFC_HILBERT_TRANS};
  assert_int_equal(sfc_encode_cpu(code, grid, batch, n, d, orders, R, NULL), HX_OK);
  assert_int_equal(sfc_sort_cpu(order, NULL, code, n, R, NULL), HX_OK);
  spool_in in = {code, order, feat, coord, grid, batch, n, C, R, d, 2, {2, 0, 3, 1}};
  pool_buf p;
  pool_alloc(&p, n, C, R);
  assert_int_equal(spool_cpu(&p.o, &in, NULL), HX_OK);
  const size_t m = p.o.n_out;
  /* the number of clusters = distinct (batch, grid >> 1) */
  uint64_t *key = malloc(n * 8);
  assert_non_null(key);
  for (size_t i = 0; i < n; i++)
    key[i] = (uint64_t)batch[i] << 60 | (uint64_t)(grid[3 * i] >> 1) << 40 | (uint64_t)(grid[3 * i + 1] >> 1) << 20 |
             (grid[3 * i + 2] >> 1);
  qsort(key, n, 8, cmp_u64);
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++) distinct += i == 0 || key[i] != key[i - 1];
  assert_int_equal(m, distinct);
  assert_true(m < n);
  for (size_t k = 0; k < m; k++) {
    const uint32_t *g = p.o.grid + 3 * k;
    for (int r = 0; r < R; r++)
      assert_int_equal(p.o.code[(size_t)r * m + k],
                       (uint64_t)p.o.batch[k] << (3 * (d - 1)) | sfc_code_point(orders[in.perm[r]], g[0], g[1], g[2], d - 1));
    if (k) assert_true(p.o.code[(size_t)0 * m + k] != p.o.code[k - 1]);
  }
  for (size_t i = 0; i < n; i++) {
    const uint32_t k = p.o.cluster[i];
    assert_true(p.o.head[k] <= i);
    assert_int_equal(p.o.grid[3 * k], grid[3 * i] >> 1);
    for (size_t f = 0; f < C; f++) assert_true(feat[i * C + f] <= p.o.feat[k * C + f]);
  }
  /* clusters ascend in old-row-0 code >> 3 order */
  for (size_t k = 1; k < m; k++) assert_true((code[p.o.head[k - 1]] >> 3) < (code[p.o.head[k]] >> 3));
  free(key), free(grid), free(batch), free(order), free(keep), free(coord), free(feat), free(code);
  pool_free(&p);
}

static void test_bad_pooling(void **state) {
  (void)state;
  spool_in in;
  memset(&in, 0, sizeof in);
  in.R = 1;
  in.depth = 3;
  pool_buf p;
  pool_alloc(&p, 1, 1, 1);
  assert_int_equal(spool_cpu(&p.o, &in, NULL), HX_EINVAL); /* n = 0 */
  /* one point at depth 1 pools to one point at depth 0 */
  const uint32_t grid[3] = {1, 0, 1}, batch[1] = {0}, order[1] = {0};
  const float coord[3] = {1, 2, 3}, feat[1] = {-2};
  uint64_t code[1];
  const sfc_order z = SFC_Z;
  assert_int_equal(sfc_encode_cpu(code, grid, batch, 1, 1, &z, 1, NULL), HX_OK);
  spool_in one = {code, order, feat, coord, grid, batch, 1, 1, 1, 1, 1, {0, 0, 0, 0}};
  assert_int_equal(spool_cpu(&p.o, &one, NULL), HX_OK);
  assert_int_equal(p.o.n_out, 1);
  assert_int_equal(p.o.depth, 0);
  assert_int_equal(p.o.code[0], 0);
  assert_true(p.o.feat[0] == -2.0f);
  one.depth = 0;
  assert_int_equal(spool_cpu(&p.o, &one, NULL), HX_EINVAL);
  pool_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_made),
      cmocka_unit_test(test_random_equals_reencode),
      cmocka_unit_test(test_bad_pooling),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
