/*
 * psh_host.cu - host conveniences over the PSH and pooling launchers (psh_gpu_* in kernels.h): device
 * copies of one batch and every output/scratch buffer allocated once, so that the timed calls (run,
 * scatter_feat, pool) are pure launch sequences on the caller's stream with no allocation and no host
 * transfer. Failure leaves nothing allocated (psh_gpu_create) or the buffers intact (the others).
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define PG_CUDA(call)                                                                                   \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh_gpu: %s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

struct psh_gpu {
  psh_params p;
  uint32_t n, nclouds, nbt, channels;
  float *xyz;
  uint32_t *off;
  psh_out out;
  void *scratch;
  size_t scratch_bytes;
  float *feat32, *feat32_out;
  uint16_t *feat16, *feat16_out;
  /* pooling (sized for rho = 2, the largest output) */
  uint32_t *pool_start, *pool_count, *members, *parent;
  float *pool_xyz, *pool_feat, *unpool_xyz;
  void *pool_scratch;
  size_t pool_scratch_bytes;
  uint32_t rho, pooled, n_out;
  size_t device_bytes;            /* every cudaMalloc above, each rounded up to 256 B (psh_gpu_device_bytes) */
  cudaGraphExec_t graph;          /* captured PSH launch sequence of graph_variant */
  cudaStream_t aux_stream;        /* pooling variants that overlap two launches (bpool_aux): highest priority */
  cudaEvent_t ev_fork, ev_join;
  const psh_variant *graph_variant;
};

static void pg_release(psh_gpu *g) {
  if (g->graph) cudaGraphExecDestroy(g->graph);
  if (g->aux_stream) cudaStreamDestroy(g->aux_stream);
  if (g->ev_fork) cudaEventDestroy(g->ev_fork);
  if (g->ev_join) cudaEventDestroy(g->ev_join);
  void *ptrs[] = {g->xyz, g->off, g->out.bucket_count, g->out.bucket_start,
                  g->out.slot, g->out.perm, g->out.xyz, g->out.counters, g->scratch, g->feat32, g->feat32_out,
                  g->feat16, g->feat16_out, g->pool_start, g->pool_count, g->members, g->parent, g->pool_xyz,
                  g->pool_feat, g->pool_scratch, g->unpool_xyz};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
    if (ptrs[i]) cudaFree(ptrs[i]);
  free(g);
}

/* cudaMalloc that keeps the count of device bytes the handle holds (rounded as the harness's arena
 * rounds, to 256 B, so the sweep's memory rows add up the same way). */
static cudaError_t pg_malloc(psh_gpu *g, void **p, size_t bytes) {
  cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
  if (e == cudaSuccess) g->device_bytes += ((bytes ? bytes : 1) + 255) / 256 * 256;
  return e;
}
template <typename T> static cudaError_t pg_alloc(psh_gpu *g, T **p, size_t count) {
  return pg_malloc(g, (void **)p, (count ? count : 1) * sizeof(T));
}

/* Features [begin, end) of pg_create's fill: value i is a counter-based draw, so the values do not depend on the
 * thread count. */
struct pg_feat_fill {
  float *f;
  uint16_t *b;
  uint64_t seed;
};
static void pg_fill_feat(void *arg, size_t begin, size_t end) {
  const pg_feat_fill *q = (const pg_feat_fill *)arg;
  for (size_t i = begin; i < end; i++) {
    q->f[i] = (float)(2.0 * hx_rng_unit(q->seed, 0xFEA7u, i) - 1.0);
    uint32_t u;
    memcpy(&u, &q->f[i], 4);
    q->b[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
}

static hx_status pg_create(psh_gpu *g, const psh_in *h, const psh_params *p, uint32_t channels, hx_err *err) {
  g->p = *p;
  g->n = h->n;
  g->nclouds = h->nclouds;
  g->nbt = h->nclouds * p->nb;
  g->channels = channels;
  const size_t n = h->n, nbt = g->nbt, pool_rows = n / 2 + nbt + 1;
  PG_CUDA(pg_alloc(g, &g->xyz, n * 3));
  PG_CUDA(pg_alloc(g, &g->off, (size_t)h->nclouds + 1));
  /* no per-point (bucket, offset) on the device: slot and the bucket table imply them (psh_gpu_download
   * rebuilds them on the host); the variants keep what they need of them in their scratch */
  PG_CUDA(pg_alloc(g, &g->out.bucket_count, nbt));
  PG_CUDA(pg_alloc(g, &g->out.bucket_start, nbt));
  PG_CUDA(pg_alloc(g, &g->out.slot, n));
  PG_CUDA(pg_alloc(g, &g->out.perm, n));
  PG_CUDA(pg_alloc(g, &g->out.xyz, n * 3));
  PG_CUDA(pg_alloc(g, &g->out.counters, PSH_NCOUNTERS));
  if (channels) {
    PG_CUDA(pg_alloc(g, &g->feat32, n * channels));
    PG_CUDA(pg_alloc(g, &g->feat32_out, n * channels));
    PG_CUDA(pg_alloc(g, &g->feat16, n * channels));
    PG_CUDA(pg_alloc(g, &g->feat16_out, n * channels));
    PG_CUDA(pg_alloc(g, &g->pool_feat, pool_rows * channels));
  }
  PG_CUDA(pg_alloc(g, &g->pool_start, nbt));
  PG_CUDA(pg_alloc(g, &g->pool_count, nbt));
  PG_CUDA(pg_alloc(g, &g->members, pool_rows * 8));
  PG_CUDA(pg_alloc(g, &g->parent, n));
  PG_CUDA(pg_alloc(g, &g->pool_xyz, pool_rows * 3));
  PG_CUDA(pg_alloc(g, &g->unpool_xyz, n * 3));
  PG_CUDA(cudaMemcpy(g->xyz, h->xyz, n * 12, cudaMemcpyHostToDevice));
  PG_CUDA(cudaMemcpy(g->off, h->cloud_offset, ((size_t)h->nclouds + 1) * 4, cudaMemcpyHostToDevice));
  if (channels) {
    /* deterministic features: fp32 in [-1, 1) and the same values rounded to bf16 */
    const size_t m = n * channels;
    float *f = (float *)malloc(m * sizeof(float) + 4);
    uint16_t *b = (uint16_t *)malloc(m * sizeof(uint16_t) + 2);
    if (!f || !b) {
      free(f), free(b);
      return hx_errf(err, HX_ENOMEM, "psh_gpu: no host memory for %zu features", m);
    }
    /* in parallel: 600k x 64 draws into 230 MB of fresh pages took 0.15-0.19 s on one thread (2-core dev box) */
    pg_feat_fill q = {f, b, p->seed};
    hx_par_for(m, (size_t)1 << 16, pg_fill_feat, &q);
    cudaError_t e1 = cudaMemcpy(g->feat32, f, m * 4, cudaMemcpyHostToDevice);
    cudaError_t e2 = cudaMemcpy(g->feat16, b, m * 2, cudaMemcpyHostToDevice);
    free(f), free(b);
    PG_CUDA(e1);
    PG_CUDA(e2);
  }
  psh_in din = {g->xyz, g->off, g->nclouds, g->n};
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  for (size_t k = 0; k < nv; k++) { /* the largest scratch of any variant (v4's layout differs) */
    size_t b = 0;
    HX_TRY(vs[k].fn(NULL, &b, &g->out, &din, p, NULL, err));
    g->scratch_bytes = b > g->scratch_bytes ? b : g->scratch_bytes;
  }
  PG_CUDA(pg_malloc(g, &g->scratch, g->scratch_bytes));
  HX_TRY(bpool_plan_gpu(NULL, &g->pool_scratch_bytes, g->pool_start, g->pool_count, g->out.bucket_count, g->nbt, 2,
                        NULL, err));
  size_t npv = 0;
  const bpool_variant *pvs = bpool_variants(&npv);
  for (size_t k = 0; k < npv; k++) { /* the one-call poolings may need more (v7's control words) */
    size_t b = 0;
    if (!pvs[k].pool) continue;
    HX_TRY(pvs[k].pool(NULL, &b, NULL, NULL, NULL, NULL, NULL, NULL, g->n, g->channels, PSH_F32, BPOOL_MEAN,
                       g->out.bucket_start, g->out.bucket_count, g->pool_start, g->pool_count, g->nbt, 2, 0, NULL,
                       NULL, err));
    g->pool_scratch_bytes = b > g->pool_scratch_bytes ? b : g->pool_scratch_bytes;
  }
  PG_CUDA(pg_malloc(g, &g->pool_scratch, g->pool_scratch_bytes));
  int least = 0, greatest = 0;
  PG_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  PG_CUDA(cudaStreamCreateWithPriority(&g->aux_stream, cudaStreamNonBlocking, greatest));
  PG_CUDA(cudaEventCreateWithFlags(&g->ev_fork, cudaEventDisableTiming));
  PG_CUDA(cudaEventCreateWithFlags(&g->ev_join, cudaEventDisableTiming));
  return HX_OK;
}

extern "C" hx_status psh_gpu_create(psh_gpu **out, const psh_in *h_in, const psh_params *p, uint32_t channels,
                                    hx_err *err) {
  *out = NULL;
  HX_TRY(psh_params_check(p, h_in->cloud_offset, h_in->nclouds, err));
  psh_gpu *g = (psh_gpu *)calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "psh_gpu: no memory");
  hx_status st = pg_create(g, h_in, p, channels, err);
  if (st != HX_OK) {
    pg_release(g);
    return st;
  }
  *out = g;
  return HX_OK;
}

extern "C" size_t psh_gpu_device_bytes(const psh_gpu *g) { return g ? g->device_bytes : 0; }

extern "C" void psh_gpu_free(psh_gpu *g) {
  if (g) pg_release(g);
}

extern "C" hx_status psh_gpu_run(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err) {
  psh_in in = {g->xyz, g->off, g->nclouds, g->n};
  size_t sb = g->scratch_bytes;
  g->pooled = 0;
  g->rho = 0; /* the counts change: plan again */
  return v->fn(g->scratch, &sb, &g->out, &in, &g->p, stream, err);
}

extern "C" hx_status psh_gpu_run_graph(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err) {
  cudaStream_t s = (cudaStream_t)stream;
  if (!s) return hx_errf(err, HX_EINVAL, "psh_gpu_run_graph: the legacy default stream cannot be captured");
  if (g->graph_variant != v) {
    if (g->graph) cudaGraphExecDestroy(g->graph);
    g->graph = NULL;
    g->graph_variant = NULL;
    PG_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    psh_in in = {g->xyz, g->off, g->nclouds, g->n};
    size_t sb = g->scratch_bytes;
    hx_status st = v->fn(g->scratch, &sb, &g->out, &in, &g->p, stream, err);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    if (st != HX_OK) {
      if (graph) cudaGraphDestroy(graph);
      return st;
    }
    PG_CUDA(e);
    e = cudaGraphInstantiate(&g->graph, graph, 0);
    cudaGraphDestroy(graph);
    PG_CUDA(e);
    g->graph_variant = v;
  }
  g->pooled = 0;
  g->rho = 0;
  PG_CUDA(cudaGraphLaunch(g->graph, s));
  return HX_OK;
}

extern "C" hx_status psh_gpu_unpool_xyz(psh_gpu *g, const bpool_variant *v, float *h_up, hx_err *err) {
  if (!g->pooled) return hx_errf(err, HX_EINVAL, "psh_gpu: no pooling run to unpool");
  HX_TRY(v->unpool(g->unpool_xyz, g->pool_xyz, NULL, g->parent, g->n, 3, PSH_F32, NULL, err));
  PG_CUDA(cudaDeviceSynchronize());
  PG_CUDA(cudaMemcpy(h_up, g->unpool_xyz, (size_t)g->n * 12, cudaMemcpyDeviceToHost));
  return HX_OK;
}

/* HX_EUNSUPPORTED unless v ran its own cooperative kernel on g's batch: after a fall-back (4M points, more than
 * 4096 buckets, ...) the scratch holds an earlier variant's layout, and reading stamps from it copied from
 * beyond the allocation (a failed cudaMemcpy whose error the next CUB call in the process then reported).
 * The decision is made again with the launcher's own planning code and the same inputs (g's batch, the same
 * device; the plan is the same for the stamped instances of psh_params.trace_blocks), rather than recorded by psh_gpu_run, which is
 * timed and so should not make device queries. */
static hx_status trace_own(const psh_gpu *g, const psh_variant *v, hx_err *err) {
  int own = 0;
  const uint32_t n = g->n, nc = g->nclouds, nb = g->p.nb, cap = g->p.cap;
  switch (v->id) {
  case 5:
  case 6: HX_TRY(psh_v5_runs_own(v->id == 6, n, nc, nb, cap, &own, err)); break;
  case 7: HX_TRY(psh_v7_runs_own(n, nc, nb, cap, &own, err)); break;
  case 8:
  case 9:
  case 10: HX_TRY(psh_v8_runs_own(v->id - 8, n, nc, nb, cap, &own, err)); break;
  default: return hx_errf(err, HX_EUNSUPPORTED, "psh_gpu: no phase trace for %s", v->name);
  }
  if (!own)
    return hx_errf(err, HX_EUNSUPPORTED, "psh_gpu: %s fell back to an earlier variant for %u points, %u buckets, S %u: no trace of its own",
                   v->name, n, nb, cap);
  return HX_OK;
}

extern "C" hx_status psh_gpu_phase_trace(psh_gpu *g, const psh_variant *v, double phase_us[6], hx_err *err) {
  HX_TRY(trace_own(g, v, err));
  PG_CUDA(cudaDeviceSynchronize());
  return psh_v5_trace(phase_us, g->scratch, g->nclouds, g->p.nb, g->n, err);
}

extern "C" hx_status psh_gpu_block_trace(psh_gpu *g, const psh_variant *v, double st[16][4], uint32_t *nblocks,
                                        hx_err *err) {
  if (v->id < 8 || v->id > 10) return hx_errf(err, HX_EUNSUPPORTED, "psh_gpu: no block trace for %s", v->name);
  HX_TRY(trace_own(g, v, err));
  PG_CUDA(cudaDeviceSynchronize());
  return psh_v8_block_trace(st, nblocks, g->scratch, g->nclouds, g->p.nb, g->n, err);
}

extern "C" hx_status psh_gpu_scatter_feat(psh_gpu *g, psh_dtype dt, void *stream, hx_err *err) {
  if (!g->channels) return hx_errf(err, HX_EINVAL, "psh_gpu: created without features");
  if (dt == PSH_F32)
    return psh_gather_rows_gpu(g->feat32_out, g->feat32, g->out.perm, g->n, (size_t)g->channels * 4, stream, err);
  return psh_gather_rows_gpu(g->feat16_out, g->feat16, g->out.perm, g->n, (size_t)g->channels * 2, stream, err);
}

extern "C" hx_status psh_gpu_pool_plan(psh_gpu *g, uint32_t rho, uint32_t *n_out, void *stream, hx_err *err) {
  size_t sb = g->pool_scratch_bytes;
  HX_TRY(bpool_plan_gpu(g->pool_scratch, &sb, g->pool_start, g->pool_count, g->out.bucket_count, g->nbt, rho,
                        stream, err));
  PG_CUDA(cudaStreamSynchronize((cudaStream_t)stream));
  uint32_t last_start = 0, last_count = 0;
  if (g->nbt) {
    PG_CUDA(cudaMemcpy(&last_start, g->pool_start + g->nbt - 1, 4, cudaMemcpyDeviceToHost));
    PG_CUDA(cudaMemcpy(&last_count, g->pool_count + g->nbt - 1, 4, cudaMemcpyDeviceToHost));
  }
  g->rho = rho;
  g->n_out = last_start + last_count;
  if (n_out) *n_out = g->n_out;
  return HX_OK;
}

extern "C" hx_status psh_gpu_pool(psh_gpu *g, const bpool_variant *v, bpool_op op, psh_dtype dt, void *stream,
                                  hx_err *err) {
  if (!g->rho) return hx_errf(err, HX_EINVAL, "psh_gpu_pool: call psh_gpu_pool_plan first");
  size_t sb = g->pool_scratch_bytes;
  const int with_feat = (unsigned)op < BPOOL_OP_COUNT;
  if (with_feat && !g->channels) return hx_errf(err, HX_EINVAL, "psh_gpu_pool: created without features");
  const bpool_aux aux = {g->aux_stream, g->ev_fork, g->ev_join};
  bpool_params p;
  memset(&p, 0, sizeof p);
  p.xyz_in = g->out.xyz;
  p.feat_in = dt == PSH_F32 ? (const void *)g->feat32_out : (const void *)g->feat16_out;
  p.bucket_start = g->out.bucket_start, p.bucket_count = g->out.bucket_count;
  p.n_rows = g->n, p.nbuckets = g->nbt, p.rho = g->rho, p.channels = g->channels, p.n_out = g->n_out;
  p.dt = dt, p.op = with_feat ? op : BPOOL_OP_COUNT;
  p.out_start = g->pool_start, p.out_count = g->pool_count;
  p.members = g->members, p.parent = g->parent, p.xyz_out = g->pool_xyz, p.feat_out = g->pool_feat;
  p.aux = &aux;
  HX_TRY(bpool_pool(v, &p, g->pool_scratch, &sb, stream, err));
  g->pooled = 1;
  return HX_OK;
}

extern "C" hx_status psh_gpu_download_feat(psh_gpu *g, psh_dtype dt, void *h_packed, void *h_pooled, hx_err *err) {
  if (!g->channels) return hx_errf(err, HX_EINVAL, "psh_gpu: created without features");
  if (dt != PSH_F32 && dt != PSH_BF16) return hx_errf(err, HX_EINVAL, "psh_gpu: features are fp32 or bf16");
  const size_t es = psh_dtype_size(dt);
  PG_CUDA(cudaDeviceSynchronize());
  if (h_packed)
    PG_CUDA(cudaMemcpy(h_packed, dt == PSH_F32 ? (const void *)g->feat32_out : (const void *)g->feat16_out,
                       (size_t)g->n * g->channels * es, cudaMemcpyDeviceToHost));
  if (h_pooled) {
    if (!g->pooled) return hx_errf(err, HX_EINVAL, "psh_gpu: no pooling run to download");
    PG_CUDA(cudaMemcpy(h_pooled, g->pool_feat, (size_t)g->n_out * g->channels * es, cudaMemcpyDeviceToHost));
  }
  return HX_OK;
}

extern "C" hx_status psh_gpu_poison(psh_gpu *g, void *stream, hx_err *err) {
  cudaStream_t s = (cudaStream_t)stream;
  g->pooled = 0;
  g->rho = 0; /* the bucket tables are gone: plan the pooling again */
  const size_t n = g->n, nbt = g->nbt;
  PG_CUDA(cudaMemsetAsync(g->out.bucket_count, 0xFF, nbt * 4, s));
  PG_CUDA(cudaMemsetAsync(g->out.bucket_start, 0xFF, nbt * 4, s));
  PG_CUDA(cudaMemsetAsync(g->out.slot, 0xFF, n * 4, s));
  PG_CUDA(cudaMemsetAsync(g->out.perm, 0xFF, n * 4, s));
  if (g->out.xyz) PG_CUDA(cudaMemsetAsync(g->out.xyz, 0xFF, n * 12, s));
  PG_CUDA(cudaMemsetAsync(g->out.counters, 0xFF, PSH_NCOUNTERS * 4, s));
  /* and the scratch, where the variants keep the pair's working copy: a v9/v10 that read a first-hash point's
   * pair it never stored would otherwise find the last variant's (v8's) right one */
  PG_CUDA(cudaMemsetAsync(g->scratch, 0xFF, g->scratch_bytes, s));
  return HX_OK;
}

/* The per-point pair of the last run, rebuilt on the host from slot and the bucket table (psh_bo_from_slot_cpu)
 * into h->bucket / h->offset, either may be NULL; HX_ECHECK when slot and the table are not a packed layout.
 * Called after the other outputs' copies: slot and the table come from h's buffers when the caller asked for
 * them too, else from temporary ones. */
static hx_status pg_pair(const psh_gpu *g, const psh_out *h, hx_err *err) {
  const size_t n = g->n, nbt = g->nbt;
  uint32_t *sl = h->slot ? h->slot : (uint32_t *)malloc(n * 4 + 4);
  uint32_t *st = h->bucket_start ? h->bucket_start : (uint32_t *)malloc(nbt * 4 + 4);
  uint32_t *ct = h->bucket_count ? h->bucket_count : (uint32_t *)malloc(nbt * 4 + 4);
  uint32_t *bk = h->bucket ? h->bucket : (uint32_t *)malloc(n * 4 + 4);
  uint32_t *of = h->offset ? h->offset : (uint32_t *)malloc(n * 4 + 4);
  hx_status r = sl && st && ct && bk && of ? HX_OK
                                           : hx_errf(err, HX_ENOMEM, "psh_gpu: no host memory for %zu points' pairs", n);
  cudaError_t e = cudaSuccess;
  if (r == HX_OK && !h->slot) e = cudaMemcpy(sl, g->out.slot, n * 4, cudaMemcpyDeviceToHost);
  if (r == HX_OK && e == cudaSuccess && !h->bucket_start)
    e = cudaMemcpy(st, g->out.bucket_start, nbt * 4, cudaMemcpyDeviceToHost);
  if (r == HX_OK && e == cudaSuccess && !h->bucket_count)
    e = cudaMemcpy(ct, g->out.bucket_count, nbt * 4, cudaMemcpyDeviceToHost);
  if (r == HX_OK && e != cudaSuccess) r = hx_errf(err, HX_ECUDA, "psh_gpu: pair download: %s", cudaGetErrorString(e));
  if (r == HX_OK) r = psh_bo_from_slot_cpu(bk, of, sl, st, ct, g->nbt, g->n, err);
  if (!h->slot) free(sl);
  if (!h->bucket_start) free(st);
  if (!h->bucket_count) free(ct);
  if (!h->bucket) free(bk);
  if (!h->offset) free(of);
  return r;
}

extern "C" hx_status psh_gpu_download(psh_gpu *g, const psh_out *h, uint32_t *members, uint32_t *parent,
                                      float *xyz_out, uint32_t *n_out, hx_err *err) {
  PG_CUDA(cudaDeviceSynchronize());
  const size_t n = g->n, nbt = g->nbt;
  if (h) {
    if (h->bucket_count) PG_CUDA(cudaMemcpy(h->bucket_count, g->out.bucket_count, nbt * 4, cudaMemcpyDeviceToHost));
    if (h->bucket_start) PG_CUDA(cudaMemcpy(h->bucket_start, g->out.bucket_start, nbt * 4, cudaMemcpyDeviceToHost));
    if (h->slot) PG_CUDA(cudaMemcpy(h->slot, g->out.slot, n * 4, cudaMemcpyDeviceToHost));
    if (h->perm) PG_CUDA(cudaMemcpy(h->perm, g->out.perm, n * 4, cudaMemcpyDeviceToHost));
    if (h->xyz) PG_CUDA(cudaMemcpy(h->xyz, g->out.xyz, n * 12, cudaMemcpyDeviceToHost));
    if (h->counters) PG_CUDA(cudaMemcpy(h->counters, g->out.counters, PSH_NCOUNTERS * 4, cudaMemcpyDeviceToHost));
    if (h->bucket || h->offset) HX_TRY(pg_pair(g, h, err)); /* last: the other outputs are there on a failure */
  }
  if (!g->pooled) {
    if (members || parent || xyz_out || n_out) return hx_errf(err, HX_EINVAL, "psh_gpu: no pooling run to download");
    return HX_OK;
  }
  const uint32_t total = g->n_out;
  if (n_out) *n_out = total;
  if (members) PG_CUDA(cudaMemcpy(members, g->members, (size_t)total * g->rho * 4, cudaMemcpyDeviceToHost));
  if (parent) PG_CUDA(cudaMemcpy(parent, g->parent, n * 4, cudaMemcpyDeviceToHost));
  if (xyz_out) PG_CUDA(cudaMemcpy(xyz_out, g->pool_xyz, (size_t)total * 12, cudaMemcpyDeviceToHost));
  return HX_OK;
}
