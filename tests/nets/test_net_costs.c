/*
 * test_net_costs.c - the cost model of both forwards (nets/net_costs.c) on the CPU structures of the tiny
 * configurations, against figures computed here by hand from the shapes: the qkv and CPE GEMM FLOPs of PTv3-tiny
 * (2 P C 3C per block on its P patch slots, 2 pairs C C + 2 n C C), its stem convolution (2 pairs 4 16), attention over single-patch
 * clouds (4 n^2 C per block, n <= patch) and over padded multi-patch clouds (4 C K sum_p), Flash3D-tiny's Linear
 * FLOPs and PSH bytes, attention over one-bucket clouds (4 C n_c^2 per cloud and block) and its bound
 * (rows x scope rows) on larger clouds; on every case the components sum to the "forward" entry, the names are the
 * hook categories; bad arguments are refused. And the memory breakdown's bookkeeping (net_mem_add): parts merged by
 * label and kind, allocations rounded as the arena rounds them, the overflow part, kinds and parts summing to the
 * total. With rates, the floors summed operation by operation: the same FLOPs and bytes, every non-attention
 * operation's floor counted once under the bound that takes it (so a component's sum lies between the most and the
 * sum of its GEMM and memory times, and reaches past the most where its operations are bound differently), the
 * attention operations' bytes apart, and NaN without rates.
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

/* ---- helpers ------------------------------------------------------------------------------------------------ */

static const net_cost *find(const net_cost *c, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].name, name) == 0) return &c[i];
  fail_msg("no cost entry %s", name);
  return NULL;
}

/* The entries are the expected components in NET_COMPONENTS' order, then "forward" holding their sums. */
static void check_list(const net_cost *c, size_t n, const char *const *names, size_t n_names) {
  assert_int_equal(n, n_names + 1);
  for (size_t i = 0; i < n_names; i++) assert_string_equal(c[i].name, names[i]);
  assert_string_equal(c[n - 1].name, "forward");
  double g = 0, a = 0, b = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    assert_true(c[i].gemm_flops >= 0 && c[i].attn_flops >= 0 && c[i].bytes > 0);
    g += c[i].gemm_flops, a += c[i].attn_flops, b += c[i].bytes;
  }
  assert_true(fabs(g - c[n - 1].gemm_flops) <= 1e-12 * c[n - 1].gemm_flops);
  assert_true(fabs(a - c[n - 1].attn_flops) <= 1e-12 * c[n - 1].attn_flops);
  assert_true(fabs(b - c[n - 1].bytes) <= 1e-12 * c[n - 1].bytes);
  assert_true(c[n - 1].gemm_flops > 0 && c[n - 1].attn_flops > 0);
  /* only attention has attention FLOPs */
  for (size_t i = 0; i + 1 < n; i++)
    if (strcmp(c[i].name, "attn") != 0) assert_true(c[i].attn_flops == 0.0);
    else assert_true(c[i].gemm_flops == 0.0);
}

/* ---- PTv3 --------------------------------------------------------------------------------------------------- */

static const char *const ptv3_names[] = {"serialize", "cpe", "norm", "qkv",  "attn",  "gather",
                                         "proj",      "mlp", "pool", "unpool", "embed", "head"};

typedef struct ptv3_case {
  net_config cfg;
  tnet_cloud c;
  net_ptv3_struct s;
  net_ptv3_cost_shape cs;
  net_cost cost[NET_COSTS_MAX];
  size_t n;
} ptv3_case;

static void ptv3_run(ptv3_case *t, const size_t *sizes, uint32_t B) {
  hx_err err;
  assert_int_equal(net_config_named(&t->cfg, "ptv3-tiny", &err), HX_OK);
  /* the costs below are written for the block as PTv3 runs it, conv then Linear; the fold (the default) is
   * asserted against them */
  assert_int_equal(t->cfg.cpe_fold, 1);
  t->cfg.cpe_fold = 0;
  tnet_cloud_voxels(&t->c, sizes, B, 21);
  const net_input in = tnet_cloud_input(&t->c, 5);
  if (net_ptv3_struct_build(&t->s, &t->cfg, &in, 1, &err) != HX_OK) fail_msg("%s", err.msg);
  assert_int_equal(net_ptv3_cost_shape_get(&t->cs, &t->s, &err), HX_OK);
  if (net_ptv3_costs_from_shape(&t->cfg, &t->cs, NULL, t->cost, NET_COSTS_MAX, &t->n, &err) != HX_OK)
    fail_msg("%s", err.msg);
  check_list(t->cost, t->n, ptv3_names, sizeof ptv3_names / sizeof *ptv3_names);
}

static void ptv3_free(ptv3_case *t) {
  net_ptv3_struct_free(&t->s);
  tnet_cloud_free(&t->c);
}

/* Blocks of width C on level l: (encoder depth, C) and, below the last level, (decoder depth, C). */
typedef struct side { int depth; double C; } side;
static int ptv3_sides(const net_config *cfg, int l, side *s) {
  s[0].depth = cfg->enc_depth[l], s[0].C = cfg->enc_channels[l];
  if (l == cfg->levels - 1) return 1;
  s[1].depth = cfg->dec_depth[l], s[1].C = cfg->dec_channels[l];
  return 2;
}

static void test_ptv3_gemm(void **state) {
  (void)state;
  static const size_t sizes[2] = {700, 450};
  ptv3_case t;
  memset(&t, 0, sizeof t);
  ptv3_run(&t, sizes, 2);
  const net_config *cfg = &t.cfg;
  double qkv = 0, qkv_bytes = 0, cpe = 0;
  for (int l = 0; l < cfg->levels; l++) {
    const double n = (double)t.s.lv[l].n, pairs = (double)t.s.lv[l].map.pairs, P = (double)t.s.lv[l].sum_p;
    assert_true(pairs >= n && pairs <= 27.0 * n); /* the centre offset pairs every row with itself */
    side sd[2];
    const int ns = ptv3_sides(cfg, l, sd);
    for (int k = 0; k < ns; k++) {
      const double C = sd[k].C;
      qkv += sd[k].depth * 2.0 * P * C * 3.0 * C; /* the qkv Linear of a block, on the patch slots: 2 P C 3C */
      /* norm.1 inside it at C = 32 and 64 (ln_fused, the default): x's rows read by the slots' index, gamma, beta */
      const int lnq = C == 32 || C == 64;
      qkv_bytes += sd[k].depth * (2.0 * (P * C + P * 3.0 * C + 3.0 * C * C + 3.0 * C) + (lnq ? 4.0 * P + 8.0 * C : 0.0));
      cpe += sd[k].depth * (2.0 * pairs * C * C + 2.0 * n * C * C); /* conv on the map's pairs, then Linear(C, C) */
    }
  }
  assert_true(find(t.cost, t.n, "qkv")->gemm_flops == qkv);
  assert_true(find(t.cost, t.n, "qkv")->bytes == qkv_bytes);
  /* gather: per level its padding, the composed indices once per order row a block attends in (ptv3-tiny's level 0
   * has an encoder and a decoder block, both in row 0: one composition), every block's gather.out */
  {
    double want = 0;
    int rows0 = 0;
    for (int l = 0; l < cfg->levels; l++) {
      const double n = (double)t.s.lv[l].n, P = (double)t.s.lv[l].sum_p;
      want += 4.0 * (P + n + (double)t.s.lv[l].n_cu);
      for (int row = 0; row < NET_PTV3_ORDERS; row++) {
        const int used = net_ptv3_row_used(cfg, l, row);
        want += used ? 8.0 * P + 16.0 * n : 0.0;
        if (l == 0) rows0 += used;
      }
      side sd[2];
      const int ns = ptv3_sides(cfg, l, sd);
      for (int k = 0; k < ns; k++) want += sd[k].depth * (2.0 * 2.0 * n * sd[k].C + 4.0 * n);
    }
    assert_int_equal(rows0, 1);
    assert_true(fabs(find(t.cost, t.n, "gather")->bytes - want) <= 1e-12 * want);
  }
  /* the MLP: 16 n C^2 FLOPs either way; bytes of one fused operation at C = 32 and 64 (the hidden row on chip), of
   * two Linears elsewhere and at every width with mlp_fused off. With ln_fused the fused MLP holds norm.2 (y read
   * once: 2 n C, + gamma and beta) and qkv holds norm.1 at C = 32 and 64, so the norm component has only the other
   * blocks' LayerNorms; ln_fused off: every LayerNorm is the norm component's (norm.1 by the slots' index) */
  for (int ln = 1; ln >= 0; ln--)
    for (int fused = 1; fused >= 0; fused--) {
      net_config c = t.cfg;
      c.mlp_fused = fused, c.ln_fused = ln;
      net_cost cm[NET_COSTS_MAX];
      size_t nm = 0;
      hx_err e;
      assert_int_equal(net_ptv3_costs_from_shape(&c, &t.cs, NULL, cm, NET_COSTS_MAX, &nm, &e), HX_OK);
      double mf = 0, mb = 0, nb = 0, qb = 0;
      int seen = 0;
      for (int l = 0; l < cfg->levels; l++) {
        const double n = (double)t.s.lv[l].n, P = (double)t.s.lv[l].sum_p;
        side sd[2];
        const int ns = ptv3_sides(cfg, l, sd);
        for (int k = 0; k < ns; k++) {
          const double C = sd[k].C, H = 4.0 * C;
          const int one = fused && (C == 32 || C == 64), lnm = one && ln, lnq = ln && (C == 32 || C == 64);
          seen |= one;
          mf += sd[k].depth * 16.0 * n * C * C;
          mb += sd[k].depth * (2.0 * (one ? (lnm ? 2.0 : 3.0) * n * C + 2.0 * C * H + H + C
                                          : (n * C + n * H + C * H + H) + (n * H + n * C + H * C + C + n * C)) +
                               (lnm ? 8.0 * C : 0.0));
          nb += sd[k].depth * ((lnq ? 0.0 : 2.0 * 2.0 * P * C + 4.0 * P + 8.0 * C) + (lnm ? 0.0 : 2.0 * 2.0 * n * C + 8.0 * C));
          qb += sd[k].depth * (2.0 * (P * C + P * 3.0 * C + 3.0 * C * C + 3.0 * C) + (lnq ? 4.0 * P + 8.0 * C : 0.0));
        }
      }
      assert_true(seen == fused); /* ptv3-tiny has blocks of 32 and 64 channels */
      assert_true(find(cm, nm, "mlp")->gemm_flops == mf);
      assert_true(fabs(find(cm, nm, "mlp")->bytes - mb) <= 1e-12 * mb);
      assert_true(fabs(find(cm, nm, "norm")->bytes - nb) <= 1e-12 * nb);
      assert_true(fabs(find(cm, nm, "qkv")->bytes - qb) <= 1e-12 * qb);
    }
  assert_true(find(t.cost, t.n, "cpe")->gemm_flops == cpe);
  /* the Linear folded into the convolution (cpe_fold): its 2 n C^2 FLOPs a block gone, its C^2 + C weights and its
   * share of the fused kernel's bytes with them (x += LN(conv) reads t and x, writes x: 3 E n C + 8 C either way) */
  {
    net_config cf = t.cfg;
    cf.cpe_fold = 1;
    net_cost cc[NET_COSTS_MAX];
    size_t nf = 0;
    hx_err e;
    assert_int_equal(net_ptv3_costs_from_shape(&cf, &t.cs, NULL, cc, NET_COSTS_MAX, &nf, &e), HX_OK);
    double lin = 0, wbytes = 0;
    for (int l = 0; l < cfg->levels; l++) {
      side sd[2];
      const int ns = ptv3_sides(cfg, l, sd);
      for (int k = 0; k < ns; k++) {
        const double C = sd[k].C, n = (double)t.s.lv[l].n;
        lin += sd[k].depth * 2.0 * n * C * C;
        /* ptv3-tiny's blocks all run the fused Linear + LN + add (C 16, 32, 64: ln_fused takes 32 and 64) or the
         * Linear and the LN + add apart (16): either way the fold leaves y += LN(t) */
        wbytes += sd[k].depth * (C == 32 || C == 64 ? 2.0 * (C * C + C) : 2.0 * (2.0 * n * C + C * C + C));
      }
    }
    assert_true(find(cc, nf, "cpe")->gemm_flops == cpe - lin);
    assert_true(fabs(find(t.cost, t.n, "cpe")->bytes - find(cc, nf, "cpe")->bytes - wbytes) <=
                1e-12 * find(t.cost, t.n, "cpe")->bytes);
  }
  /* cpe's bytes per block: the fused convolution's floor (each row in and out once, 27 C^2 weights, the fp32 bias),
   * the Linear (C -> C, bias), y += LN as one operation (x and y read, y written, gamma and beta), at C = 32 and 64
   * (ln_fused) the Linear, the LayerNorm and the add as one (its row never stored: 2 E n C fewer); per level past
   * 0 its k = 3 map (level 0's comes with the stem's here) */
  {
    double want = 0;
    assert_true(net_ptv3_maps_paired(cfg));
    for (int l = 0; l < cfg->levels; l++) {
      const double n = (double)t.s.lv[l].n;
      if (l > 0) want += n * (16.0 + 4.0 * 27.0);
      side sd[2];
      const int ns = ptv3_sides(cfg, l, sd);
      for (int k = 0; k < ns; k++) {
        const double C = sd[k].C;
        const double tail = C == 32 || C == 64 ? 2.0 * (3.0 * n * C + C * C + C) + 8.0 * C
                                               : 2.0 * (2.0 * n * C + C * C + C) + 3.0 * 2.0 * n * C + 8.0 * C;
        want += sd[k].depth * (2.0 * (2.0 * n * C + 27.0 * C * C) + 4.0 * C + tail);
      }
    }
    assert_true(fabs(find(t.cost, t.n, "cpe")->bytes - want) <= 1e-12 * want);
  }
  /* level 0 alone: one point more there adds the qkv Linears of its blocks, an encoder and a decoder block of 16
   * channels in ptv3-tiny: 2 x (2 16 48) FLOPs, and nothing to any other level's */
  const double n0 = (double)t.s.n;
  assert_int_equal(cfg->enc_channels[0], 16), assert_int_equal(cfg->dec_channels[0], 16);
  assert_int_equal(cfg->enc_depth[0], 1), assert_int_equal(cfg->dec_depth[0], 1);
  net_ptv3_cost_shape more = t.cs;
  more.lv[0].n++, more.lv[0].sum_p++;
  net_cost c2[NET_COSTS_MAX];
  size_t n2 = 0;
  hx_err err;
  assert_int_equal(net_ptv3_costs_from_shape(cfg, &more, NULL, c2, NET_COSTS_MAX, &n2, &err), HX_OK);
  assert_true(find(c2, n2, "qkv")->gemm_flops - find(t.cost, t.n, "qkv")->gemm_flops == 2.0 * (2.0 * 16 * 48));
  assert_true(find(c2, n2, "attn")->attn_flops == find(t.cost, t.n, "attn")->attn_flops); /* patch_sq unchanged */
  /* the stem in one pass (stem_fused, the default, which takes ptv3-tiny's 4 -> 16): its k = 5 map (4 n 125 bytes)
   * is never written and its BN + GELU (2 E n C) is no pass of its own; the same FLOPs */
  net_config cs1 = t.cfg;
  cs1.stem_fused = 0;
  net_cost cu[NET_COSTS_MAX];
  size_t nu = 0;
  {
    hx_err e;
    assert_true(net_ptv3_stem_fused(&t.cfg) && !net_ptv3_stem_fused(&cs1));
    assert_int_equal(net_ptv3_costs_from_shape(&cs1, &t.cs, NULL, cu, NET_COSTS_MAX, &nu, &e), HX_OK);
    assert_true(find(cu, nu, "embed")->bytes - find(t.cost, t.n, "embed")->bytes == (4.0 * 125.0 + 4.0 * 16.0) * n0);
    assert_true(find(cu, nu, "embed")->gemm_flops == find(t.cost, t.n, "embed")->gemm_flops);
    assert_true(find(cu, nu, "cpe")->bytes == find(t.cost, t.n, "cpe")->bytes);
  }
  /* level 0's k = 3 map comes with the stem's (one pass: embed's bytes hold its 4 n 27 entries, cpe's no map at
   * level 0), unless a rulebook is read there: on v0 (spconv_force 1) it is cpe's own map, 16 + 4 27 bytes a row,
   * and the stem is not in one pass */
  {
    net_config c0 = cs1;
    c0.spconv_force = 1;
    assert_true(spc_variant_by_id(0) && spc_variant_by_id(0)->needs_rule);
    net_cost cv[NET_COSTS_MAX];
    size_t nv = 0;
    hx_err e;
    assert_int_equal(net_ptv3_costs_from_shape(&c0, &t.cs, NULL, cv, NET_COSTS_MAX, &nv, &e), HX_OK);
    assert_true(find(cu, nu, "embed")->bytes - find(cv, nv, "embed")->bytes == 4.0 * 27.0 * n0);
    assert_true(find(cv, nv, "cpe")->bytes - find(t.cost, t.n, "cpe")->bytes == (16.0 + 4.0 * 27.0) * n0);
    c0.stem_fused = 1; /* asked for: the one pass writes level 0's map, which needs a rulebook here */
    assert_true(!net_ptv3_stem_fused(&c0));
    /* the same when only level 0's decoder reads a rulebook (24 channels: v0 is the only variant that takes them) */
    c0 = cs1;
    c0.dec_channels[0] = 24;
    assert_true(spc_variant_best(24, 24, 27)->needs_rule);
    assert_int_equal(net_ptv3_costs_from_shape(&c0, &t.cs, NULL, cv, NET_COSTS_MAX, &nv, &e), HX_OK);
    assert_true(find(cu, nu, "embed")->bytes - find(cv, nv, "embed")->bytes == 4.0 * 27.0 * n0);
  }
  /* the stem: SubMConv3d(4, 16, k = 5) on the stem map's pairs */
  assert_true(find(t.cost, t.n, "embed")->gemm_flops == 2.0 * (double)t.s.stem_map.pairs * 4.0 * 16.0);
  assert_true(find(t.cost, t.n, "head")->gemm_flops == 2.0 * n0 * cfg->dec_channels[0] * cfg->classes);
  /* a pooled level has fewer points than the one above, so pooling's projection is 2 n_{l-1} C_{l-1} C_l */
  double pool = 0;
  for (int l = 1; l < cfg->levels; l++)
    pool += 2.0 * (double)t.s.lv[l - 1].n * cfg->enc_channels[l - 1] * cfg->enc_channels[l];
  assert_true(find(t.cost, t.n, "pool")->gemm_flops == pool);
  /* serialization: xyz 12 + codes 32 + inverses 16 B a point, and 4 orders x 24 B per 8-bit sort pass over
   * 3 depth + 1 key bits (2 clouds): 540 B a point at the 600k clouds' depth 11 */
  const double passes = ceil((3.0 * t.s.lv[0].depth + 1.0) / 8.0);
  assert_true(find(t.cost, t.n, "serialize")->bytes == n0 * (60.0 + 96.0 * passes));
  ptv3_free(&t);
}

/* Attention: every slot attends to its patch (4 H D rows^2 per patch and block). */
static double ptv3_attn_expect(const ptv3_case *t) {
  const net_config *cfg = &t->cfg;
  const double K = cfg->patch;
  double f = 0;
  for (int l = 0; l < cfg->levels; l++) {
    double sq = 0; /* a cloud of m <= K points is one patch of m; a longer one ceil(m / K) patches of K */
    for (uint32_t b = 0; b < t->s.B; b++) {
      const double m = (double)(t->s.lv[l].off[b + 1] - t->s.lv[l].off[b]);
      sq += m <= K ? m * m : ceil(m / K) * K * K;
    }
    side sd[2];
    const int ns = ptv3_sides(cfg, l, sd);
    for (int k = 0; k < ns; k++) f += sd[k].depth * 4.0 * sq * sd[k].C;
  }
  return f;
}

static void test_ptv3_attention(void **state) {
  (void)state;
  /* one cloud within one patch (ptv3-tiny's patch is 64): 4 n^2 D H per block, n the level's points */
  static const size_t one[1] = {60};
  ptv3_case t;
  memset(&t, 0, sizeof t);
  ptv3_run(&t, one, 1);
  assert_int_equal(t.cfg.patch, 64);
  const double n0 = (double)t.s.n, C0 = t.cfg.enc_channels[0];
  double f = 0;
  for (int l = 0; l < t.cfg.levels; l++) {
    const double n = (double)t.s.lv[l].n;
    assert_true(t.s.lv[l].sum_p == t.s.lv[l].n); /* no padding within one patch */
    side sd[2];
    const int ns = ptv3_sides(&t.cfg, l, sd);
    for (int k = 0; k < ns; k++) f += sd[k].depth * 4.0 * n * n * sd[k].C;
  }
  /* level 0's encoder block alone: 4 n0^2 16 (H = 1, D = 16) */
  assert_true(f > 4.0 * n0 * n0 * C0);
  assert_true(find(t.cost, t.n, "attn")->attn_flops == f);
  assert_true(find(t.cost, t.n, "attn")->attn_flops == ptv3_attn_expect(&t));
  ptv3_free(&t);
  /* padded patches: clouds past one patch, and one within */
  static const size_t three[3] = {300, 129, 40};
  memset(&t, 0, sizeof t);
  ptv3_run(&t, three, 3);
  assert_true(t.s.lv[0].sum_p > t.s.lv[0].n);
  assert_true(find(t.cost, t.n, "attn")->attn_flops == ptv3_attn_expect(&t));
  ptv3_free(&t);
}

/* ---- Flash3D ------------------------------------------------------------------------------------------------ */

static const char *const f3d_names[] = {"psh", "norm", "qkv", "attn", "gather", "proj",
                                        "mlp", "pool", "unpool", "embed", "head"};

typedef struct f3d_case {
  net_config cfg;
  tnet_cloud c;
  net_f3d_shape s;
  net_f3d_layouts lay;
  net_cost cost[NET_COSTS_MAX];
  size_t n;
} f3d_case;

static void f3d_run(f3d_case *t, const size_t *sizes, uint32_t B) {
  hx_err err;
  assert_int_equal(net_config_named(&t->cfg, "flash3d-tiny", &err), HX_OK);
  tnet_cloud_voxels(&t->c, sizes, B, 33);
  const net_input in = tnet_cloud_input(&t->c, 8);
  if (net_flash3d_shape_get(&t->s, &t->cfg, &in, &err) != HX_OK) fail_msg("%s", err.msg);
  if (net_flash3d_layouts_cpu(&t->lay, &t->cfg, &in, &err) != HX_OK) fail_msg("%s", err.msg);
  if (net_flash3d_costs_from_layouts(&t->cfg, &t->s, &t->lay, NULL, t->cost, NET_COSTS_MAX, &t->n, &err) != HX_OK)
    fail_msg("%s", err.msg);
  check_list(t->cost, t->n, f3d_names, sizeof f3d_names / sizeof *f3d_names);
}

static void f3d_free(f3d_case *t) {
  net_flash3d_layouts_free(&t->lay);
  tnet_cloud_free(&t->c);
}

static void test_f3d_one_bucket(void **state) {
  (void)state;
  /* clouds within one bucket (flash3d-tiny's bucket is 64): every level has one bucket a cloud, so whatever the
   * block's swin or stride plan, a cloud's rows attend to all of its rows: 4 C n_c^2 per cloud and block */
  static const size_t sizes[2] = {60, 37};
  f3d_case t;
  memset(&t, 0, sizeof t);
  f3d_run(&t, sizes, 2);
  const net_config *cfg = &t.cfg;
  assert_int_equal(cfg->bucket, 64);
  double attn = 0, qkv = 0, psh = 0;
  for (int l = 0; l < cfg->levels; l++) {
    const net_f3d_layout *ly = &t.lay.lv[l];
    assert_int_equal(ly->nb, 1);
    double sq = 0, rows = 0;
    for (uint32_t c = 0; c < 2; c++) sq += (double)ly->bucket_count[c] * ly->bucket_count[c], rows += ly->bucket_count[c];
    assert_true(rows == (double)ly->rows);
    for (int dec = 0; dec < 2; dec++) {
      const double C = dec ? cfg->dec_channels[l] : cfg->enc_channels[l];
      const int depth = dec ? cfg->dec_depth[l] : cfg->enc_depth[l];
      attn += depth * 4.0 * C * sq;
      qkv += depth * 2.0 * rows * C * 3.0 * C;
    }
    assert_true(t.s.lv[l].hashed);
    psh += 32.0 * rows + 8.0 * 2.0 * t.s.lv[l].nb;
  }
  assert_true(find(t.cost, t.n, "attn")->attn_flops == attn);
  assert_true(find(t.cost, t.n, "qkv")->gemm_flops == qkv);
  assert_true(find(t.cost, t.n, "psh")->bytes == psh);
  const double n0 = 97.0;
  assert_true(find(t.cost, t.n, "embed")->gemm_flops == 2.0 * n0 * 4.0 * cfg->enc_channels[0]);
  assert_true(find(t.cost, t.n, "head")->gemm_flops == 2.0 * n0 * cfg->dec_channels[0] * cfg->classes);
  /* the pooling out of level l projects its rows to C_{l+1} and those to level l's skip (C_dec,l wide: the unpooling
   * adds it); the unpooling projects the coarse level's decoder rows (the last level: its middle Linear) */
  double pool = 0, unpool = 0;
  const int L = cfg->levels;
  for (int l = 0; l + 1 < L; l++) {
    const double nl = t.lay.lv[l].rows, n1 = t.lay.lv[l + 1].rows;
    pool += 2.0 * nl * cfg->enc_channels[l + 1] * (cfg->enc_channels[l] + cfg->dec_channels[l]);
    unpool += 2.0 * n1 * cfg->dec_channels[l + 1] * cfg->dec_channels[l];
  }
  unpool += 2.0 * t.lay.lv[L - 1].rows * cfg->enc_channels[L - 1] * cfg->dec_channels[L - 1];
  assert_true(find(t.cost, t.n, "pool")->gemm_flops == pool);
  assert_true(find(t.cost, t.n, "unpool")->gemm_flops == unpool);
  /* the MLP: fc1 (C -> 2 r C) and fc2 (r C -> C) per block, 6 r n C^2 FLOPs */
  double mlp = 0;
  for (int l = 0; l < cfg->levels; l++)
    for (int dec = 0; dec < 2; dec++) {
      const double C = dec ? cfg->dec_channels[l] : cfg->enc_channels[l];
      mlp += (dec ? cfg->dec_depth[l] : cfg->enc_depth[l]) * 6.0 * cfg->mlp_ratio * t.lay.lv[l].rows * C * C;
    }
  assert_true(find(t.cost, t.n, "mlp")->gemm_flops == mlp);
  /* the same FLOPs on every MLP path; the bytes fall from the unfused path (fc1's 2H-wide row written and read, the
   * SwiGLU output written and read) to fc1 + SwiGLU as one operation (mlp_fused 2; flash3d-tiny's 32 and 64
   * channels take it) to the whole MLP as one (1, at those widths) */
  double bytes[3];
  for (int f = 0; f < 3; f++) {
    net_config c = t.cfg;
    c.mlp_fused = f;
    net_cost cm[NET_COSTS_MAX];
    size_t nm = 0;
    hx_err e;
    assert_int_equal(net_flash3d_costs_from_layouts(&c, &t.s, &t.lay, NULL, cm, NET_COSTS_MAX, &nm, &e), HX_OK);
    assert_true(find(cm, nm, "mlp")->gemm_flops == mlp);
    bytes[f] = find(cm, nm, "mlp")->bytes;
  }
  assert_true(bytes[1] < bytes[2] && bytes[2] < bytes[0]);
  /* the LayerNorm inside the whole-MLP kernel (ln_fused, the default) saves, per block it runs in, its own pass (2 E
   * n C + 8 C) and the second read of y (E n C), and adds gamma and beta (8 C): 6 n C bytes; ln_fused off is the
   * separate pass everywhere */
  {
    net_config c = t.cfg;
    c.ln_fused = 0;
    net_cost cm[NET_COSTS_MAX];
    size_t nm = 0;
    hx_err e;
    assert_int_equal(net_flash3d_costs_from_layouts(&c, &t.s, &t.lay, NULL, cm, NET_COSTS_MAX, &nm, &e), HX_OK);
    double saved = 0;
    for (int l = 0; l < cfg->levels; l++)
      for (int dec = 0; dec < 2; dec++) {
        const int C = dec ? cfg->dec_channels[l] : cfg->enc_channels[l];
        if (nl_mlp_gpu_takes((size_t)C, (size_t)(cfg->mlp_ratio * C), NL_MLP_SWIGLU))
          saved += (dec ? cfg->dec_depth[l] : cfg->enc_depth[l]) * 6.0 * t.lay.lv[l].rows * C;
      }
    assert_true(saved > 0);
    assert_true(fabs(find(cm, nm, "mlp")->bytes - bytes[1] - saved) <= 1e-12 * bytes[1]);
  }
  f3d_free(&t);
}

static void test_f3d_many_buckets(void **state) {
  (void)state;
  /* several buckets and scopes: each block's rows attend to at most scope x bucket rows, and at least to their
   * own bucket's share (sum over scopes of rows^2 >= rows^2 / scopes, Cauchy-Schwarz, scopes <= buckets) */
  static const size_t sizes[2] = {1500, 700};
  f3d_case t;
  memset(&t, 0, sizeof t);
  f3d_run(&t, sizes, 2);
  const net_config *cfg = &t.cfg;
  double hi = 0, lo = 0;
  for (int l = 0; l < cfg->levels; l++) {
    const double rows = t.lay.lv[l].rows, nb = 2.0 * t.lay.lv[l].nb;
    const double scope_rows = (double)t.s.lv[l].scope * t.s.lv[l].max_bucket;
    for (int dec = 0; dec < 2; dec++) {
      const double C = dec ? cfg->dec_channels[l] : cfg->enc_channels[l];
      const int depth = dec ? cfg->dec_depth[l] : cfg->enc_depth[l];
      hi += depth * 4.0 * C * rows * scope_rows;
      lo += depth * 4.0 * C * rows * rows / nb;
    }
  }
  assert_true(t.lay.lv[0].nb > (uint32_t)t.s.lv[0].scope); /* more than one scope a cloud at level 0 */
  const double a = find(t.cost, t.n, "attn")->attn_flops;
  assert_true(a <= hi && a >= lo);
  f3d_free(&t);
}

/* ---- refusals ----------------------------------------------------------------------------------------------- */

static void test_bad(void **state) {
  (void)state;
  hx_err err;
  static const size_t sizes[1] = {200};
  ptv3_case t;
  memset(&t, 0, sizeof t);
  ptv3_run(&t, sizes, 1);
  net_cost small[4];
  size_t n = 99;
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &t.cs, NULL, small, 4, &n, &err), HX_EINVAL);
  assert_int_equal(n, 13); /* 12 components and "forward" */
  net_ptv3_cost_shape cs = t.cs;
  cs.L = 2;
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &cs, NULL, t.cost, NET_COSTS_MAX, &n, &err), HX_EINVAL);
  net_config f3d;
  assert_int_equal(net_config_named(&f3d, "flash3d-tiny", &err), HX_OK);
  assert_int_equal(net_ptv3_costs_from_shape(&f3d, &t.cs, NULL, t.cost, NET_COSTS_MAX, &n, &err), HX_EINVAL);
  /* a structure without kernel maps */
  net_ptv3_struct bare;
  const net_input in = tnet_cloud_input(&t.c, 5);
  assert_int_equal(net_ptv3_struct_build(&bare, &t.cfg, &in, 0, &err), HX_OK);
  assert_int_equal(net_ptv3_cost_shape_get(&cs, &bare, &err), HX_EINVAL);
  net_ptv3_struct_free(&bare);
  ptv3_free(&t);
  assert_int_equal(net_gpu_costs(NULL, NULL, small, 4, &n, &err), HX_EINVAL);
  assert_int_equal(n, 0);
}

/* The per-operation floors of one cost list c (with rates q) against the same list without rates (c0). Returns the
 * largest (op sum - the most of the component's GEMM and memory times) / op sum over the components: > 0 where a
 * component's operations are bound differently. */
static double op_floor_props(const net_cost *c, const net_cost *c0, size_t n, const net_cost_rates *q) {
  double fwd_g = 0.0, fwd_m = 0.0, fwd_a = 0.0, most_gap = 0.0;
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(c[i].name, c0[i].name);
    assert_true(c[i].gemm_flops == c0[i].gemm_flops && c[i].attn_flops == c0[i].attn_flops &&
                c[i].bytes == c0[i].bytes);
    assert_true(isnan(c0[i].op_gemm_s) && isnan(c0[i].op_mem_s) && isnan(c0[i].attn_bytes));
    assert_true(c[i].op_gemm_s >= 0.0 && c[i].op_mem_s >= 0.0 && c[i].attn_bytes >= 0.0);
    if (i + 1 == n) break;
    fwd_g += c[i].op_gemm_s, fwd_m += c[i].op_mem_s, fwd_a += c[i].attn_bytes;
    const double tg = c[i].gemm_flops / q->gemm_flops_s, tm = (c[i].bytes - c[i].attn_bytes) / q->copy_bytes_s;
    const double op = c[i].op_gemm_s + c[i].op_mem_s, most = tg > tm ? tg : tm;
    if (strcmp(c[i].name, "attn") == 0) { /* attention operations: their bytes apart, no GEMM or memory floor */
      assert_true(c[i].attn_bytes == c[i].bytes && op == 0.0);
      continue;
    }
    assert_true(c[i].attn_bytes == 0.0);
    assert_true(op >= most * (1.0 - 1e-12) && op <= (tg + tm) * (1.0 + 1e-12));
    assert_true(c[i].op_gemm_s <= tg * (1.0 + 1e-12) && c[i].op_mem_s <= tm * (1.0 + 1e-12));
    if ((op - most) / op > most_gap) most_gap = (op - most) / op;
  }
  const net_cost *f = &c[n - 1];
  assert_string_equal(f->name, "forward");
  assert_true(fabs(f->op_gemm_s - fwd_g) <= 1e-12 * f->op_gemm_s && fabs(f->op_mem_s - fwd_m) <= 1e-12 * f->op_mem_s);
  assert_true(fabs(f->attn_bytes - fwd_a) <= 1e-12 * f->attn_bytes && f->attn_bytes > 0.0);
  return most_gap;
}

static void test_op_floors(void **state) {
  (void)state;
  static const size_t sizes[2] = {3000, 1200};
  /* an H200's measured balance (858 TFLOP/s, 4157 GB/s), then a GEMM rate so high that every operation is bound by
   * memory, then a bandwidth so high that every operation with GEMM FLOPs is bound by them */
  const net_cost_rates real = {858.3e12, 4157.1e9}, gemm_free = {1e30, 4157.1e9}, copy_free = {858.3e12, 1e30};
  ptv3_case t;
  memset(&t, 0, sizeof t);
  ptv3_run(&t, sizes, 2);
  net_cost c[NET_COSTS_MAX];
  size_t n = 0;
  hx_err err;
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &t.cs, &real, c, NET_COSTS_MAX, &n, &err), HX_OK);
  assert_int_equal(n, t.n);
  /* PTv3's xCPE: convolutions bound by GEMM beside LayerNorm passes bound by memory */
  assert_true(op_floor_props(c, t.cost, n, &real) > 0.0);
  assert_true(find(c, n, "cpe")->op_gemm_s > 0.0 && find(c, n, "cpe")->op_mem_s > 0.0);
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &t.cs, &gemm_free, c, NET_COSTS_MAX, &n, &err), HX_OK);
  op_floor_props(c, t.cost, n, &gemm_free);
  for (size_t i = 0; i + 1 < n; i++)
    assert_true(c[i].op_gemm_s < 1e-12 &&
                fabs(c[i].op_mem_s - (c[i].bytes - c[i].attn_bytes) / gemm_free.copy_bytes_s) <= 1e-12 * c[i].op_mem_s);
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &t.cs, &copy_free, c, NET_COSTS_MAX, &n, &err), HX_OK);
  op_floor_props(c, t.cost, n, &copy_free);
  for (size_t i = 0; i + 1 < n; i++)
    assert_true(fabs(c[i].op_gemm_s - c[i].gemm_flops / copy_free.gemm_flops_s) <= 1e-12 * c[i].op_gemm_s);
  /* a rate that is not positive leaves the floors NaN */
  const net_cost_rates bad = {0.0, 4157.1e9};
  assert_int_equal(net_ptv3_costs_from_shape(&t.cfg, &t.cs, &bad, c, NET_COSTS_MAX, &n, &err), HX_OK);
  assert_true(isnan(c[0].op_gemm_s) && isnan(c[n - 1].attn_bytes));
  ptv3_free(&t);

  f3d_case u;
  memset(&u, 0, sizeof u);
  f3d_run(&u, sizes, 2);
  assert_int_equal(net_flash3d_costs_from_layouts(&u.cfg, &u.s, &u.lay, &real, c, NET_COSTS_MAX, &n, &err), HX_OK);
  assert_int_equal(n, u.n);
  op_floor_props(c, u.cost, n, &real);
  f3d_free(&u);
}

/* net_mem_add: what net_gpu_memory's sizing passes record, allocation by allocation. */
static void test_mem_add(void **state) {
  (void)state;
  net_mem *m = calloc(1, sizeof *m);
  assert_non_null(m);
  net_mem_add(m, "a", NET_MEM_WORK, 1000);      /* 1024 */
  net_mem_add(m, "a", NET_MEM_WORK, 0);         /* a zero-byte buffer is still one 256-byte allocation */
  net_mem_add(m, "a", NET_MEM_LEVELS, 256);     /* the same label under another kind: its own part */
  net_mem_add(m, "b", NET_MEM_WEIGHTS, 257);    /* 512 */
  net_mem_add(m, "c", NET_MEM_KINDS, 4096);     /* no such kind: not recorded */
  assert_int_equal(m->n_parts, 3);
  assert_string_equal(m->part[0].label, "a");
  assert_int_equal(m->part[0].count, 2);
  assert_int_equal(m->part[0].bytes, 1280);
  assert_int_equal(m->part[1].kind, NET_MEM_LEVELS);
  assert_int_equal(m->part[1].bytes, 256);
  assert_int_equal(m->part[2].bytes, 512);
  assert_int_equal(m->kind[NET_MEM_WORK], 1280);
  assert_int_equal(m->kind[NET_MEM_WEIGHTS], 512);
  assert_int_equal(m->total, 1280 + 256 + 512);
  /* past NET_MEM_PARTS labels the last part becomes "other" and keeps counting; totals stay whole */
  static char names[NET_MEM_PARTS + 8][8];
  for (int i = 0; i < NET_MEM_PARTS + 8; i++) {
    snprintf(names[i], sizeof names[i], "x%d", i);
    net_mem_add(m, names[i], NET_MEM_STRUCTURE, 256);
  }
  assert_int_equal(m->n_parts, NET_MEM_PARTS);
  assert_string_equal(m->part[NET_MEM_PARTS - 1].label, "other");
  size_t parts = 0, kinds = 0;
  for (uint32_t i = 0; i < m->n_parts; i++) parts += m->part[i].bytes;
  for (int k = 0; k < NET_MEM_KINDS; k++) kinds += m->kind[k];
  assert_int_equal(m->total, 1280 + 256 + 512 + (NET_MEM_PARTS + 8) * 256);
  assert_int_equal(parts, m->total);
  assert_int_equal(kinds, m->total);
  assert_string_equal(net_mem_kind_name(NET_MEM_WEIGHTS), "weights");
  assert_string_equal(net_mem_kind_name(NET_MEM_SCRATCH), "scratch");
  assert_null(net_mem_kind_name(NET_MEM_KINDS));
  net_mem_add(NULL, "a", NET_MEM_WORK, 1); /* no breakdown wanted: nothing happens */
  free(m);
}

/* net_mlp_chunk_rows: the rows of an MLP's hidden chunk under net_config's mlp_chunk. */
static void test_mlp_chunk_rows(void **state) {
  (void)state;
  net_config c;
  memset(&c, 0, sizeof c);
  assert_int_equal(net_mlp_chunk_rows(&c, 600000, 384), 600000); /* 0: every row at once */
  c.mlp_chunk = NET_MLP_CHUNK;
  assert_int_equal(net_mlp_chunk_rows(&c, 1000, 384), 1000);     /* the level fits: one chunk */
  assert_int_equal(net_mlp_chunk_rows(&c, 0, 384), 0);
  const size_t r = net_mlp_chunk_rows(&c, 600000, 384);          /* 87381 rows fit: 87296, a multiple of 256 */
  assert_int_equal(r, 87296);
  assert_true(r * 384 <= NET_MLP_CHUNK && (r + 256) * 384 > NET_MLP_CHUNK);
  for (size_t H = 64; H <= 8192; H *= 2) { /* every width: a multiple of 256 rows within the budget */
    const size_t k = net_mlp_chunk_rows(&c, 10000000, H);
    assert_int_equal(k % 256, 0);
    assert_true(k * H <= NET_MLP_CHUNK && (k + 256) * H > NET_MLP_CHUNK);
  }
  c.mlp_chunk = 1; /* past the budget: 256 rows, fewer only where the level has fewer */
  assert_int_equal(net_mlp_chunk_rows(&c, 5000, 64), 256);
  assert_int_equal(net_mlp_chunk_rows(&c, 200, 64), 200);
  net_config d;
  hx_err err = {HX_OK, ""};
  assert_int_equal(net_config_named(&d, "ptv3", &err), HX_OK);
  assert_true(d.mlp_chunk == NET_MLP_CHUNK);
  assert_int_equal(net_config_named(&d, "flash3d-46m", &err), HX_OK);
  assert_true(d.mlp_chunk == NET_MLP_CHUNK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptv3_gemm),
      cmocka_unit_test(test_ptv3_attention),
      cmocka_unit_test(test_f3d_one_bucket),
      cmocka_unit_test(test_f3d_many_buckets),
      cmocka_unit_test(test_bad),
      cmocka_unit_test(test_op_floors),
      cmocka_unit_test(test_mem_add),
      cmocka_unit_test(test_mlp_chunk_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
