/*
 * pipe_flash3d.c - the "flash3d" sweep pipeline: Flash3D's PSH bucketing and in-bucket pooling on the
 * case's batch. Kernels (rows keyed by kernel and variant; "cpu" = the C reference):
 *   psh.<hash>        whole PSH (voxelise + hash + rebalance + scan + scatter of coordinates), every hash:
 *                     on the main path the naive ablation v1 (global atomics) and v2 (two-stage counters), then
 *                     psh_variant_best's variant for this device and case (v10 up to one wave of tiles), that
 *                     one also as "<v>.graph" (the same launch sequence replayed as one CUDA graph); with
 *                     --ladder every variant, each plainly and as a graph, and the CPU reference timed (on the
 *                     main path with a GPU it runs once, untimed: its rows below still come from it); counts
 *                     placed_first / placed_probe / placed_overflow, fullest_bucket, empty_buckets (and, on the
 *                     cpu row, reachable_buckets: psh_reachable_buckets over the batch), and for the GPU bytes
 *                     (72 B/point, see lab/kernels/psh_bench.c) and GB/s at the median (the closure declares
 *                     the bytes, the measurement layer writes the rates);
 *   psh.floor         the data-movement floor of the one-launch PSH variants (psh_floor_variant: v10's launch
 *                     reading the coordinates, two grid barriers, 20 B/point written coalesced, nothing
 *                     computed), variants "movement" and "movement.graph", once per case beside the PSH rows,
 *                     bytes 32 B/point; checked bit for bit against psh_floor_cpu on poisoned outputs first;
 *                     a case v10 does not launch itself (it falls back to v7) has no floor row;
 *   locality.<hash>   size-weighted mean bounding-box diagonal of the buckets (m), and "zorder1024" the
 *                     same for PTv3-style 1024-point z-order patches (CPU, once per case);
 *   scatter_feat      features (C = 64) into packed order on the default hash's output: the best PSH variant's,
 *                     fp32 ("<v>.f32"); with --ladder every PSH variant's, fp32 and bf16 ("<v>.bf16");
 *   pool_assign       (--ladder) in-bucket pooling sub-buckets (rho = 2) of the default-hash PSH output, every
 *                     pooling variant (variant "<psh>+<pool>", on the first GPU PSH variant's output: v1's);
 *   pool              assign + mean reduction of the packed fp32 features: bpool_variant_best's variant (v9),
 *                     every pooling variant with --ladder;
 *   attn.plain, attn.swin4, attn.stride2
 *                     bucket-swin attention (battn_variant_best's: v9 or v24, and v0 on small cases) in place
 *                     over the packed rows of the default hash's PSH result (CPU reference: deterministic),
 *                     scopes of 8 buckets, swin shift 4, stride 2; checked on sampled rows first, then timed; tflops
 *                     and rel_to_plain (pipe_attn.c). GPU only: without one the stage says why it skips.
 * Every GPU variant is checked first, on poisoned outputs (psh_check invariants on the pair that psh_gpu_download
 * rebuilds from slot and the bucket table: psh_gpu asks no variant for the per-point pair; counters sum to n, phase-1 count of v2 and later equal
 * to the CPU's; pooling bitwise equal to bpool_assign_cpu and bpool_reduce_cpu on the same PSH output); a failing variant gets a
 * row check = 0 and is not timed. check = 1 rows record the passes. Every stage is timed by f3d_measure,
 * as in the other pipelines (so --timing and counters apply), bandwidth at the median its rows report.
 * Device memory (mem_peak rows): psh_gpu allocates on its own and is noted in the sweep's arena at the
 * size it reports (gpu_create below); the attention stage allocates through the arena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/pipe_attn.h"
#include "app/pipe_plan.h"
#include "app/sweep.h"
#include "kernels/kernels.h"

#define F3D_FEAT_C 64u
#define F3D_POOL_RHO 2u
#define F3D_PSH_BYTES_PER_POINT 72.0
#define F3D_FLOOR_BYTES_PER_POINT 32.0 /* 12 B of coordinates read; slot, perm (4 B each) and 12 B of xyz written */

typedef struct f3d_job {
  const psh_in *in;
  const psh_params *p;
  psh_out out;     /* host buffers (CPU runs) */
  psh_gpu *g;
  const psh_variant *v;
  const bpool_variant *pv;
  bpool_op op;
  psh_dtype dt;
} f3d_job;

static hx_status job_cpu(void *arg, void *stream, hx_err *err) {
  (void)stream;
  f3d_job *j = arg;
  return psh_run_cpu(&j->out, j->in, j->p, err);
}
static hx_status job_gpu(void *arg, void *stream, hx_err *err) {
  f3d_job *j = arg;
  return psh_gpu_run(j->g, j->v, stream, err);
}
static hx_status job_graph(void *arg, void *stream, hx_err *err) {
  f3d_job *j = arg;
  return psh_gpu_run_graph(j->g, j->v, stream, err);
}
static hx_status job_feat(void *arg, void *stream, hx_err *err) {
  f3d_job *j = arg;
  return psh_gpu_scatter_feat(j->g, j->dt, stream, err);
}
static hx_status job_pool(void *arg, void *stream, hx_err *err) {
  f3d_job *j = arg;
  return psh_gpu_pool(j->g, j->pv, j->op, j->dt, stream, err);
}

/* Time a closure through the sweep's measurement path (f3d_measure: --timing, counters, progress, and the
 * rate rows of the bytes the closure declares). */
static hx_status timed(f3d_ctx *ctx, const char *kernel, const char *variant, hx_clock clock, hx_closure *c,
                       double bytes, hx_err *err) {
  c->bytes = bytes;
  return f3d_measure(ctx, "flash3d", kernel, variant, clock, c, err);
}

/* Whether the main path measures this stage of the pipeline (always with --ladder). */
static int stage_on(const f3d_ctx *ctx, const char *kernel) { return ctx->ladder || f3d_main_stage("flash3d", kernel); }

static hx_status record_stats(f3d_ctx *ctx, const char *kernel, const char *variant, const psh_stats *s, hx_err *err) {
  const struct {
    const char *m;
    double v;
  } rows[] = {{"placed_first", (double)s->placed_first},       {"placed_probe", (double)s->placed_probe},
              {"placed_overflow", (double)s->placed_overflow}, {"fullest_bucket", (double)s->max_count},
              {"empty_buckets", (double)s->empty_buckets},     {"over_cap_buckets", (double)s->over_cap_buckets}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    hx_status st = f3d_record(ctx, "flash3d", kernel, variant, rows[i].m, rows[i].v, "count", err);
    if (st != HX_OK) return st;
  }
  return HX_OK;
}

typedef struct f3d_bufs {
  uint32_t *bucket, *offset, *count, *start, *slot, *perm, counters[PSH_NCOUNTERS];
  float *xyz;
} f3d_bufs;

static int bufs_alloc(f3d_bufs *b, size_t n, size_t nbt) {
  memset(b, 0, sizeof *b);
  b->bucket = malloc(n * 4 + 4), b->offset = malloc(n * 4 + 4), b->slot = malloc(n * 4 + 4);
  b->perm = malloc(n * 4 + 4), b->count = malloc(nbt * 4 + 4), b->start = malloc(nbt * 4 + 4);
  b->xyz = malloc(n * 12 + 12);
  return b->bucket && b->offset && b->slot && b->perm && b->count && b->start && b->xyz;
}
static void bufs_free(f3d_bufs *b) {
  free(b->bucket), free(b->offset), free(b->slot), free(b->perm), free(b->count), free(b->start), free(b->xyz);
}
static psh_out bufs_out(f3d_bufs *b) {
  psh_out o = {b->bucket, b->offset, b->count, b->start, b->slot, b->perm, b->xyz, b->counters};
  return o;
}

/* Output rows [begin, end) of check_pool's reduction reference: bpool_reduce_cpu on those rows' members (an
 * output row reads its own members only, so the bits are one call's whatever the thread count). The arguments
 * were checked by a call over no rows first, so a chunk cannot fail. */
typedef struct reduce_rows {
  float *out;
  const float *in;
  const uint32_t *members;
} reduce_rows;
static void reduce_part(void *arg, size_t begin, size_t end) {
  const reduce_rows *r = arg;
  bpool_reduce_cpu(r->out + begin * F3D_FEAT_C, r->in, r->members + begin * F3D_POOL_RHO, (uint32_t)(end - begin),
                   F3D_POOL_RHO, F3D_FEAT_C, PSH_F32, BPOOL_MEAN, NULL);
}

/* GPU pooling of the last PSH run checked against the CPU reference on the same (downloaded) output: the
 * assignment (members, parents, pooled xyz) and the reduction of the features (mean, fp32). */
static hx_status check_pool(psh_gpu *g, const bpool_variant *pv, uint32_t n, uint32_t nbt, void *stream, hx_err *err) {
  f3d_bufs b;
  uint32_t n_out = 0, n_cpu = 0;
  hx_status st = HX_OK;
  uint32_t *os = malloc(nbt * 4 + 4), *oc = malloc(nbt * 4 + 4), *m = NULL, *par = malloc((size_t)n * 4 + 4), *gm = NULL,
           *gpar = malloc((size_t)n * 4 + 4);
  float *xo = NULL, *gxo = NULL;
  if (!bufs_alloc(&b, n, nbt) || !os || !oc || !par || !gpar) st = hx_errf(err, HX_ENOMEM, "flash3d: no memory");
  if (st == HX_OK) st = psh_gpu_pool_plan(g, F3D_POOL_RHO, &n_out, stream, err);
  if (st == HX_OK) st = psh_gpu_pool(g, pv, BPOOL_OP_COUNT, PSH_F32, stream, err);
  if (st == HX_OK) {
    m = malloc((size_t)n_out * F3D_POOL_RHO * 4 + 4), gm = malloc((size_t)n_out * F3D_POOL_RHO * 4 + 4);
    xo = malloc((size_t)n_out * 12 + 12), gxo = malloc((size_t)n_out * 12 + 12);
    if (!m || !gm || !xo || !gxo) st = hx_errf(err, HX_ENOMEM, "flash3d: no memory");
  }
  psh_out o = bufs_out(&b);
  if (st == HX_OK) st = psh_gpu_download(g, &o, gm, gpar, gxo, &n_out, err);
  if (st == HX_OK) st = bpool_plan_cpu(os, oc, &n_cpu, b.count, nbt, F3D_POOL_RHO, err);
  if (st == HX_OK && n_cpu != n_out) st = hx_errf(err, HX_ECHECK, "pooling: %u output rows, CPU plan %u", n_out, n_cpu);
  if (st == HX_OK) st = bpool_assign_cpu(m, par, xo, b.xyz, n, b.start, b.count, os, nbt, F3D_POOL_RHO, err);
  if (st == HX_OK && (memcmp(m, gm, (size_t)n_out * F3D_POOL_RHO * 4) || memcmp(par, gpar, (size_t)n * 4) ||
                      memcmp(xo, gxo, (size_t)n_out * 12)))
    st = hx_errf(err, HX_ECHECK, "pooling %s differs from the CPU reference", pv->name);
  /* the reduction the "pool" rows time (mean of fp32 features; a fused variant's own pass): pooled features
   * equal to bpool_reduce_cpu over the packed features the GPU read, members equal to the CPU's again */
  const size_t fin = (size_t)n * F3D_FEAT_C * 4, fout = (size_t)n_out * F3D_FEAT_C * 4;
  float *pk = st == HX_OK ? malloc(fin + 4) : NULL, *want = st == HX_OK ? malloc(fout + 4) : NULL,
        *got = st == HX_OK ? malloc(fout + 4) : NULL;
  if (st == HX_OK && (!pk || !want || !got)) st = hx_errf(err, HX_ENOMEM, "flash3d: no memory");
  if (st == HX_OK) st = psh_gpu_scatter_feat(g, PSH_F32, stream, err);
  if (st == HX_OK) {
    memset(gm, 0xFF, (size_t)n_out * F3D_POOL_RHO * 4); /* poisoned: the pass below must write them */
    st = psh_gpu_pool(g, pv, BPOOL_MEAN, PSH_F32, stream, err);
  }
  if (st == HX_OK) st = psh_gpu_download(g, NULL, gm, NULL, NULL, NULL, err);
  if (st == HX_OK) st = psh_gpu_download_feat(g, PSH_F32, pk, got, err);
  /* the reduction's reference in parallel: 0.15-0.3 s at 600k points on one thread (2-core dev box) */
  if (st == HX_OK) st = bpool_reduce_cpu(want, pk, m, 0, F3D_POOL_RHO, F3D_FEAT_C, PSH_F32, BPOOL_MEAN, err);
  if (st == HX_OK) {
    reduce_rows rr = {want, pk, m};
    hx_par_for(n_out, 4096, reduce_part, &rr);
  }
  if (st == HX_OK && (memcmp(m, gm, (size_t)n_out * F3D_POOL_RHO * 4) || memcmp(want, got, fout)))
    st = hx_errf(err, HX_ECHECK, "pooling %s: pooled features differ from the CPU reduction", pv->name);
  free(pk), free(want), free(got);
  bufs_free(&b);
  free(os), free(oc), free(m), free(par), free(gm), free(gpar), free(xo), free(gxo);
  return st;
}

/* psh_gpu_create allocates its device buffers itself (kernels/psh_host.cu: inputs, outputs, features,
 * pooling buffers and scratch); the arena notes them, keyed by the handle, at the size the handle reports
 * (psh_gpu_device_bytes: each allocation rounded up to 256 B, as the arena rounds). The CUDA graph that
 * psh_gpu_run_graph instantiates later is not in it. */
static hx_status gpu_create(f3d_ctx *ctx, psh_gpu **g, const psh_in *in, const psh_params *p, uint32_t channels,
                            hx_err *err) {
  hx_status st = psh_gpu_create(g, in, p, channels, err);
  if (st != HX_OK || !ctx->arena) return st;
  st = hx_arena_note(ctx->arena, *g, psh_gpu_device_bytes(*g), "psh_gpu buffers", err);
  if (st != HX_OK) {
    psh_gpu_free(*g);
    *g = NULL;
  }
  return st;
}
static void gpu_free(f3d_ctx *ctx, psh_gpu *g) {
  if (ctx->arena && g) hx_arena_free(ctx->arena, g, NULL); /* the note, when there is one */
  psh_gpu_free(g);
}

/* The floor under the one-launch variants (psh_floor_variant) on this case: outputs poisoned, one run checked bit
 * for bit against psh_floor_cpu, then timed like a variant, plainly and as a graph. A shape v10 does not launch
 * itself records nothing (said once on stderr); a failed check records check = 0 and no time, as for a variant. */
static hx_status measure_floor(f3d_ctx *ctx, psh_gpu *g, const psh_in *in, f3d_bufs *gb, hx_err *err) {
  const psh_variant *fv = psh_floor_variant();
  const uint32_t n = in->n;
  hx_err cerr = {HX_OK, ""};
  psh_out go = bufs_out(gb);
  go.bucket = go.offset = NULL; /* the floor writes no bucket table, so no pair follows from its slots */
  hx_status cs = psh_gpu_poison(g, ctx->stream, &cerr);
  if (cs == HX_OK) cs = psh_gpu_run(g, fv, ctx->stream, &cerr);
  if (cs == HX_EUNSUPPORTED) {
    fprintf(stderr, "f3dbench: flash3d: no floor row: %s\n", cerr.msg);
    return HX_OK;
  }
  if (cs == HX_OK) cs = psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &cerr);
  if (cs == HX_OK) cs = psh_floor_check(&go, in, &cerr);
  hx_status st = f3d_record(ctx, "flash3d", "psh.floor", "movement", "check", cs == HX_OK ? 1.0 : 0.0, "bool", err);
  if (cs != HX_OK) {
    fprintf(stderr, "f3dbench: flash3d: psh.floor failed its check, not timed: %s\n", cerr.msg);
    return st;
  }
  f3d_job fj = {in, NULL, go, g, fv, NULL, BPOOL_MEAN, PSH_F32};
  hx_closure fc = {job_gpu, NULL, &fj, 0, 0}, fg = {job_graph, NULL, &fj, 0, 0};
  const double bytes = F3D_FLOOR_BYTES_PER_POINT * (double)n;
  if (st == HX_OK) st = timed(ctx, "psh.floor", "movement", HX_CLOCK_GPU, &fc, bytes, err);
  if (st == HX_OK && ctx->stream) st = timed(ctx, "psh.floor", "movement.graph", HX_CLOCK_GPU, &fg, bytes, err);
  return st;
}

/* The hash whose buckets feed features, pooling and attention: psh_params_default's. */
static psh_hash default_hash(void) {
  psh_params d;
  psh_params_default(&d);
  return d.hash;
}

/* PSH parameters of hash h for this case (the attention stage reuses the default hash's). */
static void case_params(psh_params *p, const f3d_ctx *ctx, psh_hash h, size_t nmax) {
  psh_params_default(p);
  p->hash = h;
  p->voxel = (float)ctx->c.voxel;
  p->nb = psh_auto_buckets(nmax, p->cap);
  p->seed = hx_rng_u64(ctx->seed, 0xF3D, (uint64_t)h);
}

/* The default hash's bucket table from its CPU PSH run (run_case keeps it), for the attention stage. */
typedef struct f3d_table {
  uint32_t *start, *count;
} f3d_table;

/* Attention in place over the default hash's buckets: the CPU PSH result (deterministic; the GPU
 * variants satisfy the same invariants) in its packed layout gives the bucket table, the three plans
 * redirect tiles over it, no row moves. */
static hx_status run_attention(f3d_ctx *ctx, const psh_in *in, size_t nmax, const f3d_table *t, hx_err *err) {
  if (!ctx->have_gpu) return f3d_attn_stage(ctx, "flash3d", (int64_t)in->n, NULL, 0, -1, err);
  if (!t->start || !t->count) return hx_errf(err, HX_EINVAL, "flash3d: attention: no bucket table of the default hash");
  psh_params p;
  case_params(&p, ctx, default_hash(), nmax);
  battn_plan plans[F3D_ATTN_NPLANS];
  memset(plans, 0, sizeof plans);
  hx_status st = f3d_attn_psh_plans(plans, t->start, t->count, in->nclouds, p.nb, err);
  f3d_attn_item items[F3D_ATTN_NPLANS];
  for (int i = 0; i < F3D_ATTN_NPLANS; i++) items[i] = (f3d_attn_item){f3d_attn_plan_kernel(i), &plans[i]};
  if (st == HX_OK) st = f3d_attn_stage(ctx, "flash3d", (int64_t)in->n, items, F3D_ATTN_NPLANS, F3D_ATTN_PLAIN, err);
  for (int i = 0; i < F3D_ATTN_NPLANS; i++) battn_plan_free(&plans[i]);
  return st;
}

/* Pooling on g's last (checked) PSH output, once per case: the main path's pooling variant, or every one with
 * --ladder; each checked against the CPU reference first (a failing one gets check = 0 and is not timed). Rows
 * keyed "<psh>+<pool>" with psh the variant whose output it pools. */
static hx_status measure_pooling(f3d_ctx *ctx, psh_gpu *g, f3d_job *gj, const char *psh_name, uint32_t n,
                                 uint32_t nbt, hx_err *err) {
  const double pts = (double)n;
  const bpool_variant *pvs[64];
  const size_t npv = f3d_plan_pool(pvs, 64, ctx->ladder, bpool_variant_best());
  hx_status st = HX_OK;
  for (size_t pq = 0; pq < npv && st == HX_OK; pq++) {
    const bpool_variant *pv = pvs[pq];
    hx_err perr = {HX_OK, ""};
    hx_status ps = check_pool(g, pv, n, nbt, ctx->stream, &perr);
    char var[32];
    snprintf(var, sizeof var, "%s+%s", psh_name, pv->name);
    st = f3d_record(ctx, "flash3d", "pool", var, "check", ps == HX_OK ? 1.0 : 0.0, "bool", err);
    if (ps != HX_OK) {
      fprintf(stderr, "f3dbench: flash3d: pooling %s failed its check, not timed: %s\n", var, perr.msg);
      continue;
    }
    uint32_t n_out = 0;
    if (st == HX_OK) st = psh_gpu_pool_plan(g, F3D_POOL_RHO, &n_out, ctx->stream, err);
    if (st == HX_OK) st = psh_gpu_scatter_feat(g, PSH_F32, ctx->stream, err);
    gj->pv = pv;
    gj->op = BPOOL_OP_COUNT;
    hx_closure pc = {job_pool, NULL, gj, 0, 0};
    /* assign: read xyz, write parent, members, pooled xyz */
    const double assign_bytes = 12.0 * pts + 4.0 * pts + (4.0 * F3D_POOL_RHO + 12.0) * n_out;
    if (st == HX_OK && stage_on(ctx, "pool_assign")) st = timed(ctx, "pool_assign", var, HX_CLOCK_GPU, &pc, assign_bytes, err);
    gj->op = BPOOL_MEAN;
    gj->dt = PSH_F32;
    if (st == HX_OK)
      st = timed(ctx, "pool", var, HX_CLOCK_GPU, &pc, assign_bytes + 4.0 * F3D_FEAT_C * (pts + n_out), err);
  }
  return st;
}

static hx_status run_case(f3d_ctx *ctx, const psh_in *in, size_t nmax, f3d_table *def, hx_err *err) {
  const uint32_t n = in->n;
  const double pts = (double)n;
  hx_status st = HX_OK;
  for (int h = 0; h < PSH_HASH_COUNT && st == HX_OK; h++) {
    psh_params p;
    case_params(&p, ctx, (psh_hash)h, nmax);
    const uint32_t nbt = in->nclouds * p.nb;
    const int is_default = p.hash == default_hash();
    char kernel[64], lkernel[64];
    snprintf(kernel, sizeof kernel, "psh.%s", psh_hash_name(p.hash));
    snprintf(lkernel, sizeof lkernel, "locality.%s", psh_hash_name(p.hash));
    /* CPU reference: statistics, locality and the GPU checks' reference; timed where it is the only PSH (no GPU)
     * or with --ladder, run once otherwise */
    f3d_bufs cb;
    if (!bufs_alloc(&cb, n, nbt)) return hx_errf(err, HX_ENOMEM, "flash3d: no memory for %u points", n);
    f3d_job j = {in, &p, bufs_out(&cb), NULL, NULL, NULL, BPOOL_MEAN, PSH_F32};
    hx_closure c = {job_cpu, NULL, &j, 0, 0};
    st = !ctx->have_gpu || ctx->ladder ? timed(ctx, kernel, "cpu", HX_CLOCK_CPU, &c, 0, err) : job_cpu(&j, NULL, err);
    if (st == HX_OK) st = psh_check(&j.out, in, &p, err);
    psh_stats s;
    psh_stats_compute(&s, cb.count, nbt, cb.counters, p.cap);
    if (st == HX_OK) st = record_stats(ctx, kernel, "cpu", &s, err);
    uint64_t reach = 0; /* of the batch's buckets, those its hash can reach (a property of input and parameters) */
    for (uint32_t cl = 0; cl < in->nclouds; cl++) reach += psh_reachable_buckets(in, &p, cl, NULL);
    if (st == HX_OK) st = f3d_record(ctx, "flash3d", kernel, "cpu", "reachable_buckets", (double)reach, "count", err);
    psh_quality q;
    if (st == HX_OK) st = psh_quality_buckets(&q, cb.xyz, cb.start, cb.count, nbt, err);
    if (st == HX_OK) st = f3d_record(ctx, "flash3d", lkernel, "cpu", "diag_mean", q.diag_mean, "m", err);
    if (st == HX_OK) st = f3d_record(ctx, "flash3d", lkernel, "cpu", "spread_mean", q.spread_mean, "m", err);
    if (st == HX_OK && is_default) {
      st = psh_quality_zorder(&q, in, p.voxel, 1024, err);
      if (st == HX_OK) st = f3d_record(ctx, "flash3d", "locality.zorder1024", "cpu", "diag_mean", q.diag_mean, "m", err);
      if (st == HX_OK) st = f3d_record(ctx, "flash3d", "locality.zorder1024", "cpu", "spread_mean", q.spread_mean, "m", err);
    }
    const uint32_t cpu_first = cb.counters[0];
    if (st == HX_OK && is_default) { /* the attention stage's bucket table (psh_run_cpu again cost 0.1 s at 600k) */
      def->start = cb.start, def->count = cb.count;
      cb.start = cb.count = NULL;
    }
    bufs_free(&cb);
    if (st != HX_OK || !ctx->have_gpu) continue;
    /* GPU variants: v1, v2 and the best entry's (every rung with --ladder); each checked, then timed */
    const psh_variant *best = NULL, *vs[64];
    st = psh_variant_best(&best, n, in->nclouds, &p, err);
    if (st != HX_OK) return st;
    const size_t nv = f3d_plan_psh(vs, 64, ctx->ladder, best);
    int pooled = 0; /* pooling measured for this case already */
    psh_gpu *g = NULL;
    st = gpu_create(ctx, &g, in, &p, is_default ? F3D_FEAT_C : 0, err);
    if (st != HX_OK) return st;
    f3d_bufs gb;
    if (!bufs_alloc(&gb, n, nbt)) {
      gpu_free(ctx, g);
      return hx_errf(err, HX_ENOMEM, "flash3d: no memory for %u points", n);
    }
    if (h == 0) st = measure_floor(ctx, g, in, &gb, err); /* once per case, before the variants' runs */
    for (size_t k = 0; k < nv && st == HX_OK; k++) {
      const psh_variant *v = vs[k];
      hx_err cerr = {HX_OK, ""};
      psh_out go = bufs_out(&gb);
      /* poisoned first, so that the check sees only what this variant wrote, not the last one's output */
      hx_status cs = psh_gpu_poison(g, ctx->stream, &cerr);
      if (cs == HX_OK) cs = psh_gpu_run(g, v, ctx->stream, &cerr);
      if (cs == HX_OK) cs = psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &cerr);
      if (cs == HX_OK) cs = psh_check(&go, in, &p, &cerr);
      if (cs == HX_OK && (uint64_t)gb.counters[0] + gb.counters[1] + gb.counters[2] != n)
        cs = hx_errf(&cerr, HX_ECHECK, "counters do not sum to n");
      if (cs == HX_OK && v->id >= 2 && gb.counters[0] != cpu_first)
        cs = hx_errf(&cerr, HX_ECHECK, "phase-1 count %u, CPU %u", gb.counters[0], cpu_first);
      st = f3d_record(ctx, "flash3d", kernel, v->name, "check", cs == HX_OK ? 1.0 : 0.0, "bool", err);
      if (cs != HX_OK) {
        fprintf(stderr, "f3dbench: flash3d: %s %s failed its check, not timed: %s\n", kernel, v->name, cerr.msg);
        continue;
      }
      psh_stats_compute(&s, gb.count, nbt, gb.counters, p.cap);
      if (st == HX_OK) st = record_stats(ctx, kernel, v->name, &s, err);
      f3d_job gj = {in, &p, go, g, v, NULL, BPOOL_MEAN, PSH_F32};
      hx_closure gc = {job_gpu, NULL, &gj, 0, 0};
      if (st == HX_OK) st = timed(ctx, kernel, v->name, HX_CLOCK_GPU, &gc, F3D_PSH_BYTES_PER_POINT * pts, err);
      /* the same launch sequence as one CUDA graph: the GPU time without the host's per-launch cost (the best
       * entry's; every variant's with --ladder) */
      char gvar[32];
      snprintf(gvar, sizeof gvar, "%s.graph", v->name);
      hx_closure gg = {job_graph, NULL, &gj, 0, 0};
      if (st == HX_OK && ctx->stream && (ctx->ladder || v == best))
        st = timed(ctx, kernel, gvar, HX_CLOCK_GPU, &gg, F3D_PSH_BYTES_PER_POINT * pts, err);
      if (st != HX_OK || !is_default) continue;
      /* features on this variant's (checked) output: the best entry's fp32 rows (every variant, both dtypes,
       * with --ladder) */
      for (int dt = 0; dt < 2 && st == HX_OK; dt++) {
        if (!ctx->ladder && (v != best || dt)) continue;
        char var[32];
        snprintf(var, sizeof var, "%s.%s", v->name, dt ? "bf16" : "f32");
        gj.dt = dt ? PSH_BF16 : PSH_F32;
        hx_closure fc = {job_feat, NULL, &gj, 0, 0};
        st = timed(ctx, "scatter_feat", var, HX_CLOCK_GPU, &fc, (2.0 * (dt ? 2 : 4) * F3D_FEAT_C + 4.0) * pts, err);
      }
      /* Pooling does not depend on which PSH variant bucketed the points (every variant meets the same
       * invariants), so it is measured once per case, on the first GPU variant's checked output (v1's, so the
       * rows keep the keys "v1+<pool>" of every run before the main path). */
      if (st != HX_OK || pooled) continue;
      pooled = 1;
      st = measure_pooling(ctx, g, &gj, v->name, n, nbt, err);
    }
    bufs_free(&gb);
    gpu_free(ctx, g);
  }
  return st;
}

hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err) {
  const wl_batch *bt = ctx->c.cloud;
  if (bt->n > PSH_MAX_POINTS) return hx_errf(err, HX_EINVAL, "flash3d: %zu points exceed the PSH limit", bt->n);
  uint32_t *off = malloc(((size_t)bt->b + 1) * sizeof *off);
  if (!off) return hx_errf(err, HX_ENOMEM, "flash3d: no memory");
  size_t nmax = 0;
  for (uint32_t b = 0; b <= bt->b; b++) {
    off[b] = (uint32_t)bt->offset[b];
    if (b < bt->b && bt->offset[b + 1] - bt->offset[b] > nmax) nmax = bt->offset[b + 1] - bt->offset[b];
  }
  psh_in in = {bt->xyz, off, bt->b, (uint32_t)bt->n};
  f3d_table def = {NULL, NULL};
  hx_status st = psh_span_check(&in, (float)ctx->c.voxel, err); /* a recorded cloud past the hashes' grid */
  if (st == HX_OK) st = run_case(ctx, &in, nmax, &def, err);
  if (st == HX_OK) st = run_attention(ctx, &in, nmax, &def, err);
  free(def.start), free(def.count);
  free(off);
  return st;
}
