/*
 * net_ptv3.c - Point Transformer V3 (Pointcept "PT-v3m1", nuScenes semseg configuration) as a plain fp32 C
 * forward: configurations, parameters under Pointcept's state_dict names, the data-dependent structure of an
 * input (serialization, pooling, patch padding, kernel maps; shared with the GPU forward), the CPU forward.
 *
 * The model (docs ptv3.md sections 2-4, read from Pointcept d74c646 point_transformer_v3m1_base.py and
 * models/default.py DefaultSegmentorV2):
 *   stem      SubMConv3d(4, C0, k=5, no bias) -> BatchNorm1d(eps 1e-3) -> GELU          ("embed")
 *   enc s     s > 0: SerializedPooling(C_{s-1} -> C_s): Linear, segment max over the parent voxel (code >> 3,
 *             codes not re-encoded), BN, GELU; then depth_s blocks                    ("encS/pool")
 *   block     x += CPE(x);  x += proj(attn(qkv(LN1(x))));  x += fc2(GELU(fc1(LN2(x))))
 *             CPE = SubMConv3d(C, C, k=3, bias) -> Linear(C, C) -> LayerNorm(C) on the level's kernel map
 *             (indice_key "stage{s}": encoder and decoder of a level share it); attention of block i uses
 *             order row i % 4 of the level's shuffled rows: qkv gathered by order[pad] into patches of `patch`
 *             slots per cloud (the last patch re-reads the preceding points, ptv3.md 2.1), softmax attention
 *             per patch and head (scale (C/H)^-0.5), gathered back by unpad[inverse]
 *   dec s     SerializedUnpooling: parent = GELU(BN(Linear(enc_s))) + GELU(BN(Linear(child)))[cluster]; blocks
 *   head      seg_head Linear(dec_C0, classes)                                          ("head")
 * m1 quirk (ptv3.md 2.3), followed here: SerializedUnpooling sums into parent.feat but leaves
 * parent.sparse_conv_feat at the projected skip, so the first decoder block's CPE convolves proj_skip(enc_s)
 * only, while its residual is the full sum. Every later CPE convolves the block input (Block refreshes
 * sparse_conv_feat at its end).
 * Deviations: none in the arithmetic. Inputs must be one point per voxel per cloud (callers deduplicate, as
 * GridSample does; duplicates are HX_EINVAL), clouds non-empty, and deep enough to pool into every level
 * (PTv3 would silently skip a pooling at depth 0; we refuse). PTv3's flash path casts qkv to bf16 for the
 * attention; this reference stays fp32 throughout.
 * Randomness: PTv3 draws torch.randperm(4) at the serialization and at every pooling; here level 0's order list
 * is permuted by sfc_row_perm(seed, 0) and the pooling into level s by sfc_row_perm(seed, s) (as app/pipe_ptv3.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "nets/nets_internal.h"

/* ---- configurations --------------------------------------------------------------------------------- */

hx_status net_ptv3_config(net_config *cfg, const char *name, hx_err *err) {
  if (!cfg || !name) return hx_errf(err, HX_EINVAL, "ptv3 config: NULL argument");
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = 0;
  cfg->in_channels = 4;
  cfg->classes = 16;
  cfg->mlp_ratio = 4;
  cfg->mlp_fused = 1;
  cfg->ln_fused = 1;
  cfg->stem_fused = 1;
  cfg->tile_order = 1;
  cfg->overlap = 1;
  cfg->cpe_fold = 1;
  cfg->lt_tune = 1;
  cfg->mlp_chunk = NET_MLP_CHUNK;
  if (strcmp(name, "ptv3") == 0 || strcmp(name, "ptv3-patch4096") == 0) {
    /* configs/nuscenes/semseg-pt-v3m1-0-base.py; "ptv3-patch4096": the same network and weights over patches of
     * 4096, the scope at which the Flash3D paper's Table 2 fixes every model ("We fix attention scopes of all models
     * at 4096"), so its PTv3 row attends to as many keys a query as its Flash3D rows */
    static const int ed[5] = {2, 2, 2, 6, 2}, ec[5] = {32, 64, 128, 256, 512}, eh[5] = {2, 4, 8, 16, 32};
    static const int dd[4] = {2, 2, 2, 2}, dc[4] = {64, 64, 128, 256}, dh[4] = {4, 4, 8, 16};
    cfg->levels = 5;
    for (int s = 0; s < 5; s++) cfg->enc_depth[s] = ed[s], cfg->enc_channels[s] = ec[s], cfg->enc_heads[s] = eh[s];
    for (int s = 0; s < 4; s++) cfg->dec_depth[s] = dd[s], cfg->dec_channels[s] = dc[s], cfg->dec_heads[s] = dh[s];
    cfg->patch = strcmp(name, "ptv3") == 0 ? 1024 : 4096;
  } else if (strcmp(name, "ptv3-tiny") == 0) {
    /* the same structure, small: 3 levels, head dim 16, two blocks on the last level (order rows 0 and 1) */
    static const int ed[3] = {1, 1, 2}, ec[3] = {16, 32, 64}, eh[3] = {1, 2, 4};
    static const int dd[2] = {1, 1}, dc[2] = {16, 32}, dh[2] = {1, 2};
    cfg->levels = 3;
    for (int s = 0; s < 3; s++) cfg->enc_depth[s] = ed[s], cfg->enc_channels[s] = ec[s], cfg->enc_heads[s] = eh[s];
    for (int s = 0; s < 2; s++) cfg->dec_depth[s] = dd[s], cfg->dec_channels[s] = dc[s], cfg->dec_heads[s] = dh[s];
    cfg->patch = 64;
  } else {
    return hx_errf(err, HX_EINVAL, "ptv3 config: unknown name '%s' (ptv3, ptv3-patch4096, ptv3-tiny)", name);
  }
  snprintf(cfg->name, sizeof cfg->name, "%s", name);
  return HX_OK;
}

static hx_status check_config(const net_config *cfg, hx_err *err) {
  if (!cfg || cfg->kind != 0) return hx_errf(err, HX_EINVAL, "ptv3: not a PTv3 configuration");
  if (cfg->levels < 2 || cfg->levels > NET_MAX_LEVELS)
    return hx_errf(err, HX_EINVAL, "ptv3 %s: %d levels, want 2..%d", cfg->name, cfg->levels, NET_MAX_LEVELS);
  if (cfg->in_channels < 1 || cfg->classes < 1 || cfg->mlp_ratio < 1 || cfg->patch < 1)
    return hx_errf(err, HX_EINVAL, "ptv3 %s: bad in_channels/classes/mlp_ratio/patch", cfg->name);
  for (int s = 0; s < cfg->levels; s++) {
    const int last = s == cfg->levels - 1;
    const int C[2] = {cfg->enc_channels[s], last ? 1 : cfg->dec_channels[s]};
    const int H[2] = {cfg->enc_heads[s], last ? 1 : cfg->dec_heads[s]};
    const int d[2] = {cfg->enc_depth[s], last ? 0 : cfg->dec_depth[s]};
    for (int e = 0; e < 2; e++)
      if (C[e] < 1 || H[e] < 1 || C[e] % H[e] != 0 || d[e] < 0 || d[e] > NET_PTV3_MAX_DEPTH)
        return hx_errf(err, HX_EINVAL, "ptv3 %s: level %d %s: channels %d, heads %d, depth %d", cfg->name, s,
                       e ? "decoder" : "encoder", C[e], H[e], d[e]);
  }
  return HX_OK;
}

/* ---- parameters: one walk over the state_dict, adding (init) or finding (view) ------------------------ */
/*
 * State_dict order of DefaultSegmentorV2: seg_head, then backbone (embedding, enc.enc0..., dec.dec{L-2}...dec0).
 * BatchNorm running_mean / running_var are buffers (counted = 0); num_batches_tracked (an int64 buffer the
 * forward never reads) is omitted. spconv 2 weights are [out, k, k, k, in].
 * Initial values: PyTorch's default ranges, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for Linear and SubMConv3d
 * weights and biases (fan_in = in, or in * k^3 for a convolution); norm affines drawn near their defaults
 * (weight 1 +- 0.1, bias +- 0.1) and BatchNorm statistics near mean 0, var 1 (mean +- 0.1, var in [0.8, 1.2]),
 * so a forward that ignored an affine or the fold would fail its check.
 */
static hx_status p3_conv(net_walk *w, net_ptv3_conv *c, size_t in, size_t out, uint32_t k, int bias,
                         const char *prefix) {
  const size_t K = (size_t)k * k * k;
  const float bound = (float)(1.0 / sqrt((double)(in * K)));
  const int64_t ws[5] = {(int64_t)out, k, k, k, (int64_t)in}, bs[1] = {(int64_t)out};
  c->in = in, c->out = out, c->k = k, c->b = NULL;
  HX_TRY(net_walk_tensor(w, &c->w, NET_INIT_UNIFORM, bound, 1, 5, ws, "%s.weight", prefix));
  return bias ? net_walk_tensor(w, &c->b, NET_INIT_UNIFORM, bound, 1, 1, bs, "%s.bias", prefix) : HX_OK;
}

static hx_status p3_block(net_walk *w, net_ptv3_block *b, int C, int H, int mlp_ratio, const char *prefix) {
  char q[160];
  const size_t c = (size_t)C, hid = (size_t)C * (size_t)mlp_ratio;
  b->C = C, b->H = H;
#define P3_NAME(suffix) (snprintf(q, sizeof q, "%s.%s", prefix, suffix), q)
  HX_TRY(p3_conv(w, &b->cpe_conv, c, c, 3, 1, P3_NAME("cpe.0")));
  HX_TRY(net_walk_linear(w, &b->cpe_lin, c, c, P3_NAME("cpe.1")));
  HX_TRY(net_walk_layernorm(w, &b->cpe_norm, c, P3_NAME("cpe.2")));
  HX_TRY(net_walk_layernorm(w, &b->norm1, c, P3_NAME("norm1.0")));
  HX_TRY(net_walk_linear(w, &b->qkv, c, 3 * c, P3_NAME("attn.qkv")));
  HX_TRY(net_walk_linear(w, &b->proj, c, c, P3_NAME("attn.proj")));
  HX_TRY(net_walk_layernorm(w, &b->norm2, c, P3_NAME("norm2.0")));
  HX_TRY(net_walk_linear(w, &b->fc1, c, hid, P3_NAME("mlp.0.fc1")));
  HX_TRY(net_walk_linear(w, &b->fc2, hid, c, P3_NAME("mlp.0.fc2")));
#undef P3_NAME
  return HX_OK;
}

static hx_status p3_walk_all(net_walk *w, net_ptv3_view *v, const net_config *cfg) {
  char pre[128];
  const int L = cfg->levels;
  memset(v, 0, sizeof *v);
  HX_TRY(net_walk_linear(w, &v->head, (size_t)cfg->dec_channels[0], (size_t)cfg->classes, "seg_head"));
  HX_TRY(p3_conv(w, &v->stem, (size_t)cfg->in_channels, (size_t)cfg->enc_channels[0], 5, 0,
                 "backbone.embedding.stem.conv"));
  HX_TRY(net_walk_batchnorm(w, &v->stem_bn, (size_t)cfg->enc_channels[0], "backbone.embedding.stem.norm"));
  for (int s = 0; s < L; s++) {
    const size_t C = (size_t)cfg->enc_channels[s];
    if (s > 0) {
      snprintf(pre, sizeof pre, "backbone.enc.enc%d.down.proj", s);
      HX_TRY(net_walk_linear(w, &v->down[s], (size_t)cfg->enc_channels[s - 1], C, pre));
      snprintf(pre, sizeof pre, "backbone.enc.enc%d.down.norm.0", s);
      HX_TRY(net_walk_batchnorm(w, &v->down_bn[s], C, pre));
    }
    for (int i = 0; i < cfg->enc_depth[s]; i++) {
      snprintf(pre, sizeof pre, "backbone.enc.enc%d.block%d", s, i);
      HX_TRY(p3_block(w, &v->enc[s][i], cfg->enc_channels[s], cfg->enc_heads[s], cfg->mlp_ratio, pre));
    }
  }
  for (int s = L - 2; s >= 0; s--) {
    const size_t C = (size_t)cfg->dec_channels[s];
    const size_t Cc = (size_t)(s == L - 2 ? cfg->enc_channels[L - 1] : cfg->dec_channels[s + 1]);
    snprintf(pre, sizeof pre, "backbone.dec.dec%d.up.proj.0", s);
    HX_TRY(net_walk_linear(w, &v->up_proj[s], Cc, C, pre));
    snprintf(pre, sizeof pre, "backbone.dec.dec%d.up.proj.1", s);
    HX_TRY(net_walk_batchnorm(w, &v->up_bn[s], C, pre));
    snprintf(pre, sizeof pre, "backbone.dec.dec%d.up.proj_skip.0", s);
    HX_TRY(net_walk_linear(w, &v->up_skip[s], (size_t)cfg->enc_channels[s], C, pre));
    snprintf(pre, sizeof pre, "backbone.dec.dec%d.up.proj_skip.1", s);
    HX_TRY(net_walk_batchnorm(w, &v->skip_bn[s], C, pre));
    for (int i = 0; i < cfg->dec_depth[s]; i++) {
      snprintf(pre, sizeof pre, "backbone.dec.dec%d.block%d", s, i);
      HX_TRY(p3_block(w, &v->dec[s][i], cfg->dec_channels[s], cfg->dec_heads[s], cfg->mlp_ratio, pre));
    }
  }
  return HX_OK;
}

hx_status net_ptv3_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err) {
  if (!p) return hx_errf(err, HX_EINVAL, "ptv3 params: NULL argument");
  HX_TRY(check_config(cfg, err));
  net_ptv3_view *v = malloc(sizeof *v);
  if (!v) return hx_errf(err, HX_ENOMEM, "ptv3 params: view");
  net_walk w = {p, NULL, seed, 0, err, "ptv3", 0x50543356ull};
  const hx_status st = p3_walk_all(&w, v, cfg);
  free(v);
  return st;
}

hx_status net_ptv3_view_get(net_ptv3_view *v, const net_config *cfg, const net_params *p, hx_err *err) {
  if (!v || !p) return hx_errf(err, HX_EINVAL, "ptv3: NULL argument");
  HX_TRY(check_config(cfg, err));
  net_walk w = {NULL, p, 0, 0, err, "ptv3", 0x50543356ull};
  return p3_walk_all(&w, v, cfg);
}

/* ---- structure of an input ---------------------------------------------------------------------------- */

static void level_free(net_ptv3_level *l) {
  free(l->off), free(l->grid), free(l->batch), free(l->coord), free(l->code), free(l->order), free(l->inverse);
  free(l->cluster), free(l->idx_ptr), free(l->children), free(l->pad), free(l->unpad), free(l->cu);
  spc_map_free_host(&l->map);
  memset(l, 0, sizeof *l);
}

void net_ptv3_struct_free(net_ptv3_struct *s) {
  if (!s) return;
  for (int i = 0; i < NET_MAX_LEVELS; i++) level_free(&s->lv[i]);
  spc_map_free_host(&s->stem_map);
  memset(s, 0, sizeof *s);
}

static hx_status check_input(const net_config *cfg, const net_input *in, hx_err *err) {
  if (!in || !in->xyz || !in->feat || !in->offset) return hx_errf(err, HX_EINVAL, "ptv3: input with NULL arrays");
  if (in->B < 1) return hx_errf(err, HX_EINVAL, "ptv3: a batch of 0 clouds");
  if (in->offset[0] != 0 || in->offset[in->B] != in->n)
    return hx_errf(err, HX_EINVAL, "ptv3: offsets run from %zu to %zu, want 0 to n = %zu", in->offset[0],
                   in->offset[in->B], in->n);
  for (uint32_t b = 0; b < in->B; b++)
    if (in->offset[b + 1] <= in->offset[b])
      return hx_errf(err, HX_EINVAL, "ptv3: cloud %u is empty or its offsets decrease", b);
  if (in->n > UINT32_MAX / 4) return hx_errf(err, HX_EINVAL, "ptv3: %zu points, too many for 32-bit indices", in->n);
  if (!(in->grid_size > 0.0)) return hx_errf(err, HX_EINVAL, "ptv3: grid size %g", in->grid_size);
  const size_t nf = in->n * (size_t)cfg->in_channels;
  for (size_t k = 0; k < nf; k++)
    if (!isfinite(in->feat[k])) return hx_errf(err, HX_EINVAL, "ptv3: feature %zu is not finite", k);
  return HX_OK;
}

/* malloc of count elements (at least one, so a zero count is not a failure) */
static void *p3_malloc(size_t count, size_t size) { return malloc((count > 0 ? count : 1) * size); }
#define P3_ALLOC(ptr, count)                                                                              \
  do {                                                                                                    \
    const size_t p3_count_ = (count);                                                                     \
    if (!((ptr) = p3_malloc(p3_count_, sizeof *(ptr))))                                                   \
      return hx_errf(err, HX_ENOMEM, "ptv3: host buffer of %zu elements", p3_count_);                    \
  } while (0)

static hx_status level_pad(net_ptv3_level *l, uint32_t B, uint32_t K, hx_err *err) {
  HX_TRY(shuf_pad_sizes(&l->sum_p, &l->n_cu, l->off, B, K, err));
  P3_ALLOC(l->pad, l->sum_p);
  P3_ALLOC(l->unpad, l->n);
  P3_ALLOC(l->cu, l->n_cu);
  return shuf_padding_cpu(l->pad, l->unpad, l->cu, l->off, B, K, err);
}

/* Level 0's rows: the four orders permuted by sfc_row_perm(seed, 0); level s's: level s-1's permuted by
 * sfc_row_perm(seed, s), as spool's pooled row r is the parent's row perm[r] (baselines.h). */
hx_status net_ptv3_orders(const net_config *cfg, uint64_t seed, int s, int orders[4], hx_err *err) {
  if (!cfg || !orders) return hx_errf(err, HX_EINVAL, "ptv3 orders: NULL argument");
  if (cfg->kind != 0) return hx_errf(err, HX_EINVAL, "%s: not a PTv3 model (no serialization orders)", cfg->name);
  if (s < 0 || s >= cfg->levels)
    return hx_errf(err, HX_EINVAL, "%s: level %d of its %d has no orders", cfg->name, s, cfg->levels);
  static const sfc_order base[NET_PTV3_ORDERS] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  int perm[NET_PTV3_ORDERS], prev[NET_PTV3_ORDERS];
  sfc_row_perm(perm, NET_PTV3_ORDERS, seed, 0);
  for (int r = 0; r < NET_PTV3_ORDERS; r++) orders[r] = (int)base[perm[r]];
  for (int l = 1; l <= s; l++) {
    sfc_row_perm(perm, NET_PTV3_ORDERS, seed, (uint64_t)l);
    memcpy(prev, orders, sizeof prev);
    for (int r = 0; r < NET_PTV3_ORDERS; r++) orders[r] = prev[perm[r]];
  }
  return HX_OK;
}

static hx_status level0(net_ptv3_level *l, const net_config *cfg, const net_input *in, uint64_t seed, hx_err *err) {
  const size_t n = in->n;
  const uint32_t B = in->B;
  l->n = n;
  P3_ALLOC(l->off, B + 1);
  memcpy(l->off, in->offset, (B + 1) * sizeof *l->off);
  P3_ALLOC(l->grid, 3 * n);
  P3_ALLOC(l->batch, n);
  P3_ALLOC(l->coord, 3 * n);
  memcpy(l->coord, in->xyz, 3 * n * sizeof *l->coord);
  uint32_t gmax = 0;
  HX_TRY(sfc_grid_cpu(l->grid, &gmax, in->xyz, in->offset, B, in->grid_size, err));
  HX_TRY(sfc_batch_index_cpu(l->batch, in->offset, B, err));
  HX_TRY(sfc_depth(&l->depth, gmax, B, in->grid_size, err));
  {
    uint32_t *keep = malloc(n * sizeof *keep);
    size_t *off2 = malloc((B + 1) * sizeof *off2), dropped = 0;
    hx_status st = keep && off2 ? sfc_dedup_cpu(keep, off2, &dropped, l->grid, in->offset, B, err)
                                : hx_errf(err, HX_ENOMEM, "ptv3: duplicate check");
    free(keep), free(off2);
    HX_TRY(st);
    if (dropped)
      return hx_errf(err, HX_EINVAL,
                     "ptv3: %zu points share a voxel (grid %g) with another point of their cloud: the model takes "
                     "one point per voxel (deduplicate first, as GridSample does)", dropped, in->grid_size);
  }
  int o[NET_PTV3_ORDERS];
  sfc_order orders[NET_PTV3_ORDERS];
  HX_TRY(net_ptv3_orders(cfg, seed, 0, o, err));
  for (int r = 0; r < NET_PTV3_ORDERS; r++) orders[r] = (sfc_order)o[r];
  P3_ALLOC(l->code, NET_PTV3_ORDERS * n);
  P3_ALLOC(l->order, NET_PTV3_ORDERS * n);
  P3_ALLOC(l->inverse, NET_PTV3_ORDERS * n);
  HX_TRY(sfc_encode_cpu(l->code, l->grid, l->batch, n, l->depth, orders, NET_PTV3_ORDERS, err));
  return sfc_sort_cpu(l->order, l->inverse, l->code, n, NET_PTV3_ORDERS, err);
}

/* Level s from level s-1 (p): spool_cpu's structure (no features: the forward pools its own projection). */
static hx_status level_pool(net_ptv3_level *l, const net_ptv3_level *p, uint32_t B, int s, uint64_t seed,
                            hx_err *err) {
  const size_t n = p->n;
  if (p->depth < 1)
    return hx_errf(err, HX_EINVAL, "ptv3: the input is too small to pool into level %d (depth %d at level %d)", s,
                   p->depth, s - 1);
  spool_in pin = {p->code, p->order, NULL, p->coord, p->grid, p->batch, n, 0, NET_PTV3_ORDERS, p->depth, B,
                  {0, 1, 2, 3}};
  sfc_row_perm(pin.perm, NET_PTV3_ORDERS, seed, (uint64_t)s);
  spool_out po;
  memset(&po, 0, sizeof po);
  uint32_t *head = NULL;
  P3_ALLOC(l->cluster, n);
  P3_ALLOC(head, n);
  hx_status st = HX_OK;
  l->idx_ptr = malloc((n + 1) * sizeof *l->idx_ptr);
  l->code = malloc(NET_PTV3_ORDERS * n * sizeof *l->code);
  l->order = malloc(NET_PTV3_ORDERS * n * sizeof *l->order);
  l->inverse = malloc(NET_PTV3_ORDERS * n * sizeof *l->inverse);
  l->coord = malloc(3 * n * sizeof *l->coord);
  l->grid = malloc(3 * n * sizeof *l->grid);
  l->batch = malloc(n * sizeof *l->batch);
  l->children = malloc(n * sizeof *l->children);
  l->off = calloc(B + 1, sizeof *l->off);
  if (!l->idx_ptr || !l->code || !l->order || !l->inverse || !l->coord || !l->grid || !l->batch || !l->children ||
      !l->off)
    st = hx_errf(err, HX_ENOMEM, "ptv3: pooling buffers for %zu points", n);
  if (st == HX_OK) {
    po = (spool_out){0, 0, l->cluster, head, l->idx_ptr, l->code, l->order, l->inverse, NULL, l->coord, l->grid,
                     l->batch};
    st = spool_cpu(&po, &pin, err);
  }
  free(head);
  HX_TRY(st);
  l->n = po.n_out;
  l->depth = po.depth;
  /* children grouped by parent (counting sort of cluster, ascending point index in each group) */
  uint32_t *fill = calloc(l->n + 1, sizeof *fill);
  if (!fill) return hx_errf(err, HX_ENOMEM, "ptv3: pooling children");
  for (size_t i = 0; i < n; i++) l->children[l->idx_ptr[l->cluster[i]] + fill[l->cluster[i]]++] = (uint32_t)i;
  free(fill);
  /* clouds stay contiguous (parents sorted by code, batch in the high bits) */
  for (size_t c = 0; c < l->n; c++) l->off[l->batch[c] + 1]++;
  for (uint32_t b = 0; b < B; b++) l->off[b + 1] += l->off[b];
  return HX_OK;
}

static hx_status struct_build(net_ptv3_struct *s, const net_config *cfg, const net_input *in, int maps,
                              hx_err *err) {
  HX_TRY(check_config(cfg, err));
  HX_TRY(check_input(cfg, in, err));
  s->L = cfg->levels;
  s->B = in->B;
  s->n = in->n;
  HX_TRY(level0(&s->lv[0], cfg, in, in->seed, err));
  for (int l = 1; l < s->L; l++) HX_TRY(level_pool(&s->lv[l], &s->lv[l - 1], s->B, l, in->seed, err));
  for (int l = 0; l < s->L; l++) HX_TRY(level_pad(&s->lv[l], s->B, (uint32_t)cfg->patch, err));
  if (!maps) return HX_OK;
  HX_TRY(spc_map_cpu(&s->stem_map, s->lv[0].grid, s->lv[0].batch, (uint32_t)s->n, 5, err));
  for (int l = 0; l < s->L; l++)
    HX_TRY(spc_map_cpu(&s->lv[l].map, s->lv[l].grid, s->lv[l].batch, (uint32_t)s->lv[l].n, 3, err));
  return HX_OK;
}

hx_status net_ptv3_struct_build(net_ptv3_struct *s, const net_config *cfg, const net_input *in, int maps,
                                hx_err *err) {
  if (!s) return hx_errf(err, HX_EINVAL, "ptv3 structure: NULL argument");
  memset(s, 0, sizeof *s);
  const hx_status st = struct_build(s, cfg, in, maps, err);
  if (st != HX_OK) net_ptv3_struct_free(s);
  return st;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

void net_ptv3_work_sizes(net_ptv3_work *w, const net_config *cfg, const net_ptv3_struct *s) {
  memset(w, 0, sizeof *w);
  const size_t R = (size_t)cfg->mlp_ratio;
  for (int l = 0; l < s->L; l++) {
    const net_ptv3_level *lv = &s->lv[l];
    const size_t Ce = (size_t)cfg->enc_channels[l], Cd = l < s->L - 1 ? (size_t)cfg->dec_channels[l] : 0;
    const size_t C = max_sz(Ce, Cd);
    w->nc = max_sz(w->nc, lv->n * C);
    w->big = max_sz(w->big, lv->n * C * max_sz(3, R));
    if (l > 0) w->big = max_sz(w->big, s->lv[l - 1].n * Ce); /* pooling projection: rows of level l-1 */
    w->pc3 = max_sz(w->pc3, lv->sum_p * 3 * C);
    w->pc = max_sz(w->pc, lv->sum_p * C);
    w->slots = max_sz(w->slots, lv->sum_p);
  }
}

/* ---- attention over patches (fp32) --------------------------------------------------------------------- */

/* One (patch, head) unit after another: the scores of a query row in sc (the patch's length), its sums in double.
 * Units write disjoint outputs, so any split over threads gives the serial bits. */
typedef struct p3_attn_job {
  float *o;
  const float *qkv;
  const int32_t *cu;
  size_t C, longest;
  int H, D;
  float scale;
  unsigned char *oom; /* oom[u0] = 1: the range starting at unit u0 had no memory for its scores */
} p3_attn_job;

static void p3_attn_units(void *ctx, size_t u0, size_t u1) {
  const p3_attn_job *j = ctx;
  const size_t C = j->C, rs = 3 * C, D = (size_t)j->D;
  float *sc = malloc(j->longest * sizeof *sc);
  if (!sc) {
    j->oom[u0] = 1;
    return;
  }
  double acc[128];
  for (size_t u = u0; u < u1; u++) {
    const size_t p = u / (size_t)j->H, ho = (u % (size_t)j->H) * D;
    const size_t a = (size_t)j->cu[p], b = (size_t)j->cu[p + 1];
    for (size_t i = a; i < b; i++) {
      const float *q = j->qkv + i * rs + ho;
      float mx = -INFINITY;
      for (size_t k = a; k < b; k++) {
        const float *kr = j->qkv + k * rs + C + ho;
        float dot = 0.0f;
        for (size_t d = 0; d < D; d++) dot += q[d] * kr[d];
        sc[k - a] = dot * j->scale;
        if (sc[k - a] > mx) mx = sc[k - a];
      }
      double sum = 0.0;
      for (size_t d = 0; d < D; d++) acc[d] = 0.0;
      for (size_t k = a; k < b; k++) {
        const double e = exp((double)(sc[k - a] - mx));
        const float *v = j->qkv + k * rs + 2 * C + ho;
        sum += e;
        for (size_t d = 0; d < D; d++) acc[d] += e * (double)v[d];
      }
      float *y = j->o + i * C + ho;
      for (size_t d = 0; d < D; d++) y[d] = (float)(acc[d] / sum);
    }
  }
  free(sc);
}

hx_status net_ptv3_patch_attn_cpu(float *o, const float *qkv, const int32_t *cu, size_t n_patches, int H, int D,
                                  float scale, hx_err *err) {
  if (!o || !qkv || !cu || H < 1 || D < 1 || D > 128)
    return hx_errf(err, HX_EINVAL, "ptv3 attention: bad arguments (H %d, D %d; D <= 128)", H, D);
  size_t longest = 1;
  for (size_t p = 0; p < n_patches; p++) {
    if (cu[p + 1] < cu[p]) return hx_errf(err, HX_EINVAL, "ptv3 attention: cu_seqlens decrease at %zu", p);
    longest = max_sz(longest, (size_t)(cu[p + 1] - cu[p]));
  }
  const size_t units = n_patches * (size_t)H;
  if (units == 0) return HX_OK;
  unsigned char *oom = calloc(units, 1);
  if (!oom) return hx_errf(err, HX_ENOMEM, "ptv3 attention: %zu units", units);
  p3_attn_job j = {o, qkv, cu, (size_t)H * (size_t)D, longest, H, D, scale, oom};
  hx_par_for(units, 1, p3_attn_units, &j); /* a unit is a patch's rows x its keys: worth a thread each */
  int failed = 0;
  for (size_t u = 0; u < units && !failed; u++) failed = oom[u];
  free(oom);
  return failed ? hx_errf(err, HX_ENOMEM, "ptv3 attention: scores of %zu rows", longest) : HX_OK;
}

/* ---- CPU forward -------------------------------------------------------------------------------------- */

typedef struct p3_cpu {
  float *t, *u, *big, *pc3, *pc, *scale, *shift;
  uint32_t *order_p, *inverse_p;
} p3_cpu;

/* y = GELU(BN(x)) in place, BN folded. */
static hx_status bn_gelu(p3_cpu *w, float *y, size_t rows, const net_norm *bn, hx_err *err) {
  nl_bn_fold(w->scale, w->shift, bn->w, bn->b, bn->mean, bn->var, bn->C, NET_PTV3_BN_EPS);
  return nl_affine_act_cpu(y, y, w->scale, w->shift, rows, bn->C, NL_ACT_GELU, err);
}

static hx_status lin(float *y, const float *x, const net_lin *l, size_t rows, nl_act act, int acc, hx_err *err) {
  return nl_linear_cpu(y, x, l->w, l->b, rows, l->in, l->out, act, acc, err);
}

/* One block on level lv: x [n, C] updated in place; src is what the CPE convolves (x, or the projected skip in
 * the first decoder block: the m1 quirk); r = order row. */
static hx_status block_cpu(float *x, const float *src, const net_ptv3_level *lv, const net_ptv3_block *b, int r,
                           p3_cpu *w, hx_err *err) {
  const size_t n = lv->n, C = (size_t)b->C;
  /* x += LN(Linear(conv(src))) */
  HX_TRY(spc_conv_cpu(w->t, src, b->cpe_conv.w, b->cpe_conv.b, &lv->map, C, C, err));
  HX_TRY(lin(w->u, w->t, &b->cpe_lin, n, NL_ACT_NONE, 0, err));
  HX_TRY(nl_layernorm_add_cpu(x, w->u, b->cpe_norm.w, b->cpe_norm.b, n, C, NET_PTV3_LN_EPS, err));
  /* x += proj(unshuffle(attn(shuffle(qkv(LN1(x)))))) */
  HX_TRY(nl_layernorm_cpu(w->t, x, b->norm1.w, b->norm1.b, n, C, NET_PTV3_LN_EPS, err));
  HX_TRY(lin(w->big, w->t, &b->qkv, n, NL_ACT_NONE, 0, err));
  HX_TRY(shuf_compose_cpu(w->order_p, w->inverse_p, lv->order + (size_t)r * n, lv->inverse + (size_t)r * n, lv->pad,
                          lv->unpad, n, lv->sum_p));
  for (size_t sl = 0; sl < lv->sum_p; sl++)
    memcpy(w->pc3 + sl * 3 * C, w->big + (size_t)w->order_p[sl] * 3 * C, 3 * C * sizeof *w->pc3);
  const int D = b->C / b->H;
  HX_TRY(net_ptv3_patch_attn_cpu(w->pc, w->pc3, lv->cu, lv->n_cu - 1, b->H, D, (float)(1.0 / sqrt((double)D)), err));
  for (size_t i = 0; i < n; i++) memcpy(w->t + i * C, w->pc + (size_t)w->inverse_p[i] * C, C * sizeof *w->t);
  HX_TRY(lin(x, w->t, &b->proj, n, NL_ACT_NONE, 1, err));
  /* x += fc2(GELU(fc1(LN2(x)))) */
  HX_TRY(nl_layernorm_cpu(w->t, x, b->norm2.w, b->norm2.b, n, C, NET_PTV3_LN_EPS, err));
  HX_TRY(lin(w->big, w->t, &b->fc1, n, NL_ACT_GELU, 0, err));
  return lin(x, w->big, &b->fc2, n, NL_ACT_NONE, 1, err);
}

static hx_status keep_level(net_output *out, int slot, const char *name, const float *x, size_t rows, size_t C,
                            hx_err *err) {
  out->level[slot] = p3_malloc(rows * C, sizeof(float));
  if (!out->level[slot]) return hx_errf(err, HX_ENOMEM, "ptv3: level output %s", name);
  memcpy(out->level[slot], x, rows * C * sizeof(float));
  out->level_rows[slot] = rows, out->level_C[slot] = C;
  snprintf(out->level_name[slot], sizeof out->level_name[slot], "%s", name);
  return HX_OK;
}

typedef struct p3_fwd {
  const net_config *cfg;
  const net_ptv3_view *v;
  const net_ptv3_struct *s;
  const net_input *in;
  p3_cpu w;
  float *enc[NET_MAX_LEVELS], *dec[NET_MAX_LEVELS];
} p3_fwd;

static hx_status forward_body(p3_fwd *f, net_output *out, int keep_levels, hx_err *err) {
  const net_config *cfg = f->cfg;
  const net_ptv3_view *v = f->v;
  const net_ptv3_struct *s = f->s;
  p3_cpu *w = &f->w;
  const int L = s->L;
  net_ptv3_work ws;
  net_ptv3_work_sizes(&ws, cfg, s);
  size_t cmax = (size_t)cfg->in_channels;
  for (int l = 0; l < L; l++) cmax = max_sz(cmax, max_sz((size_t)cfg->enc_channels[l], (size_t)cfg->dec_channels[l]));
  P3_ALLOC(w->t, ws.nc);
  P3_ALLOC(w->u, ws.nc);
  P3_ALLOC(w->big, ws.big);
  P3_ALLOC(w->pc3, ws.pc3);
  P3_ALLOC(w->pc, ws.pc);
  P3_ALLOC(w->order_p, ws.slots);
  P3_ALLOC(w->inverse_p, s->n);
  P3_ALLOC(w->scale, cmax);
  P3_ALLOC(w->shift, cmax);
  for (int l = 0; l < L; l++) {
    P3_ALLOC(f->enc[l], s->lv[l].n * (size_t)cfg->enc_channels[l]);
    if (l < L - 1) P3_ALLOC(f->dec[l], s->lv[l].n * (size_t)cfg->dec_channels[l]);
  }
  /* embed */
  HX_TRY(spc_conv_cpu(f->enc[0], f->in->feat, v->stem.w, NULL, &s->stem_map, v->stem.in, v->stem.out, err));
  HX_TRY(bn_gelu(w, f->enc[0], s->n, &v->stem_bn, err));
  /* encoder */
  for (int l = 0; l < L; l++) {
    const net_ptv3_level *lv = &s->lv[l];
    const size_t C = (size_t)cfg->enc_channels[l];
    if (l > 0) {
      HX_TRY(lin(w->big, f->enc[l - 1], &v->down[l], s->lv[l - 1].n, NL_ACT_NONE, 0, err));
      HX_TRY(nl_segment_max_cpu(f->enc[l], w->big, lv->children, lv->idx_ptr, lv->n, C, err));
      HX_TRY(bn_gelu(w, f->enc[l], lv->n, &v->down_bn[l], err));
    }
    for (int i = 0; i < cfg->enc_depth[l]; i++)
      HX_TRY(block_cpu(f->enc[l], f->enc[l], lv, &v->enc[l][i], i % NET_PTV3_ORDERS, w, err));
  }
  /* decoder */
  for (int l = L - 2; l >= 0; l--) {
    const net_ptv3_level *lv = &s->lv[l], *child = &s->lv[l + 1];
    const size_t C = (size_t)cfg->dec_channels[l];
    const float *cx = l == L - 2 ? f->enc[L - 1] : f->dec[l + 1];
    HX_TRY(lin(w->t, cx, &v->up_proj[l], child->n, NL_ACT_NONE, 0, err));
    HX_TRY(bn_gelu(w, w->t, child->n, &v->up_bn[l], err));
    HX_TRY(lin(w->u, f->enc[l], &v->up_skip[l], lv->n, NL_ACT_NONE, 0, err));
    HX_TRY(bn_gelu(w, w->u, lv->n, &v->skip_bn[l], err));
    float *x = f->dec[l];
    HX_TRY(nl_gather_add_cpu(x, w->t, child->cluster, w->u, lv->n, C, err));
    /* m1 quirk: the first block's CPE convolves the projected skip (w->u), not the sum; block_cpu reads src
     * before it overwrites w->u */
    for (int i = 0; i < cfg->dec_depth[l]; i++)
      HX_TRY(block_cpu(x, i == 0 ? w->u : x, lv, &v->dec[l][i], i % NET_PTV3_ORDERS, w, err));
  }
  /* head */
  out->n = s->n;
  out->classes = (size_t)cfg->classes;
  P3_ALLOC(out->logits, s->n * out->classes);
  HX_TRY(lin(out->logits, f->dec[0], &v->head, s->n, NL_ACT_NONE, 0, err));
  if (keep_levels) {
    char name[16];
    int slot = 0;
    for (int l = 0; l < L; l++, slot++) {
      snprintf(name, sizeof name, "enc%d", l);
      HX_TRY(keep_level(out, slot, name, f->enc[l], s->lv[l].n, (size_t)cfg->enc_channels[l], err));
    }
    for (int l = L - 2; l >= 0; l--, slot++) {
      snprintf(name, sizeof name, "dec%d", l);
      HX_TRY(keep_level(out, slot, name, f->dec[l], s->lv[l].n, (size_t)cfg->dec_channels[l], err));
    }
    out->n_levels = (size_t)slot;
  }
  return HX_OK;
}

hx_status net_ptv3_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                               int keep_levels, hx_err *err) {
  if (!out || !cfg || !p || !in) return hx_errf(err, HX_EINVAL, "ptv3 forward: NULL argument");
  memset(out, 0, sizeof *out);
  p3_fwd f;
  memset(&f, 0, sizeof f);
  net_ptv3_view *v = malloc(sizeof *v);
  net_ptv3_struct *s = malloc(sizeof *s);
  hx_status st = v && s ? HX_OK : hx_errf(err, HX_ENOMEM, "ptv3 forward: views");
  if (st == HX_OK) st = net_ptv3_view_get(v, cfg, p, err);
  if (st == HX_OK) st = net_ptv3_struct_build(s, cfg, in, 1, err);
  if (st == HX_OK) {
    f.cfg = cfg, f.v = v, f.s = s, f.in = in;
    st = forward_body(&f, out, keep_levels, err);
    net_ptv3_struct_free(s);
  }
  p3_cpu *w = &f.w;
  free(w->t), free(w->u), free(w->big), free(w->pc3), free(w->pc), free(w->order_p), free(w->inverse_p);
  free(w->scale), free(w->shift);
  for (int l = 0; l < NET_MAX_LEVELS; l++) free(f.enc[l]), free(f.dec[l]);
  free(v), free(s);
  if (st != HX_OK) net_output_free(out);
  return st;
}
