/*
 * sweep.c - the pipeline registry and the row helpers of sweep.h.
 *
 * f3d_pipelines[] is the only list of pipelines: `f3dbench sweep` iterates it (in order) and
 * `--pipelines` selects from it by name. f3d_measure is the one path from a timed closure to result
 * rows, so every pipeline reports the same metrics with the same units.
 */
#include "app/sweep.h"
#include "baselines/baselines.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const f3d_pipeline f3d_pipelines[] = {
    {"workload", "workload preparation: generation, voxel dedup, exact-size sampling, file reading (CPU)",
     f3d_pipe_workload, 0, 0},
    {"ptv3", "PTv3 serialization (grid, 4 orders, sort, inverse), padding, qkv/output gathers, pooling (GPU variants vs CPU)",
     f3d_pipe_ptv3, SFC_MAX_CLOUDS, 0}, /* the GPU padding's per-cloud offsets */
    {"flash3d", "Flash3D PSH (4 hashes, CPU + GPU variants checked first), feature scatter, in-bucket pooling, locality",
     f3d_pipe_flash3d, 0, 0},
    {"ptv3-net", "PTv3-m1 whole forward (nuScenes, 46.2M parameters), and over patches of 4096 (patch4096: the "
     "paper's Table 2 scope) at the largest size (every size with --ladder): checked, timed (also as a CUDA graph), "
     "memory, time per component; at the largest size the k = 3 sparse convolution alone against its roofline",
     f3d_pipe_ptv3_net, SFC_MAX_CLOUDS < F3D_NET_CHECK_MAX_CLOUDS ? SFC_MAX_CLOUDS : F3D_NET_CHECK_MAX_CLOUDS, 1},
    {"flash3d-net", "Flash3D whole forward at equal parameters (46m; 46m-fill75: buckets 75% full at every size; "
     "46m-windows: the public code's 512-row windows, no re-hash), equal memory (129m) and PTv3's attention span "
     "(46m-scope2: 1024 keys a query), these two at the largest size (every size and the public configuration "
     "with --ladder): checked, timed, memory, time per component",
     f3d_pipe_flash3d_net, F3D_NET_CHECK_MAX_CLOUDS, 1}, /* the check's cloud prefixes (pipe_net.c) */
    /* one line per pipeline, in run order */
};
const size_t f3d_pipeline_count = sizeof f3d_pipelines / sizeof f3d_pipelines[0];

const char *const f3d_planned_pipelines[] = {"ptv3", "flash3d"};
const size_t f3d_planned_pipeline_count = sizeof f3d_planned_pipelines / sizeof f3d_planned_pipelines[0];

const f3d_pipeline *f3d_pipeline_find(const char *name) {
  for (size_t i = 0; i < f3d_pipeline_count; i++)
    if (strcmp(f3d_pipelines[i].name, name) == 0) return &f3d_pipelines[i];
  return NULL;
}

hx_key f3d_key(const f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant) {
  hx_key k;
  k.workload = ctx->c.workload;
  k.n_points = (uint64_t)ctx->c.n_points;
  k.batch = ctx->c.batch;
  k.pipeline = pipeline;
  k.kernel = kernel;
  k.variant = variant;
  return k;
}

hx_status f3d_record(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                     const char *metric, double value, const char *unit, hx_err *err) {
  hx_key k = f3d_key(ctx, pipeline, kernel, variant);
  return hx_results_add(ctx->results, &k, metric, value, unit, err);
}

hx_status f3d_record_times(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                           const double *samples_ms, size_t n, hx_err *err) {
  hx_stats_desc s;
  hx_status st = hx_stats_describe(&s, samples_ms, n, err);
  if (st != HX_OK) return st;
  hx_key k = f3d_key(ctx, pipeline, kernel, variant);
  const struct {
    const char *metric;
    double v;
  } rows[] = {{"time_median", s.median}, {"time_mean", s.mean}, {"time_std", s.std},
              {"time_min", s.min},       {"time_max", s.max}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    st = hx_results_add(ctx->results, &k, rows[i].metric, rows[i].v, "ms", err);
    if (st != HX_OK) return st;
  }
  st = hx_results_add(ctx->results, &k, "reps", (double)n, "count", err);
  if (st != HX_OK) return st;
  return hx_results_add_samples(ctx->results, &k, "time", samples_ms, n, "ms", err);
}

/* The NVBench-style path: timing pass, counter pass, rows (hx_bench_stage), then the device memory the
 * stage's pipeline holds, beyond the sweep's starting point. */
static hx_status measure_bench(f3d_ctx *ctx, const hx_key *k, const hx_closure *c, hx_err *err) {
  HX_TRY(hx_bench_stage(ctx->bench, ctx->results, k, c, err));
  size_t used = 0;
  hx_err e;
  if (hx_meter_mem_used(ctx->bench->meter, &used, &e) != HX_OK) return HX_OK; /* memory rows are optional */
  size_t delta = used > ctx->mem_base ? used - ctx->mem_base : 0;
  if (delta > ctx->mem_used_max) ctx->mem_used_max = delta;
  return hx_results_add(ctx->results, k, "mem_used", (double)delta, "B", err);
}

hx_status f3d_record_mem(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant, hx_err *err) {
  if (!ctx->arena || hx_arena_count(ctx->arena) == 0) return HX_OK;
  return f3d_record(ctx, pipeline, kernel, variant, "mem_peak", (double)hx_arena_mark_peak(ctx->arena), "B", err);
}

hx_status f3d_record_mem_total(f3d_ctx *ctx, const char *pipeline, hx_err *err) {
  if (!ctx->arena || hx_arena_count(ctx->arena) == 0) return HX_OK;
  hx_status st = f3d_record(ctx, pipeline, "total", "all", "mem_peak", (double)hx_arena_peak(ctx->arena), "B", err);
  if (st == HX_OK && ctx->mem_used_max > 0)
    st = f3d_record(ctx, pipeline, "total", "all", "mem_used", (double)ctx->mem_used_max, "B", err);
  return st;
}

#define F3D_CPU_STAGE_MS 1000.0     /* sampling time of a CPU stage in a GPU sweep (f3d_measure_median) */
#define F3D_CPU_STAGE_MIN_REPS 5u

hx_status f3d_measure(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                      hx_clock clock, const hx_closure *c, hx_err *err) {
  return f3d_measure_median(ctx, pipeline, kernel, variant, clock, c, NULL, err);
}

hx_status f3d_measure_median(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                             hx_clock clock, const hx_closure *c, double *median_ms, hx_err *err) {
  if (median_ms) *median_ms = NAN;
  if (ctx->stop && *ctx->stop) return hx_errf(err, HX_EINVAL, "%s/%s: interrupted", pipeline, kernel);
  if (ctx->stage_hook) ctx->stage_hook(ctx->stage_hook_arg, ctx, pipeline, kernel, variant, clock, 0);
  hx_status st;
  if (clock == HX_CLOCK_GPU && ctx->arena) hx_arena_mark(ctx->arena);
  if (clock == HX_CLOCK_GPU && ctx->bench) {
    hx_key k = f3d_key(ctx, pipeline, kernel, variant);
    st = measure_bench(ctx, &k, c, err);
    if (st == HX_OK && median_ms) *median_ms = ctx->bench->last_median_ms;
  } else {
    size_t n = ctx->timing.reps;
    double *samples = n ? malloc(n * sizeof *samples) : NULL;
    if (n == 0) st = hx_errf(err, HX_EINVAL, "%s/%s: zero repetitions", pipeline, kernel);
    else if (!samples) st = hx_errf(err, HX_ENOMEM, "%s/%s: no memory for %zu samples", pipeline, kernel, n);
    else if (clock == HX_CLOCK_CPU && ctx->bench && ctx->bench->opts.min_time_s > 0.0 && n > F3D_CPU_STAGE_MIN_REPS) {
      /* A CPU stage of a GPU sweep with nvbench timing (min_time_s > 0; the paper's protocol keeps its fixed
       * count) is the workload's preparation, context for the GPU stages rather than their subject, and
       * samples like nvbench's minimum time: the first sample (after the warm-up) sets how many more fit
       * F3D_CPU_STAGE_MS, at least F3D_CPU_STAGE_MIN_REPS and at most --reps in all. At 600k points the
       * exact-deduplication stage is ~230 ms a run: 20 runs were 4.6 s of a 5-minute default sweep. */
      hx_timing_opts one = ctx->timing;
      one.reps = 1;
      st = hx_time(samples, clock, &one, c, NULL, err);
      if (st == HX_OK) {
        double more = samples[0] > 0.0 ? F3D_CPU_STAGE_MS / samples[0] : (double)n;
        size_t want = more >= (double)n ? n : (size_t)more;
        if (want < F3D_CPU_STAGE_MIN_REPS) want = F3D_CPU_STAGE_MIN_REPS;
        hx_timing_opts rest = ctx->timing;
        rest.warmup = 0;
        rest.reps = (uint32_t)(want - 1u);
        st = hx_time(samples + 1, clock, &rest, c, NULL, err);
        n = want;
      }
    } else st = hx_time(samples, clock, &ctx->timing, c, clock == HX_CLOCK_GPU ? ctx->stream : NULL, err);
    if (st == HX_OK) st = f3d_record_times(ctx, pipeline, kernel, variant, samples, n, err);
    const double med = st == HX_OK ? hx_stats_median(samples, n) : (double)NAN;
    hx_key k = f3d_key(ctx, pipeline, kernel, variant);
    if (st == HX_OK) st = hx_rates_record(ctx->results, &k, c, med, err); /* the closure's bytes/FLOPs at med */
    if (st == HX_OK && median_ms) *median_ms = med;
    free(samples);
  }
  if (st == HX_OK && clock == HX_CLOCK_GPU) st = f3d_record_mem(ctx, pipeline, kernel, variant, err);
  if (ctx->stage_hook) ctx->stage_hook(ctx->stage_hook_arg, ctx, pipeline, kernel, variant, clock, 1);
  return st;
}

/* ---- pipelines that do not fit, finished cases, byte counts --------------------------------------- */

/* "5120 B", "3.5 MiB", "1.25 GiB" */
static void bytes_text(char *buf, size_t cap, size_t b) {
  if (b < 1048576u) snprintf(buf, cap, "%zu B", b);
  else if (b < 1073741824u) snprintf(buf, cap, "%.1f MiB", (double)b / 1048576.0);
  else snprintf(buf, cap, "%.2f GiB", (double)b / 1073741824.0);
}

hx_status f3d_pipeline_run(f3d_ctx *ctx, const f3d_pipeline *p, int *skipped, hx_err *err) {
  *skipped = 0;
  hx_arena *a = ctx->arena;
  if (a) a->refused = a->refused_in_use = 0; /* a refusal from an earlier pipeline is not this one's */
  hx_status st = p->run(ctx, err);
  if (st != HX_ENOMEM || !a || a->refused == 0 || (ctx->stop && *ctx->stop)) return st;
  const size_t need = a->refused_in_use + a->refused;
  const size_t avail = f3d_device_avail(ctx); /* the pipeline usually freed its buffers on the way out */
  char why[sizeof err->msg];
  snprintf(why, sizeof why, "%s", err->msg);
  err->status = HX_OK;
  err->msg[0] = '\0';
  HX_TRY(f3d_record(ctx, p->name, "total", "all", "skipped_bytes_needed", (double)need, "B", err));
  if (avail) HX_TRY(f3d_record(ctx, p->name, "total", "all", "skipped_bytes_free", (double)avail, "B", err));
  char need_txt[64], free_txt[64] = "unknown";
  bytes_text(need_txt, sizeof need_txt, need);
  if (avail) bytes_text(free_txt, sizeof free_txt, avail);
  fprintf(stderr, "%sf3dbench: sweep: note: %s n=%zu: pipeline %s skipped: it needed at least %s of device memory, %s "
          "free (%s)\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", ctx->c.workload, ctx->c.n_points, p->name,
          need_txt, free_txt, why);
  *skipped = 1;
  return HX_OK;
}

size_t f3d_device_avail(const f3d_ctx *ctx) {
  if (!ctx->arena) return 0;
  /* the arena is reset before each pipeline, so all of its capacity is the pipeline's */
  size_t avail = ctx->arena->capacity, used = 0;
  hx_err e;
  if (ctx->dev && ctx->dev->mem_bytes && hx_device_mem_used(&used, &e) == HX_OK && used <= ctx->dev->mem_bytes) {
    size_t dev_free = ctx->dev->mem_bytes - used + hx_arena_in_use(ctx->arena);
    if (avail == 0 || dev_free < avail) avail = dev_free;
  }
  return avail;
}

hx_status f3d_cases_begin(f3d_cases *c, hx_results *res, size_t total, hx_err *err) {
  memset(c, 0, sizeof *c);
  c->total = total;
  HX_TRY(hx_results_contextf(res, err, "cases_total", "%zu", total));
  HX_TRY(hx_results_context(res, "cases_done", "0", err));
  return hx_results_context(res, "cases_finished", "", err);
}

hx_status f3d_case_finished(f3d_cases *c, hx_results *res, const char *workload, size_t n_points, hx_err *err) {
  char item[192];
  int w = snprintf(item, sizeof item, "%s%s:%zu", c->len ? " " : "", workload, n_points);
  if (w > 0 && (size_t)w < sizeof item && c->len + (size_t)w + 4 < sizeof c->list) {
    memcpy(c->list + c->len, item, (size_t)w + 1);
    c->len += (size_t)w;
  } else if (c->len + 4 < sizeof c->list && (c->len < 3 || strcmp(c->list + c->len - 3, "...") != 0)) {
    memcpy(c->list + c->len, " ...", 5); /* the list is full: cases_done still counts */
    c->len += 4;
  }
  c->done++;
  HX_TRY(hx_results_contextf(res, err, "cases_done", "%zu", c->done));
  HX_TRY(hx_results_context(res, "cases_finished", c->list, err));
  return hx_results_checkpoint(res, err);
}

double f3d_gemm_ceiling(const hx_bench *bench, net_dtype dt) {
  if (!bench) return NAN;
  return dt == NET_BF16 ? bench->ceilings.gemm_bf16_tflops : bench->ceilings.gemm_fp16_tflops;
}

typedef struct u16_fill {
  uint16_t *dst;
  size_t n, run, namp;
  uint64_t seed;
  const double *amp;
  battn_dtype dt;
} u16_fill;
static void fill_u16(void *arg, size_t begin, size_t end) { /* draws [begin, end): values 4 d .. 4 d + 3 */
  const u16_fill *f = arg;
  for (size_t d = begin; d < end; d++) {
    const uint64_t u = hx_rng_u64(f->seed, 0, d);
    for (size_t i = 4 * d; i < 4 * d + 4 && i < f->n; i++) {
      const double x = (double)((u >> (16 * (i % 4))) & 0xFFFFu) / 65536.0; /* [0, 1) */
      f->dst[i] = battn_from_float(f->dt, (float)(f->amp[(i / f->run) % f->namp] * (2.0 * x - 1.0)));
    }
  }
}
void f3d_fill_uniform16(uint16_t *dst, size_t n, uint64_t seed, size_t run, const double *amp, size_t namp,
                        net_dtype dt) {
  u16_fill f = {dst, n, run ? run : 1, namp ? namp : 1, seed, amp, dt == NET_BF16 ? BATTN_BF16 : BATTN_F16};
  hx_par_for((n + 3) / 4, 1u << 16, fill_u16, &f);
}
