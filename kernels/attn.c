/*
 * attn.c - host side of bucket-swin attention: parameter validation, scope plan builders and the
 * double-precision reference (see the battn_ section of kernels.h).
 *
 * Invariant the GPU kernels rely on once battn_validate(p, plan) returned HX_OK: every bucket lies inside
 * [0, rows), buckets do not overlap, each non-empty bucket appears in exactly one scope, scope entries are
 * bucket indices or BATTN_EMPTY, bucket counts <= max_bucket_rows and scope rows <= max_scope_rows. So
 * every query row of a bucket has at least one key (its own row) and no output row is written twice.
 *
 * The reference reads fp16/bf16 bit patterns, converts them exactly to double, and computes
 * softmax(scale * q k^T) v with a max-subtracted exp in double; the "naive" mode redoes it the way a plain
 * low-precision implementation would (scores and probabilities rounded to the dtype) to give the
 * flash-attention tolerance its yardstick.
 */
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- fp16 / bf16 ------------------------------------------------------------------------------- */

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* IEEE binary16, round to nearest even, with subnormals, overflow to infinity and quiet NaN. */
static uint16_t f32_to_f16(float x) {
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t absu = u & 0x7FFFFFFFu;
  if (absu >= 0x7F800000u) return (uint16_t)(sign | (absu > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (absu >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* rounds past 65504 */
  if (absu < 0x38800000u) {                                   /* below 2^-14: subnormal or zero */
    if (absu < 0x33000000u) return sign;                      /* below half the smallest subnormal */
    /* value = mant * 2^(e - 150) = (mant >> (126 - e)) units of 2^-24, the subnormal step */
    uint32_t mant = (absu & 0x007FFFFFu) | 0x00800000u;
    int sh = 126 - (int)(absu >> 23); /* 14..24 here */
    uint32_t q = mant >> sh;
    uint32_t rem = mant & ((1u << sh) - 1u);
    uint32_t half = 1u << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t e = (absu >> 23) - 112u; /* rebias 127 -> 15 */
  uint32_t mant = absu & 0x007FFFFFu;
  uint32_t h = (e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into the exponent: still right */
  return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (e == 0x1Fu) return bits_f32(sign | 0x7F800000u | (mant << 13));
  if (e == 0) {
    float v = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24, exact */
    return sign ? -v : v;
  }
  return bits_f32(sign | ((e + 112u) << 23) | (mant << 13));
}

uint16_t battn_from_float(battn_dtype dt, float x) {
  if (dt == BATTN_F16) return f32_to_f16(x);
  uint32_t u = f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7FFFu + ((u >> 16) & 1u);                                          /* nearest even */
  return (uint16_t)(u >> 16);
}

float battn_to_float(battn_dtype dt, uint16_t h) {
  if (dt == BATTN_F16) return f16_to_f32(h);
  return bits_f32((uint32_t)h << 16);
}

static float round_dt(battn_dtype dt, float x) { return battn_to_float(dt, battn_from_float(dt, x)); }

/* ---- params and validation --------------------------------------------------------------------- */

void battn_params_init(battn_params *p, int64_t rows, int heads, int head_dim, battn_dtype dtype,
                       const battn_plan *plan) {
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->heads = heads;
  p->head_dim = head_dim;
  p->dtype = dtype;
  p->scale = head_dim > 0 ? (float)(1.0 / sqrt((double)head_dim)) : 1.0f;
  int64_t hd = (int64_t)heads * head_dim;
  p->q_row_stride = p->k_row_stride = p->v_row_stride = p->o_row_stride = hd;
  p->q_head_stride = p->k_head_stride = p->v_head_stride = p->o_head_stride = head_dim;
  if (plan) {
    p->bucket_start = plan->bucket_start;
    p->bucket_count = plan->bucket_count;
    p->scope = plan->scope;
    p->num_buckets = plan->num_buckets;
    p->num_scopes = plan->num_scopes;
    p->buckets_per_scope = plan->buckets_per_scope;
    p->max_bucket_rows = plan->max_bucket_rows;
    p->max_scope_rows = plan->max_scope_rows;
  }
}

typedef struct span {
  uint32_t start, count, index;
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return 0;
}

static hx_status check_plan(const battn_params *p, const battn_plan *pl, hx_err *err) {
  if (pl->num_buckets != p->num_buckets || pl->num_scopes != p->num_scopes ||
      pl->buckets_per_scope != p->buckets_per_scope)
    return hx_errf(err, HX_EINVAL, "attention: plan sizes (%u buckets, %u x %u scopes) differ from params",
                   pl->num_buckets, pl->num_scopes, pl->buckets_per_scope);
  uint32_t nb = pl->num_buckets;
  span *sp = nb ? malloc((size_t)nb * sizeof *sp) : NULL;
  uint8_t *seen = nb ? calloc(nb, 1) : NULL;
  if (nb && (!sp || !seen)) {
    free(sp);
    free(seen);
    return hx_errf(err, HX_ENOMEM, "attention: no memory to validate %u buckets", nb);
  }
  hx_status st = HX_OK;
  for (uint32_t b = 0; b < nb && st == HX_OK; ++b) {
    uint32_t s0 = pl->bucket_start[b], c = pl->bucket_count[b];
    if ((int64_t)s0 + c > p->rows)
      st = hx_errf(err, HX_EINVAL, "attention: bucket %u rows [%u, %u) exceed rows %lld", b, s0,
                   s0 + c, (long long)p->rows);
    else if (c > p->max_bucket_rows)
      st = hx_errf(err, HX_EINVAL, "attention: bucket %u has %u rows > max_bucket_rows %u", b, c,
                   p->max_bucket_rows);
    sp[b] = (span){s0, c, b};
  }
  if (st == HX_OK && nb) {
    qsort(sp, nb, sizeof *sp, span_cmp);
    uint64_t end = 0;
    for (uint32_t i = 0; i < nb && st == HX_OK; ++i) {
      if (sp[i].count == 0) continue;
      if (sp[i].start < end)
        st = hx_errf(err, HX_EINVAL, "attention: bucket %u overlaps an earlier bucket at row %u",
                     sp[i].index, sp[i].start);
      end = (uint64_t)sp[i].start + sp[i].count;
    }
  }
  for (uint32_t s = 0; s < pl->num_scopes && st == HX_OK; ++s) {
    uint64_t srows = 0;
    for (uint32_t j = 0; j < pl->buckets_per_scope && st == HX_OK; ++j) {
      uint32_t b = pl->scope[(size_t)s * pl->buckets_per_scope + j];
      if (b == BATTN_EMPTY) continue;
      if (b >= nb) {
        st = hx_errf(err, HX_EINVAL, "attention: scope %u slot %u names bucket %u of %u", s, j, b, nb);
      } else if (seen[b]) {
        st = hx_errf(err, HX_EINVAL, "attention: bucket %u appears in more than one scope slot", b);
      } else {
        seen[b] = 1;
        srows += pl->bucket_count[b];
      }
    }
    if (st == HX_OK && srows > p->max_scope_rows)
      st = hx_errf(err, HX_EINVAL, "attention: scope %u has %llu rows > max_scope_rows %u", s,
                   (unsigned long long)srows, p->max_scope_rows);
  }
  for (uint32_t b = 0; b < nb && st == HX_OK; ++b)
    if (!seen[b] && pl->bucket_count[b] > 0)
      st = hx_errf(err, HX_EINVAL, "attention: bucket %u (%u rows) is in no scope", b,
                   pl->bucket_count[b]);
  free(sp);
  free(seen);
  return st;
}

static int misaligned(const void *ptr) { return ((uintptr_t)ptr & 15u) != 0; }

hx_status battn_validate(const battn_params *p, const battn_plan *h_plan, hx_err *err) {
  if (!p) return hx_errf(err, HX_EINVAL, "attention: no params");
  int d = p->head_dim;
  if (d != 16 && d != 32 && d != 64 && d != 128)
    return hx_errf(err, HX_EINVAL, "attention: head dim %d (supported: 16, 32, 64, 128)", d);
  if (p->heads < 1 || p->heads > 65535)
    return hx_errf(err, HX_EINVAL, "attention: %d heads (1 to 65535)", p->heads);
  if (p->dtype != BATTN_F16 && p->dtype != BATTN_BF16)
    return hx_errf(err, HX_EINVAL, "attention: unknown dtype %d", (int)p->dtype);
  if (p->rows < 0 || p->rows > INT32_MAX)
    return hx_errf(err, HX_EINVAL, "attention: %lld rows (0 to 2^31-1)", (long long)p->rows);
  if (!(p->scale > 0.0f) || !isfinite(p->scale))
    return hx_errf(err, HX_EINVAL, "attention: scale %g must be positive and finite", (double)p->scale);
  const int64_t strides[8] = {p->q_row_stride, p->q_head_stride, p->k_row_stride, p->k_head_stride,
                              p->v_row_stride, p->v_head_stride, p->o_row_stride, p->o_head_stride};
  static const char *const names[8] = {"q row", "q head", "k row", "k head",
                                       "v row", "v head", "o row", "o head"};
  for (int i = 0; i < 8; ++i)
    if (strides[i] < 0 || strides[i] % 8 != 0)
      return hx_errf(err, HX_EINVAL, "attention: %s stride %lld must be a non-negative multiple of 8",
                     names[i], (long long)strides[i]);
  if (p->o_head_stride < d && p->heads > 1)
    return hx_errf(err, HX_EINVAL, "attention: o head stride %lld < head dim %d makes heads overlap",
                   (long long)p->o_head_stride, d);
  if (p->o_row_stride < (int64_t)(p->heads - 1) * p->o_head_stride + d && p->rows > 1)
    return hx_errf(err, HX_EINVAL, "attention: o row stride %lld makes rows overlap",
                   (long long)p->o_row_stride);
  if (misaligned(p->q) || misaligned(p->k) || misaligned(p->v) || misaligned(p->o))
    return hx_errf(err, HX_EINVAL, "attention: q, k, v and o must be 16-byte aligned");
  if (p->num_scopes > 0 && (p->buckets_per_scope < 1 || p->buckets_per_scope > BATTN_MAX_SCOPE_BUCKETS))
    return hx_errf(err, HX_EINVAL, "attention: %u buckets per scope (1 to %u)", p->buckets_per_scope,
                   BATTN_MAX_SCOPE_BUCKETS);
  if ((p->num_buckets && (!p->bucket_start || !p->bucket_count)) || (p->num_scopes && !p->scope))
    return hx_errf(err, HX_EINVAL, "attention: missing bucket or scope table");
  if (p->max_bucket_rows > (1u << 30) || p->max_scope_rows > (1u << 30))
    return hx_errf(err, HX_EINVAL, "attention: row bounds %u / %u too large", p->max_bucket_rows,
                   p->max_scope_rows);
  if ((uint64_t)p->num_scopes * p->buckets_per_scope > UINT32_MAX)
    return hx_errf(err, HX_EINVAL, "attention: scope table too large");
  if (h_plan) return check_plan(p, h_plan, err);
  return HX_OK;
}

/* ---- plans ------------------------------------------------------------------------------------- */

/* n rows in whole tiles of t: a partial tile costs a full one */
static double tiled_rows(uint64_t n, uint32_t t) { return (double)((n + t - 1) / t * t); }

void battn_tile_work_compute(battn_tile_work *w, const battn_plan *plan, uint32_t bm, uint32_t bn) {
  w->real = w->by_bucket = w->packed = 0.0;
  const uint32_t K = plan->buckets_per_scope;
  for (uint32_t s = 0; s < plan->num_scopes; ++s) {
    uint64_t n = 0;             /* the scope's rows */
    double qt = 0.0, kt = 0.0; /* its buckets' rows in whole query and key tiles */
    for (uint32_t j = 0; j < K; ++j) {
      const uint32_t b = plan->scope[(size_t)s * K + j];
      if (b == BATTN_EMPTY) continue;
      const uint64_t c = plan->bucket_count[b];
      n += c;
      qt += tiled_rows(c, bm);
      kt += tiled_rows(c, bn);
    }
    w->real += (double)n * (double)n;
    w->by_bucket += qt * kt;
    w->packed += tiled_rows(n, bm) * tiled_rows(n, bn);
  }
}

void battn_plan_free(battn_plan *plan) {
  if (!plan) return;
  free(plan->bucket_start);
  free(plan->bucket_count);
  free(plan->scope);
  memset(plan, 0, sizeof *plan);
}

/* Fill bounds from the tables. */
static void plan_bounds(battn_plan *pl) {
  uint32_t mb = 0, ms = 0;
  for (uint32_t b = 0; b < pl->num_buckets; ++b)
    if (pl->bucket_count[b] > mb) mb = pl->bucket_count[b];
  for (uint32_t s = 0; s < pl->num_scopes; ++s) {
    uint64_t r = 0;
    for (uint32_t j = 0; j < pl->buckets_per_scope; ++j) {
      uint32_t b = pl->scope[(size_t)s * pl->buckets_per_scope + j];
      if (b != BATTN_EMPTY) r += pl->bucket_count[b];
    }
    if (r > ms) ms = (uint32_t)(r > UINT32_MAX ? UINT32_MAX : r);
  }
  pl->max_bucket_rows = mb;
  pl->max_scope_rows = ms;
}

/* Append one scope made of local bucket numbers first, first+step, ... (count slots), dropping those
 * >= n. Returns 1 when the scope held a bucket (and was kept). */
static int emit_scope(battn_plan *pl, uint32_t base, uint32_t n, uint32_t first, uint32_t step,
                      uint32_t count) {
  uint32_t K = pl->buckets_per_scope;
  uint32_t *row = pl->scope + (size_t)pl->num_scopes * K;
  int any = 0;
  for (uint32_t i = 0; i < K; ++i) {
    uint64_t b = (uint64_t)first + (uint64_t)i * step;
    if (i < count && b < n) {
      row[i] = base + (uint32_t)b;
      any = 1;
    } else {
      row[i] = BATTN_EMPTY;
    }
  }
  if (any) pl->num_scopes++;
  return any;
}

hx_status battn_plan_build(battn_plan *plan, battn_plan_kind kind, uint32_t shift_or_stride,
                           uint32_t buckets_per_scope, const uint32_t *bucket_start,
                           const uint32_t *bucket_count, const uint32_t *cloud_buckets,
                           uint32_t num_clouds, hx_err *err) {
  memset(plan, 0, sizeof *plan);
  uint32_t K = buckets_per_scope;
  if (K < 1 || K > BATTN_MAX_SCOPE_BUCKETS)
    return hx_errf(err, HX_EINVAL, "attention plan: %u buckets per scope (1 to %u)", K,
                   BATTN_MAX_SCOPE_BUCKETS);
  if (kind == BATTN_PLAN_SWIN && shift_or_stride >= K)
    return hx_errf(err, HX_EINVAL, "attention plan: swin shift %u must be below the scope size %u",
                   shift_or_stride, K);
  if (kind == BATTN_PLAN_STRIDE && (shift_or_stride < 1 || shift_or_stride > (1u << 16)))
    return hx_errf(err, HX_EINVAL, "attention plan: stride %u (1 to 65536)", shift_or_stride);
  if (kind != BATTN_PLAN_PLAIN && kind != BATTN_PLAN_SWIN && kind != BATTN_PLAN_STRIDE)
    return hx_errf(err, HX_EINVAL, "attention plan: unknown kind %d", (int)kind);
  if (num_clouds > 0 && !cloud_buckets)
    return hx_errf(err, HX_EINVAL, "attention plan: no cloud bucket offsets");
  uint32_t nb = num_clouds ? cloud_buckets[num_clouds] : 0;
  if (num_clouds && cloud_buckets[0] != 0)
    return hx_errf(err, HX_EINVAL, "attention plan: cloud_buckets[0] = %u, expected 0", cloud_buckets[0]);
  uint64_t cap = 0;
  for (uint32_t c = 0; c < num_clouds; ++c) {
    if (cloud_buckets[c + 1] < cloud_buckets[c])
      return hx_errf(err, HX_EINVAL, "attention plan: cloud_buckets decreases at cloud %u", c);
    uint64_t n = cloud_buckets[c + 1] - cloud_buckets[c];
    uint64_t s = shift_or_stride;
    if (kind == BATTN_PLAN_PLAIN) cap += (n + K - 1) / K;
    else if (kind == BATTN_PLAN_SWIN) cap += (n + K - 1) / K + 1;
    else cap += (n + s * K - 1) / (s * K) * s;
  }
  if (nb && (!bucket_start || !bucket_count))
    return hx_errf(err, HX_EINVAL, "attention plan: missing bucket table");
  if (cap * K > UINT32_MAX) return hx_errf(err, HX_EINVAL, "attention plan: scope table too large");
  plan->buckets_per_scope = K;
  plan->num_buckets = nb;
  plan->bucket_start = malloc((nb ? nb : 1) * sizeof(uint32_t));
  plan->bucket_count = malloc((nb ? nb : 1) * sizeof(uint32_t));
  plan->scope = malloc((cap ? cap * K : 1) * sizeof(uint32_t));
  if (!plan->bucket_start || !plan->bucket_count || !plan->scope) {
    battn_plan_free(plan);
    return hx_errf(err, HX_ENOMEM, "attention plan: no memory for %u buckets", nb);
  }
  if (nb) {
    memcpy(plan->bucket_start, bucket_start, nb * sizeof(uint32_t));
    memcpy(plan->bucket_count, bucket_count, nb * sizeof(uint32_t));
  }
  for (uint32_t c = 0; c < num_clouds; ++c) {
    uint32_t base = cloud_buckets[c], n = cloud_buckets[c + 1] - base;
    if (kind == BATTN_PLAN_PLAIN) {
      for (uint64_t f = 0; f < n; f += K) emit_scope(plan, base, n, (uint32_t)f, 1, K);
    } else if (kind == BATTN_PLAN_SWIN) {
      uint32_t k = shift_or_stride;
      if (k > 0) emit_scope(plan, base, n, 0, 1, k);
      for (uint64_t f = k; f < n; f += K) emit_scope(plan, base, n, (uint32_t)f, 1, K);
    } else {
      uint64_t s = shift_or_stride;
      for (uint64_t c0 = 0; c0 < n; c0 += s * K)
        for (uint64_t r = 0; r < s; ++r) emit_scope(plan, base, n, (uint32_t)(c0 + r), (uint32_t)s, K);
    }
  }
  plan_bounds(plan);
  return HX_OK;
}

hx_status battn_plan_plain(battn_plan *plan, uint32_t buckets_per_scope, const uint32_t *bucket_start,
                           const uint32_t *bucket_count, const uint32_t *cloud_buckets,
                           uint32_t num_clouds, hx_err *err) {
  return battn_plan_build(plan, BATTN_PLAN_PLAIN, 0, buckets_per_scope, bucket_start, bucket_count,
                          cloud_buckets, num_clouds, err);
}
hx_status battn_plan_swin(battn_plan *plan, uint32_t shift, uint32_t buckets_per_scope,
                          const uint32_t *bucket_start, const uint32_t *bucket_count,
                          const uint32_t *cloud_buckets, uint32_t num_clouds, hx_err *err) {
  return battn_plan_build(plan, BATTN_PLAN_SWIN, shift, buckets_per_scope, bucket_start, bucket_count,
                          cloud_buckets, num_clouds, err);
}
hx_status battn_plan_stride(battn_plan *plan, uint32_t stride, uint32_t buckets_per_scope,
                            const uint32_t *bucket_start, const uint32_t *bucket_count,
                            const uint32_t *cloud_buckets, uint32_t num_clouds, hx_err *err) {
  return battn_plan_build(plan, BATTN_PLAN_STRIDE, stride, buckets_per_scope, bucket_start,
                          bucket_count, cloud_buckets, num_clouds, err);
}

hx_status battn_plan_patches(battn_plan *plan, const int64_t *cu_seqlens, uint32_t num_patches,
                             uint32_t bucket_rows, hx_err *err) {
  memset(plan, 0, sizeof *plan);
  if (bucket_rows < 1) return hx_errf(err, HX_EINVAL, "attention patches: bucket_rows must be >= 1");
  if (num_patches && !cu_seqlens) return hx_errf(err, HX_EINVAL, "attention patches: no cu_seqlens");
  uint64_t nb = 0, K = 1;
  for (uint32_t i = 0; i < num_patches; ++i) {
    int64_t len = cu_seqlens[i + 1] - cu_seqlens[i];
    if (len < 0 || cu_seqlens[i] < 0 || cu_seqlens[i + 1] > INT32_MAX)
      return hx_errf(err, HX_EINVAL, "attention patches: patch %u spans [%lld, %lld)", i,
                     (long long)cu_seqlens[i], (long long)cu_seqlens[i + 1]);
    uint64_t pieces = ((uint64_t)len + bucket_rows - 1) / bucket_rows;
    nb += pieces;
    if (pieces > K) K = pieces;
  }
  if (K > BATTN_MAX_SCOPE_BUCKETS)
    return hx_errf(err, HX_EINVAL, "attention patches: a patch needs %llu buckets of %u rows (max %u)",
                   (unsigned long long)K, bucket_rows, BATTN_MAX_SCOPE_BUCKETS);
  if (nb > UINT32_MAX / 2) return hx_errf(err, HX_EINVAL, "attention patches: too many buckets");
  plan->buckets_per_scope = (uint32_t)K;
  plan->bucket_start = malloc((nb ? nb : 1) * sizeof(uint32_t));
  plan->bucket_count = malloc((nb ? nb : 1) * sizeof(uint32_t));
  plan->scope = malloc((num_patches ? (size_t)num_patches * K : 1) * sizeof(uint32_t));
  if (!plan->bucket_start || !plan->bucket_count || !plan->scope) {
    battn_plan_free(plan);
    return hx_errf(err, HX_ENOMEM, "attention patches: no memory");
  }
  uint32_t b = 0;
  for (uint32_t i = 0; i < num_patches; ++i) {
    int64_t r0 = cu_seqlens[i], r1 = cu_seqlens[i + 1];
    if (r1 == r0) continue;
    uint32_t *row = plan->scope + (size_t)plan->num_scopes * K;
    uint32_t j = 0;
    for (int64_t r = r0; r < r1; r += bucket_rows, ++b, ++j) {
      plan->bucket_start[b] = (uint32_t)r;
      plan->bucket_count[b] = (uint32_t)(r1 - r < bucket_rows ? r1 - r : bucket_rows);
      row[j] = b;
    }
    for (; j < K; ++j) row[j] = BATTN_EMPTY;
    plan->num_scopes++;
  }
  plan->num_buckets = b;
  plan_bounds(plan);
  return HX_OK;
}

hx_status battn_plan_uniform(battn_plan *plan, battn_plan_kind kind, uint32_t shift_or_stride,
                             uint32_t buckets_per_scope, int64_t rows, uint32_t bucket_rows, hx_err *err) {
  memset(plan, 0, sizeof *plan);
  if (bucket_rows < 1 || rows < 0 || rows > INT32_MAX)
    return hx_errf(err, HX_EINVAL, "attention plan: %lld rows in buckets of %u", (long long)rows,
                   bucket_rows);
  uint32_t nb = (uint32_t)(((uint64_t)rows + bucket_rows - 1) / bucket_rows);
  uint32_t *st = malloc((nb ? nb : 1) * sizeof *st), *ct = malloc((nb ? nb : 1) * sizeof *ct);
  if (!st || !ct) {
    free(st);
    free(ct);
    return hx_errf(err, HX_ENOMEM, "attention plan: no memory");
  }
  for (uint32_t b = 0; b < nb; ++b) {
    st[b] = b * bucket_rows;
    int64_t left = rows - (int64_t)st[b];
    ct[b] = (uint32_t)(left < bucket_rows ? left : bucket_rows);
  }
  uint32_t clouds[2] = {0, nb};
  hx_status s = battn_plan_build(plan, kind, shift_or_stride, buckets_per_scope, st, ct, clouds, 1, err);
  free(st);
  free(ct);
  return s;
}

/* ---- reference --------------------------------------------------------------------------------- */

static double elem(const battn_params *p, const void *base, int64_t rs, int64_t hs, int64_t r, int h,
                   int d) {
  const uint16_t *x = (const uint16_t *)base + r * rs + (int64_t)h * hs + d;
  return (double)battn_to_float(p->dtype, *x);
}

hx_status battn_reference_rows(const battn_params *p, const battn_plan *plan, const int64_t *sel,
                               int64_t n_sel, int naive, double *o_ref, double *lse_ref, hx_err *err) {
  HX_TRY(battn_validate(p, plan, err));
  if (!plan) return hx_errf(err, HX_EINVAL, "attention reference: needs the host plan");
  if (!p->q || !p->k || !p->v) return hx_errf(err, HX_EINVAL, "attention reference: missing q, k or v");
  int64_t rows = p->rows;
  int H = p->heads, D = p->head_dim;
  uint32_t K = plan->buckets_per_scope;
  uint32_t *row_bucket = malloc((size_t)(rows ? rows : 1) * sizeof *row_bucket);
  uint32_t *bucket_scope = malloc((plan->num_buckets ? plan->num_buckets : 1) * sizeof *bucket_scope);
  double *sc = malloc((size_t)(plan->max_scope_rows ? plan->max_scope_rows : 1) * sizeof *sc);
  int64_t *keys = malloc((size_t)(plan->max_scope_rows ? plan->max_scope_rows : 1) * sizeof *keys);
  double *acc = malloc((size_t)D * sizeof *acc);
  if (!row_bucket || !bucket_scope || !sc || !keys || !acc) {
    free(row_bucket), free(bucket_scope), free(sc), free(keys), free(acc);
    return hx_errf(err, HX_ENOMEM, "attention reference: no memory");
  }
  for (int64_t r = 0; r < rows; ++r) row_bucket[r] = BATTN_EMPTY;
  for (uint32_t b = 0; b < plan->num_buckets; ++b) {
    bucket_scope[b] = BATTN_EMPTY;
    for (uint32_t i = 0; i < plan->bucket_count[b]; ++i) row_bucket[plan->bucket_start[b] + i] = b;
  }
  for (uint32_t s = 0; s < plan->num_scopes; ++s)
    for (uint32_t j = 0; j < K; ++j) {
      uint32_t b = plan->scope[(size_t)s * K + j];
      if (b != BATTN_EMPTY) bucket_scope[b] = s;
    }
  battn_dtype dt = p->dtype;
  for (int64_t i = 0; i < n_sel; ++i) {
    int64_t r = sel[i];
    uint32_t b = (r >= 0 && r < rows) ? row_bucket[r] : BATTN_EMPTY;
    uint32_t s = b == BATTN_EMPTY ? BATTN_EMPTY : bucket_scope[b];
    if (s == BATTN_EMPTY) {
      for (int h = 0; h < H; ++h) {
        lse_ref[i * H + h] = NAN;
        for (int d = 0; d < D; ++d) o_ref[(i * H + h) * D + d] = NAN;
      }
      continue;
    }
    int64_t nk = 0;
    for (uint32_t j = 0; j < K; ++j) {
      uint32_t kb = plan->scope[(size_t)s * K + j];
      if (kb == BATTN_EMPTY) continue;
      for (uint32_t t = 0; t < plan->bucket_count[kb]; ++t) keys[nk++] = plan->bucket_start[kb] + t;
    }
    for (int h = 0; h < H; ++h) {
      double m = -INFINITY;
      for (int64_t j = 0; j < nk; ++j) {
        double dot = 0.0;
        float dotf = 0.0f;
        for (int d = 0; d < D; ++d) {
          double a = elem(p, p->q, p->q_row_stride, p->q_head_stride, r, h, d);
          double c = elem(p, p->k, p->k_row_stride, p->k_head_stride, keys[j], h, d);
          dot += a * c;
          dotf += (float)a * (float)c; /* products of 11- or 8-bit mantissas are exact in fp32 */
        }
        sc[j] = naive ? (double)round_dt(dt, round_dt(dt, dotf) * p->scale) : dot * (double)p->scale;
        if (sc[j] > m) m = sc[j];
      }
      double l = 0.0;
      float lf = 0.0f;
      for (int64_t j = 0; j < nk; ++j) {
        if (naive) {
          float e = expf((float)(sc[j] - m));
          lf += e;
          sc[j] = (double)e;
        } else {
          sc[j] = exp(sc[j] - m);
          l += sc[j];
        }
      }
      for (int d = 0; d < D; ++d) acc[d] = 0.0;
      for (int64_t j = 0; j < nk; ++j) {
        double w = naive ? (double)round_dt(dt, (float)sc[j] / lf) : sc[j];
        for (int d = 0; d < D; ++d) {
          double vv = elem(p, p->v, p->v_row_stride, p->v_head_stride, keys[j], h, d);
          acc[d] += w * vv;
        }
      }
      for (int d = 0; d < D; ++d)
        o_ref[(i * H + h) * D + d] = naive ? (double)round_dt(dt, (float)acc[d]) : acc[d] / l;
      lse_ref[i * H + h] = naive ? m + log((double)lf) : m + log(l);
    }
  }
  free(row_bucket), free(bucket_scope), free(sc), free(keys), free(acc);
  return HX_OK;
}

hx_status battn_forward_cpu(const battn_params *p, const battn_plan *plan, hx_err *err) {
  HX_TRY(battn_validate(p, plan, err));
  if (!p->o) return hx_errf(err, HX_EINVAL, "attention cpu: no output");
  int H = p->heads, D = p->head_dim;
  /* one bucket at a time keeps the buffers at max_bucket_rows rows */
  size_t n = plan->max_bucket_rows ? plan->max_bucket_rows : 1;
  int64_t *sel = malloc(n * sizeof *sel);
  double *o = malloc(n * (size_t)H * (size_t)D * sizeof *o), *l = malloc(n * (size_t)H * sizeof *l);
  if (!sel || !o || !l) {
    free(sel), free(o), free(l);
    return hx_errf(err, HX_ENOMEM, "attention cpu: no memory");
  }
  hx_status st = HX_OK;
  for (uint32_t b = 0; b < plan->num_buckets && st == HX_OK; ++b) {
    uint32_t c = plan->bucket_count[b];
    for (uint32_t i = 0; i < c; ++i) sel[i] = plan->bucket_start[b] + i;
    st = battn_reference_rows(p, plan, sel, c, 0, o, l, err);
    for (uint32_t i = 0; i < c && st == HX_OK; ++i)
      for (int h = 0; h < H; ++h) {
        uint16_t *dst = (uint16_t *)p->o + sel[i] * p->o_row_stride + (int64_t)h * p->o_head_stride;
        for (int d = 0; d < D; ++d) dst[d] = battn_from_float(p->dtype, (float)o[((int64_t)i * H + h) * D + d]);
        if (p->lse) p->lse[sel[i] * H + h] = (float)l[(int64_t)i * H + h];
      }
  }
  free(sel), free(o), free(l);
  return st;
}

/* Rows [begin, end) of battn_check_rows' two references, one battn_reference_rows call each: a row's reference
 * depends on that row alone, so the bits are one call's whatever the thread count. The status of a chunk goes to
 * st[begin]. */
typedef struct check_refs {
  const battn_params *p;
  const battn_plan *plan;
  const int64_t *sel;
  double *o, *l, *on, *ln;
  hx_status *st;
} check_refs;
static void check_refs_rows(void *arg, size_t begin, size_t end) {
  const check_refs *c = arg;
  const size_t H = (size_t)c->p->heads, HD = H * (size_t)c->p->head_dim;
  const int64_t m = (int64_t)(end - begin);
  hx_status st = battn_reference_rows(c->p, c->plan, c->sel + begin, m, 0, c->o + begin * HD, c->l + begin * H, NULL);
  if (st == HX_OK)
    st = battn_reference_rows(c->p, c->plan, c->sel + begin, m, 1, c->on + begin * HD, c->ln + begin * H, NULL);
  c->st[begin] = st;
}

hx_status battn_check_rows(const battn_params *p, const battn_plan *plan, const void *h_o,
                           const float *h_lse, const int64_t *sel, int64_t n_sel,
                           battn_check_report *rep, hx_err *err) {
  memset(rep, 0, sizeof *rep);
  int H = p->heads, D = p->head_dim;
  size_t n = (size_t)(n_sel ? n_sel : 1);
  double *o = malloc(n * (size_t)H * (size_t)D * sizeof *o), *l = malloc(n * (size_t)H * sizeof *l);
  double *on = malloc(n * (size_t)H * (size_t)D * sizeof *on), *ln = malloc(n * (size_t)H * sizeof *ln);
  hx_status *cst = calloc(n, sizeof *cst);
  if (!o || !l || !on || !ln || !cst) {
    free(o), free(l), free(on), free(ln), free(cst);
    return hx_errf(err, HX_ENOMEM, "attention check: no memory");
  }
  /* the arguments checked once here (no rows: the messages of a serial call); then the rows in parallel, 16 or
   * more a thread: 256 rows of 4096-row scopes took ~1.3 s a plan on one thread (2-core dev box), five plans on
   * every case of the sweep */
  hx_status st = battn_reference_rows(p, plan, sel, 0, 0, o, l, err);
  if (st == HX_OK && n_sel > 0) {
    check_refs c = {p, plan, sel, o, l, on, ln, cst};
    hx_par_for((size_t)n_sel, 16, check_refs_rows, &c);
    for (size_t i = 0; i < (size_t)n_sel && st == HX_OK; i++)
      if (cst[i] != HX_OK) st = hx_errf(err, cst[i], "attention check: the reference failed (%s)", hx_status_str(cst[i]));
  }
  free(cst);
  if (st != HX_OK) {
    free(o), free(l), free(on), free(ln);
    return st;
  }
  for (int64_t i = 0; i < n_sel; ++i) {
    if (isnan(l[i * H])) continue; /* row in no bucket: nothing to compare */
    rep->rows_checked++;
    for (int h = 0; h < H; ++h) {
      const uint16_t *got = (const uint16_t *)h_o + sel[i] * p->o_row_stride + (int64_t)h * p->o_head_stride;
      for (int d = 0; d < D; ++d) {
        double g = (double)battn_to_float(p->dtype, got[d]);
        double ref = o[(i * H + h) * D + d];
        if (!isfinite(g)) rep->nonfinite++;
        else if (fabs(g - ref) > rep->o_err) rep->o_err = fabs(g - ref);
        double ne = fabs(on[(i * H + h) * D + d] - ref);
        if (ne > rep->o_naive_err) rep->o_naive_err = ne;
      }
      if (h_lse) {
        double gl = (double)h_lse[sel[i] * H + h], rl = l[i * H + h];
        if (!isfinite(gl)) rep->nonfinite++;
        else if (fabs(gl - rl) / (1.0 + fabs(rl)) > rep->lse_err) rep->lse_err = fabs(gl - rl) / (1.0 + fabs(rl));
      }
    }
  }
  double floor_abs = p->dtype == BATTN_F16 ? 1e-4 : 5e-4;
  rep->o_tol = 2.0 * rep->o_naive_err + floor_abs;
  free(o), free(l), free(on), free(ln);
  if (rep->nonfinite)
    return hx_errf(err, HX_ECHECK, "attention check: %lld non-finite outputs (unwritten or NaN)",
                   (long long)rep->nonfinite);
  if (rep->o_err > rep->o_tol)
    return hx_errf(err, HX_ECHECK, "attention check: max |o - ref| %.3g > tolerance %.3g (naive %.3g)",
                   rep->o_err, rep->o_tol, rep->o_naive_err);
  if (rep->lse_err > 1e-3)
    return hx_errf(err, HX_ECHECK, "attention check: lse error %.3g > 1e-3 (relative to 1 + |lse|)",
                   rep->lse_err);
  return HX_OK;
}

const battn_variant *battn_variant_find(const char *name) {
  size_t n = 0;
  const battn_variant *t = battn_variants(&n);
  for (size_t i = 0; i < n; ++i)
    if (name && strcmp(t[i].name, name) == 0) return &t[i];
  return NULL;
}

const battn_variant *battn_variant_by_id(int id) {
  size_t n = 0;
  const battn_variant *t = battn_variants(&n);
  for (size_t i = 0; i < n; ++i)
    if (t[i].id == id) return &t[i];
  return NULL;
}

/* kernels.h says why v9, then v24; each variant's scratch query on p decides whether it runs here. */
hx_status battn_variant_best(const battn_variant **out, const battn_params *p, hx_err *err) {
  static const char *const order[] = {"v9", "v24"};
  *out = NULL;
  if (!p) return hx_errf(err, HX_EINVAL, "battn_variant_best: no parameters");
  hx_status st = HX_EUNSUPPORTED;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const battn_variant *v = battn_variant_find(order[i]);
    size_t need = 0;
    if (!v) continue;
    st = v->fn(p, NULL, &need, NULL, err);
    if (st == HX_OK) {
      *out = v;
      return HX_OK;
    }
  }
  return st; /* the last query's status and message (v24's): neither runs here */
}
