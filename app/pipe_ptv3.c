/*
 * pipe_ptv3.c - the "ptv3" sweep pipeline: PTv3's serialization, global shuffle and serialized pooling
 * (baselines/) timed per case. The case's clouds are one PTv3 batch; grid = the case's voxel size.
 *
 * GPU rows (variant "v<id>" of the kernel's table; single-kernel stages are "v0"); the main path measures
 * grid, serialize, padding, the gathers, pool and attention, --ladder also the stages marked (L) and every
 * variant (pipe_plan.c):
 *   grid                 GridSample coordinates (sfc_grid_gpu)
 *   dedup (L)            one point per voxel (sfc_dedup_gpu: radix sort of voxel keys, includes one sync;
 *                        the case clouds are already unique per voxel, so this is the cost of the check)
 *   encode_<order> (L)   one order's codes; encode_all (L): the four orders in one launch
 *   sort, inverse (L)    CUB radix sort of the 4 rows (bits in use only), inverse scatter
 *   serialize            the whole 4-order serialization after grid (encode + sort + inverse):
 *                        sfc_serial_variant_best's variant (v2), every variant with --ladder
 *   padding              pad/unpad/cu_seqlens + composed order[pad] and unpad[inverse] (K = 1024)
 *   gather_qkv_C<C>      [sum p, 3C] fp16 rows by order[pad]; gather_out_C<C>: [N, C]; shuf_gather_variant_best's
 *                        variant for the row width (v3 at C = 64 qkv, v2 at C = 64 out, v1 at C = 256), every
 *                        gather variant with --ladder
 *   copy_qkv_C<C>, copy_out_C<C> (L)  cudaMemcpy D2D of the same output size: the copy bandwidth of this run
 *   pool                 serialized pooling stride 2, C = 64 fp32 features (includes one host sync, as
 *                        torch.unique: one 2 s hold time-out of the nvbench timing per case)
 *   attn.patch1024       attention over the padded patches the qkv gather wrote (this padding's
 *                        cu_seqlens, K = 1024: PTv3's default), same engine as flash3d's attn.*
 *                        (battn_variant_best's, and v0 on small cases; the sweep's dtype, H x D = 4 x 16,
 *                        packed qkv), each patch one scope of 512-row pieces; attn.patch4096 the same with
 *                        K = 4096 patches, the scope size of flash3d's plans, so the attention work per row
 *                        matches; rows as in pipe_attn.c. So gather_qkv + attn.patch* + gather_out is PTv3's
 *                        attention path, to set against flash3d's attn.* in place. GPU only (without one the
 *                        stage says why it skips).
 * Rows beside the times: bytes (moved per call, declared on the closure) and bandwidth (GB/s at the median,
 * written by the measurement layer), bytes_per_row, and
 * check = 1 after a variant matched the CPU reference on this case (done before it is timed; a variant
 * that does not match gets check = 0 and is not timed). The check runs on every case, a superset of
 * "the first size of each workload", because a pipeline keeps no state between cases. A check downloads and
 * compares 64 MiB at a time; a gather's reference (shuf_gather_cpu) is made piece by piece beside it, in parallel,
 * from one host source per case (every gather's source is a prefix of the widest one's random values).
 * Without a GPU: CPU references only (variant "cpu"): grid, encode_all, sort, padding, gather C=64.
 * Device buffers come from the sweep's arena (ctx->arena), allocated by phase: serialization buffers and
 * the largest scratch any stage asks for first, padding tables before padding, the gather source and
 * destination per C (freed after its gathers), pooling outputs before pooling; so a stage's mem_peak is
 * what the PTv3 path holds when that stage runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "f3d_config.h"
#include "app/pipe_attn.h"
#include "app/pipe_plan.h"
#include "app/sweep.h"

#if F3D_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop
#endif

#define PTV3_K 1024u
#define PTV3_POOL_C 64u
#define PTV3_CHECK_PIECE ((size_t)64 << 20) /* bytes a check downloads and compares at a time (pipe's GPU path) */
static const size_t ptv3_gather_C[2] = {64, 256};

/* Host side of one case: CPU reference results every GPU variant is compared with. */
typedef struct ptv3_host {
  size_t n;
  uint32_t B;
  const size_t *offset;
  const float *xyz;
  double grid_size;
  int depth;
  sfc_order orders[4];
  uint32_t *grid, *batch, gmax;
  uint64_t *code;
  uint32_t *order, *inverse;
  size_t sum_p, n_cu;
  uint32_t *pad, *unpad, *order_p, *inverse_p;
  int32_t *cu;
} ptv3_host;

static void host_free(ptv3_host *h) {
  free(h->grid), free(h->batch), free(h->code), free(h->order), free(h->inverse);
  free(h->pad), free(h->unpad), free(h->order_p), free(h->inverse_p), free(h->cu);
}

/* Rows [begin, end) of the serialization reference: each order encoded and sorted on its own (sfc_encode_cpu and
 * sfc_sort_cpu treat the rows independently, so the bits are the four-row call's whatever the thread count). */
typedef struct serial_rows {
  ptv3_host *h;
  hx_status st[4];
  hx_err err[4];
} serial_rows;
static void serial_row(void *arg, size_t begin, size_t end) {
  serial_rows *s = arg;
  const ptv3_host *h = s->h;
  for (size_t r = begin; r < end; r++) {
    uint64_t *code = h->code + r * h->n;
    s->st[r] = sfc_encode_cpu(code, h->grid, h->batch, h->n, h->depth, &h->orders[r], 1, &s->err[r]);
    if (s->st[r] == HX_OK) s->st[r] = sfc_sort_cpu(h->order + r * h->n, h->inverse + r * h->n, code, h->n, 1, &s->err[r]);
  }
}

static hx_status host_prepare(ptv3_host *h, const f3d_ctx *ctx, hx_err *err) {
  const wl_batch *bt = ctx->c.cloud;
  memset(h, 0, sizeof *h);
  h->n = bt->n;
  h->B = bt->b;
  h->offset = bt->offset;
  h->xyz = bt->xyz;
  h->grid_size = ctx->c.voxel;
  /* PTv3 shuffles the order list at every serialization: a seeded permutation of the four orders */
  int perm[4];
  static const sfc_order base[4] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  sfc_row_perm(perm, 4, ctx->seed, 0);
  for (int r = 0; r < 4; r++) h->orders[r] = base[perm[r]];
  const size_t n = h->n;
  h->grid = malloc(n * 3 * sizeof *h->grid);
  h->batch = malloc(n * sizeof *h->batch);
  h->code = malloc(n * 4 * sizeof *h->code);
  h->order = malloc(n * 4 * sizeof *h->order);
  h->inverse = malloc(n * 4 * sizeof *h->inverse);
  if (!h->grid || !h->batch || !h->code || !h->order || !h->inverse)
    return hx_errf(err, HX_ENOMEM, "ptv3: host buffers for %zu points", n);
  HX_TRY(sfc_grid_cpu(h->grid, &h->gmax, h->xyz, h->offset, h->B, h->grid_size, err));
  HX_TRY(sfc_batch_index_cpu(h->batch, h->offset, h->B, err));
  HX_TRY(sfc_depth(&h->depth, h->gmax, h->B, h->grid_size, err));
  /* the four orders in parallel: encode + sort (qsort) of 4 x 600k codes took 0.49 s on one thread (2-core dev
   * box), ahead of every 600k case */
  serial_rows sr;
  memset(&sr, 0, sizeof sr);
  sr.h = h;
  hx_par_for(4, 1, serial_row, &sr);
  for (int r = 0; r < 4; r++)
    if (sr.st[r] != HX_OK) {
      if (err) *err = sr.err[r];
      return sr.st[r];
    }
  HX_TRY(shuf_pad_sizes(&h->sum_p, &h->n_cu, h->offset, h->B, PTV3_K, err));
  h->pad = malloc(h->sum_p * sizeof *h->pad);
  h->unpad = malloc(n * sizeof *h->unpad);
  h->order_p = malloc(h->sum_p * sizeof *h->order_p);
  h->inverse_p = malloc(n * sizeof *h->inverse_p);
  h->cu = malloc(h->n_cu * sizeof *h->cu);
  if (!h->pad || !h->unpad || !h->order_p || !h->inverse_p || !h->cu)
    return hx_errf(err, HX_ENOMEM, "ptv3: padding buffers");
  HX_TRY(shuf_padding_cpu(h->pad, h->unpad, h->cu, h->offset, h->B, PTV3_K, err));
  return shuf_compose_cpu(h->order_p, h->inverse_p, h->order, h->inverse, h->pad, h->unpad, n, h->sum_p);
}

/* ---- CPU-only path ---------------------------------------------------------------------------------- */

typedef struct cpu_job {
  int what; /* 0 grid, 1 encode_all, 2 sort, 3 padding, 4 gather */
  ptv3_host *h;
  void *out, *in;
  size_t C;
} cpu_job;

static hx_status cpu_run(void *arg, void *stream, hx_err *err) {
  (void)stream;
  cpu_job *j = arg;
  ptv3_host *h = j->h;
  switch (j->what) {
    case 0: return sfc_grid_cpu(h->grid, &h->gmax, h->xyz, h->offset, h->B, h->grid_size, err);
    case 1: return sfc_encode_cpu(h->code, h->grid, h->batch, h->n, h->depth, h->orders, 4, err);
    case 2: return sfc_sort_cpu(h->order, h->inverse, h->code, h->n, 4, err);
    case 3: return shuf_padding_cpu(h->pad, h->unpad, h->cu, h->offset, h->B, PTV3_K, err);
    default: return shuf_gather_cpu(j->out, j->in, h->order_p, h->sum_p, 3 * j->C, SHUF_F16);
  }
}

static hx_status run_cpu(f3d_ctx *ctx, ptv3_host *h, hx_err *err) {
  static const char *const names[5] = {"grid", "encode_all", "sort", "padding", "gather_qkv_C64"};
  cpu_job j = {0, h, NULL, NULL, ptv3_gather_C[0]};
  j.in = calloc(h->n * 3 * j.C, 2);
  j.out = malloc(h->sum_p * 3 * j.C * 2);
  hx_status st = j.in && j.out ? HX_OK : hx_errf(err, HX_ENOMEM, "ptv3: gather buffers");
  for (int w = 0; w < 5 && st == HX_OK; w++) {
    j.what = w;
    hx_closure c = {cpu_run, NULL, &j, 0, 0};
    st = f3d_measure(ctx, "ptv3", names[w], "cpu", HX_CLOCK_CPU, &c, err);
  }
  free(j.in), free(j.out);
  return st;
}

#if F3D_HAVE_CUDA
/* ---- GPU path --------------------------------------------------------------------------------------- */

typedef struct gpu_state {
  ptv3_host *h;
  hx_arena *arena; /* every device buffer below comes from it (the sweep's mem_peak rows) */
  float *d_xyz;
  uint32_t *d_grid, *d_batch, *d_max, *d_order, *d_inverse;
  uint64_t *d_code;
  uint32_t *d_pad, *d_unpad, *d_order_p, *d_inverse_p;
  int32_t *d_cu;
  void *d_in, *d_out, *d_scratch;
  size_t scratch;
  void *chk, *chk_ref; /* PTV3_CHECK_PIECE bytes each: a check's downloaded piece and its reference */
  uint16_t *h_src;     /* the gathers' source values (host) */
  float *d_feat;
  uint32_t *d_keep;
  size_t off_kept[SFC_MAX_CLOUDS + 1], dropped;
  spool_out pout;
  /* what the closure runs */
  int what;
  sfc_order one;
  const sfc_serial_variant *sv;
  const shuf_gather_variant *gv;
  const uint32_t *d_idx;
  size_t rows, width;
  spool_in pin;
} gpu_state;

enum { G_GRID, G_DEDUP, G_ENC1, G_ENC4, G_SORT, G_INV, G_SERIAL, G_PAD, G_GATHER, G_COPY, G_POOL };

static hx_status cuda_st(cudaError_t e, const char *what, hx_err *err) {
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "ptv3: %s: %s", what, cudaGetErrorString(e));
}

static hx_status gpu_run(void *arg, void *stream, hx_err *err) {
  gpu_state *g = arg;
  ptv3_host *h = g->h;
  struct CUstream_st *s = (struct CUstream_st *)stream;
  hx_status st = HX_OK;
  sfc_serial_args a = {g->d_code, g->d_order, g->d_inverse, g->d_grid, h->B > 1 ? g->d_batch : NULL, h->n, h->B,
                       h->depth, 4, {h->orders[0], h->orders[1], h->orders[2], h->orders[3]}};
  switch (g->what) {
    case G_GRID:
      st = sfc_grid_gpu(g->d_grid, g->d_batch, g->d_max, g->d_scratch, &g->scratch, g->d_xyz, h->offset, h->B,
                        h->grid_size, s);
      break;
    case G_DEDUP:
      st = sfc_dedup_gpu(g->d_keep, g->off_kept, &g->dropped, g->d_scratch, &g->scratch, g->d_grid, g->d_batch,
                         h->offset, h->B, h->depth, s);
      break;
    case G_ENC1: st = sfc_encode_gpu(g->d_code, g->d_grid, g->d_batch, h->n, h->depth, &g->one, 1, s); break;
    case G_ENC4: st = sfc_encode_gpu(g->d_code, g->d_grid, g->d_batch, h->n, h->depth, h->orders, 4, s); break;
    case G_SORT:
      st = sfc_sort_gpu(g->d_order, g->d_scratch, &g->scratch, g->d_code, h->n, 4, sfc_key_bits(h->depth, h->B), s);
      break;
    case G_INV: st = sfc_inverse_gpu(g->d_inverse, g->d_order, h->n, 4, s); break;
    case G_SERIAL: st = g->sv->fn(g->d_scratch, &g->scratch, &a, s); break;
    case G_PAD:
      st = shuf_padding_gpu(g->d_pad, g->d_unpad, g->d_cu, h->offset, h->B, PTV3_K, s);
      if (st == HX_OK)
        st = shuf_compose_gpu(g->d_order_p, g->d_inverse_p, g->d_order, g->d_inverse, g->d_pad, g->d_unpad, h->n,
                              h->sum_p, s);
      break;
    case G_GATHER: st = g->gv->fn(g->d_out, g->d_in, g->d_idx, g->rows, g->width, SHUF_F16, s); break;
    case G_COPY:
      return cuda_st(cudaMemcpyAsync(g->d_out, g->d_in, g->rows * g->width * 2, cudaMemcpyDeviceToDevice,
                                     (cudaStream_t)stream), "copy", err);
    default: st = spool_gpu(&g->pout, g->d_scratch, &g->scratch, &g->pin, s); break;
  }
  return st == HX_OK ? HX_OK : hx_errf(err, st, "ptv3: GPU stage %d failed", g->what);
}

/* What a check compares the device bytes with: a host buffer (want), or, with want NULL, the gather reference
 * (shuf_gather_cpu of src's rows by idx, width fp16 values a row), made piece by piece beside the download, so no
 * full copy of a gather's output is held: the C = 256 qkv gather's is 0.9 GB at 600k points, and a fresh buffer
 * of that size costs ~1.2 s in first-touch page faults alone (2-core dev box). */
typedef struct ptv3_ref {
  const void *want;
  const uint16_t *src;
  const uint32_t *idx;
  size_t width;
} ptv3_ref;
static ptv3_ref host_ref(const void *want) { return (ptv3_ref){want, NULL, NULL, 0}; }

/* Rows [begin, end) of one piece of a gather check, counted from the piece's first output row `row0`. */
typedef struct gather_piece {
  uint16_t *out;
  const ptv3_ref *ref;
  size_t row0;
} gather_piece;
static void gather_rows(void *arg, size_t begin, size_t end) {
  const gather_piece *q = arg;
  const ptv3_ref *r = q->ref;
  shuf_gather_cpu(q->out + begin * r->width, r->src, r->idx + q->row0 + begin, end - begin, r->width, SHUF_F16);
}

/* Compare `bytes` of device memory d with the reference, PTV3_CHECK_PIECE bytes at a time (whole rows for a
 * gather); *ok = 0 at the first piece that differs. */
static hx_status same(gpu_state *g, int *ok, const void *d, ptv3_ref ref, size_t bytes, hx_err *err) {
  const size_t unit = ref.want ? 1 : ref.width * 2;
  const size_t piece = PTV3_CHECK_PIECE / unit * unit;
  *ok = 1;
  for (size_t off = 0; off < bytes && *ok; off += piece) {
    const size_t len = bytes - off < piece ? bytes - off : piece;
    HX_TRY(cuda_st(cudaMemcpy(g->chk, (const char *)d + off, len, cudaMemcpyDeviceToHost), "download", err));
    const void *want = g->chk_ref;
    if (ref.want) want = (const char *)ref.want + off;
    else {
      gather_piece q = {g->chk_ref, &ref, off / unit};
      hx_par_for(len / unit, 4096, gather_rows, &q);
    }
    *ok = memcmp(g->chk, want, len) == 0;
  }
  return HX_OK;
}

/* The work one run of a stage moves, declared on its closure (the measurement layer writes bytes and bandwidth at
 * the median), and the bytes per row beside it; 0: none declared. */
typedef struct ptv3_work {
  double bytes, per_row;
} ptv3_work;
static const ptv3_work no_work = {0.0, 0.0};

/* Run once, compare `bytes` of d with want, record check, time only when it matched. */
static hx_status checked_measure(f3d_ctx *ctx, gpu_state *g, const char *kernel, const char *variant, void *d,
                                 ptv3_ref want, size_t bytes, ptv3_work w, hx_err *err) {
  HX_TRY(cuda_st(cudaMemset(d, 0xFF, bytes), "poison", err));
  HX_TRY(gpu_run(g, NULL, err));
  HX_TRY(cuda_st(cudaDeviceSynchronize(), kernel, err));
  int ok = 0;
  HX_TRY(same(g, &ok, d, want, bytes, err));
  HX_TRY(f3d_record(ctx, "ptv3", kernel, variant, "check", ok, "bool", err));
  if (!ok) {
    fprintf(stderr, "f3dbench: ptv3: %s %s differs from the CPU reference: not timed\n", kernel, variant);
    return HX_OK;
  }
  hx_closure c = {gpu_run, NULL, g, w.bytes, 0};
  HX_TRY(f3d_measure(ctx, "ptv3", kernel, variant, HX_CLOCK_GPU, &c, err));
  return w.per_row > 0 ? f3d_record(ctx, "ptv3", kernel, variant, "bytes_per_row", w.per_row, "B", err) : HX_OK;
}

/* Whether the main path measures this stage (always with --ladder; pipe_plan.c says why the others are not). */
static int stage_on(const f3d_ctx *ctx, const char *kernel) { return ctx->ladder || f3d_main_stage("ptv3", kernel); }

static hx_status gpu_alloc(gpu_state *g, void **p, size_t bytes, const char *what, hx_err *err) {
  return hx_arena_alloc(g->arena, p, bytes ? bytes : 16, what, err);
}

/* Values [begin, end) of the gathers' source and of pooling's features: counter-based draws, so the values do not
 * depend on the thread count. */
typedef struct src_fill {
  uint16_t *v;
  uint64_t seed;
} src_fill;
static void fill_src(void *arg, size_t begin, size_t end) {
  const src_fill *f = arg;
  for (size_t k = begin; k < end; k++) f->v[k] = (uint16_t)hx_rng_u64(f->seed, 77, k);
}
typedef struct feat_fill {
  float *v;
  uint64_t seed;
} feat_fill;
static void fill_feat(void *arg, size_t begin, size_t end) {
  const feat_fill *f = arg;
  for (size_t k = begin; k < end; k++) f->v[k] = (float)hx_rng_unit(f->seed, 78, k);
}

static hx_status run_gpu_body(f3d_ctx *ctx, gpu_state *g, hx_err *err) {
  ptv3_host *h = g->h;
  const size_t n = h->n;
  char var[16], kernel[64];
  /* Buffers are allocated by phase (serialization, padding, gathers per C, pooling), so each stage's
   * mem_peak is what PTv3's path holds up to that stage, not what later stages will need. */
  g->chk = malloc(PTV3_CHECK_PIECE);
  g->chk_ref = malloc(PTV3_CHECK_PIECE);
  if (!g->chk || !g->chk_ref) return hx_errf(err, HX_ENOMEM, "ptv3: check buffers");
  HX_TRY(gpu_alloc(g, (void **)&g->d_xyz, n * 12, "ptv3 xyz", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_grid, n * 12, "ptv3 grid", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_batch, n * 4, "ptv3 batch", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_max, 4, "ptv3 grid max", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_code, n * 32, "ptv3 code", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_order, n * 16, "ptv3 order", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_inverse, n * 16, "ptv3 inverse", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_keep, n * 4, "ptv3 dedup keep", err));
  HX_TRY(cuda_st(cudaMemcpy(g->d_xyz, h->xyz, n * 12, cudaMemcpyHostToDevice), "upload", err));
  /* scratch: the largest any stage asks for */
  size_t need = 0, sb = 0;
  HX_TRY(sfc_grid_gpu(NULL, NULL, NULL, NULL, &sb, NULL, h->offset, h->B, h->grid_size, NULL));
  need = sb;
  HX_TRY(sfc_sort_gpu(NULL, NULL, &sb, NULL, n, 4, 64, NULL));
  if (sb > need) need = sb;
  sfc_serial_args a0 = {NULL, NULL, NULL, NULL, NULL, n, h->B, h->depth, 4, {h->orders[0], h->orders[1], h->orders[2], h->orders[3]}};
  for (int v = 0; v < sfc_serial_variant_count(); v++) {
    HX_TRY(sfc_serial_variant_get(v)->fn(NULL, &sb, &a0, NULL));
    if (sb > need) need = sb;
  }
  HX_TRY(sfc_dedup_gpu(NULL, g->off_kept, NULL, NULL, &sb, NULL, NULL, h->offset, h->B, h->depth, NULL));
  if (sb > need) need = sb;
  spool_in pin0 = {NULL, NULL, NULL, NULL, NULL, NULL, n, PTV3_POOL_C, 4, h->depth, h->B, {0, 1, 2, 3}};
  spool_out pout0;
  memset(&pout0, 0, sizeof pout0);
  HX_TRY(spool_gpu(&pout0, NULL, &sb, &pin0, NULL));
  if (sb > need) need = sb;
  HX_TRY(gpu_alloc(g, &g->d_scratch, need, "ptv3 scratch", err));
  g->scratch = need;

  /* serialization stages */
  g->what = G_GRID;
  HX_TRY(checked_measure(ctx, g, "grid", "v0", g->d_grid, host_ref(h->grid), n * 12, no_work, err));
  HX_TRY(cuda_st(cudaMemcpy(g->d_batch, h->batch, n * 4, cudaMemcpyHostToDevice), "upload", err));
  if (stage_on(ctx, "dedup")) {
    uint32_t *keep = malloc(n * 4);
    size_t off2[SFC_MAX_CLOUDS + 1], dropped = 0;
    hx_status st = keep ? sfc_dedup_cpu(keep, off2, &dropped, h->grid, h->offset, h->B, err)
                        : hx_errf(err, HX_ENOMEM, "ptv3: dedup reference");
    g->what = G_DEDUP;
    if (st == HX_OK) st = checked_measure(ctx, g, "dedup", "v0", g->d_keep, host_ref(keep), (n - dropped) * 4, no_work, err);
    if (st == HX_OK) st = f3d_record(ctx, "ptv3", "dedup", "v0", "points_dropped", (double)dropped, "count", err);
    free(keep);
    HX_TRY(st);
  }
  /* serialization's parts (--ladder): the serialize stage below times them together */
  for (int r = 0; r < 4; r++) {
    g->what = G_ENC1;
    g->one = h->orders[r];
    snprintf(kernel, sizeof kernel, "encode_%s", sfc_order_name(h->orders[r]));
    if (!stage_on(ctx, kernel)) continue;
    HX_TRY(checked_measure(ctx, g, kernel, "v0", g->d_code, host_ref(h->code + (size_t)r * n), n * 8,
                           (ptv3_work){(double)n * (12.0 + 4.0 + 8.0), 24.0}, err));
  }
  if (stage_on(ctx, "encode_all")) {
    g->what = G_ENC4;
    HX_TRY(checked_measure(ctx, g, "encode_all", "v0", g->d_code, host_ref(h->code), n * 32,
                           (ptv3_work){(double)n * (16.0 + 32.0), 48.0}, err));
  }
  if (stage_on(ctx, "sort")) {
    HX_TRY(cuda_st(cudaMemcpy(g->d_code, h->code, n * 32, cudaMemcpyHostToDevice), "upload", err));
    g->what = G_SORT;
    HX_TRY(checked_measure(ctx, g, "sort", "v0", g->d_order, host_ref(h->order), n * 16, no_work, err));
  }
  if (stage_on(ctx, "inverse")) {
    HX_TRY(cuda_st(cudaMemcpy(g->d_order, h->order, n * 16, cudaMemcpyHostToDevice), "upload", err));
    g->what = G_INV;
    HX_TRY(checked_measure(ctx, g, "inverse", "v0", g->d_inverse, host_ref(h->inverse), n * 16,
                           (ptv3_work){(double)n * 4.0 * 12.0, 12.0 * 4.0}, err));
  }
  /* the whole serialization: sfc_serial_variant_best's variant (v2), every variant with --ladder */
  g->what = G_SERIAL;
  const sfc_serial_variant *svs[16];
  const size_t nsv = f3d_plan_serial(svs, 16, ctx->ladder, sfc_serial_variant_best());
  for (size_t v = 0; v < nsv; v++) {
    g->sv = svs[v];
    snprintf(var, sizeof var, "v%d", g->sv->id);
    /* order is the decisive output; code and inverse are compared too before timing */
    HX_TRY(cuda_st(cudaMemset(g->d_code, 0xFF, n * 32), "poison", err));
    HX_TRY(cuda_st(cudaMemset(g->d_inverse, 0xFF, n * 16), "poison", err));
    int ok1 = 0, ok2 = 0;
    HX_TRY(gpu_run(g, NULL, err));
    HX_TRY(cuda_st(cudaDeviceSynchronize(), "serialize", err));
    HX_TRY(same(g, &ok1, g->d_code, host_ref(h->code), n * 32, err));
    HX_TRY(same(g, &ok2, g->d_inverse, host_ref(h->inverse), n * 16, err));
    if (!ok1 || !ok2) {
      HX_TRY(f3d_record(ctx, "ptv3", "serialize", var, "check", 0, "bool", err));
      fprintf(stderr, "f3dbench: ptv3: serialize %s: code/inverse differ from the CPU reference: not timed\n", var);
      continue;
    }
    HX_TRY(checked_measure(ctx, g, "serialize", var, g->d_order, host_ref(h->order), n * 16, no_work, err));
  }
  /* leave the reference order/inverse on the device for the shuffle stages */
  HX_TRY(cuda_st(cudaMemcpy(g->d_order, h->order, n * 16, cudaMemcpyHostToDevice), "upload", err));
  HX_TRY(cuda_st(cudaMemcpy(g->d_inverse, h->inverse, n * 16, cudaMemcpyHostToDevice), "upload", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_pad, h->sum_p * 4, "ptv3 pad", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_unpad, n * 4, "ptv3 unpad", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_order_p, h->sum_p * 4, "ptv3 order[pad]", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_inverse_p, n * 4, "ptv3 unpad[inverse]", err));
  HX_TRY(gpu_alloc(g, (void **)&g->d_cu, h->n_cu * 4, "ptv3 cu_seqlens", err));
  g->what = G_PAD;
  HX_TRY(checked_measure(ctx, g, "padding", "v0", g->d_order_p, host_ref(h->order_p), h->sum_p * 4, no_work, err));

  /* gathers: qkv [sum_p, 3C] by order_p, output [N, C] by inverse_p; random fp16 bits, value k of every gather's
   * source hx_rng_u64(seed, 77, k): each source is a prefix of the widest, drawn once per case in parallel (the
   * four sources, one at a time on one thread: 2.6 s at 600k points, 2-core dev box) */
  const size_t rmax = h->sum_p > n ? h->sum_p : n;
  size_t src_max = 0;
  for (int ci = 0; ci < 2; ci++) {
    const size_t C = ptv3_gather_C[ci];
    if (n * 3 * C > src_max) src_max = n * 3 * C;
    if (h->sum_p * C > src_max) src_max = h->sum_p * C;
  }
  g->h_src = malloc(src_max * 2 + 2);
  if (!g->h_src) return hx_errf(err, HX_ENOMEM, "ptv3: gather source");
  src_fill sf = {g->h_src, ctx->seed};
  hx_par_for(src_max, 1u << 16, fill_src, &sf);
  for (int ci = 0; ci < 2; ci++) {
    /* source and destination of this C's gathers: qkv rows (3C fp16) are the widest */
    HX_TRY(gpu_alloc(g, &g->d_in, rmax * 3 * ptv3_gather_C[ci] * 2, "ptv3 gather source", err));
    HX_TRY(gpu_alloc(g, &g->d_out, rmax * 3 * ptv3_gather_C[ci] * 2, "ptv3 gather destination", err));
    for (int which = 0; which < 2; which++) {
      const size_t C = ptv3_gather_C[ci];
      g->width = which == 0 ? 3 * C : C;
      g->rows = which == 0 ? h->sum_p : n;
      const size_t src_rows = which == 0 ? n : h->sum_p;
      g->d_idx = which == 0 ? g->d_order_p : g->d_inverse_p;
      const size_t rb = g->width * 2;
      /* the reference: shuf_gather_cpu, piece by piece inside the check */
      const ptv3_ref want = {NULL, g->h_src, which == 0 ? h->order_p : h->inverse_p, g->width};
      hx_status st = cuda_st(cudaMemcpy(g->d_in, g->h_src, src_rows * rb, cudaMemcpyHostToDevice), "upload", err);
      const double bytes = (double)g->rows * (double)rb * 2.0 + (double)g->rows * 4.0;
      snprintf(kernel, sizeof kernel, "copy_%s_C%zu", which == 0 ? "qkv" : "out", C);
      if (st == HX_OK && stage_on(ctx, kernel)) { /* the copy yardstick (--ladder) */
        g->what = G_COPY;
        hx_closure cc = {gpu_run, NULL, g, (double)g->rows * (double)rb * 2.0, 0};
        st = f3d_measure(ctx, "ptv3", kernel, "memcpy", HX_CLOCK_GPU, &cc, err);
        if (st == HX_OK) st = f3d_record(ctx, "ptv3", kernel, "memcpy", "bytes_per_row", (double)rb * 2.0, "B", err);
      }
      /* the gathers: shuf_gather_variant_best's for this row width, every variant with --ladder */
      snprintf(kernel, sizeof kernel, "gather_%s_C%zu", which == 0 ? "qkv" : "out", C);
      g->what = G_GATHER;
      const shuf_gather_variant *gvs[16];
      const size_t ngv = f3d_plan_gather(gvs, 16, ctx->ladder, shuf_gather_variant_best(g->width));
      for (size_t v = 0; v < ngv && st == HX_OK; v++) {
        g->gv = gvs[v];
        snprintf(var, sizeof var, "v%d", g->gv->id);
        st = checked_measure(ctx, g, kernel, var, g->d_out, want, g->rows * rb, (ptv3_work){bytes, (double)rb * 2.0 + 4.0},
                             err);
      }
      HX_TRY(st);
    }
    HX_TRY(hx_arena_free(g->arena, g->d_in, err));
    HX_TRY(hx_arena_free(g->arena, g->d_out, err));
    g->d_in = g->d_out = NULL;
  }
  free(g->h_src);
  g->h_src = NULL;

  /* pooling: C = 64 fp32 features, row permutation drawn like PTv3's per-pooling randperm */
  const size_t C = PTV3_POOL_C;
  float *feat = malloc(n * C * 4);
  spool_out want;
  memset(&want, 0, sizeof want);
  void **wf = (void **)&want.cluster;
  const size_t sizes[10] = {n * 4, n * 4, n * 4 + 4, n * 32, n * 16, n * 16, n * C * 4, n * 12, n * 12, n * 4};
  hx_status st = feat ? HX_OK : hx_errf(err, HX_ENOMEM, "ptv3: pooling features");
  for (int k = 0; k < 10 && st == HX_OK; k++)
    if (!(wf[k] = malloc(sizes[k]))) st = hx_errf(err, HX_ENOMEM, "ptv3: pooling reference");
  void **gf = (void **)&g->pout.cluster;
  for (int k = 0; k < 10 && st == HX_OK; k++) st = gpu_alloc(g, &gf[k], sizes[k], "ptv3 pooling output", err);
  if (st == HX_OK) {
    feat_fill ff = {feat, ctx->seed};
    hx_par_for(n * C, 1u << 16, fill_feat, &ff);
    spool_in pin = {h->code, h->order, feat, h->xyz, h->grid, h->batch, n, C, 4, h->depth, h->B, {0, 1, 2, 3}};
    sfc_row_perm(pin.perm, 4, ctx->seed, 1);
    st = spool_cpu(&want, &pin, err);
    /* inputs from the reference, not from whatever the last timed stage left on the device */
    if (st == HX_OK) st = cuda_st(cudaMemcpy(g->d_code, h->code, n * 32, cudaMemcpyHostToDevice), "upload", err);
    if (st == HX_OK) st = cuda_st(cudaMemcpy(g->d_grid, h->grid, n * 12, cudaMemcpyHostToDevice), "upload", err);
    if (st == HX_OK) st = gpu_alloc(g, (void **)&g->d_feat, n * C * 4, "ptv3 pooling features", err);
    if (st == HX_OK) st = cuda_st(cudaMemcpy(g->d_feat, feat, n * C * 4, cudaMemcpyHostToDevice), "upload", err);
    g->pin = pin;
    g->pin.code = g->d_code, g->pin.order = g->d_order, g->pin.feat = g->d_feat, g->pin.coord = g->d_xyz;
    g->pin.grid = g->d_grid, g->pin.batch = g->d_batch;
    g->what = G_POOL;
    /* feat and the re-sorted order decide; the GPU test compares every field */
    if (st == HX_OK) st = checked_measure(ctx, g, "pool", "v0", g->pout.order, host_ref(want.order), want.n_out * 16, no_work, err);
    if (st == HX_OK) {
      int ok = 0;
      st = same(g, &ok, g->pout.feat, host_ref(want.feat), want.n_out * C * 4, err);
      if (st == HX_OK && !ok) st = f3d_record(ctx, "ptv3", "pool", "v0", "check_feat", 0, "bool", err);
      if (st == HX_OK) st = f3d_record(ctx, "ptv3", "pool", "v0", "points_out", (double)want.n_out, "count", err);
    }
  }
  for (int k = 0; k < 10; k++) free(wf[k]);
  free(feat);
  return st;
}

static hx_status run_gpu(f3d_ctx *ctx, ptv3_host *h, hx_err *err) {
  gpu_state g;
  memset(&g, 0, sizeof g);
  g.h = h;
  g.arena = ctx->arena;
  if (!g.arena) return hx_errf(err, HX_EINVAL, "ptv3: no device memory arena in the sweep context");
  const hx_status st = run_gpu_body(ctx, &g, err);
  void *ptrs[] = {g.d_xyz, g.d_grid, g.d_batch, g.d_max, g.d_code, g.d_order, g.d_inverse, g.d_pad, g.d_unpad,
                  g.d_order_p, g.d_inverse_p, g.d_cu, g.d_in, g.d_out, g.d_scratch, g.d_feat, g.d_keep};
  for (size_t k = 0; k < sizeof ptrs / sizeof ptrs[0]; k++) hx_arena_free(g.arena, ptrs[k], NULL);
  free(g.chk), free(g.chk_ref), free(g.h_src);
  void **gf = (void **)&g.pout.cluster;
  for (int k = 0; k < 10; k++) hx_arena_free(g.arena, gf[k], NULL);
  return st;
}
#else
static hx_status run_gpu(f3d_ctx *ctx, ptv3_host *h, hx_err *err) {
  (void)ctx, (void)h;
  return hx_errf(err, HX_ENODEV, "ptv3: this build has no CUDA");
}
#endif

/* Attention over PTv3's padded patches: this case's padding (K = 1024, cu_seqlens as the gather used
 * them) and a K = 4096 padding computed the same way (host only: only cu_seqlens is needed). */
static hx_status ptv3_attention(f3d_ctx *ctx, const ptv3_host *h, hx_err *err) {
  if (!ctx->have_gpu) return f3d_attn_stage(ctx, "ptv3", (int64_t)h->sum_p, NULL, 0, -1, err);
  static const uint32_t Ks[2] = {PTV3_K, 4096u};
  static const char *const names[2] = {"attn.patch1024", "attn.patch4096"};
  battn_plan plans[2];
  memset(plans, 0, sizeof plans);
  f3d_attn_item items[2];
  size_t rows = 0;
  hx_status st = HX_OK;
  for (int i = 0; i < 2 && st == HX_OK; i++) {
    size_t sum_p = h->sum_p, n_cu = h->n_cu;
    int32_t *cu = NULL;
    if (Ks[i] != PTV3_K) {
      st = shuf_pad_sizes(&sum_p, &n_cu, h->offset, h->B, Ks[i], err);
      cu = st == HX_OK ? malloc(n_cu * sizeof *cu) : NULL;
      if (st == HX_OK && !cu) st = hx_errf(err, HX_ENOMEM, "ptv3: cu_seqlens");
      if (st == HX_OK) st = shuf_padding_cpu(NULL, NULL, cu, h->offset, h->B, Ks[i], err);
    }
    const int32_t *src = cu ? cu : h->cu;
    int64_t *cu64 = st == HX_OK ? malloc(n_cu * sizeof *cu64) : NULL;
    if (st == HX_OK && !cu64) st = hx_errf(err, HX_ENOMEM, "ptv3: cu_seqlens");
    for (size_t k = 0; st == HX_OK && k < n_cu; k++) cu64[k] = src[k];
    if (st == HX_OK) st = battn_plan_patches(&plans[i], cu64, (uint32_t)(n_cu - 1), F3D_ATTN_PIECE_ROWS, err);
    free(cu), free(cu64);
    items[i] = (f3d_attn_item){names[i], &plans[i]};
    if (sum_p > rows) rows = sum_p;
  }
  if (st == HX_OK) st = f3d_attn_stage(ctx, "ptv3", (int64_t)rows, items, 2, -1, err);
  for (int i = 0; i < 2; i++) battn_plan_free(&plans[i]);
  return st;
}

hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err) {
  ptv3_host h;
  hx_status st = host_prepare(&h, ctx, err);
  if (st == HX_OK) st = f3d_record(ctx, "ptv3", "serialize", "cpu", "depth", h.depth, "count", err);
  if (st == HX_OK && F3D_HAVE_CUDA && ctx->have_gpu && h.B > SFC_MAX_CLOUDS)
    st = hx_errf(err, HX_EUNSUPPORTED, "ptv3: %u clouds in a batch, the GPU path takes at most %d", h.B,
                 SFC_MAX_CLOUDS);
  if (st == HX_OK) st = F3D_HAVE_CUDA && ctx->have_gpu ? run_gpu(ctx, &h, err) : run_cpu(ctx, &h, err);
  if (st == HX_OK) st = ptv3_attention(ctx, &h, err);
  host_free(&h);
  return st;
}
