/*
 * test_attn_gpu.c - bucket-swin attention GPU variants x dtype x head dim on tiny and odd shapes, against the
 * double reference with the flash-attention tolerance (kernels.h: battn_check_rows' rule). Outputs are poisoned
 * (0xFFFF is NaN in fp16 and bf16, LSE NaN) before each launch; every row in a bucket must be written and finite,
 * every row outside the buckets must still hold the poison. The o-over-q cases write O over Q's columns of the
 * packed tensor (as Flash3D's forward does): Q is uploaded afresh before each launch instead of a poisoned O, and
 * every row outside the buckets must still hold its Q. Exits 77 without a CUDA device.
 *
 * Each (shape, dtype, head dim) gets one input and one reference (the exact and the naive same-precision pass of
 * battn_reference_rows), and every variant runs on that input: the double reference is what costs (the variants
 * take microseconds), so it is computed once instead of once per variant.
 *   default  the main path: v9 then v24 (battn_variant_best's order; v9 runs v24's kernel at D = 16), v23 (v24 without
 *            the packed scopes), v5 (v23 at the other head dims, and the kernel v23 changes at 16), v0 (the unfused
 *            cuBLAS baseline the sweep runs as the naive ablation) and v1 (the first fused kernel, FA2 style, that
 *            the ladder starts from); the reference on every row within 2 of a bucket's ends and every third row
 *            of each bucket (3 is prime to the 16-, 64- and 128-row tiles, so every row position of a tile is
 *            checked in some tile); every other row in a bucket is still checked written and finite.
 *   --slow   every variant of the ladder, the reference on every row (suite 'slow').
 * The tolerance's rule is the one kernels.h gives for battn_check_rows, with its absolute floor read from
 * battn_check_rows itself; on the shapes of at most 64 rows every variant is also checked by battn_check_rows,
 * which must reach the same verdict and the same errors.
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

#include "f3d_config.h"
#include "kernels/kernels.h"
#include "tests/test_args.h"

#if F3D_HAVE_CUDA
#include <cuda_runtime.h>

#define CK(x) assert_int_equal((x), cudaSuccess)

/* One test shape: a plan over `rows` rows and the tensor layout. */
typedef struct gcase {
  const char *name;
  battn_plan plan;
  int64_t rows;
  int heads;
  int packed;    /* Q, K, V as views of one [rows, 3, H, D] tensor */
  int o_pad;     /* extra elements per O row (multiple of 8) */
  int o_over_q;  /* packed, O written over Q's columns (o_pad unused) */
} gcase;

/* One (shape, dtype, head dim): inputs on the host and the device, the rows checked against the reference and
 * the reference on them. */
typedef struct shape {
  const gcase *c;
  battn_dtype dt;
  int D;
  size_t hd, o_row, n_in, n_o;
  uint16_t *hq, *hk, *hv, *ho; /* hk, hv alias hq when packed */
  float *hl;
  void *dq, *dk, *dv, *d_o;
  float *dl;
  uint32_t *dst, *dct, *dsc;
  battn_params p, hp; /* device pointers; the host twin for the reference */
  uint8_t *in;        /* rows[r]: 1 when row r lies in a bucket */
  int64_t *sel, ns;   /* the rows checked against the reference */
  double *ref_o, *ref_l, *nai_o, *nai_l;
} shape;

/* Errors of one output against the shape's reference (battn_check_rows' quantities). */
typedef struct verdict {
  double o_err, o_naive_err, o_tol, lse_err;
  int64_t checked, nonfinite;
  int ok;
} verdict;

static void shape_make(shape *s, const gcase *c, battn_dtype dt, int D, uint64_t seed, int every_row) {
  memset(s, 0, sizeof *s);
  s->c = c, s->dt = dt, s->D = D;
  const int H = c->heads;
  const int64_t rows = c->rows > 0 ? c->rows : 1;
  s->hd = (size_t)H * (size_t)D;
  const size_t in_row = c->packed ? 3 * s->hd : s->hd;
  s->o_row = c->o_over_q ? in_row : s->hd + (size_t)c->o_pad;
  s->n_in = (size_t)rows * in_row, s->n_o = (size_t)rows * s->o_row;
  assert_true(!c->o_over_q || c->packed);
  s->hq = malloc(s->n_in * 2);
  s->hk = c->packed ? s->hq : malloc(s->n_in * 2);
  s->hv = c->packed ? s->hq : malloc(s->n_in * 2);
  s->ho = malloc(s->n_o * 2);
  s->hl = malloc((size_t)rows * (size_t)H * sizeof(float));
  assert_true(s->hq && s->hk && s->hv && s->ho && s->hl);
  for (size_t i = 0; i < s->n_in; ++i) {
    s->hq[i] = battn_from_float(dt, (float)(4.0 * hx_rng_unit(seed, 11, i) - 2.0));
    if (!c->packed) {
      s->hk[i] = battn_from_float(dt, (float)(4.0 * hx_rng_unit(seed, 12, i) - 2.0));
      s->hv[i] = battn_from_float(dt, (float)(2.0 * hx_rng_unit(seed, 13, i) - 1.0));
    }
  }
  const battn_plan *pl = &c->plan;
  CK(cudaMalloc(&s->dq, s->n_in * 2));
  if (!c->packed) {
    CK(cudaMalloc(&s->dk, s->n_in * 2));
    CK(cudaMalloc(&s->dv, s->n_in * 2));
  }
  if (c->o_over_q) s->d_o = s->dq;
  else CK(cudaMalloc(&s->d_o, s->n_o * 2));
  CK(cudaMalloc((void **)&s->dl, (size_t)rows * (size_t)H * 4));
  size_t nb = pl->num_buckets ? pl->num_buckets : 1, nsc = (size_t)pl->num_scopes * pl->buckets_per_scope + 1;
  CK(cudaMalloc((void **)&s->dst, nb * 4));
  CK(cudaMalloc((void **)&s->dct, nb * 4));
  CK(cudaMalloc((void **)&s->dsc, nsc * 4));
  CK(cudaMemcpy(s->dq, s->hq, s->n_in * 2, cudaMemcpyHostToDevice));
  if (!c->packed) {
    CK(cudaMemcpy(s->dk, s->hk, s->n_in * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->dv, s->hv, s->n_in * 2, cudaMemcpyHostToDevice));
  }
  CK(cudaMemcpy(s->dst, pl->bucket_start, pl->num_buckets * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s->dct, pl->bucket_count, pl->num_buckets * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s->dsc, pl->scope, (size_t)pl->num_scopes * pl->buckets_per_scope * 4, cudaMemcpyHostToDevice));

  battn_params *p = &s->p, *hp = &s->hp;
  battn_params_init(p, c->rows, H, D, dt, pl);
  if (c->packed) {
    p->q = s->dq;
    p->k = (const uint16_t *)s->dq + s->hd;
    p->v = (const uint16_t *)s->dq + 2 * s->hd;
    p->q_row_stride = p->k_row_stride = p->v_row_stride = (int64_t)(3 * s->hd);
  } else {
    p->q = s->dq, p->k = s->dk, p->v = s->dv;
  }
  p->o = s->d_o, p->lse = s->dl;
  p->o_row_stride = (int64_t)s->o_row;
  p->bucket_start = s->dst, p->bucket_count = s->dct, p->scope = s->dsc;
  *hp = *p;
  if (c->packed) {
    hp->q = s->hq, hp->k = s->hq + s->hd, hp->v = s->hq + 2 * s->hd;
  } else {
    hp->q = s->hq, hp->k = s->hk, hp->v = s->hv;
  }
  hp->o = s->ho, hp->lse = s->hl;
  hp->bucket_start = pl->bucket_start, hp->bucket_count = pl->bucket_count, hp->scope = pl->scope;

  /* the rows in buckets, and those checked against the reference */
  s->in = calloc((size_t)rows, 1);
  s->sel = malloc((size_t)rows * sizeof *s->sel);
  assert_true(s->in && s->sel);
  for (uint32_t b = 0; b < pl->num_buckets; ++b)
    for (uint32_t i = 0; i < pl->bucket_count[b]; ++i) {
      s->in[pl->bucket_start[b] + i] = 1;
      if (every_row || i < 2 || i + 2 >= pl->bucket_count[b] || i % 3 == 0) s->sel[s->ns++] = pl->bucket_start[b] + i;
    }
  const size_t nr = (size_t)(s->ns ? s->ns : 1);
  s->ref_o = malloc(nr * s->hd * sizeof(double)), s->nai_o = malloc(nr * s->hd * sizeof(double));
  s->ref_l = malloc(nr * (size_t)H * sizeof(double)), s->nai_l = malloc(nr * (size_t)H * sizeof(double));
  assert_true(s->ref_o && s->nai_o && s->ref_l && s->nai_l);
  hx_err err = {HX_OK, ""};
  if (battn_reference_rows(hp, pl, s->sel, s->ns, 0, s->ref_o, s->ref_l, &err) != HX_OK ||
      battn_reference_rows(hp, pl, s->sel, s->ns, 1, s->nai_o, s->nai_l, &err) != HX_OK)
    fail_msg("%s: reference: %s", c->name, err.msg);
}

static void shape_free(shape *s) {
  cudaFree(s->dq), cudaFree(s->dk), cudaFree(s->dv), cudaFree(s->dl);
  if (!s->c->o_over_q) cudaFree(s->d_o);
  cudaFree(s->dst), cudaFree(s->dct), cudaFree(s->dsc);
  free(s->hq);
  if (!s->c->packed) free(s->hk), free(s->hv);
  free(s->ho), free(s->hl), free(s->in), free(s->sel);
  free(s->ref_o), free(s->ref_l), free(s->nai_o), free(s->nai_l);
}

/* battn_check_rows' rule (kernels.h) on the shape's reference: pass when every checked value is finite,
 * max |o - ref| <= 2 max |naive - ref| + floor_abs and |lse - ref| <= 1e-3 (1 + |ref|); rows whose reference is
 * NaN (in no scope) are skipped, and every selected row must be checked. */
static verdict compare(const shape *s, double floor_abs) {
  verdict v;
  memset(&v, 0, sizeof v);
  const int H = s->c->heads, D = s->D;
  for (int64_t i = 0; i < s->ns; ++i) {
    if (isnan(s->ref_l[i * H])) continue;
    v.checked++;
    for (int h = 0; h < H; ++h) {
      const uint16_t *got = s->ho + s->sel[i] * s->hp.o_row_stride + (int64_t)h * s->hp.o_head_stride;
      for (int d = 0; d < D; ++d) {
        const double g = (double)battn_to_float(s->dt, got[d]), ref = s->ref_o[(i * H + h) * D + d];
        if (!isfinite(g)) v.nonfinite++;
        else if (fabs(g - ref) > v.o_err) v.o_err = fabs(g - ref);
        const double ne = fabs(s->nai_o[(i * H + h) * D + d] - ref);
        if (ne > v.o_naive_err) v.o_naive_err = ne;
      }
      const double gl = (double)s->hl[s->sel[i] * H + h], rl = s->ref_l[i * H + h];
      if (!isfinite(gl)) v.nonfinite++;
      else if (fabs(gl - rl) / (1.0 + fabs(rl)) > v.lse_err) v.lse_err = fabs(gl - rl) / (1.0 + fabs(rl));
    }
  }
  v.o_tol = 2.0 * v.o_naive_err + floor_abs;
  v.ok = v.nonfinite == 0 && v.o_err <= v.o_tol && v.lse_err <= 1e-3 && v.checked == s->ns;
  return v;
}

/* 1: pass, 0: fail, -1: the variant returned HX_EUNSUPPORTED (skipped, not a failure). */
static int run_one(shape *s, const battn_variant *var, double floor_abs) {
  const gcase *c = s->c;
  const int H = c->heads;
  const int64_t rows = c->rows > 0 ? c->rows : 1;
  if (c->o_over_q) CK(cudaMemcpy(s->dq, s->hq, s->n_in * 2, cudaMemcpyHostToDevice)); /* Q afresh: O lies over it */
  else CK(cudaMemset(s->d_o, 0xFF, s->n_o * 2));                                    /* NaN in fp16 and bf16 */
  CK(cudaMemset(s->dl, 0xFF, (size_t)rows * (size_t)H * 4)); /* NaN */
  hx_err err = {HX_OK, ""};
  size_t scratch = 0;
  void *ds = NULL;
  hx_status st = var->fn(&s->p, NULL, &scratch, NULL, &err);
  if (st == HX_EUNSUPPORTED) { /* a variant this device or build cannot run (v6 off sm_90a): skipped */
    printf("  %-3s skipped: %s\n", var->name, err.msg);
    return -1;
  }
  assert_int_equal(st, HX_OK);
  if (scratch) CK(cudaMalloc(&ds, scratch));
  st = var->fn(&s->p, scratch ? ds : (void *)1, &scratch, NULL, &err);
  if (st != HX_OK) fprintf(stderr, "%s %s: %s\n", var->name, c->name, err.msg);
  assert_int_equal(st, HX_OK);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(s->ho, s->d_o, s->n_o * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(s->hl, s->dl, (size_t)rows * (size_t)H * 4, cudaMemcpyDeviceToHost));
  cudaFree(ds);

  /* every row: in a bucket -> written and finite; outside -> still poisoned */
  int64_t stray = 0, unwritten = 0;
  for (int64_t r = 0; r < c->rows; ++r) {
    const uint16_t *o = s->ho + (size_t)r * s->o_row;
    if (s->in[r]) {
      for (size_t e = 0; e < s->hd; ++e) unwritten += !isfinite(battn_to_float(s->dt, o[e]));
      for (int h = 0; h < H; ++h) unwritten += !isfinite(s->hl[r * H + h]);
      continue;
    }
    for (size_t e = 0; e < s->hd; ++e) stray += o[e] != (c->o_over_q ? s->hq[(size_t)r * s->o_row + e] : 0xFFFF);
    for (int h = 0; h < H; ++h) stray += !isnan(s->hl[r * H + h]);
  }
  const verdict v = compare(s, floor_abs);
  printf("  %-3s %-4s D=%-3d %-22s err %.2e (naive %.2e, tol %.2e) lse %.1e rows %lld of %lld %s\n", var->name,
         s->dt == BATTN_F16 ? "fp16" : "bf16", s->D, c->name, v.o_err, v.o_naive_err, v.o_tol, v.lse_err,
         (long long)v.checked, (long long)s->ns, v.ok && !stray && !unwritten ? "ok" : "FAIL");
  if (!v.ok)
    fprintf(stderr, "    %lld non-finite; max |o - ref| %.3g, tolerance %.3g; lse error %.3g (bound 1e-3)\n",
            (long long)v.nonfinite, v.o_err, v.o_tol, v.lse_err);
  if (stray) fprintf(stderr, "    %lld values written outside the buckets\n", (long long)stray);
  if (unwritten) fprintf(stderr, "    %lld values in buckets not written or not finite\n", (long long)unwritten);
  int ok = v.ok && stray == 0 && unwritten == 0;
  /* small shapes: the library's own check must agree with compare() (same reference, same rule) */
  if (c->rows <= 64) {
    battn_check_report rep;
    const int lib_ok = battn_check_rows(&s->hp, &c->plan, s->ho, s->hl, s->sel, s->ns, &rep, &err) == HX_OK;
    if (lib_ok != v.ok || rep.o_err != v.o_err || fabs(rep.o_tol - v.o_tol) > 1e-12 * (1.0 + v.o_tol) ||
        rep.lse_err != v.lse_err) {
      fprintf(stderr, "    battn_check_rows disagrees: %s, err %.3g tol %.3g lse %.3g\n", lib_ok ? "ok" : err.msg,
              rep.o_err, rep.o_tol, rep.lse_err);
      ok = 0;
    }
  }
  return ok;
}

/* The tolerance's absolute floor for dt, as battn_check_rows applies it: o_tol - 2 o_naive_err of a check of the
 * CPU forward on one bucket of 16 rows. */
static double tol_floor(battn_dtype dt) {
  gcase g = {"floor", {0}, 16, 1, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g.plan, BATTN_PLAN_PLAIN, 0, 1, 16, 16, NULL), HX_OK);
  uint16_t q[256], k[256], v[256], o[256];
  float l[16];
  for (size_t i = 0; i < 256; ++i) {
    q[i] = battn_from_float(dt, (float)(4.0 * hx_rng_unit(5, 1, i) - 2.0));
    k[i] = battn_from_float(dt, (float)(4.0 * hx_rng_unit(5, 2, i) - 2.0));
    v[i] = battn_from_float(dt, (float)(2.0 * hx_rng_unit(5, 3, i) - 1.0));
  }
  battn_params p;
  battn_params_init(&p, 16, 1, 16, dt, &g.plan);
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = l;
  p.bucket_start = g.plan.bucket_start, p.bucket_count = g.plan.bucket_count, p.scope = g.plan.scope;
  hx_err err = {HX_OK, ""};
  assert_int_equal(battn_forward_cpu(&p, &g.plan, &err), HX_OK);
  int64_t sel[16];
  for (int64_t i = 0; i < 16; ++i) sel[i] = i;
  battn_check_report rep;
  assert_int_equal(battn_check_rows(&p, &g.plan, o, l, sel, 16, &rep, &err), HX_OK);
  battn_plan_free(&g.plan);
  const double f = rep.o_tol - 2.0 * rep.o_naive_err;
  assert_true(f > 0.0 && f < 1e-2);
  return f;
}

/* Padded layout: `nc` clouds with the given bucket counts per cloud, buckets of capacity cap with
 * random fill (some empty, some full), one gap row between clouds that no bucket covers. */
static gcase padded_case(const char *name, battn_plan_kind kind, uint32_t arg, uint32_t K, uint32_t cap,
                         const uint32_t *cloud_nb, uint32_t nc, int heads, uint64_t seed) {
  uint32_t nb = 0;
  for (uint32_t c = 0; c < nc; ++c) nb += cloud_nb[c];
  uint32_t *st = malloc(nb * 4), *ct = malloc(nb * 4), *cl = malloc((nc + 1) * 4);
  assert_true(st && ct && cl);
  uint32_t row = 0, b = 0;
  cl[0] = 0;
  for (uint32_t c = 0; c < nc; ++c) {
    for (uint32_t i = 0; i < cloud_nb[c]; ++i, ++b) {
      st[b] = row;
      uint64_t r = hx_rng_u64(seed, 21, b) % 8;
      ct[b] = r == 0 ? 0 : r == 1 ? cap : (uint32_t)(hx_rng_u64(seed, 22, b) % cap) + 1;
      row += cap;
    }
    cl[c + 1] = b;
    row += 1;
  }
  gcase g = {name, {0}, row, heads, 0, 0, 0};
  hx_status s = battn_plan_build(&g.plan, kind, arg, K, st, ct, cl, nc, NULL);
  assert_int_equal(s, HX_OK);
  free(st), free(ct), free(cl);
  return g;
}

/* A Flash3D-like layout: the buckets of padded_case's counts back to back (no gaps, as PSH's output packs them), so
 * rows are the valid rows and the buckets are about half full on average: v24 (and v9 at D = 16) walk these scopes
 * packed, where on padded_case's slots (rows counting every bucket's capacity) they take the bucket-by-bucket kernel. */
static gcase dense_case(const char *name, battn_plan_kind kind, uint32_t arg, uint32_t K, uint32_t cap,
                        const uint32_t *cloud_nb, uint32_t nc, int heads, uint64_t seed) {
  gcase g = padded_case(name, kind, arg, K, cap, cloud_nb, nc, heads, seed);
  uint32_t row = 0, full = 0;
  for (uint32_t b = 0; b < g.plan.num_buckets; ++b) {
    g.plan.bucket_start[b] = row;
    row += g.plan.bucket_count[b];
    full += g.plan.bucket_count[b] == cap;
  }
  assert_true(row > 0 && full > 0 && full < g.plan.num_buckets);
  assert_true((double)row < 0.9 * g.plan.num_buckets * g.plan.max_bucket_rows); /* the packed walk's side of v24 */
  g.rows = row;
  return g;
}

/* The main path's variants (see the top of the file) */
static const char main_path[] = "v0,v1,v5,v9,v23,v24";

static void test_all_variants(void **state) {
  const int slow = *(const int *)*state;
  enum { NCASES = 14 };
  gcase cs[NCASES];
  int n = 0;
  gcase g1 = {"one-row", {0}, 1, 2, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g1.plan, BATTN_PLAN_PLAIN, 0, 1, 1, 512, NULL), HX_OK);
  cs[n++] = g1;
  gcase g2 = {"one-bucket-37", {0}, 37, 3, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g2.plan, BATTN_PLAN_PLAIN, 0, 4, 37, 64, NULL), HX_OK);
  cs[n++] = g2;
  gcase g3 = {"uniform-plain-1000", {0}, 1000, 2, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g3.plan, BATTN_PLAN_PLAIN, 0, 4, 1000, 96, NULL), HX_OK);
  cs[n++] = g3;
  gcase g4 = {"uniform-swin1-packed", {0}, 700, 2, 1, 8, 0};
  assert_int_equal(battn_plan_uniform(&g4.plan, BATTN_PLAN_SWIN, 1, 3, 700, 64, NULL), HX_OK);
  cs[n++] = g4;
  gcase g5 = {"uniform-stride2", {0}, 900, 1, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g5.plan, BATTN_PLAN_STRIDE, 2, 4, 900, 80, NULL), HX_OK);
  cs[n++] = g5;
  gcase g6 = {"scope-of-1", {0}, 300, 2, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g6.plan, BATTN_PLAN_PLAIN, 0, 1, 300, 128, NULL), HX_OK);
  cs[n++] = g6;
  const uint32_t clouds[3] = {7, 13, 2};
  cs[n++] = padded_case("padded-3clouds-swin2", BATTN_PLAN_SWIN, 2, 4, 64, clouds, 3, 2, 5);
  cs[n++] = padded_case("padded-3clouds-stride3", BATTN_PLAN_STRIDE, 3, 2, 160, clouds, 3, 1, 6);
  const int64_t cu[5] = {0, 100, 333, 334, 600};
  gcase g9 = {"ptv3-patches", {0}, 600, 2, 0, 0, 0};
  assert_int_equal(battn_plan_patches(&g9.plan, cu, 4, 128, NULL), HX_OK);
  cs[n++] = g9;
  /* one scope of 6 buckets of 136 rows: 12 key tiles of 128 (every second one holds 8 valid keys), so the
   * K/V ring of the wgmma kernels (3 or 4 slots) wraps 3-4 times: slot reuse, mbarrier parity flips
   * (v9..v11), and query tiles of 8 rows (the second consumer warpgroup without a valid row) */
  gcase g10 = {"long-scope-6x136", {0}, 816, 1, 0, 0, 0};
  assert_int_equal(battn_plan_uniform(&g10.plan, BATTN_PLAN_PLAIN, 0, 6, 816, 136, NULL), HX_OK);
  cs[n++] = g10;
  const uint32_t dense_clouds[2] = {19, 6};
  cs[n++] = dense_case("dense-2clouds-plain8", BATTN_PLAN_PLAIN, 0, 8, 200, dense_clouds, 2, 2, 7);
  cs[n++] = dense_case("dense-2clouds-stride2", BATTN_PLAN_STRIDE, 2, 4, 96, dense_clouds, 2, 1, 8);
  /* O over Q's columns, as Flash3D's forward writes it: on full-stride buckets and on the packed walk */
  gcase g13 = {"o-over-q-swin1", {0}, 700, 3, 1, 0, 1};
  assert_int_equal(battn_plan_uniform(&g13.plan, BATTN_PLAN_SWIN, 1, 3, 700, 64, NULL), HX_OK);
  cs[n++] = g13;
  cs[n] = dense_case("o-over-q-dense-plain8", BATTN_PLAN_PLAIN, 0, 8, 200, dense_clouds, 2, 2, 9);
  cs[n].packed = cs[n].o_over_q = 1;
  n++;

  size_t nv = 0;
  const battn_variant *vars = battn_variants(&nv);
  assert_true(nv >= 1 && nv <= 64);
  static const int dims[4] = {16, 32, 64, 128};
  const double floors[2] = {tol_floor(BATTN_F16), tol_floor(BATTN_BF16)};
  /* BATTN_TEST_VARIANTS="v5,v6" runs those variants instead (device time on shared machines, one new rung) */
  const char *only = getenv("BATTN_TEST_VARIANTS");
  int use[64], seen[64] = {0}; /* seen: 0 not yet run, 1 ran, 2 unsupported here */
  for (size_t v = 0; v < nv; ++v)
    use[v] = only ? hx_name_listed(only, vars[v].name) : slow || hx_name_listed(main_path, vars[v].name);
  int fails = 0, runs = 0, skipped = 0;
  for (int ci = 0; ci < n; ++ci)
    for (int t = 0; t < 2; ++t)
      for (int di = 0; di < 4; ++di) {
        shape s;
        const battn_dtype dt = t ? BATTN_BF16 : BATTN_F16;
        shape_make(&s, &cs[ci], dt, dims[di], hx_rng_u64(77, (uint64_t)t * 10 + (uint64_t)di, (uint64_t)ci), slow);
        if (ci == 0 && t == 0 && di == 0 && !slow) { /* the main path list names what the library picks */
          const battn_variant *best = NULL;
          hx_err err = {HX_OK, ""};
          if (battn_variant_best(&best, &s.p, &err) == HX_OK && !hx_name_listed(main_path, best->name))
            fail_msg("battn_variant_best picks %s, not in this test's main path (%s): add it", best->name, main_path);
        }
        for (size_t v = 0; v < nv; ++v) {
          if (!use[v] || seen[v] == 2) continue;
          const int r = run_one(&s, &vars[v], floors[t]);
          if (r < 0) {
            /* unsupported is a property of the variant on this device: it holds for every case; a variant that
             * ran some cases and then refused is a failure */
            if (seen[v]) {
              fprintf(stderr, "    %s refused %s after running earlier cases\n", vars[v].name, cs[ci].name);
              fails++;
            } else {
              skipped++;
            }
            seen[v] = 2;
            continue;
          }
          seen[v] = 1;
          runs++;
          fails += !r;
        }
        shape_free(&s);
      }
  printf("attention GPU (%s): %d of %d cases failed; %d variant(s) skipped as unsupported here\n",
         slow ? "every variant, every row" : "main path", fails, runs, skipped);
  for (int ci = 0; ci < n; ++ci) battn_plan_free(&cs[ci].plan);
  assert_true(runs > 0);
  assert_int_equal(fails, 0);
}

int main(int argc, char **argv) {
  static int slow = 0;
  if ((slow = t_slow_arg(argc, argv)) < 0) return 2;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no CUDA device: skipping\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test_prestate(test_all_variants, &slow)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  printf("built without CUDA: skipping\n");
  return 77;
}
#endif
