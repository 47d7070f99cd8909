/*
 * ptv3_bench.c - a short, self-contained timing table of the PTv3 baselines on one GPU (run by
 * lab/baselines/ptv3-device.sh; the sweep's `ptv3` pipeline is the full measurement).
 *
 * Input: N random points (default 600k) in a 100 x 100 x 8 m box, grid 0.05 m (depth 11, like nuScenes),
 * B clouds of N/B points. Every GPU variant is first checked against the CPU reference on this input
 * (a mismatch is reported and the variant is not timed). Timing: the harness's GPU clock (hx_time, the one
 * path of every published number: CUDA events around each call on the bench's stream), the L2 flushed (a
 * 256 MB memset queued by the closure's reset, before the start event) before every repetition, 3 warm-ups
 * discarded, the median of REPS (hx_stats_describe: the mean of the middle two for an even REPS; this table
 * printed the upper middle one before). Every stage runs on one stream created with cudaStreamCreate, which
 * keeps the legacy default stream's ordering with the synchronous copies and memsets of the checks. Gathers
 * are reported as achieved bandwidth (read + write bytes / time) next to a device-to-device cudaMemcpy of the
 * same output size.
 * Usage: ptv3_bench [N] [B] [REPS] [GRID] > table.txt   (GRID 0.1 gives depth 10: 32-bit sort keys)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "harness/harness.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the CUDA headers have stray semicolons */
#include <cuda_runtime_api.h>
#pragma GCC diagnostic pop

#define CK(e)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (e);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #e, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)
#define OK(e)                                                                          \
  do {                                                                                 \
    hx_status s_ = (e);                                                                \
    if (s_ != HX_OK) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #e, hx_status_str(s_));  \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static void *dmalloc(size_t b) {
  void *p;
  CK(cudaMalloc(&p, b ? b : 16));
  return p;
}

/* ---- the benchmark state ---- */
typedef struct st {
  size_t n, offset[SFC_MAX_CLOUDS + 1];
  uint32_t B;
  double gs;
  int depth;
  float *d_xyz;
  uint32_t *d_grid, *d_batch, *d_max;
  uint64_t *d_code;
  uint32_t *d_order, *d_inv;
  void *d_scratch;
  size_t scratch;
  sfc_serial_args a;
  const sfc_serial_variant *var;
  sfc_order one;
  /* shuffle */
  size_t sum_p, n_cu;
  uint32_t *d_pad, *d_unpad, *d_order_p, *d_inverse_p;
  int32_t *d_cu;
  void *d_in, *d_out;
  const shuf_gather_variant *gv;
  size_t rows, width;
  const uint32_t *d_idx;
  size_t copy_bytes;
  /* pooling */
  spool_in pin;
  spool_out pout;
  /* timing */
  cudaStream_t stream;
  void *d_flush;    /* 256 MB: the L2 flush before every repetition */
  unsigned flushes; /* the flush byte changes every time */
  uint32_t reps;
} st;

typedef hx_status (*bench_fn)(void *arg, void *stream, hx_err *err);

/* A library status with the stage's name (the baselines return a status and no message). */
static hx_status named(hx_status s, const char *what, hx_err *err) {
  return s == HX_OK ? HX_OK : hx_errf(err, s, "%s: %s", what, hx_status_str(s));
}

/* The closure's reset: queue the flush on the bench's stream, so it lands before the start event. */
static hx_status flush_l2(void *arg, hx_err *err) {
  st *s = arg;
  const cudaError_t e = cudaMemsetAsync(s->d_flush, (int)(s->flushes++ & 0xFF), 256u << 20, s->stream);
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "L2 flush: %s", cudaGetErrorString(e));
}

/* Median time (ms) of fn over s->reps repetitions, L2 flushed before each, 3 warm-ups (hx_time). */
static double time_ms(bench_fn fn, st *s) {
  const hx_closure c = {fn, flush_l2, s, 0.0, 0.0};
  const hx_timing_opts o = {3, s->reps};
  double *t = malloc(s->reps * sizeof *t);
  hx_stats_desc d;
  hx_err err = {HX_OK, ""};
  if (!t || hx_time(t, HX_CLOCK_GPU, &o, &c, s->stream, &err) != HX_OK || hx_stats_describe(&d, t, s->reps, &err) != HX_OK) {
    fprintf(stderr, "ptv3_bench: timing failed: %s\n", t ? err.msg : "no memory");
    exit(1);
  }
  free(t);
  return d.median;
}

static hx_status run_grid(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(sfc_grid_gpu(s->d_grid, s->d_batch, s->d_max, s->d_scratch, &s->scratch, s->d_xyz, s->offset, s->B, s->gs,
                            stream),
               "grid", err);
}
static hx_status run_encode1(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(sfc_encode_gpu(s->d_code, s->d_grid, s->d_batch, s->n, s->depth, &s->one, 1, stream), "encode", err);
}
static hx_status run_encode4(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(sfc_encode_gpu(s->d_code, s->d_grid, s->d_batch, s->n, s->depth, s->a.orders, 4, stream), "encode", err);
}
static hx_status run_sort(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(sfc_sort_gpu(s->d_order, s->d_scratch, &s->scratch, s->d_code, s->n, 4, sfc_key_bits(s->depth, s->B),
                            stream),
               "sort", err);
}
static hx_status run_inverse(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(sfc_inverse_gpu(s->d_inv, s->d_order, s->n, 4, stream), "inverse", err);
}
static hx_status run_serial(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(s->var->fn(s->d_scratch, &s->scratch, &s->a, stream), s->var->name, err);
}
static hx_status run_serial_grid(void *p, void *stream, hx_err *err) {
  HX_TRY(run_grid(p, stream, err));
  return run_serial(p, stream, err);
}
static hx_status run_padding(void *p, void *stream, hx_err *err) {
  st *s = p;
  HX_TRY(named(shuf_padding_gpu(s->d_pad, s->d_unpad, s->d_cu, s->offset, s->B, 1024, stream), "padding", err));
  return named(shuf_compose_gpu(s->d_order_p, s->d_inverse_p, s->d_order, s->d_inv, s->d_pad, s->d_unpad, s->n, s->sum_p,
                                stream),
               "compose", err);
}
static hx_status run_gather(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(s->gv->fn(s->d_out, s->d_in, s->d_idx, s->rows, s->width, SHUF_F16, stream), s->gv->name, err);
}
static hx_status run_copy(void *p, void *stream, hx_err *err) {
  st *s = p;
  const cudaError_t e = cudaMemcpyAsync(s->d_out, s->d_in, s->copy_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "copy: %s", cudaGetErrorString(e));
}
static hx_status run_pool(void *p, void *stream, hx_err *err) {
  st *s = p;
  return named(spool_gpu(&s->pout, s->d_scratch, &s->scratch, &s->pin, stream), "pool", err);
}

/* One untimed run of a stage (the check before its timing) on the bench's stream, then a device sync. */
static void run_once(bench_fn fn, st *s) {
  hx_err err = {HX_OK, ""};
  if (fn(s, s->stream, &err) != HX_OK) {
    fprintf(stderr, "ptv3_bench: %s\n", err.msg);
    exit(1);
  }
  CK(cudaDeviceSynchronize());
}

static int same(const void *d, const void *h, size_t bytes) {
  void *t = malloc(bytes);
  CK(cudaMemcpy(t, d, bytes, cudaMemcpyDeviceToHost));
  const int r = memcmp(t, h, bytes) == 0;
  free(t);
  return r;
}

int main(int argc, char **argv) {
  st s;
  memset(&s, 0, sizeof s);
  s.n = argc > 1 ? strtoull(argv[1], NULL, 10) : 600000;
  s.B = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1;
  const long reps = argc > 3 ? strtol(argv[3], NULL, 10) : 20;
  if (reps < 1 || reps > (long)HX_TIMING_MAX_REPS) return fprintf(stderr, "bad REPS (1..%u)\n", HX_TIMING_MAX_REPS), 2;
  s.reps = (uint32_t)reps;
  const double gs = argc > 4 ? strtod(argv[4], NULL) : 0.05;
  if (!(gs > 0.0)) return fprintf(stderr, "bad GRID\n"), 2;
  if (s.B < 1 || s.B > SFC_MAX_CLOUDS || s.n < s.B) return fprintf(stderr, "bad N/B\n"), 2;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) return fprintf(stderr, "no CUDA device\n"), 77;
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# ptv3_bench on %s, N=%zu, B=%u, grid %g m, reps=%u (median, L2 flushed)\n", prop.name, s.n, s.B, gs, s.reps);
  s.gs = gs;
  const size_t n = s.n;
  for (uint32_t b = 0; b < s.B; b++) s.offset[b + 1] = n * (b + 1) / s.B;
  float *xyz = malloc(n * 12);
  for (size_t i = 0; i < n; i++) {
    xyz[3 * i] = (float)(hx_rng_unit(1, 0, i) * 100.0 - 50.0);
    xyz[3 * i + 1] = (float)(hx_rng_unit(1, 1, i) * 100.0 - 50.0);
    xyz[3 * i + 2] = (float)(hx_rng_unit(1, 2, i) * 8.0 - 2.0);
  }
  uint32_t *grid = malloc(n * 12), *batch = malloc(n * 4), gmax;
  OK(sfc_grid_cpu(grid, &gmax, xyz, s.offset, s.B, gs, NULL));
  OK(sfc_batch_index_cpu(batch, s.offset, s.B, NULL));
  OK(sfc_depth(&s.depth, gmax, s.B, gs, NULL));
  printf("# depth %d, key bits %d\n", s.depth, sfc_key_bits(s.depth, s.B));
  const sfc_order orders[4] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  uint64_t *code = malloc(n * 32);
  uint32_t *order = malloc(n * 16), *inv = malloc(n * 16);
  OK(sfc_encode_cpu(code, grid, batch, n, s.depth, orders, 4, NULL));
  OK(sfc_sort_cpu(order, inv, code, n, 4, NULL));

  CK(cudaMalloc(&s.d_flush, 256u << 20));
  CK(cudaStreamCreate(&s.stream)); /* blocking: ordered with the legacy stream's copies and memsets below */
  s.d_xyz = dmalloc(n * 12);
  CK(cudaMemcpy(s.d_xyz, xyz, n * 12, cudaMemcpyHostToDevice));
  s.d_grid = dmalloc(n * 12), s.d_batch = dmalloc(n * 4), s.d_max = dmalloc(4);
  s.d_code = dmalloc(n * 32), s.d_order = dmalloc(n * 16), s.d_inv = dmalloc(n * 16);
  s.a = (sfc_serial_args){s.d_code, s.d_order, s.d_inv, s.d_grid, s.B > 1 ? s.d_batch : NULL, n, s.B, s.depth, 4,
                          {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS}};
  /* scratch: the max over every user */
  size_t sb = 0, need = 0;
  OK(sfc_grid_gpu(NULL, NULL, NULL, NULL, &sb, NULL, s.offset, s.B, gs, NULL));
  need = sb;
  OK(sfc_sort_gpu(NULL, NULL, &sb, NULL, n, 4, 64, NULL));
  if (sb > need) need = sb;
  for (int v = 0; v < sfc_serial_variant_count(); v++) {
    OK(sfc_serial_variant_get(v)->fn(NULL, &sb, &s.a, NULL));
    if (sb > need) need = sb;
  }
  s.d_scratch = dmalloc(need);
  s.scratch = need;

  printf("%-34s %10s %s\n", "stage", "ms", "note");
  run_once(run_grid, &s);
  printf("%-34s %10.4f %s\n", "grid", time_ms(run_grid, &s), same(s.d_grid, grid, n * 12) ? "ok" : "MISMATCH");
  for (int o = 0; o < 4; o++) {
    s.one = orders[o];
    char name[64];
    snprintf(name, sizeof name, "encode %s", sfc_order_name(orders[o]));
    run_once(run_encode1, &s);
    const int ok = same(s.d_code, code + (size_t)o * n, n * 8);
    printf("%-34s %10.4f %s\n", name, time_ms(run_encode1, &s), ok ? "ok" : "MISMATCH");
  }
  run_once(run_encode4, &s);
  printf("%-34s %10.4f %s\n", "encode 4 orders (one launch)", time_ms(run_encode4, &s),
         same(s.d_code, code, n * 32) ? "ok" : "MISMATCH");
  run_once(run_sort, &s);
  printf("%-34s %10.4f %s\n", "sort 4 rows (CUB, u64)", time_ms(run_sort, &s), same(s.d_order, order, n * 16) ? "ok" : "MISMATCH");
  run_once(run_inverse, &s);
  printf("%-34s %10.4f %s\n", "inverse 4 rows", time_ms(run_inverse, &s), same(s.d_inv, inv, n * 16) ? "ok" : "MISMATCH");
  for (int v = 0; v < sfc_serial_variant_count(); v++) {
    s.var = sfc_serial_variant_get(v);
    CK(cudaMemset(s.d_order, 0xFF, n * 16));
    run_once(run_serial, &s);
    const int ok = same(s.d_code, code, n * 32) && same(s.d_order, order, n * 16) && same(s.d_inv, inv, n * 16);
    char name[80];
    snprintf(name, sizeof name, "SERIALIZE v%d %s", s.var->id, s.var->name);
    if (!ok) {
      printf("%-34s %10s MISMATCH (not timed)\n", name, "-");
      continue;
    }
    const double t = time_ms(run_serial, &s);
    printf("%-34s %10.4f target <= 1 ms: %s\n", name, t, t <= 1.0 ? "MET" : "missed");
    snprintf(name, sizeof name, "  + grid v%d", s.var->id);
    printf("%-34s %10.4f\n", name, time_ms(run_serial_grid, &s));
  }
  /* the order/inverse left by the last variant equal the CPU's (checked above) */
  CK(cudaMemcpy(s.d_order, order, n * 16, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s.d_inv, inv, n * 16, cudaMemcpyHostToDevice));
  OK(shuf_pad_sizes(&s.sum_p, &s.n_cu, s.offset, s.B, 1024, NULL));
  s.d_pad = dmalloc(s.sum_p * 4), s.d_unpad = dmalloc(n * 4), s.d_cu = dmalloc(s.n_cu * 4);
  s.d_order_p = dmalloc(s.sum_p * 4), s.d_inverse_p = dmalloc(n * 4);
  printf("%-34s %10.4f\n", "padding + compose (K=1024)", time_ms(run_padding, &s));
  /* gathers: qkv [sum_p, 3C] by order_p, out [N, C] by inverse_p */
  const size_t Cs[2] = {64, 256};
  s.d_in = dmalloc(s.sum_p * 3 * 512 * 2);
  s.d_out = dmalloc(s.sum_p * 3 * 512 * 2);
  uint16_t *hin = malloc(s.sum_p * 3 * 256 * 2), *hwant = malloc(s.sum_p * 3 * 256 * 2);
  uint32_t *op = malloc(s.sum_p * 4), *ip = malloc(n * 4);
  CK(cudaMemcpy(op, s.d_order_p, s.sum_p * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ip, s.d_inverse_p, n * 4, cudaMemcpyDeviceToHost));
  for (int ci = 0; ci < 2; ci++) {
    for (int which = 0; which < 2; which++) {
      const size_t C = Cs[ci];
      s.width = which == 0 ? 3 * C : C;
      s.rows = which == 0 ? s.sum_p : n;
      const size_t src_rows = which == 0 ? n : s.sum_p;
      s.d_idx = which == 0 ? s.d_order_p : s.d_inverse_p;
      for (size_t k = 0; k < src_rows * s.width; k++) hin[k] = (uint16_t)hx_rng_u64(2, 0, k);
      CK(cudaMemcpy(s.d_in, hin, src_rows * s.width * 2, cudaMemcpyHostToDevice));
      OK(shuf_gather_cpu(hwant, hin, which == 0 ? op : ip, s.rows, s.width, SHUF_F16));
      const double bytes = (double)s.rows * (double)s.width * 2.0 * 2.0 + (double)s.rows * 4.0;
      s.copy_bytes = s.rows * s.width * 2;
      const double tc = time_ms(run_copy, &s);
      const double copy_bw = 2.0 * (double)s.copy_bytes / tc / 1e6;
      printf("%-34s %10.4f %.0f GB/s (memcpy D2D, %zu x %zu B)\n", which == 0 ? "copy qkv-size" : "copy out-size", tc,
             copy_bw, s.rows, s.width * 2);
      for (int v = 0; v < shuf_gather_variant_count(); v++) {
        s.gv = shuf_gather_variant_get(v);
        CK(cudaMemset(s.d_out, 0xFF, s.rows * s.width * 2));
        run_once(run_gather, &s);
        char name[96];
        snprintf(name, sizeof name, "gather %s C=%zu v%d %s", which == 0 ? "qkv" : "out", C, s.gv->id, s.gv->name);
        if (!same(s.d_out, hwant, s.rows * s.width * 2)) {
          printf("%-34s %10s MISMATCH (not timed)\n", name, "-");
          continue;
        }
        const double t = time_ms(run_gather, &s);
        const double bw = bytes / t / 1e6;
        printf("%-34s %10.4f %.0f GB/s = %.0f%% of copy (target >= 50%%: %s)\n", name, t, bw, 100.0 * bw / copy_bw,
               bw >= 0.5 * copy_bw ? "MET" : "missed");
      }
    }
  }
  /* pooling, C = 64 fp32 features */
  const size_t C = 64;
  float *feat = malloc(n * C * 4);
  for (size_t k = 0; k < n * C; k++) feat[k] = (float)hx_rng_unit(3, 0, k);
  spool_in pin = {code, order, feat, xyz, grid, batch, n, C, 4, s.depth, s.B, {1, 3, 0, 2}};
  spool_out want = {0, 0, malloc(n * 4), malloc(n * 4), malloc(n * 4 + 4), malloc(n * 32), malloc(n * 16),
                    malloc(n * 16), malloc(n * C * 4), malloc(n * 12), malloc(n * 12), malloc(n * 4)};
  OK(spool_cpu(&want, &pin, NULL));
  s.pin = pin;
  float *d_feat = dmalloc(n * C * 4);
  CK(cudaMemcpy(d_feat, feat, n * C * 4, cudaMemcpyHostToDevice));
  s.pin.code = s.d_code, s.pin.order = s.d_order, s.pin.feat = d_feat, s.pin.coord = s.d_xyz;
  s.pin.grid = s.d_grid, s.pin.batch = s.d_batch;
  s.pout = (spool_out){0, 0, dmalloc(n * 4), dmalloc(n * 4), dmalloc(n * 4 + 4), dmalloc(n * 32), dmalloc(n * 16),
                       dmalloc(n * 16), dmalloc(n * C * 4), dmalloc(n * 12), dmalloc(n * 12), dmalloc(n * 4)};
  CK(cudaMemcpy(s.d_code, code, n * 32, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s.d_grid, grid, n * 12, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s.d_batch, batch, n * 4, cudaMemcpyHostToDevice));
  OK(spool_gpu(&s.pout, NULL, &sb, &s.pin, NULL));
  if (sb > s.scratch) {
    CK(cudaFree(s.d_scratch));
    s.d_scratch = dmalloc(sb);
    s.scratch = sb;
  }
  run_once(run_pool, &s);
  const int pok = s.pout.n_out == want.n_out && same(s.pout.order, want.order, want.n_out * 16) &&
                  same(s.pout.feat, want.feat, want.n_out * C * 4);
  printf("%-34s %10.4f %s (%zu -> %zu points, includes one sync)\n", "pooling stride 2 (C=64 fp32)",
         pok ? time_ms(run_pool, &s) : -1.0, pok ? "ok" : "MISMATCH", n, want.n_out);
  printf("# done\n");
  return 0;
}
