/*
 * test_net_ptv3.c - PTv3-m1 (nets/net_ptv3.c): the parameter count and names of "ptv3" against Pointcept's
 * model (46,159,312 counted values, docs ptv3.md section 4), the fp32 patch attention against the kernels'
 * double reference, and the "ptv3-tiny" CPU forward: shapes, finiteness, determinism for a seed, equivariance
 * under a permutation of the input rows, refusal of bad inputs, and a safetensors round trip of a state_dict
 * with BatchNorm's num_batches_tracked entries (ignored, counted); the BatchNorm folded into a Linear as the GPU
 * forwards pack it (pack.c); a cloud's logits independent of its batch at equal depth; and the check's arithmetic
 * (net_check_logits, net_check.c) on logits in hand; the serialization orders net_ptv3_orders names for each
 * level against the codes the structure holds.
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
#include <unistd.h>

#include "baselines/baselines.h"
#include "kernels/kernels.h"
#include "nets/nets_internal.h"
#include "tests/nets/test_net_util.h"

/* ---- parameters of "ptv3" ------------------------------------------------------------------------------------- */

static void test_ptv3_params(void **state) {
  (void)state;
  net_config cfg;
  assert_int_equal(net_config_named(&cfg, "ptv3", NULL), HX_OK);
  net_params p = {0};
  assert_int_equal(net_params_init(&p, &cfg, 7, NULL), HX_OK);
  /* ptv3.md section 4, counted from Pointcept's code: stem 16,064 + encoder 38,648,576 + decoder 7,493,632 +
   * head 1,040; BatchNorm running statistics are buffers, not parameters */
  assert_int_equal(net_params_count(&p), 46159312ull);
  assert_int_equal(cfg.patch, 1024);
  /* ptv3-patch4096: the same network (every tensor's name and shape, so the same weights load) over patches of 4096 */
  net_config c4;
  assert_int_equal(net_config_named(&c4, "ptv3-patch4096", NULL), HX_OK);
  assert_int_equal(c4.patch, 4096);
  net_config same = c4;
  same.patch = cfg.patch;
  memcpy(same.name, cfg.name, sizeof same.name);
  assert_memory_equal(&same, &cfg, sizeof cfg); /* nothing else differs */
  net_params p4 = {0};
  assert_int_equal(net_params_init(&p4, &c4, 7, NULL), HX_OK);
  assert_int_equal(p4.n, p.n);
  for (size_t i = 0; i < p.n; i++) {
    assert_string_equal(p4.t[i].name, p.t[i].name);
    assert_int_equal(p4.t[i].ndim, p.t[i].ndim);
    assert_memory_equal(p4.t[i].shape, p.t[i].shape, (size_t)p.t[i].ndim * sizeof p.t[i].shape[0]);
  }
  net_params_free(&p4);
  /* 449 parameter tensors (head 2, stem 3, 22 blocks x 18, 4 poolings x 4, 4 unpoolings x 8) and 13 BatchNorms
   * x 2 statistics (num_batches_tracked omitted) */
  assert_int_equal(p.n, 449 + 26);
  /* the state_dict keys of DefaultSegmentorV2(PT-v3m1) and their shapes (spconv 2: [out, k, k, k, in]) */
  assert_string_equal(p.t[0].name, "seg_head.weight");
  tnet_expect_shape(&p, "seg_head.weight", 2, (const int64_t[]){16, 64}, 1);
  tnet_expect_shape(&p, "seg_head.bias", 1, (const int64_t[]){16}, 1);
  tnet_expect_shape(&p, "backbone.embedding.stem.conv.weight", 5, (const int64_t[]){32, 5, 5, 5, 4}, 1);
  tnet_expect_shape(&p, "backbone.embedding.stem.norm.weight", 1, (const int64_t[]){32}, 1);
  tnet_expect_shape(&p, "backbone.embedding.stem.norm.running_var", 1, (const int64_t[]){32}, 0);
  tnet_expect_shape(&p, "backbone.enc.enc0.block0.cpe.0.weight", 5, (const int64_t[]){32, 3, 3, 3, 32}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc0.block0.cpe.0.bias", 1, (const int64_t[]){32}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc0.block1.cpe.1.weight", 2, (const int64_t[]){32, 32}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc0.block1.cpe.2.bias", 1, (const int64_t[]){32}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc1.down.proj.weight", 2, (const int64_t[]){64, 32}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc1.down.norm.0.running_mean", 1, (const int64_t[]){64}, 0);
  tnet_expect_shape(&p, "backbone.enc.enc3.block5.attn.qkv.weight", 2, (const int64_t[]){768, 256}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc3.block5.attn.proj.bias", 1, (const int64_t[]){256}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc4.block1.norm1.0.weight", 1, (const int64_t[]){512}, 1);
  tnet_expect_shape(&p, "backbone.enc.enc4.block1.mlp.0.fc1.weight", 2, (const int64_t[]){2048, 512}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec3.up.proj.0.weight", 2, (const int64_t[]){256, 512}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec3.up.proj.1.running_var", 1, (const int64_t[]){256}, 0);
  tnet_expect_shape(&p, "backbone.dec.dec3.up.proj_skip.0.weight", 2, (const int64_t[]){256, 256}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec0.up.proj.0.weight", 2, (const int64_t[]){64, 64}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec0.up.proj_skip.0.weight", 2, (const int64_t[]){64, 32}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec0.block1.norm2.0.bias", 1, (const int64_t[]){64}, 1);
  tnet_expect_shape(&p, "backbone.dec.dec0.block1.mlp.0.fc2.weight", 2, (const int64_t[]){64, 256}, 1);
  assert_null(net_params_find(&p, "backbone.enc.enc0.down.proj.weight"));
  assert_null(net_params_find(&p, "backbone.enc.enc0.block2.cpe.0.weight"));
  assert_null(net_params_find(&p, "backbone.embedding.stem.norm.num_batches_tracked"));
  assert_null(net_params_find(&p, "backbone.dec.dec4.up.proj.0.weight"));
  /* init ranges: Linear U(+-1/sqrt(in)), conv U(+-1/sqrt(in k^3)), BN var near 1 */
  const net_tensor *t = net_params_find(&p, "backbone.enc.enc3.block5.attn.qkv.weight");
  float mx = 0;
  for (size_t k = 0; k < 768 * 256; k++) mx = fmaxf(mx, fabsf(t->data[k]));
  assert_true(mx <= 1.0f / 16.0f && mx > 0.9f / 16.0f);
  t = net_params_find(&p, "backbone.embedding.stem.norm.running_var");
  for (size_t k = 0; k < 32; k++) assert_true(t->data[k] >= 0.8f && t->data[k] <= 1.2f);
  net_params_free(&p);
  /* a parameter set of another configuration is refused by name */
  net_config tiny;
  assert_int_equal(net_config_named(&tiny, "ptv3-tiny", NULL), HX_OK);
  assert_int_equal(net_params_init(&p, &tiny, 7, NULL), HX_OK);
  net_ptv3_view *v = malloc(sizeof *v);
  hx_err e;
  assert_int_equal(net_ptv3_view_get(v, &cfg, &p, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "seg_head.weight"));
  assert_int_equal(net_ptv3_view_get(v, &tiny, &p, NULL), HX_OK);
  free(v);
  net_params_free(&p);
}

/* ---- fp32 patch attention against the kernels' double reference ----------------------------------------------- */

static void test_patch_attention(void **state) {
  (void)state;
  const int H = 2, D = 16, C = H * D;
  const size_t offset[3] = {0, 150, 230};
  size_t sum_p = 0, n_cu = 0;
  assert_int_equal(shuf_pad_sizes(&sum_p, &n_cu, offset, 2, 64, NULL), HX_OK);
  assert_int_equal(sum_p, 192 + 128); /* 150 -> 3 patches of 64 (the last borrows 42 slots); 80 -> 2 */
  int32_t *cu = malloc(n_cu * sizeof *cu);
  int64_t *cu64 = malloc(n_cu * sizeof *cu64);
  assert_int_equal(shuf_padding_cpu(NULL, NULL, cu, offset, 2, 64, NULL), HX_OK);
  for (size_t k = 0; k < n_cu; k++) cu64[k] = cu[k];
  const size_t m = sum_p * 3 * (size_t)C;
  float *qkv = malloc(m * sizeof *qkv), *o = malloc(sum_p * (size_t)C * sizeof *o);
  uint16_t *h = malloc(m * sizeof *h), *ho = malloc(sum_p * (size_t)C * sizeof *ho);
  for (size_t k = 0; k < m; k++) { /* fp16-representable values, so both sides see the same inputs */
    h[k] = battn_from_float(BATTN_F16, (float)(4.0 * hx_rng_unit(5, 1, k) - 2.0));
    qkv[k] = battn_to_float(BATTN_F16, h[k]);
  }
  const float scale = 0.25f; /* (C/H)^-0.5 at D = 16 */
  assert_int_equal(net_ptv3_patch_attn_cpu(o, qkv, cu, n_cu - 1, H, D, scale, NULL), HX_OK);
  battn_plan plan;
  assert_int_equal(battn_plan_patches(&plan, cu64, (uint32_t)(n_cu - 1), 32, NULL), HX_OK); /* 2 pieces a patch */
  battn_params bp;
  battn_params_init(&bp, (int64_t)sum_p, H, D, BATTN_F16, &plan);
  bp.q_row_stride = bp.k_row_stride = bp.v_row_stride = 3 * C;
  bp.q = h, bp.k = h + C, bp.v = h + 2 * C, bp.o = ho;
  bp.scale = scale;
  assert_int_equal(battn_forward_cpu(&bp, &plan, NULL), HX_OK);
  double worst = 0;
  for (size_t k = 0; k < sum_p * (size_t)C; k++) {
    const double ref = battn_to_float(BATTN_F16, ho[k]);
    worst = fmax(worst, fabs((double)o[k] - ref) / (1.0 + fabs(ref)));
  }
  assert_true(worst < 1e-3); /* fp16 rounding of the reference's output: 2^-11 relative */
  /* the (patch, head) units run over the CPUs: each patch on its own gives the same bits as all of them at once */
  float *o1 = malloc(sum_p * (size_t)C * sizeof *o1);
  memset(o1, 0xff, sum_p * (size_t)C * sizeof *o1);
  for (size_t p = 0; p + 1 < n_cu; p++)
    assert_int_equal(net_ptv3_patch_attn_cpu(o1, qkv, cu + p, 1, H, D, scale, NULL), HX_OK);
  assert_memory_equal(o, o1, sum_p * (size_t)C * sizeof *o);
  free(o1);
  /* a patch boundary matters: attention over the whole cloud instead gives a different result */
  const int32_t whole[3] = {0, 192, (int32_t)sum_p};
  float *o2 = malloc(sum_p * (size_t)C * sizeof *o2);
  assert_int_equal(net_ptv3_patch_attn_cpu(o2, qkv, whole, 2, H, D, scale, NULL), HX_OK);
  assert_true(memcmp(o, o2, 192 * (size_t)C * sizeof *o) != 0);
  battn_plan_free(&plan);
  free(cu), free(cu64), free(qkv), free(o), free(o2), free(h), free(ho);
}

/* ---- the tiny network's CPU forward ---------------------------------------------------------------------------- */

static int tiny_setup(void **state) {
  const size_t sizes[2] = {1500, 700}; /* 1500 = 23 patches of 64 + 28: the last patch borrows 36 points */
  return tnet_tiny_setup(state, "ptv3-tiny", sizes, 2, 1);
}

static void test_tiny_forward(void **state) {
  tnet_tiny *t = *state;
  net_input in = tnet_cloud_input(&t->c, 42);
  net_output a, b;
  hx_err e;
  assert_int_equal(net_forward_cpu(&a, &t->cfg, &t->p, &in, 1, &e), HX_OK);
  assert_int_equal(a.n, t->c.n);
  assert_int_equal(a.classes, 16);
  double ss = 0;
  for (size_t k = 0; k < a.n * a.classes; k++) {
    assert_true(isfinite(a.logits[k]));
    ss += (double)a.logits[k] * (double)a.logits[k];
  }
  assert_true(ss > 0);
  /* levels: enc0, enc1, enc2, dec1, dec0 with the level sizes of the structure */
  assert_int_equal(a.n_levels, 5);
  static const char *const names[5] = {"enc0", "enc1", "enc2", "dec1", "dec0"};
  static const size_t Cs[5] = {16, 32, 64, 32, 16};
  for (int l = 0; l < 5; l++) {
    assert_string_equal(a.level_name[l], names[l]);
    assert_int_equal(a.level_C[l], Cs[l]);
    assert_non_null(a.level[l]);
  }
  assert_int_equal(a.level_rows[0], t->c.n);
  assert_int_equal(a.level_rows[4], t->c.n);
  assert_int_equal(a.level_rows[3], a.level_rows[1]);
  assert_true(a.level_rows[1] < t->c.n && a.level_rows[2] < a.level_rows[1] && a.level_rows[2] > 0);
  /* deterministic for a seed; another seed draws other order shuffles */
  assert_int_equal(net_forward_cpu(&b, &t->cfg, &t->p, &in, 0, NULL), HX_OK);
  assert_memory_equal(a.logits, b.logits, a.n * a.classes * sizeof(float));
  assert_null(b.level[0]);
  net_output_free(&b);
  in.seed = 43;
  int perm42[4], perm43[4];
  sfc_row_perm(perm42, 4, 42, 0), sfc_row_perm(perm43, 4, 43, 0);
  assert_true(memcmp(perm42, perm43, sizeof perm42) != 0); /* the seeds do draw different level-0 orders */
  assert_int_equal(net_forward_cpu(&b, &t->cfg, &t->p, &in, 0, NULL), HX_OK);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&a), net_output_free(&b);
}

/* Serialization sorts by voxel code, so permuting the rows inside each cloud permutes the logits identically:
 * every patch, kernel-map neighbourhood and pooled parent holds the same points in the same order. */
static void test_tiny_permutation(void **state) {
  tnet_tiny *t = *state;
  const tnet_cloud *c = &t->c;
  const size_t n = c->n;
  size_t *pi = malloc(n * sizeof *pi); /* new row i holds old row pi[i] */
  float *xyz = malloc(n * 3 * sizeof *xyz), *feat = malloc(n * 4 * sizeof *feat);
  for (size_t i = 0; i < n; i++) pi[i] = i;
  for (uint32_t b = 0; b < c->B; b++)
    for (size_t i = c->offset[b + 1] - 1; i > c->offset[b]; i--) {
      const size_t j = c->offset[b] + hx_rng_u64(9, b, i) % (i - c->offset[b] + 1), tmp = pi[i];
      pi[i] = pi[j], pi[j] = tmp;
    }
  for (size_t i = 0; i < n; i++) {
    memcpy(xyz + 3 * i, c->xyz + 3 * pi[i], 3 * sizeof *xyz);
    memcpy(feat + 4 * i, c->feat + 4 * pi[i], 4 * sizeof *feat);
  }
  net_input in = tnet_cloud_input(c, 5), inp = in;
  inp.xyz = xyz, inp.feat = feat;
  net_output a, b;
  assert_int_equal(net_forward_cpu(&a, &t->cfg, &t->p, &in, 0, NULL), HX_OK);
  assert_int_equal(net_forward_cpu(&b, &t->cfg, &t->p, &inp, 0, NULL), HX_OK);
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < 16; k++) {
      const double x = a.logits[pi[i] * 16 + k], y = b.logits[i * 16 + k];
      worst = fmax(worst, fabs(x - y) / (1.0 + fabs(x)));
    }
  assert_true(worst <= 1e-5);
  net_output_free(&a), net_output_free(&b);
  free(pi), free(xyz), free(feat);
}

/* A cloud's logits do not depend on the other clouds of its batch where the batch's serialization depth is its own
 * (the depth is the batch's largest grid coordinate's bit length, as Pointcept computes it; this fixture's clouds
 * span the same 48-cell box): cloud 1 alone gives the logits it gets as the second cloud of the batch, bit for bit.
 * nets_gpu_slow leans on this to check rows far into a batch against the CPU forward of their cloud alone. */
static void test_tiny_batch_independence(void **state) {
  tnet_tiny *t = *state;
  const tnet_cloud *c = &t->c;
  net_input in = tnet_cloud_input(c, 7), one = in;
  const size_t o1 = c->offset[1];
  const size_t off1[2] = {0, c->n - o1};
  one.xyz = c->xyz + 3 * o1, one.feat = c->feat + 4 * o1, one.offset = off1, one.B = 1, one.n = c->n - o1;
  assert_int_equal(tnet_depth(in.xyz, in.offset, in.B, 0.05), tnet_depth(one.xyz, one.offset, 1, 0.05));
  net_output a, b;
  assert_int_equal(net_forward_cpu(&a, &t->cfg, &t->p, &in, 0, NULL), HX_OK);
  assert_int_equal(net_forward_cpu(&b, &t->cfg, &t->p, &one, 0, NULL), HX_OK);
  assert_int_equal(b.n, one.n);
  assert_memory_equal(a.logits + o1 * a.classes, b.logits, b.n * b.classes * sizeof(float));
  net_output_free(&a), net_output_free(&b);
}

/* net_ptv3_orders names what each level's code rows hold, as net --save writes it for a Pointcept run: on a batch of
 * two clouds, every row r of every level of the structure the forward builds equals sfc_encode_cpu of that level's
 * grid in orders[r] (a pooled level's codes are its parents' >> 3, not re-encoded, so this also asserts both curves
 * nest); two seeds name different rows; a Flash3D model and a level out of range are refused. */
static void test_tiny_orders(void **state) {
  tnet_tiny *t = *state;
  for (uint64_t seed = 7; seed <= 8; seed++) {
    net_input in = tnet_cloud_input(&t->c, seed);
    net_ptv3_struct st;
    hx_err e;
    assert_int_equal(net_ptv3_struct_build(&st, &t->cfg, &in, 0, &e), HX_OK);
    assert_int_equal(st.L, t->cfg.levels);
    for (int l = 0; l < st.L; l++) {
      const net_ptv3_level *lv = &st.lv[l];
      int o[4], seen = 0;
      assert_int_equal(net_ptv3_orders(&t->cfg, seed, l, o, &e), HX_OK);
      uint64_t *code = malloc(lv->n * sizeof *code);
      assert_non_null(code);
      for (int r = 0; r < 4; r++) {
        assert_true(o[r] >= 0 && o[r] < 4);
        seen |= 1 << o[r];
        const sfc_order one = (sfc_order)o[r];
        assert_int_equal(sfc_encode_cpu(code, lv->grid, lv->batch, lv->n, lv->depth, &one, 1, &e), HX_OK);
        assert_memory_equal(code, lv->code + (size_t)r * lv->n, lv->n * sizeof *code);
      }
      assert_int_equal(seen, 15); /* a permutation of the four orders */
      free(code);
    }
    net_ptv3_struct_free(&st);
  }
  int a[4], b[4], diff = 0;
  for (int l = 0; l < t->cfg.levels; l++) {
    assert_int_equal(net_ptv3_orders(&t->cfg, 7, l, a, NULL), HX_OK);
    assert_int_equal(net_ptv3_orders(&t->cfg, 8, l, b, NULL), HX_OK);
    diff |= memcmp(a, b, sizeof a) != 0;
  }
  assert_true(diff);
  hx_err e;
  assert_int_equal(net_ptv3_orders(&t->cfg, 7, t->cfg.levels, a, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "level"));
  assert_int_equal(net_ptv3_orders(&t->cfg, 7, -1, a, NULL), HX_EINVAL);
  net_config f3d;
  assert_int_equal(net_config_named(&f3d, "flash3d-tiny", NULL), HX_OK);
  assert_int_equal(net_ptv3_orders(&f3d, 7, 0, a, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "not a PTv3 model"));
}

/* net_check_logits: relative L2 against the reference, max |diff|, reference rms, non-finite values counted and
 * failing, the dtype's tolerance as the limit on either side of it. */
static void test_check_logits(void **state) {
  (void)state;
  const float ref[4] = {3.0f, 0.0f, -4.0f, 0.0f};
  float got[4] = {3.0f, 0.0f, -4.0f, 0.04f}; /* |diff| 0.04 over ||ref|| 5: 8e-3 */
  net_check_report r;
  assert_true(net_check_logits(&r, got, ref, 4, NET_F16));
  assert_true(fabs(r.rel_l2 - 8e-3) < 1e-6 && fabs(r.max_abs - 0.04) < 1e-6 && fabs(r.ref_rms - 2.5) < 1e-6);
  assert_true(r.tol == net_check_tolerance(NET_F16) && r.n == 4 && r.nonfinite == 0);
  got[3] = 0.06f; /* 1.2e-2: past fp16's 1e-2, within bf16's 5e-2 */
  assert_false(net_check_logits(&r, got, ref, 4, NET_F16));
  assert_true(net_check_logits(&r, got, ref, 4, NET_BF16));
  got[3] = 0.0f, got[1] = NAN;
  assert_false(net_check_logits(&r, got, ref, 4, NET_BF16));
  assert_true(r.nonfinite == 1 && r.rel_l2 == 0.0);
}

static void test_tiny_bad_inputs(void **state) {
  tnet_tiny *t = *state;
  const tnet_cloud *c = &t->c;
  net_output o;
  hx_err e;
  /* two points of a cloud in one voxel */
  float *xyz = malloc(c->n * 3 * sizeof *xyz);
  memcpy(xyz, c->xyz, c->n * 3 * sizeof *xyz);
  memcpy(xyz + 3 * 10, xyz + 3 * 11, 3 * sizeof *xyz);
  net_input in = tnet_cloud_input(c, 1);
  in.xyz = xyz;
  assert_int_equal(net_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "voxel"));
  assert_null(o.logits);
  /* malformed offsets, an empty cloud */
  in = tnet_cloud_input(c, 1);
  size_t off[3] = {0, 0, c->n};
  in.offset = off;
  assert_int_equal(net_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &e), HX_EINVAL);
  off[1] = c->n + 1;
  assert_int_equal(net_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &e), HX_EINVAL);
  /* a single point cannot be pooled twice (depth 1 -> 0 -> nothing left) */
  size_t one[2] = {0, 1};
  net_input tiny_in = {c->xyz, c->feat, one, 1, 1, 0.05, 1};
  assert_int_equal(net_forward_cpu(&o, &t->cfg, &t->p, &tiny_in, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "too small"));
  /* a non-finite feature */
  float *feat = malloc(c->n * 4 * sizeof *feat);
  memcpy(feat, c->feat, c->n * 4 * sizeof *feat);
  feat[77] = NAN;
  in = tnet_cloud_input(c, 1);
  in.feat = feat;
  assert_int_equal(net_forward_cpu(&o, &t->cfg, &t->p, &in, 0, &e), HX_EINVAL);
  free(xyz), free(feat);
}

/* The weights written to a safetensors file as Pointcept's state_dict holds them (a num_batches_tracked beside
 * every BatchNorm) and loaded into another parameter set give the same forward; the counters are ignored. */
static void test_tiny_roundtrip(void **state) {
  tnet_tiny *t = *state;
  net_input in = tnet_cloud_input(&t->c, 8);
  tnet_state_dict_roundtrip(&t->cfg, &t->p, &in, 0, 1);
}

/* The BatchNorm folded into the Linear before it as the GPU forwards pack it (net_pack_lin with bn: the unpoolings'
 * projections of both networks): W' x + b' against BN(W x + b) in double, within the dtype's rounding of W' and b'
 * (2^-11 in fp16 relative to each term, 2^-8 in bf16); the padded input columns zero; the sizing pass (no host
 * copy) lays out the same bytes. */
static void test_pack_lin_bn(void **state) {
  (void)state;
  enum { IN = 12, PAD = 16, OUT = 24, R = 5 };
  float w[OUT * IN], b[OUT], g[OUT], be[OUT], mu[OUT], var[OUT], x[R * IN];
  for (int i = 0; i < OUT * IN; i++) w[i] = (float)(2.0 * hx_rng_unit(41, 1, (uint64_t)i) - 1.0);
  for (int o = 0; o < OUT; o++) {
    b[o] = (float)(2.0 * hx_rng_unit(41, 2, (uint64_t)o) - 1.0);
    g[o] = (float)(0.5 + 2.0 * hx_rng_unit(41, 3, (uint64_t)o)) * (o % 3 ? 1.0f : -1.0f); /* some scales negative */
    be[o] = (float)(2.0 * hx_rng_unit(41, 4, (uint64_t)o) - 1.0);
    mu[o] = (float)(2.0 * hx_rng_unit(41, 5, (uint64_t)o) - 1.0);
    var[o] = (float)(0.05 + hx_rng_unit(41, 6, (uint64_t)o));
  }
  for (int i = 0; i < R * IN; i++) x[i] = (float)(4.0 * hx_rng_unit(41, 7, (uint64_t)i) - 2.0);
  const net_lin lin = {w, b, IN, OUT};
  const net_norm bn = {g, be, mu, var, OUT};
  const float eps = 1e-3f;
  for (int d = 0; d < 2; d++) {
    const net_dtype dt = d ? NET_BF16 : NET_F16;
    net_pack size = {NULL, NULL, 0, dt};
    net_dlin dl;
    net_pack_lin(&size, &dl, &lin, IN, PAD, OUT, &bn, eps);
    char *host = calloc(size.used, 1);
    assert_non_null(host);
    net_pack k = {host, NULL, 0, dt};
    net_pack_lin(&k, &dl, &lin, IN, PAD, OUT, &bn, eps);
    assert_int_equal(k.used, size.used);
    assert_int_equal(dl.in, PAD), assert_int_equal(dl.out, OUT);
    const uint16_t *wp = (const uint16_t *)(void *)host;
    const uint16_t *bp = (const uint16_t *)(void *)(host + hx_align256(PAD * OUT * 2));
    const double u = d ? 0x1p-8 : 0x1p-11;
    double worst = 0.0;
    for (int o = 0; o < OUT; o++) {
      for (int i = IN; i < PAD; i++) assert_true(wp[o * PAD + i] == 0); /* +0 in either dtype */
      const double s = (double)g[o] / sqrt((double)var[o] + (double)eps), t = (double)be[o] - (double)mu[o] * s;
      for (int r = 0; r < R; r++) {
        double lin_y = (double)b[o], got = (double)net_to_float(dt, bp[o]), bound = fabs(s * (double)b[o] + t);
        for (int i = 0; i < IN; i++) {
          const double xi = (double)x[r * IN + i];
          lin_y += (double)w[o * IN + i] * xi;
          got += (double)net_to_float(dt, wp[o * PAD + i]) * xi;
          bound += fabs(s * (double)w[o * IN + i] * xi);
        }
        const double want = s * lin_y + t, err = fabs(got - want);
        assert_true(err <= u * bound + 1e-6);
        if (err / (u * bound) > worst) worst = err / (u * bound);
      }
    }
    printf("pack lin + bn, %s: worst |err| / bound %.3f\n", net_dtype_name(dt), worst);
    free(host);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pack_lin_bn),
      cmocka_unit_test(test_ptv3_params),
      cmocka_unit_test(test_patch_attention),
      cmocka_unit_test(test_check_logits),
      cmocka_unit_test_setup_teardown(test_tiny_forward, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_permutation, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_batch_independence, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_orders, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_bad_inputs, tiny_setup, tnet_tiny_teardown),
      cmocka_unit_test_setup_teardown(test_tiny_roundtrip, tiny_setup, tnet_tiny_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
