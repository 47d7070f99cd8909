/*
 * net_floors.c - the backbones' floors on the CPU (no GPU): the cost model (nets/net_costs.c) on the shapes of the
 * sweep's cloud, priced at given rates, per component two ways: the most of the component's summed GEMM, attention
 * and memory times, and the sum of its operations' floors (each the more of its GEMM and memory time; attention
 * operations at the attention rate), which the study takes from the runs that record it.
 *   build/lab/net_floors [--points N] [--seed S] [--gemm TFLOPS] [--copy GBS] [--attn TFLOPS] [MODEL...]
 * Defaults: 600k lidar points of seed 1 (the sweep's first cloud at voxel 0.05 m), the net input's seed 1, the
 * ceilings of the H200 default run at 4de36fd (cuBLAS fp16 858.3 TFLOP/s, copy 4157.1 GB/s) and, unless --attn
 * names one rate for all, that run's attention rates at 600k: 154.8 TFLOP/s for PTv3's patches of 1024 (attn.patch1024),
 * 162.5 for patches of 4096 (attn.patch4096), 158.0 for Flash3D's scopes (attn.plain). Models: ptv3 flash3d-46m unless
 * named. Flash3D's buckets come from the CPU's PSH (net_flash3d_layouts_cpu): the GPU's layouts fill the same buckets,
 * so the counts agree. Prints one table per model; nothing is written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/nets.h"
#include "nets/nets_internal.h"
#include "workloads/workloads.h"

static int usage(void) {
  fputs("usage: net_floors [--points N] [--seed S] [--gemm TFLOPS] [--copy GBS] [--attn TFLOPS] [MODEL...]\n"
        "  the backbones' floors per component at the given rates, from the cost model on the CPU (no GPU)\n",
        stderr);
  return 2;
}

static double positive(const char *opt, const char *v) {
  char *end;
  const double x = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !(x > 0.0) || !isfinite(x)) {
    fprintf(stderr, "net_floors: %s '%s': a positive number\n", opt, v);
    exit(2);
  }
  return x;
}

/* The costs of one model on the input, at rates q. */
static hx_status model_costs(const char *model, const net_input *in, const net_cost_rates *q, net_cost *c, size_t *n,
                             hx_err *err) {
  net_config cfg;
  HX_TRY(net_config_named(&cfg, model, err));
  if (cfg.kind == 0) {
    net_ptv3_struct *s = calloc(1, sizeof *s);
    if (!s) return hx_errf(err, HX_ENOMEM, "net_floors: PTv3 structure");
    net_ptv3_cost_shape cs;
    hx_status st = net_ptv3_struct_build(s, &cfg, in, 1, err);
    if (st == HX_OK) st = net_ptv3_cost_shape_get(&cs, s, err);
    if (st == HX_OK) st = net_ptv3_costs_from_shape(&cfg, &cs, q, c, NET_COSTS_MAX, n, err);
    net_ptv3_struct_free(s);
    free(s);
    return st;
  }
  net_f3d_shape fs;
  net_f3d_layouts lay;
  HX_TRY(net_flash3d_shape_get(&fs, &cfg, in, err));
  HX_TRY(net_flash3d_layouts_cpu(&lay, &cfg, in, err));
  const hx_status st = net_flash3d_costs_from_layouts(&cfg, &fs, &lay, q, c, NET_COSTS_MAX, n, err);
  net_flash3d_layouts_free(&lay);
  return st;
}

int main(int argc, char **argv) {
  size_t points = 600000;
  uint64_t seed = 1;
  double gemm = 858.3, copy = 4157.1, attn = NAN;
  const char *models[16];
  int nm = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    }
    if (a[0] == '-' && i + 1 >= argc) return usage();
    if (!strcmp(a, "--points")) points = (size_t)positive(a, argv[++i]);
    else if (!strcmp(a, "--seed")) seed = (uint64_t)positive(a, argv[++i]);
    else if (!strcmp(a, "--gemm")) gemm = positive(a, argv[++i]);
    else if (!strcmp(a, "--copy")) copy = positive(a, argv[++i]);
    else if (!strcmp(a, "--attn")) attn = positive(a, argv[++i]);
    else if (a[0] == '-' || nm == 16) return usage();
    else models[nm++] = a;
  }
  if (!nm) models[nm++] = "ptv3", models[nm++] = "flash3d-46m";
  hx_err err;
  wl_cloud cl;
  wl_batch bt;
  if (wl_make_exact(&cl, WL_LIDAR, NULL, points, 0.05, seed, NULL, &err) != HX_OK ||
      wl_batch_from_clouds(&bt, &cl, 1, &err) != HX_OK) {
    fprintf(stderr, "net_floors: %s\n", err.msg);
    return 1;
  }
  float *feat = malloc(bt.n * 4 * sizeof *feat);
  if (!feat) return 1;
  for (size_t i = 0; i < bt.n; i++) /* the forward's features: xyz and a seeded intensity (the costs ignore it) */
    for (size_t k = 0; k < 4; k++) feat[i * 4 + k] = k < 3 ? bt.xyz[i * 3 + k] : (float)hx_rng_unit(seed, 0x1D, i);
  const net_input in = {bt.xyz, feat, bt.offset, bt.b, bt.n, 0.05, seed};
  const net_cost_rates q = {gemm * 1e12, copy * 1e9};
  printf("%zu lidar points, cuBLAS %.1f TFLOP/s, copy %.1f GB/s\n", bt.n, gemm, copy);
  int rc = 0;
  for (int m = 0; m < nm; m++) {
    net_cost c[NET_COSTS_MAX];
    size_t n = 0;
    if (model_costs(models[m], &in, &q, c, &n, &err) != HX_OK) {
      fprintf(stderr, "net_floors: %s: %s\n", models[m], err.msg);
      rc = 1;
      continue;
    }
    const int ptv3 = !strncmp(models[m], "ptv3", 4);
    const double ar = isfinite(attn) ? attn : ptv3 ? (strstr(models[m], "4096") ? 162.5 : 154.8) : 158.0;
    printf("\n%s, attention %.1f TFLOP/s\n%-10s %10s %10s %10s %12s %12s\n", models[m], ar, "component", "GEMM GF",
           "attn GF", "MB", "most (ms)", "per op (ms)");
    double sum_most = 0.0, sum_op = 0.0;
    for (size_t i = 0; i + 1 < n; i++) {
      const double tg = c[i].gemm_flops / q.gemm_flops_s, ta = c[i].attn_flops / (ar * 1e12);
      const double tm = c[i].bytes / q.copy_bytes_s, tab = c[i].attn_bytes / q.copy_bytes_s;
      const double most = fmax(tg, fmax(ta, tm)) * 1e3;
      const double op = (c[i].op_gemm_s + c[i].op_mem_s + (c[i].attn_flops > 0.0 ? fmax(ta, tab) : 0.0)) * 1e3;
      sum_most += most, sum_op += op;
      printf("%-10s %10.2f %10.2f %10.1f %12.3f %12.3f\n", c[i].name, c[i].gemm_flops / 1e9, c[i].attn_flops / 1e9,
             c[i].bytes / 1e6, most, op);
    }
    printf("%-10s %10s %10s %10s %12.3f %12.3f\n", "sum", "", "", "", sum_most, sum_op);
  }
  free(feat);
  wl_batch_free(&bt);
  wl_cloud_free(&cl);
  return rc;
}
