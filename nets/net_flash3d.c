/*
 * net_flash3d.c - the Flash3D backbone (outdoor configuration of the public code) as a plain fp32 C forward:
 * named configurations, parameters under the public code's state_dict names, the per-level shape shared with the
 * GPU forward (net_flash3d_gpu.c), bucket layouts, and the CPU forward on them.
 *
 * The model (docs flash3d-code.md section 10; cruise-automation/Flash3D config/semseg_outdoor.py and
 * liyanc/Flash3DTransformer layers/{flash3d,stage,hourglass,buck_swin,elem_wise}.py):
 *   embed     PSH of the input xyz (voxel = grid_size, XOR-div), then Linear(in_channels, C0) of the
 *             bucket-ordered features                                                    ("enc0/psh", "embed")
 *   stage l   encoder blocks -> middle -> decoder blocks; middle = pool -> stage l+1 -> unpool, and at the
 *             last level Linear(C_enc, C_dec) ("decL/proj")
 *   block     x += proj(BucketSwinAttention(qkv(LN(x))));  x += fc2(SwiGLU(fc1(LN(x))))
 *             qkv Linear(C, 3C) with bias, heads of dim C/H = 16, softmax scale 1/sqrt(16), the block's scope
 *             plan over the level's buckets (schedule below); the MLP is TransformerEngine's LayerNormMLP
 *             (activation "swiglu": fc1 Linear(C, 2 * 4C) -> silu(a) * b of its halves -> fc2 Linear(4C, C))
 *   pool      skip = Linear(C_l, C_{l+1}) on all rows of level l (kept for the unpooling); in-bucket pooling
 *             (bpool: mean, rho 2) of skip over level l's buckets; BatchNorm1d(eps 1e-3) + GELU on the pooled
 *             rows                                                                       ("encL/pool")
 *   unpool    out[row] = GELU(BN(Linear(skip)))[row] + GELU(BN(Linear(down)))[parent(row)]  ("decL/unpool")
 *             (proj_skip: Linear(C_enc[l+1], C_dec[l]) of the pooling's projected skip; proj: Linear(C_dec[l+1],
 *             C_dec[l]) of the coarse level's output, as hourglass.py wires them)
 *   head      seg_head Linear(C_dec0, classes), logits in input row order               ("head")
 * Channels, heads, depths: encoder 32/64/128/256/512, heads C/16, depths 2,2,2,6,2; decoder 64/64/128/128/256,
 * depths 2 (the public config; level l's decoder runs at dec_channels[l], so a config has `levels` decoder
 * stages, one more than PTv3). Swin schedule (kind, shift in buckets), encoder | decoder, from the public config:
 *   level 0 (swin 1, stride 2 | swin 3, swin 5)  level 1 (swin 7, swin 2 | swin 4, swin 6)
 *   level 2 (swin 1, swin 5 | swin 2, swin 6)    level 3 (swin 3, 7, 0, 6, 4, 2 | swin 0, swin 3)
 *   level 4 (swin 5, swin 7 | swin 1, swin 5)
 * Any configuration uses this table: level l takes row l % 5, block b its entry b % (row length), a shift is taken
 * modulo the level's scope (flash3d-tiny's scope 4), a stride as it is. The public code's SwinPlan never passed
 * its shift or stride (flash3d-code.md section 3): here every plan really applies (battn_plan_build).
 *
 * Levels, buckets and rehashing. Level 0 is bucketed by PSH (psh_run_cpu here, a GPU variant there) with
 * nb = psh_auto_buckets(largest cloud, bucket) buckets of `bucket` rows per cloud (or, with cfg->bucket_fill = f,
 * ceil(largest cloud / (bucket f)): net_f3d_buckets). With cfg->rehash (the
 * default) every pooled level runs a PSH of its own pooled points, hashes in turn XOR-div, XOR-mod, Z-order-div,
 * Z-order-mod (level l: the (l % 4)-th), voxel grid_size * 2^l (the pooled clouds' resolution, as PTv3's stride-2
 * pooling grid), seed hx_rng_u64(in->seed, NET_F3D_SEED_STREAM, l); the features follow the permutation and the
 * unpooling maps parents back through it. With rehash = 0 a pooled level runs no PSH, as the public code: its rows
 * stay in pooling order (level l's bucket order) and its "buckets" are fixed windows of `bucket` rows over each
 * cloud's rows (nl_windows_cpu: ceil(cloud bound / bucket) per cloud, the last partial, none across clouds), as the
 * public code cuts its packed sequence into 512-row windows; scopes of `scope` windows and the schedule's shifts as
 * at a hashed level; pooling out of it pools within each window.
 * A pooled level's buckets per cloud come from a bound on its rows, not the rows themselves: a bucket of c rows
 * pools into ceil(c / 2), so the count depends on bucket parities, which the GPU PSH's races may change between
 * runs. The bound U_{l+1} = floor((U_l + min(nb_l, U_l)) / 2) per cloud (U_0 = the cloud's points) holds for any
 * placement; nb_{l+1} = net_f3d_buckets(max over clouds of U_{l+1}, bucket, fill) (windows: ceil(that max /
 * bucket)). CPU and GPU use the same figure, so the GPU's fixed buffers and buckets per cloud fit every run
 * (net_flash3d_gpu.c).
 *
 * CPU/GPU consistency: PSH placement on the GPU may differ from psh_run_cpu's where threads race, and everything
 * after it depends on the layout. The GPU forward object therefore hands out the layouts of its last forward
 * (net_flash3d_gpu_layouts, net_f3d_layouts: per level the rows, buckets per cloud, perm and bucket table), and
 * net_flash3d_forward_cpu_layouts runs this reference on them instead of psh_run_cpu's; net_flash3d_forward_cpu is
 * the same function with psh_run_cpu's layouts. Pooling (members, parents, pooled coordinates) is not part of the
 * layouts: bpool's assignment is deterministic and the GPU's is bit-exact with bpool_assign_cpu on a given layout.
 *
 * Row orders: every level's rows are in pool order (level 0 = input rows; level l+1 = level l's pooling output
 * rows); the forward computes in packed (bucket) order; logits and kept levels come back in pool order.
 *
 * Deviations from the public code, each for equal comparison with PTv3 or because the public code is broken there:
 *  - embedding Linear(4, 32) of (x, y, z, intensity) at the bucket-ordered rows, where the public code embeds
 *    the scattered coordinates only (Linear(3, 32), input features ignored): the same inputs PTv3 takes;
 *  - a seg_head Linear(64, 16) (PTv3's nuScenes head) after the backbone, which the public code does not have;
 *  - bucketed attention windows: on hashed levels buckets are PSH buckets (at most `bucket` rows, clouds kept
 *    apart), where the public code cuts the packed, batch-flattened sequence into fixed 512-row windows that can
 *    straddle clouds (levels without a PSH cut such windows, per cloud);
 *  - swin shifts and strides applied (see above); PSH on full-width voxel codes per cloud (kernels.h);
 *  - pooling by bpool (per bucket, three-step sub-buckets) instead of the 1024-row block pooling with a random
 *    rotation; coarse levels re-hashed by default (the public code never re-buckets);
 *  - inference BatchNorm with running statistics; num_batches_tracked and TransformerEngine's _extra_state keys
 *    (no tensors the forward reads) are not in the parameter set.
 *
 * Parameter names: the state_dict keys of the public Flash3D module itself (no "backbone." prefix: the longest
 * key of 5 levels, module_tree. + 4 x middle.submodule. + decoder_blocks.1.mlp.mlp.layer_norm_weight, is 122
 * characters, and net_tensor names hold 127), plus our seg_head, in registration order:
 *   seg_head.{weight,bias}; psh_scatter.lin.{weight,bias};
 *   stage prefix P_0 = "module_tree.", P_{l+1} = P_l + "middle.submodule.";
 *   P_l + "encoder_blocks.B." / "decoder_blocks.B." + norm.{weight,bias}, bwa.qkv.{weight,bias},
 *     bwa.proj.{weight,bias}, mlp.mlp.{layer_norm_weight,layer_norm_bias,fc1_weight,fc1_bias,fc2_weight,fc2_bias};
 *   l < L-1: P_l + "middle.pooling.proj.{weight,bias}", "middle.pooling.norm.{weight,bias,running_mean,running_var}",
 *     "middle.unpooling.proj.0.{weight,bias}", "middle.unpooling.proj.norm.*", "middle.unpooling.proj_skip.0.*",
 *     "middle.unpooling.proj_skip.norm.*";  l = L-1: P_l + "middle.proj.{weight,bias}".
 *
 * Configurations: "flash3d-public" (above, 19,332,784 parameters with the 4-input embedding and the head);
 * "flash3d-46m" and "flash3d-129m": ONE widening rule, every channel count c (encoder and decoder) becomes
 * 16 * round(c * f / 16) with f = sqrt(target / 19,332,784): the count is nearly quadratic in the widths, so f
 * scales it to the target, and rounding to whole heads of 16 keeps head dim 16. Targets: PTv3's 46,159,312 (gives
 * 45,891,856, -0.58%) and the paper's 129.4M (128,410,784, -0.76%). "flash3d-46m-fill75": flash3d-46m with
 * bucket_fill 0.75 (ceil(rows / 384) buckets at every hashed level instead of the next power of two of rows / 512:
 * the same network and weights, latency in proportion to the points). "flash3d-46m-windows": flash3d-46m with
 * rehash 0 (no PSH past level 0, fixed windows of 512 rows: the public code's layout on the same network and
 * weights). "flash3d-46m-scope2": flash3d-46m with scopes of 2 buckets (1024 keys a query, PTv3's patch, where
 * the paper's configuration attends to 4096: not the paper's network, the same weights at PTv3's attention span,
 * the one change the attention's share of the forward points to). "flash3d-tiny": 3 levels (16/32/64 encoder,
 * 32/32/64 decoder), bucket 64, scope 4, for tests.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f3d_config.h"
#include "nets/nets_internal.h"

#define NET_F3D_SEED_STREAM 0xF3D5EEDull /* PSH seeds: hx_rng_u64(in->seed, this, level) */

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* ---- configurations --------------------------------------------------------------------------------- */

static const int f3d_pub_ec[5] = {32, 64, 128, 256, 512}, f3d_pub_ed[5] = {2, 2, 2, 6, 2};
static const int f3d_pub_dc[5] = {64, 64, 128, 128, 256}, f3d_pub_dd[5] = {2, 2, 2, 2, 2};
#define F3D_TARGET_46M 46159312.0  /* PTv3-m1 nuScenes, counted from its code (ptv3.md section 4) */
#define F3D_TARGET_129M 129.4e6    /* the paper's "equal memory" Flash3D */

static void config_public(net_config *cfg) {
  cfg->levels = 5;
  for (int l = 0; l < 5; l++) {
    cfg->enc_depth[l] = f3d_pub_ed[l], cfg->enc_channels[l] = f3d_pub_ec[l], cfg->enc_heads[l] = f3d_pub_ec[l] / 16;
    cfg->dec_depth[l] = f3d_pub_dd[l], cfg->dec_channels[l] = f3d_pub_dc[l], cfg->dec_heads[l] = f3d_pub_dc[l] / 16;
  }
  cfg->bucket = 512;
  cfg->scope = 8;
}

/* The widening rule: c -> 16 * round(c * f / 16), f = sqrt(target / count(public)), heads c / 16. */
static void config_widen(net_config *cfg, double target) {
  const double f = sqrt(target / (double)net_flash3d_count(cfg));
  for (int l = 0; l < cfg->levels; l++) {
    int *c[2] = {&cfg->enc_channels[l], &cfg->dec_channels[l]}, *h[2] = {&cfg->enc_heads[l], &cfg->dec_heads[l]};
    for (int e = 0; e < 2; e++) {
      long w = 16 * lround((double)*c[e] * f / 16.0);
      *c[e] = (int)(w < 16 ? 16 : w);
      *h[e] = *c[e] / 16;
    }
  }
}

hx_status net_flash3d_config(net_config *cfg, const char *name, hx_err *err) {
  if (!cfg || !name) return hx_errf(err, HX_EINVAL, "flash3d config: NULL argument");
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = 1;
  cfg->in_channels = 4;
  cfg->classes = 16;
  cfg->mlp_ratio = 4;
  cfg->mlp_fused = 1;
  cfg->ln_fused = 1;
  cfg->lt_tune = 1;
  cfg->mlp_chunk = NET_MLP_CHUNK;
  cfg->rehash = 1;
  if (strcmp(name, "flash3d-public") == 0) {
    config_public(cfg);
  } else if (strcmp(name, "flash3d-46m") == 0 || strcmp(name, "flash3d-46m-fill75") == 0 ||
             strcmp(name, "flash3d-46m-windows") == 0 || strcmp(name, "flash3d-46m-scope2") == 0) {
    config_public(cfg);
    config_widen(cfg, F3D_TARGET_46M);
    if (strcmp(name, "flash3d-46m-fill75") == 0) cfg->bucket_fill = 0.75; /* every hashed level 75% full */
    if (strcmp(name, "flash3d-46m-windows") == 0) cfg->rehash = 0;         /* the public code's windows */
    if (strcmp(name, "flash3d-46m-scope2") == 0) cfg->scope = 2;           /* 1024 keys a query, PTv3's patch */
  } else if (strcmp(name, "flash3d-129m") == 0) {
    config_public(cfg);
    config_widen(cfg, F3D_TARGET_129M);
  } else if (strcmp(name, "flash3d-tiny") == 0) {
    /* 3 levels, head dim 16; level 0 has two encoder blocks so the schedule's stride plan runs */
    static const int ed[3] = {2, 1, 2}, ec[3] = {16, 32, 64}, dd[3] = {2, 1, 1}, dc[3] = {32, 32, 64};
    cfg->levels = 3;
    for (int l = 0; l < 3; l++) {
      cfg->enc_depth[l] = ed[l], cfg->enc_channels[l] = ec[l], cfg->enc_heads[l] = ec[l] / 16;
      cfg->dec_depth[l] = dd[l], cfg->dec_channels[l] = dc[l], cfg->dec_heads[l] = dc[l] / 16;
    }
    cfg->bucket = 64;
    cfg->scope = 4;
  } else {
    return hx_errf(err, HX_EINVAL, "flash3d config: unknown name '%s' (flash3d-public, flash3d-46m, "
                   "flash3d-46m-fill75, flash3d-46m-windows, flash3d-46m-scope2, flash3d-129m, flash3d-tiny)", name);
  }
  snprintf(cfg->name, sizeof cfg->name, "%s", name);
  return HX_OK;
}

static hx_status check_config(const net_config *cfg, hx_err *err) {
  if (!cfg || cfg->kind != 1) return hx_errf(err, HX_EINVAL, "flash3d: not a Flash3D configuration");
  if (cfg->levels < 2 || cfg->levels > NET_MAX_LEVELS)
    return hx_errf(err, HX_EINVAL, "flash3d %s: %d levels, want 2..%d", cfg->name, cfg->levels, NET_MAX_LEVELS);
  if (cfg->in_channels < 1 || cfg->classes < 1 || cfg->mlp_ratio < 1)
    return hx_errf(err, HX_EINVAL, "flash3d %s: bad in_channels/classes/mlp_ratio", cfg->name);
  if (cfg->bucket < 16 || cfg->bucket % 16 || cfg->bucket > 4096 || cfg->scope < 1 || cfg->scope > 64)
    return hx_errf(err, HX_EINVAL, "flash3d %s: bucket %d (a multiple of 16 up to 4096), scope %d (1..64)", cfg->name,
                   cfg->bucket, cfg->scope);
  if (cfg->bucket_fill != 0.0 && !(cfg->bucket_fill >= 0.1 && cfg->bucket_fill <= 1.0))
    return hx_errf(err, HX_EINVAL, "flash3d %s: bucket fill %g (0 for the public rule, or 0.1..1)", cfg->name,
                   cfg->bucket_fill);
  for (int l = 0; l < cfg->levels; l++) {
    const int C[2] = {cfg->enc_channels[l], cfg->dec_channels[l]}, H[2] = {cfg->enc_heads[l], cfg->dec_heads[l]};
    const int d[2] = {cfg->enc_depth[l], cfg->dec_depth[l]};
    for (int e = 0; e < 2; e++) {
      const int D = H[e] > 0 && C[e] % H[e] == 0 ? C[e] / H[e] : 0;
      if (C[e] < 16 || C[e] % 16 || (D != 16 && D != 32 && D != 64 && D != 128) || d[e] < 0 ||
          d[e] > NET_F3D_MAX_DEPTH)
        return hx_errf(err, HX_EINVAL, "flash3d %s: level %d %s: channels %d, heads %d, depth %d (channels a multiple "
                       "of 16, head dim 16/32/64/128, depth 0..%d)", cfg->name, l, e ? "decoder" : "encoder", C[e],
                       H[e], d[e], NET_F3D_MAX_DEPTH);
    }
  }
  return HX_OK;
}

uint64_t net_flash3d_count(const net_config *cfg) {
  const uint64_t r = (uint64_t)cfg->mlp_ratio;
  const int L = cfg->levels;
  uint64_t n = 0;
  /* a block: norm 2C, qkv 3C^2 + 3C, proj C^2 + C, LayerNormMLP 2C + 2rC^2 + 2rC + rC^2 + C */
#define F3D_BLOCK(C) ((4 + 3 * r) * (C) * (C) + (9 + 2 * r) * (C))
#define F3D_LIN(i, o) ((i) * (o) + (o))
  n += F3D_LIN((uint64_t)cfg->dec_channels[0], (uint64_t)cfg->classes);
  n += F3D_LIN((uint64_t)cfg->in_channels, (uint64_t)cfg->enc_channels[0]);
  for (int l = 0; l < L; l++) {
    const uint64_t ce = (uint64_t)cfg->enc_channels[l], cd = (uint64_t)cfg->dec_channels[l];
    n += (uint64_t)cfg->enc_depth[l] * F3D_BLOCK(ce) + (uint64_t)cfg->dec_depth[l] * F3D_BLOCK(cd);
    if (l < L - 1) {
      const uint64_t ce1 = (uint64_t)cfg->enc_channels[l + 1], cd1 = (uint64_t)cfg->dec_channels[l + 1];
      n += F3D_LIN(ce, ce1) + 2 * ce1;                       /* pooling proj + BN affine */
      n += F3D_LIN(cd1, cd) + 2 * cd + F3D_LIN(ce1, cd) + 2 * cd; /* unpooling proj, proj_skip + BN affines */
    } else {
      n += F3D_LIN(ce, cd);
    }
  }
#undef F3D_BLOCK
#undef F3D_LIN
  return n;
}

/* ---- parameters: one walk over the state_dict, adding (init) or finding (view) ------------------------ */
/*
 * Initial values: PyTorch's default ranges, U(-1/sqrt(in), 1/sqrt(in)) for Linear weights and biases (the public
 * code's te.Linear would draw N(0, 0.023) and zero biases; the forward does not care); norm affines near their
 * defaults (weight 1 +- 0.1, bias +- 0.1) and BatchNorm statistics near mean 0, var 1 (mean +- 0.1, var in
 * [0.8, 1.2]), so a forward that ignored an affine or the fold would fail its check.
 */

/* XFMR: norm (te.LayerNorm), bwa (qkv, proj: nn.Linear), mlp.mlp (TransformerEngine LayerNormMLP, flat names). */
static hx_status f3d_block(net_walk *w, net_f3d_block *b, int C, int H, int ratio, const char *prefix) {
  const size_t c = (size_t)C, hid = (size_t)C * (size_t)ratio;
  const int64_t sc[1] = {(int64_t)c}, s1w[2] = {(int64_t)(2 * hid), (int64_t)c}, s1b[1] = {(int64_t)(2 * hid)};
  const int64_t s2w[2] = {(int64_t)c, (int64_t)hid};
  const float b1 = (float)(1.0 / sqrt((double)c)), b2 = (float)(1.0 / sqrt((double)hid));
  char q[192];
  b->C = C, b->H = H;
  b->mlp_norm.C = c;
  b->mlp_norm.mean = b->mlp_norm.var = NULL;
  snprintf(q, sizeof q, "%s.norm", prefix);
  HX_TRY(net_walk_layernorm(w, &b->norm, c, q));
  snprintf(q, sizeof q, "%s.bwa.qkv", prefix);
  HX_TRY(net_walk_linear(w, &b->qkv, c, 3 * c, q));
  snprintf(q, sizeof q, "%s.bwa.proj", prefix);
  HX_TRY(net_walk_linear(w, &b->proj, c, c, q));
  HX_TRY(net_walk_tensor(w, &b->mlp_norm.w, NET_INIT_NORM_W, 0, 1, 1, sc, "%s.mlp.mlp.layer_norm_weight", prefix));
  HX_TRY(net_walk_tensor(w, &b->mlp_norm.b, NET_INIT_NORM_B, 0, 1, 1, sc, "%s.mlp.mlp.layer_norm_bias", prefix));
  b->fc1.in = c, b->fc1.out = 2 * hid, b->fc2.in = hid, b->fc2.out = c;
  HX_TRY(net_walk_tensor(w, &b->fc1.w, NET_INIT_UNIFORM, b1, 1, 2, s1w, "%s.mlp.mlp.fc1_weight", prefix));
  HX_TRY(net_walk_tensor(w, &b->fc1.b, NET_INIT_UNIFORM, b1, 1, 1, s1b, "%s.mlp.mlp.fc1_bias", prefix));
  HX_TRY(net_walk_tensor(w, &b->fc2.w, NET_INIT_UNIFORM, b2, 1, 2, s2w, "%s.mlp.mlp.fc2_weight", prefix));
  return net_walk_tensor(w, &b->fc2.b, NET_INIT_UNIFORM, b2, 1, 1, sc, "%s.mlp.mlp.fc2_bias", prefix);
}

/* Stage l under prefix P: encoder_blocks, middle (Hourglass: pooling, unpooling, submodule = stage l+1; or the
 * last level's Linear), decoder_blocks: the registration order of stage.py and hourglass.py. */
static hx_status f3d_stage(net_walk *w, net_f3d_view *v, const net_config *cfg, int l, const char *P) {
  const int L = cfg->levels;
  const size_t ce = (size_t)cfg->enc_channels[l], cd = (size_t)cfg->dec_channels[l];
  char q[192];
  for (int b = 0; b < cfg->enc_depth[l]; b++) {
    snprintf(q, sizeof q, "%sencoder_blocks.%d", P, b);
    HX_TRY(f3d_block(w, &v->enc[l][b], cfg->enc_channels[l], cfg->enc_heads[l], cfg->mlp_ratio, q));
  }
  if (l < L - 1) {
    const size_t ce1 = (size_t)cfg->enc_channels[l + 1], cd1 = (size_t)cfg->dec_channels[l + 1];
    snprintf(q, sizeof q, "%smiddle.pooling.proj", P);
    HX_TRY(net_walk_linear(w, &v->pool[l], ce, ce1, q));
    snprintf(q, sizeof q, "%smiddle.pooling.norm", P);
    HX_TRY(net_walk_batchnorm(w, &v->pool_bn[l], ce1, q));
    snprintf(q, sizeof q, "%smiddle.unpooling.proj.0", P);
    HX_TRY(net_walk_linear(w, &v->up[l], cd1, cd, q));
    snprintf(q, sizeof q, "%smiddle.unpooling.proj.norm", P);
    HX_TRY(net_walk_batchnorm(w, &v->up_bn[l], cd, q));
    snprintf(q, sizeof q, "%smiddle.unpooling.proj_skip.0", P);
    HX_TRY(net_walk_linear(w, &v->up_skip[l], ce1, cd, q));
    snprintf(q, sizeof q, "%smiddle.unpooling.proj_skip.norm", P);
    HX_TRY(net_walk_batchnorm(w, &v->skip_bn[l], cd, q));
    char sub[160];
    const int len = snprintf(sub, sizeof sub, "%smiddle.submodule.", P);
    if (len < 0 || (size_t)len >= sizeof sub) return hx_errf(w->err, HX_EINVAL, "flash3d: module path too long");
    HX_TRY(f3d_stage(w, v, cfg, l + 1, sub));
  } else {
    snprintf(q, sizeof q, "%smiddle.proj", P);
    HX_TRY(net_walk_linear(w, &v->leaf, ce, cd, q));
  }
  for (int b = 0; b < cfg->dec_depth[l]; b++) {
    snprintf(q, sizeof q, "%sdecoder_blocks.%d", P, b);
    HX_TRY(f3d_block(w, &v->dec[l][b], cfg->dec_channels[l], cfg->dec_heads[l], cfg->mlp_ratio, q));
  }
  return HX_OK;
}

static hx_status f3d_walk_all(net_walk *w, net_f3d_view *v, const net_config *cfg) {
  memset(v, 0, sizeof *v);
  HX_TRY(check_config(cfg, w->err));
  HX_TRY(net_walk_linear(w, &v->head, (size_t)cfg->dec_channels[0], (size_t)cfg->classes, "seg_head"));
  HX_TRY(net_walk_linear(w, &v->embed, (size_t)cfg->in_channels, (size_t)cfg->enc_channels[0], "psh_scatter.lin"));
  return f3d_stage(w, v, cfg, 0, "module_tree.");
}

hx_status net_flash3d_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err) {
  if (!p || !cfg) return hx_errf(err, HX_EINVAL, "flash3d params: NULL argument");
  net_f3d_view *v = malloc(sizeof *v);
  if (!v) return hx_errf(err, HX_ENOMEM, "flash3d params: view");
  net_walk w = {p, NULL, seed, 0, err, "flash3d", 0xF3D00000ull};
  hx_status st = f3d_walk_all(&w, v, cfg);
  free(v);
  return st;
}

hx_status net_flash3d_view_get(net_f3d_view *v, const net_config *cfg, const net_params *p, hx_err *err) {
  if (!v || !cfg || !p) return hx_errf(err, HX_EINVAL, "flash3d view: NULL argument");
  net_walk w = {NULL, p, 0, 0, err, "flash3d", 0xF3D00000ull};
  return f3d_walk_all(&w, v, cfg);
}

/* ---- schedule and level shapes ---------------------------------------------------------------------- */

typedef struct f3d_sched {
  uint8_t stride; /* 0: swin, 1: stride */
  uint8_t v;      /* shift or stride */
} f3d_sched;
#define SW(k) {0, k}
#define ST(k) {1, k}
static const f3d_sched f3d_enc_sched[5][6] = {{SW(1), ST(2)}, {SW(7), SW(2)}, {SW(1), SW(5)},
                                              {SW(3), SW(7), SW(0), SW(6), SW(4), SW(2)}, {SW(5), SW(7)}};
static const f3d_sched f3d_dec_sched[5][2] = {{SW(3), SW(5)}, {SW(4), SW(6)}, {SW(2), SW(6)}, {SW(0), SW(3)},
                                              {SW(1), SW(5)}};
static const int f3d_enc_len[5] = {2, 2, 2, 6, 2};
#undef SW
#undef ST

void net_flash3d_block_plan(const net_config *cfg, const net_f3d_level_shape *ls, int dec, int level, int block,
                            battn_plan_kind *kind, uint32_t *value) {
  (void)cfg;
  const int row = level % 5;
  const f3d_sched e = dec ? f3d_dec_sched[row][block % 2] : f3d_enc_sched[row][block % f3d_enc_len[row]];
  if (e.stride) {
    *kind = BATTN_PLAN_STRIDE;
    *value = e.v;
  } else {
    *kind = BATTN_PLAN_SWIN;
    *value = e.v % ls->scope;
  }
}

static const psh_hash f3d_hash_cycle[4] = {PSH_XOR_DIV, PSH_XOR_MOD, PSH_ZORDER_DIV, PSH_ZORDER_MOD};

static hx_status check_input(const net_config *cfg, const net_input *in, hx_err *err) {
  if (!in || !in->offset || !in->xyz || !in->feat) return hx_errf(err, HX_EINVAL, "flash3d: input without arrays");
  if (in->B < 1 || in->n < 1) return hx_errf(err, HX_EINVAL, "flash3d: empty batch (%u clouds, %zu points)", in->B, in->n);
  if (in->n > PSH_MAX_POINTS)
    return hx_errf(err, HX_EINVAL, "flash3d: %zu points exceed the PSH limit of %u", in->n, PSH_MAX_POINTS);
  if (!(in->grid_size > 0.0) || !isfinite(in->grid_size))
    return hx_errf(err, HX_EINVAL, "flash3d: grid size %g must be positive", in->grid_size);
  if (in->offset[0] != 0 || in->offset[in->B] != in->n)
    return hx_errf(err, HX_EINVAL, "flash3d: cloud offsets run from %zu to %zu, want 0 to %zu", in->offset[0],
                   in->offset[in->B], in->n);
  for (uint32_t c = 0; c < in->B; c++)
    if (in->offset[c + 1] < in->offset[c]) return hx_errf(err, HX_EINVAL, "flash3d: cloud offsets decrease at cloud %u", c);
  const size_t C = (size_t)cfg->in_channels;
  for (size_t i = 0; i < in->n; i++) {
    for (int d = 0; d < 3; d++)
      if (!isfinite(in->xyz[3 * i + (size_t)d])) return hx_errf(err, HX_EINVAL, "flash3d: point %zu has a non-finite coordinate", i);
    for (size_t c = 0; c < C; c++)
      if (!isfinite(in->feat[i * C + c])) return hx_errf(err, HX_EINVAL, "flash3d: point %zu has a non-finite feature", i);
  }
  return HX_OK;
}

/* PSH takes any count (the mod hashes fall back from a mask to a remainder off powers of two). */
uint32_t net_f3d_buckets(size_t n, uint32_t S, double fill) {
  if (fill == 0.0) return psh_auto_buckets(n, S);
  const double nb = ceil((double)n / ((double)S * fill));
  return nb < 1.0 ? 1u : nb > (double)PSH_NB_MAX ? PSH_NB_MAX + 1u : (uint32_t)nb; /* too many: psh_params_check */
}

hx_status net_flash3d_shape_get(net_f3d_shape *s, const net_config *cfg, const net_input *in, hx_err *err) {
  if (!s) return hx_errf(err, HX_EINVAL, "flash3d shape: NULL argument");
  memset(s, 0, sizeof *s);
  HX_TRY(check_config(cfg, err));
  HX_TRY(check_input(cfg, in, err));
  const uint32_t S = (uint32_t)cfg->bucket, K = (uint32_t)cfg->scope;
  size_t *U = malloc(in->B * sizeof *U);
  if (!U) return hx_errf(err, HX_ENOMEM, "flash3d shape: %u clouds", in->B);
  for (uint32_t c = 0; c < in->B; c++) U[c] = in->offset[c + 1] - in->offset[c];
  s->L = cfg->levels, s->B = in->B, s->n = in->n;
  hx_status st = HX_OK;
  for (int l = 0; l < s->L && st == HX_OK; l++) {
    net_f3d_level_shape *ls = &s->lv[l];
    for (uint32_t c = 0; c < in->B; c++) ls->bound_rows += U[c], ls->max_cloud = max_sz(ls->max_cloud, U[c]);
    ls->hashed = l == 0 || cfg->rehash;
    if (ls->hashed) {
      psh_params_default(&ls->psh);
      ls->psh.hash = f3d_hash_cycle[l % 4];
      ls->psh.cap = S;
      ls->psh.nb = net_f3d_buckets(ls->max_cloud, S, cfg->bucket_fill);
      ls->psh.voxel = (float)(in->grid_size * (double)(1u << l));
      ls->psh.seed = hx_rng_u64(in->seed, NET_F3D_SEED_STREAM, (uint64_t)l);
      ls->nb = ls->psh.nb, ls->scope = K, ls->max_bucket = S;
      st = psh_params_check(&ls->psh, NULL, in->B, err);
      for (uint32_t c = 0; l == 0 && c < in->B && st == HX_OK; c++) { /* deeper levels' voxels are larger */
        const uint32_t off[2] = {0, (uint32_t)(in->offset[c + 1] - in->offset[c])};
        const psh_in one = {in->xyz + 3 * in->offset[c], off, 1, off[1]};
        st = in->xyz ? psh_span_check(&one, ls->psh.voxel, err) : HX_OK;
      }
    } else { /* fixed windows of S rows over the cloud's pooled rows (nl_windows_cpu), enough for its bound */
      const size_t w = (ls->max_cloud + S - 1) / S;
      ls->nb = w ? (uint32_t)w : 1u, ls->scope = K, ls->max_bucket = S;
    }
    /* the rows bound of the next level: ceil(c / 2) per bucket, at most min(nb, U) odd buckets */
    for (uint32_t c = 0; c < in->B; c++) U[c] = (U[c] + (U[c] < ls->nb ? U[c] : ls->nb)) / 2;
  }
  free(U);
  return st;
}

/* ---- layouts ----------------------------------------------------------------------------------------- */

void net_flash3d_layouts_free(net_f3d_layouts *l) {
  if (!l) return;
  for (int k = 0; k < NET_MAX_LEVELS; k++) free(l->lv[k].perm), free(l->lv[k].bucket_start), free(l->lv[k].bucket_count);
  memset(l, 0, sizeof *l);
}

/* A given layout against what level l must be: rows, buckets per cloud, cloud ranges, counts, perm. */
static hx_status layout_check(const net_f3d_layout *ly, int l, uint32_t n, uint32_t B, uint32_t nb,
                              const uint32_t *off, uint32_t max_bucket, hx_err *err) {
  if (ly->rows != n || ly->nb != nb)
    return hx_errf(err, HX_EINVAL, "flash3d layouts: level %d has %u rows in %u buckets per cloud, want %u and %u", l,
                   ly->rows, ly->nb, n, nb);
  if (!ly->perm || !ly->bucket_start || !ly->bucket_count)
    return hx_errf(err, HX_EINVAL, "flash3d layouts: level %d lacks its arrays", l);
  for (uint32_t c = 0; c < B; c++) {
    uint64_t row = off[c];
    for (uint32_t b = 0; b < nb; b++) {
      const size_t g = (size_t)c * nb + b;
      if (ly->bucket_start[g] != row || ly->bucket_count[g] > max_bucket)
        return hx_errf(err, HX_EINVAL, "flash3d layouts: level %d bucket %zu starts at %u with %u rows (want start %llu, "
                       "at most %u rows)", l, g, ly->bucket_start[g], ly->bucket_count[g], (unsigned long long)row,
                       max_bucket);
      row += ly->bucket_count[g];
    }
    if (row != off[c + 1])
      return hx_errf(err, HX_EINVAL, "flash3d layouts: level %d cloud %u's buckets end at row %llu, not %u", l, c,
                     (unsigned long long)row, off[c + 1]);
  }
  uint8_t *seen = calloc(n ? n : 1, 1);
  if (!seen) return hx_errf(err, HX_ENOMEM, "flash3d layouts: %u rows", n);
  hx_status st = HX_OK;
  for (uint32_t c = 0; c < B && st == HX_OK; c++)
    for (uint32_t r = off[c]; r < off[c + 1]; r++) {
      const uint32_t p = ly->perm[r];
      if (p < off[c] || p >= off[c + 1] || seen[p]) {
        st = hx_errf(err, HX_EINVAL, "flash3d layouts: level %d perm[%u] = %u is not a row of cloud %u left unused", l,
                     r, p, c);
        break;
      }
      seen[p] = 1;
    }
  free(seen);
  return st;
}

/* The structure of one input at every level (host, exact sizes). */
typedef struct f3d_lv {
  uint32_t n, nb;
  uint32_t *off;             /* [B+1] pool-order cloud offsets */
  uint32_t *cb;              /* [B+1] cloud bucket offsets c * nb */
  float *xyz, *xyzp;         /* [n*3] pool order, packed order */
  uint32_t *perm, *slot;     /* [n] packed -> pool, pool -> packed */
  uint32_t *start, *count;   /* [B*nb] */
  uint32_t *ostart, *ocount; /* [B*nb] pooling plan (l < L-1) */
  uint32_t *members, *parent; /* [n_next * rho], [n] (l < L-1) */
} f3d_lv;
typedef struct f3d_struct {
  int L;
  uint32_t B;
  net_f3d_shape shape;
  f3d_lv lv[NET_MAX_LEVELS];
} f3d_struct;

static void struct_free(f3d_struct *s) {
  for (int l = 0; l < NET_MAX_LEVELS; l++) {
    f3d_lv *v = &s->lv[l];
    free(v->off), free(v->cb), free(v->xyz), free(v->xyzp), free(v->perm), free(v->slot), free(v->start);
    free(v->count), free(v->ostart), free(v->ocount), free(v->members), free(v->parent);
  }
  memset(s, 0, sizeof *s);
}

static void *f3d_malloc(size_t count, size_t elem) { return malloc((count ? count : 1u) * elem); }
#define F3D_ALLOC(p, count)                                                                                   \
  do {                                                                                                        \
    (p) = f3d_malloc((size_t)(count), sizeof *(p));                                                           \
    if (!(p)) return hx_errf(err, HX_ENOMEM, "flash3d: no memory for %s (%zu elements)", #p, (size_t)(count)); \
  } while (0)

/* Level l's layout: from `lay` (checked) or psh_run_cpu on hashed levels; otherwise the identity and fixed windows
 * of `bucket` rows over each cloud's pooled rows (the given layout must equal them). */
static hx_status level_layout(f3d_struct *s, int l, const net_f3d_layouts *lay, hx_err *err) {
  f3d_lv *v = &s->lv[l];
  const net_f3d_level_shape *ls = &s->shape.lv[l];
  const uint32_t B = s->B, n = v->n;
  v->nb = ls->nb;
  const size_t nbt = (size_t)B * v->nb;
  F3D_ALLOC(v->perm, n);
  F3D_ALLOC(v->slot, n);
  F3D_ALLOC(v->start, nbt + 1); /* + 1: nl_windows_cpu's total */
  F3D_ALLOC(v->count, nbt + 1);
  F3D_ALLOC(v->xyzp, 3 * (size_t)n);
  F3D_ALLOC(v->cb, B + 1);
  for (uint32_t c = 0; c <= B; c++) v->cb[c] = c * v->nb;
  if (ls->hashed && lay) {
    HX_TRY(layout_check(&lay->lv[l], l, n, B, v->nb, v->off, ls->max_bucket, err));
    memcpy(v->perm, lay->lv[l].perm, (size_t)n * 4);
    memcpy(v->start, lay->lv[l].bucket_start, nbt * 4);
    memcpy(v->count, lay->lv[l].bucket_count, nbt * 4);
  } else if (ls->hashed) {
    uint32_t *bucket = malloc((size_t)(n ? n : 1) * 4), *offset = malloc((size_t)(n ? n : 1) * 4);
    uint32_t counters[PSH_NCOUNTERS];
    hx_status st = bucket && offset ? HX_OK : hx_errf(err, HX_ENOMEM, "flash3d: PSH of level %d", l);
    psh_out o = {bucket, offset, v->count, v->start, v->slot, v->perm, NULL, counters};
    psh_in pi = {v->xyz, v->off, B, n};
    if (st == HX_OK) st = psh_run_cpu(&o, &pi, &ls->psh, err);
    free(bucket), free(offset);
    HX_TRY(st);
  } else {
    for (uint32_t r = 0; r < n; r++) v->perm[r] = r;
    HX_TRY(nl_windows_cpu(v->start, v->count, v->off, B, v->nb, ls->max_bucket, err));
    if (lay) {
      const net_f3d_layout *g = &lay->lv[l];
      if (g->rows != n || g->nb != v->nb || !g->perm || !g->bucket_start || !g->bucket_count ||
          memcmp(g->perm, v->perm, (size_t)n * 4) || memcmp(g->bucket_start, v->start, nbt * 4) ||
          memcmp(g->bucket_count, v->count, nbt * 4))
        return hx_errf(err, HX_ECHECK, "flash3d layouts: level %d (no PSH of its own) differs from its windows of "
                       "%u rows over the pooled rows", l, ls->max_bucket);
    }
  }
  for (uint32_t r = 0; r < n; r++) {
    v->slot[v->perm[r]] = r;
    memcpy(v->xyzp + 3 * (size_t)r, v->xyz + 3 * (size_t)v->perm[r], 3 * sizeof(float));
  }
  return HX_OK;
}

static hx_status struct_build(f3d_struct *s, const net_config *cfg, const net_input *in, const net_f3d_layouts *lay,
                              hx_err *err) {
  memset(s, 0, sizeof *s);
  HX_TRY(net_flash3d_shape_get(&s->shape, cfg, in, err));
  s->L = cfg->levels, s->B = in->B;
  if (lay && (lay->L != s->L || lay->B != s->B))
    return hx_errf(err, HX_EINVAL, "flash3d layouts: %d levels of %u clouds, want %d of %u", lay->L, lay->B, s->L, s->B);
  const uint32_t B = s->B;
  f3d_lv *v0 = &s->lv[0];
  v0->n = (uint32_t)in->n;
  F3D_ALLOC(v0->off, B + 1);
  for (uint32_t c = 0; c <= B; c++) v0->off[c] = (uint32_t)in->offset[c];
  F3D_ALLOC(v0->xyz, 3 * in->n);
  memcpy(v0->xyz, in->xyz, 3 * in->n * sizeof(float));
  for (int l = 0; l < s->L; l++) {
    f3d_lv *v = &s->lv[l];
    HX_TRY(level_layout(s, l, lay, err));
    if (l == s->L - 1) break;
    const uint32_t nbt = B * v->nb;
    f3d_lv *nx = &s->lv[l + 1];
    F3D_ALLOC(v->ostart, nbt);
    F3D_ALLOC(v->ocount, nbt);
    HX_TRY(bpool_plan_cpu(v->ostart, v->ocount, &nx->n, v->count, nbt, NET_F3D_RHO, err));
    F3D_ALLOC(v->members, (size_t)nx->n * NET_F3D_RHO);
    F3D_ALLOC(v->parent, v->n);
    F3D_ALLOC(nx->xyz, 3 * (size_t)nx->n);
    HX_TRY(bpool_assign_cpu(v->members, v->parent, nx->xyz, v->xyzp, v->n, v->start, v->count, v->ostart, nbt,
                            NET_F3D_RHO, err));
    F3D_ALLOC(nx->off, B + 1);
    for (uint32_t c = 0; c < B; c++) nx->off[c] = v->ostart[(size_t)c * v->nb];
    nx->off[B] = nx->n;
  }
  return HX_OK;
}

hx_status net_flash3d_layouts_cpu(net_f3d_layouts *l, const net_config *cfg, const net_input *in, hx_err *err) {
  if (!l) return hx_errf(err, HX_EINVAL, "flash3d layouts: NULL argument");
  memset(l, 0, sizeof *l);
  f3d_struct *s = malloc(sizeof *s);
  if (!s) return hx_errf(err, HX_ENOMEM, "flash3d layouts: structure");
  hx_status st = struct_build(s, cfg, in, NULL, err);
  if (st == HX_OK) {
    l->L = s->L, l->B = s->B;
    for (int k = 0; k < s->L; k++) { /* move the arrays over */
      f3d_lv *v = &s->lv[k];
      l->lv[k] = (net_f3d_layout){v->n, v->nb, v->perm, v->start, v->count};
      v->perm = v->start = v->count = NULL;
    }
  }
  struct_free(s);
  free(s);
  return st;
}

#if !F3D_HAVE_CUDA
hx_status net_flash3d_gpu_layouts(const void *impl, net_f3d_layouts *l, hx_err *err) {
  (void)impl, (void)l;
  return hx_errf(err, HX_ENODEV, "flash3d: built without CUDA");
}
#endif

/* ---- fp32 bucket-swin attention ---------------------------------------------------------------------- */

/* One (scope, head) unit after another: the scope's rows gathered in idx, a query's scores in s (both the longest
 * scope's length). A row is in one scope at most (battn_validate's rules: a bucket in one scope, buckets that do not
 * overlap; checked below), so units write disjoint outputs and any split over threads gives the serial bits. */
typedef struct f3d_attn_job {
  float *o;
  const float *qkv;
  const battn_plan *pl;
  size_t C, cap;
  int H, D;
  unsigned char *oom; /* oom[u0] = 1: the range starting at unit u0 had no memory for its scope */
} f3d_attn_job;

static void f3d_attn_units(void *ctx, size_t u0, size_t u1) {
  const f3d_attn_job *j = ctx;
  const battn_plan *pl = j->pl;
  const size_t C = j->C, stride = 3 * C, K = pl->buckets_per_scope, D = (size_t)j->D;
  const float scale = 1.0f / sqrtf((float)j->D);
  size_t *idx = malloc(j->cap * sizeof *idx);
  float *s = malloc(j->cap * sizeof *s);
  if (!idx || !s) {
    free(idx), free(s);
    j->oom[u0] = 1;
    return;
  }
  for (size_t u = u0; u < u1; u++) {
    const size_t sc = u / (size_t)j->H, ho = (u % (size_t)j->H) * D;
    size_t m = 0;
    for (size_t b0 = 0; b0 < K; b0++) {
      const uint32_t b = pl->scope[sc * K + b0];
      if (b == BATTN_EMPTY) continue;
      for (uint32_t r = 0; r < pl->bucket_count[b]; r++) idx[m++] = (size_t)pl->bucket_start[b] + r;
    }
    for (size_t qi = 0; qi < m; qi++) {
      const float *q = j->qkv + idx[qi] * stride + ho;
      float mx = -INFINITY;
      for (size_t kj = 0; kj < m; kj++) {
        const float *k = j->qkv + idx[kj] * stride + C + ho;
        float dot = 0.0f;
        for (size_t d = 0; d < D; d++) dot += q[d] * k[d];
        s[kj] = dot * scale;
        if (s[kj] > mx) mx = s[kj];
      }
      float acc[128], sum = 0.0f;
      for (size_t d = 0; d < D; d++) acc[d] = 0.0f;
      for (size_t kj = 0; kj < m; kj++) {
        const float p = expf(s[kj] - mx);
        const float *vv = j->qkv + idx[kj] * stride + 2 * C + ho;
        sum += p;
        for (size_t d = 0; d < D; d++) acc[d] += p * vv[d];
      }
      float *out = j->o + idx[qi] * C + ho;
      for (size_t d = 0; d < D; d++) out[d] = acc[d] / sum;
    }
  }
  free(idx), free(s);
}

hx_status net_flash3d_attn_cpu(float *o, const float *qkv, size_t rows, int H, int D, const battn_plan *pl,
                               hx_err *err) {
  if (!o || !qkv || !pl || H < 1 || D < 1 || D > 128)
    return hx_errf(err, HX_EINVAL, "flash3d attention: bad arguments (H %d, D %d)", H, D);
  const size_t C = (size_t)H * (size_t)D, K = pl->buckets_per_scope;
  memset(o, 0, rows * C * sizeof(float));
  size_t cap = 1;
  unsigned char *in_scope = calloc(pl->num_buckets ? pl->num_buckets : 1, 1), *row_in = calloc(rows ? rows : 1, 1);
  if (!in_scope || !row_in) {
    free(in_scope), free(row_in);
    return hx_errf(err, HX_ENOMEM, "flash3d attention: %u buckets, %zu rows", pl->num_buckets, rows);
  }
  for (uint32_t sc = 0; sc < pl->num_scopes; sc++) {
    size_t m = 0;
    for (size_t j = 0; j < K; j++) {
      const uint32_t b = pl->scope[sc * K + j];
      if (b == BATTN_EMPTY) continue;
      const char *bad = b >= pl->num_buckets || (uint64_t)pl->bucket_start[b] + pl->bucket_count[b] > rows
                            ? "outside the rows"
                        : in_scope[b] ? "in two scopes"
                                      : NULL;
      for (uint32_t r = 0; !bad && r < pl->bucket_count[b]; r++)
        if (row_in[pl->bucket_start[b] + r]++) bad = "overlapping another bucket";
      if (bad) {
        free(in_scope), free(row_in);
        return hx_errf(err, HX_EINVAL, "flash3d attention: bucket %u of scope %u is %s (%zu rows)", b, sc, bad, rows);
      }
      in_scope[b] = 1;
      m += pl->bucket_count[b];
    }
    cap = max_sz(cap, m);
  }
  free(in_scope), free(row_in);
  const size_t units = (size_t)pl->num_scopes * (size_t)H;
  if (units == 0) return HX_OK;
  unsigned char *oom = calloc(units, 1);
  if (!oom) return hx_errf(err, HX_ENOMEM, "flash3d attention: %zu units", units);
  f3d_attn_job j = {o, qkv, pl, C, cap, H, D, oom};
  hx_par_for(units, 1, f3d_attn_units, &j); /* a unit is a scope's rows x its keys: worth a thread each */
  int failed = 0;
  for (size_t u = 0; u < units && !failed; u++) failed = oom[u];
  free(oom);
  return failed ? hx_errf(err, HX_ENOMEM, "flash3d attention: scope of %zu rows", cap) : HX_OK;
}

/* ---- CPU forward --------------------------------------------------------------------------------------- */

typedef struct f3d_cpu {
  float *t, *qkv, *o, *h1, *g; /* block work: LN out, qkv, attention out, fc1 out, SwiGLU out */
  float *scale, *shift;        /* folded BatchNorm */
} f3d_cpu;

static hx_status lin(float *y, const float *x, const net_lin *l, size_t rows, nl_act act, int acc, hx_err *err) {
  return nl_linear_cpu(y, x, l->w, l->b, rows, l->in, l->out, act, acc, err);
}

static hx_status bn_gelu(f3d_cpu *w, float *x, size_t rows, const net_norm *nm, hx_err *err) {
  nl_bn_fold(w->scale, w->shift, nm->w, nm->b, nm->mean, nm->var, nm->C, NET_F3D_BN_EPS);
  return nl_affine_act_cpu(x, x, w->scale, w->shift, rows, nm->C, NL_ACT_GELU, err);
}

/* One XFMR block in place over x [n, C] (packed rows) with the plan of (dec, level, block). */
static hx_status block_cpu(float *x, const f3d_struct *s, int dec, int l, int b, const net_f3d_block *bk,
                           const net_config *cfg, f3d_cpu *w, hx_err *err) {
  const f3d_lv *v = &s->lv[l];
  const size_t n = v->n, C = (size_t)bk->C;
  battn_plan_kind kind;
  uint32_t value;
  net_flash3d_block_plan(cfg, &s->shape.lv[l], dec, l, b, &kind, &value);
  battn_plan pl;
  HX_TRY(battn_plan_build(&pl, kind, value, s->shape.lv[l].scope, v->start, v->count, v->cb, s->B, err));
  hx_status st = nl_layernorm_cpu(w->t, x, bk->norm.w, bk->norm.b, n, C, NET_F3D_LN_EPS, err);
  if (st == HX_OK) st = lin(w->qkv, w->t, &bk->qkv, n, NL_ACT_NONE, 0, err);
  if (st == HX_OK) st = net_flash3d_attn_cpu(w->o, w->qkv, n, bk->H, bk->C / bk->H, &pl, err);
  battn_plan_free(&pl);
  if (st == HX_OK) st = lin(x, w->o, &bk->proj, n, NL_ACT_NONE, 1, err);
  if (st == HX_OK) st = nl_layernorm_cpu(w->t, x, bk->mlp_norm.w, bk->mlp_norm.b, n, C, NET_F3D_LN_EPS, err);
  if (st == HX_OK) st = lin(w->h1, w->t, &bk->fc1, n, NL_ACT_NONE, 0, err);
  if (st == HX_OK) st = nl_swiglu_cpu(w->g, w->h1, n, bk->fc2.in, err);
  if (st == HX_OK) st = lin(x, w->g, &bk->fc2, n, NL_ACT_NONE, 1, err);
  return st;
}

/* A level's packed rows [n, C] into pool order, as a kept level output. */
static hx_status keep_level(net_output *out, size_t slot, const char *name, const float *x, const f3d_lv *v,
                            size_t C, hx_err *err) {
  float *y = f3d_malloc((size_t)v->n * C, sizeof(float));
  if (!y) return hx_errf(err, HX_ENOMEM, "flash3d: level output %s", name);
  for (uint32_t p = 0; p < v->n; p++) memcpy(y + (size_t)p * C, x + (size_t)v->slot[p] * C, C * sizeof(float));
  out->level[slot] = y;
  out->level_rows[slot] = v->n, out->level_C[slot] = C;
  snprintf(out->level_name[slot], sizeof out->level_name[slot], "%s", name);
  return HX_OK;
}

typedef struct f3d_fwd {
  f3d_cpu w;
  float *x[NET_MAX_LEVELS], *y[NET_MAX_LEVELS], *skip[NET_MAX_LEVELS]; /* packed rows */
  float *pooled, *tmp, *logits;
} f3d_fwd;

static void fwd_free(f3d_fwd *f) {
  free(f->w.t), free(f->w.qkv), free(f->w.o), free(f->w.h1), free(f->w.g), free(f->w.scale), free(f->w.shift);
  for (int l = 0; l < NET_MAX_LEVELS; l++) free(f->x[l]), free(f->y[l]), free(f->skip[l]);
  free(f->pooled), free(f->tmp), free(f->logits);
}

static hx_status forward_body(f3d_fwd *f, net_output *out, const net_config *cfg, const net_f3d_view *v,
                              const f3d_struct *s, const net_input *in, int keep_levels, hx_err *err) {
  const int L = s->L;
  const size_t r = (size_t)cfg->mlp_ratio, cin = (size_t)cfg->in_channels;
  f3d_cpu *w = &f->w;
  size_t nc = 1, cmax = cin, rows_big = 1;
  for (int l = 0; l < L; l++) {
    const size_t n = s->lv[l].n, c = max_sz((size_t)cfg->enc_channels[l], (size_t)cfg->dec_channels[l]);
    nc = max_sz(nc, n * c);
    cmax = max_sz(cmax, c);
    rows_big = max_sz(rows_big, n * max_sz(c, cin));
  }
  F3D_ALLOC(w->t, nc);
  F3D_ALLOC(w->qkv, 3 * nc);
  F3D_ALLOC(w->o, nc);
  F3D_ALLOC(w->h1, 2 * r * nc);
  F3D_ALLOC(w->g, r * nc);
  F3D_ALLOC(w->scale, cmax);
  F3D_ALLOC(w->shift, cmax);
  F3D_ALLOC(f->tmp, rows_big);
  F3D_ALLOC(f->pooled, rows_big);
  for (int l = 0; l < L; l++) {
    const size_t n = s->lv[l].n;
    F3D_ALLOC(f->x[l], n * (size_t)cfg->enc_channels[l]);
    F3D_ALLOC(f->y[l], n * (size_t)cfg->dec_channels[l]);
    if (l < L - 1) F3D_ALLOC(f->skip[l], n * (size_t)cfg->enc_channels[l + 1]);
  }
  /* embed: the input features in bucket order, then Linear */
  const f3d_lv *v0 = &s->lv[0];
  for (uint32_t k = 0; k < v0->n; k++) memcpy(f->tmp + k * cin, in->feat + (size_t)v0->perm[k] * cin, cin * sizeof(float));
  HX_TRY(lin(f->x[0], f->tmp, &v->embed, v0->n, NL_ACT_NONE, 0, err));
  /* encoder */
  for (int l = 0; l < L; l++) {
    const f3d_lv *lv = &s->lv[l];
    const size_t C = (size_t)cfg->enc_channels[l];
    if (l > 0) { /* pooled rows (pool order) into this level's bucket order */
      for (uint32_t k = 0; k < lv->n; k++) memcpy(f->x[l] + k * C, f->pooled + (size_t)lv->perm[k] * C, C * sizeof(float));
    }
    for (int b = 0; b < cfg->enc_depth[l]; b++) HX_TRY(block_cpu(f->x[l], s, 0, l, b, &v->enc[l][b], cfg, w, err));
    if (l == L - 1) break;
    const size_t C1 = (size_t)cfg->enc_channels[l + 1];
    HX_TRY(lin(f->skip[l], f->x[l], &v->pool[l], lv->n, NL_ACT_NONE, 0, err));
    HX_TRY(bpool_reduce_cpu(f->pooled, f->skip[l], lv->members, s->lv[l + 1].n, NET_F3D_RHO, (uint32_t)C1, PSH_F32,
                            BPOOL_MEAN, err));
    HX_TRY(bn_gelu(w, f->pooled, s->lv[l + 1].n, &v->pool_bn[l], err));
  }
  /* the last level's middle, its decoder blocks, then the unpoolings up */
  HX_TRY(lin(f->y[L - 1], f->x[L - 1], &v->leaf, s->lv[L - 1].n, NL_ACT_NONE, 0, err));
  for (int b = 0; b < cfg->dec_depth[L - 1]; b++)
    HX_TRY(block_cpu(f->y[L - 1], s, 1, L - 1, b, &v->dec[L - 1][b], cfg, w, err));
  for (int l = L - 2; l >= 0; l--) {
    const f3d_lv *lv = &s->lv[l], *ch = &s->lv[l + 1];
    const size_t C = (size_t)cfg->dec_channels[l];
    HX_TRY(lin(f->tmp, f->y[l + 1], &v->up[l], ch->n, NL_ACT_NONE, 0, err));
    HX_TRY(bn_gelu(w, f->tmp, ch->n, &v->up_bn[l], err));
    HX_TRY(lin(f->y[l], f->skip[l], &v->up_skip[l], lv->n, NL_ACT_NONE, 0, err));
    HX_TRY(bn_gelu(w, f->y[l], lv->n, &v->skip_bn[l], err));
    for (uint32_t k = 0; k < lv->n; k++) {
      const float *d = f->tmp + (size_t)ch->slot[lv->parent[k]] * C;
      float *yr = f->y[l] + (size_t)k * C;
      for (size_t c = 0; c < C; c++) yr[c] += d[c];
    }
    for (int b = 0; b < cfg->dec_depth[l]; b++) HX_TRY(block_cpu(f->y[l], s, 1, l, b, &v->dec[l][b], cfg, w, err));
  }
  /* head, logits back in input row order */
  const size_t K = (size_t)cfg->classes;
  F3D_ALLOC(f->logits, (size_t)v0->n * K);
  HX_TRY(lin(f->logits, f->y[0], &v->head, v0->n, NL_ACT_NONE, 0, err));
  out->n = v0->n, out->classes = K;
  F3D_ALLOC(out->logits, (size_t)v0->n * K);
  for (uint32_t i = 0; i < v0->n; i++) memcpy(out->logits + (size_t)i * K, f->logits + (size_t)v0->slot[i] * K, K * sizeof(float));
  if (keep_levels) {
    char name[16];
    size_t slot = 0;
    for (int l = 0; l < L; l++, slot++) {
      snprintf(name, sizeof name, "enc%d", l);
      HX_TRY(keep_level(out, slot, name, f->x[l], &s->lv[l], (size_t)cfg->enc_channels[l], err));
    }
    for (int l = L - 1; l >= 0; l--, slot++) {
      snprintf(name, sizeof name, "dec%d", l);
      HX_TRY(keep_level(out, slot, name, f->y[l], &s->lv[l], (size_t)cfg->dec_channels[l], err));
    }
    out->n_levels = slot;
  }
  return HX_OK;
}

hx_status net_flash3d_forward_cpu_layouts(net_output *out, const net_config *cfg, const net_params *p,
                                          const net_input *in, const net_f3d_layouts *lay, int keep_levels,
                                          hx_err *err) {
  if (!out || !cfg || !p || !in) return hx_errf(err, HX_EINVAL, "flash3d forward: NULL argument");
  memset(out, 0, sizeof *out);
  f3d_fwd f;
  memset(&f, 0, sizeof f);
  net_f3d_view *v = malloc(sizeof *v);
  f3d_struct *s = calloc(1, sizeof *s);
  hx_status st = v && s ? HX_OK : hx_errf(err, HX_ENOMEM, "flash3d forward: views");
  if (st == HX_OK) st = net_flash3d_view_get(v, cfg, p, err);
  if (st == HX_OK) st = struct_build(s, cfg, in, lay, err);
  if (st == HX_OK) st = forward_body(&f, out, cfg, v, s, in, keep_levels, err);
  if (s) struct_free(s);
  fwd_free(&f);
  free(v), free(s);
  if (st != HX_OK) net_output_free(out);
  return st;
}

hx_status net_flash3d_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                                  int keep_levels, hx_err *err) {
  return net_flash3d_forward_cpu_layouts(out, cfg, p, in, NULL, keep_levels, err);
}
