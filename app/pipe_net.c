/*
 * pipe_net.c - the "ptv3-net" and "flash3d-net" sweep pipelines: whole backbone forwards (nets/) on the case's
 * batch, the paper's scalability figure and its table.
 *   ptv3-net     PTv3-m1, nuScenes configuration ("ptv3", 46,159,312 parameters), and on the run's largest size
 *                only unless --ladder the same network over patches of 4096 ("ptv3-patch4096": the attention scope
 *                at which the paper's Table 2 fixes every model); in the gate's run "ptv3" alone
 *   flash3d-net  Flash3D at equal parameters ("flash3d-46m"; "flash3d-46m-fill75": its buckets 75% full at
 *                every size; "flash3d-46m-windows": no re-hash, the public code's 512-row windows past level 0),
 *                at the paper's equal-memory size ("flash3d-129m") and at PTv3's attention span
 *                ("flash3d-46m-scope2": scopes of 2 buckets, 1024 keys a query), these two on the run's largest
 *                size only unless --ladder, and with --ladder the public configuration ("flash3d-public"); in
 *                the regression gate's run (sweep --preset ci) flash3d-46m alone
 * Each forward computes in the sweep's dtype (fp16, or bf16 with sweep --dtype bf16; fp32 accumulation), its floors
 * priced at that dtype's cuBLAS ceiling.
 * Rows, variant = the configuration name ("<name>.graph" for the same forward replayed as one CUDA graph):
 *   forward      the whole forward (f3d_measure: timing, the counters over the whole forward, mem_peak = every
 *                buffer and weight the forward holds, from the sweep's arena), plus params (count), check (1 after
 *                the GPU forward matched the fp32 CPU forward), check_rel_l2, prepare_ms (the untimed set-up) and
 *                mem_<kind> (B: net_gpu_memory's estimate by kind, weights, io, structure, levels, work, scratch;
 *                they sum to what the arena's peak reaches)
 *   <component>  time per component (embed, serialize, psh, cpe, norm, qkv, gather, attn, proj, mlp, pool, unpool,
 *                head): CUDA events at the forward's hook ranges over 5 forwards (20 in the gate's run), one
 *                sample per forward, so each component has a median and a spread; share = its part of the summed
 *                components
 *   counters     per component (kernel = the component; "other" = work of a level or block outside its components)
 *                with the sweep's counters on: the forward's counter rows (sm_active, sm_issue, tensor_active,
 *                dram_read_bw, gpu_time by default) from one more forward under the range profiler, its hook ranges
 *                flattened into one level of user ranges (f3d_net_counters_run; the metric set's replay passes, 1 by
 *                default), each component's ranges summed (rates weighted by time); counter_ranges on "forward"
 *   cost rows    per component (kernel = the component) and on "forward" (their sums), from net_gpu_costs on the
 *                prepared input (the model of nets/net_costs.c): gemm_flops (FLOP), attn_flops (FLOP) and
 *                floor_bytes (B), and total_flops (FLOP, GEMM + attention) on "forward"; the study divides them by
 *                the run's measured cuBLAS, attention and copy rates for each component's floor; with the run's
 *                ceilings also floor_gemm_ms and floor_mem_ms (ms: the floors of the operations bound by GEMM and
 *                by memory at those ceilings, summed operation by operation) and attn_bytes (B, the attention
 *                operations' bytes), from which the study takes each floor
 *   spconv.k3_C64, spconv.k3_C256 (every variant that takes them; ptv3-net, on the run's largest size; not in the
 *                gate's run)
 *                PTv3's k = 3 sparse convolution alone on the case's level-0 map, checked, timed and set against
 *                its roofline (pipe_spconv.c)
 * The check runs before any timing of a configuration, on the first NET_CHECK_POINTS points of each cloud (the CPU
 * forward of a 46M-parameter network costs seconds per thousand points), once per configuration and workload in a
 * sweep (check_model); a configuration that fails it gets check = 0 and is not timed. Without a GPU the pipelines
 * add nothing (the CPU forward is a reference, not a benchmark).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/net_run.h"
#include "app/pipe_spconv.h"
#include "app/sweep.h"
#include "f3d_config.h"

#define NET_CHECK_POINTS 600u
/* Forwards of the breakdown: one sample of each component a forward. The regression gate's run (ctx->gate) takes
 * 20, so that its U test on a component has 4 samples in each of compare's 5 batches; 5 elsewhere, where the medians
 * are for the figures. */
#define NET_BREAKDOWN_RUNS 5u
#define NET_BREAKDOWN_RUNS_GATE 20u

typedef struct net_job {
  net_gpu *g;
  void *exec; /* cudaGraphExec_t of the captured forward */
} net_job;

#if F3D_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

static hx_status job_forward(void *arg, void *stream, hx_err *err) {
  net_job *j = arg;
  return net_gpu_forward(j->g, NULL, (struct CUstream_st *)stream, err);
}
static hx_status job_graph(void *arg, void *stream, hx_err *err) {
  net_job *j = arg;
  cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)j->exec, (cudaStream_t)stream);
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "net: graph launch: %s", cudaGetErrorString(e));
}

/* The first k points of each cloud of the case (unique voxels stay unique). */
static hx_status prefix(wl_batch *out, const wl_batch *bt, size_t k, hx_err *err) {
  wl_cloud cl[F3D_NET_CHECK_MAX_CLOUDS];
  if (bt->b > F3D_NET_CHECK_MAX_CLOUDS)
    return hx_errf(err, HX_EINVAL, "net: %u clouds, at most %d", bt->b, F3D_NET_CHECK_MAX_CLOUDS);
  memset(cl, 0, sizeof cl);
  hx_status st = HX_OK;
  for (uint32_t c = 0; c < bt->b && st == HX_OK; c++) {
    size_t m = bt->offset[c + 1] - bt->offset[c];
    if (m > k) m = k;
    st = wl_cloud_alloc(&cl[c], m, err);
    if (st == HX_OK) memcpy(cl[c].xyz, bt->xyz + bt->offset[c] * 3, m * 3 * sizeof(float));
  }
  if (st == HX_OK) st = wl_batch_from_clouds(out, cl, bt->b, err);
  for (uint32_t c = 0; c < bt->b; c++) wl_cloud_free(&cl[c]);
  return st;
}

/* The check's outcome kept for the sweep (ctx->memo) under pipe/config/workload: 1 found (check, rel_l2 set). */
static int memo_find(const f3d_ctx *ctx, const char *key, double *check, double *rel_l2) {
  if (!ctx->memo) return 0;
  for (size_t i = 0; i < ctx->memo->n; i++)
    if (strcmp(ctx->memo->key[i], key) == 0) {
      *check = ctx->memo->val[i][0], *rel_l2 = ctx->memo->val[i][1];
      return 1;
    }
  return 0;
}
static void memo_keep(f3d_ctx *ctx, const char *key, double check, double rel_l2) {
  f3d_memo *m = ctx->memo;
  if (!m || m->n >= F3D_MEMO_MAX || strlen(key) >= sizeof m->key[0]) return; /* not kept: checked again */
  snprintf(m->key[m->n], sizeof m->key[0], "%s", key);
  m->val[m->n][0] = check, m->val[m->n][1] = rel_l2;
  m->n++;
}

/* Check one configuration on a prefix of the case: 1 pass, 0 fail (reason on stderr), or an error status. The
 * check does not depend on the case's size (NET_CHECK_POINTS points of the first cloud), and its CPU forward is
 * most of a configuration's set-up time (seconds for the 46M and 129M networks), so it runs once per
 * configuration and workload in a sweep; later cases record the kept outcome. */
static hx_status check_model(f3d_ctx *ctx, const char *pipe, const net_config *cfg, const net_params *p,
                             net_dtype dt, hx_err *err) {
  char key[96];
  double kept = 0, kept_l2 = NAN;
  snprintf(key, sizeof key, "%s/%s/%s", pipe, cfg->name, ctx->c.workload ? ctx->c.workload : "");
  if (memo_find(ctx, key, &kept, &kept_l2)) {
    HX_TRY(f3d_record(ctx, pipe, "forward", cfg->name, "check", kept, "bool", err));
    if (isfinite(kept_l2)) HX_TRY(f3d_record(ctx, pipe, "forward", cfg->name, "check_rel_l2", kept_l2, "ratio", err));
    return kept == 1.0 ? HX_OK : HX_ECHECK;
  }
  wl_batch small = {0};
  float *feat = NULL;
  net_input in;
  net_gpu *g = NULL;
  net_alloc al = f3d_net_arena(ctx->arena);
  net_check_report rep = {0};
  hx_err cerr = {HX_OK, ""};
  hx_status st = prefix(&small, ctx->c.cloud, NET_CHECK_POINTS, err);
  if (st == HX_OK) st = f3d_net_input(&in, &feat, &small, ctx->c.voxel, ctx->seed, err);
  if (st == HX_OK) st = net_gpu_create(&g, cfg, p, dt, &al, err);
  if (st == HX_OK) st = net_gpu_prepare(g, &in, (struct CUstream_st *)ctx->stream, err);
  if (st == HX_OK) st = net_gpu_forward(g, NULL, (struct CUstream_st *)ctx->stream, err);
  hx_status cst = st == HX_OK ? net_gpu_check(&rep, g, p, &in, (struct CUstream_st *)ctx->stream, &cerr) : st;
  net_gpu_destroy(g);
  free(feat);
  wl_batch_free(&small);
  if (st != HX_OK) return st;
  if (cst != HX_OK && cst != HX_ECHECK) return hx_errf(err, cst, "%s", cerr.msg);
  if (cst == HX_ECHECK) fprintf(stderr, "f3dbench: %s/%s: check failed, not timed: %s\n", pipe, cfg->name, cerr.msg);
  HX_TRY(f3d_record(ctx, pipe, "forward", cfg->name, "check", cst == HX_OK, "bool", err));
  if (isfinite(rep.rel_l2)) HX_TRY(f3d_record(ctx, pipe, "forward", cfg->name, "check_rel_l2", rep.rel_l2, "ratio", err));
  memo_keep(ctx, key, cst == HX_OK ? 1.0 : 0.0, isfinite(rep.rel_l2) ? rep.rel_l2 : (double)NAN);
  return cst == HX_OK ? HX_OK : HX_ECHECK;
}

/* The counters per component (f3d_net_counters_run: one counter pass of its own, the hook ranges flattened) as
 * rows of each component's key, named as the forward's counter rows, and counter_ranges (the flat ranges decoded)
 * on "forward". Only with the sweep's counters on. A counter pass that fails is said on stderr and leaves these
 * rows out: the timed rows of the configuration are already written, and the sweep goes on. */
static hx_status record_counters(f3d_ctx *ctx, const char *pipe, const char *model, net_gpu *g, size_t hook_ranges,
                                 double forward_ms, hx_err *err) {
  f3d_net_counters nc;
  hx_err cerr = {HX_OK, ""};
  const hx_status st = f3d_net_counters_run(&nc, g, ctx->bench, ctx->stream, hook_ranges, &cerr);
  if (st != HX_OK) {
    fprintf(stderr, "f3dbench: %s/%s: counters per component not recorded: %s\n", pipe, model, cerr.msg);
    return HX_OK;
  }
  /* The components must hold the whole forward: the first device run (H200, 878d5fd) decoded 128 flat ranges of
   * PTv3's ~480 (CUPTI's trace buffers, sized at the range profiler's first session; cupti.cpp now restarts it)
   * and its components summed to 15 of the forward's 43 ms of GPU time. A pass whose components' GPU time is
   * under 90% of the forward's timed median is refused, as a failed check is, never published. */
  double sum_ns = 0.0;
  size_t gt = ctx->bench->n_metrics;
  for (size_t m = 0; m < ctx->bench->n_metrics; m++) {
    const char *mn = ctx->bench->metric_names[m];
    if (strcmp(mn, "gpu__time_duration.sum") == 0 || strcmp(mn, "gpu_time") == 0) gt = m;
  }
  for (size_t k = 0; k < nc.n && gt < ctx->bench->n_metrics; k++) sum_ns += nc.v[k][gt];
  if (gt == ctx->bench->n_metrics || !(forward_ms > 0.0) || sum_ns < 0.9 * forward_ms * 1e6) {
    fprintf(stderr, "f3dbench: %s/%s: counters per component not recorded: their GPU time %.3f ms against the "
            "forward's %.3f ms (%zu flat ranges decoded of %zu)\n", pipe, model, sum_ns / 1e6, forward_ms,
            nc.ranges, (size_t)(1u + 2u * hook_ranges));
    return f3d_record(ctx, pipe, "forward", model, "counter_ranges", (double)nc.ranges, "count", err);
  }
  for (size_t k = 0; k < nc.n; k++) {
    const hx_key key = f3d_key(ctx, pipe, nc.name[k], model);
    HX_TRY(hx_counters_record(ctx->results, &key, ctx->bench->metric_names, nc.v[k], nc.n_metrics, err));
  }
  return f3d_record(ctx, pipe, "forward", model, "counter_ranges", (double)nc.ranges, "count", err);
}

/* The cost rows of a prepared forward (net_gpu_costs: the components, then "forward"); with the run's ceilings also
 * the floors summed operation by operation at them: floor_gemm_ms and floor_mem_ms (the operations each bounds) and
 * attn_bytes (the attention operations' bytes, priced by the study at the attention rate). */
static hx_status record_costs(f3d_ctx *ctx, const char *pipe, const char *model, const net_gpu *g, hx_err *err) {
  net_cost c[NET_COSTS_MAX];
  size_t n = 0;
  /* the ceilings as the context holds them (%.1f), so the study prices the rest of each floor at the same rates */
  net_cost_rates q = {0.0, 0.0};
  const net_cost_rates *qp = NULL;
  const double gemm = f3d_gemm_ceiling(ctx->bench, ctx->dtype); /* the cuBLAS rate of the forward's dtype */
  if (ctx->bench && isfinite(gemm) && isfinite(ctx->bench->ceilings.copy_gbs)) {
    q.gemm_flops_s = round(gemm * 10.0) / 10.0 * 1e12;
    q.copy_bytes_s = round(ctx->bench->ceilings.copy_gbs * 10.0) / 10.0 * 1e9;
    qp = &q;
  }
  HX_TRY(net_gpu_costs(g, qp, c, NET_COSTS_MAX, &n, err));
  for (size_t k = 0; k < n; k++) {
    if (isfinite(c[k].op_gemm_s) && isfinite(c[k].op_mem_s) && isfinite(c[k].attn_bytes)) {
      HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "floor_gemm_ms", c[k].op_gemm_s * 1e3, "ms", err));
      HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "floor_mem_ms", c[k].op_mem_s * 1e3, "ms", err));
      HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "attn_bytes", c[k].attn_bytes, "B", err));
    }
    HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "gemm_flops", c[k].gemm_flops, "FLOP", err));
    HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "attn_flops", c[k].attn_flops, "FLOP", err));
    HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "floor_bytes", c[k].bytes, "B", err));
    if (strcmp(c[k].name, "forward") == 0)
      HX_TRY(f3d_record(ctx, pipe, c[k].name, model, "total_flops", c[k].gemm_flops + c[k].attn_flops, "FLOP", err));
  }
  return HX_OK;
}

static hx_status run_model(f3d_ctx *ctx, const char *pipe, const char *model, hx_err *err) {
  const net_dtype dt = ctx->dtype;
  net_config cfg;
  HX_TRY(net_config_named(&cfg, model, err));
  net_params p = {0};
  hx_status st = net_params_init(&p, &cfg, ctx->seed, err);
  if (st == HX_OK) st = f3d_record(ctx, pipe, "forward", model, "params", (double)net_params_count(&p), "count", err);
  if (st == HX_OK) {
    st = check_model(ctx, pipe, &cfg, &p, dt, err);
    if (st == HX_ECHECK) {
      net_params_free(&p);
      return HX_OK; /* recorded check = 0; the next configuration goes on */
    }
  }
  net_input in;
  float *feat = NULL;
  net_gpu *g = NULL;
  net_alloc al = f3d_net_arena(ctx->arena);
  size_t need = 0;
  cudaGraph_t graph = NULL;
  net_job j = {NULL, NULL};
  if (st == HX_OK) st = f3d_net_input(&in, &feat, ctx->c.cloud, ctx->c.voxel, ctx->seed, err);
  if (st == HX_OK) {
    hx_err ferr = {HX_OK, ""};
    /* the arena is reset before each pipeline: its capacity (sweep --device-memory, 0: none) is the forward's cap */
    net_mem parts;
    hx_status fst = f3d_net_fits(&need, &parts, &cfg, &in, dt, ctx->arena->capacity, &ferr);
    /* where the estimate goes, by kind (also for a forward refused below: what it would have held) */
    for (int k = 0; k < NET_MEM_KINDS && (fst == HX_OK || fst == HX_ENOMEM) && st == HX_OK; k++) {
      char metric[32];
      snprintf(metric, sizeof metric, "mem_%s", net_mem_kind_name((net_mem_kind)k));
      st = f3d_record(ctx, pipe, "forward", model, metric, (double)parts.kind[k], "B", err);
    }
    if (st == HX_OK && fst == HX_ENOMEM) { /* skipped with the bytes it needed and what was free, recorded in the run */
      const size_t avail = f3d_device_avail(ctx); /* the device's free memory, or less under sweep --device-memory */
      fprintf(stderr, "f3dbench: %s/%s: %s\n", pipe, model, ferr.msg);
      st = f3d_record(ctx, pipe, "forward", model, "skipped_bytes_needed", (double)need, "B", err);
      if (st == HX_OK && avail) st = f3d_record(ctx, pipe, "forward", model, "skipped_bytes_free", (double)avail, "B", err);
      free(feat);
      net_params_free(&p);
      return st;
    }
    if (st == HX_OK && fst != HX_OK) st = hx_errf(err, fst, "%s", ferr.msg);
  }
  if (st == HX_OK) st = net_gpu_create(&g, &cfg, &p, dt, &al, err);
  const double t0 = hx_now_ms();
  if (st == HX_OK) st = net_gpu_prepare(g, &in, (struct CUstream_st *)ctx->stream, err);
  if (st == HX_OK && cudaStreamSynchronize((cudaStream_t)ctx->stream) != cudaSuccess)
    st = hx_errf(err, HX_ECUDA, "%s/%s: prepare failed on the device", pipe, model);
  if (st == HX_OK) st = f3d_record(ctx, pipe, "forward", model, "prepare_ms", hx_now_ms() - t0, "ms", err);
  j.g = g;
  hx_closure c = {.run = job_forward, .arg = &j};
  double forward_ms = NAN;
  if (st == HX_OK) st = f3d_measure_median(ctx, pipe, "forward", model, HX_CLOCK_GPU, &c, &forward_ms, err);
  if (st == HX_OK && net_gpu_graphable(g)) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) {
      st = net_gpu_forward(g, NULL, (struct CUstream_st *)s, err);
      cudaError_t e2 = cudaStreamEndCapture(s, &graph);
      if (e2 != cudaSuccess && st == HX_OK) e = e2;
    }
    if (st == HX_OK && e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (st == HX_OK && e != cudaSuccess) st = hx_errf(err, HX_ECUDA, "%s/%s: graph: %s", pipe, model, cudaGetErrorString(e));
    j.exec = exec;
    char v[64];
    snprintf(v, sizeof v, "%s.graph", model);
    hx_closure cg = {.run = job_graph, .arg = &j};
    if (st == HX_OK) st = f3d_measure(ctx, pipe, "forward", v, HX_CLOCK_GPU, &cg, err);
  }
  /* components: one sample per forward for each, nbd forwards */
  const unsigned nbd = ctx->gate ? NET_BREAKDOWN_RUNS_GATE : NET_BREAKDOWN_RUNS;
  f3d_net_breakdown *bd = st == HX_OK ? calloc(nbd, sizeof *bd) : NULL;
  if (st == HX_OK && !bd) st = hx_errf(err, HX_ENOMEM, "%s/%s: breakdown: out of host memory", pipe, model);
  for (unsigned r = 0; r < nbd && st == HX_OK; r++) st = f3d_net_breakdown_run(&bd[r], g, ctx->stream, err);
  if (st == HX_OK) {
    double total = 0;
    for (size_t k = 0; k < bd[0].n; k++) total += bd[0].ms[k];
    for (size_t k = 0; k < bd[0].n && st == HX_OK; k++) {
      double samples[NET_BREAKDOWN_RUNS_GATE];
      for (unsigned r = 0; r < nbd; r++) {
        samples[r] = 0;
        for (size_t q = 0; q < bd[r].n; q++)
          if (strcmp(bd[r].name[q], bd[0].name[k]) == 0) samples[r] = bd[r].ms[q];
      }
      st = f3d_record_times(ctx, pipe, bd[0].name[k], model, samples, nbd, err);
      if (st == HX_OK && total > 0) st = f3d_record(ctx, pipe, bd[0].name[k], model, "share", bd[0].ms[k] / total, "ratio", err);
    }
    /* by part of the network: metric "part:<part>" of each component, the median over the forwards (ms) */
    for (size_t q = 0; q < bd[0].n_parts && st == HX_OK; q++)
      for (size_t k = 0; k < bd[0].n && st == HX_OK; k++) {
        if (!(bd[0].part_ms[q][k] > 0.0)) continue;
        double samples[NET_BREAKDOWN_RUNS_GATE];
        for (unsigned r = 0; r < nbd; r++) {
          samples[r] = 0;
          for (size_t pq = 0; pq < bd[r].n_parts; pq++)
            for (size_t cj = 0; cj < bd[r].n; cj++)
              if (!strcmp(bd[r].part[pq], bd[0].part[q]) && !strcmp(bd[r].name[cj], bd[0].name[k]))
                samples[r] = bd[r].part_ms[pq][cj];
        }
        char metric[24];
        snprintf(metric, sizeof metric, "part:%s", bd[0].part[q]);
        st = f3d_record(ctx, pipe, bd[0].name[k], model, metric, hx_stats_median(samples, nbd), "ms", err);
      }
  }
  if (st == HX_OK) st = record_costs(ctx, pipe, model, g, err);
  if (st == HX_OK && ctx->bench && ctx->bench->counters)
    st = record_counters(ctx, pipe, model, g, bd[0].ranges, forward_ms, err);
  free(bd);
  if (j.exec) cudaGraphExecDestroy((cudaGraphExec_t)j.exec);
  if (graph) cudaGraphDestroy(graph);
  net_gpu_destroy(g);
  free(feat);
  net_params_free(&p);
  return st;
}
#endif

/* The models in turn, then (spconv) the k = 3 convolution alone. */
static hx_status run_models(f3d_ctx *ctx, const char *pipe, const char *const *models, size_t n, int spconv,
                            hx_err *err) {
  if (!ctx->have_gpu) return HX_OK;
#if F3D_HAVE_CUDA
  /* Without a bench (--timing basic) the sweep gives no stream; the forward's set-up, check, graph capture and
   * breakdown, and the convolution stage, need one that is not the legacy default stream (which cannot be
   * captured): the pipeline's own. */
  cudaStream_t own = NULL;
  f3d_ctx local = *ctx;
  if (!local.stream) {
    cudaError_t e = cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: stream: %s", pipe, cudaGetErrorString(e));
    local.stream = own;
  }
  hx_status st = HX_OK;
  for (size_t i = 0; i < n && st == HX_OK; i++) st = run_model(&local, pipe, models[i], err);
  if (st == HX_OK && spconv) st = f3d_spconv_stage(&local, pipe, err);
  ctx->mem_used_max = local.mem_used_max;
  if (own) cudaStreamDestroy(own);
  return st;
#else
  (void)pipe, (void)models, (void)n, (void)spconv, (void)err;
  return HX_OK;
#endif
}

/* PTv3-m1 on every case; ptv3-patch4096 (the same network and weights over patches of 4096, the paper's Table 2
 * scope, ~50 ms a forward at 600k) on the run's largest size (every case with --ladder; not in the gate's run); then
 * the k = 3 sparse convolution alone (pipe_spconv.c: the run's largest size, every case with --ladder; not in the
 * gate's run, whose forward holds the main path's convolutions). */
hx_status f3d_pipe_ptv3_net(f3d_ctx *ctx, hx_err *err) {
  const char *models[2];
  size_t n = 0;
  models[n++] = "ptv3";
  if (!ctx->gate && (ctx->ladder || ctx->c.n_points >= ctx->max_points)) models[n++] = "ptv3-patch4096";
  return run_models(ctx, "ptv3-net", models, n, !ctx->gate, err);
}

/* flash3d-46m on every case (the paper's main figure is at equal parameters), flash3d-46m-fill75 (the same
 * network, buckets 75% full at every size: the latency at a fixed fill beside the public rule's steps) and
 * flash3d-46m-windows (the same network on the public code's layout: no re-hash, 512-row windows); flash3d-129m,
 * the equal-memory row of the paper's table, on the run's largest size (every case with --ladder): at 171 ms a
 * forward and 7 CPU-seconds a check it would otherwise cost the default run about a minute; flash3d-46m-scope2
 * (the same network attending to 1024 keys a query, PTv3's patch, not the paper's 4096) there too: what the
 * attention span alone is worth; flash3d-public with --ladder. */
hx_status f3d_pipe_flash3d_net(f3d_ctx *ctx, hx_err *err) {
  const char *models[6];
  size_t n = 0;
  models[n++] = "flash3d-46m";
  if (ctx->gate) return run_models(ctx, "flash3d-net", models, n, 0, err); /* the gate: the paper's configuration */
  models[n++] = "flash3d-46m-fill75";
  models[n++] = "flash3d-46m-windows";
  if (ctx->ladder || ctx->c.n_points >= ctx->max_points) models[n++] = "flash3d-46m-scope2";
  if (ctx->ladder || ctx->c.n_points >= ctx->max_points) models[n++] = "flash3d-129m";
  if (ctx->ladder) models[n++] = "flash3d-public";
  return run_models(ctx, "flash3d-net", models, n, 0, err);
}
