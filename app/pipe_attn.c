/*
 * pipe_attn.c - the attention stage of the sweep pipelines (declared in pipe_attn.h).
 *
 * For each plan (kernel row label "attn.<plan>") and each variant (the fused one: battn_variant_best's, v9, the
 * warp-specialised Hopper wgmma kernel, which runs v24's mma.sync kernel at D = 16 itself, or v24 where v9 cannot
 * run (not an sm_90a device or build); v0, the unfused cuBLAS library baseline and the naive ablation, only up to
 * F3D_ATTN_V0_MAX_ROWS rows; the main path and --ladder run the same two: the attention ladder's other rungs are
 * `f3dbench attn --variant all`'s, at the head dims where they differ):
 *   1. check: outputs poisoned (NaN), one launch, o and lse downloaded, battn_check_rows on
 *      F3D_ATTN_CHECK_ROWS sampled rows (row 0, the last row, the rest uniform random) against the double
 *      reference with the flash-attention tolerance. The full reference is out of reach here: at 600k
 *      rows it is 6e11 FLOP in double precision per plan (tens of minutes), while 256 rows cost ~1.1 s
 *      on one thread (reference and naive pass, 4096-row scopes, 2-core dev box; battn_check_rows spreads
 *      them over the cores, 16 rows or more a thread). Rows spread over the whole range
 *      catch a wrong tile address, mask or scope redirect that affects more than a few scopes; every row
 *      of small edge shapes is checked by tests/kernels/test_attn_gpu.c.
 *      Rows check (bool), check_rows (count), check_err and check_tol (max |o - ref| and its bound).
 *      A variant that fails is reported on stderr and not timed.
 *   2. time: f3d_measure_median (the sweep's timing module: its rows, counters and progress), the
 *      closure enqueueing one forward on the stream it receives and declaring its FLOPs (4 * D * H * sum over
 *      scopes of rows_s^2: the real scope sizes, partial and empty buckets included), from which the
 *      measurement layer writes flops (FLOP) and tflops (TFLOP/s) at the time_median row's median.
 *   3. scopes (count), and rel_to_plain (median / the base plan's median, same variant, same run) for every
 *      plan but the base.
 * Inputs: packed qkv [rows, 3, H, D] in the sweep's dtype (fp16 or bf16, sweep --dtype; what a qkv projection
 * writes and PTv3's gather produces),
 * uniform random (q, k in [-2, 2), v in [-1, 1)) from the sweep seed; O [rows, H, D]; LSE fp32.
 * Device buffers come from the sweep's arena (ctx->arena: the mem_peak rows); v0's cuBLAS handle and its
 * workspace are created inside kernels/attn.cu, once per device, and are not in the arena.
 */
#include "app/pipe_attn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f3d_config.h"

#if F3D_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop
#endif

#if F3D_HAVE_CUDA

/* Slot 0 runs battn_variant_best's fused variant (v9: the sm_90a wgmma kernel, which runs v24's kernel itself at
 * D = 16; v24 where v9 cannot run); slot 1: the library baseline v0. */
#define ATTN_NVAR 2

static double plan_flops(const battn_plan *pl, int H, int D) {
  double f = 0.0;
  for (uint32_t s = 0; s < pl->num_scopes; s++) {
    double r = 0.0;
    for (uint32_t j = 0; j < pl->buckets_per_scope; j++) {
      uint32_t b = pl->scope[(size_t)s * pl->buckets_per_scope + j];
      if (b != BATTN_EMPTY) r += pl->bucket_count[b];
    }
    f += r * r;
  }
  return 4.0 * f * H * D;
}

/* Parameters of one forward over packed qkv [rows, 3, H, D] (the stage's only layout) in dt. */
static void packed_params(battn_params *p, int64_t rows, int H, int D, net_dtype dt, const battn_plan *plan) {
  battn_params_init(p, rows, H, D, dt == NET_BF16 ? BATTN_BF16 : BATTN_F16, plan);
  p->q_row_stride = p->k_row_stride = p->v_row_stride = (int64_t)3 * H * D;
}

typedef struct attn_run {
  const battn_variant *v;
  battn_params p; /* device pointers */
  void *d_scratch;
  size_t scratch;
} attn_run;

static hx_status attn_closure(void *arg, void *stream, hx_err *err) {
  attn_run *r = arg;
  size_t s = r->scratch;
  return r->v->fn(&r->p, r->d_scratch, &s, stream, err);
}

static hx_status cu(cudaError_t e, const char *what, hx_err *err) {
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "attention: %s: %s", what, cudaGetErrorString(e));
}

/* Everything one stage allocates; freed by attn_free whatever happened. */
typedef struct attn_bufs {
  uint16_t *h_qkv, *h_o;
  float *h_lse;
  int64_t *sel;
  void *d_qkv, *d_o, *d_scratch;
  float *d_lse;
  uint32_t *d_start, *d_count, *d_scope;
  cudaStream_t s;
  double (*median)[ATTN_NVAR];
  hx_arena *arena; /* the device buffers above come from the sweep's arena (mem_peak rows) */
} attn_bufs;

static void attn_free(attn_bufs *b) {
  free(b->h_qkv), free(b->h_o), free(b->h_lse), free(b->sel), free(b->median);
  void *d[] = {b->d_qkv, b->d_o, b->d_scratch, b->d_lse, b->d_start, b->d_count, b->d_scope};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) hx_arena_free(b->arena, d[i], NULL);
  if (b->s) cudaStreamDestroy(b->s);
}

/* Check one variant on one plan (d_o/d_lse poisoned first); *ok = 1 when it passed. Rows recorded. */
static hx_status attn_check(f3d_ctx *ctx, const char *pipeline, const char *kernel, attn_bufs *b, attn_run *r,
                            const battn_params *hp, const battn_plan *plan, int64_t n_sel, int *ok, hx_err *err) {
  const int64_t rows = hp->rows;
  const size_t hd = (size_t)hp->heads * (size_t)hp->head_dim;
  HX_TRY(cu(cudaMemsetAsync(b->d_o, 0xFF, (size_t)rows * hd * 2, b->s), "poison", err));
  HX_TRY(cu(cudaMemsetAsync(b->d_lse, 0xFF, (size_t)rows * (size_t)hp->heads * 4, b->s), "poison", err));
  HX_TRY(attn_closure(r, b->s, err));
  HX_TRY(cu(cudaStreamSynchronize(b->s), kernel, err));
  HX_TRY(cu(cudaMemcpy(b->h_o, b->d_o, (size_t)rows * hd * 2, cudaMemcpyDeviceToHost), "download", err));
  HX_TRY(cu(cudaMemcpy(b->h_lse, b->d_lse, (size_t)rows * (size_t)hp->heads * 4, cudaMemcpyDeviceToHost),
            "download", err));
  battn_check_report rep;
  hx_err cerr = {HX_OK, ""};
  hx_status cs = battn_check_rows(hp, plan, b->h_o, b->h_lse, b->sel, n_sel, &rep, &cerr);
  if (cs != HX_OK && cs != HX_ECHECK) return hx_errf(err, cs, "%s", cerr.msg);
  *ok = cs == HX_OK;
  const char *v = r->v->name;
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check", *ok ? 1.0 : 0.0, "bool", err));
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_rows", (double)rep.rows_checked, "count", err));
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_err", rep.o_err, "abs", err));
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_tol", rep.o_tol, "abs", err));
  if (!*ok) fprintf(stderr, "f3dbench: %s: %s %s failed its check, not timed: %s\n", pipeline, kernel, v, cerr.msg);
  return HX_OK;
}

static hx_status attn_gpu(f3d_ctx *ctx, const char *pipeline, int64_t rows, const f3d_attn_item *items,
                          size_t n_items, int rel_base, attn_bufs *b, hx_err *err) {
  const int D = F3D_ATTN_HEAD_DIM, H = F3D_ATTN_CHANNELS / F3D_ATTN_HEAD_DIM;
  const size_t hd = (size_t)H * (size_t)D, R = (size_t)rows;
  const int64_t n_sel = rows < F3D_ATTN_CHECK_ROWS ? rows : F3D_ATTN_CHECK_ROWS;
  b->h_qkv = malloc(3 * R * hd * 2 + 16);
  b->h_o = malloc(R * hd * 2 + 16);
  b->h_lse = malloc(R * (size_t)H * 4 + 4);
  b->sel = malloc((size_t)(n_sel ? n_sel : 1) * sizeof *b->sel);
  b->median = calloc(n_items ? n_items : 1, sizeof *b->median);
  if (!b->h_qkv || !b->h_o || !b->h_lse || !b->sel || !b->median)
    return hx_errf(err, HX_ENOMEM, "%s: attention host buffers for %lld rows", pipeline, (long long)rows);
  /* q, k, v: four 16-bit uniforms per counter-based draw, drawn in parallel (3 x 600k x 64 values took seconds
   * of every 600k case on one thread; the values do not depend on the thread count) */
  const uint64_t seed = hx_rng_u64(ctx->seed, 0xA77, 0);
  static const double amp[3] = {2.0, 2.0, 1.0}; /* q, k in [-2, 2), v in [-1, 1) */
  f3d_fill_uniform16(b->h_qkv, 3 * R * hd, seed, hd, amp, 3, ctx->dtype);
  for (int64_t i = 0; i < n_sel; i++)
    b->sel[i] = i == 0 ? 0 : i == 1 ? rows - 1 : (int64_t)(hx_rng_u64(seed, 1, (uint64_t)i) % R);
  /* device buffers: qkv, o, lse, the largest scope tables of any plan, the largest scratch */
  uint32_t max_nb = 1, max_ns = 1;
  for (size_t k = 0; k < n_items; k++) {
    const battn_plan *pl = items[k].plan;
    if (pl->num_buckets > max_nb) max_nb = pl->num_buckets;
    if (pl->num_scopes * pl->buckets_per_scope > max_ns) max_ns = pl->num_scopes * pl->buckets_per_scope;
  }
  HX_TRY(cu(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking), "stream", err));
  HX_TRY(hx_arena_alloc(b->arena, &b->d_qkv, 3 * R * hd * 2 + 16, "attention qkv", err));
  HX_TRY(hx_arena_alloc(b->arena, &b->d_o, R * hd * 2 + 16, "attention o", err));
  HX_TRY(hx_arena_alloc(b->arena, (void **)&b->d_lse, R * (size_t)H * 4 + 4, "attention lse", err));
  HX_TRY(hx_arena_alloc(b->arena, (void **)&b->d_start, (size_t)max_nb * 4, "attention bucket_start", err));
  HX_TRY(hx_arena_alloc(b->arena, (void **)&b->d_count, (size_t)max_nb * 4, "attention bucket_count", err));
  HX_TRY(hx_arena_alloc(b->arena, (void **)&b->d_scope, (size_t)max_ns * 4, "attention scopes", err));
  HX_TRY(cu(cudaMemcpy(b->d_qkv, b->h_qkv, 3 * R * hd * 2, cudaMemcpyHostToDevice), "upload", err));
  /* host params (reference) and device params share shapes and strides: packed [rows, 3, H, D] */
  battn_params hp; /* set per plan below */
  const battn_variant *vars[ATTN_NVAR];
  {
    battn_params p;
    packed_params(&p, rows, H, D, ctx->dtype, items[0].plan);
    hx_err e;
    if (battn_variant_best(&vars[0], &p, &e) != HX_OK)
      return hx_errf(err, HX_EUNSUPPORTED, "%s: attention: neither v9 nor v24 runs on this device: %s", pipeline, e.msg);
  }
  vars[1] = rows > F3D_ATTN_V0_MAX_ROWS ? NULL : battn_variant_find("v0");

  /* Variant by variant, each with its own scratch (the most it asks for on any plan), held only while it
   * runs: a stage's mem_peak then holds its own scratch, not the unfused baseline's (v0 materialises the
   * scores in chunks of up to 1 GiB). */
  for (int vi = 0; vi < ATTN_NVAR; vi++) {
    if (!vars[vi]) continue;
    size_t scratch = 16;
    for (size_t k = 0; k < n_items; k++) {
      battn_params p;
      packed_params(&p, rows, H, D, ctx->dtype, items[k].plan);
      size_t need = 0;
      HX_TRY(vars[vi]->fn(&p, NULL, &need, b->s, err));
      if (need > scratch) scratch = need;
    }
    HX_TRY(hx_arena_alloc(b->arena, &b->d_scratch, scratch, "attention scratch", err));
    for (size_t k = 0; k < n_items; k++) {
      const battn_plan *pl = items[k].plan;
      const char *kernel = items[k].kernel;
      packed_params(&hp, rows, H, D, ctx->dtype, pl);
      hp.q = b->h_qkv, hp.k = b->h_qkv + hd, hp.v = b->h_qkv + 2 * hd;
      hp.o = b->h_o, hp.lse = b->h_lse;
      HX_TRY(battn_validate(&hp, pl, err)); /* the plan against the layout, on the host tables */
      const size_t nsc = (size_t)pl->num_scopes * pl->buckets_per_scope;
      HX_TRY(cu(cudaMemcpy(b->d_start, pl->bucket_start, (size_t)pl->num_buckets * 4, cudaMemcpyHostToDevice), "upload", err));
      HX_TRY(cu(cudaMemcpy(b->d_count, pl->bucket_count, (size_t)pl->num_buckets * 4, cudaMemcpyHostToDevice), "upload", err));
      HX_TRY(cu(cudaMemcpy(b->d_scope, pl->scope, nsc * 4, cudaMemcpyHostToDevice), "upload", err));
      const double flops = plan_flops(pl, H, D);
      attn_run r = {vars[vi], hp, b->d_scratch, scratch};
      const uint16_t *dq = b->d_qkv;
      r.p.q = dq, r.p.k = dq + hd, r.p.v = dq + 2 * hd;
      r.p.o = b->d_o, r.p.lse = b->d_lse;
      r.p.bucket_start = b->d_start, r.p.bucket_count = b->d_count, r.p.scope = b->d_scope;
      int ok = 0;
      HX_TRY(attn_check(ctx, pipeline, kernel, b, &r, &hp, pl, n_sel, &ok, err));
      if (!ok) continue;
      hx_closure c = {attn_closure, NULL, &r, 0, flops}; /* the measurement layer writes flops and tflops */
      double median = 0.0;
      HX_TRY(f3d_measure_median(ctx, pipeline, kernel, r.v->name, HX_CLOCK_GPU, &c, &median, err));
      b->median[k][vi] = median;
      HX_TRY(f3d_record(ctx, pipeline, kernel, r.v->name, "scopes", (double)pl->num_scopes, "count", err));
    }
    HX_TRY(hx_arena_free(b->arena, b->d_scratch, err));
    b->d_scratch = NULL;
  }
  if (rel_base >= 0 && (size_t)rel_base < n_items)
    for (size_t k = 0; k < n_items; k++)
      for (int vi = 0; vi < ATTN_NVAR; vi++) {
        const double base = b->median[rel_base][vi], t = b->median[k][vi];
        if ((int)k == rel_base || !vars[vi] || !(base > 0) || !(t > 0)) continue; /* NaN: no median */
        HX_TRY(f3d_record(ctx, pipeline, items[k].kernel, vars[vi]->name, "rel_to_plain", t / base, "ratio", err));
      }
  return HX_OK;
}
#endif

hx_status f3d_attn_stage(f3d_ctx *ctx, const char *pipeline, int64_t rows, const f3d_attn_item *items,
                         size_t n_items, int rel_base, hx_err *err) {
  if (!ctx->have_gpu || !F3D_HAVE_CUDA) {
    /* the double reference is the only CPU path: 4 * rows * scope_rows * H * D FLOP per plan */
    const double scope = rows < 4096 ? (double)rows : 4096.0;
    fprintf(stderr, "f3dbench: %s: attention skipped (no GPU): its only CPU path is the double-precision "
            "reference, %.2g GFLOP per plan over %lld rows, too slow for a sweep (`f3dbench attn --variant "
            "cpu` runs it on one small case)\n", pipeline, 4.0 * (double)rows * scope * F3D_ATTN_CHANNELS / 1e9,
            (long long)rows);
    return HX_OK;
  }
  if (rows < 1 || rows > INT32_MAX) return hx_errf(err, HX_EINVAL, "%s: attention over %lld rows", pipeline, (long long)rows);
  if (n_items == 0) return HX_OK;
#if F3D_HAVE_CUDA
  attn_bufs b;
  memset(&b, 0, sizeof b);
  b.arena = ctx->arena;
  if (!b.arena) return hx_errf(err, HX_EINVAL, "%s: attention: no device memory arena in the sweep context", pipeline);
  hx_status st = attn_gpu(ctx, pipeline, rows, items, n_items, rel_base, &b, err);
  attn_free(&b);
  return st;
#else
  (void)items, (void)rel_base;
  return HX_OK;
#endif
}
