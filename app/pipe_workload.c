/*
 * pipe_workload.c - the "workload" pipeline: what it costs to prepare the inputs every other pipeline
 * consumes (all on the CPU, variant "cpu"). Per case, on cloud 0 of the batch (n_points points):
 *   generate     wl_generate of n raw points (synthetic workloads)
 *   read_input   wl_read of the recorded file (recorded workloads)
 *   voxel_dedup  one-point-per-voxel deduplication of the n raw points (or of the recorded cloud)
 *   make_exact   the whole preparation: generate or resample, dedup, exactly n points
 *   read_ply     wl_read of the case cloud written as binary PLY (file in the page cache: parse cost)
 *   read_bin     the same for the KITTI-style .bin
 * plus count rows: voxel_dedup points_in / points_out.
 * Invariant: every closure frees what its previous repetition produced in reset(), untimed, so a
 * timed repetition measures allocation + work but never the previous repetition's free().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/sweep.h"

typedef enum job { JOB_GENERATE, JOB_DEDUP, JOB_EXACT, JOB_READ } job;

typedef struct wl_job {
  job what;
  const f3d_ctx *ctx;
  const wl_cloud *in; /* JOB_DEDUP */
  const char *path;   /* JOB_READ */
  wl_cloud out;
  size_t dropped;
} wl_job;

static hx_status job_reset(void *arg, hx_err *err) {
  (void)err;
  wl_cloud_free(&((wl_job *)arg)->out);
  return HX_OK;
}

static hx_status job_run(void *arg, void *stream, hx_err *err) {
  (void)stream;
  wl_job *j = arg;
  const f3d_case *c = &j->ctx->c;
  switch (j->what) {
  case JOB_GENERATE:
    return wl_generate(&j->out, c->kind, c->n_points, j->ctx->seed, err);
  case JOB_DEDUP:
    return wl_voxel_dedup(&j->out, j->in, c->voxel, &j->dropped, err);
  case JOB_EXACT:
    return wl_make_exact(&j->out, c->kind, c->source, c->n_points, c->voxel, j->ctx->seed, NULL, err);
  case JOB_READ:
    return wl_read(&j->out, j->path, WL_FMT_AUTO, err);
  }
  return hx_errf(err, HX_EINVAL, "workload pipeline: unknown job");
}

static hx_status measure(f3d_ctx *ctx, wl_job *j, const char *kernel, hx_err *err) {
  hx_closure c = {job_run, job_reset, j, 0, 0};
  hx_status st = f3d_measure(ctx, "workload", kernel, "cpu", HX_CLOCK_CPU, &c, err);
  wl_cloud_free(&j->out);
  return st;
}

/* Write cloud 0 as PLY and .bin into a private temporary directory and time reading each back. */
static hx_status measure_reads(f3d_ctx *ctx, const wl_cloud *cloud0, hx_err *err) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096], ply[4200], bin[4200];
  snprintf(dir, sizeof dir, "%s/f3d-read-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return hx_errf(err, HX_EIO, "%s: cannot create a temporary directory", dir);
  snprintf(ply, sizeof ply, "%s/cloud.ply", dir);
  snprintf(bin, sizeof bin, "%s/cloud.bin", dir);
  wl_job j = {JOB_READ, ctx, NULL, NULL, {0, NULL, 0, NULL}, 0};
  hx_status st = wl_write_ply(cloud0, ply, err);
  if (st == HX_OK) st = wl_write_bin(cloud0, bin, err);
  if (st == HX_OK) j.path = ply, st = measure(ctx, &j, "read_ply", err);
  if (st == HX_OK) j.path = bin, st = measure(ctx, &j, "read_bin", err);
  unlink(ply);
  unlink(bin);
  rmdir(dir);
  return st;
}

hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err) {
  /* Errors (including "interrupted" from f3d_measure) are returned as they are, without HX_TRY's
   * trace: the sweep prints the message once. */
  const f3d_case *c = &ctx->c;
  wl_job j = {JOB_GENERATE, ctx, NULL, NULL, {0, NULL, 0, NULL}, 0};
  wl_cloud raw = {0, NULL, 0, NULL};
  const wl_cloud *dedup_in = c->source;
  hx_status st;
  if (c->source) {
    j.what = JOB_READ;
    j.path = c->source_path;
    st = measure(ctx, &j, "read_input", err);
  } else {
    st = measure(ctx, &j, "generate", err);
    if (st == HX_OK) st = wl_generate(&raw, c->kind, c->n_points, ctx->seed, err);
    dedup_in = &raw;
  }
  if (st == HX_OK) {
    j.what = JOB_DEDUP;
    j.in = dedup_in;
    st = measure(ctx, &j, "voxel_dedup", err);
  }
  if (st == HX_OK) st = f3d_record(ctx, "workload", "voxel_dedup", "cpu", "points_in", (double)dedup_in->n, "count", err);
  if (st == HX_OK)
    st = f3d_record(ctx, "workload", "voxel_dedup", "cpu", "points_out", (double)(dedup_in->n - j.dropped), "count", err);
  wl_cloud_free(&raw);
  if (st == HX_OK) {
    j.what = JOB_EXACT;
    st = measure(ctx, &j, "make_exact", err);
  }
  if (st != HX_OK) return st;
  wl_cloud cloud0 = {c->n_points, c->cloud->xyz, 0, NULL}; /* a view of cloud 0: not freed here */
  return measure_reads(ctx, &cloud0, err);
}
