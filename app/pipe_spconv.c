/*
 * pipe_spconv.c - the k = 3 submanifold convolution alone, a stage of the ptv3-net pipeline (pipe_spconv.h): PTv3's
 * xCPE runs it inside the "cpe" component with the map build, a Linear and a LayerNorm, so the component's time
 * cannot tell how far the convolution is from its own roofline (issue #36's target for v1: >= 50% at C >= 64 and
 * 600k points). Here it runs on its own, on the run's largest size (every case with --ladder):
 *   1. the case's level-0 voxels as PTv3 makes them (sfc_grid_cpu at ctx->c.voxel, the cloud index per row, rows in
 *      input order, as net_ptv3_gpu's level 0), one GPU map (spc_map_gpu, k = 3, rulebook and pair counts: v0 reads
 *      them), downloaded once: the roofline's pairs and per-tile input rows (f3d_spc_cost_count) and the check's
 *      sampled rows come from it;
 *   2. per width C (64, then 256: v1's widest output slice, BN = 128, and BK = 64), in = out = C: features uniform in
 *      [-1, 1) (four 16-bit uniforms per counter-based draw, drawn in parallel: 600k x 256 values), weights and bias
 *      uniform in +-1/sqrt(27 C) (PyTorch's default range), all rounded to the sweep's dtype (fp16, or bf16 with
 *      sweep --dtype bf16) on the host so the CPU reference sees the values the GPU reads;
 *   3. the reference on SPC_CHECK_ROWS sampled output rows (row 0, the last row, the rest uniform): spc_conv_cpu on
 *      the sub-problem of those rows and the inputs they name (f3d_spc_sample_map; the full reference at 600k x 256
 *      is 2 x 7M pairs x 65536 = 1 TFLOP of scalar fp32), and the same on |x|, |w|, |b| for each value's magnitude;
 *   4. per variant that takes the shape (v0: gather-GEMM-scatter through cuBLAS; v1: the fused implicit GEMM;
 *      v3-v8; spc_variant_main picks v6 on sm_90a, else v3): outputs poisoned (0xFFFF, a NaN in either dtype), one
 *      launch, the sampled rows gathered on the device (nl_gather_rows_gpu) and compared: |gpu - ref| <= u |ref|
 *      + 2^-13 mag (u = 2^-11 in fp16, 2^-8 in bf16: the one rounding of the output, plus the two fp32 sums'
 *      orders: at most (in + K) 2^-24 mag each, 2^-15.9 mag at C = 256, so 8x margin). A variant that fails is
 *      reported and not timed;
 *   5. timed through f3d_measure_median with the roofline's FLOPs and bytes declared (the measurement layer writes
 *      flops/tflops and bytes/bandwidth at the median), then roofline_ms and roofline_share from the run's ceilings.
 * The ceilings: hx_bench_context measured them before the first case (ctx->bench->ceilings, the context's
 * ceiling_* keys). --timing basic measures none: no roofline rows then (REPORT.md says so). The stream is
 * pipe_net's (its own where the sweep gives none).
 * Device memory at 600k, C = 256: map 65 MB + rulebook 130 MB, x and y 307 MB each, v0's scratch (fp32 accumulator
 * 614 MB and its per-offset buffers), all from the sweep's arena.
 */
#include "app/pipe_spconv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/net_run.h"
#include "baselines/baselines.h"
#include "f3d_config.h"

#define SPC_CHECK_ROWS 2048u
#define SPC_K 3u

#if F3D_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

static const size_t spc_widths[] = {64, 256};

static hx_status cu(cudaError_t e, const char *what, hx_err *err) {
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "spconv stage: %s: %s", what, cudaGetErrorString(e));
}

/* One timed convolution: everything its launcher takes. */
typedef struct conv_run {
  const spc_variant *v;
  void *d_y;
  const void *d_x;
  const spc_weights *w;
  const spc_map *m;
  void *d_scratch;
  size_t scratch;
  spc_ctx *sctx;
  net_dtype dt;
} conv_run;
static hx_status conv_closure(void *arg, void *stream, hx_err *err) {
  const conv_run *r = arg;
  size_t s = r->scratch;
  return r->v->fn(r->d_y, r->d_x, r->w, r->m, r->d_scratch, &s, r->sctx, r->dt, (struct CUstream_st *)stream, err);
}

/* Everything the stage holds; freed by stage_free whatever happened. */
typedef struct stage {
  hx_arena *arena;
  net_dtype dt; /* the sweep's dtype */
  cudaStream_t s;
  spc_ctx *sctx;
  uint32_t n, S, *sel, *d_sel, *d_grid, *d_batch;
  int32_t *nbr, *d_nbr, *d_rule;
  void *d_map_scratch;
  spc_map m;
  f3d_spc_sample sub;
  /* per width */
  uint16_t *hx, *hys;
  float *w, *b, *aw, *ab, *xs, *axs, *ref, *mag;
  void *d_x, *d_y, *d_ys, *d_scratch;
  spc_weights sw;
} stage;

static void width_free(stage *g) {
  free(g->hx), free(g->hys), free(g->w), free(g->b), free(g->aw), free(g->ab), free(g->xs), free(g->axs);
  free(g->ref), free(g->mag);
  g->hx = g->hys = NULL, g->w = g->b = g->aw = g->ab = g->xs = g->axs = g->ref = g->mag = NULL;
  void *d[] = {g->d_x, g->d_y, g->d_ys, g->d_scratch};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) hx_arena_free(g->arena, d[i], NULL);
  g->d_x = g->d_y = g->d_ys = g->d_scratch = NULL;
  spc_weights_free(&g->sw);
}

static void stage_free(stage *g) {
  width_free(g);
  free(g->sel), free(g->nbr);
  f3d_spc_sample_free(&g->sub);
  void *d[] = {g->d_sel, g->d_grid, g->d_batch, g->d_nbr, g->d_rule, g->d_map_scratch};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) hx_arena_free(g->arena, d[i], NULL);
  spc_ctx_destroy(g->sctx);
}

/* Level-0 voxels, the GPU map with its rulebook and counts, the host copy of nbr, the sampled rows' sub-problem. */
static hx_status build_map(stage *g, f3d_ctx *ctx, const char *pipeline, hx_err *err) {
  const wl_batch *bt = ctx->c.cloud;
  if (!bt || bt->n == 0 || bt->b == 0) return hx_errf(err, HX_EINVAL, "%s: spconv stage: empty case", pipeline);
  if (bt->n > INT32_MAX / (SPC_K * SPC_K * SPC_K))
    return hx_errf(err, HX_EINVAL, "%s: spconv stage: %zu rows exceed the map's 2^31 entries", pipeline, bt->n);
  const uint32_t n = (uint32_t)bt->n, K = SPC_K * SPC_K * SPC_K;
  g->n = n;
  uint32_t *grid = malloc((size_t)n * 3 * sizeof *grid), *batch = malloc((size_t)n * sizeof *batch), maxc = 0;
  hx_status st = grid && batch ? HX_OK : hx_errf(err, HX_ENOMEM, "%s: spconv stage: grid of %u rows", pipeline, n);
  if (st == HX_OK) st = sfc_grid_cpu(grid, &maxc, bt->xyz, bt->offset, bt->b, ctx->c.voxel, err);
  if (st == HX_OK) st = sfc_batch_index_cpu(batch, bt->offset, bt->b, err);
  size_t sb = 0;
  if (st == HX_OK) st = hx_arena_alloc(g->arena, (void **)&g->d_grid, (size_t)n * 12, "spconv grid", err);
  if (st == HX_OK) st = hx_arena_alloc(g->arena, (void **)&g->d_batch, (size_t)n * 4, "spconv batch", err);
  if (st == HX_OK) st = hx_arena_alloc(g->arena, (void **)&g->d_nbr, (size_t)n * K * 4, "spconv map", err);
  if (st == HX_OK)
    st = hx_arena_alloc(g->arena, (void **)&g->d_rule, spc_rule_elems(n, SPC_K) * 4, "spconv rulebook", err);
  if (st == HX_OK) st = cu(cudaMemcpyAsync(g->d_grid, grid, (size_t)n * 12, cudaMemcpyHostToDevice, g->s), "upload", err);
  if (st == HX_OK) st = cu(cudaMemcpyAsync(g->d_batch, batch, (size_t)n * 4, cudaMemcpyHostToDevice, g->s), "upload", err);
  if (st == HX_OK) st = spc_map_gpu(&g->m, NULL, g->d_rule, NULL, &sb, NULL, NULL, n, SPC_K, 1, NULL, err);
  if (st == HX_OK) st = hx_arena_alloc(g->arena, &g->d_map_scratch, sb ? sb : 16, "spconv map scratch", err);
  if (st == HX_OK)
    st = spc_map_gpu(&g->m, g->d_nbr, g->d_rule, g->d_map_scratch, &sb, g->d_grid, g->d_batch, n, SPC_K, 1,
                     (struct CUstream_st *)g->s, err); /* synchronises: the counts come back */
  if (st == HX_OK) st = cu(cudaStreamSynchronize(g->s), "map", err); /* the uploads' host buffers are freed below */
  free(grid), free(batch);
  HX_TRY(st);
  /* the grid and the map's hash table are not needed past the build */
  void *done[] = {g->d_map_scratch, g->d_grid, g->d_batch};
  g->d_map_scratch = NULL, g->d_grid = g->d_batch = NULL;
  for (size_t i = 0; i < sizeof done / sizeof done[0]; i++) HX_TRY(hx_arena_free(g->arena, done[i], err));
  g->nbr = malloc((size_t)n * K * sizeof *g->nbr);
  g->S = n < SPC_CHECK_ROWS ? n : SPC_CHECK_ROWS;
  g->sel = malloc((size_t)g->S * sizeof *g->sel);
  if (!g->nbr || !g->sel) return hx_errf(err, HX_ENOMEM, "%s: spconv stage: host map of %u rows", pipeline, n);
  HX_TRY(cu(cudaMemcpy(g->nbr, g->d_nbr, (size_t)n * K * 4, cudaMemcpyDeviceToHost), "map download", err));
  const uint64_t seed = hx_rng_u64(ctx->seed, 0x5C0, 1);
  for (uint32_t i = 0; i < g->S; i++)
    g->sel[i] = i == 0 ? 0 : i == 1 ? n - 1 : (uint32_t)(hx_rng_u64(seed, 1, i) % n);
  HX_TRY(hx_arena_alloc(g->arena, (void **)&g->d_sel, (size_t)g->S * 4, "spconv check rows", err));
  HX_TRY(cu(cudaMemcpy(g->d_sel, g->sel, (size_t)g->S * 4, cudaMemcpyHostToDevice), "upload", err));
  return f3d_spc_sample_map(&g->sub, g->nbr, n, SPC_K, g->sel, g->S, err);
}

/* Inputs of width C on the host and the device, and the reference (and magnitudes) of the sampled rows. */
static hx_status make_width(stage *g, f3d_ctx *ctx, size_t C, hx_err *err) {
  const size_t n = g->n, K = SPC_K * SPC_K * SPC_K, nw = C * K * C, ns = g->sub.m.n;
  g->hx = malloc(n * C * 2);
  g->hys = malloc((size_t)g->S * C * 2);
  g->w = malloc(nw * sizeof *g->w), g->aw = malloc(nw * sizeof *g->aw);
  g->b = malloc(C * sizeof *g->b), g->ab = malloc(C * sizeof *g->ab);
  g->xs = calloc(ns * C, sizeof *g->xs), g->axs = calloc(ns * C, sizeof *g->axs);
  g->ref = malloc(ns * C * sizeof *g->ref), g->mag = malloc(ns * C * sizeof *g->mag);
  if (!g->hx || !g->hys || !g->w || !g->aw || !g->b || !g->ab || !g->xs || !g->axs || !g->ref || !g->mag)
    return hx_errf(err, HX_ENOMEM, "spconv stage: host buffers for %zu rows x %zu channels", n, C);
  static const double one = 1.0; /* uniform in [-1, 1) */
  f3d_fill_uniform16(g->hx, n * C, hx_rng_u64(ctx->seed, 0x5C0, 2 * C), n * C, &one, 1, ctx->dtype);
  const uint64_t ws = hx_rng_u64(ctx->seed, 0x5C0, 2 * C + 1);
  const double range = 1.0 / sqrt((double)(K * C));
  for (size_t i = 0; i < nw; i++) {
    g->w[i] = net_to_float(g->dt, net_from_float(g->dt, (float)(range * (2.0 * hx_rng_unit(ws, 0, i) - 1.0))));
    g->aw[i] = fabsf(g->w[i]);
  }
  for (size_t i = 0; i < C; i++) {
    g->b[i] = (float)(range * (2.0 * hx_rng_unit(ws, 1, i) - 1.0));
    g->ab[i] = fabsf(g->b[i]);
  }
  for (size_t r = g->S; r < ns; r++)
    for (size_t c = 0; c < C; c++) {
      const float v = net_to_float(g->dt, g->hx[(size_t)g->sub.src[r] * C + c]);
      g->xs[r * C + c] = v, g->axs[r * C + c] = fabsf(v);
    }
  HX_TRY(spc_conv_cpu(g->ref, g->xs, g->w, g->b, &g->sub.m, C, C, err));
  HX_TRY(spc_conv_cpu(g->mag, g->axs, g->aw, g->ab, &g->sub.m, C, C, err));
  net_alloc al = f3d_net_arena(g->arena);
  HX_TRY(spc_weights_upload(&g->sw, g->w, g->b, C, C, (uint32_t)K, g->dt, &al, err));
  HX_TRY(hx_arena_alloc(g->arena, &g->d_x, n * C * 2, "spconv x", err));
  HX_TRY(hx_arena_alloc(g->arena, &g->d_y, n * C * 2, "spconv y", err));
  HX_TRY(hx_arena_alloc(g->arena, &g->d_ys, (size_t)g->S * C * 2, "spconv sampled y", err));
  return cu(cudaMemcpy(g->d_x, g->hx, n * C * 2, cudaMemcpyHostToDevice), "upload", err);
}

/* Poison, one launch, the sampled rows against the reference; rows recorded; *ok = 1 when it passed. */
static hx_status check_variant(stage *g, f3d_ctx *ctx, const char *pipeline, const char *kernel, conv_run *r,
                               size_t C, int *ok, hx_err *err) {
  HX_TRY(cu(cudaMemsetAsync(r->d_y, 0xFF, (size_t)g->n * C * 2, g->s), "poison", err));
  HX_TRY(conv_closure(r, g->s, err));
  HX_TRY(nl_gather_rows_gpu(g->d_ys, r->d_y, g->d_sel, g->S, C, g->dt, (struct CUstream_st *)g->s, err));
  HX_TRY(cu(cudaStreamSynchronize(g->s), kernel, err));
  HX_TRY(cu(cudaMemcpy(g->hys, g->d_ys, (size_t)g->S * C * 2, cudaMemcpyDeviceToHost), "download", err));
  size_t bad = 0, first = 0;
  double worst = 0.0, worst_abs = 0.0;
  const double u = g->dt == NET_BF16 ? 0x1p-8 : 0x1p-11; /* the output's one rounding to the dtype */
  for (size_t e = 0; e < (size_t)g->S * C; e++) {
    const double y = (double)net_to_float(g->dt, g->hys[e]), ref = (double)g->ref[e];
    const double tol = u * fabs(ref) + 0x1p-13 * (double)g->mag[e];
    const double d = fabs(y - ref);
    if (isfinite(y) && d > worst_abs) worst_abs = d;
    if (!isfinite(y) || !(d <= tol)) {
      if (bad++ == 0) first = e;
    } else if (tol > 0.0 && d / tol > worst) {
      worst = d / tol;
    }
  }
  *ok = bad == 0;
  const char *v = r->v->name;
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check", *ok ? 1.0 : 0.0, "bool", err));
  HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_rows", (double)g->S, "count", err));
  if (*ok) HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_err_over_tol", worst, "ratio", err));
  if (*ok) HX_TRY(f3d_record(ctx, pipeline, kernel, v, "check_err", worst_abs, "abs", err));
  if (!*ok)
    fprintf(stderr, "f3dbench: %s: %s %s failed its check, not timed: %zu of %zu sampled values wrong, first at row "
            "%u channel %zu: %g, expected %g\n", pipeline, kernel, v, bad, (size_t)g->S * C, g->sel[first / C],
            first % C, (double)net_to_float(g->dt, g->hys[first]), (double)g->ref[first]);
  return HX_OK;
}

static hx_status run_width(stage *g, f3d_ctx *ctx, const char *pipeline, size_t C, double tflops, double gbs,
                           hx_err *err) {
  char kernel[32];
  snprintf(kernel, sizeof kernel, "spconv.k%u_C%zu", SPC_K, C);
  HX_TRY(make_width(g, ctx, C, err));
  int tile = 0, stages = 0; /* v1's row tile on this device, the tile the halo is counted in */
  HX_TRY(spc_launch_plan(&tile, &stages, &g->m, &g->sw, 0, 0, err));
  f3d_spc_cost cost;
  HX_TRY(f3d_spc_cost_count(&cost, g->nbr, g->n, g->m.K, C, C, (uint32_t)tile, err));
  const spc_variant *best = spc_variant_main(C, C, SPC_K * SPC_K * SPC_K);
  for (int vi = 0; vi < spc_variant_count(); vi++) {
    const spc_variant *v = spc_variant_get(vi);
    size_t need = 0;
    hx_err qerr = {HX_OK, ""};
    const hx_status q = v->fn(NULL, NULL, &g->sw, &g->m, NULL, &need, g->sctx, g->dt, NULL, &qerr);
    if (q == HX_EUNSUPPORTED) continue; /* v2 takes in <= 8 only */
    if (q != HX_OK) return hx_errf(err, q, "%s", qerr.msg);
    HX_TRY(hx_arena_alloc(g->arena, &g->d_scratch, need ? need : 16, "spconv scratch", err));
    conv_run r = {v, g->d_y, g->d_x, &g->sw, &g->m, g->d_scratch, need ? need : 16, g->sctx, g->dt};
    const char *vn = v->name;
    HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "pairs", cost.pairs, "count", err));
    HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "halo", cost.halo, "ratio", err));
    HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "map_bytes", cost.map_bytes, "B", err));
    HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "tile_rows", (double)cost.tile, "count", err));
    if (v == best) HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "best_entry", 1.0, "bool", err));
    int ok = 0;
    HX_TRY(check_variant(g, ctx, pipeline, kernel, &r, C, &ok, err));
    if (ok) {
      hx_closure c = {conv_closure, NULL, &r, cost.bytes, cost.flops}; /* flops/tflops, bytes/bandwidth rows */
      double median = NAN;
      HX_TRY(f3d_measure_median(ctx, pipeline, kernel, vn, HX_CLOCK_GPU, &c, &median, err));
      const double roof = f3d_spc_roofline_ms(cost.flops, cost.bytes, tflops, gbs, NULL);
      if (isfinite(roof) && isfinite(median) && median > 0.0) {
        HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "roofline_ms", roof, "ms", err));
        HX_TRY(f3d_record(ctx, pipeline, kernel, vn, "roofline_share", roof / median, "ratio", err));
      }
    }
    void *scratch = g->d_scratch;
    g->d_scratch = NULL;
    HX_TRY(hx_arena_free(g->arena, scratch, err));
  }
  width_free(g);
  return HX_OK;
}
#endif

hx_status f3d_spconv_stage(f3d_ctx *ctx, const char *pipeline, hx_err *err) {
  if (!ctx->have_gpu || !(ctx->ladder || ctx->c.n_points >= ctx->max_points)) return HX_OK;
#if F3D_HAVE_CUDA
  if (!ctx->arena) return hx_errf(err, HX_EINVAL, "%s: spconv stage: no device memory arena in the sweep context", pipeline);
  stage g;
  memset(&g, 0, sizeof g);
  g.arena = ctx->arena;
  g.dt = ctx->dtype;
  if (!ctx->stream) return hx_errf(err, HX_EINVAL, "%s: spconv stage: no stream (pipe_net gives it one)", pipeline);
  g.s = (cudaStream_t)ctx->stream;
  const double tflops = f3d_gemm_ceiling(ctx->bench, ctx->dtype); /* the dtype's cuBLAS rate */
  const double gbs = ctx->bench ? ctx->bench->ceilings.copy_gbs : (double)NAN;
  hx_status st = spc_ctx_create(&g.sctx, err);
  if (st == HX_OK) st = build_map(&g, ctx, pipeline, err);
  for (size_t i = 0; i < sizeof spc_widths / sizeof spc_widths[0] && st == HX_OK; i++)
    st = run_width(&g, ctx, pipeline, spc_widths[i], tflops, gbs, err);
  stage_free(&g);
  return st;
#else
  (void)pipeline, (void)err;
  return HX_OK;
#endif
}
