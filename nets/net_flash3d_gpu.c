/*
 * net_flash3d_gpu.c - the Flash3D forward on the GPU (net_flash3d_gpu_ops, the vtable of nets_internal.h): the model of
 * net_flash3d.c's fp32 reference with fp16 (or bf16) activations and fp32 accumulation, composed from the nets layers
 * (nl_*), PSH (psh_variant_best), bucket-swin attention (battn_variant_best) and in-bucket pooling (bpool_pool with
 * bpool_variant_best). Host C only; compiled in CUDA builds.
 *
 * Rows and the spare cloud. Level 0 has exactly n rows. A pooled level's real row count depends on bucket parities
 * (net_flash3d.c), which the GPU PSH's races can change from one forward to the next, while a graphable forward must
 * launch with sizes fixed at prepare. So every pooled level is laid out for R_l = its rows bound
 * (net_f3d_level_shape.bound_rows): rows [0, n_l) are the real ones (pool order: bpool's output rows), rows
 * [n_l, R_l) are spare. Everything row-wise (Linear, LayerNorm, SwiGLU, adds, gathers) runs over R_l rows; the spare
 * rows' values are never read by a real row:
 *   - attention and pooling see only the real clouds' buckets (B * nb of them): a spare row is in no bucket;
 *   - a re-hashed level's PSH gets the spare rows as one more cloud (cloud B, offsets [n_l, R_l) computed on the
 *     device from the pooling plan), so real clouds keep their rows [0, n_l) and their own buckets; the spare cloud's
 *     buckets are left out of attention and pooling;
 *   - the pooling plan runs over B * nb + 1 buckets whose last count is 0, so out_start[B * nb] = n_{l+1} lands on
 *     the device (the next level's cloud offsets) with no read-back; the reduction runs over R_{l+1} output rows,
 *     the spare ones with members BPOOL_NONE (prepare) or a former forward's (in-bounds) members;
 *   - the unpooling index of a spare row (parent BPOOL_NONE) gathers row 0.
 * The slack is about nb / 2 rows per cloud and level: 1 / (2 x bucket x fill) of the rows (0.1% at bucket 512 and
 * the public rule's fills, 1% at bucket_fill 0.1).
 *
 * Per call:
 *   create    weights uploaded once into one net_alloc block: Linear weights in the dtype, biases, LayerNorm
 *             parameters and the pooling's folded BatchNorm in fp32; the unpooling projections with their BatchNorm
 *             folded into the Linear (W' = scale W, b' = scale b + shift) so that cuBLASLt's GELU epilogue finishes
 *             them; the embedding's weight zero-padded to 8 inputs (cuBLASLt's 16-byte rule); a cuBLASLt context.
 *   prepare   the level shapes (net_flash3d_shape_get), the attention scope tables (battn_plan_build: they depend
 *             on the number of buckets per cloud only, never on counts), the PSH / attention / pooling variants and
 *             the scratch they ask for, every buffer (policy below), the input uploaded (xyz, cloud offsets, features
 *             in the dtype padded to 8 columns), constant tables, then one forward and a synchronisation (warm-up:
 *             cuBLASLt's per-shape descriptors are made outside the timed region).
 *   forward   everything from the uploaded points: per level the PSH, feature gather, blocks, pooling (plan,
 *             sub-buckets, reduction, BN + GELU, next cloud offsets), unpooling and head; no allocation and no host
 *             synchronisation: graphable (cooperative PSH launches and bpool's programmatic launch capture).
 *   download  logits in input order (fp32 on the device); with keep_levels every level's real rows in pool order
 *             (the real row counts read back from the pooling plans; dtype bits converted on the host).
 *
 * Buffer policy (every device buffer from net_alloc; weights at create, the rest in prepare, held until the next
 * prepare or destroy):
 *   per level, persistent: the structure (PSH outputs perm / slot / bucket table / packed xyz and its cloud offsets,
 *     the pooling plan, members, parents, pooled xyz, the composed unpooling index, the scope table of every block)
 *     and the skip [R, C_dec] (what the unpooling into the level adds: the pooling makes it from its projection);
 *   the streams: a level's input in pool order ("pooled": the embedded input at level 0), its encoder stream x
 *     (rows in bucket order) and its decoder stream y. With net_config's keep_levels each level keeps its own, so
 *     download reads them after the forward; without (the default) each is held only while a later step reads it:
 *     x_l dies in the pooling's projection (the leaf Linear at the last level), the input in the gather into x,
 *     y_{l+1} in the unpooling's coarse projection into g, so every level's x shares one buffer [max R_l C_l] and
 *     every level's input and y another (the leaf reads x into y: two, never one);
 *   shared work buffers, each sized for the largest level and side that uses it: t [R, C] (LayerNorm outputs, for
 *     the sides whose norm is not inside qkv or whose MLP's LayerNorm is not inside its kernel), qkv [R, 3C] (and
 *     the attention's output o over its q columns, rows 3C apart), h1 [R, 2rC]
 *     (fc1 outputs where a block's MLP on this device is unfused, net_mlp_path_run, a chunk of net_mlp_chunk_rows
 *     at a time), g [R, rC] (SwiGLU outputs where it is not one kernel, a chunk at a time; the unpooling's coarse
 *     projection), h1 and g over qkv where both fit (no qkv row is live in the MLP or the unpooling), the pooling's
 *     projection [R_l, C_{l+1}] (over qkv where it fits: the level's blocks are done); one scratch block, the largest
 *     request of any PSH, attention or pooling launch (all run in stream order); an identity index (the slot of a
 *     level without a PSH of its own); logits in fp32 (in the dtype, in bucket and input order, over t and qkv where
 *     they fit: the head runs last).
 *
 * Ranges on the hooks (NET_COMPONENTS): "embed" (Linear of the input rows); "encL" around level L with "encL/pool"
 * (into level L from L-1: projection, level L-1's skip, bpool plan + assignment + mean, BN + GELU, next cloud
 * offsets and windows), "encL/psh", "encL/gather" (features into the new bucket order) and blocks "encL/blockB"
 * holding "norm", "qkv" (the norm inside it where net_ln_qkv_fused: no "norm"), "attn", "proj" (with the residual
 * add) and "mlp" (LayerNormMLP: LayerNorm, fc1, SwiGLU, fc2
 * with the residual add); "decL" with "decL/unpool" (coarse projection, gathered and added to the skip; at the last
 * level its middle Linear) and its blocks; "head" (Linear, rows back to input order, fp32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "nets/nets_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

#define G_L NET_MAX_LEVELS
#define G_D NET_F3D_MAX_DEPTH

typedef struct g_block {
  net_dln norm, mlp_norm;
  net_dlin qkv, proj, fc1, fc2;
  int C, H;
} g_block;

/* One block's attention: its scope table (host until uploaded, then device) and the variant of its side. */
typedef struct g_attn {
  uint32_t *h_scope, *scope;
  uint32_t num_scopes;
} g_attn;

typedef struct g_level {
  net_f3d_level_shape ls;
  size_t R;                   /* rows (the bound; exact at level 0) */
  uint32_t clouds;            /* PSH clouds: B, plus the spare cloud on a re-hashed pooled level */
  const psh_variant *psh;     /* hashed levels */
  const battn_variant *attn_v[2];
  g_attn attn[2][G_D];
  float *xyz_pool, *xyzp;     /* [R*3] pool order, bucket order (the same buffer without a PSH) */
  uint32_t *off;              /* l > 0: cloud offsets (hashed: [clouds + 1] of the PSH input, windows: [B + 1]) */
  uint32_t *perm, *slot;      /* hashed: [R]; otherwise perm NULL, slot the identity */
  uint32_t *start, *count;    /* the bucket table: hashed [clouds * nb + 1]; windows [B * nb + 1] (last count 0) */
  uint32_t *cnt_pool;         /* counts the pooling out of this level reads ([B * nb + 1], the last 0) */
  uint32_t *ctr;              /* PSH counters */
  uint32_t *ostart, *ocount;  /* l < L-1: pooling plan [B * nb + 1] */
  uint32_t *members, *parent; /* l < L-1: [R_{l+1} * rho], [R] */
  uint32_t *comp;             /* l < L-1: unpooling index slot_{l+1}[parent] [R] */
  uint32_t *off_idx;          /* l < L-1: {0, nb, ..., B * nb} (the next level's cloud offsets out of ostart) */
  void *pooled, *x, *y, *skip;
} g_level;

typedef struct f3g {
  net_config cfg;
  net_dtype dt;
  net_alloc alloc;
  int have_alloc;
  nl_blas *blas;
  const bpool_variant *pool_v;
  /* weights */
  void *wblock;
  size_t wbytes, inpad;
  net_dlin embed, head, leaf, pool[G_L], up[G_L], up_skip[G_L];
  net_daff pool_bn[G_L];
  g_block enc[G_L][G_D], dec[G_L][G_D];
  /* prepared */
  int prepared;
  net_f3d_shape shape;
  size_t n;
  uint32_t B;
  g_level lv[G_L];
  float *xyz;
  uint32_t *off0, *ident;
  void *feat, *t, *qkv, *o, *h1, *g, *logits_p, *logits;
  void *xs, *ys; /* without keep_levels: every level's encoder stream; every level's input and decoder stream */
  void *pproj;   /* the pooling's projection of a level's rows, [R_l, C_{l+1}] (over qkv where it fits) */
  float *logits32;
  size_t nc, t_n, h1_n, g_n, ident_n; /* element counts of the work buffers */
  void *scratch;
  size_t scratch_bytes;
  void **held;
  size_t n_held, cap_held, held_bytes;
  net_mem *mem; /* the sizing pass's breakdown (bytes); NULL in a forward object */
} f3g;

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

static hx_status cu_st(cudaError_t e, const char *what, hx_err *err) {
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "flash3d gpu: %s: %s", what, cudaGetErrorString(e));
}

/* ---- device memory --------------------------------------------------------------------------------------- */

static hx_status g_alloc(f3g *g, void **p, size_t bytes, const char *label, hx_err *err) {
  *p = NULL;
  bytes = hx_align256(bytes ? bytes : 1);
  if (g->have_alloc) HX_TRY(g->alloc.alloc(g->alloc.ctx, p, bytes, label, err));
  else HX_TRY(cu_st(cudaMalloc(p, bytes), label, err));
  if ((uintptr_t)*p & 255u) return hx_errf(err, HX_EINVAL, "flash3d gpu: %s is not 256-byte aligned", label);
  return HX_OK;
}

static void g_release(f3g *g, void *p) {
  if (!p) return;
  if (g->have_alloc) g->alloc.release(g->alloc.ctx, p);
  else cudaFree(p);
}

/* One allocation of prepare, remembered for unprepare. */
static hx_status g_hold(f3g *g, void **p, size_t bytes, const char *label, hx_err *err) {
  if (g->n_held == g->cap_held) {
    const size_t cap = g->cap_held ? 2 * g->cap_held : 128;
    void **h = realloc(g->held, cap * sizeof *h);
    if (!h) return hx_errf(err, HX_ENOMEM, "flash3d gpu: allocation list");
    g->held = h, g->cap_held = cap;
  }
  void *q = NULL;
  const hx_status st = g_alloc(g, &q, bytes, label, err);
  if (q) g->held[g->n_held++] = q, g->held_bytes += hx_align256(bytes ? bytes : 1);
  *p = q;
  return st;
}

static void unprepare(f3g *g) {
  for (size_t i = g->n_held; i > 0; i--) g_release(g, g->held[i - 1]);
  g->n_held = 0, g->held_bytes = 0;
  for (int l = 0; l < G_L; l++)
    for (int s = 0; s < 2; s++)
      for (int b = 0; b < G_D; b++) free(g->lv[l].attn[s][b].h_scope);
  memset(g->lv, 0, sizeof g->lv);
  g->xyz = g->logits32 = NULL;
  g->off0 = g->ident = NULL;
  g->feat = g->t = g->qkv = g->o = g->h1 = g->g = g->logits_p = g->logits = g->scratch = NULL;
  g->xs = g->ys = g->pproj = NULL;
  g->prepared = 0;
}

/* ---- weights ---------------------------------------------------------------------------------------------- */
/* One block for every parameter (net_pack): a Linear padded to in_pad input columns, with the BatchNorm after it
 * folded in where bn is given (unpooling's projections); pooling's BatchNorm folded into an affine. */
static void pk_lin(net_pack *k, net_dlin *l, const net_lin *h, size_t in, size_t in_pad, size_t out,
                   const net_norm *bn) {
  net_pack_lin(k, l, h, in, in_pad, out, bn, NET_F3D_BN_EPS);
}

static void pk_bn(net_pack *k, net_daff *a, const net_norm *h, size_t C) { net_pack_bn(k, a, h, C, NET_F3D_BN_EPS); }

static void g_weights(f3g *g, const net_f3d_view *v, net_pack *k) {
  const net_config *c = &g->cfg;
  const int L = c->levels;
  const size_t r = (size_t)c->mlp_ratio;
  pk_lin(k, &g->embed, v ? &v->embed : NULL, (size_t)c->in_channels, g->inpad, (size_t)c->enc_channels[0], NULL);
  pk_lin(k, &g->head, v ? &v->head : NULL, (size_t)c->dec_channels[0], (size_t)c->dec_channels[0], (size_t)c->classes, NULL);
  pk_lin(k, &g->leaf, v ? &v->leaf : NULL, (size_t)c->enc_channels[L - 1], (size_t)c->enc_channels[L - 1], (size_t)c->dec_channels[L - 1], NULL);
  for (int l = 0; l < L; l++) {
    if (l < L - 1) {
      const size_t ce = (size_t)c->enc_channels[l], ce1 = (size_t)c->enc_channels[l + 1];
      const size_t cd = (size_t)c->dec_channels[l], cd1 = (size_t)c->dec_channels[l + 1];
      pk_lin(k, &g->pool[l], v ? &v->pool[l] : NULL, ce, ce, ce1, NULL);
      pk_bn(k, &g->pool_bn[l], v ? &v->pool_bn[l] : NULL, ce1);
      pk_lin(k, &g->up[l], v ? &v->up[l] : NULL, cd1, cd1, cd, v ? &v->up_bn[l] : NULL);
      pk_lin(k, &g->up_skip[l], v ? &v->up_skip[l] : NULL, ce1, ce1, cd, v ? &v->skip_bn[l] : NULL);
    }
    for (int dec = 0; dec < 2; dec++) {
      const size_t C = (size_t)(dec ? c->dec_channels[l] : c->enc_channels[l]);
      const int depth = dec ? c->dec_depth[l] : c->enc_depth[l];
      for (int i = 0; i < depth; i++) {
        g_block *b = dec ? &g->dec[l][i] : &g->enc[l][i];
        const net_f3d_block *h = v ? (dec ? &v->dec[l][i] : &v->enc[l][i]) : NULL;
        b->C = (int)C, b->H = dec ? c->dec_heads[l] : c->enc_heads[l];
        net_pack_ln(k, &b->norm, h ? &h->norm : NULL, C);
        pk_lin(k, &b->qkv, h ? &h->qkv : NULL, C, C, 3 * C, NULL);
        pk_lin(k, &b->proj, h ? &h->proj : NULL, C, C, C, NULL);
        net_pack_ln(k, &b->mlp_norm, h ? &h->mlp_norm : NULL, C);
        pk_lin(k, &b->fc1, h ? &h->fc1 : NULL, C, C, 2 * r * C, NULL);
        pk_lin(k, &b->fc2, h ? &h->fc2 : NULL, r * C, r * C, C, NULL);
      }
    }
  }
}

/* What this forward supports beyond the CPU reference: shapes the GPU layers take. */
static hx_status check_gpu_config(const net_config *c, hx_err *err) {
  if (c->kind != 1 || c->levels < 2 || c->levels > G_L)
    return hx_errf(err, HX_EINVAL, "flash3d gpu: %s is not a Flash3D configuration of 2..%d levels", c->name, G_L);
  if (c->classes % 8)
    return hx_errf(err, HX_EUNSUPPORTED, "flash3d gpu: %s: %d classes (a multiple of 8 is required by cuBLASLt)",
                   c->name, c->classes);
  return HX_OK; /* the rest (channels multiples of 16, head dims) is net_flash3d.c's configuration check */
}

static void destroy(void *impl) {
  f3g *g = impl;
  if (!g) return;
  unprepare(g);
  free(g->held);
  if (g->wblock) g_release(g, g->wblock);
  nl_blas_destroy(g->blas);
  free(g);
}

static hx_status create_body(f3g *g, const net_params *p, hx_err *err) {
  net_f3d_view *v = malloc(sizeof *v);
  if (!v) return hx_errf(err, HX_ENOMEM, "flash3d gpu: view");
  hx_status st = net_flash3d_view_get(v, &g->cfg, p, err);
  net_pack k = {NULL, NULL, 0, g->dt};
  g_weights(g, NULL, &k); /* sizing */
  g->wbytes = k.used;
  if (st == HX_OK) st = g_alloc(g, &g->wblock, g->wbytes, "flash3d weights", err);
  char *host = st == HX_OK ? calloc(1, g->wbytes ? g->wbytes : 1) : NULL;
  if (st == HX_OK && !host) st = hx_errf(err, HX_ENOMEM, "flash3d gpu: %zu bytes of weight staging", g->wbytes);
  if (st == HX_OK) {
    k = (net_pack){host, g->wblock, 0, g->dt};
    g_weights(g, v, &k);
    st = cu_st(cudaMemcpy(g->wblock, host, g->wbytes, cudaMemcpyHostToDevice), "weight upload", err);
  }
  free(host);
  free(v);
  if (st == HX_OK) st = nl_blas_create(&g->blas, g->cfg.lt_tune ? NL_BLAS_TUNED : NL_BLAS_FIRST, err);
  return st;
}

static hx_status create(void **impl, const net_config *cfg, const net_params *p, net_dtype dt, const net_alloc *alloc,
                        hx_err *err) {
  *impl = NULL;
  HX_TRY(check_gpu_config(cfg, err));
  f3g *g = calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "flash3d gpu: forward object");
  g->cfg = *cfg;
  g->dt = dt;
  g->inpad = ((size_t)cfg->in_channels + 7) & ~(size_t)7;
  if (alloc && alloc->alloc && alloc->release) g->alloc = *alloc, g->have_alloc = 1;
  g->pool_v = bpool_variant_best();
  hx_status st = g->pool_v ? HX_OK : hx_errf(err, HX_ENODEV, "flash3d gpu: no pooling variant");
  if (st == HX_OK) st = create_body(g, p, err);
  if (st != HX_OK) {
    destroy(g);
    return st;
  }
  *impl = g;
  return HX_OK;
}

/* ---- sizes: level plans, variants, scratch, the buffer list ------------------------------------------------- */

static battn_dtype g_battn_dt(net_dtype dt) { return dt == NET_BF16 ? BATTN_BF16 : BATTN_F16; }

/* Attention params of block (side, b) of a level: packed qkv [R, 3, H, D] into o [R, H, D] over the real clouds'
 * buckets. With host_table (sizing and variant choice, which read no table) host arrays stand in for the device
 * tables. */
static void attn_params(battn_params *bp, const f3g *g, const g_level *lv, int side, int b,
                        const uint32_t *host_table) {
  const int l = (int)(lv - g->lv);
  const int Cs = side ? g->cfg.dec_channels[l] : g->cfg.enc_channels[l];
  const int H = side ? g->cfg.dec_heads[l] : g->cfg.enc_heads[l], D = Cs / H;
  const g_attn *a = &lv->attn[side][b];
  battn_params_init(bp, (int64_t)lv->R, H, D, g_battn_dt(g->dt), NULL);
  bp->q_row_stride = bp->k_row_stride = bp->v_row_stride = 3 * (int64_t)Cs;
  const uint16_t *q = g->qkv;
  bp->q = q, bp->k = q ? q + Cs : NULL, bp->v = q ? q + 2 * Cs : NULL;
  bp->o = g->o, bp->o_row_stride = 3 * (int64_t)Cs; /* over q's columns (g_buffers) */
  bp->lse = NULL;
  bp->bucket_start = host_table ? host_table : lv->start, bp->bucket_count = host_table ? host_table : lv->count;
  bp->scope = host_table ? a->h_scope : a->scope;
  bp->num_buckets = g->B * lv->ls.nb;
  bp->num_scopes = a->num_scopes;
  bp->buckets_per_scope = lv->ls.scope;
  bp->max_bucket_rows = lv->ls.max_bucket;
  bp->max_scope_rows = (uint32_t)(lv->R < (size_t)lv->ls.scope * lv->ls.max_bucket ? lv->R
                                                                                     : (size_t)lv->ls.scope * lv->ls.max_bucket);
}

/* Level sizes, host scope tables, variants and the scratch every launch asks for. */
static hx_status plan_levels(f3g *g, const net_input *in, hx_err *err) {
  const net_config *c = &g->cfg;
  HX_TRY(net_flash3d_shape_get(&g->shape, c, in, err));
  g->n = in->n, g->B = in->B;
  const int L = c->levels;
  const uint32_t B = g->B;
  size_t most = 0, sb = 0;
  for (int l = 0; l < L; l++) {
    g_level *lv = &g->lv[l];
    lv->ls = g->shape.lv[l];
    lv->R = lv->ls.bound_rows;
    if (lv->R > PSH_MAX_POINTS) return hx_errf(err, HX_EUNSUPPORTED, "flash3d gpu: level %d: %zu rows", l, lv->R);
    lv->clouds = lv->ls.hashed && l > 0 ? B + 1 : B;
    const uint32_t nbt = B * lv->ls.nb;
    /* scope tables: the plan of every block on a layout of this many buckets per cloud (counts play no part) */
    uint32_t *zero = calloc(nbt ? nbt : 1, sizeof *zero), *cb = malloc((B + 1) * sizeof *cb);
    if (!zero || !cb) {
      free(zero), free(cb);
      return hx_errf(err, HX_ENOMEM, "flash3d gpu: plan tables");
    }
    for (uint32_t k = 0; k <= B; k++) cb[k] = k * lv->ls.nb;
    hx_status st = HX_OK;
    for (int side = 0; side < 2 && st == HX_OK; side++) {
      const int depth = side ? c->dec_depth[l] : c->enc_depth[l];
      for (int b = 0; b < depth && st == HX_OK; b++) {
        battn_plan_kind kind;
        uint32_t value;
        battn_plan pl;
        net_flash3d_block_plan(c, &lv->ls, side, l, b, &kind, &value);
        st = battn_plan_build(&pl, kind, value, lv->ls.scope, zero, zero, cb, B, err);
        if (st != HX_OK) break;
        lv->attn[side][b].h_scope = pl.scope, lv->attn[side][b].num_scopes = pl.num_scopes;
        pl.scope = NULL;
        battn_plan_free(&pl);
      }
    }
    /* attention variants (one per side: the plan kind does not change the choice) and their scratch */
    for (int side = 0; side < 2 && st == HX_OK; side++) {
      const int depth = side ? c->dec_depth[l] : c->enc_depth[l];
      battn_params bp;
      if (depth > 0) {
        attn_params(&bp, g, lv, side, 0, zero);
        if (c->attn_force <= 0) st = battn_variant_best(&lv->attn_v[side], &bp, err);
        else if (!(lv->attn_v[side] = battn_variant_by_id(c->attn_force - 1)))
          st = hx_errf(err, HX_EINVAL, "flash3d gpu: no attention variant v%d", c->attn_force - 1);
      }
      for (int b = 0; b < depth && st == HX_OK; b++) {
        attn_params(&bp, g, lv, side, b, zero);
        st = lv->attn_v[side]->fn(&bp, NULL, &sb, NULL, err);
        most = max_sz(most, sb);
      }
    }
    free(zero), free(cb);
    HX_TRY(st);
    /* PSH */
    if (lv->ls.hashed) {
      HX_TRY(psh_variant_best(&lv->psh, (uint32_t)lv->R, lv->clouds, &lv->ls.psh, err));
      if (!lv->psh) return hx_errf(err, HX_ENODEV, "flash3d gpu: no PSH variant");
      psh_out o;
      memset(&o, 0, sizeof o);
      psh_in pi = {NULL, NULL, lv->clouds, (uint32_t)lv->R};
      HX_TRY(lv->psh->fn(NULL, &sb, &o, &pi, &lv->ls.psh, NULL, err));
      most = max_sz(most, sb);
    }
  }
  /* pooling out of every level but the last */
  for (int l = 0; l + 1 < L; l++) {
    const g_level *lv = &g->lv[l], *nx = &g->lv[l + 1];
    bpool_params pp;
    memset(&pp, 0, sizeof pp);
    pp.n_rows = (uint32_t)lv->R, pp.nbuckets = B * lv->ls.nb + 1, pp.rho = NET_F3D_RHO;
    pp.channels = (uint32_t)c->enc_channels[l + 1], pp.n_out = (uint32_t)nx->R;
    pp.dt = g->dt == NET_BF16 ? PSH_BF16 : PSH_F32, pp.op = BPOOL_MEAN;
    HX_TRY(bpool_pool(g->pool_v, &pp, NULL, &sb, NULL, err));
    most = max_sz(most, sb);
  }
  /* the whole-MLP kernel's (its Stream-K partial sums on the wgmma kernel's widths; nets.h) */
  for (int l = 0; l < L; l++)
    for (int side = 0; side < 2; side++) {
      const size_t C = (size_t)(side ? c->dec_channels[l] : c->enc_channels[l]), H = (size_t)c->mlp_ratio * C;
      if ((side ? c->dec_depth[l] : c->enc_depth[l]) == 0 || net_mlp_path_of(c, C, H) != NET_MLP_WHOLE) continue;
      HX_TRY(nl_ln_mlp_gpu(NULL, NULL, NULL, NET_F3D_LN_EPS, NULL, NULL, NULL, NULL, g->lv[l].R, C, H, NL_MLP_SWIGLU,
                           NULL, &sb, g->dt, NULL, err));
      most = max_sz(most, sb);
    }
  g->scratch_bytes = most;
  return HX_OK;
}

/* Every buffer prepare allocates, in one list: `need` allocates it (prepare) or adds its bytes (sizing). */
typedef hx_status (*g_need_fn)(f3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err);

static hx_status g_buffers(f3g *g, g_need_fn need, hx_err *err) {
  const net_config *c = &g->cfg;
  const int L = c->levels;
  const uint32_t B = g->B;
  const size_t E = 2, r = (size_t)c->mlp_ratio, K = (size_t)c->classes; /* E: bytes of a dtype value */
  size_t nc = 0, tn = 0, h1 = 0, gw = 0, ident = 0, pp = 0;
  for (int l = 0; l < L; l++) {
    const size_t R = g->lv[l].R;
    nc = max_sz(nc, R * max_sz((size_t)c->enc_channels[l], (size_t)c->dec_channels[l]));
    /* Per side with blocks, by the MLP's path on this device (net_mlp_path_run; the forward falls back as sized):
     * t for a side whose block writes a LayerNorm's rows (norm.1 not inside qkv, net_ln_qkv_fused, or the MLP's
     * LayerNorm not inside its kernel); h1 and g for the levels that use them: a block's MLP off the one-kernel path
     * writes SwiGLU's H-wide rows to g, and unfused its fc1's 2H-wide rows to h1, a chunk of rows at a time
     * (net_mlp_chunk_rows); the unpooling into level l writes its coarse projection (level l + 1's rows) to g */
    for (int side = 0; side < 2; side++) {
      const size_t C = (size_t)(side ? c->dec_channels[l] : c->enc_channels[l]), H = r * C;
      if (!(side ? c->dec_depth[l] : c->enc_depth[l])) continue;
      const net_mlp_path mp = net_mlp_path_run(c, C, H);
      if (!net_ln_qkv_fused(c, C) || !(c->ln_fused && mp == NET_MLP_WHOLE)) tn = max_sz(tn, R * C);
      const size_t rows = net_mlp_chunk_rows(c, R, H);
      if (mp != NET_MLP_WHOLE) gw = max_sz(gw, rows * H);
      if (mp == NET_MLP_UNFUSED) h1 = max_sz(h1, rows * 2 * H);
    }
    if (l + 1 < L) {
      gw = max_sz(gw, g->lv[l + 1].R * (size_t)c->dec_channels[l]);
      pp = max_sz(pp, R * (size_t)c->enc_channels[l + 1]);
    }
    if (!g->lv[l].ls.hashed) ident = max_sz(ident, R);
  }
  g->nc = nc, g->t_n = tn, g->h1_n = h1, g->g_n = gw, g->ident_n = ident;
#define NEED(slot, bytes, kind, label) HX_TRY(need(g, (void **)(slot), (bytes), (kind), (label), err))
  NEED(&g->xyz, g->n * 12, NET_MEM_IO, "flash3d xyz");
  NEED(&g->off0, (B + 1) * 4, NET_MEM_IO, "flash3d cloud offsets");
  NEED(&g->feat, g->n * g->inpad * E, NET_MEM_IO, "flash3d input features");
  if (ident) NEED(&g->ident, ident * 4, NET_MEM_STRUCTURE, "flash3d identity index");
  for (int l = 0; l < L; l++) {
    g_level *lv = &g->lv[l];
    const size_t R = lv->R, nbt = (size_t)B * lv->ls.nb;
    const size_t ce = (size_t)c->enc_channels[l], cd = (size_t)c->dec_channels[l];
    if (l > 0) NEED(&lv->xyz_pool, R * 12, NET_MEM_STRUCTURE, "flash3d pooled xyz");
    if (l > 0) NEED(&lv->off, (lv->clouds + 1) * 4, NET_MEM_STRUCTURE, "flash3d level cloud offsets");
    if (!lv->ls.hashed && l > 0) {
      NEED(&lv->start, (nbt + 1) * 4, NET_MEM_STRUCTURE, "flash3d window starts");
      NEED(&lv->count, (nbt + 1) * 4, NET_MEM_STRUCTURE, "flash3d window counts");
    }
    if (lv->ls.hashed) {
      NEED(&lv->perm, R * 4, NET_MEM_STRUCTURE, "flash3d perm");
      NEED(&lv->slot, R * 4, NET_MEM_STRUCTURE, "flash3d slot");
      NEED(&lv->start, ((size_t)lv->clouds * lv->ls.nb + 1) * 4, NET_MEM_STRUCTURE, "flash3d bucket starts");
      NEED(&lv->count, ((size_t)lv->clouds * lv->ls.nb + 1) * 4, NET_MEM_STRUCTURE, "flash3d bucket counts");
      NEED(&lv->xyzp, R * 12, NET_MEM_STRUCTURE, "flash3d packed xyz");
      NEED(&lv->ctr, PSH_NCOUNTERS * 4, NET_MEM_STRUCTURE, "flash3d PSH counters");
      if (l > 0 && l + 1 < L) NEED(&lv->cnt_pool, (nbt + 1) * 4, NET_MEM_STRUCTURE, "flash3d pooling counts");
    }
    for (int side = 0; side < 2; side++)
      for (int b = 0; b < (side ? c->dec_depth[l] : c->enc_depth[l]); b++)
        NEED(&lv->attn[side][b].scope, (size_t)lv->attn[side][b].num_scopes * lv->ls.scope * 4, NET_MEM_STRUCTURE,
             "flash3d scopes");
    if (l + 1 < L) {
      const size_t R1 = g->lv[l + 1].R;
      NEED(&lv->ostart, (nbt + 1) * 4, NET_MEM_STRUCTURE, "flash3d pooling starts");
      NEED(&lv->ocount, (nbt + 1) * 4, NET_MEM_STRUCTURE, "flash3d pooling counts out");
      NEED(&lv->members, R1 * NET_F3D_RHO * 4, NET_MEM_STRUCTURE, "flash3d pooling members");
      NEED(&lv->parent, R * 4, NET_MEM_STRUCTURE, "flash3d pooling parents");
      NEED(&lv->comp, R * 4, NET_MEM_STRUCTURE, "flash3d unpooling index");
      NEED(&lv->off_idx, (B + 1) * 4, NET_MEM_STRUCTURE, "flash3d cloud offset index");
      NEED(&lv->skip, R * cd * E, NET_MEM_LEVELS, "flash3d skip");
    }
    if (c->keep_levels) {
      if (lv->ls.hashed) NEED(&lv->pooled, R * ce * E, NET_MEM_LEVELS, "flash3d level input");
      NEED(&lv->x, R * ce * E, NET_MEM_LEVELS, "flash3d encoder stream");
      NEED(&lv->y, R * cd * E, NET_MEM_LEVELS, "flash3d decoder stream");
    }
  }
  if (!c->keep_levels) { /* the streams shared by the levels (wire_levels; the policy at the top) */
    size_t xs = 0, ys = 0;
    for (int l = 0; l < L; l++) {
      const size_t R = g->lv[l].R;
      xs = max_sz(xs, R * (size_t)c->enc_channels[l]);
      ys = max_sz(ys, R * (size_t)c->dec_channels[l]);
      if (g->lv[l].ls.hashed) ys = max_sz(ys, R * (size_t)c->enc_channels[l]);
    }
    NEED(&g->xs, xs * E, NET_MEM_LEVELS, "flash3d encoder streams (shared)");
    NEED(&g->ys, ys * E, NET_MEM_LEVELS, "flash3d inputs/decoder streams (shared)");
  }
  if (tn) NEED(&g->t, tn * E, NET_MEM_WORK, "flash3d work t");
  NEED(&g->qkv, 3 * nc * E, NET_MEM_WORK, "flash3d work qkv");
  /* the attention's output over q's columns of qkv (attn_params; battn_params' o may lie over q, kernels.h) */
  g->o = g->qkv;
  /* the pooling's projection over qkv where it fits (the blocks of the level are done when it pools) */
  if (pp <= 3 * nc) g->pproj = g->qkv;
  else NEED(&g->pproj, pp * E, NET_MEM_WORK, "flash3d pooling projection");
  /* h1 and g over qkv where both fit (h1 first, g from the next 256-byte boundary): the MLP and the unpooling run
   * between a level's blocks' attention and the next block's qkv, so no qkv row is live while they write */
  if (hx_align256(h1 * E) + gw * E <= 3 * nc * E) {
    g->h1 = g->qkv, g->g = g->qkv ? (char *)g->qkv + hx_align256(h1 * E) : NULL; /* the sizing pass holds none */
  } else {
    NEED(&g->h1, h1 * E, NET_MEM_WORK, "flash3d work fc1");
    NEED(&g->g, gw * E, NET_MEM_WORK, "flash3d work swiglu");
  }
  /* the head's logits in bucket order, then in input order, over work buffers the head leaves dead */
  if (g->n * K <= tn) {
    g->logits_p = g->t, g->logits = g->qkv;
  } else {
    NEED(&g->logits_p, g->n * K * E, NET_MEM_IO, "flash3d logits (bucket order)");
    NEED(&g->logits, g->n * K * E, NET_MEM_IO, "flash3d logits");
  }
  NEED(&g->logits32, g->n * K * 4, NET_MEM_IO, "flash3d logits fp32");
  NEED(&g->scratch, g->scratch_bytes, NET_MEM_SCRATCH, "flash3d scratch");
#undef NEED
  return HX_OK;
}

static hx_status need_count(f3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err) {
  (void)slot, (void)err;
  g->held_bytes += hx_align256(bytes ? bytes : 1);
  net_mem_add(g->mem, label, kind, bytes);
  return HX_OK;
}

static hx_status need_alloc(f3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err) {
  (void)kind;
  return g_hold(g, slot, bytes, label, err);
}

static void free_host_scopes(f3g *g) {
  for (int l = 0; l < G_L; l++)
    for (int s = 0; s < 2; s++)
      for (int b = 0; b < G_D; b++) free(g->lv[l].attn[s][b].h_scope), g->lv[l].attn[s][b].h_scope = NULL;
}

static hx_status bytes(net_mem *out, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err) {
  if (!out) return hx_errf(err, HX_EINVAL, "flash3d gpu bytes: NULL output");
  HX_TRY(check_gpu_config(cfg, err));
  f3g *g = calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "flash3d gpu bytes: sizing object");
  g->cfg = *cfg, g->dt = dt, g->mem = out;
  g->inpad = ((size_t)cfg->in_channels + 7) & ~(size_t)7;
  g->pool_v = bpool_variant_best();
  hx_status st = g->pool_v ? plan_levels(g, in, err) : hx_errf(err, HX_ENODEV, "flash3d gpu: no pooling variant");
  if (st == HX_OK) st = g_buffers(g, need_count, err);
  net_pack k = {NULL, NULL, 0, dt};
  g_weights(g, NULL, &k);
  if (st == HX_OK) net_mem_add(out, "flash3d weights", NET_MEM_WEIGHTS, k.used); /* one block, at create */
  free_host_scopes(g);
  free(g);
  return st;
}

/* ---- the forward's steps ---------------------------------------------------------------------------------- */

typedef struct g_run {
  f3g *g;
  const net_hooks *h;
  struct CUstream_st *cs;
  hx_err *err;
} g_run;

static void rng(g_run *r, const char *name, int begin) { net_range(r->h, name, begin, r->cs); }

static hx_status lin_gpu(g_run *r, void *y, const void *x, const net_dlin *l, size_t rows, nl_act act, int acc) {
  return nl_linear_gpu(r->g->blas, y, x, l->w, l->b, rows, l->in, l->out, act, acc, r->g->dt, r->cs, r->err);
}

static hx_status gather_rows(g_run *r, void *y, const void *x, const uint32_t *idx, size_t rows, size_t C) {
  return nl_gather_rows_gpu(y, x, idx, rows, C, r->g->dt, r->cs, r->err);
}

/* The PSH of level l over its points in pool order. */
static hx_status step_psh(g_run *r, int l) {
  f3g *g = r->g;
  g_level *lv = &g->lv[l];
  psh_out o = {NULL, NULL, lv->count, lv->start, lv->slot, lv->perm, lv->xyzp, lv->ctr};
  psh_in pi = {lv->xyz_pool, l ? lv->off : g->off0, lv->clouds, (uint32_t)lv->R};
  size_t sb = g->scratch_bytes;
  return lv->psh->fn(g->scratch, &sb, &o, &pi, &lv->ls.psh, r->cs, r->err);
}

/* x += fc2(SwiGLU(fc1(t))) over k rows off the one-kernel path: fc1 + SwiGLU as one kernel (fc1's 2H-wide row on
 * chip) into g->g, or fc1 into g->h1 and the SwiGLU pass; then fc2 with the residual add. */
static hx_status mlp_rows(g_run *r, const g_block *bk, void *x, const void *t, size_t k, size_t C, size_t hid,
                          net_mlp_path path) {
  f3g *g = r->g;
  /* g and h1 hold what net_mlp_path_run said this device's path writes for a chunk; a kernel refused past it (never,
   * by its rule) must not write past them */
  if (k * hid > g->g_n)
    return hx_errf(r->err, HX_EINVAL, "flash3d gpu: the MLP at C = %zu left its one kernel; its work buffer was "
                   "sized for that kernel", C);
  hx_status st = HX_EUNSUPPORTED;
  if (path != NET_MLP_UNFUSED && nl_linear_swiglu_gpu_takes(C, hid)) {
    st = nl_linear_swiglu_gpu(g->g, t, bk->fc1.w, bk->fc1.b, k, C, hid, g->dt, r->cs, r->err);
    (void)net_unsupported(st, r->err); /* st stays HX_EUNSUPPORTED: the unfused path below */
  }
  if (st == HX_EUNSUPPORTED) {
    if (k * 2 * hid > g->h1_n)
      return hx_errf(r->err, HX_EINVAL, "flash3d gpu: the MLP at C = %zu left its fc1 + SwiGLU kernel; its work "
                     "buffer was sized for that kernel", C);
    HX_TRY(lin_gpu(r, g->h1, t, &bk->fc1, k, NL_ACT_NONE, 0));
    st = nl_swiglu_gpu(g->g, g->h1, k, hid, g->dt, r->cs, r->err);
  }
  HX_TRY(st);
  return lin_gpu(r, x, g->g, &bk->fc2, k, NL_ACT_NONE, 1);
}

/* x += fc2(SwiGLU(fc1(t))) on net_mlp_path_of's path: the whole MLP as one kernel (the hidden row on chip), else
 * mlp_rows over chunks of net_mlp_chunk_rows rows; a kernel the device cannot run (HX_EUNSUPPORTED, nets.h) falls
 * to the next path. */
static hx_status mlp(g_run *r, const g_block *bk, void *x, size_t n, size_t C, size_t hid) {
  f3g *g = r->g;
  const net_mlp_path path = net_mlp_path_of(&g->cfg, C, hid);
  if (path == NET_MLP_WHOLE) {
    size_t sb = g->scratch_bytes;
    const hx_status st = nl_mlp_gpu(x, g->t, bk->fc1.w, bk->fc1.b, bk->fc2.w, bk->fc2.b, n, C, hid, NL_MLP_SWIGLU,
                                    g->scratch, &sb, g->dt, r->cs, r->err);
    if (!net_unsupported(st, r->err)) return st;
  }
  const size_t rows = net_mlp_chunk_rows(&g->cfg, n, hid), row_bytes = C * 2; /* a dtype value: 2 bytes */
  for (size_t r0 = 0; r0 < n; r0 += rows)
    HX_TRY(mlp_rows(r, bk, (char *)x + r0 * row_bytes, (const char *)g->t + r0 * row_bytes,
                    n - r0 < rows ? n - r0 : rows, C, hid, path));
  return HX_OK;
}

static hx_status step_block(g_run *r, int l, int side, int b, void *x, const char *path) {
  f3g *g = r->g;
  g_level *lv = &g->lv[l];
  const g_block *bk = side ? &g->dec[l][b] : &g->enc[l][b];
  const size_t n = lv->R, C = (size_t)bk->C, hid = (size_t)g->cfg.mlp_ratio * C;
  char name[96];
  battn_params bp;
  attn_params(&bp, g, lv, side, b, NULL);
#define RANGE(part, body)                                                                                 \
  do {                                                                                                    \
    snprintf(name, sizeof name, "%s/%s", path, part);                                                     \
    rng(r, name, 1);                                                                                      \
    const hx_status rs_ = (body);                                                                         \
    rng(r, name, 0);                                                                                      \
    HX_TRY(rs_);                                                                                          \
  } while (0)
  size_t sb = g->scratch_bytes;
  hx_status st = HX_EUNSUPPORTED;
  /* norm and qkv in one kernel where it takes C (the LayerNorm's rows never leave the chip); a device that cannot run
   * it (HX_EUNSUPPORTED, its range then empty) gets the two passes below */
  if (net_ln_qkv_fused(&g->cfg, C)) {
    RANGE("qkv", (st = nl_ln_linear_gpu(g->qkv, x, NULL, n, bk->norm.g, bk->norm.b, NET_F3D_LN_EPS, bk->qkv.w,
                                        bk->qkv.b, n, C, 3 * C, g->dt, r->cs, r->err),
                  net_unsupported(st, r->err) ? HX_OK : st));
  }
  if (st == HX_EUNSUPPORTED) { /* t was sized for the levels that take this path (g_buffers) */
    if (n * C > g->t_n)
      return hx_errf(r->err, HX_EINVAL, "flash3d gpu: norm and qkv at C = %zu left their kernel; t was sized for it",
                     C);
    RANGE("norm", nl_layernorm_gpu(g->t, x, bk->norm.g, bk->norm.b, n, C, NET_F3D_LN_EPS, g->dt, r->cs, r->err));
    RANGE("qkv", lin_gpu(r, g->qkv, g->t, &bk->qkv, n, NL_ACT_NONE, 0));
  }
  RANGE("attn", lv->attn_v[side]->fn(&bp, g->scratch, &sb, r->cs, r->err));
  /* o over q's columns of qkv, rows 3C apart (g_buffers) */
  RANGE("proj", nl_linear_ld_gpu(g->blas, x, g->o, 3 * C, bk->proj.w, bk->proj.b, n, bk->proj.in, bk->proj.out,
                                 NL_ACT_NONE, 1, g->dt, r->cs, r->err));
  snprintf(name, sizeof name, "%s/mlp", path);
  rng(r, name, 1);
  /* LayerNormMLP: its LayerNorm inside the whole-MLP kernel where net_ln_mlp_fused (a device that cannot run that
   * kernel gets the separate pass), else a pass into g->t */
  st = HX_EUNSUPPORTED;
  if (net_ln_mlp_fused(&g->cfg, C, hid)) {
    sb = g->scratch_bytes;
    st = nl_ln_mlp_gpu(x, bk->mlp_norm.g, bk->mlp_norm.b, NET_F3D_LN_EPS, bk->fc1.w, bk->fc1.b, bk->fc2.w, bk->fc2.b, n,
                       C, hid, NL_MLP_SWIGLU, g->scratch, &sb, g->dt, r->cs, r->err);
    (void)net_unsupported(st, r->err); /* st stays HX_EUNSUPPORTED: the separate pass below */
  }
  if (st == HX_EUNSUPPORTED && n * C > g->t_n)
    st = hx_errf(r->err, HX_EINVAL, "flash3d gpu: the MLP's LayerNorm at C = %zu left its kernel; t was sized for it",
                 C);
  else if (st == HX_EUNSUPPORTED) {
    st = nl_layernorm_gpu(g->t, x, bk->mlp_norm.g, bk->mlp_norm.b, n, C, NET_F3D_LN_EPS, g->dt, r->cs, r->err);
    if (st == HX_OK) st = mlp(r, bk, x, n, C, hid);
  }
  rng(r, name, 0);
#undef RANGE
  return st;
}

/* Pooling out of level l into level l+1: p = Linear(x_l); skip_l = GELU(BN(proj_skip(p))), what the unpooling into
 * level l adds, made here so that the level keeps its C_dec-wide rows rather than p's C_{l+1}; bpool plan +
 * sub-buckets + mean of p; BN + GELU into level l+1's input (its pool-order buffer, or its encoder stream when it runs
 * no PSH); its cloud offsets, and without a PSH its windows. */
static hx_status step_pool(g_run *r, int l) {
  f3g *g = r->g;
  g_level *lv = &g->lv[l], *nx = &g->lv[l + 1];
  const uint32_t B = g->B, nbt = B * lv->ls.nb;
  const size_t C1 = (size_t)g->cfg.enc_channels[l + 1];
  void *dst = nx->ls.hashed ? nx->pooled : nx->x;
  HX_TRY(lin_gpu(r, g->pproj, lv->x, &g->pool[l], lv->R, NL_ACT_NONE, 0));
  HX_TRY(lin_gpu(r, lv->skip, g->pproj, &g->up_skip[l], lv->R, NL_ACT_GELU, 0));
  if (lv->cnt_pool != lv->count) /* the real clouds' counts, then the 0 the plan's total needs */
    HX_TRY(cu_st(cudaMemcpyAsync(lv->cnt_pool, lv->count, (size_t)nbt * 4, cudaMemcpyDeviceToDevice,
                                 (cudaStream_t)r->cs), "pooling counts", r->err));
  bpool_params pp;
  memset(&pp, 0, sizeof pp);
  pp.xyz_in = lv->xyzp, pp.bucket_start = lv->start, pp.bucket_count = lv->cnt_pool;
  pp.n_rows = (uint32_t)lv->R, pp.nbuckets = nbt + 1, pp.rho = NET_F3D_RHO;
  pp.channels = (uint32_t)C1, pp.n_out = (uint32_t)nx->R, pp.op = BPOOL_MEAN;
  pp.out_start = lv->ostart, pp.out_count = lv->ocount, pp.members = lv->members, pp.parent = lv->parent;
  pp.xyz_out = nx->xyz_pool;
  /* bpool reduces the dtype's rows in fp32 and rounds the mean once */
  pp.dt = g->dt == NET_BF16 ? PSH_BF16 : PSH_F16, pp.feat_in = g->pproj, pp.feat_out = dst;
  size_t sb = g->scratch_bytes;
  HX_TRY(bpool_pool(g->pool_v, &pp, g->scratch, &sb, r->cs, r->err));
  HX_TRY(nl_affine_act_gpu(dst, dst, g->pool_bn[l].scale, g->pool_bn[l].shift, nx->R, C1, NL_ACT_GELU, g->dt, r->cs,
                           r->err));
  /* the next level's cloud offsets: out_start[c * nb] for c <= B (the last is the real rows' end); a PSH's spare
   * cloud then ends at R (preset); a level without one cuts its windows out of them */
  HX_TRY(psh_gather_rows_gpu(nx->off, lv->ostart, lv->off_idx, B + 1, 4, r->cs, r->err));
  if (nx->ls.hashed) return HX_OK;
  return nl_windows_gpu(nx->start, nx->count, nx->off, B, nx->ls.nb, nx->ls.max_bucket, r->cs, r->err);
}

/* Unpooling into level l: y_l = skip_l + GELU(BN(proj(y_{l+1})))[slot_{l+1}[parent]] (skip_l made by the pooling). */
static hx_status step_unpool(g_run *r, int l) {
  f3g *g = r->g;
  g_level *lv = &g->lv[l], *nx = &g->lv[l + 1];
  const size_t C = (size_t)g->cfg.dec_channels[l];
  HX_TRY(psh_gather_rows_gpu(lv->comp, nx->slot, lv->parent, (uint32_t)lv->R, 4, r->cs, r->err));
  HX_TRY(lin_gpu(r, g->g, nx->y, &g->up[l], nx->R, NL_ACT_GELU, 0));
  return nl_gather_add_gpu(lv->y, g->g, lv->comp, lv->skip, lv->R, C, g->dt, r->cs, r->err);
}

static hx_status step_head(g_run *r) {
  f3g *g = r->g;
  const size_t K = (size_t)g->cfg.classes;
  HX_TRY(lin_gpu(r, g->logits_p, g->lv[0].y, &g->head, g->n, NL_ACT_NONE, 0));
  HX_TRY(gather_rows(r, g->logits, g->logits_p, g->lv[0].slot, g->n, K));
  return nl_to_f32_gpu(g->logits32, g->logits, g->n * K, g->dt, r->cs, r->err);
}

static hx_status run_all(g_run *r) {
  f3g *g = r->g;
  const net_config *c = &g->cfg;
  const int L = c->levels;
  char path[32], name[64];
  hx_status st;
#define TOP(label, body)                                                                                  \
  do {                                                                                                    \
    rng(r, label, 1);                                                                                     \
    st = (body);                                                                                          \
    rng(r, label, 0);                                                                                     \
    HX_TRY(st);                                                                                           \
  } while (0)
  TOP("embed", lin_gpu(r, g->lv[0].pooled, g->feat, &g->embed, g->n, NL_ACT_NONE, 0));
  for (int l = 0; l < L; l++) {
    g_level *lv = &g->lv[l];
    snprintf(path, sizeof path, "enc%d", l);
    rng(r, path, 1);
    if (l > 0) {
      snprintf(name, sizeof name, "%s/pool", path);
      TOP(name, step_pool(r, l - 1));
    }
    if (lv->ls.hashed) {
      snprintf(name, sizeof name, "%s/psh", path);
      TOP(name, step_psh(r, l));
      snprintf(name, sizeof name, "%s/gather", path);
      TOP(name, gather_rows(r, lv->x, lv->pooled, lv->perm, lv->R, (size_t)c->enc_channels[l]));
    }
    for (int b = 0; b < c->enc_depth[l]; b++) {
      snprintf(name, sizeof name, "%s/block%d", path, b);
      TOP(name, step_block(r, l, 0, b, lv->x, name));
    }
    rng(r, path, 0);
  }
  for (int l = L - 1; l >= 0; l--) {
    g_level *lv = &g->lv[l];
    snprintf(path, sizeof path, "dec%d", l);
    rng(r, path, 1);
    snprintf(name, sizeof name, "%s/unpool", path);
    if (l == L - 1) TOP(name, lin_gpu(r, lv->y, lv->x, &g->leaf, lv->R, NL_ACT_NONE, 0));
    else TOP(name, step_unpool(r, l));
    for (int b = 0; b < c->dec_depth[l]; b++) {
      snprintf(name, sizeof name, "%s/block%d", path, b);
      TOP(name, step_block(r, l, 1, b, lv->y, name));
    }
    rng(r, path, 0);
  }
  TOP("head", step_head(r));
#undef TOP
  return HX_OK;
}

/* ---- the vtable --------------------------------------------------------------------------------------------- */

static hx_status upload(void *d, const void *h, size_t bytes, const char *what, hx_err *err) {
  return bytes ? cu_st(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), what, err) : HX_OK;
}

static hx_status dev_fill(void *d, size_t bytes, int byte, const char *what, hx_err *err) {
  return d && bytes ? cu_st(cudaMemset(d, byte, bytes), what, err) : HX_OK;
}

/* The input (xyz, offsets, features in the dtype padded to inpad columns) and the constant tables. */
static hx_status upload_input(f3g *g, const net_input *in, hx_err *err) {
  const net_config *c = &g->cfg;
  const uint32_t B = g->B;
  const size_t cin = (size_t)c->in_channels;
  HX_TRY(upload(g->xyz, in->xyz, g->n * 12, "xyz upload", err));
  uint32_t *h = malloc(max_sz((B + 2) * sizeof *h, g->ident_n * sizeof *h));
  uint16_t *f = malloc(max_sz(g->n * g->inpad, 1) * sizeof *f);
  hx_status st = h && f ? HX_OK : hx_errf(err, HX_ENOMEM, "flash3d gpu: upload staging");
  if (st == HX_OK) {
    for (uint32_t k = 0; k <= B; k++) h[k] = (uint32_t)in->offset[k];
    st = upload(g->off0, h, (B + 1) * 4, "offset upload", err);
  }
  for (size_t i = 0; st == HX_OK && i < g->n; i++)
    for (size_t k = 0; k < g->inpad; k++) f[i * g->inpad + k] = net_from_float(g->dt, k < cin ? in->feat[i * cin + k] : 0.0f);
  if (st == HX_OK) st = upload(g->feat, f, g->n * g->inpad * 2, "feature upload", err);
  if (st == HX_OK && g->ident) {
    for (size_t k = 0; k < g->ident_n; k++) h[k] = (uint32_t)k;
    st = upload(g->ident, h, g->ident_n * 4, "identity upload", err);
  }
  for (int l = 0; st == HX_OK && l < c->levels; l++) {
    g_level *lv = &g->lv[l];
    const uint32_t nbt = B * lv->ls.nb;
    for (int s = 0; st == HX_OK && s < 2; s++)
      for (int b = 0; st == HX_OK && b < (s ? c->dec_depth[l] : c->enc_depth[l]); b++)
        st = upload(lv->attn[s][b].scope, lv->attn[s][b].h_scope, (size_t)lv->attn[s][b].num_scopes * lv->ls.scope * 4,
                    "scope upload", err);
    /* bucket tables of B * nb + 1 entries whose last count is 0 (the pooling plan's total) */
    if (st == HX_OK && lv->ls.hashed && l == 0) st = dev_fill(lv->count + nbt, 4, 0, "count tail", err);
    if (st == HX_OK && lv->ls.hashed && l == 0) st = dev_fill(lv->start + nbt, 4, 0, "start tail", err);
    if (st == HX_OK && lv->cnt_pool) st = dev_fill(lv->cnt_pool + nbt, 4, 0, "count tail", err);
    if (st == HX_OK && l > 0 && lv->ls.hashed) { /* the spare cloud ends at R */
      h[0] = (uint32_t)lv->R;
      st = upload(lv->off + B + 1, h, 4, "spare cloud end", err);
    }
    if (st == HX_OK && lv->off_idx) {
      for (uint32_t k = 0; k <= B; k++) h[k] = k * lv->ls.nb;
      st = upload(lv->off_idx, h, (B + 1) * 4, "offset index upload", err);
    }
    /* spare rows start as zeros, members as BPOOL_NONE */
    const size_t ce = (size_t)c->enc_channels[l], cd = (size_t)c->dec_channels[l], R = lv->R;
    if (st == HX_OK && lv->members) st = dev_fill(lv->members, g->lv[l + 1].R * NET_F3D_RHO * 4, 0xFF, "members", err);
    if (st == HX_OK && l > 0) st = dev_fill(lv->xyz_pool, R * 12, 0, "pooled xyz", err);
    if (st == HX_OK && lv->pooled && l > 0) st = dev_fill(lv->pooled, R * ce * 2, 0, "level input", err);
    if (st == HX_OK) st = dev_fill(lv->x, R * ce * 2, 0, "encoder stream", err);
    if (st == HX_OK) st = dev_fill(lv->y, R * cd * 2, 0, "decoder stream", err);
    if (st == HX_OK && lv->skip) st = dev_fill(lv->skip, R * cd * 2, 0, "skip", err);
  }
  /* the work buffers too: attention leaves the rows of no bucket unwritten, so no stale NaN reaches a spare row */
  const size_t nc2 = g->nc * 2;
  if (st == HX_OK && g->t) st = dev_fill(g->t, g->t_n * 2, 0, "work t", err);
  if (st == HX_OK) st = dev_fill(g->qkv, 3 * nc2, 0, "work qkv", err);
  if (st == HX_OK) st = dev_fill(g->h1, g->h1_n * 2, 0, "work fc1", err);
  if (st == HX_OK) st = dev_fill(g->g, g->g_n * 2, 0, "work swiglu", err);
  free(h), free(f);
  return st;
}

/* The shared streams without keep_levels; the aliases of the levels without a PSH of their own (pool order is
 * bucket order: no perm, identity slot, the input is the encoder stream). */
static void wire_levels(f3g *g) {
  const int L = g->cfg.levels;
  for (int l = 0; l < L; l++) {
    g_level *lv = &g->lv[l];
    if (!g->cfg.keep_levels) lv->x = g->xs, lv->y = g->ys, lv->pooled = g->ys;
    if (l == 0) lv->xyz_pool = g->xyz;
    if (!lv->ls.hashed) {
      lv->xyzp = lv->xyz_pool;
      lv->slot = g->ident;
      lv->pooled = lv->x;
    }
    if (l + 1 < L && !lv->cnt_pool) lv->cnt_pool = lv->count; /* level 0 and windows: the last count is 0 */
  }
}

static hx_status prepare_body(f3g *g, const net_input *in, struct CUstream_st *stream, hx_err *err) {
  HX_TRY(plan_levels(g, in, err));
  HX_TRY(g_buffers(g, need_alloc, err));
  wire_levels(g);
  HX_TRY(upload_input(g, in, err));
  free_host_scopes(g);
  g_run r = {g, NULL, stream, err};
  HX_TRY(run_all(&r));
  return cu_st(cudaStreamSynchronize((cudaStream_t)stream), "prepare", err);
}

static hx_status prepare(void *impl, const net_input *in, struct CUstream_st *stream, hx_err *err) {
  f3g *g = impl;
  if (!in) return hx_errf(err, HX_EINVAL, "flash3d gpu: NULL input");
  cudaStreamSynchronize((cudaStream_t)stream); /* nothing may still use the buffers released below */
  unprepare(g);
  const hx_status st = prepare_body(g, in, stream, err);
  if (st != HX_OK) {
    cudaStreamSynchronize((cudaStream_t)stream);
    unprepare(g);
    return st;
  }
  g->prepared = 1;
  return HX_OK;
}

static hx_status forward(void *impl, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err) {
  f3g *g = impl;
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "flash3d gpu: forward before a successful prepare");
  g_run r = {g, hooks, stream, err};
  return run_all(&r);
}

/* The real rows of every level after the last forward: n at level 0, the pooling plan's total below. Waits. */
static hx_status real_rows(const f3g *g, uint32_t *rows, hx_err *err) {
  rows[0] = (uint32_t)g->n;
  for (int l = 0; l + 1 < g->cfg.levels; l++) {
    const g_level *lv = &g->lv[l];
    HX_TRY(cu_st(cudaMemcpy(&rows[l + 1], lv->ostart + (size_t)g->B * lv->ls.nb, 4, cudaMemcpyDeviceToHost),
                 "row count download", err));
    if (rows[l + 1] > g->lv[l + 1].R)
      return hx_errf(err, HX_ECHECK, "flash3d gpu: level %d has %u rows, above its bound %zu", l + 1, rows[l + 1],
                     g->lv[l + 1].R);
  }
  return HX_OK;
}

static hx_status fetch(void *h, const void *d, size_t bytes, hx_err *err) {
  return bytes ? cu_st(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "download", err) : HX_OK;
}

/* Level rows (bucket order, R of them) to host fp32 in pool order: out[p] = x[slot[p]] for the real rows. */
static hx_status fetch_level(f3g *g, net_output *out, size_t k, const char *name, const void *x, const g_level *lv,
                             uint32_t rows, size_t C, hx_err *err) {
  uint16_t *h = malloc(max_sz(lv->R * C, 1) * sizeof *h);
  uint32_t *slot = malloc(max_sz(lv->R, 1) * sizeof *slot);
  out->level[k] = malloc(max_sz((size_t)rows * C, 1) * sizeof(float));
  hx_status st = h && slot && out->level[k] ? HX_OK : hx_errf(err, HX_ENOMEM, "flash3d gpu: level download");
  if (st == HX_OK) st = fetch(h, x, lv->R * C * 2, err);
  if (st == HX_OK) st = fetch(slot, lv->slot, lv->R * 4, err);
  for (uint32_t p = 0; st == HX_OK && p < rows; p++) {
    if (slot[p] >= lv->R) {
      st = hx_errf(err, HX_ECHECK, "flash3d gpu: %s: slot[%u] = %u outside %zu rows", name, p, slot[p], lv->R);
      break;
    }
    for (size_t c = 0; c < C; c++) out->level[k][(size_t)p * C + c] = net_to_float(g->dt, h[(size_t)slot[p] * C + c]);
  }
  out->level_rows[k] = rows, out->level_C[k] = C;
  snprintf(out->level_name[k], sizeof out->level_name[k], "%s", name);
  free(h), free(slot);
  return st;
}

static hx_status download_body(f3g *g, net_output *out, int keep_levels, cudaStream_t s, hx_err *err) {
  const net_config *c = &g->cfg;
  const size_t m = g->n * (size_t)c->classes;
  HX_TRY(cu_st(cudaStreamSynchronize(s), "download", err));
  out->n = g->n, out->classes = (size_t)c->classes;
  out->logits = malloc(max_sz(m, 1) * sizeof *out->logits);
  if (!out->logits) return hx_errf(err, HX_ENOMEM, "flash3d gpu: logits download");
  HX_TRY(fetch(out->logits, g->logits32, m * 4, err));
  if (!keep_levels) return HX_OK;
  uint32_t rows[G_L];
  HX_TRY(real_rows(g, rows, err));
  char name[16];
  size_t k = 0;
  for (int l = 0; l < c->levels; l++, k++) {
    snprintf(name, sizeof name, "enc%d", l);
    HX_TRY(fetch_level(g, out, k, name, g->lv[l].x, &g->lv[l], rows[l], (size_t)c->enc_channels[l], err));
  }
  for (int l = c->levels - 1; l >= 0; l--, k++) {
    snprintf(name, sizeof name, "dec%d", l);
    HX_TRY(fetch_level(g, out, k, name, g->lv[l].y, &g->lv[l], rows[l], (size_t)c->dec_channels[l], err));
  }
  out->n_levels = k;
  return HX_OK;
}

static hx_status download(void *impl, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err) {
  f3g *g = impl;
  if (!out) return hx_errf(err, HX_EINVAL, "flash3d gpu: NULL output");
  memset(out, 0, sizeof *out);
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "flash3d gpu: download before a successful prepare");
  const hx_status st = download_body(g, out, keep_levels, (cudaStream_t)stream, err);
  if (st != HX_OK) net_output_free(out);
  return st;
}

static hx_status layouts_body(const f3g *g, net_f3d_layouts *l, hx_err *err) {
  HX_TRY(cu_st(cudaDeviceSynchronize(), "layouts", err));
  uint32_t rows[G_L];
  HX_TRY(real_rows(g, rows, err));
  l->L = g->cfg.levels, l->B = g->B;
  for (int k = 0; k < l->L; k++) {
    const g_level *lv = &g->lv[k];
    net_f3d_layout *y = &l->lv[k];
    const size_t nbt = (size_t)g->B * lv->ls.nb;
    y->rows = rows[k], y->nb = lv->ls.nb;
    y->perm = malloc(max_sz(rows[k], 1) * 4);
    y->bucket_start = malloc(max_sz(nbt, 1) * 4);
    y->bucket_count = malloc(max_sz(nbt, 1) * 4);
    if (!y->perm || !y->bucket_start || !y->bucket_count) return hx_errf(err, HX_ENOMEM, "flash3d gpu: layouts");
    if (lv->ls.hashed) HX_TRY(fetch(y->perm, lv->perm, (size_t)rows[k] * 4, err));
    else
      for (uint32_t r = 0; r < rows[k]; r++) y->perm[r] = r;
    HX_TRY(fetch(y->bucket_start, lv->start, nbt * 4, err));
    HX_TRY(fetch(y->bucket_count, lv->count, nbt * 4, err));
  }
  return HX_OK;
}

hx_status net_flash3d_gpu_layouts(const void *impl, net_f3d_layouts *l, hx_err *err) {
  if (!impl || !l) return hx_errf(err, HX_EINVAL, "flash3d gpu layouts: NULL argument");
  memset(l, 0, sizeof *l);
  const f3g *g = impl;
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "flash3d gpu layouts: no forward prepared");
  const hx_status st = layouts_body(g, l, err);
  if (st != HX_OK) net_flash3d_layouts_free(l);
  return st;
}

/* The fp32 reference on this object's layouts (net_flash3d_forward_cpu_layouts). */
static hx_status cpu_reference(const void *impl, net_output *out, const net_params *p, const net_input *in,
                               int keep_levels, hx_err *err) {
  const f3g *g = impl;
  net_f3d_layouts lay;
  HX_TRY(net_flash3d_gpu_layouts(impl, &lay, err));
  const hx_status st = net_flash3d_forward_cpu_layouts(out, &g->cfg, p, in, &lay, keep_levels, err);
  net_flash3d_layouts_free(&lay);
  return st;
}

/* Graphable: forward launches with prepare's sizes only (rows bounds, no read-back; the next cloud offsets and
 * the pooled row counts stay on the device). */
static int graphable(const void *impl) {
  (void)impl;
  return 1;
}

static size_t held(const void *impl) {
  const f3g *g = impl;
  return g->held_bytes + hx_align256(g->wbytes);
}

/* The cost model on the level shapes and the bucket layouts of the last forward (real rows and bucket counts, read
 * back: waits for the device; net_costs.c). */
static hx_status costs(const void *impl, const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n,
                       hx_err *err) {
  const f3g *g = impl;
  net_f3d_layouts lay;
  HX_TRY(net_flash3d_gpu_layouts(impl, &lay, err));
  const hx_status st = net_flash3d_costs_from_layouts(&g->cfg, &g->shape, &lay, rates, out, cap, n, err);
  net_flash3d_layouts_free(&lay);
  return st;
}

static void blas_stats(const void *impl, nl_blas_stats *out) { nl_blas_stats_get(((const f3g *)impl)->blas, out); }

static const net_gpu_ops flash3d_ops = {
    .create = create,
    .destroy = destroy,
    .bytes = bytes,
    .prepare = prepare,
    .forward = forward,
    .download = download,
    .graphable = graphable,
    .held_bytes = held,
    .cpu_reference = cpu_reference,
    .costs = costs,
    .blas_stats = blas_stats,
};

const net_gpu_ops *net_flash3d_gpu_ops(void) { return &flash3d_ops; }
