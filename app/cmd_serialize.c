/*
 * cmd_serialize.c - `f3dbench serialize`: PTv3's serialization codes of a batch of recorded clouds as CSV.
 *
 * Each INPUT is one cloud of the batch, in the order given. Grid coordinates are GridSample's
 * (floor(coord / grid) in double, minus the per-cloud minimum), optionally one point per voxel (first
 * kept), depth is PTv3's bit_length(max + 1) over the whole batch, and each requested order's code
 * carries the cloud index at bit 3*depth. One row per (kept) input point in input order; `index` is the
 * point's position in its input file (also past points dropped for NaN/Inf coordinates: wl_cloud.src).
 * --device gpu computes grid, dedup and codes with the CUDA kernels; both paths write byte-identical files
 * (tests/baselines/serialize_cli.sh compares them).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"
#include "app/cli.h"
#include "workloads/workloads.h"

static void serialize_usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench serialize [--grid 0.05] [--orders z,z-trans,hilbert,hilbert-trans] [--dedup]\n"
          "                          [--device cpu|gpu] [--seed S] --out FILE INPUT...\n"
          "  PTv3 serialization codes of a batch (one INPUT per cloud, in order) as CSV with header\n"
          "  cloud,index,gx,gy,gz,depth,<orders>; codes include the batch bits (cloud << 3*depth).\n"
          "  --grid G      grid size in metres (default 0.05)\n"
          "  --orders L    comma-separated subset of z,z-trans,hilbert,hilbert-trans (default: all four)\n"
          "  --dedup       keep the first point of each voxel per cloud (GridSample); dropped count on stderr\n"
          "  --device D    cpu (default) or gpu; both write identical files\n"
          "  --seed S      recorded for reproducibility; the codes themselves are deterministic\n"
          "  --out FILE    output CSV (written to a temporary name, then renamed over it, or over the file a\n"
          "                symbolic link names; - is stdout; a FIFO or device is written in place)\n");
}

typedef struct ser_state {
  wl_cloud *clouds;
  uint32_t B;
  wl_batch batch;
  uint32_t *grid, *batch_idx, *keep, *kgrid, *kbatch;
  uint64_t *code;
} ser_state;

static void ser_free(ser_state *s) {
  for (uint32_t b = 0; b < s->B; b++) wl_cloud_free(&s->clouds[b]);
  free(s->clouds);
  wl_batch_free(&s->batch);
  free(s->grid), free(s->batch_idx), free(s->keep), free(s->kgrid), free(s->kbatch), free(s->code);
}

static int ser_run(ser_state *s, char **inputs, uint32_t B, double grid, const sfc_order *orders, int R,
                   int dedup, int gpu, const char *out_path) {
  hx_err err = {HX_OK, ""};
  if (gpu && f3d_gpu_ready("serialize: gpu", NULL)) /* "no CUDA device (<reason>)" up front, not from a kernel */
    return 1;
  size_t nmax;
  if (f3d_read_batch(&s->clouds, &s->B, &s->batch, &nmax, inputs, B, "serialize")) return 1;
  const size_t n = s->batch.n;
  s->grid = malloc(n * 3 * sizeof *s->grid);
  s->batch_idx = malloc(n * sizeof *s->batch_idx);
  s->keep = malloc(n * sizeof *s->keep);
  if (!s->grid || !s->batch_idx || !s->keep) return f3d_fail("serialize", "out of memory for %zu points", n), 1;
  uint32_t gmax = 0;
  hx_status st = gpu ? sfc_grid_host_gpu(s->grid, &gmax, s->batch.xyz, s->batch.offset, B, grid, &err)
                     : sfc_grid_cpu(s->grid, &gmax, s->batch.xyz, s->batch.offset, B, grid, &err);
  if (st != HX_OK) return f3d_fail("serialize: grid coordinates", "%s", err.msg), 1;
  if (sfc_batch_index_cpu(s->batch_idx, s->batch.offset, B, &err) != HX_OK)
    return f3d_fail("serialize", "%s", err.msg), 1;
  /* dedup keeps one point of every voxel, so the per-cloud minima and gmax (hence depth) are unchanged */
  int depth = 0;
  if (sfc_depth(&depth, gmax, B, grid, &err) != HX_OK) return f3d_fail("serialize", "%s", err.msg), 1;
  size_t m = n;
  if (dedup) {
    size_t dropped = 0;
    size_t *off2 = malloc((B + 1) * sizeof *off2);
    if (!off2) return f3d_fail("serialize", "out of memory"), 1;
    st = gpu ? sfc_dedup_host_gpu(s->keep, off2, &dropped, s->grid, s->batch.offset, B, depth, &err)
             : sfc_dedup_cpu(s->keep, off2, &dropped, s->grid, s->batch.offset, B, &err);
    free(off2);
    if (st != HX_OK) return f3d_fail("serialize: dedup", "%s", err.msg), 1;
    m = n - dropped;
    fprintf(stderr, "f3dbench: serialize: --dedup dropped %zu of %zu points\n", dropped, n);
  } else {
    for (size_t i = 0; i < n; i++) s->keep[i] = (uint32_t)i;
  }
  s->kgrid = malloc(m * 3 * sizeof *s->kgrid);
  s->kbatch = malloc(m * sizeof *s->kbatch);
  s->code = malloc(m * (size_t)R * sizeof *s->code);
  if (!s->kgrid || !s->kbatch || !s->code) return f3d_fail("serialize", "out of memory"), 1;
  for (size_t k = 0; k < m; k++) {
    memcpy(s->kgrid + 3 * k, s->grid + 3 * (size_t)s->keep[k], 3 * sizeof *s->kgrid);
    s->kbatch[k] = s->batch_idx[s->keep[k]];
  }
  st = gpu ? sfc_encode_host_gpu(s->code, s->kgrid, s->kbatch, m, depth, orders, R, &err)
           : sfc_encode_cpu(s->code, s->kgrid, s->kbatch, m, depth, orders, R, &err);
  if (st != HX_OK) return f3d_fail("serialize: encode", "%s", err.msg), 1;

  char *tmp; /* written to a temporary name and renamed, as psh and pool */
  FILE *out = f3d_out_open("serialize", out_path, &tmp);
  if (!out) return 1;
  fprintf(out, "cloud,index,gx,gy,gz,depth");
  for (int r = 0; r < R; r++) fprintf(out, ",%s", sfc_order_name(orders[r]));
  fputc('\n', out);
  for (size_t k = 0; k < m; k++) {
    const uint32_t b = s->kbatch[k];
    const uint32_t *g = s->kgrid + 3 * k;
    fprintf(out, "%u,%zu,%u,%u,%u,%d", b, wl_cloud_src_index(&s->clouds[b], (size_t)s->keep[k] - s->batch.offset[b]),
            g[0], g[1], g[2], depth);
    for (int r = 0; r < R; r++) fprintf(out, ",%" PRIu64, s->code[(size_t)r * m + k]);
    fputc('\n', out);
  }
  return f3d_out_close("serialize", out, tmp, out_path, ferror(out) != 0);
}

int f3d_cmd_serialize(int argc, char **argv) {
  static const struct option opts[] = {
      {"grid", required_argument, NULL, 'g'}, {"orders", required_argument, NULL, 'o'},
      {"dedup", no_argument, NULL, 'd'},      {"device", required_argument, NULL, 'D'},
      {"seed", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'O'},
      {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
  };
  double grid = 0.05;
  sfc_order orders[SFC_MAX_ORDERS] = {SFC_Z, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS};
  int R = 4, dedup = 0, gpu = 0, c;
  uint64_t seed = 0;
  const char *out = NULL;
  hx_err err = {HX_OK, ""};
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'g':
        if (f3d_parse_pos_double(optarg, &grid) != 0) return f3d_fail("serialize", "--grid '%s': want a positive number", optarg), 2;
        break;
      case 'o':
        if (sfc_orders_parse(optarg, orders, &R, &err) != HX_OK) return f3d_fail("serialize", "--%s", err.msg) /* "orders: ..." */, 2;
        break;
      case 'd': dedup = 1; break;
      case 'D':
        if (strcmp(optarg, "cpu") == 0) gpu = 0;
        else if (strcmp(optarg, "gpu") == 0) gpu = 1;
        else return f3d_fail("serialize", "--device '%s': want cpu or gpu", optarg), 2;
        break;
      case 's':
        if (f3d_parse_u64(optarg, &seed) != 0) return f3d_fail("serialize", "--seed '%s': want an unsigned integer", optarg), 2;
        break;
      case 'O': out = optarg; break;
      case 'h': serialize_usage(stdout); return 0;
      default: serialize_usage(stderr); return 2;
    }
  }
  (void)seed;
  if (!out) return f3d_fail("serialize", "--out FILE is required"), 2;
  if (optind >= argc) return f3d_fail("serialize", "no INPUT files (one per cloud)"), 2;
  const size_t B = (size_t)(argc - optind);
  if (B > UINT32_MAX) return f3d_fail("serialize", "too many inputs"), 2;
  if (f3d_out_not_input("serialize", out, argv + optind, B)) return 2;
  ser_state s;
  memset(&s, 0, sizeof s);
  const int rc = ser_run(&s, argv + optind, (uint32_t)B, grid, orders, R, dedup, gpu, out);
  ser_free(&s);
  return rc;
}
