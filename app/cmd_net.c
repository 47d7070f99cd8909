/*
 * cmd_net.c - `f3dbench net`: one backbone forward (PTv3-m1 or Flash3D, nets/), checked against the fp32 CPU
 * forward, then timed; prints latency, peak memory, parameters and the time per component.
 *
 * Order of work: every argument is validated before anything is read or built; the model and weights come
 * next (an unknown model or a bad weight file fails before any cloud is made); the input is refused before any
 * device allocation when its forward cannot fit (net_gpu_bytes against cudaMemGetInfo). The check runs on a
 * cloud small enough for the CPU forward (the input itself when it has at most --check-points points per
 * cloud, else the first --check-points points of each of its clouds), on its own forward object, and a failing
 * check exits 1 before any timing; the timed input's logits must then be finite (else exit 1, nothing saved), as
 * must the --device cpu forward's (finite but huge weights overflow fp32 too). --save
 * writes .npy files (input, every level, logits) of the timed input, the weights it ran and PTv3's orders.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/net_run.h"
#include "baselines/baselines.h"
#include "f3d_config.h"
#include "kernels/kernels.h"

#if F3D_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop
#endif

static void net_usage(FILE *f) {
  size_t n = 0;
  const char *const *names = net_config_names(&n);
  fprintf(f,
          "usage: f3dbench net --model NAME [--points N | --input FILE] [--batch B] [--dtype fp16|bf16]\n"
          "                    [--weights FILE.safetensors] [--save DIR] [--graph] [--voxel V] [--seed S]\n"
          "                    [--reps R] [--check-points N] [--device gpu|cpu] [--spconv VARIANT] [--attn VARIANT]\n"
          "                    [--mlp fused|partial|linear] [--ln fused|separate] [--tile-order longest|last]\n"
          "                    [--stem fused|map] [--overlap on|off] [--cpe-fold on|off] [--rehash on|off]\n"
          "                    [--lt-tune on|off] [--bucket-fill F] [--device-memory BYTES] [--memory]\n"
          "                    [--mlp-chunk N] [--scope K] [--patch K]\n"
          "  One backbone forward: checked against the fp32 CPU forward, then timed (median of R forwards after\n"
          "  warm-up); prints latency, peak device memory, parameters and the time per component.\n"
          "  --model NAME       one of:");
  for (size_t i = 0; i < n; i++) fprintf(f, " %s", names[i]);
  fprintf(f,
          "\n"
          "  --points N         points per cloud after one-point-per-voxel deduplication (synthetic lidar;\n"
          "                     default 100k; k/M suffixes)\n"
          "  --input FILE       a recorded cloud instead (PCD, PLY, .bin, xyz), deduplicated at --voxel; a\n"
          "                     point with a NaN or Inf coordinate is an error (the sweep drops such points)\n"
          "  --batch B          clouds in the batch, 1..16 (default 1; with --input the file is repeated)\n"
          "  --dtype T          activations fp16 (default) or bf16; fp32 accumulation either way\n"
          "  --weights FILE     safetensors with the PyTorch module names (default: seeded random weights)\n"
          "  --save DIR         write input_xyz.npy, input_feat.npy, offset.txt, <level>.npy, logits.npy,\n"
          "                     weights.safetensors (the parameters it ran, PyTorch names) and, PTv3, orders.txt\n"
          "                     (each level's serialization orders after the shuffles), all or none of them;\n"
          "                     DIR, or its parent, must exist and be writable (checked before the forward);\n"
          "                     files of an earlier save that this one does not write stay in DIR; on the\n"
          "                     GPU every level then keeps its own activations: more device memory\n"
          "  --graph            also time the forward replayed as one CUDA graph (when it never syncs the host)\n"
          "  --voxel V          grid / voxel size in metres (default 0.05)\n"
          "  --seed S           cloud, intensity, weight and order-shuffle seed (default 3407)\n"
          "  --reps R           timed forwards (default 20)\n"
          "  --check-points N   points per cloud of the check against the CPU forward (default 3000)\n"
          "  --device D         gpu (default when built with CUDA) or cpu (the fp32 reference forward alone)\n"
          "  --spconv VARIANT   PTv3 on the GPU: the k = 3 (xCPE) convolutions' variant (v0, v1, v3 ...; default:\n"
          "                     the best for each width, the main path) where it takes their widths, the main\n"
          "                     path's elsewhere; an ablation, checked like the default\n"
          "  --attn VARIANT     on the GPU: the attention variant of every level (v1 ... v24, `f3dbench attn --help`;\n"
          "                     default: the best that runs here, v9 on sm_90a); an ablation, checked like the default\n"
          "  --mlp fused|partial|linear  on the GPU: the blocks' MLP as one kernel that keeps the hidden row on\n"
          "                     chip where it takes the width (fused, the default: PTv3 at C = 32 to 256, Flash3D\n"
          "                     at C = 32 to 192 (C >= 96 on sm_90a; without it, Flash3D's C = 96 runs fc1 +\n"
          "                     SwiGLU as one kernel); partial: Flash3D's fc1 + SwiGLU kernel wherever\n"
          "                     it takes the width (C = 32, 64, 96), no whole-MLP kernel; linear: cuBLASLt Linears\n"
          "                     (and Flash3D's SwiGLU pass) everywhere\n"
          "  --ln fused|separate  on the GPU: a LayerNorm inside the kernel of the Linear next to it where one\n"
          "                     takes the width (fused, the default: a block's norm.1 in its qkv kernel at\n"
          "                     C = 32 and 64, Flash3D's also at 48 and 96; PTv3's xCPE LayerNorm + residual in\n"
          "                     its Linear at C = 32 and 64; the MLP's LayerNorm in the whole-MLP kernel), or\n"
          "                     every LayerNorm its own pass\n"
          "  --tile-order longest|last  PTv3 on the GPU: spconv v6 takes a level's tiles most active offsets\n"
          "                     first (longest, the default: a counting sort once per level) or last-first\n"
          "                     (last); the same sums either way\n"
          "  --stem fused|map   PTv3 on the GPU: the stem's convolution, BatchNorm and GELU in one pass from the\n"
          "                     voxel table (fused, the default: its 125-entry map never stored) or through\n"
          "                     the stored map, a convolution variant and a BatchNorm + GELU pass (map)\n");
  fprintf(f,
          "  --overlap on|off   PTv3 on the GPU: the structure (serialization, pooling structure, kernel maps,\n"
          "                     padding) on a second stream ahead of the features (on, the default) or on the\n"
          "                     forward's one stream (off); the per-component times run on one stream either way\n"
          "  --cpe-fold on|off  PTv3 on the GPU: each xCPE's Linear folded into its convolution's weights at\n"
          "                     create (on, the default: one GEMM fewer a block, checked against the CPU\n"
          "                     forward like every forward) or run after it (off)\n"
          "  --lt-tune on|off   on the GPU: each cuBLASLt Linear shape's algorithm timed among the heuristic's\n"
          "                     first 8 when the forward first runs it, outside the timed forwards (on, the\n"
          "                     default; accumulating Linears keep the first) or the heuristic's first (off)\n"
          "  --rehash on|off    Flash3D: each encoder level re-hashes its pooled points with PSH (on, the default,\n"
          "                     the paper's best ablation row) or keeps them in pooling order (off, as the public\n"
          "                     code: no PSH past level 0, attention over fixed windows of bucket rows per cloud)\n"
          "  --bucket-fill F    Flash3D: ceil(rows / (bucket F)) buckets per cloud at every hashed level, F in\n"
          "                     0.1..1, instead of the public rule (the next power of two of rows / bucket: fill\n"
          "                     50-100%%, a step in latency at each power of two)\n"
          "  --scope K          Flash3D: buckets per attention scope, 1..64 (default the configuration's: 8 for\n"
          "                     flash3d-public/46m/129m, so 4096 keys a query; 4 for flash3d-tiny; 2 gives PTv3's\n"
          "                     1024, as flash3d-46m-scope2): not the paper's network, an ablation of its\n"
          "                     attention span on the same weights\n"
          "  --patch K          PTv3: rows per attention patch, 1..16384 (default the configuration's: 1024 for\n"
          "                     ptv3, the nuScenes config; 4096 for ptv3-patch4096, the scope at which the\n"
          "                     paper's Table 2 fixes every model; 64 for ptv3-tiny); the same weights\n"
          "  --mlp-chunk N      on the GPU: an MLP that is not one kernel makes its hidden rows in chunks of at\n"
          "                     most N elements ([rows, 4C]; e.g. 33554432, the default, or 16M), so its work\n"
          "                     buffers are sized for a chunk, not a level; 0: every row at once\n"
          "  --device-memory B  device memory the forward may use (e.g. 512M, 2G): a forward whose estimate\n"
          "                     is larger is refused before any allocation, as one larger than the free memory\n"
          "  --memory           print where the GPU forward's device memory would go, by kind and by buffer\n"
          "                     (the estimate checked before any allocation, which the arena's peak reaches),\n"
          "                     and stop: no forward runs (the launchers' size queries need the device)\n");
}

typedef struct net_cli {
  const char *model, *input, *weights, *save;
  uint64_t points, batch, reps, check_points, seed;
  double voxel;
  net_dtype dt;
  int graph, cpu;
  const char *spconv; /* --spconv: a variant name, or NULL */
  int mlp;            /* --mlp: -1 not given, 0 linear, 1 fused, 2 partial */
  int ln;             /* --ln: -1 not given, 0 separate, 1 fused */
  int tiles;          /* --tile-order: -1 not given, 0 last, 1 longest */
  int stem;           /* --stem: -1 not given, 0 map, 1 fused */
  int overlap;        /* --overlap: -1 not given, 0 off, 1 on */
  int fold;           /* --cpe-fold: -1 not given, 0 off, 1 on */
  int tune;           /* --lt-tune: -1 not given, 0 off, 1 on */
  int rehash;         /* --rehash: -1 the configuration's (on), 0 off, 1 on */
  double fill;        /* --bucket-fill: 0 not given (the configuration's rule) */
  int scope;          /* --scope: buckets per attention scope; 0 not given (the configuration's) */
  int patch;          /* --patch: PTv3's rows per attention patch; 0 not given (the configuration's) */
  uint64_t device_memory; /* --device-memory: bytes the forward may use; 0: the device's free memory */
  int memory;             /* --memory: print the forward's memory breakdown, run nothing */
  uint64_t mlp_chunk;     /* --mlp-chunk: hidden elements a chunk; UINT64_MAX not given (NET_MLP_CHUNK) */
  const char *attn;       /* --attn: an attention variant name, or NULL */
} net_cli;

/* A two-word option: *out = 1 for `one`, 0 for `zero`; otherwise the usage error naming both, and 2 (the exit
 * code), which the caller returns. */
static int two_words(const char *opt, const char *arg, const char *one, const char *zero, int *out) {
  if (strcmp(arg, one) == 0) *out = 1;
  else if (strcmp(arg, zero) == 0) *out = 0;
  else return f3d_fail("net", "%s '%s': %s or %s", opt, arg, one, zero), 2;
  return 0;
}

/* An integer option from lo to hi, `what` naming what it counts: 0, or 2 after the message. */
static int int_in(const char *opt, const char *arg, int lo, int hi, const char *what, int *out) {
  uint64_t k = 0;
  if (f3d_parse_u64(arg, &k) || k < (uint64_t)lo || k > (uint64_t)hi)
    return f3d_fail("net", "%s '%s': %s, %d to %d", opt, arg, what, lo, hi), 2;
  *out = (int)k;
  return 0;
}

/* Clouds of the run: B synthetic lidar clouds of exactly `points` unique voxels each (seed + c), or the file's
 * deduplicated cloud B times. */
static int make_batch(wl_batch *bt, const net_cli *o) {
  hx_err err = {HX_OK, ""};
  wl_cloud *cl = calloc(o->batch, sizeof *cl);
  if (!cl) return f3d_fail("net", "out of memory"), 1;
  int rc = 0;
  if (o->input) {
    wl_cloud raw = {0};
    if (wl_read(&raw, o->input, WL_FMT_AUTO, &err) != HX_OK) rc = (f3d_fail_msg(o->input, err.msg), 1);
    if (!rc && raw.dropped_nonfinite) { /* the sweep drops such points; a forward's input is refused instead */
      size_t first = raw.n; /* the file position of the first point dropped: the first kept point out of place */
      for (size_t i = 0; i < raw.n && first == raw.n; i++)
        if (wl_cloud_src_index(&raw, i) != i) first = i;
      rc = (f3d_fail(o->input, "%zu point%s with a non-finite (NaN or Inf) coordinate, the first at point %zu of the "
                     "file: a forward takes finite clouds only", raw.dropped_nonfinite,
                     raw.dropped_nonfinite == 1 ? "" : "s", first), 1);
    }
    if (!rc && wl_voxel_dedup(&cl[0], &raw, o->voxel, NULL, &err) != HX_OK) rc = (f3d_fail_msg(o->input, err.msg), 1);
    wl_cloud_free(&raw);
    for (uint64_t c = 1; !rc && c < o->batch; c++) {
      if (wl_cloud_alloc(&cl[c], cl[0].n, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
      else memcpy(cl[c].xyz, cl[0].xyz, cl[0].n * 3 * sizeof(float));
    }
  } else {
    for (uint64_t c = 0; !rc && c < o->batch; c++)
      if (wl_make_exact(&cl[c], WL_LIDAR, NULL, (size_t)o->points, o->voxel, o->seed + c, NULL, &err) != HX_OK)
        rc = (f3d_fail_msg("net", err.msg), 1);
  }
  if (!rc && wl_batch_from_clouds(bt, cl, (uint32_t)o->batch, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
  for (uint64_t c = 0; c < o->batch; c++) wl_cloud_free(&cl[c]);
  free(cl);
  return rc;
}


/* --save's files are written through f3d_stage (cli.h): into DIR/.net-save.XXXXXX, then renamed into DIR once all
 * are written and no destination is a folder, so a failure leaves DIR as it was. */
_Static_assert(2 * NET_MAX_LEVELS + 8 <= F3D_STAGE_MAX, "a save's files fit f3d_stage's list");

/* One staged file: a float32 [rows, cols] .npy, or text. */
static hx_status stage_npy(f3d_stage *st, const char *name, const float *data, size_t rows, size_t cols, hx_err *err) {
  char path[4300];
  const size_t shape[2] = {rows, cols};
  HX_TRY(f3d_stage_path(st, path, sizeof path, name, err));
  return f3d_npy_write(path, "<f4", 4, data, 2, shape, err);
}
static hx_status stage_text(f3d_stage *st, const char *name, const char *text, int len, hx_err *err) {
  char path[4300];
  HX_TRY(f3d_stage_path(st, path, sizeof path, name, err));
  return hx_write_file_atomic(path, text, (size_t)len, err);
}

/* PTv3: orders.txt's text, each level's four code rows by order name (net_ptv3_orders), for a Pointcept run. */
static hx_status orders_text(char *text, size_t cap, int *len, const net_config *cfg, uint64_t seed, hx_err *err) {
  *len = snprintf(text, cap,
                  "# PTv3's serialization orders after its shuffles (seed %llu): level, then the order of its code "
                  "rows 0..3;\n# block i of a level, encoder and decoder, attends in row i %% 4\n",
                  (unsigned long long)seed);
  for (int l = 0; l < cfg->levels && *len >= 0 && (size_t)*len < cap; l++) {
    int o[4];
    HX_TRY(net_ptv3_orders(cfg, seed, l, o, err));
    *len += snprintf(text + *len, cap - (size_t)*len, "%d %s %s %s %s\n", l, sfc_order_name((sfc_order)o[0]),
                     sfc_order_name((sfc_order)o[1]), sfc_order_name((sfc_order)o[2]), sfc_order_name((sfc_order)o[3]));
  }
  if (*len < 0 || (size_t)*len >= cap) return hx_errf(err, HX_EINVAL, "net --save: orders.txt longer than %zu bytes", cap);
  return HX_OK;
}

/* What a save writes (f3d_stage_save's arg). */
typedef struct net_save {
  const net_config *cfg;
  const net_params *p;
  const net_input *in;
  const net_output *o;
} net_save;

/* Every file of the save written into st->stage, each named in st's list as it is begun, so f3d_stage_abort removes
 * whatever a failure leaves (the writers remove their own temporaries). */
static hx_status stage_files(f3d_stage *st, void *arg, hx_err *err) {
  const net_save *sv = arg;
  const net_config *cfg = sv->cfg;
  const net_params *p = sv->p;
  const net_input *in = sv->in;
  const net_output *o = sv->o;
  char path[4300], name[40];
  HX_TRY(stage_npy(st, "input_xyz.npy", in->xyz, in->n, 3, err));
  HX_TRY(stage_npy(st, "input_feat.npy", in->feat, in->n, 4, err));
  for (size_t l = 0; l < o->n_levels; l++) {
    if (!o->level[l]) continue;
    snprintf(name, sizeof name, "%s.npy", o->level_name[l]);
    HX_TRY(stage_npy(st, name, o->level[l], o->level_rows[l], o->level_C[l], err));
  }
  HX_TRY(stage_npy(st, "logits.npy", o->logits, o->n, o->classes, err));
  char text[2048];
  int len = 0;
  for (uint32_t c = 0; c <= in->B && (size_t)len < sizeof text; c++)
    len += snprintf(text + len, sizeof text - (size_t)len, "%zu\n", in->offset[c]);
  if (len < 0 || (size_t)len >= sizeof text) return hx_errf(err, HX_EINVAL, "net --save: offset.txt too long");
  HX_TRY(stage_text(st, "offset.txt", text, len, err));
  HX_TRY(f3d_stage_path(st, path, sizeof path, "weights.safetensors", err));
  HX_TRY(net_params_save(p, path, err));
  if (cfg->kind == 0) {
    HX_TRY(orders_text(text, sizeof text, &len, cfg, in->seed, err));
    HX_TRY(stage_text(st, "orders.txt", text, len, err));
  }
  return HX_OK;
}

/* --save DIR's own limits, checked with the options: a file of the save is staged at
 * DIR/.net-save.XXXXXX/<name of up to 39 bytes>.tmp.<pid>, 17 + 1 + 39 + 15 + NUL = 73 bytes past DIR, which
 * must all fit PATH_MAX (4096) and f3d_stage's dir[4096]: DIR up to 4000 bytes, each of its components up to
 * NAME_MAX (255). The message quotes DIR by f3d_cut_path, so the reason always follows it whole. */
enum { SAVE_DIR_MAX = 4000, SAVE_NAME_MAX = 255 };
static int save_dir_usable(const char *dir) {
  const size_t n = strlen(dir);
  char qb[128];
  const char *q = f3d_cut_path(qb, dir);
  if (n == 0) return f3d_fail("net", "--save '': an empty path (name the directory to write into)"), 0;
  if (n > SAVE_DIR_MAX)
    return f3d_fail("net", "--save '%s': a path too long (%zu bytes; at most %d, so its files can be named inside it)",
                    q, n, SAVE_DIR_MAX), 0;
  for (const char *c = dir; *c;) {
    const size_t len = strcspn(c, "/");
    if (len > SAVE_NAME_MAX)
      return f3d_fail("net", "--save '%s': a path too long: a component of %zu bytes (at most %d)", q, len,
                      SAVE_NAME_MAX), 0;
    c += len + (c[len] == '/');
  }
  return 1;
}

static int save_outputs(const char *dir, const net_config *cfg, const net_params *p, const net_input *in,
                        const net_output *o) {
  hx_err err = {HX_OK, ""};
  net_save sv = {cfg, p, in, o};
  /* f3d_save_dir_check passed before the forward: opening fails only when DIR changed since (messages name the
   * user's path, never the staging folder inside it) */
  if (f3d_stage_save(dir, "net", stage_files, &sv, &err) != HX_OK) return f3d_fail("net", "--save %s", err.msg), 1;
  printf("saved: %s (input, %zu level outputs, logits, weights%s)\n", dir, o->n_levels,
         cfg->kind == 0 ? ", orders" : "");
  return 0;
}

static int part_bytes_desc(const void *a, const void *b) {
  const size_t x = ((const net_mem_part *)a)->bytes, y = ((const net_mem_part *)b)->bytes;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* --memory: net_gpu_memory's breakdown, the kinds on one line, then every buffer, largest first. */
static int print_memory(const net_config *cfg, const net_input *in, net_dtype dt) {
  hx_err err = {HX_OK, ""};
  net_mem mem, *m = &mem;
  if (net_gpu_memory(m, cfg, in, dt, &err) != HX_OK) return f3d_fail_msg("net: --memory", err.msg), 1;
  const double T = (double)m->total, MiB = 1048576.0;
  printf("memory: %.1f MiB the forward holds at its peak (weights included; the sizing pass before any allocation, "
         "what the arena's peak reaches)\n  by kind:",
         T / MiB);
  for (int k = 0; k < NET_MEM_KINDS; k++)
    printf("%s %s %.1f MiB (%.1f%%)", k ? "," : "", net_mem_kind_name((net_mem_kind)k), (double)m->kind[k] / MiB,
           T > 0 ? 100.0 * (double)m->kind[k] / T : 0.0);
  printf("\n  %-40s %-9s %7s %11s %7s\n", "buffer", "kind", "count", "MiB", "share");
  qsort(m->part, m->n_parts, sizeof m->part[0], part_bytes_desc);
  for (uint32_t i = 0; i < m->n_parts; i++)
    printf("  %-40s %-9s %7u %11.1f %6.1f%%\n", m->part[i].label, net_mem_kind_name(m->part[i].kind), m->part[i].count,
           (double)m->part[i].bytes / MiB, T > 0 ? 100.0 * (double)m->part[i].bytes / T : 0.0);
  return 0;
}

/* A forward's logits are a result only when all finite: a forward whose values leave the range of its arithmetic
 * (fp16 on coordinates far from the origin; fp32 on finite but huge weights, e.g. +-3e38, whose products overflow)
 * gives NaN or Inf, which no caller may save or report. 0 when all are finite (printing their rms when `report`),
 * else 1 after naming how many are not, the first one's point and class, and `why` (what likely overflowed). */
static int logits_finite(const net_output *out, const net_input *in, const char *forward, const char *why,
                         int report) {
  size_t bad = 0, first = 0;
  double ss = 0;
  for (size_t i = 0; i < out->n * out->classes; i++) {
    if (!isfinite(out->logits[i])) {
      if (!bad++) first = i;
    } else {
      ss += (double)out->logits[i] * (double)out->logits[i];
    }
  }
  if (bad) {
    const size_t row = first / out->classes;
    uint32_t c = 0;
    while (c + 1 < in->B && in->offset[c + 1] <= row) c++;
    return f3d_fail("net", "%s's logits hold %zu non-finite values of %zu (the first at point %zu of cloud %u, class "
                           "%zu): %s; no result, nothing saved",
                    forward, bad, out->n * out->classes, row - in->offset[c], c, first % out->classes, why),
           1;
  }
  if (report)
    printf("logits: %zu points x %zu classes of the timed input, all finite (rms %.3g)\n", out->n, out->classes,
           out->n ? sqrt(ss / (double)(out->n * out->classes)) : 0.0);
  return 0;
}

static int run_cpu(const net_cli *o, const net_config *cfg, const net_params *p, const net_input *in) {
  hx_err err = {HX_OK, ""};
  net_output out = {0};
  const double t0 = hx_now_ms();
  if (net_forward_cpu(&out, cfg, p, in, o->save != NULL, &err) != HX_OK) return f3d_fail_msg("net: cpu", err.msg), 1;
  printf("cpu fp32 forward: %.1f ms (one run; the reference, not a benchmark)\n", hx_now_ms() - t0);
  int rc = logits_finite(&out, in, "the cpu forward",
                         "activations left the range of fp32 (weights or inputs too large?)", 0);
  if (!rc && o->save) rc = save_outputs(o->save, cfg, p, in, &out);
  net_output_free(&out);
  return rc;
}

#if F3D_HAVE_CUDA
/* The first k points of each cloud of bt (their voxels stay unique). */
static int prefix_batch(wl_batch *out, const wl_batch *bt, size_t k) {
  hx_err err = {HX_OK, ""};
  wl_cloud *cl = calloc(bt->b, sizeof *cl);
  if (!cl) return f3d_fail("net", "out of memory"), 1;
  int rc = 0;
  for (uint32_t c = 0; !rc && c < bt->b; c++) {
    size_t m = bt->offset[c + 1] - bt->offset[c];
    if (m > k) m = k;
    if (wl_cloud_alloc(&cl[c], m, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
    else memcpy(cl[c].xyz, bt->xyz + bt->offset[c] * 3, m * 3 * sizeof(float));
  }
  if (!rc && wl_batch_from_clouds(out, cl, bt->b, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
  for (uint32_t c = 0; c < bt->b; c++) wl_cloud_free(&cl[c]);
  free(cl);
  return rc;
}

typedef struct fwd_job {
  net_gpu *g;
  cudaGraphExec_t exec;
} fwd_job;
static hx_status fwd_run(void *arg, void *stream, hx_err *err) {
  fwd_job *j = arg;
  return net_gpu_forward(j->g, NULL, (struct CUstream_st *)stream, err);
}
static hx_status graph_run(void *arg, void *stream, hx_err *err) {
  fwd_job *j = arg;
  cudaError_t e = cudaGraphLaunch(j->exec, (cudaStream_t)stream);
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "net: graph launch: %s", cudaGetErrorString(e));
}

static int report_times(const char *label, const double *ms, size_t n) {
  hx_stats_desc d;
  hx_err err = {HX_OK, ""};
  if (hx_stats_describe(&d, ms, n, &err) != HX_OK) return f3d_fail_msg("net", err.msg), 1;
  printf("%-8s median %.3f ms  (min %.3f, q1 %.3f, q3 %.3f, max %.3f, std %.3f; %zu runs)\n", label, d.median, d.min,
         d.q1, d.q3, d.max, d.std, d.n);
  return 0;
}

/* Check on a small cloud: its own forward object, prepared, run, compared with the fp32 CPU forward. */
static int gpu_check(const net_cli *o, const net_config *cfg, const net_params *p, const wl_batch *bt, cudaStream_t s) {
  hx_err err = {HX_OK, ""};
  wl_batch small = {0};
  const wl_batch *use = bt;
  size_t nmax = 0;
  for (uint32_t c = 0; c < bt->b; c++)
    if (bt->offset[c + 1] - bt->offset[c] > nmax) nmax = bt->offset[c + 1] - bt->offset[c];
  if (o->check_points && nmax > o->check_points) {
    if (prefix_batch(&small, bt, (size_t)o->check_points)) return 1;
    use = &small;
  }
  net_input in;
  float *feat = NULL;
  hx_arena arena;
  hx_arena_init(&arena, "net-check", (size_t)o->device_memory, NULL);
  net_alloc al = f3d_net_arena(&arena);
  net_gpu *g = NULL;
  net_check_report rep;
  hx_status st = f3d_net_input(&in, &feat, use, o->voxel, o->seed, &err);
  if (st == HX_OK) st = net_gpu_create(&g, cfg, p, o->dt, &al, &err);
  if (st == HX_OK) st = net_gpu_prepare(g, &in, (struct CUstream_st *)s, &err);
  if (st == HX_OK) st = net_gpu_forward(g, NULL, (struct CUstream_st *)s, &err);
  if (st == HX_OK) st = net_gpu_check(&rep, g, p, &in, (struct CUstream_st *)s, &err);
  if (st == HX_OK)
    printf("check: %zu points, relative L2 error of the logits %.2e (tolerance %.1e), max |diff| %.3g: pass\n", in.n,
           rep.rel_l2, rep.tol, rep.max_abs);
  net_gpu_destroy(g);
  hx_arena_destroy(&arena);
  free(feat);
  wl_batch_free(&small);
  if (st != HX_OK) return f3d_fail_msg("net: check", err.msg), 1;
  return 0;
}

static int run_gpu(const net_cli *o, const net_config *cfg, const net_params *p, const wl_batch *bt,
                   const net_input *in) {
  hx_err err = {HX_OK, ""};
  size_t need = 0;
  if (f3d_net_fits(&need, NULL, cfg, in, o->dt, (size_t)o->device_memory, &err) != HX_OK) return f3d_fail_msg("net", err.msg), 1;
  cudaStream_t s = NULL;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return f3d_fail("net", "cannot create a stream"), 1;
  int rc = gpu_check(o, cfg, p, bt, s);
  hx_arena arena;
  hx_arena_init(&arena, "net", (size_t)o->device_memory, NULL);
  net_alloc al = f3d_net_arena(&arena);
  net_gpu *g = NULL;
  double *ms = NULL;
  fwd_job j = {NULL, NULL};
  cudaGraph_t graph = NULL;
  size_t used0 = 0, used1 = 0;
  if (!rc) {
    hx_status st = hx_device_mem_used(&used0, &err);
    if (st == HX_OK) st = net_gpu_create(&g, cfg, p, o->dt, &al, &err);
    if (st == HX_OK) st = net_gpu_prepare(g, in, (struct CUstream_st *)s, &err);
    if (st == HX_OK) st = hx_device_mem_used(&used1, &err);
    j.g = g;
    ms = calloc(o->reps, sizeof *ms);
    if (st == HX_OK && !ms) st = hx_errf(&err, HX_ENOMEM, "net: samples");
    hx_timing_opts t = {3, (uint32_t)o->reps};
    hx_closure c = {.run = fwd_run, .arg = &j};
    if (st == HX_OK) st = hx_time(ms, HX_CLOCK_GPU, &t, &c, s, &err);
    if (st == HX_OK) rc = report_times("forward", ms, o->reps);
    if (st == HX_OK && !rc && o->graph) {
      if (!net_gpu_graphable(g)) {
        printf("graph    not timed: this forward synchronises the host (see docs/nets.md)\n");
      } else {
        cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        if (e == cudaSuccess) {
          st = net_gpu_forward(g, NULL, (struct CUstream_st *)s, &err);
          cudaError_t e2 = cudaStreamEndCapture(s, &graph);
          if (st == HX_OK && e2 != cudaSuccess) e = e2;
        }
        if (st == HX_OK && e == cudaSuccess) e = cudaGraphInstantiate(&j.exec, graph, 0);
        if (st == HX_OK && e != cudaSuccess) st = hx_errf(&err, HX_ECUDA, "net: graph capture: %s", cudaGetErrorString(e));
        hx_closure cg = {.run = graph_run, .arg = &j};
        if (st == HX_OK) st = hx_time(ms, HX_CLOCK_GPU, &t, &cg, s, &err);
        if (st == HX_OK) rc = report_times("graph", ms, o->reps);
      }
    }
    f3d_net_breakdown bd;
    if (st == HX_OK && !rc) st = f3d_net_breakdown_run(&bd, g, s, &err);
    if (st == HX_OK && !rc) {
      double sum = 0;
      for (size_t i = 0; i < bd.n; i++) sum += bd.ms[i];
      printf("components (one forward with events at every range: %.3f ms end to end):\n", bd.total_ms);
      for (size_t i = 0; i < bd.n; i++)
        printf("  %-10s %9.3f ms  %5.1f%%  (%u ranges)\n", bd.name[i], bd.ms[i], sum > 0 ? 100.0 * bd.ms[i] / sum : 0.0,
               bd.calls[i]);
      printf("by part of the network (ms):\n");
      for (size_t q = 0; q < bd.n_parts; q++) {
        printf("  %-10s", bd.part[q]);
        for (size_t i = 0; i < bd.n; i++)
          if (bd.part_ms[q][i] > 0.0) printf(" %s %.3f", bd.name[i], bd.part_ms[q][i]);
        printf("\n");
      }
    }
    if (st == HX_OK && !rc)
      printf("memory: arena peak %.1f MiB (the forward's buffers and weights), device in use after prepare +%.1f MiB "
             "(cudaMemGetInfo, includes the CUDA libraries' workspaces), estimate before allocation %.1f MiB\n",
             (double)hx_arena_peak(&arena) / 1048576.0, (double)(used1 - (used1 > used0 ? used0 : used1)) / 1048576.0,
             (double)need / 1048576.0);
    if (st == HX_OK && !rc) {
      nl_blas_stats bs;
      net_gpu_blas_stats(g, &bs);
      printf("cuBLASLt: %zu shapes planned, %zu timed among the heuristic's first %d algorithms, %zu on another than "
             "its first", bs.plans, bs.tuned, NL_BLAS_CANDIDATES, bs.moved);
      if (bs.tuned) printf(" (the timed shapes %.3f ms a call on the first, %.3f on the picks)", bs.first_ms, bs.pick_ms);
      printf("\n");
    }
    if (st == HX_OK && !rc) { /* the timed input's logits: finite, or no result (and nothing saved) */
      net_output out = {0};
      st = net_gpu_download(g, &out, o->save != NULL, (struct CUstream_st *)s, &err);
      if (st == HX_OK) {
        char why[160];
        snprintf(why, sizeof why, "activations left the range of %s (coordinates far from the origin? subtract one)",
                 net_dtype_name(o->dt));
        rc = logits_finite(&out, in, "the timed forward", why, 1);
      }
      if (st == HX_OK && !rc && o->save) rc = save_outputs(o->save, cfg, p, in, &out);
      net_output_free(&out);
    }
    if (st != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
  }
  if (j.exec) cudaGraphExecDestroy(j.exec);
  if (graph) cudaGraphDestroy(graph);
  free(ms);
  net_gpu_destroy(g);
  hx_arena_destroy(&arena);
  cudaStreamDestroy(s);
  return rc;
}
#endif

int f3d_cmd_net(int argc, char **argv) {
  static const struct option opts[] = {
      {"model", required_argument, NULL, 'm'},  {"points", required_argument, NULL, 'n'},
      {"input", required_argument, NULL, 'i'},  {"batch", required_argument, NULL, 'B'},
      {"dtype", required_argument, NULL, 't'},  {"weights", required_argument, NULL, 'w'},
      {"save", required_argument, NULL, 'o'},   {"graph", no_argument, NULL, 'g'},
      {"voxel", required_argument, NULL, 'v'},  {"seed", required_argument, NULL, 's'},
      {"reps", required_argument, NULL, 'r'},   {"check-points", required_argument, NULL, 'c'},
      {"device", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
      {"spconv", required_argument, NULL, 'S'}, {"rehash", required_argument, NULL, 'H'},
      {"bucket-fill", required_argument, NULL, 'F'}, {"device-memory", required_argument, NULL, 'M'},
      {"mlp", required_argument, NULL, 'P'},    {"ln", required_argument, NULL, 'L'},
      {"tile-order", required_argument, NULL, 'T'}, {"stem", required_argument, NULL, 'E'},
      {"overlap", required_argument, NULL, 'O'}, {"cpe-fold", required_argument, NULL, 'C'},
      {"lt-tune", required_argument, NULL, 'U'}, {"memory", no_argument, NULL, 'Y'},
      {"mlp-chunk", required_argument, NULL, 'K'}, {"scope", required_argument, NULL, 'A'},
      {"attn", required_argument, NULL, 'V'}, {"patch", required_argument, NULL, 'Q'}, {NULL, 0, NULL, 0}};
  net_cli o = {NULL, NULL, NULL, NULL, 100000, 1,  20, 3000, 3407, 0.05, NET_F16,
               0,    !F3D_HAVE_CUDA, NULL, -1, -1, -1, -1, -1, -1, -1, -1, 0.0,  0, 0, 0, 0, UINT64_MAX, NULL};
  int points_given = 0, dtype_given = 0, reps_given = 0, check_given = 0, c;
  hx_err err = {HX_OK, ""};
  optind = 1;
  while ((c = getopt_long(argc, argv, "m:n:i:B:t:w:o:gv:s:r:c:d:S:H:F:M:P:L:T:E:O:C:U:YK:A:V:h", opts, NULL)) != -1) {
    switch (c) {
    case 'h': net_usage(stdout); return 0;
    case 'm': o.model = optarg; break;
    case 'n':
      if (f3d_parse_count(optarg, &o.points) || o.points == 0 || o.points > 50000000)
        return f3d_fail("net", "--points '%s': a count from 1 to 50M", optarg), 2;
      points_given = 1;
      break;
    case 'i': o.input = optarg; break;
    case 'B':
      if (f3d_parse_u64(optarg, &o.batch) || o.batch == 0 || o.batch > 16)
        return f3d_fail("net", "--batch '%s': 1 to 16 clouds", optarg), 2;
      break;
    case 't':
      if (net_dtype_parse(optarg, &o.dt, &err) != HX_OK) return f3d_fail("net", "--dtype '%s': fp16 or bf16", optarg), 2;
      dtype_given = 1;
      break;
    case 'w':
      if (!*optarg) return f3d_fail("net", "--weights '': a safetensors file"), 2;
      o.weights = optarg;
      break;
    case 'o':
      if (!save_dir_usable(optarg)) return 2;
      o.save = optarg;
      break;
    case 'g': o.graph = 1; break;
    case 'Y': o.memory = 1; break;
    case 'v':
      if (f3d_parse_pos_double(optarg, &o.voxel)) return f3d_fail("net", "--voxel '%s': a size > 0 in metres", optarg), 2;
      break;
    case 's':
      if (f3d_parse_u64(optarg, &o.seed)) return f3d_fail("net", "--seed '%s': an unsigned integer", optarg), 2;
      break;
    case 'r':
      if (f3d_parse_u64(optarg, &o.reps) || o.reps < 1 || o.reps > 10000)
        return f3d_fail("net", "--reps '%s': 1 to 10000", optarg), 2;
      reps_given = 1;
      break;
    case 'c':
      if (f3d_parse_count(optarg, &o.check_points) || o.check_points == 0 || o.check_points > 200000)
        return f3d_fail("net", "--check-points '%s': 1 to 200k (the CPU forward checks them)", optarg), 2;
      check_given = 1;
      break;
    case 'd':
      if (strcmp(optarg, "cpu") == 0) o.cpu = 1;
      else if (strcmp(optarg, "gpu") == 0) o.cpu = 0;
      else return f3d_fail("net", "--device '%s': gpu or cpu", optarg), 2;
      break;
    case 'S': o.spconv = optarg; break;
    case 'V': o.attn = optarg; break;
    case 'P':
      if (strcmp(optarg, "fused") == 0) o.mlp = 1;
      else if (strcmp(optarg, "partial") == 0) o.mlp = 2;
      else if (strcmp(optarg, "linear") == 0) o.mlp = 0;
      else return f3d_fail("net", "--mlp '%s': fused, partial or linear", optarg), 2;
      break;
    case 'L': if (two_words("--ln", optarg, "fused", "separate", &o.ln)) return 2; break;
    case 'T': if (two_words("--tile-order", optarg, "longest", "last", &o.tiles)) return 2; break;
    case 'E': if (two_words("--stem", optarg, "fused", "map", &o.stem)) return 2; break;
    case 'O': if (two_words("--overlap", optarg, "on", "off", &o.overlap)) return 2; break;
    case 'C': if (two_words("--cpe-fold", optarg, "on", "off", &o.fold)) return 2; break;
    case 'U': if (two_words("--lt-tune", optarg, "on", "off", &o.tune)) return 2; break;
    case 'H': if (two_words("--rehash", optarg, "on", "off", &o.rehash)) return 2; break;
    case 'F':
      if (f3d_parse_pos_double(optarg, &o.fill) || o.fill < 0.1 || o.fill > 1.0)
        return f3d_fail("net", "--bucket-fill '%s': a fraction from 0.1 to 1", optarg), 2;
      break;
    case 'A': if (int_in("--scope", optarg, 1, 64, "buckets per attention scope", &o.scope)) return 2; break;
    case 'Q': if (int_in("--patch", optarg, 1, 16384, "rows per attention patch", &o.patch)) return 2; break;
    case 'M':
      if (f3d_parse_bytes(optarg, &o.device_memory))
        return f3d_fail("net", "--device-memory '%s': bytes >= 1, e.g. 1048576, 512M or 2G (powers of 1024)",
                        optarg), 2;
      break;
    case 'K':
      if (f3d_parse_count(optarg, &o.mlp_chunk) || o.mlp_chunk == UINT64_MAX)
        return f3d_fail("net", "--mlp-chunk '%s': a count of hidden elements, e.g. 33554432 or 16M (0: no chunks)",
                        optarg), 2;
      break;
    default: net_usage(stderr); return 2;
    }
  }
  if (optind < argc) return f3d_fail("net", "unexpected argument '%s'", argv[optind]), 2;
  if (!o.model) return f3d_fail("net", "--model is required (f3dbench net --help lists the models)"), 2;
  if (o.input && points_given) return f3d_fail("net", "--points and --input exclude each other"), 2;
  net_config cfg;
  if (net_config_named(&cfg, o.model, &err) != HX_OK) return f3d_fail_msg("net", err.msg), 2;
  if (o.spconv) {
    if (cfg.kind != 0) return f3d_fail("net", "--spconv: %s has no sparse convolution (PTv3 models only)", cfg.name), 2;
    for (int i = 0; i < spc_variant_count() && !cfg.spconv_force; i++)
      if (strcmp(spc_variant_get(i)->name, o.spconv) == 0) cfg.spconv_force = 1 + spc_variant_get(i)->id;
    if (!cfg.spconv_force) {
      char names[128] = "";
      for (int i = 0, len = 0; i < spc_variant_count() && (size_t)len < sizeof names; i++)
        len += snprintf(names + len, sizeof names - (size_t)len, "%s%s", i ? ", " : "", spc_variant_get(i)->name);
      return f3d_fail("net", "--spconv '%s': one of %s", o.spconv, names), 2;
    }
  }
  if (o.attn) {
    const battn_variant *v = battn_variant_find(o.attn);
    if (!v || v->id == 0) { /* v0 materialises whole scopes' scores: the forwards' scratch is not sized for it */
      size_t nv = 0;
      const battn_variant *t = battn_variants(&nv);
      char names[256] = "";
      for (size_t i = 1, len = 0; i < nv && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i > 1 ? ", " : "", t[i].name);
      return f3d_fail("net", "--attn '%s': one of %s", o.attn, names), 2;
    }
    cfg.attn_force = 1 + v->id;
  }
  if (o.mlp >= 0) {
    if (o.mlp == 2 && cfg.kind != 1)
      return f3d_fail("net", "--mlp partial: %s has no SwiGLU MLP (Flash3D models only)", cfg.name), 2;
    cfg.mlp_fused = o.mlp;
  }
  if (o.ln >= 0) cfg.ln_fused = o.ln;
  if (o.tiles >= 0) {
    if (cfg.kind != 0)
      return f3d_fail("net", "--tile-order: %s has no sparse convolution (PTv3 models only)", cfg.name), 2;
    cfg.tile_order = o.tiles;
  }
  if (o.stem >= 0) {
    if (cfg.kind != 0)
      return f3d_fail("net", "--stem: %s has no sparse convolution stem (PTv3 models only)", cfg.name), 2;
    cfg.stem_fused = o.stem;
  }
  if (o.overlap >= 0) {
    if (cfg.kind != 0) return f3d_fail("net", "--overlap: %s has no structure stream (PTv3 models only)", cfg.name), 2;
    cfg.overlap = o.overlap;
  }
  if (o.fold >= 0) {
    if (cfg.kind != 0) return f3d_fail("net", "--cpe-fold: %s has no xCPE (PTv3 models only)", cfg.name), 2;
    cfg.cpe_fold = o.fold;
  }
  if (o.tune >= 0) cfg.lt_tune = o.tune;
  if (o.mlp_chunk != UINT64_MAX) cfg.mlp_chunk = (size_t)o.mlp_chunk;
  if (o.save) cfg.keep_levels = 1; /* every level's own buffers, for the download after the forward */
  if (o.rehash >= 0) {
    if (cfg.kind != 1) return f3d_fail("net", "--rehash: %s has no PSH levels (Flash3D models only)", cfg.name), 2;
    cfg.rehash = o.rehash;
  }
  if (o.fill > 0.0) {
    if (cfg.kind != 1) return f3d_fail("net", "--bucket-fill: %s has no buckets (Flash3D models only)", cfg.name), 2;
    cfg.bucket_fill = o.fill;
  }
  if (o.scope > 0) {
    if (cfg.kind != 1) return f3d_fail("net", "--scope: %s has no bucket scopes (Flash3D models only)", cfg.name), 2;
    cfg.scope = o.scope;
  }
  if (o.patch > 0) {
    if (cfg.kind != 0)
      return f3d_fail("net", "--patch: %s has no patches (PTv3 models only; Flash3D: --scope)", cfg.name), 2;
    cfg.patch = o.patch;
  }
  if (o.memory && (o.cpu || !F3D_HAVE_CUDA))
    return f3d_fail("net", "--memory reports the GPU forward's memory: not with --device cpu or a build without CUDA"), 2;
  if (!o.cpu && !F3D_HAVE_CUDA) return f3d_fail("net", "--device gpu: this build has no CUDA (use --device cpu)"), 2;
  if (o.cpu) { /* the GPU forward's options given: named in one note, not silently dropped */
    const int given[] = {dtype_given,        o.graph,          o.spconv != NULL, o.attn != NULL, o.mlp >= 0,
                         o.ln >= 0,          reps_given,       check_given,      o.device_memory != 0,
                         o.tiles >= 0,       o.stem >= 0,      o.overlap >= 0,   o.fold >= 0,    o.tune >= 0,
                         o.mlp_chunk != UINT64_MAX};
    static const char *const names[] = {"--dtype",       "--graph",         "--spconv",     "--attn",   "--mlp",
                                        "--ln",          "--reps",          "--check-points", "--device-memory",
                                        "--tile-order",  "--stem",          "--overlap",    "--cpe-fold", "--lt-tune",
                                        "--mlp-chunk"};
    _Static_assert(sizeof given / sizeof *given == sizeof names / sizeof *names, "one name per option");
    char list[256] = "";
    int n = 0;
    for (size_t i = 0, len = 0; i < sizeof names / sizeof *names; i++)
      if (given[i]) len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", n++ ? ", " : "", names[i]);
    if (n)
      fprintf(stderr, "f3dbench: net: note: %s ha%s no effect with --device cpu (one fp32 forward, the reference)\n",
              list, n == 1 ? "s" : "ve");
  }
  if (o.save && f3d_save_dir_check(o.save, &err) != HX_OK) /* before the forward, not after it */
    return f3d_fail("net", "--save %s", err.msg), 2;
  if (!o.cpu) { /* the device first, with the way out: the CPU forward runs without one */
    hx_err ge = {HX_OK, ""};
    if (f3d_gpu_check(NULL, &ge) != HX_OK)
      return f3d_fail("net", "%s: %s%s", o.memory ? "--memory" : "--device gpu", ge.msg,
                      o.memory ? "" : " (try --device cpu: the fp32 reference forward alone)"), 1;
  }

  net_params p = {0};
  wl_batch bt = {0};
  net_input in;
  float *feat = NULL;
  int rc = 0;
  if (net_params_init(&p, &cfg, o.seed, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
  size_t ignored = 0;
  if (!rc && o.weights && net_params_load(&p, o.weights, &ignored, &err) != HX_OK) rc = (f3d_fail_msg(o.weights, err.msg), 1);
  if (!rc && ignored)
    fprintf(stderr, "f3dbench: net: note: %s: %zu state_dict entries ignored (num_batches_tracked, _extra_state: no "
            "forward reads them)\n", o.weights, ignored);
  if (!rc) rc = make_batch(&bt, &o);
  if (!rc && f3d_net_input(&in, &feat, &bt, o.voxel, o.seed, &err) != HX_OK) rc = (f3d_fail_msg("net", err.msg), 1);
  if (!rc) {
    printf("net: %s, %llu parameters, %zu points in %u cloud%s, voxel %g m, %s, weights %s%s%s%s%s%s%s%s%s%s%s%s%s\n", cfg.name,
           (unsigned long long)net_params_count(&p), in.n, in.B, in.B == 1 ? "" : "s", o.voxel,
           o.cpu ? "fp32 (cpu)" : net_dtype_name(o.dt), o.weights ? o.weights : "seeded random",
           o.spconv && !o.cpu ? ", xCPE convolutions on spconv " : "", o.spconv && !o.cpu ? o.spconv : "",
           o.attn && !o.cpu ? ", attention on " : "", o.attn && !o.cpu ? o.attn : "",
           !o.cpu && cfg.mlp_fused != 1 ? (cfg.mlp_fused ? ", MLP partly fused (--mlp partial)" : ", MLP unfused (--mlp linear)") : "",
           !o.cpu && !cfg.ln_fused ? ", LayerNorms as separate passes (--ln separate)" : "",
           !o.cpu && cfg.kind == 0 && !cfg.tile_order ? ", v6 tiles last-first (--tile-order last)" : "",
           !o.cpu && cfg.kind == 0 && !cfg.stem_fused ? ", the stem through its map (--stem map)" : "",
           !o.cpu && cfg.kind == 0 && !cfg.overlap ? ", the structure on one stream (--overlap off)" : "",
           !o.cpu && cfg.kind == 0 && !cfg.cpe_fold ? ", xCPE's Linear after its convolution (--cpe-fold off)" : "",
           !o.cpu && !cfg.lt_tune ? ", cuBLASLt's first algorithm per shape (--lt-tune off)" : "",
           cfg.kind != 1 ? ""
           : cfg.rehash  ? ", pooled levels re-hashed by PSH"
                         : ", pooled levels in pooling order over fixed windows (--rehash off)");
    if (cfg.kind == 1) { /* level 0's buckets: the largest cloud's rows over its buckets' capacity */
      size_t big = 0;
      for (uint32_t k = 0; k < in.B; k++) {
        const size_t rows = in.offset[k + 1] - in.offset[k];
        big = rows > big ? rows : big;
      }
      const uint32_t nb = net_f3d_buckets(big, (uint32_t)cfg.bucket, cfg.bucket_fill);
      printf("buckets: %u of %d rows per cloud at level 0, %.0f%% full (", nb, cfg.bucket,
             100.0 * (double)big / ((double)nb * cfg.bucket));
      if (cfg.bucket_fill > 0) printf("bucket fill %.2f)", cfg.bucket_fill);
      else printf("the public rule)");
      printf("; attention scopes of %d bucket%s, %d rows\n", cfg.scope, cfg.scope == 1 ? "" : "s",
             cfg.scope * cfg.bucket);
    } else {
      printf("attention: patches of %d rows along each serialization order\n", cfg.patch);
    }
    fflush(stdout);
#if F3D_HAVE_CUDA
    rc = o.memory ? print_memory(&cfg, &in, o.dt) : o.cpu ? run_cpu(&o, &cfg, &p, &in) : run_gpu(&o, &cfg, &p, &bt, &in);
#else
    rc = run_cpu(&o, &cfg, &p, &in);
#endif
  }
  free(feat);
  wl_batch_free(&bt);
  net_params_free(&p);
  return rc;
}
