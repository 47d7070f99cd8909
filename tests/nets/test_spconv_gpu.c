/*
 * test_spconv_gpu.c - the submanifold convolution on the GPU against the CPU references.
 *
 * Map: spc_map_gpu equals spc_map_cpu entry for entry (nbr poisoned first) on random clouds, 2 clouds of
 * sparse voxels in a 64^3 box with n = 1 .. 20000, a dense pair of 24^3 boxes, one cloud without a batch
 * array, one at the top of the coordinate range; k = 3 and 5. The rulebook holds each offset's pairs in
 * increasing output row, its count row and m->opairs equal the CPU counts; a run without count_pairs leaves
 * the counts alone and gives the same map; duplicates, coordinates >= 2^18 and batch >= 2^10 are HX_EINVAL
 * naming the row(s).
 *
 * Convolution: every registered variant, fp16 and bf16, 4 -> 32 (k = 5, the stem), 32 -> 32, 64 -> 64,
 * 128 -> 128 and 3 -> 5 (k = 3; odd widths take the unvectorised paths), n = 1 and a few thousand rows.
 * Outputs poisoned (0xFFFF, NaN in both dtypes); every value must be written, finite and within
 *     |y - ref| <= u * |ref| + 2^-13 * (|b| + sum |w x|)
 * where ref is the convolution in double of the dtype-rounded x and w (what the GPU reads) with the fp32
 * bias, and u is the dtype's unit roundoff (2^-11 fp16, 2^-8 bf16): u |ref| is the one rounding of the fp32
 * sum to the dtype; 2^-13 bounds the fp32 accumulation (worst case ~(in + K) 2^-23 <= 2^-15.8 of the
 * magnitude for in <= 128). Dropping one offset's contribution errs by ~1/(K sqrt(in)) ~ 2^-8 of it.
 * Exits 77 without a CUDA device.
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
  spc_map m;
  size_t bytes = 0;
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

/* One convolution case. 1: pass, 0: fail, -1: the variant is unsupported here. */
static int conv_case(const spc_variant *v, spc_ctx *ctx, net_dtype dt, const tcloud *t, uint32_t k, size_t in,
                     size_t out, uint64_t seed) {
  const uint32_t n = t->n, K = k * k * k;
  const double u = dt == NET_BF16 ? 0x1p-8 : 0x1p-11;
  hx_err err = {HX_OK, ""};
  spc_map c;
  gmap g;
  assert_int_equal(spc_map_cpu(&c, t->grid, t->batch, n, k, &err), HX_OK);
  assert_int_equal(gmap_build(&g, t, k, 0, 1, &err), HX_OK);
  float *x = malloc((size_t)n * in * sizeof(float)), *w = malloc((size_t)K * in * out * sizeof(float));
  float *b = malloc(out * sizeof(float));
  uint16_t *xh = malloc((size_t)n * in * 2u), *yh = malloc((size_t)n * out * 2u);
  assert_true(x && w && b && xh && yh);
  const double ws = 1.0 / sqrt((double)(K * in)); /* PyTorch's default init range */
  for (size_t i = 0; i < (size_t)n * in; ++i) {
    xh[i] = net_from_float(dt, (float)(2.0 * hx_rng_unit(seed, 1, i) - 1.0));
    x[i] = net_to_float(dt, xh[i]);
  }
  for (size_t i = 0; i < (size_t)K * in * out; ++i)
    w[i] = net_to_float(dt, net_from_float(dt, (float)(ws * (2.0 * hx_rng_unit(seed, 2, i) - 1.0))));
  for (size_t i = 0; i < out; ++i) b[i] = (float)(ws * (2.0 * hx_rng_unit(seed, 3, i) - 1.0));
  spc_weights sw;
  assert_int_equal(spc_weights_upload(&sw, w, b, in, out, K, dt, NULL, &err), HX_OK);
  void *d_x = dev_upload(xh, (size_t)n * in * 2u), *d_y = dev_alloc((size_t)n * out * 2u);
  assert_int_equal(cudaMemset(d_y, 0xFF, (size_t)n * out * 2u), cudaSuccess);
  size_t bytes = 0;
  hx_status s = v->fn(d_y, d_x, &sw, &g.m, NULL, &bytes, ctx, dt, NULL, &err);
  int result = 1;
  if (s == HX_EUNSUPPORTED) {
    printf("  %s skipped: %s\n", v->name, err.msg);
    result = -1;
  } else {
    assert_int_equal(s, HX_OK);
    void *d_s = dev_alloc(bytes);
    s = v->fn(d_y, d_x, &sw, &g.m, d_s, &bytes, ctx, dt, NULL, &err);
    if (s != HX_OK) printf("%s\n", err.msg);
    assert_int_equal(s, HX_OK);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(yh, d_y, (size_t)n * out * 2u, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d_s);
    double worst = 0;
    size_t bad = 0;
    double *ref = malloc(out * sizeof(double)), *mag = malloc(out * sizeof(double));
    assert_true(ref && mag);
    for (uint32_t i = 0; i < n; ++i) {
      for (size_t co = 0; co < out; ++co) ref[co] = b[co], mag[co] = fabs((double)b[co]);
      for (uint32_t o = 0; o < K; ++o) {
        const int32_t j = c.nbr[(size_t)i * K + o];
        if (j < 0) continue;
        const float *xj = x + (size_t)j * in;
        for (size_t co = 0; co < out; ++co) {
          const float *wr = w + ((size_t)co * K + o) * in;
          double sum = 0, sa = 0;
          for (size_t ci = 0; ci < in; ++ci) {
            const double p = (double)wr[ci] * (double)xj[ci];
            sum += p, sa += fabs(p);
          }
          ref[co] += sum, mag[co] += sa;
        }
      }
      for (size_t co = 0; co < out; ++co) {
        const double y = (double)net_to_float(dt, yh[(size_t)i * out + co]);
        const double tol = u * fabs(ref[co]) + 0x1p-13 * mag[co];
        const double e = fabs(y - ref[co]);
        if (!isfinite(y) || e > tol) {
          if (bad < 5)
            printf("  row %u col %zu: %g, expected %g (tolerance %.3g)\n", i, co, y, ref[co], tol);
          bad++;
        } else if (e / tol > worst) {
          worst = e / tol;
        }
      }
    }
    printf("conv %s %s k=%u %zu->%zu n=%u pairs=%llu: %zu bad, worst |err|/tol %.3f\n", v->name, net_dtype_name(dt),
           k, in, out, n, (unsigned long long)g.m.pairs, bad, worst);
    result = bad == 0;
    free(ref), free(mag);
  }
  spc_weights_free(&sw);
  cudaFree(d_x), cudaFree(d_y);
  free(x), free(w), free(b), free(xh), free(yh);
  gmap_free(&g);
  spc_map_free_host(&c);
  return result;
}

static void test_conv(void **state) {
  (void)state;
  spc_ctx *ctx = NULL;
  hx_err err = {HX_OK, ""};
  assert_int_equal(spc_ctx_create(&ctx, &err), HX_OK);
  const struct {
    uint32_t k;
    size_t in, out;
  } shapes[] = {{5, 4, 32}, {3, 32, 32}, {3, 64, 64}, {3, 128, 128}, {3, 3, 5}};
  /* two clouds at ~45% occupancy of a 14^3 box (~12 neighbours a row at k = 3), and one lone point */
  const uint32_t per[2] = {1300, 1100}, base[6] = {0, 0, 0, 3, 0, 0}, one[2] = {1, 0};
  tcloud t, t1;
  assert_true(tcloud_make(&t, 2, per, 14, base, 5));
  assert_true(tcloud_make(&t1, 1, one, 4, base, 6));
  int fails = 0, runs = 0;
  for (int vi = 0; vi < spc_variant_count(); ++vi) {
    const spc_variant *v = spc_variant_get(vi);
    for (int d = 0; d < 2; ++d)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int lone = 0; lone < 2; ++lone) {
          const int r = conv_case(v, ctx, d ? NET_BF16 : NET_F16, lone ? &t1 : &t, shapes[s].k, shapes[s].in,
                                  shapes[s].out, 1000u * (uint64_t)vi + 100u * (uint64_t)d + 10u * s + (uint64_t)lone);
          if (r < 0) continue;
          runs++;
          fails += !r;
        }
  }
  printf("submanifold convolution GPU: %d of %d cases failed\n", fails, runs);
  assert_int_equal(fails, 0);
  tcloud_free(&t);
  tcloud_free(&t1);
  spc_ctx_destroy(ctx);
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

int main(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no CUDA device: skipping\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_map_refusals),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_conv_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  printf("built without CUDA: skipping\n");
  return 77;
}
#endif
