/*
 * test_net_flash3d.c - Flash3D (nets/net_flash3d.c): parameter counts of the named configurations (public: a
 * constant; 46m and 129m within 1% of their targets by the one widening rule), names and shapes of the public
 * code's state_dict keys, the fp32 bucket-swin attention against the kernels' double reference, the per-level
 * shape (hash cycle, row bounds that hold), the GPU's spare cloud (real clouds' layouts independent of it), and the "flash3d-tiny" CPU forward on two clouds: shapes,
 * finiteness, determinism for a seed, the layouts mechanism (forward on psh_run_cpu's layouts equals the plain
 * forward bit for bit; a broken layout is refused), rehash on and off, every level live (a changed weight deep
 * in the tree changes the logits), bad inputs refused, and a state_dict with BatchNorm's num_batches_tracked
 * and TransformerEngine's _extra_state entries loaded (those ignored, counted) to the saved weights' forward.
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

#include "kernels/kernels.h"
#include "nets/nets_internal.h"
#include "tests/nets/test_net_util.h"

#define PUBLIC_COUNT 19332784ull /* flash3d-public with the 4-input embedding and the 16-class head */

/* ---- configurations and parameters ------------------------------------------------------------------------- */

static void test_counts(void **state) {
  (void)state;
  hx_err err;
  net_config cfg;
  net_params p = {0};
  /* public: the constant, by arithmetic and by the parameter set */
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-public", &err), HX_OK);
  assert_int_equal(net_flash3d_count(&cfg), PUBLIC_COUNT);
  assert_int_equal(net_flash3d_params_init(&p, &cfg, 1, &err), HX_OK);
  assert_int_equal(net_params_count(&p), PUBLIC_COUNT);
  net_params_free(&p);
  /* tiny: arithmetic = parameter set */
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-tiny", &err), HX_OK);
  assert_int_equal(net_flash3d_params_init(&p, &cfg, 1, &err), HX_OK);
  assert_int_equal(net_params_count(&p), net_flash3d_count(&cfg));
  net_params_free(&p);
  /* the widened ones: within 1% of the targets, whole heads of 16, the public depths */
  const struct {
    const char *name;
    double target;
    int init;
  } wide[2] = {{"flash3d-46m", 46159312.0, 1}, {"flash3d-129m", 129.4e6, 0}};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(net_flash3d_config(&cfg, wide[k].name, &err), HX_OK);
    const double c = (double)net_flash3d_count(&cfg);
    printf("%s: %.0f parameters (%+.2f%% of %.0f)\n", wide[k].name, c, 100.0 * (c / wide[k].target - 1.0),
           wide[k].target);
    assert_true(fabs(c / wide[k].target - 1.0) < 0.01);
    assert_int_equal(cfg.levels, 5);
    for (int l = 0; l < 5; l++) {
      assert_int_equal(cfg.enc_channels[l] % 16, 0), assert_int_equal(cfg.enc_heads[l] * 16, cfg.enc_channels[l]);
      assert_int_equal(cfg.dec_channels[l] % 16, 0), assert_int_equal(cfg.dec_heads[l] * 16, cfg.dec_channels[l]);
    }
    assert_int_equal(cfg.enc_depth[3], 6);
    if (wide[k].init) { /* the arithmetic is the parameter set's count here too */
      assert_int_equal(net_flash3d_params_init(&p, &cfg, 1, &err), HX_OK);
      assert_int_equal(net_params_count(&p), net_flash3d_count(&cfg));
      net_params_free(&p);
    }
  }
  /* flash3d-46m-fill75: flash3d-46m's network, buckets 75% full */
  net_config f75, win;
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-46m", &err), HX_OK);
  assert_int_equal(net_flash3d_config(&f75, "flash3d-46m-fill75", &err), HX_OK);
  assert_int_equal(net_flash3d_count(&f75), net_flash3d_count(&cfg));
  assert_true(cfg.bucket_fill == 0.0 && f75.bucket_fill == 0.75);
  assert_true(cfg.rehash == 1 && f75.rehash == 1);
  /* flash3d-46m-windows: flash3d-46m's network, no re-hash (the public code's windows) */
  assert_int_equal(net_flash3d_config(&win, "flash3d-46m-windows", &err), HX_OK);
  assert_int_equal(net_flash3d_count(&win), net_flash3d_count(&cfg));
  assert_true(win.rehash == 0 && win.bucket_fill == 0.0);
  /* flash3d-46m-scope2: flash3d-46m's network attending over scopes of 2 buckets (PTv3's 1024 keys) */
  net_config sc2;
  assert_int_equal(net_flash3d_config(&sc2, "flash3d-46m-scope2", &err), HX_OK);
  assert_int_equal(net_flash3d_count(&sc2), net_flash3d_count(&cfg));
  assert_true(cfg.scope == 8 && sc2.scope == 2 && sc2.scope * sc2.bucket == 1024);
  assert_true(sc2.rehash == 1 && sc2.bucket_fill == 0.0);
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-huge", &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "flash3d-tiny"));
}

static void test_names(void **state) {
  (void)state;
  hx_err err;
  net_config cfg;
  net_params p = {0};
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-public", &err), HX_OK);
  assert_int_equal(net_flash3d_params_init(&p, &cfg, 7, &err), HX_OK);
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
  const char *M = "module_tree.";
  char q[256];
  tnet_expect_shape(&p, "seg_head.weight", 2, SHAPE(16, 64), 1);
  tnet_expect_shape(&p, "psh_scatter.lin.weight", 2, SHAPE(32, 4), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.0.bwa.qkv.weight", M), tnet_expect_shape(&p, q, 2, SHAPE(96, 32), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.1.bwa.proj.bias", M), tnet_expect_shape(&p, q, 1, SHAPE(32), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.0.norm.weight", M), tnet_expect_shape(&p, q, 1, SHAPE(32), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.0.mlp.mlp.layer_norm_weight", M), tnet_expect_shape(&p, q, 1, SHAPE(32), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.0.mlp.mlp.fc1_weight", M), tnet_expect_shape(&p, q, 2, SHAPE(256, 32), 1);
  snprintf(q, sizeof q, "%sencoder_blocks.0.mlp.mlp.fc2_weight", M), tnet_expect_shape(&p, q, 2, SHAPE(32, 128), 1);
  snprintf(q, sizeof q, "%sdecoder_blocks.1.mlp.mlp.fc1_bias", M), tnet_expect_shape(&p, q, 1, SHAPE(512), 1);
  snprintf(q, sizeof q, "%smiddle.pooling.proj.weight", M), tnet_expect_shape(&p, q, 2, SHAPE(64, 32), 1);
  snprintf(q, sizeof q, "%smiddle.pooling.norm.running_var", M), tnet_expect_shape(&p, q, 1, SHAPE(64), 0);
  snprintf(q, sizeof q, "%smiddle.unpooling.proj.0.weight", M), tnet_expect_shape(&p, q, 2, SHAPE(64, 64), 1);
  snprintf(q, sizeof q, "%smiddle.unpooling.proj_skip.0.weight", M), tnet_expect_shape(&p, q, 2, SHAPE(64, 64), 1);
  snprintf(q, sizeof q, "%smiddle.unpooling.proj.norm.running_mean", M), tnet_expect_shape(&p, q, 1, SHAPE(64), 0);
  /* level 3 (6 encoder blocks of 256; its decoder 128, fed by level 4's decoder of 256) */
  snprintf(q, sizeof q, "%smiddle.submodule.middle.submodule.middle.submodule.encoder_blocks.5.bwa.qkv.weight", M);
  tnet_expect_shape(&p, q, 2, SHAPE(768, 256), 1);
  snprintf(q, sizeof q, "%smiddle.submodule.middle.submodule.middle.submodule.middle.unpooling.proj.0.weight", M);
  tnet_expect_shape(&p, q, 2, SHAPE(128, 256), 1);
  snprintf(q, sizeof q, "%smiddle.submodule.middle.submodule.middle.submodule.middle.unpooling.proj_skip.0.weight", M);
  tnet_expect_shape(&p, q, 2, SHAPE(128, 512), 1);
  /* the leaf: Linear(512, 256) */
  snprintf(q, sizeof q, "%smiddle.submodule.middle.submodule.middle.submodule.middle.submodule.middle.proj.weight", M);
  tnet_expect_shape(&p, q, 2, SHAPE(256, 512), 1);
  snprintf(q, sizeof q, "%smiddle.submodule.middle.submodule.middle.submodule.middle.submodule.decoder_blocks.1.norm.bias", M);
  tnet_expect_shape(&p, q, 1, SHAPE(256), 1);
#undef SHAPE
  snprintf(q, sizeof q, "%sencoder_blocks.2.norm.weight", M);
  assert_null(net_params_find(&p, q));
  /* the view finds everything; a missing tensor is named */
  net_f3d_view *v = malloc(sizeof *v);
  assert_non_null(v);
  assert_int_equal(net_flash3d_view_get(v, &cfg, &p, &err), HX_OK);
  assert_int_equal(v->enc[3][5].C, 256);
  assert_int_equal(v->leaf.in, 512), assert_int_equal(v->leaf.out, 256);
  snprintf(p.t[p.n - 1].name, sizeof p.t[p.n - 1].name, "renamed");
  assert_int_equal(net_flash3d_view_get(v, &cfg, &p, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "missing"));
  free(v);
  net_params_free(&p);
}

/* ---- attention ---------------------------------------------------------------------------------------------- */

/* The fp32 attention against battn's double reference on the same fp16-rounded inputs, swin and stride plans
 * over two clouds with empty and partial buckets. */
static void test_attention(void **state) {
  (void)state;
  hx_err err;
  const uint32_t counts[10] = {5, 0, 17, 9, 1, 12, 3, 0, 8, 16}, cb[3] = {0, 6, 10};
  uint32_t start[10], rows = 0;
  for (int b = 0; b < 10; b++) start[b] = rows, rows += counts[b];
  const int H = 2, D = 16, C = H * D;
  uint16_t *h = malloc((size_t)rows * 3 * (size_t)C * 2), *ho = malloc((size_t)rows * (size_t)C * 2);
  float *f = malloc((size_t)rows * 3 * (size_t)C * 4), *o = malloc((size_t)rows * (size_t)C * 4);
  float *lse = malloc((size_t)rows * (size_t)H * 4);
  assert_true(h && ho && f && o && lse);
  for (size_t i = 0; i < (size_t)rows * 3 * (size_t)C; i++) {
    h[i] = battn_from_float(BATTN_F16, (float)(4.0 * hx_rng_unit(5, 0, i) - 2.0));
    f[i] = battn_to_float(BATTN_F16, h[i]);
  }
  const battn_plan_kind kinds[2] = {BATTN_PLAN_SWIN, BATTN_PLAN_STRIDE};
  const uint32_t vals[2] = {1, 2};
  for (int k = 0; k < 2; k++) {
    battn_plan pl;
    assert_int_equal(battn_plan_build(&pl, kinds[k], vals[k], 3, start, counts, cb, 2, &err), HX_OK);
    battn_params p;
    battn_params_init(&p, rows, H, D, BATTN_F16, &pl);
    p.q = h, p.k = h + C, p.v = h + 2 * C, p.o = ho, p.lse = lse;
    p.q_row_stride = p.k_row_stride = p.v_row_stride = 3 * C;
    p.bucket_start = pl.bucket_start, p.bucket_count = pl.bucket_count, p.scope = pl.scope;
    assert_int_equal(battn_forward_cpu(&p, &pl, &err), HX_OK);
    assert_int_equal(net_flash3d_attn_cpu(o, f, rows, H, D, &pl, &err), HX_OK);
    double worst = 0;
    for (size_t i = 0; i < (size_t)rows * (size_t)C; i++) {
      const double d = fabs((double)o[i] - (double)battn_to_float(BATTN_F16, ho[i]));
      worst = d > worst ? d : worst;
    }
    assert_true(worst < 2e-3); /* the reference's output is rounded to fp16 (|o| <= 2: half an ulp 1e-3) */
    battn_plan_free(&pl);
  }
  /* a bucket in two scopes (battn_validate's rule) is refused: the scopes run in parallel, each writing its rows */
  uint32_t two[4] = {0, 2, 0, 3};
  battn_plan bad = {10, 2, 2, start, (uint32_t *)counts, two, 17, 34};
  assert_int_equal(net_flash3d_attn_cpu(o, f, rows, H, D, &bad, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "bucket 0 of scope 1 is in two scopes"));
  /* buckets whose rows overlap (battn_validate's rule too) are refused: two units would write the same rows */
  uint32_t ov_start[10];
  memcpy(ov_start, start, sizeof ov_start);
  ov_start[2] = 1; /* bucket 2's 17 rows from row 1: rows 1-4 are bucket 0's */
  uint32_t sep[4] = {0, 1, 2, 3};
  battn_plan ov = {10, 2, 2, ov_start, (uint32_t *)counts, sep, 17, 34};
  assert_int_equal(net_flash3d_attn_cpu(o, f, rows, H, D, &ov, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "bucket 2 of scope 1 is overlapping another bucket"));
  free(h), free(ho), free(f), free(o), free(lse);
}

/* ---- shapes --------------------------------------------------------------------------------------------- */

static void test_shape(void **state) {
  (void)state;
  hx_err err;
  net_config cfg;
  tnet_cloud c;
  const size_t sizes[2] = {1500, 2600};
  tnet_cloud_uniform(&c, sizes, 2, 3);
  net_input in = tnet_cloud_input(&c, 9);
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-public", &err), HX_OK);
  net_f3d_shape s;
  assert_int_equal(net_flash3d_shape_get(&s, &cfg, &in, &err), HX_OK);
  const psh_hash want[5] = {PSH_XOR_DIV, PSH_XOR_MOD, PSH_ZORDER_DIV, PSH_ZORDER_MOD, PSH_XOR_DIV};
  for (int l = 0; l < 5; l++) {
    assert_true(s.lv[l].hashed);
    assert_int_equal(s.lv[l].psh.hash, want[l]);
    assert_true(s.lv[l].psh.voxel > 0.0499f * (float)(1u << l) && s.lv[l].psh.voxel < 0.0501f * (float)(1u << l));
  }
  assert_int_equal(s.lv[0].bound_rows, 4100), assert_int_equal(s.lv[0].nb, 8); /* ceil(2600 / 512) -> 8 */
  /* --bucket-fill: ceil(rows / (512 f)) at every hashed level, not a power of two; out of range refused */
  assert_int_equal(net_f3d_buckets(600000, 512, 0.0), 2048), assert_int_equal(net_f3d_buckets(600000, 512, 0.75), 1563);
  assert_int_equal(net_f3d_buckets(0, 512, 0.75), 1), assert_int_equal(net_f3d_buckets(2600, 512, 1.0), 6);
  /* past PSH's limit: one more than it, which psh_params_check refuses (no wrap to a small count) */
  assert_int_equal(net_f3d_buckets((size_t)PSH_NB_MAX * 512u, 512, 0.1), PSH_NB_MAX + 1u);
  cfg.bucket_fill = 0.75;
  assert_int_equal(net_flash3d_shape_get(&s, &cfg, &in, &err), HX_OK);
  /* level 0: ceil(2600 / 384) = 7; the pooled bounds (U + min(nb, U)) / 2 of the larger cloud: 1303, 653, 327,
   * 164 rows, ceil(U / 384) = 4, 2, 1, 1 buckets */
  assert_int_equal(s.lv[0].nb, 7);
  assert_int_equal(s.lv[1].max_cloud, 1303), assert_int_equal(s.lv[1].nb, 4);
  assert_int_equal(s.lv[2].max_cloud, 653), assert_int_equal(s.lv[2].nb, 2);
  assert_int_equal(s.lv[3].nb, 1), assert_int_equal(s.lv[4].nb, 1);
  cfg.bucket_fill = 0.05;
  assert_int_equal(net_flash3d_shape_get(&s, &cfg, &in, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "bucket fill 0.05"));
  cfg.bucket_fill = 0.0;
  cfg.rehash = 0;
  assert_int_equal(net_flash3d_shape_get(&s, &cfg, &in, &err), HX_OK);
  /* no PSH past level 0: windows of 512 rows over each cloud's bound, (U + min(nb, U)) / 2 of the larger cloud:
   * 1304, 653, 327, 164 rows in 3, 2, 1, 1 windows; scopes of 8, shifts unscaled */
  assert_false(s.lv[1].hashed);
  assert_int_equal(s.lv[1].max_cloud, 1304), assert_int_equal(s.lv[1].nb, 3);
  assert_int_equal(s.lv[2].max_cloud, 653), assert_int_equal(s.lv[2].nb, 2);
  assert_int_equal(s.lv[3].nb, 1), assert_int_equal(s.lv[4].nb, 1);
  for (int l = 1; l < 5; l++) assert_int_equal(s.lv[l].scope, 8), assert_int_equal(s.lv[l].max_bucket, 512);
  battn_plan_kind kind;
  uint32_t value;
  net_flash3d_block_plan(&cfg, &s.lv[2], 0, 2, 1, &kind, &value); /* level 2 encoder block 1: swin 5 */
  assert_int_equal(kind, BATTN_PLAN_SWIN), assert_int_equal(value, 5);
  net_flash3d_block_plan(&cfg, &s.lv[0], 0, 0, 1, &kind, &value);
  assert_int_equal(kind, BATTN_PLAN_STRIDE), assert_int_equal(value, 2);
  /* the bounds hold for the real rows, both ways, and with buckets filled to 0.6 (not powers of two) */
  assert_int_equal(net_flash3d_config(&cfg, "flash3d-tiny", &err), HX_OK);
  for (int rh = 0; rh < 3; rh++) {
    cfg.rehash = rh > 0;
    cfg.bucket_fill = rh == 2 ? 0.6 : 0.0;
    net_f3d_layouts lay;
    assert_int_equal(net_flash3d_shape_get(&s, &cfg, &in, &err), HX_OK);
    assert_int_equal(net_flash3d_layouts_cpu(&lay, &cfg, &in, &err), HX_OK);
    assert_int_equal(lay.L, 3), assert_int_equal(lay.B, 2);
    for (int l = 0; l < 3; l++) {
      assert_true(lay.lv[l].rows <= s.lv[l].bound_rows);
      assert_true(lay.lv[l].rows > 0);
      assert_int_equal(lay.lv[l].nb, s.lv[l].nb);
      for (uint32_t g = 0; g < 2 * lay.lv[l].nb; g++) assert_true(lay.lv[l].bucket_count[g] <= s.lv[l].max_bucket);
      if (l > 0 && !rh) { /* pool order kept; each cloud cut into full windows, one partial, then empty ones */
        const net_f3d_layout *ly = &lay.lv[l];
        for (uint32_t r = 0; r < ly->rows; r++) assert_int_equal(ly->perm[r], r);
        uint32_t row = 0;
        for (uint32_t cl = 0; cl < 2; cl++) {
          int short_seen = 0;
          for (uint32_t w = 0; w < ly->nb; w++) {
            const uint32_t g = cl * ly->nb + w;
            assert_int_equal(ly->bucket_start[g], row);
            if (short_seen) assert_int_equal(ly->bucket_count[g], 0);
            short_seen |= ly->bucket_count[g] < s.lv[l].max_bucket;
            row += ly->bucket_count[g];
          }
        }
        assert_int_equal(row, ly->rows);
        assert_int_equal(ly->bucket_count[0], s.lv[l].max_bucket); /* cloud 0 has more than one window of rows */
      }
    }
    assert_int_equal(lay.lv[0].rows, 4100);
    net_flash3d_layouts_free(&lay);
  }
  tnet_cloud_free(&c);
}

/* The GPU forward's spare cloud (net_flash3d_gpu.c): a pooled level is laid out for its rows bound, the rows past
 * the real ones given to the PSH as one more cloud. That is sound only if the real clouds' layout does not depend on
 * the spare cloud, and if the pooling plan over B * nb + 1 buckets (the last count 0) ends at the real rows' total.
 * Both checked on the reference PSH, every hash. */
static void test_spare_cloud(void **state) {
  (void)state;
  hx_err err;
  tnet_cloud c;
  const size_t sizes[2] = {1300, 2100}, spare = 77;
  tnet_cloud_uniform(&c, sizes, 2, 5);
  const uint32_t n = (uint32_t)c.n, N = n + (uint32_t)spare;
  float *xyz = malloc((size_t)N * 12);
  assert_non_null(xyz);
  memcpy(xyz, c.xyz, (size_t)n * 12);
  for (uint32_t i = n; i < N; i++)
    for (int a = 0; a < 3; a++) xyz[3 * i + (uint32_t)a] = (float)(30.0 * hx_rng_unit(8, 0, 3 * i + (uint64_t)a));
  const uint32_t off2[3] = {0, 1300, n}, off3[4] = {0, 1300, n, N};
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    psh_params p;
    psh_params_default(&p);
    p.hash = (psh_hash)h, p.cap = 64, p.nb = psh_auto_buckets(2100, 64), p.voxel = 0.1f, p.seed = 17;
    const uint32_t nbt = 2 * p.nb;
    uint32_t *b2 = malloc(N * 4), *o2 = malloc(N * 4), *s2 = malloc(N * 4), *p2 = malloc(N * 4);
    uint32_t *b3 = malloc(N * 4), *o3 = malloc(N * 4), *s3 = malloc(N * 4), *p3 = malloc(N * 4);
    uint32_t *c2 = malloc(3 * p.nb * 4 + 4), *t2 = malloc(3 * p.nb * 4 + 4), *c3 = malloc(3 * p.nb * 4 + 4);
    uint32_t *t3 = malloc(3 * p.nb * 4 + 4), *os = malloc(3 * p.nb * 4 + 4), *oc = malloc(3 * p.nb * 4 + 4);
    assert_true(b2 && o2 && s2 && p2 && b3 && o3 && s3 && p3 && c2 && t2 && c3 && t3 && os && oc);
    psh_out out2 = {b2, o2, c2, t2, s2, p2, NULL, NULL}, out3 = {b3, o3, c3, t3, s3, p3, NULL, NULL};
    psh_in in2 = {xyz, off2, 2, n}, in3 = {xyz, off3, 3, N};
    assert_int_equal(psh_run_cpu(&out2, &in2, &p, &err), HX_OK);
    assert_int_equal(psh_run_cpu(&out3, &in3, &p, &err), HX_OK);
    assert_memory_equal(p2, p3, (size_t)n * 4);
    assert_memory_equal(c2, c3, (size_t)nbt * 4);
    assert_memory_equal(t2, t3, (size_t)nbt * 4);
    /* the plan over the real buckets plus one empty one ends at the real rows' pooled total */
    uint32_t total = 0, total1 = 0;
    assert_int_equal(bpool_plan_cpu(os, oc, &total, c3, nbt, NET_F3D_RHO, &err), HX_OK);
    c3[nbt] = 0;
    assert_int_equal(bpool_plan_cpu(os, oc, &total1, c3, nbt + 1, NET_F3D_RHO, &err), HX_OK);
    assert_int_equal(total, total1);
    assert_int_equal(os[nbt], total);
    free(b2), free(o2), free(s2), free(p2), free(b3), free(o3), free(s3), free(p3);
    free(c2), free(t2), free(c3), free(t3), free(os), free(oc);
  }
  free(xyz);
  tnet_cloud_free(&c);
}

/* ---- the tiny forward ------------------------------------------------------------------------------------- */

static int tiny_setup(void **state) {
  const size_t sizes[2] = {1200, 2000};
  return tnet_tiny_setup(state, "flash3d-tiny", sizes, 2, 0);
}

static int outputs_equal(const net_output *a, const net_output *b) {
  if (a->n != b->n || a->classes != b->classes || a->n_levels != b->n_levels) return 0;
  if (memcmp(a->logits, b->logits, a->n * a->classes * sizeof(float))) return 0;
  for (size_t k = 0; k < a->n_levels; k++)
    if (a->level_rows[k] != b->level_rows[k] || a->level_C[k] != b->level_C[k] ||
        memcmp(a->level[k], b->level[k], a->level_rows[k] * a->level_C[k] * sizeof(float)))
      return 0;
  return 1;
}

static void expect_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) fail_msg("value %zu is %g", i, (double)x[i]);
}

static void test_tiny_forward(void **state) {
  tnet_tiny *t = *state;
  hx_err err;
  net_input in = tnet_cloud_input(&t->c, 9);
  net_output a, b;
  assert_int_equal(net_flash3d_forward_cpu(&a, &t->cfg, &t->p, &in, 1, &err), HX_OK);
  assert_int_equal(a.n, t->c.n), assert_int_equal(a.classes, 16);
  expect_finite(a.logits, a.n * a.classes);
  assert_int_equal(a.n_levels, 6);
  const char *names[6] = {"enc0", "enc1", "enc2", "dec2", "dec1", "dec0"};
  const int chans[6] = {16, 32, 64, 64, 32, 32};
  for (int k = 0; k < 6; k++) {
    assert_string_equal(a.level_name[k], names[k]);
    assert_int_equal(a.level_C[k], chans[k]);
    expect_finite(a.level[k], a.level_rows[k] * a.level_C[k]);
  }
  assert_int_equal(a.level_rows[0], t->c.n), assert_int_equal(a.level_rows[5], t->c.n);
  assert_true(a.level_rows[1] >= t->c.n / 2 && a.level_rows[1] < t->c.n);
  assert_int_equal(a.level_rows[2], a.level_rows[3]);
  double ss = 0; /* logits are not degenerate */
  for (size_t i = 0; i < a.n * a.classes; i++) ss += (double)a.logits[i] * (double)a.logits[i];
  assert_true(ss / (double)(a.n * a.classes) > 1e-4);
  /* deterministic for a seed */
  assert_int_equal(net_flash3d_forward_cpu(&b, &t->cfg, &t->p, &in, 1, &err), HX_OK);
  assert_true(outputs_equal(&a, &b));
  net_output_free(&b);
  /* another PSH seed: other buckets, other logits */
  net_input in2 = tnet_cloud_input(&t->c, 10);
  assert_int_equal(net_flash3d_forward_cpu(&b, &t->cfg, &t->p, &in2, 0, &err), HX_OK);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&b);
  net_output_free(&a);
}

/* The forward on psh_run_cpu's layouts is the plain forward, bit for bit; broken layouts are refused. */
static void test_tiny_layouts(void **state) {
  tnet_tiny *t = *state;
  hx_err err;
  net_input in = tnet_cloud_input(&t->c, 9);
  for (int rh = 0; rh < 2; rh++) {
    t->cfg.rehash = rh;
    net_f3d_layouts lay;
    net_output a, b;
    assert_int_equal(net_flash3d_layouts_cpu(&lay, &t->cfg, &in, &err), HX_OK);
    assert_int_equal(net_flash3d_forward_cpu(&a, &t->cfg, &t->p, &in, 1, &err), HX_OK);
    assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 1, &err), HX_OK);
    assert_true(outputs_equal(&a, &b));
    net_output_free(&b);
    /* a perm that repeats a row */
    net_f3d_layout *l1 = &lay.lv[rh ? 1 : 0];
    const uint32_t keep = l1->perm[1];
    l1->perm[1] = l1->perm[0];
    assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 0, &err), HX_EINVAL);
    assert_non_null(strstr(err.msg, "perm"));
    l1->perm[1] = keep;
    /* a bucket over capacity (rows moved between the first two buckets of cloud 0) */
    l1->bucket_count[0] += 64, l1->bucket_count[1] -= 64, l1->bucket_start[1] += 64;
    assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 0, &err), HX_EINVAL);
    l1->bucket_count[0] -= 64, l1->bucket_count[1] += 64, l1->bucket_start[1] -= 64;
    /* a level without a PSH of its own that disagrees with its windows: a perm, then a window boundary moved */
    if (!rh) {
      lay.lv[2].perm[0] = 1, lay.lv[2].perm[1] = 0;
      assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 0, &err), HX_ECHECK);
      lay.lv[2].perm[0] = 0, lay.lv[2].perm[1] = 1;
      net_f3d_layout *w = &lay.lv[1];
      assert_true(w->bucket_count[0] >= 2);
      w->bucket_count[0] -= 1, w->bucket_start[1] -= 1, w->bucket_count[1] += 1;
      assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 0, &err), HX_ECHECK);
      assert_non_null(strstr(err.msg, "windows"));
      w->bucket_count[0] += 1, w->bucket_start[1] += 1, w->bucket_count[1] -= 1;
    }
    /* another valid layout of level 0 (two rows of one bucket swapped): runs, and is not the same forward */
    const uint32_t g = lay.lv[0].bucket_start[0];
    assert_true(lay.lv[0].bucket_count[0] >= 2);
    const uint32_t x0 = lay.lv[0].perm[g];
    lay.lv[0].perm[g] = lay.lv[0].perm[g + 1], lay.lv[0].perm[g + 1] = x0;
    assert_int_equal(net_flash3d_forward_cpu_layouts(&b, &t->cfg, &t->p, &in, &lay, 0, &err), HX_OK);
    expect_finite(b.logits, b.n * b.classes);
    net_output_free(&b);
    net_output_free(&a);
    net_flash3d_layouts_free(&lay);
  }
  t->cfg.rehash = 1;
}

/* Rehash off runs and differs from rehash on, and so does a bucket fill of 0.6; every level is live: the deepest
 * weights and a BN statistic move the logits. */
static void test_tiny_rehash_and_depth(void **state) {
  tnet_tiny *t = *state;
  hx_err err;
  net_input in = tnet_cloud_input(&t->c, 9);
  net_output a, b;
  assert_int_equal(net_flash3d_forward_cpu(&a, &t->cfg, &t->p, &in, 0, &err), HX_OK);
  t->cfg.rehash = 0;
  assert_int_equal(net_flash3d_forward_cpu(&b, &t->cfg, &t->p, &in, 0, &err), HX_OK);
  t->cfg.rehash = 1;
  expect_finite(b.logits, b.n * b.classes);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&b);
  t->cfg.bucket_fill = 0.6; /* buckets not a power of two: runs, and a different layout gives other logits */
  assert_int_equal(net_flash3d_forward_cpu(&b, &t->cfg, &t->p, &in, 0, &err), HX_OK);
  t->cfg.bucket_fill = 0.0;
  expect_finite(b.logits, b.n * b.classes);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&b);
  const char *deep[3] = {"module_tree.middle.submodule.middle.submodule.middle.proj.weight",
                         "module_tree.middle.submodule.middle.submodule.encoder_blocks.1.mlp.mlp.fc2_weight",
                         "module_tree.middle.unpooling.proj_skip.norm.running_var"};
  for (int k = 0; k < 3; k++) {
    net_tensor *w = (net_tensor *)net_params_find(&t->p, deep[k]);
    if (!w) fail_msg("missing %s", deep[k]);
    const float keep = w->data[0];
    w->data[0] = keep * 1.5f + 0.25f;
    assert_int_equal(net_flash3d_forward_cpu(&b, &t->cfg, &t->p, &in, 0, &err), HX_OK);
    w->data[0] = keep;
    assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
    net_output_free(&b);
  }
  net_output_free(&a);
}

static void test_tiny_bad_inputs(void **state) {
  tnet_tiny *t = *state;
  hx_err err;
  net_output o;
  net_input in = tnet_cloud_input(&t->c, 9);
  in.grid_size = 0;
  assert_int_equal(net_flash3d_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &err), HX_EINVAL);
  in = tnet_cloud_input(&t->c, 9);
  const float keep = t->c.xyz[7];
  t->c.xyz[7] = NAN;
  assert_int_equal(net_flash3d_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "point 2"));
  t->c.xyz[7] = keep;
  size_t off[3] = {0, 2000, 4000}; /* does not end at n */
  in.offset = off;
  assert_int_equal(net_flash3d_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &err), HX_EINVAL);
  in = tnet_cloud_input(&t->c, 9);
  net_config bad = t->cfg;
  bad.enc_heads[1] = 3;
  assert_int_equal(net_flash3d_forward_cpu(&o, &bad, &t->p, &in, 0, &err), HX_EINVAL);
  net_config ptv3;
  assert_int_equal(net_config_named(&ptv3, "ptv3-tiny", &err), HX_OK);
  assert_int_equal(net_flash3d_forward_cpu(&o, &ptv3, &t->p, &in, 0, &err), HX_EINVAL);
}

/* A state_dict as the public code's module tree holds it (num_batches_tracked beside every BatchNorm,
 * TransformerEngine's _extra_state for every module of a block) loads with those entries ignored and counted,
 * and gives the forward of the saved weights. */
static void test_tiny_state_dict(void **state) {
  tnet_tiny *t = *state;
  net_input in = tnet_cloud_input(&t->c, 8);
  tnet_state_dict_roundtrip(&t->cfg, &t->p, &in, 1, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_shape),
      cmocka_unit_test(test_spare_cloud),
      cmocka_unit_test_setup_teardown(test_tiny_forward, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_layouts, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_rehash_and_depth, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_bad_inputs, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_state_dict, tiny_setup, tnet_tiny_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
