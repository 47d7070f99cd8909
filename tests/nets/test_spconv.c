/*
 * test_spconv.c - the submanifold convolution's CPU references: the kernel map against a brute-force
 * neighbour search (a 3x3x3 block: centre 27 neighbours, corners 8, 343 pairs; two clouds on the same voxels
 * never see each other; k = 5; random clouds; a cloud at the top of the coordinate range), the offset order of
 * nets.h on named pairs, symmetry (j is i's neighbour at o exactly when i is j's at K-1-o), the per-offset
 * counts, the convolution against a dense 3D convolution on a small voxel grid, and the refusals (duplicate
 * voxels, coordinates >= 2^18, batch >= 2^10, k not 3 or 5); the variant table (v0 .. v4) and
 * spc_variant_best's rule (v2 for inputs of at most 8 channels; for widths that are multiples of 16 v3 at k = 3
 * and v1 at k = 5; v0 otherwise); the stem's reference (spc_stem_cpu) by hand on two neighbours; a Linear folded
 * into the convolution before it (spc_fold_linear_cpu) against the two in turn.
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

#include "f3d_config.h"
#include "nets/nets.h"
#include "tests/nets/test_spconv_util.h"

/* Brute force: the map entry by a scan of every row. */
static int32_t brute_nbr(const tcloud *t, uint32_t i, uint32_t o, uint32_t k) {
  const int r = (int)(k / 2u);
  const int64_t x = (int64_t)t->grid[3u * i] + (int64_t)(o / (k * k)) - r;
  const int64_t y = (int64_t)t->grid[3u * i + 1u] + (int64_t)((o / k) % k) - r;
  const int64_t z = (int64_t)t->grid[3u * i + 2u] + (int64_t)(o % k) - r;
  for (uint32_t j = 0; j < t->n; ++j)
    if (t->batch[j] == t->batch[i] && t->grid[3u * j] == x && t->grid[3u * j + 1u] == y &&
        t->grid[3u * j + 2u] == z)
      return (int32_t)j;
  return -1;
}

/* The map equals the brute force entry by entry, pairs and opairs are its counts, and it is symmetric. */
static void check_map(const spc_map *m, const tcloud *t, uint32_t k) {
  const uint32_t K = k * k * k;
  assert_int_equal(m->n, t->n);
  assert_int_equal(m->k, k);
  assert_int_equal(m->K, K);
  assert_null(m->rule);
  uint64_t pairs = 0;
  uint32_t opairs[SPC_KMAX] = {0};
  for (uint32_t i = 0; i < t->n; ++i)
    for (uint32_t o = 0; o < K; ++o) {
      const int32_t j = m->nbr[(size_t)i * K + o];
      assert_int_equal(j, brute_nbr(t, i, o, k));
      if (j < 0) continue;
      pairs++, opairs[o]++;
      assert_int_equal(m->nbr[(size_t)j * K + (K - 1u - o)], (int32_t)i); /* symmetry */
    }
  assert_int_equal(m->pairs, pairs);
  for (uint32_t o = 0; o < K; ++o) {
    assert_int_equal(m->opairs[o], opairs[o]);
    assert_int_equal(m->opairs[o], m->opairs[K - 1u - o]);
  }
  assert_int_equal(m->opairs[K / 2u], t->n);
}

static void test_block(void **state) {
  (void)state;
  /* one full 3x3x3 block, then the same block as two clouds */
  for (uint32_t B = 1; B <= 2; ++B) {
    const uint32_t per[2] = {27, 27}, base[6] = {10, 20, 30, 10, 20, 30};
    tcloud t;
    assert_true(tcloud_make(&t, B, per, 3, base, 7u + B));
    spc_map m;
    hx_err err = {HX_OK, ""};
    assert_int_equal(spc_map_cpu(&m, t.grid, t.batch, t.n, 3, &err), HX_OK);
    check_map(&m, &t, 3);
    assert_int_equal(m.pairs, 343u * B); /* 7^3: per axis the offsets -1, 0, 1 pair 2 + 3 + 2 rows */
    for (uint32_t i = 0; i < t.n; ++i) {
      uint32_t expect = 1, have = 0;
      for (int a = 0; a < 3; ++a) expect *= t.grid[3u * i + (uint32_t)a] == 11u + 10u * (uint32_t)a ? 3u : 2u;
      for (uint32_t o = 0; o < 27; ++o) {
        const int32_t j = m.nbr[i * 27u + o];
        if (j < 0) continue;
        have++;
        assert_int_equal(t.batch[j], t.batch[i]); /* the clouds never see each other */
      }
      assert_int_equal(have, expect); /* centre 27, face centres 18, edges 12, corners 8 */
    }
    /* k = 5 on the same block: every voxel of the block is within reach of every other */
    spc_map m5;
    assert_int_equal(spc_map_cpu(&m5, t.grid, t.batch, t.n, 5, &err), HX_OK);
    check_map(&m5, &t, 5);
    assert_int_equal(m5.pairs, 27u * 27u * B);
    spc_map_free_host(&m5);
    spc_map_free_host(&m);
    assert_null(m.nbr);
    tcloud_free(&t);
  }
}

/* The offset order of nets.h: o = ((dx + r) * k + (dy + r)) * k + (dz + r), on named pairs. */
static void test_offset_order(void **state) {
  (void)state;
  const uint32_t grid[9] = {0, 0, 0, 1, 2, 0, 1, 0, 0};
  spc_map m;
  hx_err err = {HX_OK, ""};
  assert_int_equal(spc_map_cpu(&m, grid, NULL, 3, 5, &err), HX_OK);
  /* row 1 = row 0 + (1, 2, 0): o = ((1+2)*5 + (2+2))*5 + (0+2) = 97, and back at 124 - 97 = 27 */
  assert_int_equal(m.nbr[0 * 125 + 97], 1);
  assert_int_equal(m.nbr[1 * 125 + 27], 0);
  assert_int_equal(m.nbr[0 * 125 + 62], 0); /* centre */
  assert_int_equal(m.pairs, 3u + 2u + 2u + 2u);
  spc_map_free_host(&m);
  assert_int_equal(spc_map_cpu(&m, grid, NULL, 3, 3, &err), HX_OK);
  /* row 2 = row 0 + (1, 0, 0): o = ((1+1)*3 + 1)*3 + 1 = 22; row 1 is out of a 3-kernel's reach */
  assert_int_equal(m.nbr[0 * 27 + 22], 2);
  assert_int_equal(m.nbr[2 * 27 + 4], 0);
  assert_int_equal(m.pairs, 3u + 2u);
  spc_map_free_host(&m);
}

/* Random clouds, dense and sparse, one of them at the top of the coordinate range. */
static void test_random(void **state) {
  (void)state;
  const struct {
    uint32_t B, per[2], box, base[6];
  } cs[] = {
      {1, {1, 0}, 4, {0, 0, 0}},
      {2, {60, 90}, 6, {0, 0, 0, 0, 0, 0}},
      {2, {150, 150}, 12, {5, 0, 9, 262132, 262132, 262132}}, /* the second cloud touches 2^18 - 1 */
      {2, {200, 100}, 7, {0, 262137, 0, 3, 3, 3}},
  };
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c)
    for (uint32_t k = 3; k <= 5; k += 2) {
      tcloud t;
      assert_true(tcloud_make(&t, cs[c].B, cs[c].per, cs[c].box, cs[c].base, 100u + c));
      spc_map m;
      hx_err err = {HX_OK, ""};
      assert_int_equal(spc_map_cpu(&m, t.grid, t.batch, t.n, k, &err), HX_OK);
      check_map(&m, &t, k);
      spc_map_free_host(&m);
      tcloud_free(&t);
    }
}

/* The convolution against a dense 3D convolution: every cloud scattered into a zero grid (with a margin of r
 * zero voxels), convolved at every active voxel, compared in double. */
static void test_conv_dense(void **state) {
  (void)state;
  for (uint32_t k = 3; k <= 5; k += 2) {
    const uint32_t box = 5, per[2] = {70, 40}, base[6] = {0, 0, 0, 262143u - 4u, 7, 262143u - 4u};
    const size_t in = 3, out = 5, K = (size_t)k * k * k;
    const int r = (int)(k / 2u), side = (int)box + 2 * r;
    tcloud t;
    assert_true(tcloud_make(&t, 2, per, box, base, 40u + k));
    float *x = malloc(t.n * in * sizeof(float)), *w = malloc(out * K * in * sizeof(float));
    float *b = malloc(out * sizeof(float)), *y = malloc(t.n * out * sizeof(float));
    double *dense = calloc(2u * (size_t)side * (size_t)side * (size_t)side * in, sizeof(double));
    assert_true(x && w && b && y && dense);
    for (size_t i = 0; i < t.n * in; ++i) x[i] = (float)(2.0 * hx_rng_unit(1, 1, i) - 1.0);
    for (size_t i = 0; i < out * K * in; ++i) w[i] = (float)(2.0 * hx_rng_unit(1, 2, i) - 1.0);
    for (size_t i = 0; i < out; ++i) b[i] = (float)(2.0 * hx_rng_unit(1, 3, i) - 1.0);
#define CELL(cl, X, Y, Z) ((((size_t)(cl) * (size_t)side + (size_t)(X)) * (size_t)side + (size_t)(Y)) * (size_t)side + (size_t)(Z))
    for (uint32_t i = 0; i < t.n; ++i) {
      const uint32_t c = t.batch[i];
      const size_t cell = CELL(c, t.grid[3u * i] - base[3u * c] + (uint32_t)r, t.grid[3u * i + 1u] - base[3u * c + 1u] + (uint32_t)r,
                               t.grid[3u * i + 2u] - base[3u * c + 2u] + (uint32_t)r);
      for (size_t ch = 0; ch < in; ++ch) dense[cell * in + ch] = x[i * in + ch];
    }
    spc_map m;
    hx_err err = {HX_OK, ""};
    assert_int_equal(spc_map_cpu(&m, t.grid, t.batch, t.n, k, &err), HX_OK);
    assert_int_equal(spc_conv_cpu(y, x, w, b, &m, in, out, &err), HX_OK);
    double worst = 0;
    for (uint32_t i = 0; i < t.n; ++i) {
      const uint32_t c = t.batch[i];
      const int gx = (int)(t.grid[3u * i] - base[3u * c]) + r, gy = (int)(t.grid[3u * i + 1u] - base[3u * c + 1u]) + r,
                gz = (int)(t.grid[3u * i + 2u] - base[3u * c + 2u]) + r;
      for (size_t co = 0; co < out; ++co) {
        double ref = b[co], mag = fabs((double)b[co]);
        for (int dx = -r; dx <= r; ++dx)
          for (int dy = -r; dy <= r; ++dy)
            for (int dz = -r; dz <= r; ++dz) {
              const size_t o = (size_t)(((dx + r) * (int)k + (dy + r)) * (int)k + (dz + r));
              const size_t cell = CELL(c, gx + dx, gy + dy, gz + dz);
              for (size_t ch = 0; ch < in; ++ch) {
                ref += (double)w[(co * K + o) * in + ch] * dense[cell * in + ch];
                mag += fabs((double)w[(co * K + o) * in + ch] * dense[cell * in + ch]);
              }
            }
        const double e = fabs((double)y[i * out + co] - ref) / (mag + 1e-30);
        if (e > worst) worst = e;
      }
    }
#undef CELL
    printf("k=%u: conv vs dense 3D conv, worst |err| / sum|w x| = %.3g (tolerance 1e-5)\n", k, worst);
    assert_true(worst <= 1e-5);
    spc_map_free_host(&m);
    free(x), free(w), free(b), free(y), free(dense);
    tcloud_free(&t);
  }
}

static void test_refusals(void **state) {
  (void)state;
  spc_map m;
  hx_err err = {HX_OK, ""};
  const uint32_t grid[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 5, 6};
  const uint32_t batch[4] = {0, 0, 1, 0}, batch2[4] = {0, 1, 1, 0};
  /* rows 1 and 3 are one voxel of cloud 0 */
  assert_int_equal(spc_map_cpu(&m, grid, batch, 4, 3, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "rows 1 and 3"));
  assert_null(m.nbr);
  /* ... but not when they sit in different clouds */
  assert_int_equal(spc_map_cpu(&m, grid, batch2, 4, 3, &err), HX_OK);
  assert_int_equal(m.pairs, 4u);
  spc_map_free_host(&m);
  uint32_t big[6] = {0, 0, 0, 5, 262144, 5};
  assert_int_equal(spc_map_cpu(&m, big, NULL, 2, 3, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "row 1"));
  big[4] = 262143; /* the largest coordinate is fine */
  assert_int_equal(spc_map_cpu(&m, big, NULL, 2, 3, &err), HX_OK);
  spc_map_free_host(&m);
  const uint32_t bbig[2] = {1023, 1024};
  assert_int_equal(spc_map_cpu(&m, big, bbig, 2, 3, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "batch 1024"));
  assert_int_equal(spc_map_cpu(&m, big, bbig, 1, 3, &err), HX_OK); /* batch 1023 is fine */
  spc_map_free_host(&m);
  assert_int_equal(spc_map_cpu(&m, grid, NULL, 1, 4, &err), HX_EINVAL);
  assert_int_equal(spc_map_cpu(&m, grid, NULL, 1, 1, &err), HX_EINVAL);
  assert_int_equal(spc_map_cpu(NULL, grid, NULL, 1, 3, &err), HX_EINVAL);
  assert_int_equal(spc_map_cpu(&m, NULL, NULL, 1, 3, &err), HX_EINVAL);
  /* the empty cloud is a map of nothing; its convolution does nothing */
  assert_int_equal(spc_map_cpu(&m, NULL, NULL, 0, 3, &err), HX_OK);
  assert_int_equal(m.n, 0u);
  assert_int_equal(m.pairs, 0u);
  assert_int_equal(spc_conv_cpu(NULL, NULL, NULL, NULL, &m, 4, 4, &err), HX_OK);
  assert_int_equal(spc_conv_cpu(NULL, NULL, NULL, NULL, &m, 0, 4, &err), HX_EINVAL);
  assert_int_equal(spc_conv_cpu(NULL, NULL, NULL, NULL, NULL, 4, 4, &err), HX_EINVAL);
  spc_map_free_host(&m);
}

/* A slab two voxels thick (z in {0, 1}) over side x side cells, each kept with probability `fill`, rows in a
 * random order: a surface, whose rows have neighbours at few of the 27 offsets. */
static void make_slab(tcloud *t, uint32_t side, double fill, uint64_t seed) {
  t->n = 0;
  t->grid = malloc((size_t)side * side * 2u * 3u * sizeof(uint32_t));
  t->batch = NULL;
  assert_non_null(t->grid);
  for (uint32_t v = 0; v < side * side * 2u; ++v)
    if (hx_rng_unit(seed, 1, v) < fill) {
      t->grid[3 * t->n] = v / (2u * side), t->grid[3 * t->n + 1] = (v / 2u) % side, t->grid[3 * t->n + 2] = v % 2u;
      t->n++;
    }
  for (uint32_t i = t->n; i > 1; --i) { /* Fisher-Yates: row order */
    const uint32_t j = (uint32_t)(hx_rng_u64(seed, 2, i) % i);
    for (uint32_t a = 0; a < 3; ++a) {
      const uint32_t tmp = t->grid[3 * (i - 1) + a];
      t->grid[3 * (i - 1) + a] = t->grid[3 * j + a], t->grid[3 * j + a] = tmp;
    }
  }
}

/* v3's row order (spc_mask_order_cpu): a permutation, masks ascending, rows of one mask ascending (stable). On a
 * slab of 60% occupancy (a surface: a few of 27 neighbours a row, rows in random order) it needs at least a third
 * fewer (16-row group, offset) steps of v1's kernel (spc_group_steps_cpu); on a box 91% full, where most rows have
 * most neighbours, it gains little (within 20% down, 5% up on this seed). K > 32 is refused. */
static void test_mask_order(void **state) {
  (void)state;
  const struct {
    uint32_t per, box, k;
    double least, most; /* steps(order) / steps(as is) */
  } cs[] = {{0, 48, 3, 0.0, 0.67}, {2000, 13, 3, 0.8, 1.05}, {1, 4, 3, 1.0, 1.0}};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c) {
    tcloud t;
    const uint32_t base[3] = {0, 0, 0};
    if (cs[c].per == 0) make_slab(&t, cs[c].box, 0.6, 300u + c);
    else assert_true(tcloud_make(&t, 1, &cs[c].per, cs[c].box, base, 300u + c));
    spc_map m;
    hx_err e;
    assert_int_equal(spc_map_cpu(&m, t.grid, NULL, t.n, cs[c].k, &e), HX_OK);
    uint32_t *order = malloc(m.n * sizeof *order);
    unsigned char *seen = calloc(m.n, 1);
    assert_non_null(order);
    assert_non_null(seen);
    assert_int_equal(spc_mask_order_cpu(order, &m, &e), HX_OK);
    uint32_t prev_mask = 0;
    for (uint32_t i = 0; i < m.n; ++i) {
      assert_true(order[i] < m.n);
      assert_int_equal(seen[order[i]]++, 0);
      uint32_t mask = 0;
      for (uint32_t o = 0; o < m.K; ++o) mask |= (m.nbr[(size_t)order[i] * m.K + o] >= 0 ? 1u : 0u) << o;
      assert_true(mask & (1u << (m.K / 2))); /* the centre pairs every row with itself */
      if (i) {
        assert_true(mask >= prev_mask);
        if (mask == prev_mask) assert_true(order[i] > order[i - 1]);
      }
      prev_mask = mask;
    }
    const uint64_t plain = spc_group_steps_cpu(&m, NULL), sorted = spc_group_steps_cpu(&m, order);
    printf("%u rows, %llu pairs: %llu group steps as is, %llu in mask order\n", m.n, (unsigned long long)m.pairs,
           (unsigned long long)plain, (unsigned long long)sorted);
    assert_true(16u * plain >= m.pairs && 16u * sorted >= m.pairs); /* a step covers at most 16 pairs */
    assert_true((double)sorted <= cs[c].most * (double)plain && (double)sorted >= cs[c].least * (double)plain);
    free(order), free(seen);
    spc_map_free_host(&m);
    free(t.grid), free(t.batch);
  }
  spc_map m5 = {.n = 1, .k = 5, .K = 125};
  int32_t nbr[125];
  for (int o = 0; o < 125; ++o) nbr[o] = o == 62 ? 0 : -1;
  m5.nbr = nbr;
  uint32_t one;
  hx_err e;
  assert_int_equal(spc_mask_order_cpu(&one, &m5, &e), HX_EINVAL);
}

/* v6's tile order (spc_tile_order_cpu). A hand-made map of 7 rows, K = 4, tiles of 2 rows: tile steps 2, 1, 4 and 2
 * (the last tile is row 6 alone, whose entry 9 at offset 3 is outside [0, 7) and counts as none: counted, tile 3
 * would step 3 times and come second), so tiles 2, 0, 3, 1 (ties in increasing index); over the rows reversed the
 * steps are 2, 4, 2, 1: tiles 1, 0, 2, 3. On a slab cloud in mask
 * order with 128-row tiles: a permutation, steps non-increasing, ties in increasing index. NULL, tile_rows 0 and
 * K > 32 refused. */
static uint32_t tile_steps(const spc_map *m, const uint32_t *order, uint32_t T, uint32_t t) {
  uint32_t any = 0;
  for (uint32_t i = t * T; i < m->n && i < t * T + T; ++i)
    for (uint32_t o = 0; o < m->K; ++o) {
      const int32_t j = m->nbr[(size_t)(order ? order[i] : i) * m->K + o];
      any |= (j >= 0 && (uint32_t)j < m->n ? 1u : 0u) << o;
    }
  return (uint32_t)__builtin_popcount(any);
}

static void test_tile_order(void **state) {
  (void)state;
  int32_t nbr[28] = {
      0,  -1, -1, -1, /* row 0: mask 0001 */
      1,  0,  -1, -1, /* row 1: 0011 */
      2,  -1, -1, -1, /* row 2: 0001 */
      3,  -1, -1, -1, /* row 3: 0001 */
      4,  3,  5,  6,  /* row 4: 1111 */
      -1, -1, -1, -1, /* row 5: 0000 */
      -1, 6,  5,  9,  /* row 6: 0110 (9 is outside [0, 7)) */
  };
  spc_map h = {.n = 7, .k = 0, .K = 4, .nbr = nbr};
  const uint32_t rev[7] = {6, 5, 4, 3, 2, 1, 0}, want[4] = {2, 0, 3, 1}, want_rev[4] = {1, 0, 2, 3};
  uint32_t got[4];
  hx_err e;
  assert_int_equal(spc_tile_order_cpu(got, &h, NULL, 2, &e), HX_OK);
  for (int t = 0; t < 4; ++t) assert_int_equal(got[t], want[t]);
  assert_int_equal(spc_tile_order_cpu(got, &h, rev, 2, &e), HX_OK);
  for (int t = 0; t < 4; ++t) assert_int_equal(got[t], want_rev[t]);
  assert_int_equal(spc_tile_order_cpu(NULL, &h, NULL, 2, &e), HX_EINVAL);
  assert_int_equal(spc_tile_order_cpu(got, &h, NULL, 0, &e), HX_EINVAL);
  spc_map wide = h;
  wide.K = 33;
  assert_int_equal(spc_tile_order_cpu(got, &wide, NULL, 2, &e), HX_EINVAL);

  tcloud t;
  make_slab(&t, 48, 0.6, 331u);
  spc_map m;
  assert_int_equal(spc_map_cpu(&m, t.grid, NULL, t.n, 3, &e), HX_OK);
  const uint32_t T = 128, nt = (m.n + T - 1) / T;
  uint32_t *order = malloc(m.n * sizeof *order), *tiles = malloc(nt * sizeof *tiles);
  unsigned char *seen = calloc(nt, 1);
  assert_true(order && tiles && seen);
  assert_int_equal(spc_mask_order_cpu(order, &m, &e), HX_OK);
  assert_int_equal(spc_tile_order_cpu(tiles, &m, order, T, &e), HX_OK);
  uint32_t prev = 33, distinct = 0;
  for (uint32_t k = 0; k < nt; ++k) {
    assert_true(tiles[k] < nt);
    assert_int_equal(seen[tiles[k]]++, 0);
    const uint32_t s = tile_steps(&m, order, T, tiles[k]);
    assert_true(s <= prev);
    if (k && s == prev) assert_true(tiles[k] > tiles[k - 1]);
    distinct += s != prev;
    prev = s;
  }
  printf("%u rows, %u tiles of %u: %u distinct step counts, %u to %u\n", m.n, nt, T, distinct,
         tile_steps(&m, order, T, tiles[nt - 1]), tile_steps(&m, order, T, tiles[0]));
  assert_true(distinct >= 3); /* the order is not the identity by accident */
  free(order), free(tiles), free(seen);
  spc_map_free_host(&m);
  free(t.grid), free(t.batch);
}

/* spc_tile_halos_cpu on a hand-made map: distinct input rows per tile, in the map's order and in another, entries
 * outside [0, n) counted as none, a last partial tile; NULL arguments and tile 0 refused. */
static void test_tile_halos(void **state) {
  (void)state;
  int32_t nbr[10] = {0, 1, 1, -1, 2, 4, 7, 2, 4, 0}; /* 5 rows, K = 2; row 3's 7 is outside [0, 5) */
  const spc_map m = {.n = 5, .k = 0, .K = 2, .nbr = nbr};
  uint32_t halo[3] = {99, 99, 99};
  hx_err err = {HX_OK, ""};
  assert_int_equal(spc_tile_halos_cpu(halo, &m, NULL, 2, &err), HX_OK);
  assert_int_equal(halo[0], 2); /* rows 0, 1: {0, 1} */
  assert_int_equal(halo[1], 2); /* rows 2, 3: {2, 4} */
  assert_int_equal(halo[2], 2); /* row 4: {4, 0} */
  const uint32_t order[5] = {4, 3, 2, 1, 0};
  assert_int_equal(spc_tile_halos_cpu(halo, &m, order, 2, &err), HX_OK);
  assert_int_equal(halo[0], 3); /* rows 4, 3: {4, 0, 2} */
  assert_int_equal(halo[1], 3); /* rows 2, 1: {2, 4, 1} */
  assert_int_equal(halo[2], 2); /* row 0: {0, 1} */
  assert_int_equal(spc_tile_halos_cpu(halo, &m, NULL, 5, &err), HX_OK);
  assert_int_equal(halo[0], 4); /* one tile: {0, 1, 2, 4} */
  assert_int_equal(spc_tile_halos_cpu(halo, &m, NULL, 0, &err), HX_EINVAL);
  assert_int_equal(spc_tile_halos_cpu(NULL, &m, NULL, 2, &err), HX_EINVAL);
  assert_int_equal(spc_tile_halos_cpu(halo, NULL, NULL, 2, &err), HX_EINVAL);
}

/* The table lists v0 .. v6 in both builds (ids in order, names "v<id>"); the CPU-only build's entries
 * refuse with HX_ENODEV. spc_variant_best: v2 where in <= 8 (the stem's 4 -> 32, any out, any K); v7 at K = 27
 * and 32 -> 32 only (level 0's encoder; not 64 -> 32 or 32 -> 64); where both widths are multiples of 16 (every
 * other xCPE width of PTv3) v3 at K = 27 and v1 at K = 125 (v3 sorts 27-bit masks); v0 otherwise (odd widths,
 * multiples of 8 only, in = 9). */
/* spc_stem_cpu on two neighbours along x, by hand: row 0 at x = 10 sees row 1 at dx = +1 (offset 87), row 1 sees
 * row 0 at dx = -1 (offset 37); the bias before the scale, the shift after it, GELU last; a k = 3 map and a scale
 * without its shift refused. */
static void test_stem_cpu(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  const uint32_t grid[6] = {10, 10, 10, 11, 10, 10};
  spc_map m, m3;
  assert_int_equal(spc_map_cpu(&m, grid, NULL, 2, 5, &err), HX_OK);
  assert_int_equal(m.nbr[87], 1), assert_int_equal(m.nbr[125 + 37], 0);
  float w[2 * 125] = {0}; /* [out][o][in], in = 1 */
  w[62] = 0.5f, w[87] = 0.25f, w[37] = -1.0f;
  w[125 + 62] = 1.0f, w[125 + 37] = 2.0f;
  const float x[2] = {1.5f, -2.0f}, b[2] = {0.1f, -0.2f}, scale[2] = {2.0f, 1.0f}, shift[2] = {0.0f, 0.5f};
  /* z[row][co]: (b + conv) * scale + shift */
  const double z[4] = {(0.1 + 0.75 - 0.5) * 2.0, -0.2 + 1.5 + 0.5, (0.1 - 1.0 - 1.5) * 2.0, -0.2 - 2.0 + 3.0 + 0.5};
  float y[4];
  assert_int_equal(spc_stem_cpu(y, x, w, b, scale, shift, NL_ACT_NONE, &m, 1, 2, &err), HX_OK);
  for (int e = 0; e < 4; ++e) assert_true(fabs((double)y[e] - z[e]) <= 1e-6);
  assert_int_equal(spc_stem_cpu(y, x, w, b, scale, shift, NL_ACT_GELU, &m, 1, 2, &err), HX_OK);
  for (int e = 0; e < 4; ++e) assert_true(fabs((double)y[e] - 0.5 * z[e] * (1.0 + erf(z[e] / sqrt(2.0)))) <= 1e-6);
  assert_true(y[2] < 0.0f && y[2] > -1e-4f); /* GELU(-4.8): a small negative, not a ReLU's 0 */
  /* no affine: the convolution (and GELU) alone */
  assert_int_equal(spc_stem_cpu(y, x, w, b, NULL, NULL, NL_ACT_NONE, &m, 1, 2, &err), HX_OK);
  assert_true(fabs((double)y[0] - 0.35) <= 1e-6 && fabs((double)y[3] - 0.8) <= 1e-6);
  assert_int_equal(spc_stem_cpu(y, x, w, b, scale, NULL, NL_ACT_NONE, &m, 1, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "together"));
  assert_int_equal(spc_map_cpu(&m3, grid, NULL, 2, 3, &err), HX_OK);
  assert_int_equal(spc_stem_cpu(y, x, w, b, scale, shift, NL_ACT_NONE, &m3, 1, 2, &err), HX_EINVAL);
  spc_map_free_host(&m), spc_map_free_host(&m3);
}

/* A Linear folded into the convolution before it: conv(x; w2, b2) = Linear(conv(x; w, b)) on a random cloud (in 5,
 * out 6, out2 4, k = 3, biases present and absent), to fp32 rounding; the refusals; the folded weights' bits at a
 * shape of several row groups and column tiles. */
static void test_fold_linear(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  const uint32_t per[2] = {120, 80}, base[6] = {0, 0, 0, 3, 3, 3};
  tcloud t;
  assert_true(tcloud_make(&t, 2, per, 6, base, 41u));
  spc_map m;
  assert_int_equal(spc_map_cpu(&m, t.grid, t.batch, t.n, 3, &err), HX_OK);
  enum { IN = 5, OUT = 6, OUT2 = 4, K = 27 };
  float w[OUT * K * IN], b[OUT], lw[OUT2 * OUT], lb[OUT2], w2[OUT2 * K * IN], b2[OUT2];
  uint64_t r = 0x9E3779B97F4A7C15ull;
#define RND() ((float)((double)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 11) / 9007199254740992.0) - 0.5f)
  for (size_t i = 0; i < sizeof w / sizeof *w; ++i) w[i] = RND();
  for (size_t i = 0; i < OUT; ++i) b[i] = RND();
  for (size_t i = 0; i < sizeof lw / sizeof *lw; ++i) lw[i] = RND();
  for (size_t i = 0; i < OUT2; ++i) lb[i] = RND();
  float *x = malloc((size_t)t.n * IN * sizeof *x), *y = malloc((size_t)t.n * OUT * sizeof *y);
  float *z = malloc((size_t)t.n * OUT2 * sizeof *z), *f = malloc((size_t)t.n * OUT2 * sizeof *f);
  assert_true(x && y && z && f);
  for (size_t i = 0; i < (size_t)t.n * IN; ++i) x[i] = RND();
#undef RND
  for (int with_bias = 1; with_bias >= 0; --with_bias) {
    const float *bb = with_bias ? b : NULL, *lbb = with_bias ? lb : NULL;
    assert_int_equal(spc_fold_linear_cpu(w2, b2, w, bb, lw, lbb, IN, OUT, OUT2, K, &err), HX_OK);
    assert_int_equal(spc_conv_cpu(y, x, w, bb, &m, IN, OUT, &err), HX_OK);
    assert_int_equal(nl_linear_cpu(z, y, lw, lbb, t.n, OUT, OUT2, NL_ACT_NONE, 0, &err), HX_OK);
    assert_int_equal(spc_conv_cpu(f, x, w2, b2, &m, IN, OUT2, &err), HX_OK);
    double worst = 0.0;
    for (size_t i = 0; i < (size_t)t.n * OUT2; ++i) worst = fmax(worst, fabs((double)f[i] - (double)z[i]));
    assert_true(worst <= 1e-5);
    if (!with_bias) for (int c = 0; c < OUT2; ++c) assert_true(b2[c] == 0.0f);
  }
  assert_int_equal(spc_fold_linear_cpu(w2, b2, w, b, NULL, lb, IN, OUT, OUT2, K, &err), HX_EINVAL);
  assert_int_equal(spc_fold_linear_cpu(w2, b2, w, b, lw, lb, IN, OUT, OUT2, 9, &err), HX_EINVAL);
  free(x), free(y), free(z), free(f);
  /* Wider than one group of output rows and one column tile (19 rows: 8 + 8 + 3; 27 x 20 = 540 columns: 512 + 28),
   * poisoned: every weight the bits of its dot product taken alone, in double, co ascending from 0.0. */
  enum { IN3 = 20, OUT3 = 13, OUT23 = 19 };
  float *w3 = malloc(sizeof(float) * OUT3 * K * IN3), *l3 = malloc(sizeof(float) * OUT23 * OUT3);
  float *f3 = malloc(sizeof(float) * OUT23 * K * IN3), b3[OUT23];
  assert_true(w3 && l3 && f3);
  for (size_t i = 0; i < (size_t)OUT3 * K * IN3; ++i) w3[i] = (float)((int)(i * 7919u % 2001u) - 1000) / 997.0f;
  for (size_t i = 0; i < (size_t)OUT23 * OUT3; ++i) l3[i] = (float)((int)(i * 104729u % 1001u) - 500) / 331.0f;
  for (size_t i = 0; i < (size_t)OUT23 * K * IN3; ++i) f3[i] = NAN;
  assert_int_equal(spc_fold_linear_cpu(f3, b3, w3, NULL, l3, NULL, IN3, OUT3, OUT23, K, &err), HX_OK);
  size_t same = 0;
  for (size_t c2 = 0; c2 < OUT23; ++c2)
    for (size_t oi = 0; oi < (size_t)K * IN3; ++oi) {
      double s = 0.0;
      for (size_t co = 0; co < OUT3; ++co) s += (double)l3[c2 * OUT3 + co] * (double)w3[co * K * IN3 + oi];
      const float want = (float)s, got = f3[c2 * K * IN3 + oi];
      same += memcmp(&want, &got, sizeof got) == 0;
    }
  assert_int_equal(same, (size_t)OUT23 * K * IN3);
  free(w3), free(l3), free(f3);
  spc_map_free_host(&m);
  tcloud_free(&t);
}

static void test_variants(void **state) {
  (void)state;
  assert_true(spc_variant_count() >= 1);
  for (int i = 0; i < spc_variant_count(); ++i) {
    const spc_variant *v = spc_variant_get(i);
    assert_non_null(v);
    assert_int_equal(v->id, i);
    assert_non_null(v->fn);
  }
  assert_null(spc_variant_get(spc_variant_count()));
  assert_null(spc_variant_get(-1));
  for (int i = 0; i < spc_variant_count(); ++i)
    assert_ptr_equal(spc_variant_by_id(spc_variant_get(i)->id), spc_variant_get(i));
  assert_null(spc_variant_by_id(-1));
  assert_null(spc_variant_by_id(spc_variant_count()));
  assert_string_equal(spc_variant_get(0)->name, "v0");
  assert_true(spc_variant_count() >= 2);
  assert_string_equal(spc_variant_get(1)->name, "v1");
  assert_int_equal(spc_variant_get(0)->needs_rule, 1); /* v0 reads the rulebook and counts, v1 and v2 only nbr */
  assert_int_equal(spc_variant_get(1)->needs_rule, 0);
  assert_true(spc_variant_count() >= 3);
  assert_string_equal(spc_variant_get(2)->name, "v2");
  assert_int_equal(spc_variant_get(2)->needs_rule, 0);
  assert_true(spc_variant_count() >= 4);
  assert_string_equal(spc_variant_get(3)->name, "v3");
  assert_int_equal(spc_variant_get(3)->needs_rule, 0);
  assert_true(spc_variant_count() >= 5);
  assert_string_equal(spc_variant_get(4)->name, "v4");
  assert_int_equal(spc_variant_get(4)->needs_rule, 0);
  assert_true(spc_variant_count() >= 7);
  assert_string_equal(spc_variant_get(6)->name, "v6");
  assert_int_equal(spc_variant_get(6)->needs_rule, 0);
  assert_true(spc_variant_count() >= 8);
  assert_string_equal(spc_variant_get(7)->name, "v7");
  assert_int_equal(spc_variant_get(7)->needs_rule, 0);
  assert_true(spc_variant_count() >= 9);
  assert_string_equal(spc_variant_get(8)->name, "v8");
  assert_int_equal(spc_variant_get(8)->needs_rule, 0);
  for (int i = 0; i < spc_variant_count(); ++i) { /* only v3, v4, v6 and v8 read a map's row order */
    const int id = spc_variant_get(i)->id;
    assert_int_equal(spc_variant_get(i)->uses_order, id == 3 || id == 4 || id == 6 || id == 8);
  }
  const struct {
    size_t in, out;
    uint32_t K;
    int id;
  } best[] = {{32, 32, 27, 8},  {64, 64, 27, 3}, {128, 128, 27, 3}, {256, 256, 27, 3}, {512, 512, 27, 3},
              {16, 16, 27, 3},  {48, 80, 27, 3}, {64, 32, 27, 3},   {32, 32, 125, 1}, {64, 64, 125, 1},
              {48, 80, 8, 1},   {4, 32, 125, 2}, {4, 32, 27, 2},    {32, 4, 27, 0},   {8, 8, 27, 2},
              {24, 32, 27, 0},  {32, 24, 27, 0}, {24, 32, 125, 0},  {3, 5, 27, 2},    {1, 1, 125, 2},
              {32, 64, 27, 8},  {32, 32, 8, 1},   {64, 48, 27, 3},  {96, 96, 27, 3},
              {8, 512, 27, 2},  {9, 32, 27, 0},  {4, 0, 27, 0},     {0, 16, 27, 0},   {16, 0, 27, 0}};
  /* each variant's channel rule: spc_variant_best's choice takes its widths, and the rules' edges */
  for (size_t i = 0; i < sizeof best / sizeof best[0]; ++i)
    assert_true(!best[i].in || !best[i].out ||
                spc_variant_takes(spc_variant_best(best[i].in, best[i].out, best[i].K), best[i].in, best[i].out,
                                  best[i].K));
  const struct {
    int id;
    size_t in, out;
    uint32_t K;
    int takes;
  } rules[] = {{0, 24, 5, 27, 1},   {0, 0, 5, 27, 0},     {1, 16, 48, 125, 1},  {1, 24, 32, 27, 0},
               {2, 8, 512, 125, 1}, {2, 9, 32, 27, 0},    {3, 16, 16, 27, 1},   {3, 16, 16, 125, 0},
               {5, 48, 80, 27, 1},  {6, 32, 96, 27, 1},   {6, 48, 64, 27, 0},   {6, 64, 64, 125, 0},
               {7, 64, 96, 27, 1},  {7, 96, 96, 27, 0},   {8, 32, 64, 27, 1},   {8, 32, 48, 27, 0},
               {8, 16, 32, 27, 0},  {8, 32, 32, 125, 0},  {1, 16, 16, 8, 1}};
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; ++i)
    assert_int_equal(spc_variant_takes(spc_variant_by_id(rules[i].id), rules[i].in, rules[i].out, rules[i].K),
                     rules[i].takes);
  assert_false(spc_variant_takes(NULL, 32, 32, 27));
  for (size_t i = 0; i < sizeof best / sizeof best[0]; ++i) {
    const spc_variant *v = spc_variant_best(best[i].in, best[i].out, best[i].K);
    assert_non_null(v);
    if (v->id != best[i].id)
      printf("spc_variant_best(%zu, %zu, %u) = %s\n", best[i].in, best[i].out, (unsigned)best[i].K, v->name);
    assert_int_equal(v->id, best[i].id);
  }
  hx_err err = {HX_OK, ""};
  size_t bytes = 1;
  spc_map m;
  memset(&m, 0, sizeof m);
  spc_weights w = {.in = 32, .out = 32, .K = 27};
  m.K = 27, m.k = 3;
  const hx_status st = spc_variant_get(1)->fn(NULL, NULL, &w, &m, NULL, &bytes, NULL, NET_F16, NULL, &err);
  spc_weights w4 = {.in = 4, .out = 32, .K = 125};
  spc_map m5 = m;
  m5.K = 125, m5.k = 5;
  size_t bytes2 = 1;
  const hx_status st2 = spc_variant_get(2)->fn(NULL, NULL, &w4, &m5, NULL, &bytes2, NULL, NET_F16, NULL, &err);
#if F3D_HAVE_CUDA
  assert_int_equal(st, HX_OK); /* v1's and v2's size queries: no scratch */
  assert_int_equal(bytes, 0u);
  assert_int_equal(st2, HX_OK);
  assert_int_equal(bytes2, 0u);
  /* spc_variant_query: the same size query by widths (v1 and v7 ask no device) */
  assert_int_equal(spc_variant_query(spc_variant_by_id(1), 16, 48, 27), HX_OK);
  assert_int_equal(spc_variant_query(spc_variant_by_id(1), 24, 32, 27), HX_EUNSUPPORTED);
  assert_int_equal(spc_variant_query(spc_variant_by_id(7), 64, 96, 27), HX_OK);
  assert_int_equal(spc_variant_query(spc_variant_by_id(7), 128, 128, 27), HX_EUNSUPPORTED);
  assert_int_equal(spc_variant_query(spc_variant_by_id(2), 4, 32, 125), HX_OK);
#else
  assert_int_equal(st, HX_ENODEV);
  assert_int_equal(st2, HX_ENODEV);
  assert_int_equal(spc_variant_query(spc_variant_by_id(1), 16, 48, 27), HX_ENODEV);
#endif
  assert_int_equal(spc_variant_query(NULL, 16, 16, 27), HX_EINVAL);
  /* spc_launch_plan for a given shared-memory size (no device asked, so this runs on any CUDA build): sm_90's
   * 227 KB and sm_80's 163 KB per CTA; HX_ENODEV without CUDA */
  int tile = -1, stages = -1;
  const spc_weights w24 = {.in = 24, .out = 32, .K = 27};
#if F3D_HAVE_CUDA
  enum { SM90 = 232448, SM80 = 166912 };
  const struct {
    uint32_t n, K;
    size_t C;
    int deep, smem, tile, stages;
  } plans[] = {
      {20000, 27, 128, 0, SM90, 256, 3}, {20000, 27, 128, 1, SM90, 256, 4}, {20000, 27, 64, 1, SM90, 256, 4},
      {20000, 27, 32, 1, SM90, 256, 8},  {20000, 27, 32, 0, SM90, 256, 3},  {3000, 27, 32, 1, SM90, 128, 3},
      {20000, 125, 64, 1, SM90, 128, 3}, /* sm_80: the 3-stage 256-row tile at 128 channels (171 KB) does not
                                          * fit, 128-row tiles do; 64 channels fit at 3 stages, not deeper */
      {20000, 27, 128, 0, SM80, 128, 3}, {20000, 27, 256, 1, SM80, 128, 3}, {20000, 27, 64, 0, SM80, 256, 3},
      {20000, 27, 64, 1, SM80, 256, 3},  {20000, 27, 32, 1, SM80, 256, 3}};
  for (size_t i = 0; i < sizeof plans / sizeof plans[0]; ++i) {
    spc_map pm = m;
    pm.n = plans[i].n, pm.K = plans[i].K, pm.k = plans[i].K == 27u ? 3 : 5;
    const spc_weights pw = {.in = plans[i].C, .out = plans[i].C, .K = plans[i].K};
    assert_int_equal(spc_launch_plan(&tile, &stages, &pm, &pw, plans[i].deep, plans[i].smem, &err), HX_OK);
    if (tile != plans[i].tile || stages != plans[i].stages)
      printf("plan %zu: %u rows, K %u, C %zu, deep %d, %d B: tile %d stages %d\n", i, plans[i].n, plans[i].K,
             plans[i].C, plans[i].deep, plans[i].smem, tile, stages);
    assert_int_equal(tile, plans[i].tile);
    assert_int_equal(stages, plans[i].stages);
  }
  assert_int_equal(spc_launch_plan(&tile, &stages, &m, &w24, 1, SM90, &err), HX_EUNSUPPORTED);
  assert_int_equal(spc_launch_plan(NULL, &stages, &m, &w, 1, SM90, &err), HX_EINVAL);
  assert_int_equal(spc_launch_plan(&tile, &stages, NULL, &w, 1, SM90, &err), HX_EINVAL);
  /* v5's halo rows a page (per SM: sm_90 228 KB, sm_80 164 KB): slices of <= 64 channels run two CTAs an SM
   * where half an SM holds 512 rows (sm_90), else one CTA takes all (sm_80 at 64 channels); 128-channel slices
   * one CTA; v1's widths only */
  enum { SM90_SM = 233472, SM80_SM = 167936 };
  const struct {
    size_t in, out;
    int smem, smem_sm;
    uint32_t lo, hi;
  } halos[] = {{32, 32, SM90, SM90_SM, 512, 1600},   {64, 64, SM90, SM90_SM, 512, 700},
               {256, 256, SM90, SM90_SM, 1200, 1500}, {64, 64, SM80, SM80_SM, 900, 1100},
               {32, 32, SM80, SM80_SM, 512, 1100},   {48, 80, SM90, SM90_SM, 1500, 3456}};
  for (size_t i = 0; i < sizeof halos / sizeof halos[0]; ++i) {
    const spc_weights hw = {.in = halos[i].in, .out = halos[i].out, .K = 27};
    uint32_t rows = 0;
    assert_int_equal(spc_v5_halo_rows(&rows, &hw, halos[i].smem, halos[i].smem_sm, &err), HX_OK);
    printf("v5 halo %zu -> %zu, %d / %d B: %u rows a page\n", halos[i].in, halos[i].out, halos[i].smem,
           halos[i].smem_sm, rows);
    assert_in_range(rows, halos[i].lo, halos[i].hi);
  }
  uint32_t rows = 1;
  assert_int_equal(spc_v5_halo_rows(&rows, &w24, SM90, SM90_SM, &err), HX_EUNSUPPORTED);
  assert_int_equal(rows, 0u);
  assert_int_equal(spc_v5_halo_rows(NULL, &w24, SM90, SM90_SM, &err), HX_EINVAL);
#else
  assert_int_equal(spc_launch_plan(&tile, &stages, &m, &w24, 1, 0, &err), HX_ENODEV);
  assert_int_equal(stages, 0);
  assert_int_equal(tile, 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block),     cmocka_unit_test(test_offset_order), cmocka_unit_test(test_random),
      cmocka_unit_test(test_conv_dense), cmocka_unit_test(test_refusals),    cmocka_unit_test(test_variants),
      cmocka_unit_test(test_mask_order), cmocka_unit_test(test_tile_order), cmocka_unit_test(test_tile_halos),
      cmocka_unit_test(test_stem_cpu),  cmocka_unit_test(test_fold_linear),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
