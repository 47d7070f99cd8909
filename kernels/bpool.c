/*
 * bpool.c - plain C reference of in-bucket pooling (the bpool_ part of kernels.h): the output plan, the
 * three-step sub-bucket construction of the paper's appendix, feature reduction and unpooling.
 *
 * Invariant after bpool_assign_cpu: every input row of a bucket belongs to exactly one output row of the
 * same bucket (parent), every output row r of a bucket has 1..rho members listed first in
 * members[r*rho ...] (the rest BPOOL_NONE), full sub-buckets of step 1 have exactly rho members, and
 * xyz_out[r] is the member mean (fp32, summed in member order). Every output row is written.
 * The CUDA kernel (bpool.cu) runs the same steps in the same order and gives the same bits.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bpool_internal.h"
#include "kernels/kernels.h"

static const char *const bpool_op_names[BPOOL_OP_COUNT] = {"sum", "mean", "min", "max"};

const char *bpool_op_name(bpool_op op) { return (unsigned)op < BPOOL_OP_COUNT ? bpool_op_names[op] : "unknown"; }

hx_status bpool_op_parse(const char *name, bpool_op *out) {
  for (int i = 0; i < BPOOL_OP_COUNT; i++)
    if (name && strcmp(name, bpool_op_names[i]) == 0) {
      *out = (bpool_op)i;
      return HX_OK;
    }
  return HX_EINVAL;
}

static int rho_ok(uint32_t rho) { return rho == 2 || rho == 4 || rho == 8; }

hx_status bpool_plan_cpu(uint32_t *out_start, uint32_t *out_count, uint32_t *n_out, const uint32_t *bucket_count,
                         uint32_t nbuckets, uint32_t rho, hx_err *err) {
  if (!rho_ok(rho)) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  uint32_t acc = 0;
  for (uint32_t b = 0; b < nbuckets; b++) {
    /* tiles of 1024 rows split into 1024/rho sub-buckets each, so the total is just ceil(count/rho) */
    out_count[b] = (bucket_count[b] + rho - 1) / rho;
    out_start[b] = acc;
    acc += out_count[b];
  }
  if (n_out) *n_out = acc;
  return HX_OK;
}

/* Scratch of one tile (sizes for m <= BPOOL_TILE). */
typedef struct tile_ws {
  uint32_t cnt[BPOOL_TILE], sbase[BPOOL_TILE], fullbase[BPOOL_TILE], leftbase[BPOOL_TILE];
  uint32_t order[BPOOL_TILE], lrow[BPOOL_TILE], sub[BPOOL_TILE], mem[BPOOL_TILE], slot[BPOOL_TILE];
  uint32_t fill[BPOOL_TILE], seedrow[BPOOL_TILE], memrow[BPOOL_TILE + 8], q[BPOOL_TILE];
  uint8_t seedflag[BPOOL_TILE];
} tile_ws;

static void assign_tile(tile_ws *w, uint32_t *members, uint32_t *parent, float *xyz_out, const float *xyz,
                        uint32_t r0, uint32_t m, uint32_t out_base, uint32_t rho) {
  const uint32_t K = (m + rho - 1) / rho;
  /* step 1: cubic box, slots, rows ordered by (slot, row) (counting sort, stable) */
  float lo[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, hi[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
  for (uint32_t t = 0; t < m; t++)
    for (int d = 0; d < 3; d++) {
      float x = xyz[3 * (size_t)(r0 + t) + (size_t)d];
      lo[d] = x < lo[d] ? x : lo[d];
      hi[d] = x > hi[d] ? x : hi[d];
    }
  float ext = 0.0f;
  for (int d = 0; d < 3; d++) ext = hi[d] - lo[d] > ext ? hi[d] - lo[d] : ext;
  const float scale = ext > 0.0f ? 1024.0f / ext : 0.0f;
  memset(w->cnt, 0, K * sizeof w->cnt[0]);
  for (uint32_t t = 0; t < m; t++) {
    w->q[t] = bpool_qpack(xyz + 3 * (size_t)(r0 + t), lo, scale);
    w->slot[t] = bpool_qslot(w->q[t], K);
    w->cnt[w->slot[t]]++;
  }
  uint32_t a0 = 0, a1 = 0, a2 = 0;
  for (uint32_t s = 0; s < K; s++) {
    w->sbase[s] = a0;
    w->fullbase[s] = a1;
    w->leftbase[s] = a2;
    a0 += w->cnt[s];
    a1 += w->cnt[s] / rho;
    a2 += w->cnt[s] % rho;
  }
  const uint32_t A = a1, L = a2, nn = K - A;
  {
    uint32_t pos[BPOOL_TILE];
    memcpy(pos, w->sbase, K * sizeof pos[0]);
    for (uint32_t t = 0; t < m; t++) w->order[pos[w->slot[t]]++] = t;
  }
  for (uint32_t p = 0; p < m; p++) {
    const uint32_t t = w->order[p], s = w->slot[t], rank = p - w->sbase[s], F = w->cnt[s] / rho * rho;
    if (rank < F) {
      w->sub[t] = w->fullbase[s] + rank / rho;
      w->mem[t] = rank % rho;
    } else {
      w->lrow[w->leftbase[s] + rank - F] = t;
    }
  }
  /* step 2: seeds of the new sub-buckets, spread over the leftover list */
  memset(w->seedflag, 0, L);
  for (uint32_t j = 0; j < nn; j++) {
    const uint32_t l = bpool_seed_l(j, L, nn), t = w->lrow[l];
    w->sub[t] = A + j;
    w->mem[t] = 0;
    w->fill[j] = 1;
    w->seedrow[j] = t;
    w->seedflag[l] = 1;
  }
  /* step 3: the other leftovers, in list order, join the nearest non-full new sub-bucket in the window */
  uint32_t first_free = 0;
  for (uint32_t l = 0; l < L; l++) {
    if (w->seedflag[l]) continue;
    const uint32_t t = w->lrow[l];
    uint32_t lo_j, hi_j, best = UINT32_MAX, bd = 0;
    bpool_window(l, L, nn, &lo_j, &hi_j);
    for (uint32_t j = lo_j; j < hi_j; j++) {
      if (w->fill[j] >= rho) continue;
      const uint32_t d = bpool_qdist2(w->q[t], w->q[w->seedrow[j]]);
      if (best == UINT32_MAX || d < bd) {
        best = j;
        bd = d;
      }
    }
    if (best == UINT32_MAX) {
      while (w->fill[first_free] >= rho) first_free++;
      best = first_free;
    }
    w->sub[t] = A + best;
    w->mem[t] = w->fill[best]++;
  }
  /* outputs */
  for (uint32_t k = 0; k < K * rho; k++) w->memrow[k] = BPOOL_NONE;
  for (uint32_t t = 0; t < m; t++) {
    w->memrow[w->sub[t] * rho + w->mem[t]] = t;
    parent[r0 + t] = out_base + w->sub[t];
  }
  for (uint32_t sb = 0; sb < K; sb++) {
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    uint32_t size = 0;
    for (uint32_t k = 0; k < rho; k++) {
      const uint32_t t = w->memrow[sb * rho + k];
      members[(size_t)(out_base + sb) * rho + k] = t == BPOOL_NONE ? BPOOL_NONE : r0 + t;
      if (t == BPOOL_NONE) continue;
      const float *x = xyz + 3 * (size_t)(r0 + t);
      sx += x[0];
      sy += x[1];
      sz += x[2];
      size++;
    }
    float *o = xyz_out + 3 * (size_t)(out_base + sb);
    o[0] = sx / (float)size;
    o[1] = sy / (float)size;
    o[2] = sz / (float)size;
  }
}

hx_status bpool_assign_cpu(uint32_t *members, uint32_t *parent, float *xyz_out, const float *xyz_in,
                           uint32_t n_rows, const uint32_t *bucket_start, const uint32_t *bucket_count,
                           const uint32_t *out_start, uint32_t nbuckets, uint32_t rho, hx_err *err) {
  if (!rho_ok(rho)) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  for (uint32_t b = 0; b < nbuckets; b++)
    if ((uint64_t)bucket_start[b] + bucket_count[b] > n_rows)
      return hx_errf(err, HX_EINVAL, "bpool: bucket %u rows [%u, +%u) outside %u rows", b, bucket_start[b], bucket_count[b], n_rows);
  tile_ws *w = malloc(sizeof *w);
  if (!w) return hx_errf(err, HX_ENOMEM, "bpool: no memory for the tile workspace");
  for (uint32_t r = 0; r < n_rows; r++) parent[r] = BPOOL_NONE;
  for (uint32_t b = 0; b < nbuckets; b++)
    for (uint32_t t0 = 0; t0 < bucket_count[b]; t0 += BPOOL_TILE) {
      const uint32_t m = bucket_count[b] - t0 < BPOOL_TILE ? bucket_count[b] - t0 : BPOOL_TILE;
      assign_tile(w, members, parent, xyz_out, xyz_in, bucket_start[b] + t0, m,
                  out_start[b] + (t0 / BPOOL_TILE) * (BPOOL_TILE / rho), rho);
    }
  free(w);
  return HX_OK;
}

/* A feature value of dtype dt (fp32, fp16 or bf16 bits) widened to fp32, and an fp32 value rounded to dt (nearest
 * even): the conversions every GPU variant applies. */
static float feat_get(const void *base, size_t at, psh_dtype dt) {
  if (dt == PSH_F32) return ((const float *)base)[at];
  const uint16_t h = ((const uint16_t *)base)[at];
  return dt == PSH_F16 ? battn_to_float(BATTN_F16, h) : bpool_bf16_to_f(h);
}
static void feat_put(void *base, size_t at, psh_dtype dt, float v) {
  if (dt == PSH_F32) ((float *)base)[at] = v;
  else ((uint16_t *)base)[at] = dt == PSH_F16 ? battn_from_float(BATTN_F16, v) : bpool_f_to_bf16(v);
}

hx_status bpool_reduce_cpu(void *feat_out, const void *feat_in, const uint32_t *members, uint32_t n_out,
                           uint32_t rho, uint32_t channels, psh_dtype dt, bpool_op op, hx_err *err) {
  if (!rho_ok(rho)) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  HX_TRY(bpool_dt_check(dt, err));
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  for (uint32_t r = 0; r < n_out; r++)
    for (uint32_t ch = 0; ch < channels; ch++) {
      float acc = 0.0f;
      uint32_t size = 0;
      for (uint32_t k = 0; k < rho; k++) {
        const uint32_t row = members[(size_t)r * rho + k];
        if (row == BPOOL_NONE) continue;
        const size_t at = (size_t)row * channels + ch;
        const float x = feat_get(feat_in, at, dt);
        acc = size == 0 ? x : bpool_combine(op, acc, x);
        size++;
      }
      if (op == BPOOL_MEAN && size) acc = acc / (float)size;
      feat_put(feat_out, (size_t)r * channels + ch, dt, acc);
    }
  return HX_OK;
}

hx_status bpool_unpool_dt_cpu(void *up, const void *down, const void *residual, const uint32_t *parent,
                              uint32_t n_rows, uint32_t channels, psh_dtype dt, hx_err *err) {
  HX_TRY(bpool_dt_check(dt, err));
  for (uint32_t r = 0; r < n_rows; r++)
    for (uint32_t ch = 0; ch < channels; ch++) {
      const size_t o = (size_t)r * channels + ch, d = (size_t)parent[r] * channels + ch;
      float v = parent[r] != BPOOL_NONE ? feat_get(down, d, dt) : 0.0f;
      if (residual) v = bpool_add(v, feat_get(residual, o, dt));
      feat_put(up, o, dt, v);
    }
  return HX_OK;
}

hx_status bpool_unpool_cpu(float *up, const float *down, const float *residual, const uint32_t *parent,
                           uint32_t n_rows, uint32_t channels, hx_err *err) {
  return bpool_unpool_dt_cpu(up, down, residual, parent, n_rows, channels, PSH_F32, err);
}
