/*
 * net_run.c - helpers around a backbone forward shared by `f3dbench net` and the ptv3-net / flash3d-net sweep
 * pipelines (net_run.h).
 */
#include "app/net_run.h"

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

hx_status f3d_net_input(net_input *in, float **feat, const wl_batch *bt, double grid_size, uint64_t seed, hx_err *err) {
  memset(in, 0, sizeof *in);
  *feat = NULL;
  if (!bt || bt->n == 0 || bt->b == 0) return hx_errf(err, HX_EINVAL, "net: empty cloud (no points to run)");
  for (uint32_t c = 0; c < bt->b; c++)
    if (bt->offset[c + 1] <= bt->offset[c]) return hx_errf(err, HX_EINVAL, "net: cloud %u of the batch is empty", c);
  for (size_t i = 0; i < bt->n * 3; i++)
    if (!(bt->xyz[i] == bt->xyz[i]) || bt->xyz[i] > 3.0e38f || bt->xyz[i] < -3.0e38f)
      return hx_errf(err, HX_EINVAL, "net: point %zu has a non-finite coordinate", i / 3);
  float *f = malloc(bt->n * 4 * sizeof *f);
  if (!f) return hx_errf(err, HX_ENOMEM, "net: features of %zu points", bt->n);
  for (size_t i = 0; i < bt->n; i++) {
    f[i * 4 + 0] = bt->xyz[i * 3 + 0];
    f[i * 4 + 1] = bt->xyz[i * 3 + 1];
    f[i * 4 + 2] = bt->xyz[i * 3 + 2];
    f[i * 4 + 3] = (float)hx_rng_unit(seed, 0x1D, i);
  }
  in->xyz = bt->xyz;
  in->feat = f;
  in->offset = bt->offset;
  in->B = bt->b;
  in->n = bt->n;
  in->grid_size = grid_size;
  in->seed = seed;
  *feat = f;
  return HX_OK;
}

static hx_status arena_alloc(void *ctx, void **p, size_t bytes, const char *label, hx_err *err) {
  return hx_arena_alloc((hx_arena *)ctx, p, bytes, label, err);
}
static void arena_release(void *ctx, void *p) { (void)hx_arena_free((hx_arena *)ctx, p, NULL); }

net_alloc f3d_net_arena(hx_arena *a) {
  net_alloc n = {arena_alloc, arena_release, a};
  return n;
}

hx_status f3d_net_fits(size_t *need, net_mem *parts, const net_config *cfg, const net_input *in, net_dtype dt,
                       size_t cap, hx_err *err) {
  net_mem local;
  net_mem *m = parts ? parts : &local;
  HX_TRY(net_gpu_memory(m, cfg, in, dt, err));
  const size_t bytes = m->total;
  if (need) *need = bytes;
#if F3D_HAVE_CUDA
  size_t free_b = 0, total_b = 0;
  cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "net: cudaMemGetInfo: %s", cudaGetErrorString(e));
  if (cap && cap < free_b && bytes > cap)
    return hx_errf(err, HX_ENOMEM,
                   "net: %s on %zu points needs %.1f MiB of device memory, more than the %.1f MiB of "
                   "--device-memory (%.2f GiB free of %.2f GiB): refused before any allocation",
                   cfg->name, in->n, (double)bytes / 1048576.0, (double)cap / 1048576.0,
                   (double)free_b / 1073741824.0, (double)total_b / 1073741824.0);
  if (bytes > free_b)
    return hx_errf(err, HX_ENOMEM,
                   "net: %s on %zu points needs %.2f GiB of device memory, %.2f GiB free of %.2f GiB: refused "
                   "before any allocation",
                   cfg->name, in->n, (double)bytes / 1073741824.0, (double)free_b / 1073741824.0,
                   (double)total_b / 1073741824.0);
  return HX_OK;
#else
  (void)cap;
  return hx_errf(err, HX_ENODEV, "net: built without CUDA");
#endif
}

/* ---- per-component breakdown ----------------------------------------------------------------------- */
#define BD_MAX_EVENTS 8192
#define BD_MAX_DEPTH 16

typedef struct bd_span {
  int begin, end;   /* event indices */
  int comp;         /* index into the breakdown's names */
  int part;         /* index into the breakdown's parts, -1 past the table */
} bd_span;

typedef struct bd_ctx {
  f3d_net_breakdown *out;
#if F3D_HAVE_CUDA
  cudaEvent_t *ev;
#endif
  int n_ev;
  int stack[BD_MAX_DEPTH];
  int child[BD_MAX_DEPTH]; /* 1 once a range at this depth opened a nested one */
  char name[BD_MAX_DEPTH][64];
  int depth;
  bd_span *spans;
  int n_spans;
  int overflow;
  hx_ranges nvtx; /* the same ranges as NVTX ranges (domain "flash3d"), for Nsight Systems */
} bd_ctx;

#if F3D_HAVE_CUDA
/* The index of key (at most 15 characters) in names[0..*n), added at the end when missing; -1 when the table
 * (cap names) is full. The breakdown's components and parts and the counters' groups are such tables. */
static int name_slot(char (*names)[16], size_t *n, size_t cap, const char *key) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(names[i], key) == 0) return (int)i;
  if (*n == cap) return -1;
  snprintf(names[*n], 16, "%s", key);
  return (int)(*n)++;
}

/* "enc2/block1/attn" -> "attn"; "enc2/pool" -> "pool"; a suffix after '.' is dropped ("attn.v5" -> "attn"). */
static int bd_component(f3d_net_breakdown *b, const char *path) {
  char key[16];
  hx_range_category(path, key, sizeof key); /* the rule the counters per component use too */
  return name_slot(b->name, &b->n, F3D_NET_MAX_COMPONENTS, key);
}

/* "enc2/block1/attn" -> "enc2"; "serialize" -> "serialize" (at most 15 characters). */
static int bd_part(f3d_net_breakdown *b, const char *path) {
  char key[16];
  const size_t k = strcspn(path, "/");
  snprintf(key, sizeof key, "%.*s", (int)(k < sizeof key ? k : sizeof key - 1), path);
  return name_slot(b->part, &b->n_parts, F3D_NET_MAX_PARTS, key);
}

static void bd_range(void *vctx, const char *name, int begin, struct CUstream_st *stream) {
  bd_ctx *c = vctx;
  if (c->overflow) return;
  if (c->n_ev >= BD_MAX_EVENTS || (begin && c->depth >= BD_MAX_DEPTH) || (!begin && c->depth == 0)) {
    c->overflow = 1;
    return;
  }
  const int e = c->n_ev++;
  cudaEventRecord(c->ev[e], (cudaStream_t)stream);
  if (begin) (void)hx_range_push(&c->nvtx, name, NULL);
  else (void)hx_range_pop(&c->nvtx, NULL);
  if (begin) {
    c->out->ranges++;
    if (c->depth > 0) c->child[c->depth - 1] = 1;
    c->stack[c->depth] = e;
    c->child[c->depth] = 0;
    snprintf(c->name[c->depth], sizeof c->name[0], "%s", name);
    c->depth++;
  } else {
    c->depth--;
    if (!c->child[c->depth] && c->n_spans < BD_MAX_EVENTS / 2) {
      const int comp = bd_component(c->out, c->name[c->depth]);
      if (comp >= 0) c->spans[c->n_spans++] = (bd_span){c->stack[c->depth], e, comp, bd_part(c->out, c->name[c->depth])};
    }
  }
}
#endif

hx_status f3d_net_breakdown_run(f3d_net_breakdown *out, net_gpu *g, void *stream, hx_err *err) {
  memset(out, 0, sizeof *out);
#if F3D_HAVE_CUDA
  bd_ctx c;
  memset(&c, 0, sizeof c);
  c.out = out;
  c.ev = calloc(BD_MAX_EVENTS, sizeof *c.ev);
  c.spans = calloc(BD_MAX_EVENTS / 2, sizeof *c.spans);
  hx_status st = c.ev && c.spans ? HX_OK : hx_errf(err, HX_ENOMEM, "net breakdown: event table");
  int made = 0;
  for (; st == HX_OK && made < BD_MAX_EVENTS; made++) {
    cudaError_t e = cudaEventCreate(&c.ev[made]);
    if (e != cudaSuccess) st = hx_errf(err, HX_ECUDA, "net breakdown: cudaEventCreate: %s", cudaGetErrorString(e));
  }
  if (st == HX_OK) {
    hx_ranges_init(&c.nvtx, "flash3d", NULL);
    net_hooks h = {bd_range, &c};
    st = net_gpu_forward(g, &h, (struct CUstream_st *)stream, err);
    hx_ranges_fini(&c.nvtx);
  }
  if (st == HX_OK) {
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) st = hx_errf(err, HX_ECUDA, "net breakdown: forward: %s", cudaGetErrorString(e));
  }
  if (st == HX_OK && (c.overflow || c.depth != 0))
    st = hx_errf(err, HX_EINVAL, "net breakdown: the forward's ranges do not nest (or exceed %d events)", BD_MAX_EVENTS);
  for (int i = 0; st == HX_OK && i < c.n_spans; i++) {
    float ms = 0;
    cudaError_t e = cudaEventElapsedTime(&ms, c.ev[c.spans[i].begin], c.ev[c.spans[i].end]);
    if (e != cudaSuccess) st = hx_errf(err, HX_ECUDA, "net breakdown: elapsed time: %s", cudaGetErrorString(e));
    out->ms[c.spans[i].comp] += (double)ms;
    out->calls[c.spans[i].comp]++;
    if (c.spans[i].part >= 0) out->part_ms[c.spans[i].part][c.spans[i].comp] += (double)ms;
  }
  if (st == HX_OK && c.n_ev >= 2) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, c.ev[0], c.ev[c.n_ev - 1]) == cudaSuccess) out->total_ms = (double)ms;
  }
  for (int i = 0; i < made && c.ev; i++) cudaEventDestroy(c.ev[i]);
  free(c.ev);
  free(c.spans);
  return st;
#else
  (void)g, (void)stream;
  return hx_errf(err, HX_ENODEV, "net breakdown: built without CUDA");
#endif
}

/* ---- counters per component ------------------------------------------------------------------------- */
#if F3D_HAVE_CUDA
static void cc_range(void *vctx, const char *name, int begin, struct CUstream_st *stream) {
  (void)stream;
  hx_flat_range((hx_flat *)vctx, name, begin);
}

/* The group of a flat range: its component (added in first-seen order), "other" for a gap; -1 when full. */
static long cc_group(f3d_net_counters *out, const hx_flat_seg *seg) {
  char key[16] = "other";
  if (seg->leaf) hx_range_category(seg->path, key, sizeof key);
  return name_slot(out->name, &out->n, F3D_NET_COUNTER_GROUPS, key);
}

/* The decoded ranges of a session summed into out's components and its whole: exactly the pass's flat ranges, each
 * once. CUPTI reports a user range also when no kernel ran in it (the first device run's "other" rows: ranges of
 * sm_active 0 and gpu_time > 0), so a range missing is a range lost, never an empty one: refused. */
static hx_status cc_decode(f3d_net_counters *out, const hx_flat *fl, hx_bench *b, size_t n, hx_err *err) {
  if (n != fl->n)
    return hx_errf(err, HX_ECUDA, "net counters: %zu of the pass's %zu flat ranges decoded: CUPTI lost the rest (a "
                   "range profiler's trace buffer holds the ranges of its first pass: hx_counters_set_max_ranges)", n,
                   fl->n);
  const size_t nm = b->n_metrics;
  double *vals = malloc((n ? n : 1) * nm * sizeof *vals);
  double *tmp = malloc(F3D_NET_COUNTER_GROUPS * nm * sizeof *tmp);
  long *grp = malloc((n ? n : 1) * sizeof *grp), *all = malloc((n ? n : 1) * sizeof *all);
  unsigned char *seen = calloc(n ? n : 1, 1);
  hx_status st = vals && tmp && grp && all && seen ? HX_OK : hx_errf(err, HX_ENOMEM, "net counters: %zu ranges", n);
  for (size_t i = 0; i < n && st == HX_OK; i++) {
    const char *name = NULL;
    st = hx_counters_range(b->counters, i, &name, vals + i * nm, err);
    const long idx = st == HX_OK ? hx_flat_index(fl, name) : -1;
    if (st == HX_OK && idx < 0)
      st = hx_errf(err, HX_ECUDA, "net counters: decoded range \"%s\" is none of the pass's %zu flat ranges", name,
                   fl->n);
    if (st == HX_OK && seen[idx]++)
      st = hx_errf(err, HX_ECUDA, "net counters: flat range %ld decoded twice (\"%s\")", idx, name);
    if (st == HX_OK && (grp[i] = cc_group(out, &fl->seg[idx])) < 0)
      st = hx_errf(err, HX_EINVAL, "net counters: more than %d components", F3D_NET_COUNTER_GROUPS);
    all[i] = 0;
  }
  if (st == HX_OK) st = hx_counters_aggregate(tmp, out->n, vals, grp, n, b->metric_names, nm, err);
  if (st == HX_OK) st = hx_counters_aggregate(out->whole, 1, vals, all, n, b->metric_names, nm, err);
  for (size_t k = 0; st == HX_OK && k < out->n; k++) memcpy(out->v[k], tmp + k * nm, nm * sizeof *tmp);
  if (st == HX_OK) out->ranges = n;
  free(vals), free(tmp), free(grp), free(all), free(seen);
  return st;
}

/* One session: the forward once per replay pass, the L2 flushed before each (as for a cold sample). */
static hx_status cc_session(f3d_net_counters *out, hx_flat *fl, net_gpu *g, hx_bench *b, void *stream, hx_err *err) {
  hx_counters *c = b->counters;
  const net_hooks h = {cc_range, fl};
  HX_TRY(hx_counters_session_begin(c, err));
  for (int done = 0; !done;) {
    if (out->passes == 64)
      return hx_errf(err, HX_EUNSUPPORTED, "net counters: more than 64 passes; reduce the metric set");
    HX_TRY(hx_meter_flush_l2(b->meter, err));
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
      return hx_errf(err, HX_ECUDA, "net counters: before pass %zu: %s", out->passes, cudaGetErrorString(e));
    HX_TRY(hx_counters_pass_begin(c, err));
    hx_flat_begin(fl, "forward");
    hx_status st = net_gpu_forward(g, &h, (struct CUstream_st *)stream, err);
    hx_err ferr;
    const hx_status fst = hx_flat_end(fl, &ferr); /* closes the last flat range also after a failure */
    if (st == HX_OK && fst != HX_OK) st = hx_errf(err, fst, "net counters: %s", ferr.msg);
    if (st == HX_OK && (e = cudaStreamSynchronize((cudaStream_t)stream)) != cudaSuccess)
      st = hx_errf(err, HX_ECUDA, "net counters: forward in pass %zu: %s", out->passes, cudaGetErrorString(e));
    if (st != HX_OK) {
      hx_err ignored;
      (void)hx_counters_pass_end(c, NULL, &ignored);
      return st;
    }
    HX_TRY(hx_counters_pass_end(c, &done, err));
    out->passes++;
  }
  size_t n = 0;
  HX_TRY(hx_counters_session_end(c, &n, err));
  return cc_decode(out, fl, b, n, err);
}
#endif

hx_status f3d_net_counters_run(f3d_net_counters *out, net_gpu *g, hx_bench *b, void *stream, size_t hook_ranges,
                               hx_err *err) {
  memset(out, 0, sizeof *out);
#if F3D_HAVE_CUDA
  if (!b || !b->counters)
    return hx_errf(err, HX_EUNSUPPORTED, "net counters: counters are off%s%s", b && b->counters_off[0] ? ": " : "",
                   b ? b->counters_off : "");
  if (!g || b->n_metrics == 0 || b->n_metrics > HX_BENCH_MAX_METRICS || hook_ranges == 0)
    return hx_errf(err, HX_EINVAL, "net counters: no forward, no metric or no hook range");
  out->n_metrics = b->n_metrics;
  double none = 0.0; /* the metric set can be summed over ranges (gpu_time present): asked before any replay */
  HX_TRY(hx_counters_aggregate(&none, 0, NULL, NULL, 0, b->metric_names, b->n_metrics, err));
  const size_t cap = 1 + 2 * hook_ranges, before = hx_counters_max_ranges(b->counters);
  hx_flat fl;
  HX_TRY(hx_flat_init(&fl, b->counters, cap, err));
  hx_status st = cap > before ? hx_counters_set_max_ranges(b->counters, cap, err) : HX_OK;
  if (st == HX_OK) st = cc_session(out, &fl, g, b, stream, err);
  if (cap > before) { /* the stages after this one hold one range each: give the image back its size */
    hx_err rerr;
    const hx_status rs = hx_counters_set_max_ranges(b->counters, before, &rerr);
    if (st == HX_OK && rs != HX_OK) st = hx_errf(err, rs, "%s", rerr.msg);
  }
  hx_flat_fini(&fl);
  return st;
#else
  (void)g, (void)b, (void)stream, (void)hook_ranges;
  return hx_errf(err, HX_ENODEV, "net counters: built without CUDA");
#endif
}
