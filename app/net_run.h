/*
 * net_run.h - private to the f3dbench program: what `f3dbench net` and the sweep's ptv3-net / flash3d-net
 * pipelines share around a backbone forward (nets/): the input built from a batch of clouds, the arena behind
 * the forward's allocator, the fit check before any allocation, and the per-component breakdown (CUDA events
 * at the forward's hook ranges).
 */
#ifndef F3D_APP_NET_RUN_H
#define F3D_APP_NET_RUN_H

#include "harness/harness.h"
#include "nets/nets.h"
#include "workloads/workloads.h"

/* The forward's input for a batch: feat = (x, y, z, intensity). The readers and generators keep xyz only, so
 * intensity is a seeded uniform value in [0, 1) per point (hx_rng_unit(seed, 0x1D, i)): a stand-in with the
 * range of normalised lidar strength. *feat is malloc'd [n * 4] (free it); in points into bt and *feat. */
hx_status f3d_net_input(net_input *in, float **feat, const wl_batch *bt, double grid_size, uint64_t seed, hx_err *err);

/* A net_alloc over an hx_arena (every device buffer of a forward is an arena allocation, labelled). */
net_alloc f3d_net_arena(hx_arena *a);

/* Refuse, before any allocation, an input whose forward cannot fit: compares net_gpu_memory's total with the
 * device's free memory (cudaMemGetInfo), or with cap where cap (bytes, 0: none) is less, and fails with HX_ENOMEM
 * naming both. *need receives the bytes asked; parts (NULL: not wanted) the breakdown they come from. */
hx_status f3d_net_fits(size_t *need, net_mem *parts, const net_config *cfg, const net_input *in, net_dtype dt,
                       size_t cap, hx_err *err);

/* Time per component of one forward: CUDA events at every innermost hook range, summed by component (the last
 * path element up to any '.', from NET_COMPONENTS); total_ms = first event to last. One extra forward is run, each
 * range also pushed as an NVTX range (domain "flash3d": levels, blocks, components nest as in the forward). */
#define F3D_NET_MAX_COMPONENTS 24
#define F3D_NET_MAX_PARTS 16
typedef struct f3d_net_breakdown {
  size_t n;
  char name[F3D_NET_MAX_COMPONENTS][16];
  double ms[F3D_NET_MAX_COMPONENTS];
  unsigned calls[F3D_NET_MAX_COMPONENTS];
  double total_ms;
  size_t ranges; /* hook ranges of the forward (begins), every one, leaf or not */
  /* the same time by part of the network (a range path's first element: "enc3", "dec1", or the whole name of a
   * top-level range) and component: where a component's time goes level by level; parts past the table are
   * left out of it (never of ms) */
  size_t n_parts;
  char part[F3D_NET_MAX_PARTS][16];
  double part_ms[F3D_NET_MAX_PARTS][F3D_NET_MAX_COMPONENTS];
} f3d_net_breakdown;
hx_status f3d_net_breakdown_run(f3d_net_breakdown *out, net_gpu *g, void *stream, hx_err *err);

/* Counters per component of one forward, in a counter pass of its own after the timing (b->counters, its metric
 * set): the hook ranges flattened into one level of CUPTI user ranges (hx_flat: 1 + 2 x hook_ranges flat ranges,
 * the replay passes of the metric set alone, 1 for the default set), the L2 flushed before each pass; each flat
 * range summed into its component (the category of a range without nested ones, as the breakdown names it) or
 * into "other" (work of a level or block outside its components, or outside every range), by
 * hx_counters_aggregate; whole = every flat range. hook_ranges: f3d_net_breakdown.ranges of the same forward.
 * HX_EUNSUPPORTED when counters are off (b or b->counters NULL), or a rate is asked without gpu_time in the set;
 * HX_ECUDA when the decoded ranges are not exactly the pass's flat ranges (CUPTI reports empty ranges too). */
#define F3D_NET_COUNTER_GROUPS (F3D_NET_MAX_COMPONENTS + 1)
typedef struct f3d_net_counters {
  size_t n; /* components, in the forward's order */
  char name[F3D_NET_COUNTER_GROUPS][16];
  double v[F3D_NET_COUNTER_GROUPS][HX_BENCH_MAX_METRICS]; /* in b->metric_names' order */
  double whole[HX_BENCH_MAX_METRICS];
  size_t n_metrics, ranges, passes; /* flat ranges decoded, replay passes */
} f3d_net_counters;
hx_status f3d_net_counters_run(f3d_net_counters *out, net_gpu *g, hx_bench *b, void *stream, size_t hook_ranges,
                               hx_err *err);


#endif /* F3D_APP_NET_RUN_H */
