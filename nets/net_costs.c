/*
 * net_costs.c - the cost model of both forwards: per component (the hook categories of NET_COMPONENTS) the GEMM
 * FLOPs, the attention FLOPs and the fewest bytes its operations must move through DRAM, from the prepared shapes
 * only (host arithmetic, no device). The sweep divides them by the run's measured cuBLAS rate, attention rate and
 * copy bandwidth to get each component's floor. With the run's GEMM rate and bandwidth (net_cost_rates) it also sums
 * the floors operation by operation (the more of each operation's GEMM and memory time), which app/study.c takes when
 * a run has them: a component's operations run as separate kernels, so one bound by memory on level 0 is not hidden
 * under one bound by GEMM on level 3, as the most of the component's summed FLOPs and bytes would hide it.
 *
 * A component's cost is the sum over the operations the forward runs in its hook range (net_ptv3_gpu.c and
 * net_flash3d_gpu.c list them), each operation moving its own inputs and outputs once: fusion across the
 * operations of a component is not assumed, fusion inside one is (a sparse convolution's gathers, a Linear's
 * epilogue). Rows are real rows (Flash3D's spare rows past a pooled level's real count are left out: ~0.1%).
 * E = 2 bytes per activation value (fp16 and bf16); norm parameters and fused-BN scale/shift are fp32 (4 B).
 * Every formula, one line per operation kind (rows n, widths in/out/C, K = k^3 kernel offsets):
 *   Linear         gemm 2 n in out; bytes E (n in + n out + in out + out) (+ E n out when it accumulates into y)
 *   fused MLP      y += fc2(act(fc1(x))) as one operation (nl_mlp_gpu, where it takes the width and the
 *                  configuration asks for it), fc1 f H wide (GELU f = 1, SwiGLU f = 2): gemm 2 n C H (f + 1); bytes
 *                  E (3 n C + (f + 1) C H + f H + C) (x read, y read and written, both weights and biases; the hidden
 *                  row stays on chip; an sm_80 device, which runs the C = 80 SwiGLU block unfused, is still priced
 *                  the fused operation there: the lower floor)
 *   fc1 + SwiGLU   one operation (nl_linear_swiglu_gpu, Flash3D's wider blocks): gemm 4 n C H; bytes E (n C + n H +
 *                  2 C H + 2 H) (x read, the H-wide SwiGLU output written, fc1's weights and bias)
 *   LayerNorm      bytes 2 E n C + 8 C; reading its rows by an index (PTv3's norm.1 on the patch slots): 2 E n C +
 *                  4 n + 8 C, n = the rows written. Inside the kernel that reads its row (net_config's ln_fused,
 *                  net_ln_qkv_fused / net_ln_mlp_fused): no operation of its own; the fused MLP then reads y once
 *                  (bytes 2 E n C in place of 3 E n C, + 8 C), and PTv3's norm.1 + qkv on P slots is one Linear reading
 *                  x's rows by the index: gemm 2 P C 3C; bytes E (P C + 3 P C + 3 C^2 + 3 C) + 4 P + 8 C (Flash3D's
 *                  norm + qkv on its n rows in order: the same less the index, 4 n)
 *   BN (+ GELU)    bytes 2 E n C + 8 C (folded affine)
 *   residual add   bytes 3 E n C (y += x: read both, write y); y += LN(x) as one operation (nl_layernorm_add_gpu,
 *                  the end of PTv3's xCPE): 3 E n C + 8 C; with the Linear before it (nl_linear_ln_add_gpu at C = 32
 *                  and 64 with ln_fused): gemm 2 n C^2, bytes E (3 n C + C^2 + C) + 8 C
 *   row gather     bytes 2 E n C + 4 n (rows read and written, one 32-bit index a row); gathered onto an addend
 *                  (nl_gather_add_gpu, the unpoolings): 3 E n C + 4 n
 *   SwiGLU         bytes 3 E n H (2H read, H written)
 *   dtype convert  bytes n (in + out bytes per value)
 *   kernel map     bytes n (16 + 4 K): voxel keys (grid 12 + batch 4) read, neighbour table written once (PTv3's
 *                  stem and level-0 maps from one pass: K = 125 + 27; the stem in one pass, spc_stem_gpu: K = 27, its
 *                  k = 5 map never written, and its BN + GELU no pass of its own: 8 C bytes)
 *   sparse conv    gemm 2 pairs in out; bytes E (n in + n out + K in out) (+ 4 out fp32 bias): the fused-kernel
 *                  floor, each input and output row once (the neighbour table it reads is not counted)
 *   attention      attn 4 H D sum over scopes of rows_s^2 (every query row attends to the rows of its scope: PTv3
 *                  a padded patch, Flash3D a scope of buckets with their real counts); bytes 4 E rows C (q, k, v
 *                  read, o written, rows = padded slots for PTv3)
 *   serialization  bytes n (12 + 32 + 96 passes + 16), passes = ceil(sfc_key_bits(depth, B) / 8): docs/
 *                  serialization.md's napkin (xyz read, 4 codes written, an LSD radix sort of 8-bit digits moving
 *                  a 64-bit key and a 32-bit value in and out per pass per order, 4 inverses written); 540 B/point
 *                  at depth 11, one cloud
 *   PSH            bytes 32 n + 8 buckets: docs/psh.md's one-pass floor (xyz 12 read; slot 4, perm 4, packed xyz 12
 *                  written) and the bucket table (start, count)
 *   PTv3 padding   bytes 4 (sum_p + n + n_cu) written (pad, unpad, cu_seqlens), once per level
 *   PTv3 compose   bytes 8 sum_p + 16 n (order_p from pad and the order row; inverse_p from the inverse row and unpad),
 *                  once per level and order row a block attends in
 *   PTv3 pooling   structure bytes 44 n_in + 100 n_out (read code 8, order 4, coordinates 12, grid 12, batch 4,
 *                  write cluster 4 per input point; head 4, idx_ptr 4, 4 codes 32, 4 orders 16, 4 inverses 16,
 *                  coordinates 12, grid 12, batch 4 per output point; no sort passes); segment max bytes
 *                  E C (n_in + n_out) + 4 n_in + 4 (n_out + 1)
 *   bpool          bytes E C (n_in + n_out) + 12 (n_in + n_out) + 16 buckets + 4 rho n_out + 4 n_in (features
 *                  and coordinates in and out, bucket table read and pooling plan written, members, parents)
 *   unpool index   bytes 12 n (Flash3D: parent read, slot of the parent read, composed index written)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "nets/nets_internal.h"

#define E 2.0 /* bytes of an activation value */

/* The hook categories in NET_COMPONENTS' order. */
enum { C_SERIALIZE, C_PSH, C_CPE, C_NORM, C_QKV, C_ATTN, C_GATHER, C_PROJ, C_MLP, C_POOL, C_UNPOOL, C_EMBED, C_HEAD,
       C_COUNT };
static const char *const comp_names[C_COUNT] = {"serialize", "psh",  "cpe",  "norm", "qkv",   "attn", "gather",
                                                "proj",      "mlp",  "pool", "unpool", "embed", "head"};

typedef struct cost_acc {
  net_cost c[C_COUNT];
  int used[C_COUNT];
  net_cost total; /* accumulated op by op, apart from the components */
  double gemm_s, copy_s; /* the rates of the per-operation floors (FLOP/s, B/s); 0: none */
} cost_acc;

static void acc_init(cost_acc *a, const net_cost_rates *r) {
  memset(a, 0, sizeof *a);
  for (int k = 0; k < C_COUNT; k++) snprintf(a->c[k].name, sizeof a->c[k].name, "%s", comp_names[k]);
  snprintf(a->total.name, sizeof a->total.name, "forward");
  if (r && r->gemm_flops_s > 0.0 && r->copy_bytes_s > 0.0 && isfinite(r->gemm_flops_s) && isfinite(r->copy_bytes_s))
    a->gemm_s = r->gemm_flops_s, a->copy_s = r->copy_bytes_s;
}

/* One operation: its costs into component k and the total and, with rates, its floor: an attention operation's bytes
 * apart (its FLOPs need the attention rate), any other the more of its GEMM time and its memory time. */
static void add(cost_acc *a, int k, double gemm, double attn, double bytes) {
  net_cost *t[2] = {&a->c[k], &a->total};
  const double tg = a->gemm_s > 0.0 ? gemm / a->gemm_s : 0.0, tm = a->copy_s > 0.0 ? bytes / a->copy_s : 0.0;
  for (int i = 0; i < 2; i++) {
    t[i]->gemm_flops += gemm, t[i]->attn_flops += attn, t[i]->bytes += bytes;
    if (attn > 0.0) t[i]->attn_bytes += bytes;
    else if (tg >= tm) t[i]->op_gemm_s += tg;
    else t[i]->op_mem_s += tm;
  }
  a->used[k] = 1;
}

/* The components the model ran, in NET_COMPONENTS' order, then "forward". */
static hx_status acc_out(const cost_acc *a, net_cost *out, size_t cap, size_t *n, const char *who, hx_err *err) {
  size_t need = 1;
  for (int k = 0; k < C_COUNT; k++) need += (size_t)a->used[k];
  *n = need;
  if (cap < need) return hx_errf(err, HX_EINVAL, "%s costs: %zu entries, room for %zu", who, need, cap);
  size_t m = 0;
  for (int k = 0; k < C_COUNT; k++)
    if (a->used[k]) out[m++] = a->c[k];
  out[m] = a->total;
  if (!(a->gemm_s > 0.0))
    for (size_t i = 0; i <= m; i++) out[i].op_gemm_s = out[i].op_mem_s = out[i].attn_bytes = NAN;
  return HX_OK;
}

/* ---- operations (the header's formulas) ------------------------------------------------------------------- */

static void op_linear(cost_acc *a, int k, double n, double in, double out, int accumulate) {
  add(a, k, 2.0 * n * in * out, 0.0, E * (n * in + n * out + in * out + out) + (accumulate ? E * n * out : 0.0));
}
/* ln: the MLP's LayerNorm inside it (y += MLP(LN(y))): y read once, as the residual and the normalised row */
static void op_mlp(cost_acc *a, int k, double n, double C, double H, int swiglu, int ln) {
  const double f = swiglu ? 2.0 : 1.0; /* fc1 is f H wide */
  add(a, k, 2.0 * n * C * H * (f + 1.0), 0.0,
      E * ((ln ? 2.0 : 3.0) * n * C + (f + 1.0) * C * H + f * H + C) + (ln ? 8.0 * C : 0.0));
}
/* LayerNorm of x's rows by an index and the Linear that reads it, one operation (nl_ln_linear_gpu) */
static void op_ln_linear_rows(cost_acc *a, int k, double rows, double C, double out) {
  add(a, k, 2.0 * rows * C * out, 0.0, E * (rows * C + rows * out + C * out + out) + 4.0 * rows + 8.0 * C);
}
/* LayerNorm of x's rows in order and the Linear that reads it, one operation (nl_ln_linear_gpu without an index) */
static void op_ln_linear(cost_acc *a, int k, double n, double C, double out) {
  add(a, k, 2.0 * n * C * out, 0.0, E * (n * C + n * out + C * out + out) + 8.0 * C);
}
static void op_linear_swiglu(cost_acc *a, int k, double n, double C, double H) {
  add(a, k, 4.0 * n * C * H, 0.0, E * (n * C + n * H + 2.0 * C * H + 2.0 * H));
}
static void op_layernorm(cost_acc *a, int k, double n, double C) { add(a, k, 0.0, 0.0, 2.0 * E * n * C + 8.0 * C); }
static void op_layernorm_rows(cost_acc *a, int k, double rows, double C) {
  add(a, k, 0.0, 0.0, 2.0 * E * rows * C + 4.0 * rows + 8.0 * C);
}
static void op_affine(cost_acc *a, int k, double n, double C) { add(a, k, 0.0, 0.0, 2.0 * E * n * C + 8.0 * C); }
/* y += LN(x) as one operation (nl_layernorm_add_gpu): x and y read, y written, gamma and beta */
static void op_layernorm_add(cost_acc *a, int k, double n, double C) { add(a, k, 0.0, 0.0, 3.0 * E * n * C + 8.0 * C); }
/* y += LN(x W^T + b), W [C, C], as one operation (nl_linear_ln_add_gpu): x read, y read and written, W, b, gamma, beta */
static void op_linear_ln_add(cost_acc *a, int k, double n, double C) {
  add(a, k, 2.0 * n * C * C, 0.0, E * (3.0 * n * C + C * C + C) + 8.0 * C);
}
static void op_gather(cost_acc *a, int k, double n, double C) { add(a, k, 0.0, 0.0, 2.0 * E * n * C + 4.0 * n); }
static void op_gather_add(cost_acc *a, int k, double n, double C) { add(a, k, 0.0, 0.0, 3.0 * E * n * C + 4.0 * n); }
static void op_swiglu(cost_acc *a, int k, double n, double H) { add(a, k, 0.0, 0.0, 3.0 * E * n * H); }
static void op_convert(cost_acc *a, int k, double values, double from, double to) {
  add(a, k, 0.0, 0.0, values * (from + to));
}
static void op_map(cost_acc *a, int k, double n, double K) { add(a, k, 0.0, 0.0, n * (16.0 + 4.0 * K)); }
static void op_conv(cost_acc *a, int k, double n, double in, double out, double K, double pairs, int bias) {
  add(a, k, 2.0 * pairs * in * out, 0.0, E * (n * in + n * out + K * in * out) + (bias ? 4.0 * out : 0.0));
}
/* C = H * D channels; sq = sum over scopes of rows^2; rows = the rows holding q, k, v and o. */
static void op_attn(cost_acc *a, int k, double rows, double C, double sq) {
  add(a, k, 0.0, 4.0 * sq * C, 4.0 * E * rows * C);
}

double net_plan_sq_rows(const battn_plan *pl) {
  double f = 0.0;
  if (!pl || !pl->scope || !pl->bucket_count) return 0.0;
  for (uint32_t s = 0; s < pl->num_scopes; s++) {
    double r = 0.0;
    for (uint32_t j = 0; j < pl->buckets_per_scope; j++) {
      const uint32_t b = pl->scope[(size_t)s * pl->buckets_per_scope + j];
      if (b != BATTN_EMPTY) r += pl->bucket_count[b];
    }
    f += r * r;
  }
  return f;
}

/* ---- PTv3-m1 ------------------------------------------------------------------------------------------------ */

hx_status net_ptv3_cost_shape_get(net_ptv3_cost_shape *cs, const net_ptv3_struct *s, hx_err *err) {
  if (!cs || !s) return hx_errf(err, HX_EINVAL, "ptv3 cost shape: NULL argument");
  memset(cs, 0, sizeof *cs);
  if (s->L < 1 || s->L > NET_MAX_LEVELS) return hx_errf(err, HX_EINVAL, "ptv3 cost shape: %d levels", s->L);
  if (!s->stem_map.nbr) return hx_errf(err, HX_EINVAL, "ptv3 cost shape: the structure has no stem kernel map");
  cs->L = s->L, cs->B = s->B, cs->depth = s->lv[0].depth, cs->stem_pairs = s->stem_map.pairs;
  for (int l = 0; l < s->L; l++) {
    const net_ptv3_level *h = &s->lv[l];
    net_ptv3_cost_level *c = &cs->lv[l];
    if (!h->map.nbr || !h->cu || h->n_cu < 1)
      return hx_errf(err, HX_EINVAL, "ptv3 cost shape: level %d has no kernel map or patches", l);
    c->n = h->n, c->sum_p = h->sum_p, c->n_cu = h->n_cu, c->pairs = h->map.pairs;
    for (size_t i = 0; i + 1 < h->n_cu; i++) {
      const double p = (double)(h->cu[i + 1] - h->cu[i]);
      c->patch_sq += p * p;
    }
  }
  return HX_OK;
}

/* One PTv3 block on level l (n points, C channels; its level's map and padding counted by the first block that
 * runs on the level, as the forward builds them there; *ready: 0 neither yet, 2 the map built with the stem's, 1
 * both), attending in order row `row` (its composed indices counted by the first block of the level in that row:
 * bit `row` of *composed). */
static void ptv3_block(cost_acc *a, const net_config *cfg, const net_ptv3_cost_level *lv, size_t Cs, int *ready,
                       int row, int *composed) {
  const double n = (double)lv->n, C = (double)Cs, R = (double)cfg->mlp_ratio, P = (double)lv->sum_p;
  if (*ready != 1) {
    if (!*ready) op_map(a, C_CPE, n, 27.0);
    add(a, C_GATHER, 0.0, 0.0, 4.0 * (P + n + (double)lv->n_cu)); /* padding */
    *ready = 1;
  }
  op_conv(a, C_CPE, n, C, C, 27.0, (double)lv->pairs, 1); /* cpe: conv, Linear, LayerNorm, x += */
  if (cfg->cpe_fold) {
    op_layernorm_add(a, C_CPE, n, C); /* the Linear folded into the convolution's weights */
  } else if (net_ln_cpe_fused(cfg, Cs)) {
    op_linear_ln_add(a, C_CPE, n, C);
  } else {
    op_linear(a, C_CPE, n, C, C, 0);
    op_layernorm_add(a, C_CPE, n, C);
  }
  if (!(*composed & (1 << row))) add(a, C_GATHER, 0.0, 0.0, 8.0 * P + 16.0 * n); /* gather.qkv: index composition */
  *composed |= 1 << row;
  if (net_ln_qkv_fused(cfg, Cs)) {
    op_ln_linear_rows(a, C_QKV, P, C, 3.0 * C); /* norm.1 inside qkv, on the slots */
  } else {
    op_layernorm_rows(a, C_NORM, P, C); /* norm.1, x read by the patch slots' rows */
    op_linear(a, C_QKV, P, C, 3.0 * C, 0); /* qkv on the slots */
  }
  op_attn(a, C_ATTN, P, C, lv->patch_sq);
  op_gather(a, C_GATHER, n, C); /* gather.out */
  op_linear(a, C_PROJ, n, C, C, 1);
  const int ln_in = net_ln_mlp_fused(cfg, Cs, (size_t)cfg->mlp_ratio * Cs);
  if (!ln_in) op_layernorm(a, C_NORM, n, C); /* norm.2 */
  if (net_mlp_path_of(cfg, Cs, (size_t)cfg->mlp_ratio * Cs) == NET_MLP_WHOLE) {
    op_mlp(a, C_MLP, n, C, R * C, 0, ln_in);
  } else {
    op_linear(a, C_MLP, n, C, R * C, 0);
    op_linear(a, C_MLP, n, R * C, C, 1);
  }
}

hx_status net_ptv3_costs_from_shape(const net_config *cfg, const net_ptv3_cost_shape *cs, const net_cost_rates *rates,
                                    net_cost *out, size_t cap, size_t *count, hx_err *err) {
  if (count) *count = 0;
  if (!cfg || !cs || !out || !count) return hx_errf(err, HX_EINVAL, "ptv3 costs: NULL argument");
  const int L = cfg->levels;
  if (cfg->kind != 0 || L < 2 || L > NET_MAX_LEVELS || cs->L != L)
    return hx_errf(err, HX_EINVAL, "ptv3 costs: %.32s (%d levels) against a shape of %d levels", cfg->name, L, cs->L);
  for (int l = 0; l < L; l++)
    if (cs->lv[l].n == 0 || cs->lv[l].sum_p < cs->lv[l].n)
      return hx_errf(err, HX_EINVAL, "ptv3 costs: level %d: %zu points in %zu slots", l, cs->lv[l].n, cs->lv[l].sum_p);
  cost_acc a;
  acc_init(&a, rates);
  const double n = (double)cs->lv[0].n, Cin = (double)cfg->in_channels, K = (double)cfg->classes;
  const double passes = ceil((double)sfc_key_bits(cs->depth, cs->B) / 8.0);
  add(&a, C_SERIALIZE, 0.0, 0.0, n * (12.0 + 32.0 + 96.0 * passes + 16.0));
  /* embed: features to the dtype, stem map (with level 0's k = 3 map in the same pass, net_ptv3_maps_paired), conv,
   * BN + GELU; in one pass (net_ptv3_stem_fused) the k = 5 map is never written and the BN + GELU is the conv's */
  const int pair = net_ptv3_maps_paired(cfg), stem1 = net_ptv3_stem_fused(cfg);
  op_convert(&a, C_EMBED, n * Cin, 4.0, E);
  op_map(&a, C_EMBED, n, stem1 ? 27.0 : pair ? 125.0 + 27.0 : 125.0);
  op_conv(&a, C_EMBED, n, Cin, (double)cfg->enc_channels[0], 125.0, (double)cs->stem_pairs, 0);
  if (stem1) add(&a, C_EMBED, 0.0, 0.0, 8.0 * (double)cfg->enc_channels[0]);
  else op_affine(&a, C_EMBED, n, (double)cfg->enc_channels[0]);
  int ready[NET_MAX_LEVELS] = {pair ? 2 : 0}, composed[NET_MAX_LEVELS] = {0};
  for (int l = 0; l < L; l++) {
    const net_ptv3_cost_level *lv = &cs->lv[l];
    const size_t C = (size_t)cfg->enc_channels[l];
    if (l > 0) { /* pool: projection of level l-1, the pooling structure, segment max, BN + GELU */
      const double np = (double)cs->lv[l - 1].n, no = (double)lv->n, Cp = (double)cfg->enc_channels[l - 1];
      op_linear(&a, C_POOL, np, Cp, (double)C, 0);
      add(&a, C_POOL, 0.0, 0.0, 44.0 * np + 100.0 * no);
      add(&a, C_POOL, 0.0, 0.0, E * (double)C * (np + no) + 4.0 * np + 4.0 * (no + 1.0));
      op_affine(&a, C_POOL, no, (double)C);
    }
    for (int i = 0; i < cfg->enc_depth[l]; i++)
      ptv3_block(&a, cfg, lv, C, &ready[l], i % NET_PTV3_ORDERS, &composed[l]);
  }
  for (int l = L - 2; l >= 0; l--) {
    const net_ptv3_cost_level *lv = &cs->lv[l];
    const double nl = (double)lv->n, nc = (double)cs->lv[l + 1].n, C = (double)cfg->dec_channels[l];
    const double Cc = (double)(l == L - 2 ? cfg->enc_channels[L - 1] : cfg->dec_channels[l + 1]);
    op_linear(&a, C_UNPOOL, nc, Cc, C, 0); /* unpool: coarse projection, skip projection (BN + GELU folded), */
    op_linear(&a, C_UNPOOL, nl, (double)cfg->enc_channels[l], C, 0); /* the coarse rows gathered onto the skip's */
    op_gather_add(&a, C_UNPOOL, nl, C);
    for (int i = 0; i < cfg->dec_depth[l]; i++)
      ptv3_block(&a, cfg, lv, (size_t)cfg->dec_channels[l], &ready[l], i % NET_PTV3_ORDERS, &composed[l]);
  }
  op_linear(&a, C_HEAD, n, (double)cfg->dec_channels[0], K, 0); /* head: Linear, logits to fp32 */
  op_convert(&a, C_HEAD, n * K, E, 4.0);
  return acc_out(&a, out, cap, count, "ptv3", err);
}

/* ---- Flash3D ------------------------------------------------------------------------------------------------ */

/* One Flash3D block on level l: LN, qkv, attention over the block's scope plan, proj (+=), LayerNormMLP (+=). */
static hx_status f3d_block(cost_acc *a, const net_config *cfg, const net_f3d_level_shape *ls,
                           const net_f3d_layout *ly, uint32_t B, int dec, int l, int b, hx_err *err) {
  const double n = (double)ly->rows, C = (double)(dec ? cfg->dec_channels[l] : cfg->enc_channels[l]);
  const double r = (double)cfg->mlp_ratio;
  battn_plan_kind kind;
  uint32_t value;
  net_flash3d_block_plan(cfg, ls, dec, l, b, &kind, &value);
  uint32_t *cb = malloc(((size_t)B + 1) * sizeof *cb);
  if (!cb) return hx_errf(err, HX_ENOMEM, "flash3d costs: cloud bucket offsets");
  for (uint32_t c = 0; c <= B; c++) cb[c] = c * ly->nb;
  battn_plan pl;
  const hx_status st = battn_plan_build(&pl, kind, value, ls->scope, ly->bucket_start, ly->bucket_count, cb, B, err);
  free(cb);
  HX_TRY(st);
  const double sq = net_plan_sq_rows(&pl);
  battn_plan_free(&pl);
  if (net_ln_qkv_fused(cfg, (size_t)C)) {
    op_ln_linear(a, C_QKV, n, C, 3.0 * C); /* norm inside qkv */
  } else {
    op_layernorm(a, C_NORM, n, C);
    op_linear(a, C_QKV, n, C, 3.0 * C, 0);
  }
  op_attn(a, C_ATTN, n, C, sq);
  op_linear(a, C_PROJ, n, C, C, 1);
  const int ln_in = net_ln_mlp_fused(cfg, (size_t)C, (size_t)(r * C));
  if (!ln_in) op_layernorm(a, C_MLP, n, C);
  const net_mlp_path mp = net_mlp_path_of(cfg, (size_t)C, (size_t)(r * C));
  if (mp == NET_MLP_WHOLE) {
    op_mlp(a, C_MLP, n, C, r * C, 1, ln_in);
  } else if (mp == NET_MLP_FC1_SWIGLU) {
    op_linear_swiglu(a, C_MLP, n, C, r * C);
    op_linear(a, C_MLP, n, r * C, C, 1);
  } else {
    op_linear(a, C_MLP, n, C, 2.0 * r * C, 0);
    op_swiglu(a, C_MLP, n, r * C);
    op_linear(a, C_MLP, n, r * C, C, 1);
  }
  return HX_OK;
}

hx_status net_flash3d_costs_from_layouts(const net_config *cfg, const net_f3d_shape *s, const net_f3d_layouts *lay,
                                         const net_cost_rates *rates, net_cost *out, size_t cap, size_t *count,
                                         hx_err *err) {
  if (count) *count = 0;
  if (!cfg || !s || !lay || !out || !count) return hx_errf(err, HX_EINVAL, "flash3d costs: NULL argument");
  const int L = cfg->levels;
  if (cfg->kind != 1 || L < 2 || L > NET_MAX_LEVELS || s->L != L || lay->L != L || lay->B != s->B)
    return hx_errf(err, HX_EINVAL, "flash3d costs: %.32s (%d levels) against shapes of %d and layouts of %d levels",
                   cfg->name, L, s->L, lay->L);
  const uint32_t B = s->B;
  for (int l = 0; l < L; l++) {
    const net_f3d_layout *ly = &lay->lv[l];
    if (ly->rows == 0 || ly->nb != s->lv[l].nb || !ly->bucket_start || !ly->bucket_count)
      return hx_errf(err, HX_EINVAL, "flash3d costs: level %d: layout of %u rows and %u buckets per cloud, shape %u",
                     l, ly->rows, ly->nb, s->lv[l].nb);
  }
  cost_acc a;
  acc_init(&a, rates);
  const double n = (double)lay->lv[0].rows, K = (double)cfg->classes, rho = (double)NET_F3D_RHO;
  op_linear(&a, C_EMBED, n, (double)cfg->in_channels, (double)cfg->enc_channels[0], 0);
  for (int l = 0; l < L; l++) {
    const net_f3d_layout *ly = &lay->lv[l];
    const net_f3d_level_shape *ls = &s->lv[l];
    const double nl = (double)ly->rows, C = (double)cfg->enc_channels[l], nbt = (double)B * ls->nb;
    if (l > 0) { /* pool out of level l-1: projection, level l-1's skip (BN + GELU folded), bpool, BN + GELU */
      const net_f3d_layout *up = &lay->lv[l - 1];
      const double np = (double)up->rows, nbu = (double)B * s->lv[l - 1].nb;
      op_linear(&a, C_POOL, np, (double)cfg->enc_channels[l - 1], C, 0);
      op_linear(&a, C_POOL, np, C, (double)cfg->dec_channels[l - 1], 0);
      add(&a, C_POOL, 0.0, 0.0, E * C * (np + nl) + 12.0 * (np + nl) + 16.0 * nbu + 4.0 * rho * nl + 4.0 * np);
      op_affine(&a, C_POOL, nl, C);
    }
    if (ls->hashed) { /* PSH of the level's points, features into its bucket order */
      add(&a, C_PSH, 0.0, 0.0, 32.0 * nl + 8.0 * nbt);
      op_gather(&a, C_GATHER, nl, C);
    }
    for (int b = 0; b < cfg->enc_depth[l]; b++) HX_TRY(f3d_block(&a, cfg, ls, ly, B, 0, l, b, err));
  }
  for (int l = L - 1; l >= 0; l--) {
    const net_f3d_layout *ly = &lay->lv[l];
    const double nl = (double)ly->rows, C = (double)cfg->dec_channels[l];
    if (l == L - 1) {
      op_linear(&a, C_UNPOOL, nl, (double)cfg->enc_channels[l], C, 0); /* the last level's middle Linear */
    } else { /* unpool: composed index, coarse projection (BN + GELU folded), gathered, added to the pooling's skip */
      const double nc = (double)lay->lv[l + 1].rows;
      add(&a, C_UNPOOL, 0.0, 0.0, 12.0 * nl);
      op_linear(&a, C_UNPOOL, nc, (double)cfg->dec_channels[l + 1], C, 0);
      op_gather_add(&a, C_UNPOOL, nl, C);
    }
    for (int b = 0; b < cfg->dec_depth[l]; b++) HX_TRY(f3d_block(&a, cfg, &s->lv[l], ly, B, 1, l, b, err));
  }
  op_linear(&a, C_HEAD, n, (double)cfg->dec_channels[0], K, 0); /* head: Linear, rows to input order, fp32 */
  op_gather(&a, C_HEAD, n, K);
  op_convert(&a, C_HEAD, n * K, E, 4.0);
  return acc_out(&a, out, cap, count, "flash3d", err);
}
