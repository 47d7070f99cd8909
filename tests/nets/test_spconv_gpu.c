/*
 * test_spconv_gpu.c - the submanifold convolution on the GPU against the CPU references.
 *
 * Map: spc_map_gpu equals spc_map_cpu entry for entry (nbr poisoned first) on random clouds, 2 clouds of
 * sparse voxels in a 64^3 box with n = 1 .. 20000, a dense pair of 24^3 boxes, one cloud without a batch
 * array, one at the top of the coordinate range; k = 3 and 5. The rulebook holds each offset's pairs in
 * increasing output row, its count row and m->opairs equal the CPU counts; a run without count_pairs leaves
 * the counts alone and gives the same map, and so does a run without the rulebook and counts; counts without the
 * rulebook equal the CPU's; spc_map_pair_gpu gives the k = 5 and k = 3 maps, each the CPU's, counts left alone;
 * duplicates, coordinates >= 2^18 and batch >= 2^10 are HX_EINVAL naming the row(s), and without count_pairs
 * their maps hold only -1 and rows < n.
 *
 * Convolution: one problem per (cloud, shape, dtype) with its reference, every registered variant checked
 * against it (a variant that refuses the widths with HX_EUNSUPPORTED is logged and left out). Shapes: the stem
 * 4 -> 32 and 32 -> 32 at k = 5; at k = 3 every v1 specialisation (16 .. 512, in != out, several output slices
 * and input chunks) and widths v1 refuses (3 -> 5, 8 -> 24). Clouds: n = 1, 7, dense 1000, isolated points
 * (per-group offset skipping), a plane (offsets empty in whole tiles), 17000 and 20000 rows in voxel order
 * (v1's 256-row tiles), and the 20000 in a random order (v5's tiles name more input rows than one page holds:
 * asserted, so its pages run); cases whose double reference would cost more than 2e9 multiply-adds are logged and
 * left out (the wide shapes run on the smaller clouds). fp16 and bf16. Each variant runs twice with outputs
 * poisoned before each (0xFFFF, NaN in both dtypes): the runs must agree bit for bit, and every value must be
 * written, finite and within
 *     |y - ref| <= u * |ref| + 2^-13 * (|b| + sum |w x|)
 * where ref is the convolution in double of the dtype-rounded x and w (what the GPU reads) with the fp32
 * bias, and u is the dtype's unit roundoff (2^-11 fp16, 2^-8 bf16): u |ref| is the one rounding of the fp32
 * sum to the dtype; 2^-13 bounds the fp32 accumulation (a chain of at most K in / 16 + K ~ 900 fp32 additions
 * for in <= 512, each off by <= 2^-24 of the magnitude: <= 2^-14.2). Dropping one offset's contribution errs
 * by ~1/(K sqrt(in)) ~ 2^-8 of it. v1's boundary: widths, alignment, overlap, and the same output without the
 * rulebook, counts or context. v2 (in <= 8, the stem): the shapes above plus its own (in = 1, 3, 4, 6, 8; out
 * 5, 16, 32, 40, 48, 72), and on its edges: rows without any neighbour (their output is the bias exactly, 0
 * without one), map entries outside [0, n) read as -1, 100003 rows (several passes of its persistent grid, a
 * 3-row last tile), x and y off 4-byte alignment (16-bit gathers and stores: the same bits), in = 9 refused.
 * The stem in one pass (spc_stem_gpu) on 15 clouds and shapes against the convolution in double with the affine and
 * GELU, its k = 3 map and per-offset counts against the CPU's, two runs bit for bit; what it refuses. Exits 77 without a CUDA device.
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

#if F3D_HAVE_CUDA
#include <cuda_runtime.h>
#include "tests/nets/test_select.h"
#include "tests/nets/test_sm90a.h"

/* an attribute of the current device; the runtime failing to say fails the test */
static int dev_attr(enum cudaDeviceAttr a) {
  int dev = 0, v = 0;
  assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
  assert_int_equal(cudaDeviceGetAttribute(&v, a, dev), cudaSuccess);
  return v;
}

static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  assert_int_equal(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess);
  return p;
}

static void *dev_upload(const void *h, size_t bytes) {
  void *p = dev_alloc(bytes);
  if (bytes) assert_int_equal(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

/* A device map of t: grid and batch uploaded (batch omitted when no_batch), nbr and rulebook poisoned. */
typedef struct gmap {
  spc_map m;
  uint32_t *d_grid, *d_batch;
  int32_t *d_nbr, *d_rule;
  void *d_scratch;
  size_t scratch;
} gmap;

static hx_status gmap_build(gmap *g, const tcloud *t, uint32_t k, int no_batch, int count_pairs, hx_err *err) {
  memset(g, 0, sizeof *g);
  const size_t K = (size_t)k * k * k;
  g->d_grid = dev_upload(t->grid, (size_t)t->n * 3u * sizeof(uint32_t));
  g->d_batch = no_batch ? NULL : dev_upload(t->batch, (size_t)t->n * sizeof(uint32_t));
  g->d_nbr = dev_alloc((size_t)t->n * K * sizeof(int32_t));
  g->d_rule = dev_alloc(spc_rule_elems(t->n, k) * sizeof(int32_t));
  assert_int_equal(cudaMemset(g->d_nbr, 0x7F, (size_t)t->n * K * sizeof(int32_t)), cudaSuccess);
  assert_int_equal(cudaMemset(g->d_rule, 0x7F, spc_rule_elems(t->n, k) * sizeof(int32_t)), cudaSuccess);
  assert_int_equal(spc_map_gpu(&g->m, g->d_nbr, g->d_rule, NULL, &g->scratch, g->d_grid, g->d_batch, t->n, k,
                               count_pairs, NULL, err),
                   HX_OK);
  g->d_scratch = dev_alloc(g->scratch);
  hx_status s = spc_map_gpu(&g->m, g->d_nbr, g->d_rule, g->d_scratch, &g->scratch, g->d_grid, g->d_batch, t->n, k,
                            count_pairs, NULL, err);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  return s;
}

static void gmap_free(gmap *g) {
  cudaFree(g->d_grid), cudaFree(g->d_batch), cudaFree(g->d_nbr), cudaFree(g->d_rule), cudaFree(g->d_scratch);
  memset(g, 0, sizeof *g);
}

/* The device map and rulebook of g equal the CPU map c. */
static void check_gmap(const gmap *g, const spc_map *c) {
  const uint32_t n = c->n, K = c->K;
  assert_int_equal(g->m.n, n);
  assert_int_equal(g->m.K, K);
  int32_t *nbr = malloc((size_t)n * K * sizeof(int32_t)), *rule = malloc(spc_rule_elems(n, c->k) * sizeof(int32_t));
  assert_true(nbr && rule);
  assert_int_equal(cudaMemcpy(nbr, g->d_nbr, (size_t)n * K * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
  assert_int_equal(cudaMemcpy(rule, g->d_rule, spc_rule_elems(n, c->k) * sizeof(int32_t), cudaMemcpyDeviceToHost),
                   cudaSuccess);
  size_t bad = 0;
  for (size_t e = 0; e < (size_t)n * K; ++e) bad += nbr[e] != c->nbr[e];
  if (bad) printf("  %zu of %zu map entries differ from the CPU map\n", bad, (size_t)n * K);
  assert_int_equal(bad, 0);
  assert_int_equal(g->m.pairs, c->pairs);
  const int32_t *rin = rule, *rout = rule + (size_t)K * n, *rcnt = rule + 2u * (size_t)K * n;
  for (uint32_t o = 0; o < K; ++o) {
    assert_int_equal(g->m.opairs[o], c->opairs[o]);
    assert_int_equal((uint32_t)rcnt[o], c->opairs[o]);
    uint32_t p = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t j = c->nbr[(size_t)i * K + o];
      if (j < 0) continue;
      assert_int_equal(rin[(size_t)o * n + p], j);
      assert_int_equal(rout[(size_t)o * n + p], (int32_t)i);
      p++;
    }
    assert_int_equal(p, c->opairs[o]);
  }
  free(nbr), free(rule);
}

static void test_map(void **state) {
  (void)state;
  const uint32_t sizes[] = {1, 2, 37, 1000, 20000};
  for (int dense = 0; dense <= 2; ++dense)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
      const uint32_t n = sizes[s];
      if (dense && n < 1000) continue;
      /* sparse: 2 clouds in one 64^3 box; dense: 2 clouds in 24^3 boxes (n = 20000 fills ~72%); dense == 2:
       * the same as one cloud without a batch array, its corner at the top of the coordinate range */
      const uint32_t box = dense ? 24u : 64u, top = 262143u - 23u;
      const uint32_t per2[2] = {n / 2u, n - n / 2u}, per1[2] = {n < 13824u ? n : 13824u, 0};
      const uint32_t base2[6] = {0, 0, 0, 0, 0, 0}, base1[6] = {top, 100, top, 0, 0, 0};
      tcloud t;
      assert_true(dense == 2 ? tcloud_make(&t, 1, per1, box, base1, 9u + s) : tcloud_make(&t, 2, per2, box, base2, 9u + s));
      for (uint32_t k = 3; k <= 5; k += 2) {
        spc_map c;
        gmap g;
        hx_err err = {HX_OK, ""};
        assert_int_equal(spc_map_cpu(&c, t.grid, dense == 2 ? NULL : t.batch, t.n, k, &err), HX_OK);
        hx_status st = gmap_build(&g, &t, k, dense == 2, 1, &err);
        if (st != HX_OK) printf("%s\n", err.msg);
        assert_int_equal(st, HX_OK);
        check_gmap(&g, &c);
        printf("map n=%u k=%u %s: %llu pairs, equal to the CPU map\n", t.n, k,
               dense == 2 ? "one cloud at the top" : dense ? "dense" : "sparse", (unsigned long long)c.pairs);
        /* again without count_pairs: counts left as they were, the same map and rulebook */
        assert_int_equal(cudaMemset(g.d_nbr, 0x7F, (size_t)t.n * c.K * sizeof(int32_t)), cudaSuccess);
        assert_int_equal(cudaMemset(g.d_rule, 0x7F, spc_rule_elems(t.n, k) * sizeof(int32_t)), cudaSuccess);
        g.m.pairs = 12345;
        assert_int_equal(spc_map_gpu(&g.m, g.d_nbr, g.d_rule, g.d_scratch, &g.scratch, g.d_grid, g.d_batch, t.n, k, 0,
                                     NULL, &err),
                         HX_OK);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_int_equal(g.m.pairs, 12345u);
        g.m.pairs = c.pairs;
        check_gmap(&g, &c);
        /* again without the rulebook or counts (the map v1 reads: insert, place and lookup only): the same nbr */
        assert_int_equal(cudaMemset(g.d_nbr, 0x7F, (size_t)t.n * c.K * sizeof(int32_t)), cudaSuccess);
        spc_map m1 = g.m;
        assert_int_equal(spc_map_gpu(&m1, g.d_nbr, NULL, g.d_scratch, &g.scratch, g.d_grid, g.d_batch, t.n, k, 0,
                                     NULL, &err),
                         HX_OK);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_null(m1.rule);
        assert_int_equal(m1.pairs, c.pairs);
        int32_t *nbr1 = malloc((size_t)t.n * c.K * sizeof(int32_t));
        assert_non_null(nbr1);
        assert_int_equal(cudaMemcpy(nbr1, g.d_nbr, (size_t)t.n * c.K * sizeof(int32_t), cudaMemcpyDeviceToHost),
                         cudaSuccess);
        assert_memory_equal(nbr1, c.nbr, (size_t)t.n * c.K * sizeof(int32_t));
        /* counts without a rulebook (per-CTA counters, no flags or scan): the CPU's */
        spc_map m2 = g.m;
        m2.pairs = 0, memset(m2.opairs, 0, sizeof m2.opairs);
        assert_int_equal(spc_map_gpu(&m2, g.d_nbr, NULL, g.d_scratch, &g.scratch, g.d_grid,
                                     dense == 2 ? NULL : g.d_batch, t.n, k, 1, NULL, &err),
                         HX_OK);
        assert_int_equal(m2.pairs, c.pairs);
        assert_memory_equal(m2.opairs, c.opairs, c.K * sizeof(uint32_t));
        if (k == 5) { /* the pair: both maps from one pass, each the CPU's, counts left alone */
          spc_map c3, m5 = g.m, m3;
          memset(&m3, 0, sizeof m3);
          m5.pairs = 777, m3.pairs = 778;
          assert_int_equal(spc_map_cpu(&c3, t.grid, dense == 2 ? NULL : t.batch, t.n, 3, &err), HX_OK);
          int32_t *d3 = dev_alloc((size_t)t.n * 27u * sizeof(int32_t)), *nbr3 = malloc((size_t)t.n * 27u * 4u);
          assert_non_null(nbr3);
          assert_int_equal(cudaMemset(g.d_nbr, 0x7F, (size_t)t.n * c.K * sizeof(int32_t)), cudaSuccess);
          assert_int_equal(cudaMemset(d3, 0x7F, (size_t)t.n * 27u * sizeof(int32_t)), cudaSuccess);
          size_t sb = 0;
          assert_int_equal(spc_map_pair_gpu(&m5, NULL, &m3, NULL, NULL, &sb, NULL, NULL, t.n, NULL, &err), HX_OK);
          assert_true(sb <= g.scratch);
          assert_int_equal(spc_map_pair_gpu(&m5, g.d_nbr, &m3, d3, g.d_scratch, &sb, g.d_grid,
                                            dense == 2 ? NULL : g.d_batch, t.n, NULL, &err),
                           HX_OK);
          assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
          assert_int_equal(m5.pairs, 777u);
          assert_int_equal(m3.pairs, 778u);
          assert_int_equal(m3.K, 27u);
          assert_true(m3.nbr == d3 && m5.nbr == g.d_nbr && !m3.rule && !m5.rule);
          assert_int_equal(cudaMemcpy(nbr1, g.d_nbr, (size_t)t.n * c.K * sizeof(int32_t), cudaMemcpyDeviceToHost),
                           cudaSuccess);
          assert_memory_equal(nbr1, c.nbr, (size_t)t.n * c.K * sizeof(int32_t));
          assert_int_equal(cudaMemcpy(nbr3, d3, (size_t)t.n * 27u * sizeof(int32_t), cudaMemcpyDeviceToHost),
                           cudaSuccess);
          assert_memory_equal(nbr3, c3.nbr, (size_t)t.n * 27u * sizeof(int32_t));
          printf("map pair n=%u: k = 5 and k = 3 maps from one pass, each equal to the CPU map\n", t.n);
          cudaFree(d3), free(nbr3);
          spc_map_free_host(&c3);
        }
        free(nbr1);
        gmap_free(&g);
        spc_map_free_host(&c);
      }
      tcloud_free(&t);
    }
}

static void test_map_refusals(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  const struct {
    uint32_t grid[12], batch[4];
    const char *msg;
  } cs[] = {
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 5, 6}, {0, 0, 1, 0}, "rows 1 and 3"},
      {{1, 2, 3, 4, 5, 6, 7, 8, 262144, 4, 5, 7}, {0, 0, 1, 0}, "row 2"},
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 5, 7}, {0, 1024, 1, 0}, "row 1"},
  };
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c) {
    tcloud t = {4, malloc(12 * sizeof(uint32_t)), malloc(4 * sizeof(uint32_t))};
    memcpy(t.grid, cs[c].grid, sizeof cs[c].grid);
    memcpy(t.batch, cs[c].batch, sizeof cs[c].batch);
    gmap g;
    assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_EINVAL);
    printf("refused: %s\n", err.msg);
    assert_non_null(strstr(err.msg, cs[c].msg));
    gmap_free(&g);
    tcloud_free(&t);
  }
  /* without count_pairs an invalid input's map is unspecified, but in bounds: every entry -1 or a row < n (at
   * k = 5 rows in no block, the duplicate's loser and the row out of range, get -1 rows from the place pass) */
  for (size_t c = 0; c < 2; ++c)
    for (uint32_t k = 3; k <= 5; k += 2) {
      tcloud t = {4, malloc(12 * sizeof(uint32_t)), malloc(4 * sizeof(uint32_t))};
      memcpy(t.grid, cs[c].grid, sizeof cs[c].grid);
      memcpy(t.batch, cs[c].batch, sizeof cs[c].batch);
      gmap g;
      assert_int_equal(gmap_build(&g, &t, k, 0, 0, &err), HX_OK);
      const uint32_t K = k * k * k;
      int32_t nbr[4 * 125];
      assert_int_equal(cudaMemcpy(nbr, g.d_nbr, 4u * K * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
      for (uint32_t e = 0; e < 4u * K; ++e) assert_true(nbr[e] >= -1 && nbr[e] < 4);
      gmap_free(&g);
      tcloud_free(&t);
    }
  spc_map m;
  size_t bytes = 0;
  assert_int_equal(spc_map_pair_gpu(&m, NULL, NULL, NULL, NULL, &bytes, NULL, NULL, 10, NULL, &err), HX_EINVAL);
  assert_int_equal(spc_map_gpu(&m, NULL, NULL, NULL, &bytes, NULL, NULL, 10, 4, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(spc_map_gpu(&m, NULL, NULL, NULL, NULL, NULL, NULL, 10, 3, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(spc_map_gpu(&m, NULL, NULL, NULL, &bytes, NULL, NULL, 10, 3, 1, NULL, &err), HX_OK);
  assert_true(bytes > 0);
  assert_int_equal(spc_map_gpu(&m, NULL, NULL, (void *)1, &bytes, NULL, NULL, 10, 3, 1, NULL, &err), HX_EINVAL);
  bytes--;
  assert_int_equal(spc_map_gpu(&m, (int32_t *)1, NULL, (void *)1, &bytes, (uint32_t *)1, NULL, 10, 3, 1, NULL, &err),
                   HX_EINVAL); /* scratch one byte short */
  assert_int_equal(spc_map_gpu(&m, NULL, NULL, NULL, &bytes, NULL, NULL, 0, 3, 1, NULL, &err), HX_OK);
  assert_int_equal(m.n, 0u);
  assert_int_equal(m.pairs, 0u);
}

/* One cloud of n voxels on the plane z = 5 of a side x side square (distinct cells), rows in a random order:
 * no row has a neighbour at dz != 0, so 18 of the 27 offsets are empty in every tile. 0 on allocation failure. */
static int tcloud_plane(tcloud *t, uint32_t n, uint32_t side, uint64_t seed) {
  const uint32_t cells = side * side;
  t->n = n;
  t->grid = malloc(((size_t)n * 3u + 1u) * sizeof(uint32_t));
  t->batch = calloc((size_t)n + 1u, sizeof(uint32_t));
  uint32_t *cell = malloc((size_t)cells * sizeof(uint32_t));
  if (!t->grid || !t->batch || !cell || n > cells) {
    free(t->grid), free(t->batch), free(cell);
    t->grid = t->batch = NULL;
    return 0;
  }
  for (uint32_t v = 0; v < cells; ++v) cell[v] = v;
  for (uint32_t v = 0; v < n; ++v) { /* partial Fisher-Yates: n distinct cells in a random order */
    const uint32_t j = v + (uint32_t)(hx_rng_u64(seed, 1, v) % (cells - v)), tmp = cell[v];
    cell[v] = cell[j], cell[j] = tmp;
    t->grid[3u * v] = cell[v] / side, t->grid[3u * v + 1u] = cell[v] % side, t->grid[3u * v + 2u] = 5u;
  }
  free(cell);
  return 1;
}

typedef struct keyrow {
  uint64_t key;
  uint32_t row;
} keyrow;
static int keyrow_cmp(const void *pa, const void *pb) {
  const keyrow *a = pa, *b = pb;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* Rows in voxel-key order (batch, x, y, z): spatially coherent tiles, as PTv3's pooled levels are. */
static int tcloud_sort(tcloud *t) {
  keyrow *s = malloc(((size_t)t->n + 1u) * sizeof *s);
  uint32_t *grid = malloc(((size_t)t->n * 3u + 1u) * sizeof(uint32_t)), *batch = malloc(((size_t)t->n + 1u) * 4u);
  if (!s || !grid || !batch) {
    free(s), free(grid), free(batch);
    return 0;
  }
  for (uint32_t i = 0; i < t->n; ++i)
    s[i].key = spc_pack_key(t->batch[i], t->grid[3u * i], t->grid[3u * i + 1u], t->grid[3u * i + 2u]), s[i].row = i;
  qsort(s, t->n, sizeof *s, keyrow_cmp);
  for (uint32_t i = 0; i < t->n; ++i) {
    memcpy(grid + 3u * (size_t)i, t->grid + 3u * (size_t)s[i].row, 3u * sizeof(uint32_t));
    batch[i] = t->batch[s[i].row];
  }
  free(t->grid), free(t->batch), free(s);
  t->grid = grid, t->batch = batch;
  return 1;
}

/* One convolution problem: inputs rounded to the dtype (what the GPU reads), the reference in double with
 * the fp32 bias, and per output the magnitude |b| + sum |w x| that bounds the accumulation error. */
typedef struct conv_prob {
  uint32_t n, k, K;
  size_t in, out;
  net_dtype dt;
  float *x, *w, *b;
  uint16_t *xh;
  double *ref, *mag; /* [n, out] */
} conv_prob;

static void prob_make(conv_prob *p, const spc_map *c, net_dtype dt, size_t in, size_t out, uint64_t seed) {
  const uint32_t n = c->n, K = c->K;
  *p = (conv_prob){n, c->k, K, in, out, dt, NULL, NULL, NULL, NULL, NULL, NULL};
  p->x = malloc(((size_t)n * in + 1u) * sizeof(float));
  p->w = malloc((size_t)K * in * out * sizeof(float));
  p->b = malloc(out * sizeof(float));
  p->xh = malloc(((size_t)n * in + 1u) * 2u);
  p->ref = malloc(((size_t)n * out + 1u) * sizeof(double));
  p->mag = malloc(((size_t)n * out + 1u) * sizeof(double));
  assert_true(p->x && p->w && p->b && p->xh && p->ref && p->mag);
  const double ws = 1.0 / sqrt((double)(K * in)); /* PyTorch's default init range */
  for (size_t i = 0; i < (size_t)n * in; ++i) {
    p->xh[i] = net_from_float(dt, (float)(2.0 * hx_rng_unit(seed, 1, i) - 1.0));
    p->x[i] = net_to_float(dt, p->xh[i]);
  }
  for (size_t i = 0; i < (size_t)K * in * out; ++i)
    p->w[i] = net_to_float(dt, net_from_float(dt, (float)(ws * (2.0 * hx_rng_unit(seed, 2, i) - 1.0))));
  for (size_t i = 0; i < out; ++i) p->b[i] = (float)(ws * (2.0 * hx_rng_unit(seed, 3, i) - 1.0));
  for (uint32_t i = 0; i < n; ++i) {
    double *ref = p->ref + (size_t)i * out, *mag = p->mag + (size_t)i * out;
    for (size_t co = 0; co < out; ++co) ref[co] = p->b[co], mag[co] = fabs((double)p->b[co]);
    for (uint32_t o = 0; o < K; ++o) {
      const int32_t j = c->nbr[(size_t)i * K + o];
      if (j < 0) continue;
      const float *xj = p->x + (size_t)j * in;
      for (size_t co = 0; co < out; ++co) {
        const float *wr = p->w + ((size_t)co * K + o) * in;
        double sum = 0, sa = 0;
        for (size_t ci = 0; ci < in; ++ci) {
          const double q = (double)wr[ci] * (double)xj[ci];
          sum += q, sa += fabs(q);
        }
        ref[co] += sum, mag[co] += sa;
      }
    }
  }
}

static void prob_free(conv_prob *p) {
  free(p->x), free(p->w), free(p->b), free(p->xh), free(p->ref), free(p->mag);
  memset(p, 0, sizeof *p);
}

/* One run of variant v on p into host yh (outputs poisoned first). */
static void run_once(const spc_variant *v, spc_ctx *ctx, const conv_prob *p, const gmap *g, const spc_weights *sw,
                     uint16_t *yh) {
  const size_t ny = (size_t)p->n * p->out;
  hx_err err = {HX_OK, ""};
  size_t bytes = 0;
  assert_int_equal(v->fn(NULL, NULL, sw, &g->m, NULL, &bytes, ctx, p->dt, NULL, &err), HX_OK);
  void *d_x = dev_upload(p->xh, (size_t)p->n * p->in * 2u), *d_y = dev_alloc(ny * 2u), *d_s = dev_alloc(bytes);
  assert_int_equal(cudaMemset(d_y, 0xFF, ny * 2u), cudaSuccess);
  hx_status s = v->fn(d_y, d_x, sw, &g->m, d_s, &bytes, ctx, p->dt, NULL, &err);
  if (s != HX_OK) printf("%s\n", err.msg);
  assert_int_equal(s, HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cudaMemcpy(yh, d_y, ny * 2u, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_x), cudaFree(d_y), cudaFree(d_s);
}

/* Run variant v on p twice (outputs poisoned before each run), check both runs agree bit for bit and every value
 * is written, finite and within tolerance. 1: pass, 0: fail, -1: the variant does not take this shape. */
static int conv_run(const spc_variant *v, spc_ctx *ctx, const conv_prob *p, const gmap *g, const spc_weights *sw,
                    const char *cloud) {
  const size_t ny = (size_t)p->n * p->out;
  const double u = p->dt == NET_BF16 ? 0x1p-8 : 0x1p-11;
  hx_err err = {HX_OK, ""};
  size_t bytes = 0;
  hx_status s = v->fn(NULL, NULL, sw, &g->m, NULL, &bytes, ctx, p->dt, NULL, &err);
  if (s == HX_EUNSUPPORTED) {
    printf("  %s %zu->%zu skipped: %s\n", v->name, p->in, p->out, err.msg);
    return -1;
  }
  if (s != HX_OK) printf("%s\n", err.msg);
  assert_int_equal(s, HX_OK);
  uint16_t *yh[2] = {malloc(ny * 2u + 2u), malloc(ny * 2u + 2u)};
  assert_true(yh[0] && yh[1]);
  for (int rep = 0; rep < 2; ++rep) run_once(v, ctx, p, g, sw, yh[rep]);
  const int same = memcmp(yh[0], yh[1], ny * 2u) == 0;
  double worst = 0;
  size_t bad = 0;
  for (size_t e = 0; e < ny; ++e) {
    const double y = (double)net_to_float(p->dt, yh[0][e]), ref = p->ref[e];
    const double tol = u * fabs(ref) + 0x1p-13 * p->mag[e];
    const double d = fabs(y - ref);
    if (!isfinite(y) || d > tol) {
      if (bad < 5) printf("  row %zu col %zu: %g, expected %g (tolerance %.3g)\n", e / p->out, e % p->out, y, ref, tol);
      bad++;
    } else if (d / tol > worst) {
      worst = d / tol;
    }
  }
  printf("conv %s %s k=%u %zu->%zu %s n=%u pairs=%llu: %zu bad, worst |err|/tol %.3f%s\n", v->name,
         net_dtype_name(p->dt), p->k, p->in, p->out, cloud, p->n, (unsigned long long)g->m.pairs, bad, worst,
         same ? "" : ", RUNS DIFFER");
  free(yh[0]), free(yh[1]);
  return bad == 0 && same;
}

/* One problem (a cloud's map c, its GPU map g, dt, in -> out, seed) against every registered variant (with
 * fused_only, the variants without a rulebook: no cuBLAS in the process; with only, that variant alone),
 * counted into *runs and *fails, and per variant id into id_runs[MAX_IDS] when given (a variant that refused
 * every case would pass unseen). */
enum { MAX_IDS = 16 };
static void conv_case(spc_ctx *ctx, const spc_map *c, const gmap *g, net_dtype dt, size_t in, size_t out,
                      uint64_t seed, const char *cloud, int fused_only, const char *only, int *runs, int *fails,
                      int *id_runs) {
  hx_err err = {HX_OK, ""};
  conv_prob p;
  prob_make(&p, c, dt, in, out, seed);
  spc_weights sw;
  assert_int_equal(spc_weights_upload(&sw, p.w, p.b, p.in, p.out, c->K, p.dt, NULL, &err), HX_OK);
  for (int vi = 0; vi < spc_variant_count(); ++vi) {
    const spc_variant *v = spc_variant_get(vi);
    if (fused_only && v->needs_rule) continue; /* v0: cuBLAS */
    if (only && strcmp(v->name, only) != 0) continue;
    const int r = conv_run(v, ctx, &p, g, &sw, cloud);
    if (r < 0) continue;
    if (id_runs && v->id >= 0 && v->id < MAX_IDS) ++id_runs[v->id];
    ++*runs;
    *fails += !r;
  }
  spc_weights_free(&sw);
  prob_free(&p);
}

/* The most distinct input rows the map rows of one T-row tile name (rows in the map's order). */
static uint32_t max_tile_halo(const spc_map *c, uint32_t T) {
  const size_t tiles = ((size_t)c->n + T - 1) / T;
  uint32_t *halo = malloc((tiles ? tiles : 1) * sizeof *halo), most = 0;
  hx_err err = {HX_OK, ""};
  assert_non_null(halo);
  assert_int_equal(spc_tile_halos_cpu(halo, c, NULL, T, &err), HX_OK);
  for (size_t t = 0; t < tiles; ++t) most = halo[t] > most ? halo[t] : most;
  free(halo);
  return most;
}

static void test_conv(void **state) {
  (void)state;
  spc_ctx *ctx = NULL;
  hx_err err = {HX_OK, ""};
  assert_int_equal(spc_ctx_create(&ctx, &err), HX_OK);
  /* Every width v1 specialises: BN 16/32/64/128 (by out), BK 16/32/64 (by in), several output slices (80 = 5
   * x 16, 192 = 3 x 64, 256 = 2 x 128, 512 = 4 x 128), input chunks 3 x 16 (48) and 3 x 32 (96), k = 5 (K =
   * 125); the stem 4 -> 32 and widths v1 refuses (3 -> 5, 8 -> 24) run on v0 and v2. Then v2's own: the stem
   * again on fresh seeds, in = 8 (2 offsets a k16 step), in = 3, 1 and 6 (channels padded: 16-bit gathers),
   * out = 40 and 72 (a last 32-channel slice partly padded), 5 (odd: 16-bit stores), k = 3 and 5. Last, v6's
   * 32-channel input chunks at its 128- and 256-channel slices (32 -> 128, 96 -> 256). */
  const struct {
    uint32_t k;
    size_t in, out;
  } shapes[] = {{5, 4, 32},   {5, 32, 32},    {3, 16, 16},    {3, 32, 32},   {3, 64, 64}, {3, 64, 32},
                {3, 48, 80},  {3, 96, 192},   {3, 128, 128},  {3, 256, 256}, {3, 512, 512}, {3, 3, 5},
                {3, 8, 24},   {5, 4, 32},     {5, 8, 32},     {5, 3, 40},    {3, 4, 32},  {3, 1, 16},
                {5, 6, 72},   {3, 32, 128},   {3, 96, 256}};
  /* Clouds: one point; 7 points; 2 clouds at ~50% of a 10^3 box (~11 neighbours a row at k = 3); 2 clouds of
   * isolated points in a 64^3 box (most 16-row groups have no neighbour at most offsets: the per-group skip);
   * a plane (18 offsets empty in every tile: the per-tile skip); 2 clouds of 8500 at 13% of a 40^3 box and 2
   * of 10000 at 46% of a 28^3 box, rows in voxel order (>= 16384 rows: v1's 256-row tiles at k = 3); the
   * last again with rows in a random order (a 128-row tile names more input rows than v5 holds at 64 channels:
   * v5's pages, checked below). The first five have rows in a random order too. */
  enum { NCLOUD = 8 };
  const char *names[NCLOUD] = {"one", "seven", "dense-1000", "sparse-1000", "plane-1200", "sorted-17000",
                               "sorted-20000", "shuffled-20000"};
  tcloud cl[NCLOUD];
  const uint32_t zero6[6] = {0, 0, 0, 3, 0, 0}, one[1] = {1}, seven[1] = {7}, d1000[2] = {500, 500},
                 s17000[2] = {8500, 8500}, d20000[2] = {10000, 10000};
  assert_true(tcloud_make(&cl[0], 1, one, 4, zero6, 6));
  assert_true(tcloud_make(&cl[1], 1, seven, 3, zero6, 7));
  assert_true(tcloud_make(&cl[2], 2, d1000, 10, zero6, 8));
  assert_true(tcloud_make(&cl[3], 2, d1000, 64, zero6, 9));
  assert_true(tcloud_plane(&cl[4], 1200, 50, 10));
  assert_true(tcloud_make(&cl[5], 2, s17000, 40, zero6, 11) && tcloud_sort(&cl[5]));
  assert_true(tcloud_make(&cl[6], 2, d20000, 28, zero6, 12) && tcloud_sort(&cl[6]));
  assert_true(tcloud_make(&cl[7], 2, d20000, 28, zero6, 13));
  /* the double reference costs pairs * in * out multiply-adds: cases above this are left out (logged) */
  const double max_cost = 2e9;
  int fails = 0, runs = 0, id_runs[MAX_IDS] = {0};
  for (int ci = 0; ci < NCLOUD; ++ci)
    for (uint32_t k = 3; k <= 5; k += 2) {
      spc_map c;
      gmap g;
      assert_int_equal(spc_map_cpu(&c, cl[ci].grid, cl[ci].batch, cl[ci].n, k, &err), HX_OK);
      assert_int_equal(gmap_build(&g, &cl[ci], k, 0, 1, &err), HX_OK);
      if (ci == NCLOUD - 1 && k == 3) { /* v5 must page on this cloud at 64 channels, or its pages go untested */
        const spc_weights w64 = {.in = 64, .out = 64, .K = 27};
        uint32_t page = 0;
        assert_int_equal(spc_v5_halo_rows(&page, &w64, 0, 0, &err), HX_OK);
        const uint32_t most = max_tile_halo(&c, 128);
        printf("%s: up to %u input rows a 128-row tile, v5 holds %u a page at 64 channels\n", names[ci], most, page);
        assert_true(most > page);
      }
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        if (shapes[s].k != k) continue;
        const double cost = (double)c.pairs * (double)shapes[s].in * (double)shapes[s].out;
        if (cost > max_cost) {
          printf("  k=%u %zu->%zu %s left out: reference cost %.2g > %.2g\n", k, shapes[s].in, shapes[s].out,
                 names[ci], cost, max_cost);
          continue;
        }
        for (int d = 0; d < 2; ++d)
          conv_case(ctx, &c, &g, d ? NET_BF16 : NET_F16, shapes[s].in, shapes[s].out,
                    1000u * (uint64_t)ci + 10u * s + (uint64_t)d, names[ci], 0, NULL, &runs, &fails, id_runs);
      }
      gmap_free(&g);
      spc_map_free_host(&c);
    }
  printf("submanifold convolution GPU: %d of %d cases failed\n", fails, runs);
  assert_int_equal(fails, 0);
  /* every variant ran somewhere; v6 where its sm_90a image runs */
  const int sm90a = t_sm90a_runs();
  for (int vi = 0; vi < spc_variant_count(); ++vi) {
    const int id = spc_variant_get(vi)->id;
    printf("  %s ran %d cases\n", spc_variant_get(vi)->name, id < MAX_IDS ? id_runs[id] : -1);
    if (id != 6 || sm90a) assert_true(id < MAX_IDS && id_runs[id] > 0);
  }
  for (int ci = 0; ci < NCLOUD; ++ci) tcloud_free(&cl[ci]);
  spc_ctx_destroy(ctx);
}

/* The fused variants (only == NULL) or one of them (only) on three k = 3 clouds, for the sanitizers (no cuBLAS in
 * the process: v0 is left out): a dense random-order cloud, 20000 rows in voxel order and the same in a random order
 * (v5's pages at 32 and 64 channels); each width of widths[0..nw) in -> in, fp16 and bf16, each against the CPU as in
 * test_conv; cases with the reference cost over test_conv's bound are left out. Counts into *runs, *fails and
 * *cases (the (cloud, width, dtype) cases tried). */
static void conv_three_clouds(const char *only, const size_t *widths, int nw, uint64_t seed0, int *runs, int *fails,
                              int *cases) {
  hx_err err = {HX_OK, ""};
  const uint32_t zero6[6] = {0, 0, 0, 3, 0, 0}, d1000[2] = {500, 500}, d20000[2] = {10000, 10000};
  const char *names[3] = {"dense-1000", "sorted-20000", "shuffled-20000"};
  tcloud cl[3];
  assert_true(tcloud_make(&cl[0], 2, d1000, 10, zero6, 8));
  assert_true(tcloud_make(&cl[1], 2, d20000, 28, zero6, 12) && tcloud_sort(&cl[1]));
  assert_true(tcloud_make(&cl[2], 2, d20000, 28, zero6, 13));
  for (int ci = 0; ci < 3; ++ci) {
    spc_map c;
    gmap g;
    assert_int_equal(spc_map_cpu(&c, cl[ci].grid, cl[ci].batch, cl[ci].n, 3, &err), HX_OK);
    assert_int_equal(gmap_build(&g, &cl[ci], 3, 0, 1, &err), HX_OK);
    for (int wi = 0; wi < nw; ++wi) {
      if ((double)c.pairs * (double)widths[wi] * (double)widths[wi] > 2e9) continue; /* test_conv's cost bound */
      for (int d = 0; d < 2; ++d, ++*cases)
        conv_case(NULL, &c, &g, d ? NET_BF16 : NET_F16, widths[wi], widths[wi],
                  seed0 + 10u * (uint64_t)ci + (uint64_t)wi, names[ci], 1, only, runs, fails, NULL);
    }
    gmap_free(&g);
    spc_map_free_host(&c);
    tcloud_free(&cl[ci]);
  }
}

/* The fused variants (v1, v3-v8 where they take the width) at 32, 64 and 256 channels. Not in the default run
 * (test_conv covers the same cases); tests/sanitize/run.sh names it. */
static void test_conv_fused(void **state) {
  (void)state;
  const size_t widths[3] = {32, 64, 256};
  int fails = 0, runs = 0, cases = 0;
  conv_three_clouds(NULL, widths, 3, 7000u, &runs, &fails, &cases);
  printf("fused convolutions GPU: %d of %d cases failed\n", fails, runs);
  assert_true(runs >= 4 * 2 * 7); /* v1, v3, v4, v5 x 2 dtypes x the 7 (cloud, width) cases within the bound */
  assert_int_equal(fails, 0);
}

/* One k = 3 variant alone (racecheck over every variant does not finish in a device call): every case must run. */
static void conv_one(const char *name, const size_t *widths, int nw) {
  int fails = 0, runs = 0, cases = 0;
  conv_three_clouds(name, widths, nw, 7100u, &runs, &fails, &cases);
  printf("%s alone GPU: %d of %d cases failed (%d cases)\n", name, fails, runs, cases);
  assert_true(cases >= 4);
  assert_int_equal(runs, cases); /* it took every case: none refused */
  assert_int_equal(fails, 0);
}
/* v7 and v8 (32 and 64 channels) and v6 (64, 128, 256: one- and two-CTA tiles; sm_90a devices only) alone */
static void test_conv_v7(void **state) {
  (void)state;
  const size_t w[2] = {32, 64};
  conv_one("v7", w, 2);
}
static void test_conv_v8(void **state) {
  (void)state;
  const size_t w[2] = {32, 64};
  conv_one("v8", w, 2);
}
static void test_conv_v6(void **state) {
  (void)state;
  if (!t_sm90a_runs()) skip();
  const size_t w[3] = {64, 128, 256};
  conv_one("v6", w, 3);
}

/* v6 at 256-channel output slices (one CTA an SM) over more (tile, slice) units than the device has SMs, against
 * the CPU reference: 17,000 rows (133 tiles of 128, the last of 104 rows) at 64 -> 256 and 32 -> 512 (two slices,
 * 266 units), 40,000 sparse rows (313 tiles) at 32 -> 256. Sparse clouds keep the double reference within a few
 * seconds. */
static void test_conv_v6_units(void **state) {
  (void)state;
  if (!t_sm90a_runs()) skip();
  const int sms = dev_attr(cudaDevAttrMultiProcessorCount);
  hx_err err = {HX_OK, ""};
  const uint32_t zero6[6] = {0, 0, 0, 3, 0, 0}, s17000[2] = {8500, 8500}, s40000[2] = {20000, 20000};
  const struct {
    const char *name;
    const uint32_t *per;
    uint32_t box;
    size_t in[2], out[2];
  } cases[2] = {{"sorted-17000", s17000, 40, {64, 32}, {256, 512}}, {"sparse-40000", s40000, 72, {32, 0}, {256, 0}}};
  int fails = 0, runs = 0, want = 0;
  for (int ci = 0; ci < 2; ++ci) {
    tcloud t;
    assert_true(tcloud_make(&t, 2, cases[ci].per, cases[ci].box, zero6, 21u + (uint64_t)ci));
    if (ci == 0) assert_true(tcloud_sort(&t));
    spc_map c;
    gmap g;
    assert_int_equal(spc_map_cpu(&c, t.grid, t.batch, t.n, 3, &err), HX_OK);
    assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_OK);
    for (int s = 0; s < 2 && cases[ci].in[s]; ++s) {
      const size_t units = (t.n + 127u) / 128u * (cases[ci].out[s] / 256u);
      assert_true(units > (size_t)sms); /* more than one wave of CTAs */
      for (int d = 0; d < 2; ++d, ++want)
        conv_case(NULL, &c, &g, d ? NET_BF16 : NET_F16, cases[ci].in[s], cases[ci].out[s],
                  7300u + 10u * (uint64_t)ci + 2u * (uint64_t)s + (uint64_t)d, cases[ci].name, 1, "v6", &runs, &fails,
                  NULL);
    }
    gmap_free(&g);
    spc_map_free_host(&c);
    tcloud_free(&t);
  }
  printf("v6 at 256-channel slices GPU: %d of %d cases failed (%d cases)\n", fails, runs, want);
  assert_int_equal(runs, want);
  assert_int_equal(fails, 0);
}

/* v0's refusals: no rulebook, no counts, aliasing, mismatched weights; an empty map is nothing to do. */
static void test_conv_refusals(void **state) {
  (void)state;
  spc_ctx *ctx = NULL;
  hx_err err = {HX_OK, ""};
  assert_int_equal(spc_ctx_create(&ctx, &err), HX_OK);
  const uint32_t per[2] = {50, 0}, base[6] = {0};
  tcloud t;
  assert_true(tcloud_make(&t, 1, per, 4, base, 3));
  gmap g;
  assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_OK);
  float *w = calloc(27u * 8u * 8u, sizeof(float));
  spc_weights sw, sw5;
  assert_int_equal(spc_weights_upload(&sw, w, NULL, 8, 8, 27, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&sw5, w, NULL, 8, 8, 26, NET_F16, NULL, &err), HX_EINVAL);
  assert_null(sw5.d_w);
  assert_int_equal(spc_weights_upload(&sw5, w, NULL, 8, 0, 27, NET_F16, NULL, &err), HX_EINVAL);
  assert_int_equal(spc_weights_upload(&sw5, w, NULL, 1, 8, 125, NET_F16, NULL, &err), HX_OK);
  void *d_x = dev_alloc(50u * 8u * 2u), *d_y = dev_alloc(50u * 8u * 2u), *d_s = NULL;
  const spc_variant *v0 = spc_variant_get(0);
  size_t bytes = 0;
  assert_int_equal(v0->fn(d_y, d_x, &sw, &g.m, NULL, &bytes, ctx, NET_F16, NULL, &err), HX_OK);
  d_s = dev_alloc(bytes);
  spc_map m = g.m;
  assert_int_equal(v0->fn(d_y, d_x, &sw, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(v0->fn(d_x, d_x, &sw, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_EINVAL);
  assert_int_equal(v0->fn(d_y, d_x, &sw5, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_EINVAL);
  m.rule = NULL;
  assert_int_equal(v0->fn(d_y, d_x, &sw, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "rulebook"));
  m = g.m;
  memset(m.opairs, 0, sizeof m.opairs);
  assert_int_equal(v0->fn(d_y, d_x, &sw, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "count"));
  m = g.m;
  size_t short_bytes = bytes - 1;
  assert_int_equal(v0->fn(d_y, d_x, &sw, &m, d_s, &short_bytes, ctx, NET_F16, NULL, &err), HX_EINVAL);
  m.n = 0, m.opairs[13] = 0;
  assert_int_equal(v0->fn(d_y, d_x, &sw, &m, d_s, &bytes, ctx, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  spc_weights_free(&sw), spc_weights_free(&sw5);
  assert_null(sw.d_w);
  cudaFree(d_x), cudaFree(d_y), cudaFree(d_s);
  free(w);
  gmap_free(&g);
  tcloud_free(&t);
  spc_ctx_destroy(ctx);
}

/* v1's boundary: widths that are not multiples of 16 are HX_EUNSUPPORTED (query and run), misaligned or
 * overlapping buffers and mismatched weights HX_EINVAL; it needs no scratch, no rulebook and no counts, and
 * gives the same output without them. spc_variant_best's and spc_variant_main's choices. */
static void test_conv_v1_boundary(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  const spc_variant *v1 = spc_variant_by_id(1);
  assert_non_null(v1);
  assert_ptr_equal(spc_variant_best(32, 32, 125), v1);
  assert_int_equal(spc_variant_best(32, 32, 27)->id, 8);
  assert_int_equal(spc_variant_best(64, 64, 27)->id, 3);
  assert_int_equal(spc_variant_best(64, 48, 27)->id, 3);
  assert_int_equal(spc_variant_best(128, 128, 27)->id, 3);
  assert_int_equal(spc_variant_best(4, 32, 27)->id, 2);
  /* the main path: v6 where its sm_90a image runs, spc_variant_best gives v3 and the widths are multiples of 32 (v8
   * at 32 input channels on every device); spc_variant_best's choice elsewhere */
  const int sm90a = t_sm90a_runs();
  const struct {
    size_t in, out;
    uint32_t K;
    int sm90;
  } mains[] = {{32, 32, 27, 8}, {32, 64, 27, 8}, {64, 64, 27, 6}, {256, 512, 27, 6}, {96, 192, 27, 6}, {16, 16, 27, 3},
               {48, 80, 27, 3}, {64, 48, 27, 3}, {32, 32, 125, 1}, {4, 32, 125, 2}, {24, 32, 27, 0}};
  for (size_t i = 0; i < sizeof mains / sizeof mains[0]; ++i) {
    const spc_variant *v = spc_variant_main(mains[i].in, mains[i].out, mains[i].K);
    const int want = sm90a ? mains[i].sm90 : spc_variant_best(mains[i].in, mains[i].out, mains[i].K)->id;
    if (v->id != want) printf("spc_variant_main(%zu, %zu, %u) = %s, want v%d\n", mains[i].in, mains[i].out, mains[i].K,
                              v->name, want);
    assert_int_equal(v->id, want);
  }
  assert_int_equal(spc_variant_best(24, 32, 27)->id, 0);
  const uint32_t per[2] = {300, 0}, base[6] = {0};
  tcloud t;
  assert_true(tcloud_make(&t, 1, per, 8, base, 4));
  gmap g;
  assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_OK);
  const size_t C = 32, n = t.n;
  float *w = malloc(27u * C * C * sizeof(float)), *b = malloc(C * sizeof(float));
  uint16_t *xh = malloc(n * C * 2u), *y0 = malloc(n * C * 2u), *y1 = malloc(n * C * 2u);
  assert_true(w && b && xh && y0 && y1);
  for (size_t i = 0; i < 27u * C * C; ++i) w[i] = (float)(hx_rng_unit(5, 1, i) - 0.5) * 0.1f;
  for (size_t i = 0; i < C; ++i) b[i] = (float)(hx_rng_unit(5, 2, i) - 0.5);
  for (size_t i = 0; i < n * C; ++i) xh[i] = net_from_float(NET_F16, (float)(hx_rng_unit(5, 3, i) - 0.5));
  spc_weights sw, sw8, sw5;
  assert_int_equal(spc_weights_upload(&sw, w, b, C, C, 27, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&sw8, w, NULL, 8, 8, 27, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&sw5, w, NULL, 16, 16, 125, NET_F16, NULL, &err), HX_OK);
  /* x and y inside one buffer, so misaligned and overlapping placements are easy to make */
  unsigned char *d_buf = dev_alloc(4u * n * C * 2u + 64u), *d_x = d_buf, *d_y = d_buf + 2u * n * C * 2u;
  assert_int_equal(cudaMemcpy(d_x, xh, n * C * 2u, cudaMemcpyHostToDevice), cudaSuccess);
  void *d_s = dev_alloc(16);
  size_t bytes = 99;
  assert_int_equal(v1->fn(NULL, NULL, &sw, &g.m, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(bytes, 0u);
  bytes = 99;
  assert_int_equal(v1->fn(NULL, NULL, &sw8, &g.m, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "multiples of 16"));
  assert_int_equal(v1->fn(d_y, d_x, &sw8, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EUNSUPPORTED);
  assert_int_equal(v1->fn(d_y, d_x, &sw5, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  assert_int_equal(v1->fn(d_y, d_x, &sw, &g.m, d_s, &bytes, NULL, (net_dtype)7, NULL, &err), HX_EINVAL);
  assert_int_equal(v1->fn(d_y + 2, d_x, &sw, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "aligned"));
  assert_int_equal(v1->fn(d_x + n * C, d_x, &sw, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "overlaps"));
  assert_int_equal(v1->fn(d_x, d_x, &sw, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  spc_map m = g.m;
  m.nbr = NULL;
  assert_int_equal(v1->fn(d_y, d_x, &sw, &m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  /* with the rulebook and counts, then without (no context either): the same output, bit for bit */
  assert_int_equal(cudaMemset(d_y, 0xFF, n * C * 2u), cudaSuccess);
  assert_int_equal(v1->fn(d_y, d_x, &sw, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(cudaMemcpy(y0, d_y, n * C * 2u, cudaMemcpyDeviceToHost), cudaSuccess);
  m = g.m;
  m.rule = NULL, m.pairs = 0;
  memset(m.opairs, 0, sizeof m.opairs);
  assert_int_equal(cudaMemset(d_y, 0xFF, n * C * 2u), cudaSuccess);
  assert_int_equal(v1->fn(d_y, d_x, &sw, &m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(cudaMemcpy(y1, d_y, n * C * 2u, cudaMemcpyDeviceToHost), cudaSuccess);
  assert_memory_equal(y0, y1, n * C * 2u);
  size_t nan = 0;
  for (size_t i = 0; i < n * C; ++i) nan += isfinite(net_to_float(NET_F16, y0[i])) ? 0u : 1u;
  assert_int_equal(nan, 0);
  m.n = 0; /* an empty map: nothing to do */
  assert_int_equal(v1->fn(d_y, d_x, &sw, &m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  spc_weights_free(&sw), spc_weights_free(&sw8), spc_weights_free(&sw5);
  cudaFree(d_buf), cudaFree(d_s);
  free(w), free(b), free(xh), free(y0), free(y1);
  gmap_free(&g);
  tcloud_free(&t);
}

/* Upload the device map of g as `dev` holds it (every entry, n * K). */
static void gmap_set_nbr(gmap *g, const int32_t *dev) {
  assert_int_equal(cudaMemcpy(g->d_nbr, dev, (size_t)g->m.n * g->m.K * sizeof(int32_t), cudaMemcpyHostToDevice),
                   cudaSuccess);
}

/* One run of v on p with x and y placed xoff and yoff bytes into their buffers (0 or 2: 2 leaves them 2-byte
 * aligned only, so v2 takes its 16-bit gathers and stores); the output, poisoned first, into yh. */
static void run_at(const spc_variant *v, const conv_prob *p, const gmap *g, const spc_weights *sw, size_t xoff,
                   size_t yoff, uint16_t *yh) {
  const size_t nx = (size_t)p->n * p->in * 2u, ny = (size_t)p->n * p->out * 2u;
  unsigned char *d_x = dev_alloc(nx + 16u), *d_y = dev_alloc(ny + 16u);
  assert_int_equal(cudaMemcpy(d_x + xoff, p->xh, nx, cudaMemcpyHostToDevice), cudaSuccess);
  assert_int_equal(cudaMemset(d_y, 0xFF, ny + 16u), cudaSuccess);
  hx_err err = {HX_OK, ""};
  size_t bytes = 0;
  void *d_s = dev_alloc(16);
  assert_int_equal(v->fn(NULL, NULL, sw, &g->m, NULL, &bytes, NULL, p->dt, NULL, &err), HX_OK);
  assert_int_equal(bytes, 0u);
  const hx_status st = v->fn(d_y + yoff, d_x + xoff, sw, &g->m, d_s, &bytes, NULL, p->dt, NULL, &err);
  if (st != HX_OK) printf("%s\n", err.msg);
  assert_int_equal(st, HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cudaMemcpy(yh, d_y + yoff, ny, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_x), cudaFree(d_y), cudaFree(d_s);
}

/* v2 on its edges, fp16 and bf16, against the double reference (conv_run: poisoned outputs, two runs bit for
 * bit) and bit for bit across its code paths:
 *  - isolated points (a lattice of spacing 3: no neighbour within 2 voxels, so at k = 5 a row's only pair is
 *    its centre) where every 4th row has no neighbour at all: its map row is all -1 or holds entries outside
 *    [0, n) (n, n + 5, INT32_MAX, -7), which v2 reads as -1, while the reference's row is all -1: such a row is
 *    its bias exactly (the bias rounded once), and 0 without a bias;
 *  - 100003 rows in a 100^3 box (~10% full, rows in a random order): 6251 16-row tiles, more than one
 *    persistent pass of the grid on an H100 (132 SMs x 4 CTAs x 8 warps), the last tile 3 rows; every 5th row
 *    emptied as above and every other row given one out-of-range entry where it has no neighbour;
 *  - x and y moved 2 bytes off 4-byte alignment (16-bit gathers and stores): the same output bit for bit;
 *  - in = 9 is HX_EUNSUPPORTED, x and y overlapping HX_EINVAL; an empty map is nothing to do. */
static void test_conv_v2(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  const spc_variant *v2 = spc_variant_by_id(2);
  assert_non_null(v2);
  assert_int_equal(v2->needs_rule, 0);
  assert_ptr_equal(spc_variant_best(4, 32, 125), v2);
  assert_ptr_equal(spc_variant_best(8, 5, 27), v2);

  enum { NC = 2 };
  tcloud cl[NC];
  const char *names[NC] = {"lattice-1331", "random-100003"};
  const uint32_t L = 11; /* lattice side: 1331 points at (3a, 3b, 3c) */
  cl[0].n = L * L * L;
  cl[0].grid = malloc((size_t)cl[0].n * 3u * sizeof(uint32_t));
  cl[0].batch = calloc(cl[0].n, sizeof(uint32_t));
  assert_true(cl[0].grid && cl[0].batch);
  for (uint32_t i = 0; i < cl[0].n; ++i)
    cl[0].grid[3u * i] = 3u * (i / (L * L)), cl[0].grid[3u * i + 1u] = 3u * ((i / L) % L),
    cl[0].grid[3u * i + 2u] = 3u * (i % L);
  const uint32_t big[1] = {100003}, base[3] = {7, 0, 5};
  assert_true(tcloud_make(&cl[1], 1, big, 100, base, 43));
  const struct {
    uint32_t k;
    size_t in, out;
  } shapes[] = {{5, 4, 32}, {3, 4, 32}, {5, 8, 48}, {5, 3, 5}};
  int fails = 0;
  for (int ci = 0; ci < NC; ++ci) {
    const tcloud *t = &cl[ci];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
      const uint32_t k = shapes[s].k;
      if (ci == 1 && s == 3) continue; /* the big cloud: the stem shapes and in = 8 are enough */
      spc_map c;
      gmap g;
      assert_int_equal(spc_map_cpu(&c, t->grid, t->batch, t->n, k, &err), HX_OK);
      assert_int_equal(gmap_build(&g, t, k, 0, 1, &err), HX_OK);
      const uint32_t n = t->n, K = c.K;
      if (ci == 0 && k == 5) assert_int_equal(c.pairs, n); /* isolated: the centre pairs only */
      /* the planted map: rows i % (4 or 5) == 0 have no neighbour; other rows one out-of-range entry */
      int32_t *dev = malloc((size_t)n * K * sizeof(int32_t));
      assert_non_null(dev);
      const int32_t bad[4] = {-1, (int32_t)n, (int32_t)n + 5, INT32_MAX};
      const uint32_t every = ci == 0 ? 4u : 5u;
      size_t empty = 0;
      for (uint32_t i = 0; i < n; ++i) {
        int32_t *cr = c.nbr + (size_t)i * K, *dr = dev + (size_t)i * K;
        if (i % every == 0) {
          for (uint32_t o = 0; o < K; ++o) dr[o] = o % 5u == 4u ? -7 : bad[(i + o) % 4u], cr[o] = -1;
          empty++;
        } else {
          memcpy(dr, cr, K * sizeof(int32_t));
          for (uint32_t o = 0; o < K; ++o)
            if (cr[o] < 0) {
              dr[o] = bad[1u + (i + o) % 3u];
              break;
            }
        }
      }
      gmap_set_nbr(&g, dev);
      g.m.rule = NULL; /* the rulebook no longer matches the planted map: v2 must not need it */
      for (int d = 0; d < 2; ++d) {
        conv_prob p;
        prob_make(&p, &c, d ? NET_BF16 : NET_F16, shapes[s].in, shapes[s].out, 7000u + 100u * (uint64_t)ci + 10u * s + (uint64_t)d);
        spc_weights sw, swnb;
        assert_int_equal(spc_weights_upload(&sw, p.w, p.b, p.in, p.out, K, p.dt, NULL, &err), HX_OK);
        assert_int_equal(spc_weights_upload(&swnb, p.w, NULL, p.in, p.out, K, p.dt, NULL, &err), HX_OK);
        const int r = conv_run(v2, NULL, &p, &g, &sw, names[ci]);
        assert_true(r >= 0);
        fails += !r;
        const size_t ny = (size_t)n * p.out;
        uint16_t *y0 = malloc(ny * 2u + 2u), *y1 = malloc(ny * 2u + 2u), *y2 = malloc(ny * 2u + 2u);
        assert_true(y0 && y1 && y2);
        run_at(v2, &p, &g, &sw, 0, 0, y0);
        run_at(v2, &p, &g, &sw, 2, 2, y1);
        run_at(v2, &p, &g, &swnb, 0, 2, y2);
        size_t diff = 0, nob = 0, rows_b = 0;
        for (size_t e = 0; e < ny; ++e) diff += y0[e] != y1[e];
        for (uint32_t i = 0; i < n; i += every)
          for (size_t co = 0; co < p.out; ++co) {
            rows_b += y0[(size_t)i * p.out + co] != net_from_float(p.dt, p.b[co]);
            nob += y2[(size_t)i * p.out + co] != 0;
          }
        printf("v2 %s k=%u %zu->%zu %s: %zu empty rows (bias exactly: %s, 0 without bias: %s), misaligned x, y: "
               "%zu values differ\n", net_dtype_name(p.dt), k, p.in, p.out, names[ci], empty, rows_b ? "NO" : "yes",
               nob ? "NO" : "yes", diff);
        assert_int_equal(diff, 0);
        assert_int_equal(rows_b, 0);
        assert_int_equal(nob, 0);
        free(y0), free(y1), free(y2);
        spc_weights_free(&sw), spc_weights_free(&swnb);
        prob_free(&p);
      }
      free(dev);
      gmap_free(&g);
      spc_map_free_host(&c);
    }
  }
  assert_int_equal(fails, 0);

  /* the boundary: in = 9 refused, overlap refused, an empty map nothing to do */
  gmap g;
  assert_int_equal(gmap_build(&g, &cl[0], 5, 0, 1, &err), HX_OK);
  float *w = calloc(125u * 9u * 32u, sizeof(float));
  assert_non_null(w);
  spc_weights sw9, sw4;
  assert_int_equal(spc_weights_upload(&sw9, w, NULL, 9, 32, 125, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&sw4, w, NULL, 4, 32, 125, NET_F16, NULL, &err), HX_OK);
  size_t bytes = 7;
  assert_int_equal(v2->fn(NULL, NULL, &sw9, &g.m, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "at most 8"));
  const size_t n = cl[0].n;
  unsigned char *d_buf = dev_alloc(n * 160u + 64u); /* x: 8n bytes, y: 64n */
  void *d_s = dev_alloc(16);
  bytes = 16;
  assert_int_equal(v2->fn(d_buf + n * 4u, d_buf, &sw4, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "overlaps"));
  assert_int_equal(v2->fn(d_buf + 1, d_buf + n * 100u, &sw4, &g.m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "aligned"));
  assert_int_equal(v2->fn(d_buf + n * 8u, d_buf, &sw4, &g.m, d_s, &bytes, NULL, (net_dtype)7, NULL, &err), HX_EINVAL);
  spc_map m = g.m;
  m.nbr = NULL;
  assert_int_equal(v2->fn(d_buf + n * 8u, d_buf, &sw4, &m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_EINVAL);
  m = g.m;
  m.n = 0;
  assert_int_equal(v2->fn(NULL, NULL, &sw4, &m, d_s, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  spc_weights_free(&sw9), spc_weights_free(&sw4);
  cudaFree(d_buf), cudaFree(d_s);
  free(w);
  gmap_free(&g);
  for (int ci = 0; ci < NC; ++ci) tcloud_free(&cl[ci]);
}

/* The stem in one pass (spc_stem_gpu) against the double reference: prob_make's convolution, then the affine and GELU in double; spc_stem_cpu against the same. Error
 * model: the fp32 sum as conv_run's (2^-13 of the magnitude), scaled by |scale| and by GELU's slope (|GELU'| < 1.13),
 * a few fp32 roundings of the affine (2^-20 of its terms), and the one rounding to the dtype. */
static double gelu_d(double v) { return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440)); }

typedef struct stem_case {
  uint32_t B, per[2], box;
  int no_batch;
  size_t in, out;
  net_dtype dt;
  int act, affine, bias, misalign;
} stem_case;

/* One case: the failures (the GPU's and the CPU reference's). */
static int stem_run(const stem_case *sc, uint64_t seed) {
  hx_err err = {HX_OK, ""};
  const uint32_t base[6] = {3, 9, 1, 200, 4, 77};
  tcloud t;
  assert_true(tcloud_make(&t, sc->B, sc->per, sc->box, base, seed));
  const uint32_t *batch = sc->no_batch ? NULL : t.batch;
  spc_map c5, c3;
  assert_int_equal(spc_map_cpu(&c5, t.grid, batch, t.n, 5, &err), HX_OK);
  assert_int_equal(spc_map_cpu(&c3, t.grid, batch, t.n, 3, &err), HX_OK);
  conv_prob p;
  prob_make(&p, &c5, sc->dt, sc->in, sc->out, seed + 1u);
  const size_t out = sc->out, ny = (size_t)t.n * out;
  float *sc_h = malloc(2u * out * sizeof(float));
  assert_non_null(sc_h);
  for (size_t co = 0; co < out; ++co)
    sc_h[co] = (float)(0.5 + hx_rng_unit(seed, 4, co)), sc_h[out + co] = (float)(hx_rng_unit(seed, 5, co) - 0.5);
  const nl_act act = sc->act ? NL_ACT_GELU : NL_ACT_NONE;
  /* the reference of every output and its tolerance */
  double *want = malloc(ny * sizeof(double) + 8u), *tol = malloc(ny * sizeof(double) + 8u);
  assert_true(want && tol);
  const double u = sc->dt == NET_BF16 ? 0x1p-8 : 0x1p-11, slope = sc->act ? 1.13 : 1.0;
  for (size_t e = 0; e < ny; ++e) {
    const size_t co = e % out;
    const double s = sc->affine ? (double)sc_h[co] : 1.0, h = sc->affine ? (double)sc_h[out + co] : 0.0;
    const double r = sc->bias ? p.ref[e] : p.ref[e] - (double)p.b[co], z = s * r + h;
    want[e] = sc->act ? gelu_d(z) : z;
    tol[e] = u * fabs(want[e]) + slope * (s * 0x1p-13 * p.mag[e] + 0x1p-20 * (fabs(s * r) + fabs(h))) + 0x1p-24;
  }
  /* spc_stem_cpu on the same dtype-rounded inputs */
  float *ycpu = malloc(ny * sizeof(float) + 4u);
  assert_non_null(ycpu);
  assert_int_equal(spc_stem_cpu(ycpu, p.x, p.w, sc->bias ? p.b : NULL, sc->affine ? sc_h : NULL,
                                sc->affine ? sc_h + out : NULL, act, &c5, sc->in, out, &err),
                   HX_OK);
  size_t bad_cpu = 0;
  for (size_t e = 0; e < ny; ++e) bad_cpu += !(fabs((double)ycpu[e] - want[e]) <= tol[e]);

  spc_weights sw;
  assert_int_equal(spc_weights_upload(&sw, p.w, sc->bias ? p.b : NULL, sc->in, out, 125, sc->dt, NULL, &err), HX_OK);
  uint32_t *d_grid = dev_upload(t.grid, (size_t)t.n * 12u);
  uint32_t *d_batch = batch ? dev_upload(t.batch, (size_t)t.n * 4u) : NULL;
  float *d_sc = dev_upload(sc_h, 2u * out * sizeof(float));
  const size_t xoff = sc->misalign ? 2u : 0u;
  unsigned char *d_xb = dev_alloc((size_t)t.n * sc->in * 2u + 16u);
  assert_int_equal(cudaMemcpy(d_xb + xoff, p.xh, (size_t)t.n * sc->in * 2u, cudaMemcpyHostToDevice), cudaSuccess);
  uint16_t *d_y = dev_alloc(ny * 2u);
  int32_t *d_n3 = dev_alloc((size_t)t.n * 27u * 4u);
  uint16_t *yh[2] = {malloc(ny * 2u + 2u), malloc(ny * 2u + 2u)};
  int32_t *n3 = malloc((size_t)t.n * 27u * 4u);
  assert_true(yh[0] && yh[1] && n3);
  int fails = bad_cpu != 0;
  {
    size_t bytes = 0;
    spc_map m5, m3;
    memset(&m5, 0, sizeof m5), memset(&m3, 0, sizeof m3);
    assert_int_equal(spc_stem_gpu(NULL, NULL, &sw, NULL, NULL, act, &m5, &m3, NULL, NULL, &bytes, NULL, NULL, t.n, 1,
                                  sc->dt, NULL, &err),
                     HX_OK);
    void *d_s = dev_alloc(bytes);
    size_t map_bad = 0;
    for (int rep = 0; rep < 2; ++rep) { /* poisoned outputs; counts on the first run, kept on the second */
      assert_int_equal(cudaMemset(d_y, 0xFF, ny * 2u), cudaSuccess);
      assert_int_equal(cudaMemset(d_n3, 0x7F, (size_t)t.n * 27u * 4u), cudaSuccess);
      if (rep) m5.pairs = 12345u, m5.opairs[0] = 77u;
      const hx_status st =
          spc_stem_gpu(d_y, d_xb + xoff, &sw, sc->affine ? d_sc : NULL, sc->affine ? d_sc + out : NULL, act, &m5, &m3,
                      d_n3, d_s, &bytes, d_grid, d_batch, t.n, !rep, sc->dt, NULL, &err);
      if (st != HX_OK) printf("%s\n", err.msg);
      assert_int_equal(st, HX_OK);
      assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
      assert_int_equal(cudaMemcpy(yh[rep], d_y, ny * 2u, cudaMemcpyDeviceToHost), cudaSuccess);
      assert_int_equal(cudaMemcpy(n3, d_n3, (size_t)t.n * 27u * 4u, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t e = 0; e < (size_t)t.n * 27u; ++e) map_bad += n3[e] != c3.nbr[e];
      assert_int_equal(m5.n, t.n), assert_int_equal(m5.K, 125), assert_null(m5.nbr);
      assert_int_equal(m3.n, t.n), assert_int_equal(m3.K, 27), assert_ptr_equal(m3.nbr, d_n3);
      if (!rep) {
        assert_int_equal(m5.pairs, c5.pairs);
        for (uint32_t o = 0; o < 125u; ++o) assert_int_equal(m5.opairs[o], c5.opairs[o]);
      } else {
        assert_int_equal(m5.pairs, 12345u), assert_int_equal(m5.opairs[0], 77u);
      }
    }
    cudaFree(d_s);
    const int same = memcmp(yh[0], yh[1], ny * 2u) == 0;
    size_t bad = 0;
    double worst = 0;
    for (size_t e = 0; e < ny; ++e) {
      const double y = (double)net_to_float(sc->dt, yh[0][e]), d = fabs(y - want[e]);
      if (!isfinite(y) || d > tol[e]) {
        if (bad < 5)
          printf("  row %zu col %zu: %g, expected %g (tolerance %.3g)\n", e / out, e % out, y, want[e], tol[e]);
        bad++;
      } else if (d / tol[e] > worst) {
        worst = d / tol[e];
      }
    }
    printf("stem %s %zu->%zu n=%u pairs=%llu%s%s%s%s%s: %zu bad, worst |err|/tol %.3f, k = 3 map %s, cpu %zu bad%s\n",
           net_dtype_name(sc->dt), sc->in, out, t.n, (unsigned long long)c5.pairs,
           sc->act ? " gelu" : "", sc->affine ? " affine" : "", sc->bias ? " bias" : "",
           sc->no_batch ? " no-batch" : "", sc->misalign ? " x off 2 bytes" : "", bad, worst,
           map_bad ? "DIFFERS" : "equal", bad_cpu, same ? "" : ", RUNS DIFFER");
    fails += !(bad == 0 && same && map_bad == 0);
  }
  spc_weights_free(&sw);
  cudaFree(d_grid), cudaFree(d_batch), cudaFree(d_sc), cudaFree(d_xb), cudaFree(d_y), cudaFree(d_n3);
  free(yh[0]), free(yh[1]), free(n3), free(sc_h), free(want), free(tol), free(ycpu);
  prob_free(&p);
  spc_map_free_host(&c5), spc_map_free_host(&c3);
  tcloud_free(&t);
  return fails;
}

static void test_stem(void **state) {
  (void)state;
  /* clouds: one point; two small clouds; dense (1000 of 10^3: ~100 neighbours a row at k = 5); sparse lidar-like
   * density (20000 of 64^3 in two clouds: ~10); 40000 rows in one cloud (several rows a warp per pass of the
   * persistent grid); widths: PTv3's 4 -> 32, in < 4 and > 4 (8- and 16-byte rows, and element loads), out < 32,
   * 32 < out <= 64 (two channels a lane), x off its row alignment */
  const stem_case cases[] = {
      {1, {1, 0}, 4, 0, 4, 32, NET_F16, 1, 1, 0, 0},       {2, {7, 5}, 4, 0, 4, 32, NET_BF16, 1, 1, 1, 0},
      {2, {600, 400}, 10, 0, 4, 32, NET_F16, 1, 1, 0, 0},  {2, {600, 400}, 10, 0, 4, 32, NET_BF16, 1, 1, 1, 0},
      {2, {12000, 8000}, 64, 0, 4, 32, NET_F16, 1, 1, 0, 0}, {2, {12000, 8000}, 64, 1, 4, 32, NET_F16, 1, 1, 1, 0},
      {1, {40000, 0}, 64, 0, 4, 32, NET_F16, 1, 1, 0, 0},  {2, {3000, 2000}, 40, 0, 3, 32, NET_F16, 1, 1, 1, 0},
      {2, {3000, 2000}, 40, 0, 8, 32, NET_BF16, 1, 1, 1, 0}, {2, {3000, 2000}, 40, 0, 6, 20, NET_F16, 0, 1, 1, 0},
      {2, {3000, 2000}, 40, 0, 1, 16, NET_F16, 1, 0, 0, 0}, {2, {3000, 2000}, 40, 0, 4, 64, NET_F16, 1, 1, 1, 0},
      {2, {3000, 2000}, 40, 0, 2, 40, NET_BF16, 0, 0, 1, 0}, {2, {3000, 2000}, 40, 0, 4, 32, NET_F16, 1, 1, 1, 1},
      {2, {3000, 2000}, 40, 0, 8, 24, NET_F16, 1, 1, 0, 1},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) fails += stem_run(&cases[i], 9100u + 17u * i);
  assert_int_equal(fails, 0);
}

/* What spc_stem_gpu refuses, and an input its count finds invalid. */
static void test_stem_refusals(void **state) {
  (void)state;
  hx_err err = {HX_OK, ""};
  float *w = calloc(125u * 9u * 65u, sizeof(float));
  assert_non_null(w);
  spc_weights s9, s465, s833, s432, k3, s440;
  assert_int_equal(spc_weights_upload(&s9, w, NULL, 9, 32, 125, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&s465, w, NULL, 4, 65, 125, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&s833, w, NULL, 8, 33, 125, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&s432, w, NULL, 4, 32, 125, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&k3, w, NULL, 4, 32, 27, NET_F16, NULL, &err), HX_OK);
  assert_int_equal(spc_weights_upload(&s440, w, NULL, 4, 40, 125, NET_F16, NULL, &err), HX_OK);
  assert_true(spc_stem_takes(4, 64) && spc_stem_takes(8, 32) && !spc_stem_takes(4, 65) && !spc_stem_takes(5, 33) &&
              !spc_stem_takes(0, 32) && !spc_stem_takes(9, 1));
  spc_map m5;
  size_t bytes = 0;
  /* 4 -> 40: taken (out <= 64 at in <= 4) */
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s440, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                100, 0, NET_F16, NULL, &err),
                   HX_OK);
  const spc_weights *unsup[3] = {&s9, &s465, &s833};
  for (int i = 0; i < 3; ++i) {
    assert_int_equal(spc_stem_gpu(NULL, NULL, unsup[i], NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL,
                                  NULL, 100, 0, NET_F16, NULL, &err),
                     HX_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "channels"));
  }
  assert_int_equal(spc_stem_gpu(NULL, NULL, &k3, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                100, 0, NET_F16, NULL, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "125"));
  float *d_f = dev_alloc(64 * sizeof(float));
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, d_f, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                100, 0, NET_F16, NULL, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "together"));
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, NULL, NULL, (nl_act)5, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                100, 0, NET_F16, NULL, &err),
                   HX_EINVAL);
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, NULL, NULL, NL_ACT_GELU, NULL, NULL, NULL, NULL, &bytes, NULL, NULL,
                                100, 0, NET_F16, NULL, &err),
                   HX_EINVAL);
  /* an empty cloud: no scratch, nothing to do, counts zero */
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                0, 1, NET_F16, NULL, &err),
                   HX_OK);
  assert_int_equal(bytes, 0);
  m5.pairs = 9;
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, d_f, &bytes, NULL, NULL, 0,
                                1, NET_F16, NULL, &err),
                   HX_OK);
  assert_int_equal(m5.pairs, 0), assert_int_equal(m5.n, 0);
  /* two rows on one voxel, counted: HX_EINVAL naming both; a short scratch: HX_EINVAL */
  const uint32_t grid[9] = {5, 5, 5, 6, 5, 5, 5, 5, 5};
  uint32_t *d_grid = dev_upload(grid, sizeof grid);
  assert_int_equal(spc_stem_gpu(NULL, NULL, &s432, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, NULL, &bytes, NULL, NULL,
                                3, 1, NET_F16, NULL, &err),
                   HX_OK);
  void *d_s = dev_alloc(bytes), *d_x = dev_alloc(3 * 8), *d_y = dev_alloc(3 * 64);
  size_t small = bytes - 1;
  assert_int_equal(spc_stem_gpu(d_y, d_x, &s432, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, d_s, &small, d_grid, NULL,
                                3, 1, NET_F16, NULL, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "scratch"));
  assert_int_equal(spc_stem_gpu(d_y, d_x, &s432, NULL, NULL, NL_ACT_GELU, &m5, NULL, NULL, d_s, &bytes, d_grid, NULL,
                                3, 1, NET_F16, NULL, &err),
                   HX_EINVAL);
  assert_non_null(strstr(err.msg, "rows 0 and 2"));
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  spc_weights_free(&s9), spc_weights_free(&s465), spc_weights_free(&s833), spc_weights_free(&s432),
      spc_weights_free(&k3), spc_weights_free(&s440);
  cudaFree(d_f), cudaFree(d_grid), cudaFree(d_s), cudaFree(d_x), cudaFree(d_y);
  free(w);
}

/* Steps of tile t (tile_rows T) over the rows in `order`: its active offsets, as spc_tile_order_cpu counts them. */
static uint32_t host_tile_steps(const spc_map *m, const uint32_t *order, uint32_t T, uint32_t t) {
  uint32_t any = 0;
  for (uint32_t i = t * T; i < m->n && i < t * T + T; ++i)
    for (uint32_t o = 0; o < m->K; ++o) {
      const int32_t j = m->nbr[(size_t)order[i] * m->K + o];
      any |= (j >= 0 && (uint32_t)j < m->n ? 1u : 0u) << o;
    }
  return (uint32_t)__builtin_popcount(any);
}

/* One tile order on the GPU against the CPU's: map c (g its GPU copy) in its CPU mask order `want`, tiles of T rows
 * into d_tiles (ceil(n / T) words) and the mask order into d_order, both poisoned first, with bytes of scratch d_s.
 * Asserts both equal the CPU's; returns the tiles that moved from launch order, and in *hi and *lo the first and the
 * last tile's steps. */
static size_t tile_order_check(const spc_map *c, const gmap *g, const uint32_t *want, uint32_t T, uint32_t *d_order,
                               uint32_t *d_tiles, void *d_s, size_t bytes, uint32_t *hi, uint32_t *lo) {
  hx_err err = {HX_OK, ""};
  const uint32_t n = c->n, nt = (n + T - 1u) / T;
  uint32_t *tw = malloc(nt * sizeof *tw), *tg = malloc(nt * sizeof *tg), *got = malloc(n * sizeof *got);
  assert_true(tw && tg && got);
  assert_int_equal(spc_tile_order_cpu(tw, c, want, T, &err), HX_OK);
  assert_int_equal(cudaMemset(d_tiles, 0xFF, nt * sizeof(uint32_t)), cudaSuccess);
  assert_int_equal(cudaMemset(d_order, 0xFF, n * sizeof(uint32_t)), cudaSuccess);
  assert_int_equal(spc_mask_tiles_gpu(d_order, d_tiles, T, &g->m, d_s, &bytes, NULL, &err), HX_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cudaMemcpy(tg, d_tiles, nt * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
  assert_int_equal(cudaMemcpy(got, d_order, n * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
  size_t tdiff = 0, odiff = 0, moved = 0;
  for (uint32_t k = 0; k < nt; ++k) tdiff += tg[k] != tw[k], moved += tw[k] != k;
  for (uint32_t i = 0; i < n; ++i) odiff += got[i] != want[i];
  *hi = host_tile_steps(c, want, T, tw[0]), *lo = host_tile_steps(c, want, T, tw[nt - 1u]);
  printf("tile order: %u rows, %u tiles of %u rows (steps %u down to %u), %zu moved from launch order, %zu differ from "
         "the CPU's, order %zu\n", n, nt, T, *hi, *lo, moved, tdiff, odiff);
  assert_int_equal(tdiff, 0);
  assert_int_equal(odiff, 0);
  free(tw), free(tg), free(got);
  return moved;
}

/* v3's row order on the GPU (spc_mask_order_gpu) equals the CPU's (spc_mask_order_cpu) exactly, on clouds of 3000,
 * 20000 and 40000 rows (v1's 128- and 256-row tiles) in random row order, two clouds
 * interleaved; a scratch one byte
 * short and a map of K > 32 are refused; v3's and v4's outputs equal v1's bit for bit on both clouds (each output
 * sums the same products over increasing offsets; only exact zeros are added or left out; v4's deeper pipeline
 * changes when rows arrive, not the sums), and v3 and v4 refuse k = 5 maps with HX_EUNSUPPORTED (v1 takes them).
 * v8's equal v7's bit for bit, sorting in the call and on the map's order (the same sums; v8 leaves out only the
 * offsets where none of a 16-row tile's rows has a neighbour, exact zeros).
 * v6's tile orders (spc_mask_tiles_gpu) equal the CPU's (spc_tile_order_cpu) at 128- and 256-row tiles, and v6 on
 * sm_90a gives the same bits with either tile order in the map, and sorting and ordering its tiles in the call, as
 * last-first. */
static void test_mask_order_v3(void **state) {
  (void)state;
  const spc_variant *v1 = spc_variant_by_id(1), *v3 = spc_variant_by_id(3), *v4 = spc_variant_by_id(4);
  assert_true(v1 && v3 && v4);
  const uint32_t sizes[3][2] = {{1800, 1200}, {12000, 8000}, {24000, 16000}}, boxes[3] = {16, 32, 40};
  for (int ci = 0; ci < 3; ++ci) {
    tcloud t;
    const uint32_t base[6] = {0, 0, 0, 5, 3, 1};
    assert_true(tcloud_make(&t, 2, sizes[ci], boxes[ci], base, 900u + (uint64_t)ci));
    hx_err err = {HX_OK, ""};
    spc_map c;
    assert_int_equal(spc_map_cpu(&c, t.grid, t.batch, t.n, 3, &err), HX_OK);
    gmap g;
    assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_OK);
    uint32_t *want = malloc(t.n * sizeof *want), *got = malloc(t.n * sizeof *got);
    assert_true(want && got);
    assert_int_equal(spc_mask_order_cpu(want, &c, &err), HX_OK);
    size_t bytes = 0;
    assert_int_equal(spc_mask_order_gpu(NULL, &g.m, NULL, &bytes, NULL, &err), HX_OK);
    uint32_t *d_order = dev_alloc(t.n * sizeof(uint32_t));
    void *d_s = dev_alloc(bytes);
    assert_int_equal(cudaMemset(d_order, 0xFF, t.n * sizeof(uint32_t)), cudaSuccess);
    size_t short_by_one = bytes - 1;
    assert_int_equal(spc_mask_order_gpu(d_order, &g.m, d_s, &short_by_one, NULL, &err), HX_EINVAL);
    assert_int_equal(spc_mask_order_gpu(d_order, &g.m, d_s, &bytes, NULL, &err), HX_OK);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(got, d_order, t.n * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    size_t differ = 0;
    for (uint32_t i = 0; i < t.n; ++i) differ += got[i] != want[i];
    printf("mask order: %u rows, %zu positions differ from the CPU's; group steps %llu as is, %llu in this order\n",
           t.n, differ, (unsigned long long)spc_group_steps_cpu(&c, NULL), (unsigned long long)spc_group_steps_cpu(&c, want));
    assert_int_equal(differ, 0);
    spc_map wide = g.m;
    wide.K = 125, wide.k = 5;
    assert_int_equal(spc_mask_order_gpu(NULL, &wide, NULL, &bytes, NULL, &err), HX_EINVAL);
    /* v6's tile orders (spc_mask_tiles_gpu, the same scratch as the order alone) equal the CPU's, tiles of 128 and
     * 256 rows; tiles poisoned; the order written with them equals the order alone */
    uint32_t *d_tiles[2] = {NULL, NULL};
    for (int ti = 0; ti < 2; ++ti) {
      const uint32_t T = ti ? 256u : 128u, nt = (t.n + T - 1u) / T;
      size_t tbytes = 0;
      assert_int_equal(spc_mask_tiles_gpu(NULL, NULL, T, &g.m, NULL, &tbytes, NULL, &err), HX_OK);
      assert_int_equal(tbytes, bytes); /* the contract: the tile order needs no scratch beyond the mask order's */
      d_tiles[ti] = dev_alloc(nt * sizeof(uint32_t));
      assert_int_equal(spc_mask_tiles_gpu(d_order, d_tiles[ti], 0, &g.m, d_s, &bytes, NULL, &err), HX_EINVAL);
      uint32_t hi = 0, lo = 0;
      assert_true(tile_order_check(&c, &g, want, T, d_order, d_tiles[ti], d_s, bytes, &hi, &lo) > 0);
    }
    free(want), free(got);
    /* v3 and v4 against v1, bit for bit (tiles of 128 rows, then 256), each sorting in its call and reading the
     * map's order (m.order, as the forward gives it); at 256-row tiles also 32 -> 32, v4's deepest pipeline.
     * The launch as spc_launch_plan reports it for this device: 128-row tiles on the small cloud, 256 on the
     * large one; v4's depth 3 at 128-row tiles and, at 256-row tiles on a device with sm_90's 227 KB of shared
     * memory per CTA, 4 (64 -> 64) and 8 (32 -> 32); 3 on a device with less. */
    const int optin = dev_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    const size_t widths[2] = {64, 32};
    for (int wi = 0; wi < (ci == 1 ? 2 : 1); ++wi) {
      const size_t C = widths[wi];
      conv_prob p;
      prob_make(&p, &c, NET_F16, C, C, 77u + (unsigned)wi);
      spc_weights sw;
      assert_int_equal(spc_weights_upload(&sw, p.w, p.b, p.in, p.out, c.K, p.dt, NULL, &err), HX_OK);
      int st1 = 0, st4 = 0, tile1 = 0, tile4 = 0;
      assert_int_equal(spc_launch_plan(&tile1, &st1, &g.m, &sw, 0, 0, &err), HX_OK);
      assert_int_equal(spc_launch_plan(&tile4, &st4, &g.m, &sw, 1, 0, &err), HX_OK);
      const int want4 = ci == 0 || optin < 227 * 1024 ? 3 : C == 64 ? 4 : 8;
      printf("launch plan, %u rows, %zu -> %zu: v1/v3 %d rows x %d stages, v4 %d x %d (want %d stages; shared "
             "memory per CTA %d B)\n", p.n, C, C, tile1, st1, tile4, st4, want4, optin);
      assert_int_equal(tile1, ci == 0 ? 128 : 256);
      assert_int_equal(tile4, tile1);
      assert_int_equal(st1, 3);
      assert_int_equal(st4, want4);
      const size_t ny = (size_t)p.n * p.out;
      uint16_t *y1 = malloc(ny * 2u + 2u), *y3 = malloc(ny * 2u + 2u);
      assert_true(y1 && y3);
      run_once(v1, NULL, &p, &g, &sw, y1);
      for (int with_order = 0; with_order < 4; ++with_order) {
        const spc_variant *v = with_order < 2 ? v3 : v4;
        g.m.order = with_order % 2 ? d_order : NULL;
        run_once(v, NULL, &p, &g, &sw, y3);
        size_t diff = 0;
        for (size_t e = 0; e < ny; ++e) diff += y1[e] != y3[e];
        printf("%s (%s) against v1, %u rows, %zu -> %zu: %zu of %zu outputs differ\n", v->name,
               with_order % 2 ? "the map's order" : "sorting in the call", p.n, C, C, diff, ny);
        assert_int_equal(diff, 0);
      }
      g.m.order = NULL;
      const spc_variant *v7 = spc_variant_by_id(7), *v8 = spc_variant_by_id(8);
      assert_true(v7 && v8);
      run_once(v7, NULL, &p, &g, &sw, y1);
      for (int with_order = 0; with_order < 2; ++with_order) {
        g.m.order = with_order ? d_order : NULL;
        run_once(v8, NULL, &p, &g, &sw, y3);
        size_t diff = 0;
        for (size_t e = 0; e < ny; ++e) diff += y1[e] != y3[e];
        printf("v8 (%s) against v7, %u rows, %zu -> %zu: %zu of %zu outputs differ\n",
               with_order ? "the map's order" : "sorting in the call", p.n, C, C, diff, ny);
        assert_int_equal(diff, 0);
      }
      g.m.order = NULL;
      /* v6 on the map's order with its tile order (128-row tiles at 64 and 256 channels, 256 at 128), and with the
       * other tile order (taken last-first): the same bits as v6 last-first, which the other tests check against
       * the CPU reference (each tile's sums do not depend on when it runs) */
      const spc_variant *v6 = spc_variant_by_id(6);
      if (wi == 0 && v6 && spc_variant_main(64, 64, 27)->id == 6) { /* v6 runs here (sm_90a) */
        for (int wc = 0; wc < 3; ++wc) {
          const size_t C6 = wc == 2 ? 256u : wc ? 128u : 64u;
          conv_prob q;
          prob_make(&q, &c, NET_F16, C6, C6, 91u + (unsigned)wc);
          spc_weights s6;
          assert_int_equal(spc_weights_upload(&s6, q.w, q.b, q.in, q.out, c.K, q.dt, NULL, &err), HX_OK);
          const size_t n6 = (size_t)q.n * q.out;
          uint16_t *ya = malloc(n6 * 2u + 2u), *yb = malloc(n6 * 2u + 2u);
          assert_true(ya && yb);
          g.m.order = d_order;
          run_once(v6, NULL, &q, &g, &s6, ya);
          assert_int_equal(spc_v6_tile_rows(C6), C6 == 128u ? 256u : 128u);
          for (int ti = 0; ti < 2; ++ti) {
            g.m.tiles = d_tiles[ti], g.m.tile_rows = ti ? 256u : 128u;
            run_once(v6, NULL, &q, &g, &s6, yb);
            size_t diff = 0;
            for (size_t e = 0; e < n6; ++e) diff += ya[e] != yb[e];
            printf("v6 %zu -> %zu, %u rows, tile order of %u rows (%s): %zu of %zu outputs differ from last-first\n",
                   C6, C6, q.n, g.m.tile_rows, g.m.tile_rows == spc_v6_tile_rows(C6) ? "taken" : "not v6's, ignored",
                   diff, n6);
            assert_int_equal(diff, 0);
          }
          /* the kernel reads the order: with every entry naming tile 0, only tile 0's rows (the first 128 of the
           * mask order) are written, as in the run above, and every other output keeps its poison */
          if (C6 != 128u) {
            const uint32_t nt0 = (q.n + 127u) / 128u, rows0 = q.n < 128u ? q.n : 128u;
            uint32_t *d_zero = dev_alloc(nt0 * sizeof(uint32_t)), *h_order = malloc(q.n * sizeof *h_order);
            assert_non_null(h_order);
            assert_int_equal(cudaMemset(d_zero, 0, nt0 * sizeof(uint32_t)), cudaSuccess);
            assert_int_equal(cudaMemcpy(h_order, d_order, q.n * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
            g.m.tiles = d_zero, g.m.tile_rows = 128u;
            run_once(v6, NULL, &q, &g, &s6, yb);
            size_t written = 0, wrong = 0;
            for (size_t e = 0; e < n6; ++e) written += yb[e] != 0xFFFFu;
            for (uint32_t r = 0; r < rows0; ++r)
              for (size_t o = 0; o < q.out; ++o) wrong += yb[(size_t)h_order[r] * q.out + o] != ya[(size_t)h_order[r] * q.out + o];
            printf("v6 %zu -> %zu, %u rows, every tile named 0: %zu of %zu outputs written (want %zu), %zu differ\n", C6,
                   C6, q.n, written, n6, (size_t)rows0 * q.out, wrong);
            assert_int_equal(written, (size_t)rows0 * q.out);
            assert_int_equal(wrong, 0);
            cudaFree(d_zero), free(h_order);
          }
          /* sorting in the call (no order with the map): its own tile order, the same bits */
          g.m.order = NULL, g.m.tiles = NULL, g.m.tile_rows = 0;
          run_once(v6, NULL, &q, &g, &s6, yb);
          size_t diff = 0;
          for (size_t e = 0; e < n6; ++e) diff += ya[e] != yb[e];
          printf("v6 %zu -> %zu, %u rows, sorting and ordering its tiles in the call: %zu of %zu outputs differ\n", C6,
                 C6, q.n, diff, n6);
          assert_int_equal(diff, 0);
          free(ya), free(yb);
          spc_weights_free(&s6);
          prob_free(&q);
        }
      }
      if (wi == 0) {
        /* v3's scratch one byte short of what its query asked (the order it sorts in the call): refused */
        size_t need = 0;
        assert_int_equal(v3->fn(NULL, NULL, &sw, &g.m, NULL, &need, NULL, NET_F16, NULL, &err), HX_OK);
        assert_true(need > 0);
        void *d_s3 = dev_alloc(need);
        need -= 1;
        assert_int_equal(v3->fn(d_s3, d_s3, &sw, &g.m, d_s3, &need, NULL, NET_F16, NULL, &err), HX_EINVAL);
        assert_non_null(strstr(err.msg, "scratch")); /* refused for its scratch, before y and x are looked at */
        cudaFree(d_s3);
      }
      free(y1), free(y3);
      spc_weights_free(&sw);
      prob_free(&p);
    }
    cudaFree(d_order), cudaFree(d_s), cudaFree(d_tiles[0]), cudaFree(d_tiles[1]);
    spc_map_free_host(&c);
    gmap_free(&g);
    tcloud_free(&t);
  }
  /* k = 5: v3 and v4 refuse, v1 takes it */
  spc_map m5 = {.n = 16, .k = 5, .K = 125};
  spc_weights sw5 = {.in = 16, .out = 16, .K = 125};
  size_t bytes = 0;
  hx_err err = {HX_OK, ""};
  assert_int_equal(v3->fn(NULL, NULL, &sw5, &m5, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_EUNSUPPORTED);
  assert_int_equal(v4->fn(NULL, NULL, &sw5, &m5, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_EUNSUPPORTED);
  assert_int_equal(v1->fn(NULL, NULL, &sw5, &m5, NULL, &bytes, NULL, NET_F16, NULL, &err), HX_OK);
}

/* v6's tile order on the GPU (spc_mask_tiles_gpu) equals the CPU's (spc_tile_order_cpu) where its counting sort goes
 * through more than one chunk of 1024 tiles (210,000 rows of two sparse clouds: 1641 tiles of 128 rows, 821 of 256,
 * their step counts spread) and where one tile holds every row (100 rows); tiles and order poisoned; the mask order
 * written with the tiles equals the CPU's. */
static void test_tile_order_gpu(void **state) {
  (void)state;
  const struct {
    uint32_t per[2], box;
  } cs[2] = {{{110000, 100000}, 80}, {{60, 40}, 8}};
  for (int ci = 0; ci < 2; ++ci) {
    tcloud t;
    const uint32_t base[6] = {0, 0, 0, 3, 1, 2};
    assert_true(tcloud_make(&t, 2, cs[ci].per, cs[ci].box, base, 1200u + (uint64_t)ci));
    hx_err err = {HX_OK, ""};
    spc_map c;
    assert_int_equal(spc_map_cpu(&c, t.grid, t.batch, t.n, 3, &err), HX_OK);
    gmap g;
    assert_int_equal(gmap_build(&g, &t, 3, 0, 1, &err), HX_OK);
    uint32_t *want = malloc(t.n * sizeof *want);
    assert_non_null(want);
    assert_int_equal(spc_mask_order_cpu(want, &c, &err), HX_OK);
    size_t bytes = 0;
    assert_int_equal(spc_mask_tiles_gpu(NULL, NULL, 128u, &g.m, NULL, &bytes, NULL, &err), HX_OK);
    uint32_t *d_order = dev_alloc(t.n * sizeof(uint32_t));
    void *d_s = dev_alloc(bytes);
    for (int ti = 0; ti < 2; ++ti) {
      const uint32_t T = ti ? 256u : 128u, nt = (t.n + T - 1u) / T;
      uint32_t *d_tiles = dev_alloc(nt * sizeof(uint32_t)), hi = 0, lo = 0;
      tile_order_check(&c, &g, want, T, d_order, d_tiles, d_s, bytes, &hi, &lo);
      if (ci == 0) { /* several bins, and at 128-row tiles several chunks */
        assert_true(hi > lo);
        if (T == 128u) assert_true(nt > 1024u);
      } else {
        assert_int_equal(nt, 1);
      }
      cudaFree(d_tiles);
    }
    free(want);
    cudaFree(d_order), cudaFree(d_s);
    spc_map_free_host(&c);
    gmap_free(&g);
    tcloud_free(&t);
  }
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_map_refusals),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_conv_refusals),
      cmocka_unit_test(test_conv_v1_boundary),
      cmocka_unit_test(test_conv_v2),
      cmocka_unit_test(test_mask_order_v3), cmocka_unit_test(test_tile_order_gpu),
      cmocka_unit_test(test_conv_v6_units),
      cmocka_unit_test(test_stem), cmocka_unit_test(test_stem_refusals),
      /* by name only (tests/sanitize/run.sh): test_conv covers them */
      cmocka_unit_test(test_conv_fused),
      cmocka_unit_test(test_conv_v7),
      cmocka_unit_test(test_conv_v8),
      cmocka_unit_test(test_conv_v6),
  };
  /* arguments: test names to run (default all but the last four; tests/sanitize/run.sh names some) */
  const size_t n = sizeof tests / sizeof tests[0];
  return ts_gpu_main("nets_spconv_gpu", tests, n, n - 4, argc, argv, NULL, NULL);
}
#else
int main(void) {
  printf("built without CUDA: skipping\n");
  return 77;
}
#endif
