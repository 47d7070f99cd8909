/*
 * sweep.h - the pipeline registry of `f3dbench sweep` and the context one sweep case hands a pipeline.
 *
 * A sweep walks workloads x sizes; for each case it builds the host clouds once (exactly n_points per
 * cloud after one-point-per-voxel deduplication, `batch` clouds concatenated) and calls every selected
 * pipeline's run function with an f3d_ctx. A pipeline times its stages and adds result rows; it owns
 * nothing in the context and must free what it allocates before returning.
 *
 * Adding a pipeline (for example PTv3 or Flash3D):
 *   1. write harness/cli/pipe_<name>.c with
 *        hx_status f3d_pipe_<name>(f3d_ctx *ctx, hx_err *err);
 *      and declare it below in the "pipelines" list (one line);
 *   2. add one line {"<name>", "what it measures", f3d_pipe_<name>} to f3d_pipelines[] in sweep.c;
 *   3. append pipe_<name>.c to f3dbench_sources in harness/cli/meson.build.
 * Rows are keyed (workload, n_points, batch, pipeline, kernel, variant, metric). Use variant "cpu" for a
 * CPU reference and "v0", "v1", ... for GPU variants (the numbers of the kernel's variant table). When
 * ctx->have_gpu is 0 (no device, or a CPU-only build) a pipeline runs its CPU references only, labelled
 * "cpu", or returns HX_OK after adding nothing; it never fails just because there is no GPU.
 *
 * Typical stage, with the helper below doing warm-up, repetitions, summary and raw samples in one call:
 *   struct my_args a = {...};
 *   hx_closure c = {my_run, NULL, &a};   // hx_status my_run(void *arg, void *stream, hx_err *err)
 *   HX_TRY(f3d_measure(ctx, "ptv3", "serialize", "v1", HX_CLOCK_GPU, &c, err));
 */
#ifndef F3D_CLI_SWEEP_H
#define F3D_CLI_SWEEP_H

#include <signal.h>

#include "harness/harness.h"
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

/* Per-case context: everything a pipeline may use. Read-only for pipelines except through the helpers. */
typedef struct f3d_ctx {
  hx_results *results;        /* where rows go (hx_results_add / f3d_measure) */
  hx_timing_opts timing;      /* warm-up and repetitions (--reps) */
  int have_gpu;               /* 1 when a CUDA device is usable in this build */
  const hx_device_info *dev;  /* the device used, NULL when have_gpu == 0 */
  void *stream;               /* NULL for now: the GPU clock then creates a non-default stream per
                               * measurement and hands it to run(); enqueue timed work on the stream
                               * run() receives, never on the legacy default stream */
  uint64_t seed;              /* sweep seed (--seed); derive per-stage seeds with hx_rng_u64 */
  int verbose;                /* -v count: 0 quiet; pipelines may print detail on stderr when > 0 */
  f3d_case c;                 /* the case being measured */
  const volatile sig_atomic_t *stop; /* non-zero once SIGINT/SIGTERM arrived: f3d_measure returns
                                      * at once, the sweep then marks the run interrupted */
} f3d_ctx;

typedef hx_status (*f3d_pipe_fn)(f3d_ctx *ctx, hx_err *err);

typedef struct f3d_pipeline {
  const char *name;        /* --pipelines name and the `pipeline` column */
  const char *description; /* one line for `f3dbench sweep --help` */
  f3d_pipe_fn run;
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

/* Time closure c with ctx->timing on the given clock (GPU: on ctx->stream) and write, for
 * (pipeline, kernel, variant): results rows time_median, time_mean, time_std, time_min, time_max (ms)
 * and reps (count), plus every raw sample to samples.csv as metric "time" (ms). */
hx_status f3d_measure(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                      hx_clock clock, const hx_closure *c, hx_err *err);

/* Write already collected samples (ms) the same way f3d_measure does (for pipelines that time in
 * their own loop, e.g. several kernels per repetition). */
hx_status f3d_record_times(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                           const double *samples_ms, size_t n, hx_err *err);

/* One extra row for the current case (counts, bytes, checks): metric, value, unit. */
hx_status f3d_record(f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                     const char *metric, double value, const char *unit, hx_err *err);

/* ---- pipelines (one declaration per pipe_<name>.c) ---- */
hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err); /* pipe_workload.c */
hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err);  /* pipe_flash3d.c */
hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err);     /* pipe_ptv3.c */

#endif /* F3D_CLI_SWEEP_H */
