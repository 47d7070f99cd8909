/*
 * test_ptv3_gpu.c - every GPU routine and registered variant of baselines/ against its CPU reference:
 * grid coordinates, encode, the whole serialization (sfc_serial variants), sort/inverse stages, padding,
 * composition, the gathers (shuf_gather variants, fp16/bf16, C = 32..512) and pooling. Inputs come from
 * a fresh seed each run (printed; F3D_TEST_SEED=S repeats one), device outputs are poisoned (0xFF)
 * before every call. Exits 77 (Meson SKIP) without CUDA or without a device.
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

#include "baselines/baselines.h"

/* BL_TEST_CUDA comes from tests/baselines/meson.build (have_cuda). */
#if BL_TEST_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

static uint64_t g_seed;

#define CK(expr) assert_int_equal((int)(expr), (int)cudaSuccess)

static void *dalloc(size_t bytes) {
  void *p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 16));
  CK(cudaMemset(p, 0xFF, bytes ? bytes : 16)); /* poison */
  return p;
}
static void *dup_to_dev(const void *h, size_t bytes) {
  void *d = dalloc(bytes);
  if (bytes) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}
static void *dup_to_host(const void *d, size_t bytes) {
  void *h = malloc(bytes ? bytes : 1);
  assert_non_null(h);
  if (bytes) CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  return h;
}
static void *scratch_alloc(size_t bytes) { return dalloc(bytes); }

/* A random batch: B clouds, sizes from `sizes`, coordinates in a box of `extent` metres. */
typedef struct batch {
  uint32_t B;
  size_t n, offset[SFC_MAX_CLOUDS + 1];
  float *xyz;
  uint32_t *grid, *batch, gmax;
  int depth;
} batch;

static void make_batch(batch *b, uint32_t B, const size_t *sizes, double extent, double grid, uint64_t stream) {
  memset(b, 0, sizeof *b);
  b->B = B;
  for (uint32_t k = 0; k < B; k++) b->offset[k + 1] = b->offset[k] + sizes[k];
  b->n = b->offset[B];
  b->xyz = malloc(b->n * 3 * sizeof(float));
  b->grid = malloc(b->n * 3 * sizeof(uint32_t));
  b->batch = malloc(b->n * sizeof(uint32_t));
  assert_true(b->xyz && b->grid && b->batch);
  for (size_t i = 0; i < b->n * 3; i++)
    b->xyz[i] = (float)((hx_rng_unit(g_seed, stream, i) - 0.3) * extent);
  assert_int_equal(sfc_grid_cpu(b->grid, &b->gmax, b->xyz, b->offset, B, grid, NULL), HX_OK);
  assert_int_equal(sfc_batch_index_cpu(b->batch, b->offset, B, NULL), HX_OK);
  assert_int_equal(sfc_depth(&b->depth, b->gmax, B, grid, NULL), HX_OK);
}
static void free_batch(batch *b) { free(b->xyz), free(b->grid), free(b->batch); }

static void test_grid_gpu(void **state) {
  (void)state;
  const size_t sizes[4] = {5000, 1, 777, 20000};
  batch b;
  make_batch(&b, 4, sizes, 60.0, 0.05, 1);
  float *d_xyz = dup_to_dev(b.xyz, b.n * 12);
  uint32_t *d_grid = dalloc(b.n * 12), *d_batch = dalloc(b.n * 4), *d_max = dalloc(4);
  size_t sb = 0;
  assert_int_equal(sfc_grid_gpu(d_grid, d_batch, d_max, NULL, &sb, d_xyz, b.offset, 4, 0.05, NULL), HX_OK);
  void *d_s = scratch_alloc(sb);
  assert_int_equal(sfc_grid_gpu(d_grid, d_batch, d_max, d_s, &sb, d_xyz, b.offset, 4, 0.05, NULL), HX_OK);
  uint32_t *g = dup_to_host(d_grid, b.n * 12), *bt = dup_to_host(d_batch, b.n * 4), *mx = dup_to_host(d_max, 4);
  assert_memory_equal(g, b.grid, b.n * 12);
  assert_memory_equal(bt, b.batch, b.n * 4);
  assert_int_equal(*mx, b.gmax);
  free(g), free(bt), free(mx);
  cudaFree(d_xyz), cudaFree(d_grid), cudaFree(d_batch), cudaFree(d_max), cudaFree(d_s);
  free_batch(&b);
}

/* GPU dedup == CPU dedup on clouds with many points per voxel (and one single-point cloud). */
static void test_dedup_gpu(void **state) {
  (void)state;
  const size_t sizes[3] = {40000, 1, 9000};
  batch b;
  make_batch(&b, 3, sizes, 2.0, 0.05, 3); /* ~40^3 voxels: many duplicates */
  uint32_t *keep = malloc(b.n * 4);
  size_t off_want[4], off_got[4], dropped_want = 0, dropped_got = 0;
  assert_int_equal(sfc_dedup_cpu(keep, off_want, &dropped_want, b.grid, b.offset, 3, NULL), HX_OK);
  assert_true(dropped_want > 0);
  uint32_t *d_grid = dup_to_dev(b.grid, b.n * 12), *d_bt = dup_to_dev(b.batch, b.n * 4), *d_keep = dalloc(b.n * 4);
  size_t sb = 0;
  assert_int_equal(sfc_dedup_gpu(d_keep, off_got, &dropped_got, NULL, &sb, d_grid, d_bt, b.offset, 3, b.depth, NULL),
                   HX_OK);
  void *d_s = scratch_alloc(sb);
  assert_int_equal(sfc_dedup_gpu(d_keep, off_got, &dropped_got, d_s, &sb, d_grid, d_bt, b.offset, 3, b.depth, NULL),
                   HX_OK);
  assert_int_equal(dropped_got, dropped_want);
  for (int k = 0; k < 4; k++) assert_int_equal(off_got[k], off_want[k]);
  uint32_t *got = dup_to_host(d_keep, (b.n - dropped_want) * 4);
  assert_memory_equal(got, keep, (b.n - dropped_want) * 4);
  free(got), free(keep);
  cudaFree(d_grid), cudaFree(d_bt), cudaFree(d_keep), cudaFree(d_s);
  free_batch(&b);
}

/* ptv3.md 1.3 reference values, encoded on the GPU and compared with the table itself. */
static void test_reference_values_gpu(void **state) {
  (void)state;
  static const struct {
    int depth;
    uint32_t g[3];
    uint64_t code[4];
  } ref[] = {
      {11, {1, 0, 0}, {4, 2, 3, 1}},
      {11, {0, 1, 0}, {2, 4, 1, 3}},
      {11, {0, 0, 1}, {1, 1, 7, 7}},
      {11, {1234, 567, 89}, {4573196979ull, 2689495861ull, 8256659060ull, 4175623750ull}},
      {11, {1999, 1999, 159}, {7364681727ull, 7364681727ull, 4607981421ull, 4607981421ull}},
      {16, {1234, 567, 89}, {4573196979ull, 2689495861ull, 1588844518ull, 7988223604ull}},
      {16, {65535, 0, 0}, {160842843834660ull, 80421421917330ull, 281474976710655ull, 130684810615661ull}},
  };
  const sfc_order all[4] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  uint32_t *d_grid = dalloc(12);
  uint64_t *d_code = dalloc(32);
  for (size_t k = 0; k < sizeof ref / sizeof ref[0]; k++) {
    CK(cudaMemcpy(d_grid, ref[k].g, 12, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_code, 0xFF, 32));
    assert_int_equal(sfc_encode_gpu(d_code, d_grid, NULL, 1, ref[k].depth, all, 4, NULL), HX_OK);
    uint64_t got[4];
    CK(cudaMemcpy(got, d_code, 32, cudaMemcpyDeviceToHost));
    for (int o = 0; o < 4; o++) assert_int_equal(got[o], ref[k].code[o]);
  }
  cudaFree(d_grid), cudaFree(d_code);
}

static void test_encode_gpu(void **state) {
  (void)state;
  const int depths[6] = {1, 2, 5, 10, 11, 16};
  const sfc_order all[4] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  const size_t n = 30011;
  uint32_t *grid = malloc(n * 12), *bt = malloc(n * 4);
  uint64_t *want = malloc(n * 32);
  assert_true(grid && bt && want);
  for (int k = 0; k < 6; k++) {
    const int d = depths[k];
    for (size_t i = 0; i < n * 3; i++) grid[i] = (uint32_t)hx_rng_u64(g_seed, 10 + (uint64_t)k, i) & ((1u << d) - 1u);
    for (size_t i = 0; i < n; i++) bt[i] = (uint32_t)(i * 7 / n);
    assert_int_equal(sfc_encode_cpu(want, grid, bt, n, d, all, 4, NULL), HX_OK);
    uint32_t *d_grid = dup_to_dev(grid, n * 12), *d_bt = dup_to_dev(bt, n * 4);
    uint64_t *d_code = dalloc(n * 32);
    assert_int_equal(sfc_encode_gpu(d_code, d_grid, d_bt, n, d, all, 4, NULL), HX_OK);
    uint64_t *got = dup_to_host(d_code, n * 32);
    assert_memory_equal(got, want, n * 32);
    free(got);
    cudaFree(d_grid), cudaFree(d_bt), cudaFree(d_code);
  }
  free(grid), free(bt), free(want);
}

/* Every sfc_serial variant on batches covering 32-bit keys (depth <= 10), 64-bit keys, one point, one
 * cloud, many clouds, and duplicate voxels (no dedup: equal codes, so the sort's stability shows). */
static void test_serial_variants(void **state) {
  (void)state;
  typedef struct cfg {
    uint32_t B;
    size_t sizes[5];
    double extent, grid;
  } cfg;
  static const cfg cfgs[] = {
      {1, {1}, 1.0, 0.05},                           /* one point: depth 1 */
      {1, {3000}, 0.4, 0.05},                        /* heavy duplicates, depth 4 */
      {2, {40000, 25000}, 40.0, 0.05},               /* depth 10, key bits 31: 32-bit keys */
      {3, {60000, 1, 30000}, 80.0, 0.05},            /* depth 11: 64-bit keys */
      {5, {20000, 20000, 5000, 9000, 100}, 2000.0, 0.05}, /* depth 16 */
  };
  for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++) {
    const cfg *c = &cfgs[ci];
    batch b;
    make_batch(&b, c->B, c->sizes, c->extent, c->grid, 100 + ci);
    const size_t n = b.n;
    const int R = 4;
    int perm[4];
    sfc_row_perm(perm, R, g_seed, ci);
    sfc_serial_args a;
    memset(&a, 0, sizeof a);
    for (int r = 0; r < R; r++) a.orders[r] = (sfc_order)perm[r];
    uint64_t *code = malloc(n * 32);
    uint32_t *order = malloc(n * 16), *inv = malloc(n * 16);
    assert_true(code && order && inv);
    assert_int_equal(sfc_encode_cpu(code, b.grid, b.batch, n, b.depth, a.orders, R, NULL), HX_OK);
    assert_int_equal(sfc_sort_cpu(order, inv, code, n, R, NULL), HX_OK);
    uint32_t *d_grid = dup_to_dev(b.grid, n * 12), *d_bt = dup_to_dev(b.batch, n * 4);
    a.d_grid = d_grid;
    a.d_batch = c->B > 1 ? d_bt : NULL;
    a.n = n;
    a.B = c->B;
    a.depth = b.depth;
    a.R = R;
    for (int v = 0; v < sfc_serial_variant_count(); v++) {
      const sfc_serial_variant *var = sfc_serial_variant_get(v);
      a.d_code = dalloc(n * 32);
      a.d_order = dalloc(n * 16);
      a.d_inverse = dalloc(n * 16);
      size_t sb = 0;
      assert_int_equal(var->fn(NULL, &sb, &a, NULL), HX_OK);
      void *d_s = scratch_alloc(sb);
      assert_int_equal(var->fn(d_s, &sb, &a, NULL), HX_OK);
      CK(cudaDeviceSynchronize());
      uint64_t *gc = dup_to_host(a.d_code, n * 32);
      uint32_t *go = dup_to_host(a.d_order, n * 16), *gi = dup_to_host(a.d_inverse, n * 16);
      if (memcmp(go, order, n * 16) != 0) fprintf(stderr, "variant %s config %zu: order differs\n", var->name, ci);
      assert_memory_equal(gc, code, n * 32);
      assert_memory_equal(go, order, n * 16);
      assert_memory_equal(gi, inv, n * 16);
      free(gc), free(go), free(gi);
      cudaFree(a.d_code), cudaFree(a.d_order), cudaFree(a.d_inverse), cudaFree(d_s);
    }
    /* the stage launchers on their own: sort + inverse of the CPU codes */
    uint64_t *d_code = dup_to_dev(code, n * 32);
    uint32_t *d_order = dalloc(n * 16), *d_inv = dalloc(n * 16);
    size_t sb = 0;
    const int kb = sfc_key_bits(b.depth, c->B);
    assert_int_equal(sfc_sort_gpu(d_order, NULL, &sb, d_code, n, R, kb, NULL), HX_OK);
    void *d_s = scratch_alloc(sb);
    assert_int_equal(sfc_sort_gpu(d_order, d_s, &sb, d_code, n, R, kb, NULL), HX_OK);
    assert_int_equal(sfc_inverse_gpu(d_inv, d_order, n, R, NULL), HX_OK);
    uint32_t *go = dup_to_host(d_order, n * 16), *gi = dup_to_host(d_inv, n * 16);
    assert_memory_equal(go, order, n * 16);
    assert_memory_equal(gi, inv, n * 16);
    free(go), free(gi);
    cudaFree(d_code), cudaFree(d_order), cudaFree(d_inv), cudaFree(d_s), cudaFree(d_grid), cudaFree(d_bt);
    free(code), free(order), free(inv);
    free_batch(&b);
  }
  assert_true(sfc_serial_variant_count() >= 1);
}

static void test_padding_gpu(void **state) {
  (void)state;
  for (uint64_t t = 0; t < 40; t++) {
    size_t offset[SFC_MAX_CLOUDS + 1] = {0};
    uint32_t B = 1 + (uint32_t)(hx_rng_u64(g_seed, 20, t) % 8);
    const uint32_t K = t % 2 ? 1024 : 48;
    if (t == 0) { /* ptv3.md 2.1 */
      B = 2;
      offset[1] = 2500, offset[2] = 3300;
    } else {
      for (uint32_t k = 0; k < B; k++) offset[k + 1] = offset[k] + 1 + hx_rng_u64(g_seed, 21 + k, t) % 5000;
    }
    const size_t n = offset[B];
    size_t sum_p, ns;
    assert_int_equal(shuf_pad_sizes(&sum_p, &ns, offset, B, K, NULL), HX_OK);
    uint32_t *pad = malloc(sum_p * 4), *unpad = malloc(n * 4);
    int32_t *cu = malloc(ns * 4);
    assert_int_equal(shuf_padding_cpu(pad, unpad, cu, offset, B, K, NULL), HX_OK);
    uint32_t *d_pad = dalloc(sum_p * 4), *d_unpad = dalloc(n * 4);
    int32_t *d_cu = dalloc(ns * 4);
    assert_int_equal(shuf_padding_gpu(d_pad, d_unpad, d_cu, offset, B, K, NULL), HX_OK);
    uint32_t *gp = dup_to_host(d_pad, sum_p * 4), *gu = dup_to_host(d_unpad, n * 4);
    int32_t *gc = dup_to_host(d_cu, ns * 4);
    assert_memory_equal(gp, pad, sum_p * 4);
    assert_memory_equal(gu, unpad, n * 4);
    assert_memory_equal(gc, cu, ns * 4);
    /* composition with a random permutation as the order row */
    uint32_t *ord = malloc(n * 4), *inv = malloc(n * 4), *op = malloc(sum_p * 4), *ip = malloc(n * 4);
    for (size_t i = 0; i < n; i++) ord[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
      const size_t j = hx_rng_u64(g_seed, 30, t * 1000003u + i) % (i + 1);
      const uint32_t x = ord[i];
      ord[i] = ord[j], ord[j] = x;
    }
    for (size_t j = 0; j < n; j++) inv[ord[j]] = (uint32_t)j;
    shuf_compose_cpu(op, ip, ord, inv, pad, unpad, n, sum_p);
    uint32_t *d_ord = dup_to_dev(ord, n * 4), *d_inv = dup_to_dev(inv, n * 4);
    uint32_t *d_op = dalloc(sum_p * 4), *d_ip = dalloc(n * 4);
    assert_int_equal(shuf_compose_gpu(d_op, d_ip, d_ord, d_inv, d_pad, d_unpad, n, sum_p, NULL), HX_OK);
    uint32_t *gop = dup_to_host(d_op, sum_p * 4), *gip = dup_to_host(d_ip, n * 4);
    assert_memory_equal(gop, op, sum_p * 4);
    assert_memory_equal(gip, ip, n * 4);
    free(pad), free(unpad), free(cu), free(gp), free(gu), free(gc), free(ord), free(inv), free(op), free(ip);
    free(gop), free(gip);
    cudaFree(d_pad), cudaFree(d_unpad), cudaFree(d_cu), cudaFree(d_ord), cudaFree(d_inv), cudaFree(d_op);
    cudaFree(d_ip);
  }
}

static void test_gather_variants(void **state) {
  (void)state;
  static const size_t widths[] = {96, 192, 288, 384, 768, 1536, 32, 64, 128, 256, 512, 36, 1};
  const size_t src_rows = 20011, rows = 25600 + 7;
  uint32_t *idx = malloc(rows * 4);
  for (size_t r = 0; r < rows; r++) idx[r] = (uint32_t)(hx_rng_u64(g_seed, 40, r) % src_rows);
  uint32_t *d_idx = dup_to_dev(idx, rows * 4);
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    const size_t w = widths[wi];
    uint16_t *in = malloc(src_rows * w * 2), *want = malloc(rows * w * 2);
    for (size_t k = 0; k < src_rows * w; k++) in[k] = (uint16_t)hx_rng_u64(g_seed, 41 + wi, k);
    for (int dt = 0; dt < 2; dt++) {
      shuf_gather_cpu(want, in, idx, rows, w, (shuf_dtype)dt);
      void *d_in = dup_to_dev(in, src_rows * w * 2);
      for (int v = 0; v < shuf_gather_variant_count(); v++) {
        const shuf_gather_variant *var = shuf_gather_variant_get(v);
        void *d_out = dalloc(rows * w * 2);
        const hx_status s = var->fn(d_out, d_in, d_idx, rows, w, (shuf_dtype)dt, NULL);
        if ((w * 2) % 16 != 0 && var->id != 0) { /* vectorised variants refuse rows that are not 16B */
          assert_int_equal(s, HX_EUNSUPPORTED);
        } else {
          assert_int_equal(s, HX_OK);
          uint16_t *got = dup_to_host(d_out, rows * w * 2);
          if (memcmp(got, want, rows * w * 2) != 0)
            fprintf(stderr, "gather %s width %zu %s differs\n", var->name, w, shuf_dtype_name((shuf_dtype)dt));
          assert_memory_equal(got, want, rows * w * 2);
          free(got);
        }
        cudaFree(d_out);
      }
      cudaFree(d_in);
    }
    free(in), free(want);
  }
  cudaFree(d_idx);
  free(idx);
  assert_true(shuf_gather_variant_count() >= 1);
}

static void test_pool_gpu(void **state) {
  (void)state;
  /* case 3: 50000 points in a 1.5 m box, ~1.9 a voxel, so clusters of up to ~30 children (more than 8: the
   * reduce's chunked path; duplicated voxels keep the pooled codes injective, so every field is compared) */
  for (int ci = 0; ci < 4; ci++) {
    const size_t sizes[3] = {50000, 3, 20000};
    const uint32_t B = ci == 0 || ci == 3 ? 1 : 3;
    batch b;
    make_batch(&b, B, sizes, ci == 2 ? 500.0 : ci == 3 ? 1.5 : 30.0, 0.05, 200 + (uint64_t)ci);
    const size_t n = b.n, C = ci == 1 ? 3 : 64;
    const int R = 4;
    sfc_order orders[4];
    int perm[4];
    sfc_row_perm(perm, R, g_seed, 50 + (uint64_t)ci);
    for (int r = 0; r < R; r++) orders[r] = (sfc_order)perm[r];
    uint64_t *code = malloc(n * 32);
    uint32_t *order = malloc(n * 16);
    float *feat = malloc(n * C * 4), *coord = b.xyz;
    for (size_t k = 0; k < n * C; k++) feat[k] = (float)(hx_rng_unit(g_seed, 60, k) * 4.0 - 2.0);
    assert_int_equal(sfc_encode_cpu(code, b.grid, b.batch, n, b.depth, orders, R, NULL), HX_OK);
    assert_int_equal(sfc_sort_cpu(order, NULL, code, n, R, NULL), HX_OK);
    spool_in in = {code, order, feat, coord, b.grid, b.batch, n, C, R, b.depth, B, {0, 0, 0, 0}};
    sfc_row_perm(in.perm, R, g_seed, 70 + (uint64_t)ci);
    spool_out want = {0, 0, malloc(n * 4), malloc(n * 4), malloc(n * 4 + 4), malloc(n * 32), malloc(n * 16),
                      malloc(n * 16), malloc(n * C * 4), malloc(n * 12), malloc(n * 12), malloc(n * 4)};
    assert_int_equal(spool_cpu(&want, &in, NULL), HX_OK);
    const size_t m = want.n_out;
    if (ci == 3) {
      uint32_t most = 0;
      for (size_t k = 0; k < m; k++) {
        const uint32_t kids = want.idx_ptr[k + 1] - want.idx_ptr[k];
        if (kids > most) most = kids;
      }
      assert_true(most > 16); /* three chunks of 8 at least once */
    }
    spool_in din = in;
    din.code = dup_to_dev(code, n * 32);
    din.order = dup_to_dev(order, n * 16);
    din.feat = dup_to_dev(feat, n * C * 4);
    din.coord = dup_to_dev(coord, n * 12);
    din.grid = dup_to_dev(b.grid, n * 12);
    din.batch = dup_to_dev(b.batch, n * 4);
    spool_out got = {0, 0, dalloc(n * 4), dalloc(n * 4), dalloc(n * 4 + 4), dalloc(n * 32), dalloc(n * 16),
                     dalloc(n * 16), dalloc(n * C * 4), dalloc(n * 12), dalloc(n * 12), dalloc(n * 4)};
    size_t sb = 0;
    assert_int_equal(spool_gpu(&got, NULL, &sb, &din, NULL), HX_OK);
    void *d_s = scratch_alloc(sb);
    /* pass 0: spool_gpu reads n_out back; pass 1: spool_gpu_sized is given it (outputs poisoned first) */
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 0) {
        assert_int_equal(spool_gpu(&got, d_s, &sb, &din, NULL), HX_OK);
      } else {
        void **pf = (void **)&got.cluster;
        const size_t pz[10] = {n * 4, n * 4, n * 4 + 4, n * 32, n * 16, n * 16, n * C * 4, n * 12, n * 12, n * 4};
        for (int k = 0; k < 10; k++) assert_int_equal(cudaMemset(pf[k], 0xFF, pz[k]), cudaSuccess);
        got.n_out = 0, got.depth = 0;
        assert_int_equal(spool_gpu_sized(&got, d_s, &sb, &din, 0, NULL), HX_EINVAL);
        assert_int_equal(spool_gpu_sized(&got, d_s, &sb, &din, n + 1, NULL), HX_EINVAL);
        assert_int_equal(spool_gpu_sized(&got, d_s, &sb, &din, m, NULL), HX_OK);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
      }
      assert_int_equal(got.n_out, m);
      assert_int_equal(got.depth, want.depth);
#define CMP(field, bytes)                                      \
  do {                                                         \
    void *h_ = dup_to_host(got.field, bytes);                  \
    assert_memory_equal(h_, want.field, bytes);                \
    free(h_);                                                  \
  } while (0)
      CMP(cluster, n * 4);
      CMP(head, m * 4);
      CMP(idx_ptr, (m + 1) * 4);
      CMP(code, (size_t)R * m * 8);
      CMP(order, (size_t)R * m * 4);
      CMP(inverse, (size_t)R * m * 4);
      CMP(feat, m * C * 4);
      CMP(grid, m * 12);
      CMP(batch, m * 4);
#undef CMP
      float *gco = dup_to_host(got.coord, m * 12);
      for (size_t k = 0; k < m * 3; k++)
        assert_true(fabsf(gco[k] - want.coord[k]) <= 1e-6f * (1.0f + fabsf(want.coord[k])));
      free(gco);
    }
    void **wf = (void **)&want.cluster, **gf = (void **)&got.cluster;
    for (int k = 0; k < 10; k++) free(wf[k]), cudaFree(gf[k]);
    cudaFree((void *)din.code), cudaFree((void *)din.order), cudaFree((void *)din.feat);
    cudaFree((void *)din.coord), cudaFree((void *)din.grid), cudaFree((void *)din.batch), cudaFree(d_s);
    free(code), free(order), free(feat);
    free_batch(&b);
  }
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "no CUDA device: skipped\n");
    return 77;
  }
  const char *s = getenv("F3D_TEST_SEED");
  g_seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
  fprintf(stderr, "test_ptv3_gpu: seed %llu (F3D_TEST_SEED=%llu repeats it)\n", (unsigned long long)g_seed,
          (unsigned long long)g_seed);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid_gpu),        cmocka_unit_test(test_dedup_gpu),
      cmocka_unit_test(test_reference_values_gpu), cmocka_unit_test(test_encode_gpu),
      cmocka_unit_test(test_serial_variants), cmocka_unit_test(test_padding_gpu),
      cmocka_unit_test(test_gather_variants), cmocka_unit_test(test_pool_gpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  fprintf(stderr, "built without CUDA: skipped\n");
  return 77;
}
#endif
