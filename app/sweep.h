/*
 * sweep.h - the pipeline registry of `f3dbench sweep` and the context one sweep case hands a pipeline.
 *
 * A sweep walks workloads x sizes; for each case it builds the host clouds once (exactly n_points per
 * cloud after one-point-per-voxel deduplication, `batch` clouds concatenated) and calls every selected
 * pipeline's run function with an f3d_ctx. A pipeline times its stages and adds result rows; it owns
 * nothing in the context and must free what it allocates before returning.
 *
 * Adding a pipeline (for example PTv3 or Flash3D):
 *   1. write app/pipe_<name>.c with
 *        hx_status f3d_pipe_<name>(f3d_ctx *ctx, hx_err *err);
 *      and declare it below in the "pipelines" list (one line);
 *   2. add one line {"<name>", "what it measures", f3d_pipe_<name>} to f3d_pipelines[] in sweep.c;
 *   3. append pipe_<name>.c to f3dbench_sources in app/meson.build.
 * Rows are keyed (workload, n_points, batch, pipeline, kernel, variant, metric). Use variant "cpu" for a
 * CPU reference and "v0", "v1", ... for GPU variants (the numbers of the kernel's variant table); a stage run
 * through a library's best entry keeps the name of the variant the entry picked, so its rows have the keys that
 * rung has under --ladder. A pipeline measures the main path unless ctx->ladder (pipe_plan.h). When
 * ctx->have_gpu is 0 (no device, or a CPU-only build) a pipeline runs its CPU references only, labelled
 * "cpu", or returns HX_OK after adding nothing; it never fails just because there is no GPU.
 * Device buffers come from ctx->arena (hx_arena_alloc / hx_arena_free), so the sweep can write each GPU
 * stage's mem_peak and the pipeline's total; a pipeline frees them before returning (the sweep frees and
 * reports what is left).
 *
 * Typical stage, with the helper below doing warm-up, repetitions, summary and raw samples in one call:
 *   struct my_args a = {...};
 *   hx_closure c = {my_run, NULL, &a, bytes, 0}; // hx_status my_run(void *arg, void *stream, hx_err *err)
 *   HX_TRY(f3d_measure(ctx, "ptv3", "serialize", "v1", HX_CLOCK_GPU, &c, err));
 * The closure declares the bytes (and FLOPs) one run moves; the measurement layer writes bytes and bandwidth
 * (flops and tflops) at the median its rows report, so no median travels back to the pipeline.
 * A GPU closure must enqueue its work on the stream run() receives (never the legacy default stream):
 * with --timing nvbench that stream is held by a spinning kernel until run() returns, so work queued
 * elsewhere would be timed wrongly or not at all. run() may be called many times back to back (hot
 * batches, no reset() in between) and once more per counter pass; a run() that synchronizes the host
 * works but costs one hold time-out per stage (see hx_measure_opts.sync_timeout_s).
 */
#ifndef F3D_CLI_SWEEP_H
#define F3D_CLI_SWEEP_H

#include <signal.h>

#include "harness/harness.h"
#include "nets/nets.h"
#include "workloads/workloads.h"

/* One sweep case: what every pipeline sees. */
typedef struct f3d_case {
  const char *workload;  /* row label: generator name ("lidar") or the stem of an --input file */
  size_t n_points;       /* points per cloud after deduplication */
  uint32_t batch;        /* clouds in the batch */
  double voxel;          /* voxel size (m) of the deduplication; pipelines use it as PTv3's grid size */
  const wl_batch *cloud; /* host clouds: cloud->n == n_points * batch; read-only */
  wl_kind kind;          /* generator of a synthetic workload (meaningless when source != NULL) */
  const wl_cloud *source;/* the recorded cloud the case was resampled from, or NULL for synthetic */
  const char *source_path; /* its file path, or NULL */
} f3d_case;

/* What pipelines keep between the cases of one sweep: named values, e.g. the outcome of a check that does not
 * depend on the case's size (pipe_net.c checks each backbone configuration once per workload). */
#define F3D_MEMO_MAX 32
typedef struct f3d_memo {
  char key[F3D_MEMO_MAX][96];
  double val[F3D_MEMO_MAX][2];
  size_t n;
} f3d_memo;

/* Per-case context: everything a pipeline may use. Read-only for pipelines except through the helpers. */
typedef struct f3d_ctx {
  hx_results *results;        /* where rows go (hx_results_add / f3d_measure) */
  hx_timing_opts timing;      /* warm-up and repetitions (--reps) */
  int have_gpu;               /* 1 when a CUDA device is usable in this build */
  const hx_device_info *dev;  /* the device used, NULL when have_gpu == 0 */
  void *stream;               /* with ctx->bench: the bench's non-default stream (every GPU measurement
                               * runs on it); otherwise NULL: the GPU clock then creates a non-default
                               * stream per measurement. Either way run() receives the stream to use:
                               * enqueue timed work on it, never on the legacy default stream */
  uint64_t seed;              /* sweep seed (--seed); derive per-stage seeds with hx_rng_u64 */
  int verbose;                /* -v count: 0 quiet; pipelines may print detail on stderr when > 0 */
  int ladder;                 /* sweep --ladder: every rung of every kernel ladder and the stages that split one
                               * into its parts; 0: the main path (app/pipe_plan.h says which stages and variants) */
  size_t max_points;          /* the largest --sizes entry of the run (points per cloud): where a pipeline puts
                               * what the run needs at one size only (the paper's table is at the largest) */
  int gate;                   /* sweep --preset ci, the regression gate's run: a pipeline measures its main path
                               * and leaves out the studies beside it (pipe_net.c: flash3d-46m alone, no
                               * convolution stage, more forwards in the breakdown) */
  net_dtype dtype;            /* sweep --dtype (NET_F16 by default; fp32 accumulation either way): what the GPU stages
                               * compute in: the backbones' activations and weights, the attention stage's q, k, v
                               * and o, the convolution stage's features and weights. The other stages move 16-bit
                               * values whatever their type (the gathers) or compute in fp32 (pooling). The context
                               * key "dtype" holds net_dtype_name's word; a run without it was made in fp16 */
  f3d_case c;                 /* the case being measured */
  f3d_memo *memo;             /* sweep-lifetime values (owned by the sweep; NULL: nothing is kept) */
  const volatile sig_atomic_t *stop; /* non-zero once SIGINT/SIGTERM arrived: f3d_measure returns
                                      * at once, the sweep then marks the run interrupted */
  hx_bench *bench;            /* --timing nvbench|paper on a GPU: f3d_measure's GPU clock goes through
                               * hx_bench_stage (cold/hot timing, counters); NULL: hx_time (--timing
                               * basic, or no GPU). CPU stages always use hx_time. */
  size_t mem_base;            /* device memory in use when the sweep started (bytes), for mem_used */
  hx_arena *arena;            /* with a GPU: the pipeline's device memory arena, NULL without one. Allocate
                               * every device buffer through it (hx_arena_alloc / hx_arena_free; memory a
                               * kernels/ or baselines/ create function allocates itself: hx_arena_note).
                               * The sweep resets it before each pipeline; f3d_measure marks it before each
                               * GPU stage and writes that stage's mem_peak; after the pipeline the sweep
                               * writes its total (f3d_record_mem_total) and frees what was left */
  size_t mem_used_max;        /* largest mem_used row of the pipeline so far (for its total); 0 = none */
  /* Optional, set by the sweep: f3d_measure calls it before (done = 0) and after (done = 1) each
   * measurement: progress line, and the time budget, which may lower bench->opts.max_time_s for the
   * stage about to run. */
  void (*stage_hook)(void *arg, struct f3d_ctx *ctx, const char *pipeline, const char *kernel,
                     const char *variant, hx_clock clock, int done);
  void *stage_hook_arg;
} f3d_ctx;

typedef hx_status (*f3d_pipe_fn)(f3d_ctx *ctx, hx_err *err);

/* The most clouds a backbone pipeline's check takes (pipe_net.c cuts each cloud of a case to its first points). */
#define F3D_NET_CHECK_MAX_CLOUDS 64

typedef struct f3d_pipeline {
  const char *name;        /* --pipelines name and the `pipeline` column */
  const char *description; /* one line for `f3dbench sweep --help` */
  f3d_pipe_fn run;
  uint32_t max_batch; /* the most clouds a case may hold on a GPU (a CUDA build refuses --batch above it before
                       * the run); 0: any */
  int gpu_only;       /* 1: no CPU stage (the pipeline adds no row without a CUDA device) */
} f3d_pipeline;

/* The registry (sweep.c): a const table, in run order. */
extern const f3d_pipeline f3d_pipelines[];
extern const size_t f3d_pipeline_count;
/* Pipeline names the project plans but that are not in the table yet (sweep reports them as missing). */
extern const char *const f3d_planned_pipelines[];
extern const size_t f3d_planned_pipeline_count;

const f3d_pipeline *f3d_pipeline_find(const char *name);

/* A row key for the current case. */
hx_key f3d_key(const f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant);

/* Measure closure c on the given clock and write its rows for (pipeline, kernel, variant).
 * CPU clock, or GPU clock without ctx->bench: hx_time with ctx->timing (GPU: on ctx->stream, or a stream
 * of its own when NULL); rows time_median, time_mean, time_std, time_min, time_max (ms) and reps
 * (count), raw samples "time" (ms).
 * GPU clock with ctx->bench: hx_bench_stage (timing pass, then a counter pass of its own): the rows
 * above over the kept cold samples plus time_noise, noise_reached, throttled_dropped, sm_clock, hot
 * rows time_hot_median/_mean/_std and hot_batch, raw samples "time" and "time_hot", counter rows
 * (sm_active, sm_issue, tensor_active, dram_read_bw, gpu_time by default), and mem_used (B): device
 * memory in use while the stage ran, beyond what was in use when the sweep started.
 * Every GPU stage (any timing) with ctx->arena: mem_peak (B), see f3d_record_mem. */
hx_status f3d_measure(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                      hx_clock clock, const hx_closure *c, hx_err *err);
/* f3d_measure that also hands back the median time (ms) its rows report (the cold median with
 * ctx->bench), for rates at the median (bandwidth, TFLOP/s); *median_ms is NaN when there is none.
 * median_ms may be NULL. */
hx_status f3d_measure_median(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                             hx_clock clock, const hx_closure *c, double *median_ms, hx_err *err);

/* Write already collected samples (ms) the same way f3d_measure does (for pipelines that time in
 * their own loop, e.g. several kernels per repetition). */
hx_status f3d_record_times(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                           const double *samples_ms, size_t n, hx_err *err);

/* Device memory rows (B) of one GPU stage, written by f3d_measure after the stage: mem_peak = the
 * arena's high-water mark since the stage started (the buffers the pipeline held while it ran, plus any
 * it allocated meanwhile). Nothing when ctx->arena is NULL or the pipeline has not allocated through it
 * in this case (a pipeline that does not use the arena gets no misleading 0). */
hx_status f3d_record_mem(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant, hx_err *err);
/* The pipeline's totals, kernel "total", variant "all": mem_peak (the arena's high-water mark over the
 * whole pipeline on this case) and mem_used (the largest mem_used of its stages, cudaMemGetInfo, when
 * there was one). Same condition as f3d_record_mem. */
hx_status f3d_record_mem_total(f3d_ctx *ctx, const char *pipeline, hx_err *err);

/* One extra row for the current case (counts, bytes, checks): metric, value, unit. */
hx_status f3d_record(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                     const char *metric, double value, const char *unit, hx_err *err);

/* Run pipeline p on the current case. One that fails because the device memory it asked for was refused
 * (HX_ENOMEM with ctx->arena's refused set: over the arena's capacity, sweep --device-memory, or cudaMalloc out
 * of memory) is skipped, not failed: rows (p, "total", "all") skipped_bytes_needed = the bytes it held plus the
 * request refused (at least what it needed), and skipped_bytes_free = the device memory it had (the arena's
 * capacity, or the device's free memory with the pipeline's buffers counted back in, whichever is smaller;
 * left out when neither is known), a note on stderr, HX_OK and *skipped = 1. Rows of the stages it measured
 * before the refusal stay. Any other status is returned as is (and a refusal after a stop was asked). */
hx_status f3d_pipeline_run(f3d_ctx *ctx, const f3d_pipeline *p, int *skipped, hx_err *err);
/* The device memory the running pipeline has, in bytes: ctx->arena's capacity, and the device's free memory
 * (cudaMemGetInfo, through hx_device_mem_used and ctx->dev->mem_bytes) with what the arena holds counted back
 * in; the smaller of the known ones, 0 when neither is known (no arena, no device). */
size_t f3d_device_avail(const f3d_ctx *ctx);

/* The cases of a sweep that finished, in the run's context (cases_total, cases_done, cases_finished): what an
 * interrupted run keeps and says it kept. f3d_cases_begin writes cases_total and cases_done = 0;
 * f3d_case_finished adds "workload:n_points" to cases_finished (space-separated; past the buffer the list ends
 * in "..." while cases_done stays exact), updates cases_done and checkpoints the results (hx_results_checkpoint),
 * so the case's rows are kept if the run is stopped later. */
typedef struct f3d_cases {
  size_t total, done;
  size_t len;
  char list[8192];
} f3d_cases;
hx_status f3d_cases_begin(f3d_cases *c, hx_results *res, size_t total, hx_err *err);
hx_status f3d_case_finished(f3d_cases *c, hx_results *res, const char *workload, size_t n_points, hx_err *err);

/* dst[i], i < n: amp[(i / run) % namp] x (2u - 1) rounded to dt's bits (round to nearest even), u in [0, 1) the
 * (i % 4)-th 16-bit part of hx_rng_u64(seed, 0, i / 4); drawn in parallel (hx_par_for), the values independent of
 * the thread count, and of dt but for the rounding. The pipelines' random 16-bit inputs (attention's q, k, v: run =
 * H x D, amp {2, 2, 1}; features: amp {1}). */
void f3d_fill_uniform16(uint16_t *dst, size_t n, uint64_t seed, size_t run, const double *amp, size_t namp,
                        net_dtype dt);
/* The run's cuBLAS GEMM ceiling in dt (TFLOP/s; NAN without a bench or its ceilings): the context's
 * ceiling_gemm_<dtype>_tflops, which the study reads back through hx_run_gemm_ceiling_key. */
double f3d_gemm_ceiling(const hx_bench *bench, net_dtype dt);

/* ---- pipelines (one declaration per pipe_<name>.c) ---- */
hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err); /* pipe_workload.c */
hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err);  /* pipe_flash3d.c */
hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err);     /* pipe_ptv3.c */
hx_status f3d_pipe_ptv3_net(f3d_ctx *ctx, hx_err *err);    /* pipe_net.c */
hx_status f3d_pipe_flash3d_net(f3d_ctx *ctx, hx_err *err); /* pipe_net.c */

#endif /* F3D_CLI_SWEEP_H */
