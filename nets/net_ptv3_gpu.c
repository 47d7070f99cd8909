/*
 * net_ptv3_gpu.c - the PTv3-m1 forward on the GPU (net_ptv3_gpu_ops, the vtable of nets_internal.h): the same
 * model as net_ptv3.c's fp32 reference, with fp16 (or bf16) activations and fp32 accumulation, composed from the
 * nets layers (nl_*, spc_*), PTv3's own serialization, padding, gathers and pooling (baselines/: sfc_, shuf_,
 * spool_) and the attention kernels (kernels/: battn_), each op through its "best" entry (sfc_serial_variant_best,
 * shuf_gather_variant_best by row width, battn_variant_best: v9, which runs v24's mma.sync kernel at head dim 16, or
 * v24; the unfused v0 where neither takes the layout).
 *
 * Per call:
 *   create    weights uploaded once: Linear weights in the dtype, their biases (the unpoolings' BatchNorms folded
 *             into their Linears), LayerNorm parameters and the pooling's folded BatchNorms (scale, shift) in fp32,
 *             all in one net_alloc block; the SubMConv3d weights through
 *             spc_weights_upload (through the same net_alloc, in the layout of the spconv variant); a cuBLASLt context
 *             (nl_blas) and the spconv context.
 *   prepare   the host structure of the input (net_ptv3_struct_build: the exact level sizes, per-cloud offsets and
 *             patch layout of every level), the attention plans of the patches (battn_plan_patches, pieces of
 *             NET_PTV3_PIECE_ROWS rows) uploaded, every buffer allocated, the input uploaded (xyz, features fp32),
 *             then the whole forward run once with the read-backs the timed forward must not do: spool_gpu's
 *             pooled size (checked against the host structure) and the kernel maps' per-offset pair counts
 *             (spc_map_gpu with count_pairs, which also checks the voxels); this also creates every cuBLASLt
 *             descriptor before any timing or graph capture.
 *   forward   everything from the uploaded points: grid coordinates, the 4-order serialization, the stem
 *             (net_ptv3_stem_fused: its convolution, BN and GELU in one pass from the voxel table with level 0's
 *             k = 3 map, spc_stem_gpu; else its map, with level 0's in the same pass, spc_map_pair_gpu, unless a
 *             rulebook is needed, and convolution), per level the pooling (spool_gpu_sized: the pooled size from
 *             prepare, no read-back), kernel map, padding, and every layer; no allocation, no host synchronisation:
 *             graphable. The serialization depth is prepare's (PTv3 reads grid_coord.max() back each forward;
 *             the input is the one prepared, so the depth is the same).
 *   download  logits (converted to fp32 on the device in the head) and, with keep_levels, every level's output
 *             (dtype bits converted on the host).
 *
 * Buffer policy (every device buffer comes from net_alloc: weights in create, the rest in prepare):
 *   per level, persistent: the structure (grid, batch, coordinates, codes/order/inverse of 4 rows, pooling
 *     cluster/head/idx_ptr, pad/unpad/cu_seqlens, kernel map and rulebook, attention plan tables) and two
 *     activations: the encoder output (the level's running activation, then the skip its decoder reads) and the
 *     decoder output (held until the next unpooling's projection reads it; with net_config's keep_levels each
 *     level keeps its own for download, without (the default) every level's shares one buffer [max n_l C_l]);
 *   shared work buffers, each sized for the largest level that uses it (net_ptv3_work): t and u [rows, C] (norm,
 *     conv and projection outputs, gathered attention output), big (the pooling projection, and the MLP hidden
 *     rows [rows, 4C] of the blocks whose MLP on this device is not one kernel, net_mlp_path_run, a chunk of
 *     net_mlp_chunk_rows rows at a time; over pc3 where it fits: no block's qkv is live in the MLP or the pooling),
 *     pc3 [slots, 3C] (qkv on the patch slots), pc [slots, C] (norm.1's output on the slots, then the attention
 *     output), and one scratch block, the largest any launcher asks for (all run in stream order); with overlap a
 *     second for the structure stream's launchers;
 *   per level and order row a block attends in: its composed indices order_p / inverse_p;
 *   the stem's k = 5 map (not with the stem in one pass) and the input (xyz, fp32 and dtype features), the logits
 *   in fp32 (in the dtype over t where they fit: the head runs last).
 *
 * Ranges on the hooks (NET_COMPONENTS): "serialize"; "embed" (feature conversion, stem map and level 0's k = 3
 * map, conv, BN, GELU);
 * "encS" around a level with "encS/pool" (projection, pooling structure, segment max, BN, GELU) and blocks
 * "encS/blockB" holding "cpe" (the level's kernel map in the first block that runs on it, conv, Linear, LN,
 * residual add), "gather.qkv" (the level's padding in its first block, order[pad] and unpad[inverse] composition
 * in the first block that attends in the order row), "norm.1" (reading x's rows in the patch slots' order,
 * order[pad], into pc), "qkv" (on the slots, into pc3), "attn", "gather.out", "proj" (with the residual add),
 * "norm.2", "mlp" (fc1 + GELU, fc2 + residual add); "decS" with "decS/unpool" and its blocks; "head" (Linear, fp32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "kernels/kernels.h"
#include "nets/nets_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

#define G_L NET_MAX_LEVELS
#define G_D NET_PTV3_MAX_DEPTH

typedef struct g_block {
  spc_weights conv;
  net_dlin cpe_lin, qkv, proj, fc1, fc2;
  net_dln cpe_norm, norm1, norm2;
  int C, H;
} g_block;

typedef struct g_level {
  size_t n, sum_p, n_cu;
  size_t off[SFC_MAX_CLOUDS + 1];
  int depth;
  int perm[NET_PTV3_ORDERS]; /* level >= 1: the pooling's row shuffle */
  uint32_t *grid, *batch, *order, *inverse, *cluster, *head, *idx_ptr, *pad, *unpad;
  float *coord;
  uint64_t *code;
  int32_t *cu, *nbr, *rule;
  uint32_t *map_order; /* the map's rows in mask order (spc_mask_order_gpu), when a convolution of the level reads
                        * it (uses_order: v3); NULL otherwise */
  uint32_t *map_tiles; /* with net_config's tile_order, where the level's first convolution that reads map_order is
                        * v6: its tiles (tile_rows rows each) most active offsets first (spc_mask_tiles_gpu) */
  uint32_t tile_rows;
  /* order[pad] and unpad[inverse] of each order row a block of the level attends in (compose_row), once per forward;
   * NULL for a row no block uses */
  uint32_t *order_p[NET_PTV3_ORDERS], *inverse_p[NET_PTV3_ORDERS];
  spc_map map;
  battn_plan plan;
  uint32_t *bstart, *bcount, *scope;
  const battn_variant *attn;
  void *enc, *dec;
} g_level;

typedef struct p3g {
  net_config cfg;
  net_dtype dt;
  net_alloc alloc;
  int have_alloc;
  nl_blas *blas;
  spc_ctx *sctx;
  const sfc_serial_variant *serial;
  /* weights */
  void *wblock;
  size_t wbytes, conv_bytes;
  spc_weights stem;
  net_daff stem_bn;
  net_dlin down[G_L], up_proj[G_L], up_skip[G_L], head;
  net_daff down_bn[G_L]; /* the unpoolings' BatchNorms are folded into up_proj and up_skip */
  g_block enc[G_L][G_D], dec[G_L][G_D];
  /* prepared */
  int prepared;
  size_t n;
  uint32_t B;
  double grid_size;
  sfc_order orders[NET_PTV3_ORDERS];
  g_level lv[G_L];
  float *xyz, *feat32, *logits32;
  void *feat, *logits;
  uint32_t *maxc;
  int32_t *stem_nbr, *stem_rule;
  spc_map stem_map;
  void *t, *u, *big, *pc3, *pc;
  void *dec_all; /* without keep_levels: every level's decoder output */
  void *scratch;
  size_t scratch_bytes;
  /* net_config's overlap: the structure stream (created with the object, the device's highest priority), the
   * event that forks it from the forward's stream, one a level that the forward's stream waits on, and its own
   * scratch (the structure's launchers only; NULL without overlap) */
  cudaStream_t side;
  cudaEvent_t fork, done[G_L], join;
  void *scratch2;
  size_t scratch2_bytes;
  /* every net_alloc allocation of prepare, released by unprepare */
  void **held;
  size_t n_held, cap_held, held_bytes;
  size_t big_n; /* elements of big */
  net_mem *mem; /* the sizing pass's breakdown (bytes); NULL in a forward object */
} p3g;

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

static hx_status cu_st(cudaError_t e, const char *what, hx_err *err) {
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "ptv3 gpu: %s: %s", what, cudaGetErrorString(e));
}

/* A baselines launcher's bare status, with a sentence. */
static hx_status bl_st(hx_status s, const char *what, hx_err *err) {
  return s == HX_OK ? HX_OK : hx_errf(err, s, "ptv3 gpu: %s failed (%s)", what, hx_status_str(s));
}

/* ---- device memory --------------------------------------------------------------------------------------- */

static hx_status g_alloc(p3g *g, void **p, size_t bytes, const char *label, hx_err *err) {
  *p = NULL;
  bytes = hx_align256(bytes ? bytes : 1);
  if (g->have_alloc) HX_TRY(g->alloc.alloc(g->alloc.ctx, p, bytes, label, err));
  else HX_TRY(cu_st(cudaMalloc(p, bytes), label, err));
  return HX_OK;
}

static void g_release(p3g *g, void *p) {
  if (!p) return;
  if (g->have_alloc) g->alloc.release(g->alloc.ctx, p);
  else cudaFree(p);
}

/* One allocation of prepare, remembered for unprepare. */
static hx_status g_hold(p3g *g, void **p, size_t bytes, const char *label, hx_err *err) {
  if (g->n_held == g->cap_held) {
    const size_t cap = g->cap_held ? 2 * g->cap_held : 128;
    void **h = realloc(g->held, cap * sizeof *h);
    if (!h) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: allocation list");
    g->held = h, g->cap_held = cap;
  }
  HX_TRY(g_alloc(g, p, bytes, label, err));
  g->held[g->n_held++] = *p;
  g->held_bytes += hx_align256(bytes ? bytes : 1);
  return HX_OK;
}

static void unprepare(p3g *g) {
  if (g->side) cudaStreamSynchronize(g->side); /* a failed forward may have left structure work queued there */
  for (size_t i = g->n_held; i > 0; i--) g_release(g, g->held[i - 1]);
  g->n_held = 0, g->held_bytes = 0;
  for (int l = 0; l < G_L; l++) battn_plan_free(&g->lv[l].plan);
  memset(g->lv, 0, sizeof g->lv);
  g->xyz = g->feat32 = g->logits32 = NULL;
  g->feat = g->logits = g->t = g->u = g->big = g->pc3 = g->pc = g->scratch = g->scratch2 = g->dec_all = NULL;
  g->maxc = NULL;
  g->stem_nbr = g->stem_rule = NULL;
  memset(&g->stem_map, 0, sizeof g->stem_map);
  g->prepared = 0;
}

/* ---- weights ---------------------------------------------------------------------------------------------- */
/* One block for every dense parameter (net_pack): PTv3's Linears are packed as they are (no padding, no folded
 * BatchNorm), its BatchNorms folded into an affine. */
static void pk_lin(net_pack *k, net_dlin *l, const net_lin *h, size_t in, size_t out) {
  net_pack_lin(k, l, h, in, in, out, NULL, 0.0f);
}

/* A Linear with the BatchNorm after it folded in (W' = scale W, b' = scale b + shift; the unpoolings' projections,
 * as Flash3D's), so that cuBLASLt's GELU epilogue finishes GELU(BN(Linear(x))) with no pass of its own. */
static void pk_lin_bn(net_pack *k, net_dlin *l, const net_lin *h, size_t in, size_t out, const net_norm *bn) {
  net_pack_lin(k, l, h, in, in, out, bn, NET_PTV3_BN_EPS);
}

static void pk_bn(net_pack *k, net_daff *a, const net_norm *h, size_t C) { net_pack_bn(k, a, h, C, NET_PTV3_BN_EPS); }

/* Bytes spc_weights_upload holds for one convolution (v0's layout: dtype weights, fp32 bias). */
static size_t conv_bytes(size_t in, size_t out, uint32_t K, int bias) {
  return hx_align256((size_t)K * in * out * 2) + (bias ? hx_align256(out * 4) : 0);
}

/* A block's xCPE convolution uploaded: its own weights, or with net_config's cpe_fold its Linear folded in (the
 * Linear's packed copy then unread). */
static hx_status conv_upload(p3g *g, g_block *b, const net_ptv3_block *h, size_t C, hx_err *err) {
  const net_alloc *al = g->have_alloc ? &g->alloc : NULL;
  if (!g->cfg.cpe_fold)
    return spc_weights_upload(&b->conv, h->cpe_conv.w, h->cpe_conv.b, C, C, 27, g->dt, al, err);
  float *w2 = malloc((27 * C * C + C) * sizeof *w2);
  if (!w2) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: folded xCPE weights of %zu channels", C);
  hx_status st = spc_fold_linear_cpu(w2, w2 + 27 * C * C, h->cpe_conv.w, h->cpe_conv.b, h->cpe_lin.w, h->cpe_lin.b,
                                     C, C, C, 27, err);
  if (st == HX_OK) st = spc_weights_upload(&b->conv, w2, w2 + 27 * C * C, C, C, 27, g->dt, al, err);
  free(w2);
  return st;
}

/* The walk over every layer: sizes from cfg; with v (filling pass) the values, and the convolutions uploaded. */
static hx_status g_weights(p3g *g, const net_ptv3_view *v, net_pack *k, hx_err *err) {
  const net_config *c = &g->cfg;
  const int L = c->levels, R = c->mlp_ratio;
  g->conv_bytes = 0;
  pk_lin(k, &g->head, v ? &v->head : NULL, (size_t)c->dec_channels[0], (size_t)c->classes);
  pk_bn(k, &g->stem_bn, v ? &v->stem_bn : NULL, (size_t)c->enc_channels[0]);
  g->conv_bytes += conv_bytes((size_t)c->in_channels, (size_t)c->enc_channels[0], 125, 0);
  if (v) HX_TRY(spc_weights_upload(&g->stem, v->stem.w, NULL, v->stem.in, v->stem.out, 125, g->dt, g->have_alloc ? &g->alloc : NULL, err));
  for (int dec = 0; dec < 2; dec++)
    for (int l = 0; l < L - dec; l++) {
      const size_t C = (size_t)(dec ? c->dec_channels[l] : c->enc_channels[l]);
      const int H = dec ? c->dec_heads[l] : c->enc_heads[l], depth = dec ? c->dec_depth[l] : c->enc_depth[l];
      if (!dec && l > 0) {
        pk_lin(k, &g->down[l], v ? &v->down[l] : NULL, (size_t)c->enc_channels[l - 1], C);
        pk_bn(k, &g->down_bn[l], v ? &v->down_bn[l] : NULL, C);
      }
      if (dec) {
        const size_t Cc = (size_t)(l == L - 2 ? c->enc_channels[L - 1] : c->dec_channels[l + 1]);
        pk_lin_bn(k, &g->up_proj[l], v ? &v->up_proj[l] : NULL, Cc, C, v ? &v->up_bn[l] : NULL);
        pk_lin_bn(k, &g->up_skip[l], v ? &v->up_skip[l] : NULL, (size_t)c->enc_channels[l], C,
                  v ? &v->skip_bn[l] : NULL);
      }
      for (int i = 0; i < depth; i++) {
        g_block *b = dec ? &g->dec[l][i] : &g->enc[l][i];
        const net_ptv3_block *h = v ? (dec ? &v->dec[l][i] : &v->enc[l][i]) : NULL;
        b->C = (int)C, b->H = H;
        pk_lin(k, &b->cpe_lin, h ? &h->cpe_lin : NULL, C, C);
        net_pack_ln(k, &b->cpe_norm, h ? &h->cpe_norm : NULL, C);
        net_pack_ln(k, &b->norm1, h ? &h->norm1 : NULL, C);
        pk_lin(k, &b->qkv, h ? &h->qkv : NULL, C, 3 * C);
        pk_lin(k, &b->proj, h ? &h->proj : NULL, C, C);
        net_pack_ln(k, &b->norm2, h ? &h->norm2 : NULL, C);
        pk_lin(k, &b->fc1, h ? &h->fc1 : NULL, C, (size_t)R * C);
        pk_lin(k, &b->fc2, h ? &h->fc2 : NULL, (size_t)R * C, C);
        g->conv_bytes += conv_bytes(C, C, 27, 1);
        if (h) HX_TRY(conv_upload(g, b, h, C, err));
      }
    }
  return HX_OK;
}

static void free_convs(p3g *g) {
  spc_weights_free(&g->stem);
  for (int l = 0; l < G_L; l++)
    for (int i = 0; i < G_D; i++) spc_weights_free(&g->enc[l][i].conv), spc_weights_free(&g->dec[l][i].conv);
}

/* What this forward supports beyond the CPU reference: channel counts the GPU layers take. */
static hx_status check_gpu_config(const net_config *c, hx_err *err) {
  if (c->kind != 0 || c->levels < 2 || c->levels > G_L)
    return hx_errf(err, HX_EINVAL, "ptv3 gpu: %s is not a PTv3 configuration of 2..%d levels", c->name, G_L);
  if (c->classes % 8 || c->mlp_ratio < 1)
    return hx_errf(err, HX_EUNSUPPORTED, "ptv3 gpu: %s: %d classes (a multiple of 8 is required by cuBLASLt)",
                   c->name, c->classes);
  for (int dec = 0; dec < 2; dec++)
    for (int l = 0; l < c->levels - dec; l++) {
      const int C = dec ? c->dec_channels[l] : c->enc_channels[l], H = dec ? c->dec_heads[l] : c->enc_heads[l];
      const int D = H > 0 && C % H == 0 ? C / H : 0;
      if (C % 8 || (D != 16 && D != 32 && D != 64 && D != 128))
        return hx_errf(err, HX_EUNSUPPORTED,
                       "ptv3 gpu: %s %s level %d: %d channels, %d heads (channels a multiple of 8, head dim 16, 32, "
                       "64 or 128)", c->name, dec ? "decoder" : "encoder", l, C, H);
    }
  return HX_OK;
}

static void destroy(void *impl) {
  p3g *g = impl;
  if (!g) return;
  unprepare(g);
  free(g->held);
  free_convs(g);
  if (g->side) cudaStreamDestroy(g->side);
  if (g->fork) cudaEventDestroy(g->fork);
  if (g->join) cudaEventDestroy(g->join);
  for (int l = 0; l < G_L; l++)
    if (g->done[l]) cudaEventDestroy(g->done[l]);
  if (g->wblock) g_release(g, g->wblock);
  nl_blas_destroy(g->blas);
  spc_ctx_destroy(g->sctx);
  free(g);
}

/* The variant of a convolution: spc_variant_main, or for the k = 3 (xCPE) ones the configuration's forced variant
 * (spconv_force = 1 + id, an ablation) where its size query takes the widths on this device. NULL when the forced id
 * names no variant. */
static const spc_variant *conv_variant(const p3g *g, size_t in, size_t out, uint32_t K) {
  if (K != 27u || g->cfg.spconv_force <= 0) return spc_variant_main(in, out, K);
  const spc_variant *f = spc_variant_by_id(g->cfg.spconv_force - 1);
  if (!f) return NULL;
  return spc_variant_query(f, in, out, K) == HX_EUNSUPPORTED ? spc_variant_main(in, out, K) : f;
}

/* The structure stream of net_config's overlap, at the device's highest priority (its kernels are short and each
 * holds up the chain behind it; the block scheduler then starts their CTAs before the features' waiting ones), and
 * its events (no timing). */
static hx_status side_create(p3g *g, hx_err *err) {
  int least = 0, greatest = 0;
  HX_TRY(cu_st(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities", err));
  HX_TRY(cu_st(cudaStreamCreateWithPriority(&g->side, cudaStreamNonBlocking, greatest), "structure stream", err));
  HX_TRY(cu_st(cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming), "structure events", err));
  HX_TRY(cu_st(cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming), "structure events", err));
  for (int l = 0; l < g->cfg.levels; l++)
    HX_TRY(cu_st(cudaEventCreateWithFlags(&g->done[l], cudaEventDisableTiming), "structure events", err));
  return HX_OK;
}

static hx_status create_body(p3g *g, const net_params *p, hx_err *err) {
  net_ptv3_view *v = malloc(sizeof *v);
  if (!v) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: view");
  hx_status st = net_ptv3_view_get(v, &g->cfg, p, err);
  net_pack k = {NULL, NULL, 0, g->dt};
  if (st == HX_OK) st = g_weights(g, NULL, &k, err); /* sizing */
  g->wbytes = k.used;
  if (st == HX_OK) st = g_alloc(g, &g->wblock, g->wbytes, "ptv3 weights", err);
  char *host = st == HX_OK ? calloc(1, g->wbytes ? g->wbytes : 1) : NULL;
  if (st == HX_OK && !host) st = hx_errf(err, HX_ENOMEM, "ptv3 gpu: %zu bytes of weight staging", g->wbytes);
  if (st == HX_OK) {
    k = (net_pack){host, g->wblock, 0, g->dt};
    st = g_weights(g, v, &k, err);
  }
  if (st == HX_OK) st = cu_st(cudaMemcpy(g->wblock, host, g->wbytes, cudaMemcpyHostToDevice), "weight upload", err);
  free(host);
  free(v);
  if (st == HX_OK) st = nl_blas_create(&g->blas, g->cfg.lt_tune ? NL_BLAS_TUNED : NL_BLAS_FIRST, err);
  if (st == HX_OK) st = spc_ctx_create(&g->sctx, err);
  if (st == HX_OK && g->cfg.overlap) st = side_create(g, err);
  return st;
}

static hx_status create(void **impl, const net_config *cfg, const net_params *p, net_dtype dt, const net_alloc *alloc,
                        hx_err *err) {
  *impl = NULL;
  HX_TRY(check_gpu_config(cfg, err));
  p3g *g = calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: forward object");
  g->cfg = *cfg;
  g->dt = dt;
  if (alloc && alloc->alloc && alloc->release) g->alloc = *alloc, g->have_alloc = 1;
  g->serial = sfc_serial_variant_best();
  hx_status st = g->serial ? HX_OK : hx_errf(err, HX_ENODEV, "ptv3 gpu: no serialization variant");
  if (st == HX_OK) st = create_body(g, p, err);
  if (st != HX_OK) {
    destroy(g);
    return st;
  }
  *impl = g;
  return HX_OK;
}

/* ---- sizes: the buffer list, the attention variants, the scratch ------------------------------------------- */

static battn_dtype g_battn_dt(net_dtype dt) { return dt == NET_BF16 ? BATTN_BF16 : BATTN_F16; }
static shuf_dtype g_shuf_dt(net_dtype dt) { return dt == NET_BF16 ? SHUF_BF16 : SHUF_F16; }

/* Attention params of a level over the packed qkv pc3 [sum_p, 3, H, D] into pc [sum_p, H, D]. */
static void attn_params(battn_params *bp, const p3g *g, const g_level *lv, int C, int H) {
  const int D = C / H;
  battn_params_init(bp, (int64_t)lv->sum_p, H, D, g_battn_dt(g->dt), &lv->plan);
  bp->q_row_stride = bp->k_row_stride = bp->v_row_stride = 3 * (int64_t)C;
  const uint16_t *q = g->pc3;
  bp->q = q, bp->k = q ? q + C : NULL, bp->v = q ? q + 2 * C : NULL;
  bp->o = g->pc;
  bp->lse = NULL;
  bp->scale = 1.0f / sqrtf((float)D); /* (C/H)^-0.5 */
  bp->bucket_start = lv->bstart, bp->bucket_count = lv->bcount, bp->scope = lv->scope;
}

/* The attention variant of a level (battn_variant_best: v9, which runs v24's kernel at D = 16, or v24; the unfused
 * v0 where neither takes the layout) and the scratch of both widths (encoder and decoder). */
static hx_status attn_choose(p3g *g, g_level *lv, int l, size_t *scratch, hx_err *err) {
  const battn_variant *best = NULL, *v0 = battn_variant_find("v0");
  {
    battn_params bp;
    attn_params(&bp, g, lv, g->cfg.enc_channels[l], g->cfg.enc_heads[l]);
    bp.bucket_start = lv->plan.bucket_start, bp.bucket_count = lv->plan.bucket_count, bp.scope = lv->plan.scope;
    HX_TRY(battn_validate(&bp, &lv->plan, err)); /* the plan against the layout, on the host tables */
    hx_err e;
    if (g->cfg.attn_force > 0) best = battn_variant_by_id(g->cfg.attn_force - 1); /* NULL: refused below */
    else if (battn_variant_best(&best, &bp, &e) != HX_OK) best = NULL;
  }
  lv->attn = NULL;
  /* a forced variant (--attn) has no stand-in: where it does not take the layout the forward is refused */
  const int passes = g->cfg.attn_force > 0 ? 1 : 2;
  hx_err last = {HX_OK, ""};
  for (int pass = 0; pass < passes && !lv->attn; pass++) {
    const battn_variant *v = pass ? v0 : best;
    if (!v) continue;
    size_t need = 0, most = 0;
    hx_err e;
    hx_status st = HX_OK;
    for (int dec = 0; dec < 2 && st == HX_OK; dec++) {
      if (dec && l == g->cfg.levels - 1) break;
      battn_params bp;
      attn_params(&bp, g, lv, dec ? g->cfg.dec_channels[l] : g->cfg.enc_channels[l],
                  dec ? g->cfg.dec_heads[l] : g->cfg.enc_heads[l]);
      /* the size query reads no table: the host plan's stand in */
      bp.bucket_start = lv->plan.bucket_start, bp.bucket_count = lv->plan.bucket_count, bp.scope = lv->plan.scope;
      st = v->fn(&bp, NULL, &need, NULL, &e);
      most = max_sz(most, need);
    }
    if (st == HX_OK) lv->attn = v, *scratch = max_sz(*scratch, most);
    else last = e;
  }
  return lv->attn ? HX_OK : hx_errf(err, HX_EUNSUPPORTED, "ptv3 gpu: level %d: no attention variant runs%s%s", l,
                                    last.status != HX_OK ? ": " : "", last.msg);
}

/* Host plans and sizes of every level from the host structure. */
static hx_status levels_from_struct(p3g *g, const net_ptv3_struct *s, uint64_t seed, hx_err *err) {
  int o[NET_PTV3_ORDERS];
  HX_TRY(net_ptv3_orders(&g->cfg, seed, 0, o, err));
  for (int r = 0; r < NET_PTV3_ORDERS; r++) g->orders[r] = (sfc_order)o[r];
  g->n = s->n, g->B = s->B;
  for (int l = 0; l < s->L; l++) {
    g_level *lv = &g->lv[l];
    const net_ptv3_level *h = &s->lv[l];
    lv->n = h->n, lv->sum_p = h->sum_p, lv->n_cu = h->n_cu, lv->depth = h->depth;
    memcpy(lv->off, h->off, (s->B + 1) * sizeof *lv->off);
    if (l > 0) sfc_row_perm(lv->perm, NET_PTV3_ORDERS, seed, (uint64_t)l);
    int64_t *cu64 = malloc(h->n_cu * sizeof *cu64);
    if (!cu64) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: cu_seqlens");
    for (size_t k = 0; k < h->n_cu; k++) cu64[k] = h->cu[k];
    const hx_status st = battn_plan_patches(&lv->plan, cu64, (uint32_t)(h->n_cu - 1), NET_PTV3_PIECE_ROWS, err);
    free(cu64);
    HX_TRY(st);
  }
  return HX_OK;
}

/* The largest scratch any launcher of the forward (and of prepare) asks for; picks the attention variants. */
/* spc_map_gpu's scratch for n rows at side k: its size query reads whether a rulebook is asked for, not where. */
static hx_status map_scratch(size_t *sb, uint32_t n, uint32_t k, int rule, hx_err *err) {
  spc_map m;
  int32_t any;
  memset(&m, 0, sizeof m);
  return spc_map_gpu(&m, NULL, rule ? &any : NULL, NULL, sb, NULL, NULL, n, k, 0, NULL, err);
}

static hx_status scratch_need(p3g *g, size_t *need, size_t *side_need, hx_err *err) {
  const net_config *c = &g->cfg;
  size_t sb = 0, most = 0, side = 0; /* side: the launchers on the structure stream (structure_ahead) */
  size_t off[SFC_MAX_CLOUDS + 1];
  memcpy(off, g->lv[0].off, sizeof off);
  HX_TRY(bl_st(sfc_grid_gpu(NULL, NULL, NULL, NULL, &sb, NULL, off, g->B, g->grid_size, NULL), "grid size query", err));
  most = max_sz(most, sb);
  sfc_serial_args a = {NULL, NULL, NULL, NULL, NULL, g->n, g->B, g->lv[0].depth, NET_PTV3_ORDERS,
                       {g->orders[0], g->orders[1], g->orders[2], g->orders[3]}};
  HX_TRY(bl_st(g->serial->fn(NULL, &sb, &a, NULL), "serialization size query", err));
  most = max_sz(most, sb), side = max_sz(side, sb);
  spc_map m;
  spc_weights w = {.in = (size_t)c->in_channels, .out = (size_t)c->enc_channels[0], .K = 125};
  memset(&m, 0, sizeof m);
  if (net_ptv3_stem_fused(c)) {
    /* in one pass: its voxel table alone. No k = 5 map is built, so its 2^31 entries (17.18M rows) bound nothing
     * here; the stem's own bound is level 0's k = 3 map it writes (n x 27) */
    HX_TRY(spc_stem_gpu(NULL, NULL, &w, NULL, NULL, NL_ACT_GELU, &m, NULL, NULL, NULL, &sb, NULL, NULL,
                        (uint32_t)g->n, 0, g->dt, NULL, err));
    most = max_sz(most, sb);
  } else {
    /* the stem's map (and spc_map_pair_gpu's, no larger) and convolution */
    const spc_variant *sv = conv_variant(g, w.in, w.out, 125);
    if (!sv) return hx_errf(err, HX_EUNSUPPORTED, "ptv3 gpu: no sparse convolution variant");
    HX_TRY(map_scratch(&sb, (uint32_t)g->n, 5, net_ptv3_needs_rule(c, w.in, w.out, 125), err));
    most = max_sz(most, sb);
    m.n = (uint32_t)g->n, m.k = 5, m.K = 125;
    HX_TRY(sv->fn(NULL, NULL, &w, &m, NULL, &sb, NULL, g->dt, NULL, err));
    most = max_sz(most, sb);
  }
  for (int l = 0; l < c->levels; l++) {
    g_level *lv = &g->lv[l];
    if (l > 0) {
      const g_level *p = &g->lv[l - 1];
      spool_in pin = {NULL, NULL, NULL, NULL, NULL, NULL, p->n, 0, NET_PTV3_ORDERS, p->depth, g->B, {0, 1, 2, 3}};
      spool_out po;
      memset(&po, 0, sizeof po);
      HX_TRY(bl_st(spool_gpu(&po, NULL, &sb, &pin, NULL), "pooling size query", err));
      most = max_sz(most, sb), side = max_sz(side, sb);
    }
    HX_TRY(map_scratch(&sb, (uint32_t)lv->n, 3, net_ptv3_level_needs_rule(c, l), err));
    most = max_sz(most, sb);
    if (l > 0) side = max_sz(side, sb);
    memset(&m, 0, sizeof m);
    m.n = (uint32_t)lv->n, m.k = 3, m.K = 27;
    HX_TRY(spc_mask_order_gpu(NULL, &m, NULL, &sb, NULL, err)); /* built when a variant uses it: sized always */
    most = max_sz(most, sb);
    if (l > 0) side = max_sz(side, sb);
    for (int dec = 0; dec < 2; dec++) {
      if (dec && l == c->levels - 1) break;
      const size_t C = (size_t)(dec ? c->dec_channels[l] : c->enc_channels[l]);
      spc_weights wc = {.in = C, .out = C, .K = 27};
      const spc_variant *sv = conv_variant(g, C, C, 27);
      if (!sv)
        return hx_errf(err, HX_EINVAL, "ptv3 gpu: no sparse convolution variant v%d", g->cfg.spconv_force - 1);
      HX_TRY(sv->fn(NULL, NULL, &wc, &m, NULL, &sb, NULL, g->dt, NULL, err));
      most = max_sz(most, sb);
      /* the whole-MLP kernel (its Stream-K partial sums at C = 128 and 256; nets.h) */
      const size_t H = (size_t)c->mlp_ratio * C;
      if (nl_mlp_gpu_takes(C, H, NL_MLP_GELU)) {
        HX_TRY(nl_ln_mlp_gpu(NULL, NULL, NULL, NET_PTV3_LN_EPS, NULL, NULL, NULL, NULL, lv->n, C, H, NL_MLP_GELU, NULL,
                             &sb, g->dt, NULL, err));
        most = max_sz(most, sb);
      }
    }
    HX_TRY(attn_choose(g, lv, l, &most, err));
  }
  *need = most;
  *side_need = c->overlap ? side : 0;
  return HX_OK;
}

/* Every buffer prepare allocates, in one list: `need` allocates it (prepare) or adds its bytes (sizing). */
typedef hx_status (*g_need_fn)(p3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err);

static hx_status g_buffers(p3g *g, const net_ptv3_work *ws, g_need_fn need, hx_err *err) {
  const net_config *c = &g->cfg;
  const size_t n = g->n, Cin = (size_t)c->in_channels, E = 2; /* bytes of a dtype value */
#define NEED(slot, bytes, kind, label) HX_TRY(need(g, (void **)(slot), (bytes), (kind), (label), err))
  NEED(&g->xyz, n * 12, NET_MEM_IO, "ptv3 xyz");
  NEED(&g->feat32, n * Cin * 4, NET_MEM_IO, "ptv3 input features fp32");
  NEED(&g->feat, n * Cin * E, NET_MEM_IO, "ptv3 input features");
  NEED(&g->maxc, 4, NET_MEM_STRUCTURE, "ptv3 grid max");
  /* the stem's k = 5 map (300 MB at 600k), unless the stem runs in one pass, which never stores it */
  if (!net_ptv3_stem_fused(c)) NEED(&g->stem_nbr, n * 125 * 4, NET_MEM_STRUCTURE, "ptv3 stem kernel map");
  else g->stem_nbr = NULL;
  /* the stem's rulebook (8 * 125 * n bytes: 600 MB at 600k) only where its convolution reads it: v0 does, v2
   * (the stem's variant, in <= 8) reads the map alone */
  if (net_ptv3_needs_rule(c, Cin, (size_t)c->enc_channels[0], 125))
    NEED(&g->stem_rule, spc_rule_elems((uint32_t)n, 5) * 4, NET_MEM_STRUCTURE, "ptv3 stem rulebook");
  else
    g->stem_rule = NULL;
  for (int l = 0; l < c->levels; l++) {
    g_level *lv = &g->lv[l];
    const size_t m = lv->n;
    NEED(&lv->grid, m * 12, NET_MEM_STRUCTURE, "ptv3 grid");
    NEED(&lv->batch, m * 4, NET_MEM_STRUCTURE, "ptv3 batch");
    if (l > 0) NEED(&lv->coord, m * 12, NET_MEM_STRUCTURE, "ptv3 pooled coordinates");
    NEED(&lv->code, NET_PTV3_ORDERS * m * 8, NET_MEM_STRUCTURE, "ptv3 codes");
    NEED(&lv->order, NET_PTV3_ORDERS * m * 4, NET_MEM_STRUCTURE, "ptv3 order");
    NEED(&lv->inverse, NET_PTV3_ORDERS * m * 4, NET_MEM_STRUCTURE, "ptv3 inverse");
    if (l > 0) {
      NEED(&lv->cluster, g->lv[l - 1].n * 4, NET_MEM_STRUCTURE, "ptv3 pooling cluster");
      NEED(&lv->head, m * 4, NET_MEM_STRUCTURE, "ptv3 pooling head");
      NEED(&lv->idx_ptr, (m + 1) * 4, NET_MEM_STRUCTURE, "ptv3 pooling idx_ptr");
    }
    NEED(&lv->pad, lv->sum_p * 4, NET_MEM_STRUCTURE, "ptv3 pad");
    NEED(&lv->unpad, m * 4, NET_MEM_STRUCTURE, "ptv3 unpad");
    NEED(&lv->cu, lv->n_cu * 4, NET_MEM_STRUCTURE, "ptv3 cu_seqlens");
    NEED(&lv->nbr, m * 27 * 4, NET_MEM_STRUCTURE, "ptv3 kernel map");
    /* the rulebook (8 * 27 * n bytes, and a scan and a pass per forward) only where a convolution of the level
     * reads it: v0 does, the fused v1 reads the map alone */
    const int dec_here = l < c->levels - 1;
    const spc_variant *ve = conv_variant(g, (size_t)c->enc_channels[l], (size_t)c->enc_channels[l], 27);
    const spc_variant *vd = conv_variant(g, (size_t)c->dec_channels[l], (size_t)c->dec_channels[l], 27);
    if (!ve || !vd) return hx_errf(err, HX_EINVAL, "ptv3 gpu: no sparse convolution variant v%d", c->spconv_force - 1);
    if (net_ptv3_level_needs_rule(c, l))
      NEED(&lv->rule, spc_rule_elems((uint32_t)m, 3) * 4, NET_MEM_STRUCTURE, "ptv3 rulebook");
    else
      lv->rule = NULL;
    /* the rows in mask order, built once per forward with the map, where a convolution of the level reads it */
    const int ordered = ve->uses_order || (dec_here && vd->uses_order);
    if (ordered)
      NEED(&lv->map_order, m * 4, NET_MEM_STRUCTURE, "ptv3 kernel map row order");
    else
      lv->map_order = NULL;
    /* v6's tile order, for the tiles of the level's first v6 convolution (the encoder's where it is v6; a later
     * one of other tile rows takes its tiles last-first) */
    const int e6 = ve->id == 6, d6 = dec_here && vd->id == 6;
    const size_t Cf = (size_t)(e6 ? c->enc_channels[l] : c->dec_channels[l]);
    /* from the variants, not lv->map_order: the sizing pass sets no pointer */
    lv->tile_rows = c->tile_order && ordered && (e6 || d6) ? spc_v6_tile_rows(Cf) : 0u;
    if (lv->tile_rows)
      NEED(&lv->map_tiles, (m + lv->tile_rows - 1) / lv->tile_rows * 4, NET_MEM_STRUCTURE,
           "ptv3 kernel map tile order");
    else
      lv->map_tiles = NULL;
    NEED(&lv->bstart, (size_t)lv->plan.num_buckets * 4, NET_MEM_STRUCTURE, "ptv3 attention buckets");
    NEED(&lv->bcount, (size_t)lv->plan.num_buckets * 4, NET_MEM_STRUCTURE, "ptv3 attention bucket counts");
    NEED(&lv->scope, (size_t)lv->plan.num_scopes * lv->plan.buckets_per_scope * 4, NET_MEM_STRUCTURE,
         "ptv3 attention scopes");
    for (int row = 0; row < NET_PTV3_ORDERS; row++)
      if (net_ptv3_row_used(c, l, row)) {
        NEED(&lv->order_p[row], lv->sum_p * 4, NET_MEM_STRUCTURE, "ptv3 order[pad]");
        NEED(&lv->inverse_p[row], m * 4, NET_MEM_STRUCTURE, "ptv3 unpad[inverse]");
      } else {
        lv->order_p[row] = lv->inverse_p[row] = NULL;
      }
    NEED(&lv->enc, m * (size_t)c->enc_channels[l] * E, NET_MEM_LEVELS, "ptv3 encoder output");
    if (l < c->levels - 1 && c->keep_levels)
      NEED(&lv->dec, m * (size_t)c->dec_channels[l] * E, NET_MEM_LEVELS, "ptv3 decoder output");
  }
  if (!c->keep_levels) { /* every level's decoder output in one buffer (the policy at the top) */
    size_t d = 0;
    for (int l = 0; l < c->levels - 1; l++) d = max_sz(d, g->lv[l].n * (size_t)c->dec_channels[l]);
    NEED(&g->dec_all, d * E, NET_MEM_LEVELS, "ptv3 decoder outputs (shared)");
    for (int l = 0; l < c->levels - 1; l++) g->lv[l].dec = g->dec_all;
  }
  NEED(&g->t, ws->nc * E, NET_MEM_WORK, "ptv3 work t");
  NEED(&g->u, ws->nc * E, NET_MEM_WORK, "ptv3 work u");
  /* big for the levels that use it (the CPU forward's ws->big is larger: its MLPs are never one kernel): the
   * pooling projection into level l (level l - 1's rows), and a block's MLP hidden row where its path on this
   * device (net_mlp_path_run) is the two Linears */
  size_t big = 0;
  for (int l = 0; l < c->levels; l++) {
    const size_t m = g->lv[l].n;
    if (l > 0) big = max_sz(big, g->lv[l - 1].n * (size_t)c->enc_channels[l]);
    for (int side = 0; side < 2; side++) {
      const size_t C = (size_t)(side ? c->dec_channels[l] : c->enc_channels[l]), H = (size_t)c->mlp_ratio * C;
      if ((side ? c->dec_depth[l] : c->enc_depth[l]) && net_mlp_path_run(c, C, H) != NET_MLP_WHOLE)
        big = max_sz(big, net_mlp_chunk_rows(c, m, H) * H);
    }
  }
  g->big_n = big;
  NEED(&g->pc3, ws->pc3 * E, NET_MEM_WORK, "ptv3 gathered qkv");
  /* big over the gathered qkv where it fits: the MLP and the pooling run where no block's qkv is live */
  if (big <= ws->pc3) g->big = g->pc3;
  else NEED(&g->big, big * E, NET_MEM_WORK, "ptv3 work mlp/pool");
  NEED(&g->pc, ws->pc * E, NET_MEM_WORK, "ptv3 attention output");
  if (n * (size_t)c->classes <= ws->nc) g->logits = g->t; /* the head runs last: t is dead */
  else NEED(&g->logits, n * (size_t)c->classes * E, NET_MEM_IO, "ptv3 logits");
  NEED(&g->logits32, n * (size_t)c->classes * 4, NET_MEM_IO, "ptv3 logits fp32");
  NEED(&g->scratch, g->scratch_bytes, NET_MEM_SCRATCH, "ptv3 scratch");
  if (g->scratch2_bytes) NEED(&g->scratch2, g->scratch2_bytes, NET_MEM_SCRATCH, "ptv3 structure scratch");
  else g->scratch2 = NULL;
#undef NEED
  return HX_OK;
}

static hx_status need_count(p3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err) {
  (void)slot, (void)err;
  g->held_bytes += hx_align256(bytes ? bytes : 1);
  net_mem_add(g->mem, label, kind, bytes);
  return HX_OK;
}

static hx_status need_alloc(p3g *g, void **slot, size_t bytes, net_mem_kind kind, const char *label, hx_err *err) {
  (void)kind;
  return g_hold(g, slot, bytes, label, err);
}

/* Weight bytes of a configuration (the dense block, the convolutions) without parameters. */
static void weight_bytes(p3g *g, size_t *dense, size_t *convs) {
  net_pack k = {NULL, NULL, 0, g->dt};
  hx_err e;
  (void)g_weights(g, NULL, &k, &e); /* the sizing pass cannot fail */
  *dense = hx_align256(k.used), *convs = g->conv_bytes;
}

/* Host structure and the sizes every later step uses (bytes and prepare). */
static hx_status plan_input(p3g *g, const net_input *in, net_ptv3_work *ws, hx_err *err) {
  if (in && in->B > SFC_MAX_CLOUDS)
    return hx_errf(err, HX_EUNSUPPORTED, "ptv3 gpu: %u clouds in a batch, at most %d", in->B, SFC_MAX_CLOUDS);
  net_ptv3_struct *s = malloc(sizeof *s);
  if (!s) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: structure");
  hx_status st = net_ptv3_struct_build(s, &g->cfg, in, 0, err);
  if (st == HX_OK) {
    g->grid_size = in->grid_size;
    net_ptv3_work_sizes(ws, &g->cfg, s);
    st = levels_from_struct(g, s, in->seed, err);
    net_ptv3_struct_free(s);
  }
  free(s);
  if (st == HX_OK) st = scratch_need(g, &g->scratch_bytes, &g->scratch2_bytes, err);
  return st;
}

static hx_status bytes(net_mem *out, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err) {
  if (!out) return hx_errf(err, HX_EINVAL, "ptv3 gpu bytes: NULL output");
  HX_TRY(check_gpu_config(cfg, err));
  p3g *g = calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "ptv3 gpu bytes: sizing object");
  g->cfg = *cfg, g->dt = dt, g->mem = out;
  g->serial = sfc_serial_variant_best();
  net_ptv3_work ws;
  hx_status st = g->serial ? plan_input(g, in, &ws, err) : hx_errf(err, HX_ENODEV, "ptv3 gpu: no serialization");
  if (st == HX_OK) st = g_buffers(g, &ws, need_count, err);
  size_t dense = 0, convs = 0;
  weight_bytes(g, &dense, &convs);
  if (st == HX_OK) { /* the forward allocates these two as the first buffers, at create */
    net_mem_add(out, "ptv3 weights", NET_MEM_WEIGHTS, dense);
    net_mem_add(out, "ptv3 convolution weights", NET_MEM_WEIGHTS, convs);
  }
  for (int l = 0; l < G_L; l++) battn_plan_free(&g->lv[l].plan);
  free(g);
  return st;
}

/* ---- the forward's steps ---------------------------------------------------------------------------------- */

/* A stream with the scratch its launchers use: work on one stream never shares a scratch with another's. */
typedef struct g_lane {
  struct CUstream_st *s;
  void *scratch;
  size_t bytes;
} g_lane;

typedef struct g_run {
  p3g *g;
  const net_hooks *h;
  cudaStream_t s;
  struct CUstream_st *cs;
  int prepare; /* 1: the structural pass of prepare (read-backs allowed) */
  int side;    /* 1: the structure runs ahead on g->side (net_config's overlap, a forward without hooks) */
  g_lane main, st; /* the features' stream (the forward's) and the structure's (g->side, or the forward's) */
  /* bits: 1 the level's kernel map (and its order), 2 its padding, 4 its map built with the stem's, 8 the forward's
   * stream waited for the level's structure, 16 its pooling structure, 128 << row order row row's composed indices */
  int ready[G_L];
  hx_err *err;
} g_run;

static void rng(g_run *r, const char *name, int begin) { net_range(r->h, name, begin, r->cs); }

static hx_status lin_gpu(g_run *r, void *y, const void *x, const net_dlin *l, size_t rows, nl_act act, int acc) {
  return nl_linear_gpu(r->g->blas, y, x, l->w, l->b, rows, l->in, l->out, act, acc, r->g->dt, r->cs, r->err);
}

static hx_status conv_gpu(g_run *r, void *y, const void *x, const spc_weights *w, const spc_map *m) {
  const spc_variant *v = conv_variant(r->g, w->in, w->out, m->K);
  size_t sb = r->g->scratch_bytes;
  return v->fn(y, x, w, m, r->g->scratch, &sb, r->g->sctx, r->g->dt, r->cs, r->err);
}

static hx_status map_gpu(g_run *r, const g_lane *ln, spc_map *m, int32_t *nbr, int32_t *rule, const g_level *lv,
                         uint32_t k) {
  size_t sb = ln->bytes;
  return spc_map_gpu(m, nbr, rule, ln->scratch, &sb, lv->grid, lv->batch, (uint32_t)lv->n, k, r->prepare, ln->s,
                     r->err);
}

/* ---- the structure: what the coordinates alone decide ------------------------------------------------------------
 * Level 0's serialization, padding and composed indices, and per level l >= 1 its pooling structure, kernel map (with
 * its mask and tile orders), padding and composed indices read no feature. With overlap (g_run's side) they run ahead
 * on the structure stream, forked from the forward's after the grid coordinates, done[l] recorded after each level's;
 * the features wait for done[l] before they first read level l's structure (wait_level), and every done[] before the
 * head, so the structure stream always joins the forward's (as a CUDA graph capture needs). Level 0's map is the
 * stem's (on the forward's stream), so its mask and tile orders stay there. Without overlap each piece runs where the
 * features first need it, on the forward's stream, which is how hooks (timing, counters, NVTX) see every range hold
 * only its own work. */

static hx_status wait_level(g_run *r, int l) {
  if (!r->side || (r->ready[l] & 8)) return HX_OK;
  r->ready[l] |= 8;
  return cu_st(cudaStreamWaitEvent(r->s, r->g->done[l], 0), "structure wait", r->err);
}

/* Level l's kernel map (unless the stem built it) and, where a convolution reads them, its mask and tile orders. */
static hx_status level_map(g_run *r, const g_lane *ln, int l) {
  g_level *lv = &r->g->lv[l];
  if (!(r->ready[l] & 4)) HX_TRY(map_gpu(r, ln, &lv->map, lv->nbr, lv->rule, lv, 3));
  if (lv->map_order) {
    size_t sb = ln->bytes;
    HX_TRY(spc_mask_tiles_gpu(lv->map_order, lv->map_tiles, lv->tile_rows, &lv->map, ln->scratch, &sb, ln->s, r->err));
    lv->map.order = lv->map_order;
    lv->map.tiles = lv->map_tiles, lv->map.tile_rows = lv->tile_rows;
  }
  r->ready[l] |= 1;
  return HX_OK;
}

static hx_status level_padding(g_run *r, const g_lane *ln, int l) {
  g_level *lv = &r->g->lv[l];
  HX_TRY(bl_st(shuf_padding_gpu(lv->pad, lv->unpad, lv->cu, lv->off, r->g->B, (uint32_t)r->g->cfg.patch, ln->s),
               "padding", r->err));
  r->ready[l] |= 2;
  return HX_OK;
}

/* order_p = order[pad] and inverse_p = unpad[inverse] of level l's order row `row` (the level's padding first): the
 * patch slots' rows, which norm.1 reads x by, and the rows gather.out reads the slots by. */
static hx_status compose_row(g_run *r, const g_lane *ln, int l, int row) {
  g_level *lv = &r->g->lv[l];
  const size_t n = lv->n;
  if (!(r->ready[l] & 2)) HX_TRY(level_padding(r, ln, l));
  HX_TRY(bl_st(shuf_compose_gpu(lv->order_p[row], lv->inverse_p[row], lv->order + (size_t)row * n,
                                lv->inverse + (size_t)row * n, lv->pad, lv->unpad, n, lv->sum_p, ln->s),
               "index composition", r->err));
  r->ready[l] |= 128 << row;
  return HX_OK;
}

/* PTv3's pooling structure of level l from level l - 1's (prepare reads the pooled size back and checks it). */
static hx_status pool_structure(g_run *r, const g_lane *ln, int l) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l], *p = &g->lv[l - 1];
  spool_in pin = {p->code, p->order, NULL, l == 1 ? g->xyz : p->coord, p->grid, p->batch, p->n, 0, NET_PTV3_ORDERS,
                  p->depth, g->B, {0, 1, 2, 3}};
  memcpy(pin.perm, lv->perm, sizeof pin.perm);
  spool_out po = {0, 0, lv->cluster, lv->head, lv->idx_ptr, lv->code, lv->order, lv->inverse, NULL, lv->coord,
                  lv->grid, lv->batch};
  size_t sb = ln->bytes;
  if (r->prepare) {
    HX_TRY(bl_st(spool_gpu(&po, ln->scratch, &sb, &pin, ln->s), "pooling", r->err));
    if (po.n_out != lv->n)
      return hx_errf(r->err, HX_ECHECK, "ptv3 gpu: pooling into level %d gave %zu points, the host structure %zu", l,
                     po.n_out, lv->n);
  } else {
    HX_TRY(bl_st(spool_gpu_sized(&po, ln->scratch, &sb, &pin, lv->n, ln->s), "pooling", r->err));
  }
  r->ready[l] |= 16;
  return HX_OK;
}

/* Grid coordinates (the forward's stream) and the 4-order serialization of level 0 (the structure's). */
static hx_status step_serialize(g_run *r) {
  p3g *g = r->g;
  g_level *l0 = &g->lv[0];
  size_t sb = r->main.bytes;
  HX_TRY(bl_st(sfc_grid_gpu(l0->grid, l0->batch, g->maxc, r->main.scratch, &sb, g->xyz, l0->off, g->B, g->grid_size,
                            r->cs),
               "grid coordinates", r->err));
  if (r->side) {
    HX_TRY(cu_st(cudaEventRecord(g->fork, r->s), "structure fork", r->err));
    HX_TRY(cu_st(cudaStreamWaitEvent(g->side, g->fork, 0), "structure fork", r->err));
  }
  sfc_serial_args a = {l0->code, l0->order, l0->inverse, l0->grid, l0->batch, g->n, g->B, l0->depth, NET_PTV3_ORDERS,
                       {g->orders[0], g->orders[1], g->orders[2], g->orders[3]}};
  sb = r->st.bytes;
  return bl_st(g->serial->fn(r->st.scratch, &sb, &a, r->st.s), "serialization", r->err);
}

/* With overlap: level l's structure queued on the structure stream, done[l] recorded after it. The forward queues
 * level 0's after the serialization and level l + 1's as level l starts: queued all at once, the host's ~100
 * launches would hold back the features' first kernels in an eager forward. */
static hx_status structure_ahead(g_run *r, int l) {
  if (!r->side || l >= r->g->cfg.levels) return HX_OK;
  if (l > 0) { /* level 0's grid is the forward's, its map the stem's */
    HX_TRY(pool_structure(r, &r->st, l));
    HX_TRY(level_map(r, &r->st, l));
  }
  HX_TRY(level_padding(r, &r->st, l));
  for (int row = 0; row < NET_PTV3_ORDERS; row++)
    if (r->g->lv[l].order_p[row]) HX_TRY(compose_row(r, &r->st, l, row));
  return cu_st(cudaEventRecord(r->g->done[l], r->g->side), "structure event", r->err);
}

static hx_status step_embed(g_run *r) {
  p3g *g = r->g;
  g_level *l0 = &g->lv[0];
  HX_TRY(nl_from_f32_gpu(g->feat, g->feat32, g->n * (size_t)g->cfg.in_channels, g->dt, r->cs, r->err));
  if (net_ptv3_stem_fused(&g->cfg)) {
    /* conv, BN and GELU from the voxel table, with level 0's k = 3 map; prepare counts the stem's pairs (and
     * builds level 0's map with its counts in its first xCPE, as without the pass) */
    size_t sb = g->scratch_bytes;
    HX_TRY(spc_stem_gpu(
        l0->enc, g->feat, &g->stem, g->stem_bn.scale, g->stem_bn.shift, NL_ACT_GELU, &g->stem_map,
        r->prepare ? NULL : &l0->map, l0->nbr, g->scratch, &sb, l0->grid, l0->batch, (uint32_t)g->n, r->prepare, g->dt,
        r->cs, r->err));
    if (!r->prepare) r->ready[0] |= 4;
    return HX_OK;
  }
  if (!r->prepare && net_ptv3_maps_paired(&g->cfg)) {
    /* the stem's map and level 0's k = 3 map in one pass (prepare counted both with spc_map_gpu); no convolution
     * there reads a rulebook, so g_buffers allocated neither */
    size_t sb = g->scratch_bytes;
    HX_TRY(spc_map_pair_gpu(&g->stem_map, g->stem_nbr, &l0->map, l0->nbr, g->scratch, &sb, l0->grid, l0->batch,
                            (uint32_t)g->n, r->cs, r->err));
    r->ready[0] |= 4;
  } else {
    HX_TRY(map_gpu(r, &r->main, &g->stem_map, g->stem_nbr, g->stem_rule, l0, 5));
  }
  HX_TRY(conv_gpu(r, l0->enc, g->feat, &g->stem, &g->stem_map));
  return nl_affine_act_gpu(l0->enc, l0->enc, g->stem_bn.scale, g->stem_bn.shift, g->n, g->stem_bn.C, NL_ACT_GELU,
                           g->dt, r->cs, r->err);
}

/* Pooling into level l: projection, PTv3's pooling structure, segment max, BN, GELU. */
static hx_status step_pool(g_run *r, int l) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l], *p = &g->lv[l - 1];
  const size_t C = (size_t)g->cfg.enc_channels[l];
  HX_TRY(lin_gpu(r, g->big, p->enc, &g->down[l], p->n, NL_ACT_NONE, 0));
  if (!(r->ready[l] & 16)) HX_TRY(pool_structure(r, &r->main, l));
  HX_TRY(wait_level(r, l));
  /* children of parent k: row-0 order positions [idx_ptr[k], idx_ptr[k+1]) of level l-1 */
  HX_TRY(nl_segment_max_gpu(lv->enc, g->big, p->order, lv->idx_ptr, lv->n, C, g->dt, r->cs, r->err));
  return nl_affine_act_gpu(lv->enc, lv->enc, g->down_bn[l].scale, g->down_bn[l].shift, lv->n, C, NL_ACT_GELU, g->dt,
                           r->cs, r->err);
}

static hx_status gather(g_run *r, void *out, const void *in, const uint32_t *idx, size_t rows, size_t width) {
  const shuf_gather_variant *v = shuf_gather_variant_best(width);
  if (!v) return hx_errf(r->err, HX_ENODEV, "ptv3 gpu: no gather variant");
  return bl_st(v->fn(out, in, idx, rows, width, g_shuf_dt(r->g->dt), r->cs), "row gather", r->err);
}

/* x += LN(Linear(conv(src))); the level's kernel map first if no block has built it in this forward. */
static hx_status cpe(g_run *r, int l, const g_block *b, void *x, const void *src) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l];
  const size_t n = lv->n, C = (size_t)b->C;
  if (!(r->ready[l] & 1)) HX_TRY(level_map(r, &r->main, l));
  if (l > 0) HX_TRY(wait_level(r, l)); /* level 0's map is the stem's */
  HX_TRY(conv_gpu(r, g->t, src, &b->conv, &lv->map));
  if (g->cfg.cpe_fold) /* the Linear is in the convolution's weights */
    return nl_layernorm_add_gpu(x, g->t, b->cpe_norm.g, b->cpe_norm.b, n, C, NET_PTV3_LN_EPS, g->dt, r->cs, r->err);
  if (net_ln_cpe_fused(&g->cfg, C)) { /* x += LN(Linear(t)) in one kernel; the unfused path where it cannot run */
    const hx_status st = nl_linear_ln_add_gpu(x, g->t, b->cpe_lin.w, b->cpe_lin.b, b->cpe_norm.g, b->cpe_norm.b,
                                              NET_PTV3_LN_EPS, n, C, g->dt, r->cs, r->err);
    if (!net_unsupported(st, r->err)) return st;
  }
  HX_TRY(lin_gpu(r, g->u, g->t, &b->cpe_lin, n, NL_ACT_NONE, 0));
  return nl_layernorm_add_gpu(x, g->u, b->cpe_norm.g, b->cpe_norm.b, n, C, NET_PTV3_LN_EPS, g->dt, r->cs, r->err);
}

/* A block's composed indices: built by the first block of the level that attends in the row (or ahead, with the
 * structure). */
static hx_status compose(g_run *r, int l, int row) {
  if (!(r->ready[l] & (128 << row))) HX_TRY(compose_row(r, &r->main, l, row));
  return wait_level(r, l);
}

static hx_status attention(g_run *r, int l, const g_block *b) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l];
  battn_params bp;
  attn_params(&bp, g, lv, b->C, b->H);
  size_t sb = g->scratch_bytes;
  return lv->attn->fn(&bp, g->scratch, &sb, r->s, r->err);
}

static hx_status gather_out(g_run *r, int l, int row, size_t C) {
  return gather(r, r->g->t, r->g->pc, r->g->lv[l].inverse_p[row], r->g->lv[l].n, C);
}

/* x += fc2(GELU(fc1(t))): one nl_mlp_gpu kernel on net_mlp_path_of's NET_MLP_WHOLE (the hidden row on chip), else
 * two cuBLASLt Linears through g->big (cuBLASLt's tanh GELU), a chunk of net_mlp_chunk_rows rows at a time. */
static hx_status mlp(g_run *r, const g_block *b, void *x, size_t n) {
  const size_t C = b->fc1.in, H = b->fc1.out;
  if (net_mlp_path_of(&r->g->cfg, C, H) == NET_MLP_WHOLE) {
    size_t sb = r->g->scratch_bytes;
    const hx_status st = nl_mlp_gpu(x, r->g->t, b->fc1.w, b->fc1.b, b->fc2.w, b->fc2.b, n, C, H, NL_MLP_GELU,
                                    r->g->scratch, &sb, r->g->dt, r->cs, r->err);
    if (!net_unsupported(st, r->err)) return st; /* else the two Linears */
  }
  const size_t rows = net_mlp_chunk_rows(&r->g->cfg, n, H), row_bytes = C * 2; /* a dtype value: 2 bytes */
  /* big holds what net_mlp_path_run said this device's path writes for a chunk: a kernel refused past it (never, by
   * its rule) must not write past it */
  if (rows * H > r->g->big_n)
    return hx_errf(r->err, HX_EINVAL, "ptv3 gpu: the MLP at C = %zu left its one kernel; its work buffer was sized "
                   "for that kernel", C);
  for (size_t r0 = 0; r0 < n; r0 += rows) {
    const size_t k = n - r0 < rows ? n - r0 : rows;
    HX_TRY(lin_gpu(r, r->g->big, (const char *)r->g->t + r0 * row_bytes, &b->fc1, k, NL_ACT_GELU, 0));
    HX_TRY(lin_gpu(r, (char *)x + r0 * row_bytes, r->g->big, &b->fc2, k, NL_ACT_NONE, 1));
  }
  return HX_OK;
}

/* norm.1 and qkv as one nl_ln_linear_gpu kernel reading x's rows in the slots' order (the LayerNorm's row never
 * stored); where the device cannot run it, the LayerNorm into g->pc and the cuBLASLt Linear. */
static hx_status norm_qkv(g_run *r, const g_block *b, const void *x, const uint32_t *order_p, size_t n, size_t slots) {
  p3g *g = r->g;
  const size_t C = (size_t)b->C;
  const hx_status st = nl_ln_linear_gpu(g->pc3, x, order_p, n, b->norm1.g, b->norm1.b, NET_PTV3_LN_EPS, b->qkv.w,
                                        b->qkv.b, slots, C, 3 * C, g->dt, r->cs, r->err);
  if (!net_unsupported(st, r->err)) return st;
  HX_TRY(nl_layernorm_rows_gpu(g->pc, x, order_p, n, b->norm1.g, b->norm1.b, slots, C, NET_PTV3_LN_EPS, g->dt,
                               r->cs, r->err));
  return lin_gpu(r, g->pc3, g->pc, &b->qkv, slots, NL_ACT_NONE, 0);
}

/* norm.2 and the MLP as one nl_ln_mlp_gpu kernel (x normalised on chip); where the device cannot run it, the
 * LayerNorm into g->t and mlp(). */
static hx_status norm_mlp(g_run *r, const g_block *b, void *x, size_t n) {
  p3g *g = r->g;
  const size_t C = (size_t)b->C;
  size_t sb = g->scratch_bytes;
  const hx_status st = nl_ln_mlp_gpu(x, b->norm2.g, b->norm2.b, NET_PTV3_LN_EPS, b->fc1.w, b->fc1.b, b->fc2.w,
                                     b->fc2.b, n, C, b->fc1.out, NL_MLP_GELU, g->scratch, &sb, g->dt, r->cs, r->err);
  if (!net_unsupported(st, r->err)) return st;
  HX_TRY(nl_layernorm_gpu(g->t, x, b->norm2.g, b->norm2.b, n, C, NET_PTV3_LN_EPS, g->dt, r->cs, r->err));
  return mlp(r, b, x, n);
}

/* One block on level l: x updated in place; src is what the CPE convolves. */
static hx_status step_block(g_run *r, int l, const g_block *b, void *x, const void *src, int row, const char *path) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l];
  const size_t n = lv->n, C = (size_t)b->C;
  char name[96];
#define RANGE(part, body)                                                                                 \
  do {                                                                                                    \
    snprintf(name, sizeof name, "%s/%s", path, part);                                                     \
    rng(r, name, 1);                                                                                      \
    const hx_status rs_ = (body);                                                                         \
    rng(r, name, 0);                                                                                      \
    HX_TRY(rs_);                                                                                          \
  } while (0)
  RANGE("cpe", cpe(r, l, b, x, src));
  /* PTv3 gathers the qkv rows (3C wide) into the patch slots; LN and the qkv Linear act row by row, so norm.1
   * reads x's rows in slot order instead and qkv runs on the slots: the same values, no 3C-wide gather */
  RANGE("gather.qkv", compose(r, l, row));
  /* a LayerNorm inside the kernel that reads it is timed with that kernel (the cost model prices it so) */
  if (net_ln_qkv_fused(&g->cfg, C)) {
    RANGE("qkv", norm_qkv(r, b, x, lv->order_p[row], n, lv->sum_p));
  } else {
    RANGE("norm.1", nl_layernorm_rows_gpu(g->pc, x, lv->order_p[row], n, b->norm1.g, b->norm1.b, lv->sum_p, C,
                                          NET_PTV3_LN_EPS, g->dt, r->cs, r->err));
    RANGE("qkv", lin_gpu(r, g->pc3, g->pc, &b->qkv, lv->sum_p, NL_ACT_NONE, 0));
  }
  RANGE("attn", attention(r, l, b));
  RANGE("gather.out", gather_out(r, l, row, C));
  RANGE("proj", lin_gpu(r, x, g->t, &b->proj, n, NL_ACT_NONE, 1));
  if (net_ln_mlp_fused(&g->cfg, C, b->fc1.out)) {
    RANGE("mlp", norm_mlp(r, b, x, n));
  } else {
    RANGE("norm.2", nl_layernorm_gpu(g->t, x, b->norm2.g, b->norm2.b, n, C, NET_PTV3_LN_EPS, g->dt, r->cs, r->err));
    RANGE("mlp", mlp(r, b, x, n));
  }
#undef RANGE
  return HX_OK;
}

/* Unpooling into level l: dec_l = GELU(BN(skip(enc_l))) + GELU(BN(proj(child)))[cluster], each BN folded into its
 * Linear and the GELU in cuBLASLt's epilogue, the gather and the add one pass; the projected skip stays in u for the
 * first block's CPE (the m1 quirk, net_ptv3.c). */
static hx_status step_unpool(g_run *r, int l) {
  p3g *g = r->g;
  g_level *lv = &g->lv[l], *ch = &g->lv[l + 1];
  const size_t C = (size_t)g->cfg.dec_channels[l];
  const void *cx = l == g->cfg.levels - 2 ? ch->enc : ch->dec;
  HX_TRY(lin_gpu(r, g->t, cx, &g->up_proj[l], ch->n, NL_ACT_GELU, 0));
  HX_TRY(lin_gpu(r, g->u, lv->enc, &g->up_skip[l], lv->n, NL_ACT_GELU, 0));
  return nl_gather_add_gpu(lv->dec, g->t, ch->cluster, g->u, lv->n, C, g->dt, r->cs, r->err);
}

static hx_status step_head(g_run *r) {
  p3g *g = r->g;
  HX_TRY(lin_gpu(r, g->logits, g->lv[0].dec, &g->head, g->n, NL_ACT_NONE, 0));
  return nl_to_f32_gpu(g->logits32, g->logits, g->n * (size_t)g->cfg.classes, g->dt, r->cs, r->err);
}

/* The whole forward from the uploaded points (prepare's structural pass when r->prepare). */
static hx_status run_all(g_run *r) {
  p3g *g = r->g;
  const net_config *c = &g->cfg;
  const int L = c->levels;
  char path[32], name[48];
  hx_status st;
#define TOP(label, body)                                                                                  \
  do {                                                                                                    \
    rng(r, label, 1);                                                                                     \
    st = (body);                                                                                          \
    rng(r, label, 0);                                                                                     \
    HX_TRY(st);                                                                                           \
  } while (0)
  TOP("serialize", step_serialize(r));
  HX_TRY(structure_ahead(r, 0));
  TOP("embed", step_embed(r));
  for (int l = 0; l < L; l++) {
    g_level *lv = &g->lv[l];
    HX_TRY(structure_ahead(r, l + 1));
    snprintf(path, sizeof path, "enc%d", l);
    rng(r, path, 1);
    if (l > 0) {
      snprintf(name, sizeof name, "%s/pool", path);
      TOP(name, step_pool(r, l));
    }
    for (int i = 0; i < c->enc_depth[l]; i++) {
      snprintf(name, sizeof name, "%s/block%d", path, i);
      TOP(name, step_block(r, l, &g->enc[l][i], lv->enc, lv->enc, i % NET_PTV3_ORDERS, name));
    }
    rng(r, path, 0);
  }
  for (int l = L - 2; l >= 0; l--) {
    g_level *lv = &g->lv[l];
    snprintf(path, sizeof path, "dec%d", l);
    rng(r, path, 1);
    snprintf(name, sizeof name, "%s/unpool", path);
    TOP(name, step_unpool(r, l));
    for (int i = 0; i < c->dec_depth[l]; i++) {
      snprintf(name, sizeof name, "%s/block%d", path, i);
      TOP(name, step_block(r, l, &g->dec[l][i], lv->dec, i == 0 ? g->u : lv->dec, i % NET_PTV3_ORDERS, name));
    }
    rng(r, path, 0);
  }
  for (int l = 0; l < L; l++) HX_TRY(wait_level(r, l)); /* the join, whichever levels ran no block */
  TOP("head", step_head(r));
#undef TOP
  return HX_OK;
}

/* ---- the vtable --------------------------------------------------------------------------------------------- */

static hx_status upload(void *d, const void *h, size_t bytes, const char *what, hx_err *err) {
  return bytes ? cu_st(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), what, err) : HX_OK;
}

static hx_status prepare_body(p3g *g, const net_input *in, struct CUstream_st *stream, hx_err *err) {
  net_ptv3_work ws;
  HX_TRY(plan_input(g, in, &ws, err));
  HX_TRY(g_buffers(g, &ws, need_alloc, err));
  HX_TRY(upload(g->xyz, in->xyz, g->n * 12, "xyz upload", err));
  HX_TRY(upload(g->feat32, in->feat, g->n * (size_t)g->cfg.in_channels * 4, "feature upload", err));
  for (int l = 0; l < g->cfg.levels; l++) {
    const battn_plan *pl = &g->lv[l].plan;
    HX_TRY(upload(g->lv[l].bstart, pl->bucket_start, (size_t)pl->num_buckets * 4, "plan upload", err));
    HX_TRY(upload(g->lv[l].bcount, pl->bucket_count, (size_t)pl->num_buckets * 4, "plan upload", err));
    HX_TRY(upload(g->lv[l].scope, pl->scope, (size_t)pl->num_scopes * pl->buckets_per_scope * 4, "plan upload", err));
  }
  g_run r;
  memset(&r, 0, sizeof r);
  r.g = g, r.h = NULL, r.s = (cudaStream_t)stream, r.cs = stream, r.prepare = 1, r.err = err;
  r.main = r.st = (g_lane){stream, g->scratch, g->scratch_bytes};
  HX_TRY(run_all(&r));
  return cu_st(cudaStreamSynchronize((cudaStream_t)stream), "prepare", err);
}

static hx_status prepare(void *impl, const net_input *in, struct CUstream_st *stream, hx_err *err) {
  p3g *g = impl;
  unprepare(g);
  const hx_status st = prepare_body(g, in, stream, err);
  if (st != HX_OK) {
    cudaStreamSynchronize((cudaStream_t)stream); /* nothing may still use the buffers released below */
    unprepare(g);
    return st;
  }
  g->prepared = 1;
  return HX_OK;
}

static hx_status forward(void *impl, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err) {
  p3g *g = impl;
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "ptv3 gpu: forward before a successful prepare");
  g_run r;
  memset(&r, 0, sizeof r);
  r.g = g, r.h = hooks, r.s = (cudaStream_t)stream, r.cs = stream, r.prepare = 0, r.err = err;
  r.side = g->side && g->scratch2 && !(hooks && hooks->range);
  r.main = (g_lane){stream, g->scratch, g->scratch_bytes};
  r.st = r.side ? (g_lane){(struct CUstream_st *)g->side, g->scratch2, g->scratch2_bytes} : r.main;
  const hx_status st = run_all(&r);
  if (st != HX_OK && r.side) { /* the structure stream joins the forward's also after a failure */
    cudaEventRecord(g->join, g->side);
    cudaStreamWaitEvent(r.s, g->join, 0);
  }
  return st;
}

/* Device dtype values to host fp32. */
static hx_status fetch_level(p3g *g, float **out, const void *d, size_t count, cudaStream_t s, hx_err *err) {
  uint16_t *h = malloc((count ? count : 1) * sizeof *h);
  *out = malloc((count ? count : 1) * sizeof **out);
  hx_status st = h && *out ? HX_OK : hx_errf(err, HX_ENOMEM, "ptv3 gpu: level download");
  if (st == HX_OK) st = cu_st(cudaMemcpyAsync(h, d, count * 2, cudaMemcpyDeviceToHost, s), "level download", err);
  if (st == HX_OK) st = cu_st(cudaStreamSynchronize(s), "level download", err);
  for (size_t k = 0; st == HX_OK && k < count; k++) (*out)[k] = net_to_float(g->dt, h[k]);
  free(h);
  return st;
}

static hx_status download_body(p3g *g, net_output *out, int keep_levels, cudaStream_t s, hx_err *err) {
  const net_config *c = &g->cfg;
  const size_t m = g->n * (size_t)c->classes;
  out->n = g->n, out->classes = (size_t)c->classes;
  out->logits = malloc((m ? m : 1) * sizeof *out->logits);
  if (!out->logits) return hx_errf(err, HX_ENOMEM, "ptv3 gpu: logits download");
  HX_TRY(cu_st(cudaMemcpyAsync(out->logits, g->logits32, m * 4, cudaMemcpyDeviceToHost, s), "logits download", err));
  HX_TRY(cu_st(cudaStreamSynchronize(s), "logits download", err));
  if (!keep_levels) return HX_OK;
  size_t slot = 0;
  for (int dec = 0; dec < 2; dec++)
    for (int k = 0; k < c->levels - dec; k++, slot++) {
      const int l = dec ? c->levels - 2 - k : k;
      const size_t C = (size_t)(dec ? c->dec_channels[l] : c->enc_channels[l]);
      HX_TRY(fetch_level(g, &out->level[slot], dec ? g->lv[l].dec : g->lv[l].enc, g->lv[l].n * C, s, err));
      out->level_rows[slot] = g->lv[l].n, out->level_C[slot] = C;
      snprintf(out->level_name[slot], sizeof out->level_name[slot], "%s%d", dec ? "dec" : "enc", l);
    }
  out->n_levels = slot;
  return HX_OK;
}

static hx_status download(void *impl, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err) {
  p3g *g = impl;
  if (!out) return hx_errf(err, HX_EINVAL, "ptv3 gpu: NULL output");
  memset(out, 0, sizeof *out);
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "ptv3 gpu: download before a successful prepare");
  const hx_status st = download_body(g, out, keep_levels, (cudaStream_t)stream, err);
  if (st != HX_OK) net_output_free(out);
  return st;
}

/* Graphable: no step of forward synchronises the host (spool_gpu_sized, spc_map_gpu without counts). */
static int graphable(const void *impl) {
  (void)impl;
  return 1;
}

static size_t held(const void *impl) {
  const p3g *g = impl;
  return g->held_bytes + g->wbytes + g->conv_bytes;
}

/* The cost model on the prepared shapes: level sizes and padding from the host structure, patch rows from the
 * attention plans, pair counts from the kernel maps prepare counted (net_costs.c). */
static hx_status costs(const void *impl, const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n,
                       hx_err *err) {
  const p3g *g = impl;
  if (!g->prepared) return hx_errf(err, HX_EINVAL, "ptv3 gpu costs: no forward prepared");
  net_ptv3_cost_shape cs;
  memset(&cs, 0, sizeof cs);
  cs.L = g->cfg.levels, cs.B = g->B, cs.depth = g->lv[0].depth, cs.stem_pairs = g->stem_map.pairs;
  for (int l = 0; l < cs.L; l++) {
    const g_level *lv = &g->lv[l];
    net_ptv3_cost_level *c = &cs.lv[l];
    c->n = lv->n, c->sum_p = lv->sum_p, c->n_cu = lv->n_cu, c->pairs = lv->map.pairs;
    c->patch_sq = net_plan_sq_rows(&lv->plan);
  }
  return net_ptv3_costs_from_shape(&g->cfg, &cs, rates, out, cap, n, err);
}

static void blas_stats(const void *impl, nl_blas_stats *out) { nl_blas_stats_get(((const p3g *)impl)->blas, out); }

static const net_gpu_ops ptv3_ops = {
    .create = create,
    .destroy = destroy,
    .bytes = bytes,
    .prepare = prepare,
    .forward = forward,
    .download = download,
    .graphable = graphable,
    .held_bytes = held,
    .cpu_reference = NULL, /* the GPU structure equals the host one: net_forward_cpu is the reference */
    .costs = costs,
    .blas_stats = blas_stats,
};

const net_gpu_ops *net_ptv3_gpu_ops(void) { return &ptv3_ops; }
