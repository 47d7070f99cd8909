/*
 * psh_bench.c - short timing table of Flash3D PSH and in-bucket pooling on one GPU (run by
 * lab/kernels/psh-device.sh). For each size (default 100k..600k, one synthetic lidar cloud) and hash: every PSH
 * variant is first run once and checked (psh_check: invariants, counters sum to n; v2 phase-1 count equal to the
 * CPU reference's), then timed by the harness's GPU clock (hx_time: CUDA events around each call on the bench's
 * stream, 3 warm-ups discarded; the median of REPS by hx_stats_describe, the mean of the middle two for an even
 * REPS, where this table printed the upper middle one before); the output of the last graph replay is checked
 * again. A failing variant is reported and not timed. Then pooling, every pooling variant (bitwise
 * checks: test_psh_gpu and the sweep): plan + assign, and the reduction of C-channel fp32 and bf16 features,
 * with bytes moved and GB/s of the whole (assign + reduce) and of the reduction alone, next to a
 * device-to-device copy of the same bytes as the bandwidth yardstick; each pooling figure both as launched from
 * the host and as one CUDA graph.
 * Bytes counted for the whole PSH (napkin, per point): bbox read 12, first pass read 12 + write 8, scatter
 * read 8 + 12, write 8 + 12 (slot, perm, xyz) = 72 B/point (probing traffic of overflow points not counted).
 * psh_us: the launch sequence from the host each time; graph_us: the same captured as one CUDA graph
 * (GB/s and the naive/two-stage ratios use the graph time). For v5-v7 (one cooperative kernel) a second
 * line gives the phase boundaries of the last graph run from the kernel's own %globaltimer stamps.
 * usage: psh_bench [N_LIST (comma, default 100000,200000,400000,600000)] [REPS (20)] [S (512)] [C (64)]
 * Environment: F3D_PSH_VARIANTS=v1,v8 times only those PSH variants (v1 stays the ratios' base when listed);
 * F3D_BENCH_POOL=0 skips the feature scatter and pooling lines; F3D_POOL_VARIANTS=v5,v7 times only those
 * pooling variants (pooling v7's assigner blocks per SM are kAssignPerSm7 in kernels/bpool.cu, 4 of 8: edit and
 * rebuild to try others);
 * F3D_BENCH_COLD=1 also times each PSH graph with the L2 flushed before every replay (a memset of twice the L2,
 * the sweep's cold protocol: the host submits the replay while the flush runs, so its launch cost is mostly
 * hidden there, unlike in the hot figure) and prints the phase stamps of that cold run;
 * F3D_BENCH_HASHES=xor-mod,xor-div times only those hashes (pooling runs on the xor-div buckets, so keep it
 * listed for the pooling lines); F3D_POOL_RHOS=8 times only those pooling rhos (default 2,4,8);
 * F3D_BENCH_CLOUD=raw times wl_generate's raw cloud (several points per 5 cm voxel), the cloud of every psh_bench
 * figure before a356b24; the default, "sweep", is the sweep's own cloud (wl_make_exact: exactly n
 * points after one-point-per-voxel dedup at 0.05 m, seed 1), the cloud of the README's and docs/' figures.
 * Before the hashes of each size, a "floor" line (psh_floor_variant: v10's launch reading the coordinates, two grid
 * barriers, 20 B/point written coalesced (slot, perm, xyz_out), nothing computed; checked bit for bit against psh_floor_cpu on poisoned
 * outputs first) with the same columns and, with F3D_BENCH_COLD=1, its cold graph: the sweep's psh.floor row, in
 * the same call as the variants; F3D_PSH_VARIANTS without "floor" leaves it out.
 * F3D_PSH_V8_BT=1 runs v8-v10's builds that stamp every block's phases (psh_params.trace_blocks) and prints the
 * stamps (psh_gpu_block_trace); their times are those of the stamped builds.
 * F3D_BENCH_SEED=S sets the PSH seed (the probe order); the default is the sweep's per-hash seed,
 * hx_rng_u64(1, 0xF3D, hash) (pipe_flash3d.c), with the sweep's cloud, and psh_params_default's 3407 with the raw
 * cloud. A grid-wide queue (d0f16b2) won 7-16% here with seed 3407 on both clouds but lost 8-20% in the sweep
 * on the same cloud, whose seed differs: with the sweep's seed here it lost too (4574d68, docs/measurement.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "workloads/workloads.h"

typedef hx_status (*step_fn)(void *arg, cudaStream_t s, hx_err *err);

/* One step as the harness's closure: run() calls it on the stream hx_time times; reset() (untimed, before the
 * start event on the same stream) queues the L2 flush when there is one. */
typedef struct timed_step {
  step_fn fn;
  void *arg;
  void *flush;
  size_t flush_bytes;
  cudaStream_t s;
  unsigned flushes; /* the flush byte changes every time */
} timed_step;

static hx_status timed_run(void *a, void *stream, hx_err *err) {
  timed_step *t = a;
  return t->fn(t->arg, (cudaStream_t)stream, err);
}
static hx_status timed_flush(void *a, hx_err *err) {
  timed_step *t = a;
  if (cudaMemsetAsync(t->flush, (int)(t->flushes++ & 0xFF), t->flush_bytes, t->s) != cudaSuccess)
    return hx_errf(err, HX_ECUDA, "L2 flush (memset of %zu bytes) failed", t->flush_bytes);
  return HX_OK;
}

/* median of reps event-timed calls, in microseconds; -1 on failure. flush != NULL: before each call (outside
 * the timed events) the L2 is flushed by a memset of flush_bytes on the stream, as the sweep's cold samples do
 * (which leaves the L2 full of dirty lines that the timed call's writes evict) */
static double time_us_f(step_fn fn, void *arg, int reps, cudaStream_t s, void *flush, size_t flush_bytes) {
  timed_step t = {fn, arg, flush, flush_bytes, s, 0};
  const hx_closure c = {timed_run, flush ? timed_flush : NULL, &t, 0.0, 0.0};
  const hx_timing_opts o = {3, reps > 0 ? (uint32_t)reps : 0u};
  double *ms = malloc((size_t)(reps > 0 ? reps : 1) * sizeof *ms);
  hx_err err = {HX_OK, "no memory"};
  hx_stats_desc d;
  double med = -1;
  if (ms && hx_time(ms, HX_CLOCK_GPU, &o, &c, s, &err) == HX_OK && hx_stats_describe(&d, ms, o.reps, &err) == HX_OK)
    med = 1000.0 * d.median;
  if (med < 0) fprintf(stderr, "psh_bench: %s\n", err.msg);
  free(ms);
  return med;
}

static double time_us(step_fn fn, void *arg, int reps, cudaStream_t s) { return time_us_f(fn, arg, reps, s, NULL, 0); }

static hx_status st_launch_graph(void *arg, cudaStream_t s, hx_err *err) {
  if (cudaGraphLaunch(*(cudaGraphExec_t *)arg, s) != cudaSuccess) return hx_errf(err, HX_ECUDA, "graph launch failed");
  return HX_OK;
}

/* time_us for fn captured once as a CUDA graph and replayed: the device time without the host's per-launch
 * cost (fn must be capturable: no host round trip); -1 on failure */
static double time_graph_us(step_fn fn, void *arg, int reps, cudaStream_t s) {
  cudaGraph_t gr = NULL;
  cudaGraphExec_t ex = NULL;
  hx_err err = {0};
  double med = -1;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) goto out;
  hx_status st = fn(arg, s, &err);
  if (cudaStreamEndCapture(s, &gr) != cudaSuccess || st != HX_OK) goto out;
  /* node priorities kept: pooling v6 puts one half's assignment on a higher-priority stream */
  if (cudaGraphInstantiateWithFlags(&ex, gr, cudaGraphInstantiateFlagUseNodePriority) != cudaSuccess) goto out;
  med = time_us(st_launch_graph, &ex, reps, s);
out:
  if (med < 0) fprintf(stderr, "psh_bench: graph timing failed %s\n", err.msg);
  if (ex) cudaGraphExecDestroy(ex);
  if (gr) cudaGraphDestroy(gr);
  return med;
}

typedef struct run_arg {
  psh_gpu *g;
  const psh_variant *v;
  const bpool_variant *pv;
  bpool_op op;
  psh_dtype dt;
  void *d_src, *d_dst;
  size_t bytes;
} run_arg;

static hx_status st_psh(void *arg, cudaStream_t s, hx_err *err) {
  run_arg *a = arg;
  return psh_gpu_run(a->g, a->v, s, err);
}
static hx_status st_graph(void *arg, cudaStream_t s, hx_err *err) {
  run_arg *a = arg;
  return psh_gpu_run_graph(a->g, a->v, s, err);
}
static hx_status st_feat(void *arg, cudaStream_t s, hx_err *err) {
  run_arg *a = arg;
  return psh_gpu_scatter_feat(a->g, a->dt, s, err);
}
static hx_status st_pool(void *arg, cudaStream_t s, hx_err *err) {
  run_arg *a = arg;
  return psh_gpu_pool(a->g, a->pv, a->op, a->dt, s, err);
}
/* The floor line of one size (see the header): 0 when it was timed or v10 has no launch of its own here (said),
 * 1 when it failed. nb as the hashes' (the shared memory v10 takes depends on it). */
static int bench_floor(const psh_in *hin, uint32_t nb, uint32_t S, int reps, cudaStream_t s, void *d_flush,
                       size_t flush_bytes) {
  const uint32_t n = hin->n;
  psh_params p;
  psh_params_default(&p);
  p.cap = S;
  p.nb = nb;
  psh_gpu *g = NULL;
  hx_err err = {0};
  if (psh_gpu_create(&g, hin, &p, 0, &err) != HX_OK) {
    printf("%-5s create failed: %s\n", "floor", err.msg);
    return 1;
  }
  const psh_variant *fv = psh_floor_variant();
  uint32_t *got[2];
  for (int k = 0; k < 2; k++) got[k] = malloc((size_t)n * 4 + 4);
  float *gx = malloc((size_t)n * 12 + 12);
  psh_out go = {NULL, NULL, NULL, NULL, got[0], got[1], gx, NULL}; /* no bucket table: no pair */
  run_arg a = {g, fv, NULL, BPOOL_MEAN, PSH_F32, NULL, NULL, 0};
  double us = 0, gus = 0;
  hx_status st = got[0] && got[1] && gx ? HX_OK : hx_errf(&err, HX_ENOMEM, "no host memory");
  /* one plain run checked, then the last graph replay of the timing checked (outputs poisoned before each) */
  if (st == HX_OK) st = psh_gpu_poison(g, s, &err);
  if (st == HX_OK) st = psh_gpu_run(g, fv, s, &err);
  if (st == HX_OK) st = psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err);
  if (st == HX_OK) st = psh_floor_check(&go, hin, &err);
  if (st == HX_OK) {
    us = time_us(st_psh, &a, reps, s);
    st = psh_gpu_poison(g, s, &err);
  }
  if (st == HX_OK) gus = time_us(st_graph, &a, reps, s);
  if (st == HX_OK) st = psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err);
  if (st == HX_OK) st = psh_floor_check(&go, hin, &err);
  if (st == HX_OK) {
    printf("%-5s %-11s %6u %10.1f %9.1f %9.1f (v10's launch, data movement only: 32 B/point)\n", "floor", "-", nb, us,
           gus, gus > 0 ? 32.0 * n / (gus * 1e3) : 0.0);
    if (d_flush)
      printf("  floor cold graph (L2 flushed before each replay): %.1f us\n",
             time_us_f(st_graph, &a, reps, s, d_flush, flush_bytes));
  } else if (st == HX_EUNSUPPORTED) {
    printf("%-5s %-11s not timed: %s\n", "floor", "-", err.msg);
  } else {
    printf("%-5s CHECK FAILED (not timed): %s\n", "floor", err.msg);
  }
  for (int k = 0; k < 2; k++) free(got[k]);
  free(gx);
  psh_gpu_free(g);
  return st != HX_OK && st != HX_EUNSUPPORTED;
}

static hx_status st_copy(void *arg, cudaStream_t s, hx_err *err) {
  run_arg *a = arg;
  if (cudaMemcpyAsync(a->d_dst, a->d_src, a->bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
    return hx_errf(err, HX_ECUDA, "copy failed");
  return HX_OK;
}

int main(int argc, char **argv) {
  const char *list = argc > 1 ? argv[1] : "100000,200000,400000,600000";
  const int reps = argc > 2 ? atoi(argv[2]) : 20;
  const uint32_t S = argc > 3 ? (uint32_t)atoi(argv[3]) : 512, C = argc > 4 ? (uint32_t)atoi(argv[4]) : 64;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "psh_bench: no CUDA device\n");
    return 77;
  }
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("# device %s, %d SMs; S=%u, C=%u, reps %d (median); times in us\n", prop.name, prop.multiProcessorCount, S, C, reps);
  cudaStream_t s;
  cudaStreamCreate(&s);
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  const char *only = getenv("F3D_PSH_VARIANTS");
  const char *pool_env = getenv("F3D_BENCH_POOL");
  const int pool_on = !(pool_env && strcmp(pool_env, "0") == 0);
  const char *hashes = getenv("F3D_BENCH_HASHES"), *rhos = getenv("F3D_POOL_RHOS");
  const char *cold_env = getenv("F3D_BENCH_COLD"), *cloud_env = getenv("F3D_BENCH_CLOUD");
  const int raw = cloud_env && strcmp(cloud_env, "raw") == 0;
  const char *seed_env = getenv("F3D_BENCH_SEED");
  const char *bt_env = getenv("F3D_PSH_V8_BT"); /* 1: v8-v10 run their block-stamped builds (psh_params.trace_blocks) */
  const uint32_t trace_blocks = bt_env && bt_env[0] == '1' ? 1u : 0u;
  char *seed_end = NULL;
  const unsigned long long seed_val = seed_env ? strtoull(seed_env, &seed_end, 0) : 0;
  if (seed_env && (!*seed_env || *seed_end)) {
    fprintf(stderr, "psh_bench: F3D_BENCH_SEED must be an unsigned integer, not '%s'\n", seed_env);
    return 2;
  }
  if (cloud_env && !raw && strcmp(cloud_env, "sweep") != 0) {
    fprintf(stderr, "psh_bench: F3D_BENCH_CLOUD must be raw or sweep, not '%s'\n", cloud_env);
    return 2;
  }
  void *d_flush = NULL;
  const size_t flush_bytes = 2 * (size_t)(prop.l2CacheSize > 0 ? prop.l2CacheSize : 64 << 20);
  if (cold_env && strcmp(cold_env, "1") == 0 && cudaMalloc(&d_flush, flush_bytes) != cudaSuccess) {
    fprintf(stderr, "psh_bench: no memory for the %zu-byte L2 flush buffer\n", flush_bytes);
    return 1;
  }
  const bpool_variant *pv = bpool_variant_find("v1");
  char *dup = strdup(list);
  int failures = 0;
  for (char *tok = strtok(dup, ","); tok; tok = strtok(NULL, ",")) {
    const uint32_t n = (uint32_t)strtoul(tok, NULL, 10);
    wl_cloud cloud = {0};
    hx_err err = {0};
    const hx_status wst = raw ? wl_generate(&cloud, WL_LIDAR, n, 1, &err)
                              : wl_make_exact(&cloud, WL_LIDAR, NULL, n, 0.05, 1, NULL, &err);
    if (wst != HX_OK) {
      fprintf(stderr, "psh_bench: %s: %s\n", raw ? "wl_generate" : "wl_make_exact", err.msg);
      return 1;
    }
    uint32_t off[2] = {0, n};
    psh_in hin = {cloud.xyz, off, 1, n};
    printf("\n## n = %u (lidar, one cloud, %s; PSH seed %s)\n", n, raw ? "raw: wl_generate" : "the sweep's: deduplicated at 0.05 m",
           seed_env ? seed_env : raw ? "3407" : "the sweep's per hash");
    printf("%-5s %-11s %6s %10s %9s %9s %9s %9s %9s %8s\n", "var", "hash", "nb", "psh_us", "graph_us", "GB/s", "first",
           "probe", "overflow", "fullest");
    if (!only || hx_name_listed(only, "floor"))
      failures += bench_floor(&hin, psh_auto_buckets(n, S), S, reps, s, d_flush, flush_bytes);
    for (int h = 0; h < PSH_HASH_COUNT; h++) {
      if (hashes && !hx_name_listed(hashes, psh_hash_name((psh_hash)h))) continue;
      psh_params p;
      psh_params_default(&p);
      p.hash = (psh_hash)h;
      if (seed_env) p.seed = seed_val;
      else if (!raw) p.seed = hx_rng_u64(1, 0xF3D, (uint64_t)h); /* the sweep's (pipe_flash3d.c, case_params) */
      p.cap = S;
      p.nb = psh_auto_buckets(n, S);
      p.trace_blocks = trace_blocks;
      /* CPU reference counters (phase 1 is order free) */
      uint32_t *hb = malloc((size_t)n * 4), *ho = malloc((size_t)n * 4), *hs = malloc((size_t)n * 4),
               *hp = malloc((size_t)n * 4), *hc = malloc((size_t)p.nb * 4), *hst = malloc((size_t)p.nb * 4);
      float *hx = malloc((size_t)n * 12);
      uint32_t cref[PSH_NCOUNTERS], cg[PSH_NCOUNTERS];
      psh_out hout = {hb, ho, hc, hst, hs, hp, hx, cref};
      double t_var[16] = {0};
      psh_run_cpu(&hout, &hin, &p, &err);
      for (size_t k = 0; k < nv; k++) {
        if (only && !hx_name_listed(only, vs[k].name)) continue;
        psh_gpu *g = NULL;
        /* features only where they are used */
        const int with_pool = pool_on && h == PSH_XOR_DIV && k + 1 == nv;
        if (psh_gpu_create(&g, &hin, &p, with_pool ? C : 0, &err) != HX_OK) {
          printf("%-5s %-11s create failed: %s\n", vs[k].name, psh_hash_name(p.hash), err.msg);
          failures++;
          continue;
        }
        run_arg a = {g, &vs[k], pv, BPOOL_MEAN, PSH_F32, NULL, NULL, 0};
        psh_out gout = {hb, ho, hc, hst, hs, hp, hx, cg};
        hx_status st = psh_gpu_run(g, &vs[k], s, &err);
        if (st == HX_OK) st = psh_gpu_download(g, &gout, NULL, NULL, NULL, NULL, &err);
        if (st == HX_OK) st = psh_check(&gout, &hin, &p, &err);
        if (st == HX_OK && (uint64_t)cg[0] + cg[1] + cg[2] != n) st = hx_errf(&err, HX_ECHECK, "counters do not sum to n");
        if (st == HX_OK && vs[k].id >= 2 && cg[0] != cref[0])
          st = hx_errf(&err, HX_ECHECK, "phase-1 count %u, CPU %u", cg[0], cref[0]);
        if (st != HX_OK) {
          printf("%-5s %-11s CHECK FAILED (not timed): %s\n", vs[k].name, psh_hash_name(p.hash), err.msg);
          failures++;
          psh_gpu_free(g);
          continue;
        }
        psh_stats stt;
        psh_stats_compute(&stt, hc, p.nb, cg, p.cap);
        double us = time_us(st_psh, &a, reps, s);
        double gus = time_us(st_graph, &a, reps, s);
        if (gus > 0) { /* the replayed graph's last output must pass the same checks */
          hx_status gst = psh_gpu_download(g, &gout, NULL, NULL, NULL, NULL, &err);
          if (gst == HX_OK) gst = psh_check(&gout, &hin, &p, &err);
          if (gst == HX_OK && (uint64_t)cg[0] + cg[1] + cg[2] != n)
            gst = hx_errf(&err, HX_ECHECK, "counters do not sum to n");
          if (gst != HX_OK) {
            printf("%-5s %-11s GRAPH CHECK FAILED: %s\n", vs[k].name, psh_hash_name(p.hash), err.msg);
            failures++;
          }
        }
        if (k < 16) t_var[k] = gus > 0 ? gus : us;
        printf("%-5s %-11s %6u %10.1f %9.1f %9.1f %9u %9u %9u %8u\n", vs[k].name, psh_hash_name(p.hash), p.nb, us, gus,
               gus > 0 ? 72.0 * n / (gus * 1e3) : 0.0, cg[0], cg[1], cg[2], stt.max_count);
        if (d_flush) /* last, so the stamps below are a cold run's */
          printf("  %s cold graph (L2 flushed before each replay): %.1f us\n", vs[k].name,
                 time_us_f(st_graph, &a, reps, s, d_flush, flush_bytes));
        double ph[6];
        if (vs[k].id >= 5 && psh_gpu_phase_trace(g, &vs[k], ph, &err) == HX_OK) /* the last (graph) run's phases */
          printf("  %s phases, us from start (block 0): bbox %.1f, commit %.1f, probe %.1f, rows %.1f, gather-barrier "
                 "%.1f, last block done %.1f\n", vs[k].name, ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]);
        double bt[16][4];
        uint32_t nbk = 0;
        if (vs[k].id >= 8 && psh_gpu_block_trace(g, &vs[k], bt, &nbk, &err) == HX_OK && nbk > 0) {
          static const char *const stn[] = {"start", "xyz loaded", "into barrier 1", "out of barrier 1", "frame",
                                              "histogram", "commit+scan", "into barrier 2", "out of barrier 2",
                                              "list resolved", "start scan", "listed+slot", "end", "phase C done",
                                              "keys reduced", "frame built"};
          printf("  %s every block's stamps (%u blocks), us after the first start: min / median / max (block)\n",
                 vs[k].name, nbk);
          for (int e = 0; e < (int)(sizeof stn / sizeof *stn); e++)
            if (bt[e][0] >= 0)
              printf("    %2d %-16s %7.2f %7.2f %7.2f (%.0f)\n", e, stn[e], bt[e][0], bt[e][1], bt[e][2], bt[e][3]);
        }
        if (with_pool) {
          /* features and pooling on this (checked) PSH output */
          for (int dt = 0; dt < 2; dt++) {
            a.dt = dt ? PSH_BF16 : PSH_F32;
            const double es = dt ? 2.0 : 4.0;
            double fu = time_us(st_feat, &a, reps, s);
            printf("  scatter features %-4s C=%u: %8.1f us, %7.1f GB/s (read+write %.1f MB + perm)\n", dt ? "bf16" : "fp32",
                   C, fu, fu > 0 ? (2.0 * es * C + 4.0) * n / (fu * 1e3) : 0.0, 2.0 * es * C * n / 1e6);
          }
          a.bytes = (size_t)n * C * 4;
          cudaMalloc(&a.d_src, a.bytes);
          cudaMalloc(&a.d_dst, a.bytes);
          double cu = time_us(st_copy, &a, reps, s);
          const double copy_gbs = cu > 0 ? 2.0 * (double)a.bytes / (cu * 1e3) : 0.0; /* read + write */
          printf("  d2d copy %.1f MB: %8.1f us, %7.1f GB/s (read+write)\n", (double)a.bytes / 1e6, cu, copy_gbs);
          cudaFree(a.d_src), cudaFree(a.d_dst);
          size_t npv = 0;
          const bpool_variant *pvs = bpool_variants(&npv);
          const char *ponly = getenv("F3D_POOL_VARIANTS");
          for (size_t q = 0; q < npv; q++)
            for (uint32_t rho = 2; rho <= 8; rho *= 2) {
              if (ponly && !hx_name_listed(ponly, pvs[q].name)) break;
              const char rname[2] = {(char)('0' + rho), 0};
              if (rhos && !hx_name_listed(rhos, rname)) continue;
              uint32_t n_out = 0;
              a.pv = &pvs[q];
              if (psh_gpu_pool_plan(g, rho, &n_out, s, &err) != HX_OK) {
                printf("  pool plan failed: %s\n", err.msg);
                failures++;
                break;
              }
              a.op = BPOOL_OP_COUNT;
              double au = time_us(st_pool, &a, reps, s), ag = time_graph_us(st_pool, &a, reps, s);
              a.op = BPOOL_MEAN;
              for (int dt = 0; dt < 2; dt++) {
                a.dt = dt ? PSH_BF16 : PSH_F32;
                const double es = dt ? 2.0 : 4.0;
                psh_gpu_scatter_feat(g, a.dt, s, &err);
                double ru = time_us(st_pool, &a, reps, s), rg = time_graph_us(st_pool, &a, reps, s);
                /* features read + pooled features written + members; the whole (assign + reduce) rate is
                 * what the ">= 50% of copy bandwidth" target refers to */
                double rb = es * C * ((double)n + n_out) + 4.0 * rho * n_out;
                const double wd = ru > 0 ? rb / (ru * 1e3) : 0.0, wg = rg > 0 ? rb / (rg * 1e3) : 0.0; /* GB/s */
                printf("  pool %s rho=%u mean %-4s: assign %6.1f us (graph %6.1f), assign+reduce %6.1f us (graph %6.1f), "
                       "whole %6.1f GB/s = %4.1f%% of copy (graph %6.1f GB/s = %4.1f%%), reduce ~%6.1f GB/s (%.1f MB)\n",
                       pvs[q].name, rho, dt ? "bf16" : "fp32", au, ag, ru, rg, wd, copy_gbs > 0 ? 100.0 * wd / copy_gbs : 0.0,
                       wg, copy_gbs > 0 ? 100.0 * wg / copy_gbs : 0.0, ru > au ? rb / ((ru - au) * 1e3) : 0.0, rb / 1e6);
              }
            }
          a.pv = pv;
        }
        psh_gpu_free(g);
      }
      if (nv >= 2 && t_var[0] > 0)
        for (size_t k = 1; k < nv && k < 16; k++)
          if (t_var[k] > 0) printf("  ratio %s / %s (%s): %.2f\n", vs[0].name, vs[k].name, psh_hash_name(p.hash), t_var[0] / t_var[k]);
      free(hb), free(ho), free(hs), free(hp), free(hc), free(hst), free(hx);
    }
    wl_cloud_free(&cloud);
  }
  free(dup);
  if (d_flush) cudaFree(d_flush);
  printf("\n# %s\n", failures ? "SOME VARIANTS FAILED THEIR CHECK" : "all variants passed their checks");
  return failures ? 1 : 0;
}
