/*
 * cmd_pool.c - `f3dbench pool`: PSH bucketing of a batch (as `f3dbench psh`) followed by in-bucket pooling
 * with ratio rho, written as CSV `cloud,index,slot,pooled_row` in input order (pooled_row = the output row
 * of the point's sub-bucket, the unpool index map); pooling statistics and the locality of the pooled
 * groups on stdout. The PSH result is checked with psh_check and the pooling result against the
 * sub-bucket invariants (every row in exactly one output row of its bucket, 1..rho members) first.
 * Unpooling the pooled coordinates back onto the rows (bpool unpool; on the GPU path the GPU kernel, checked
 * bit for bit against bpool_unpool_cpu on the same parent map) gives each point's distance to the
 * coordinate of its pooled row, reported as mean / max: what a pooling ratio costs in position.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "kernels/kernels.h"
#include "workloads/workloads.h"

static void pool_usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench pool [--rho 2|4|8] [--hash H] [--bucket-size S] [--buckets NB] [--voxel V] [--probes P]\n"
          "                     [--variant NAME] [--pool-variant NAME] [--device cpu|gpu] [--seed S] --out FILE INPUT...\n"
          "  PSH bucketing then in-bucket pooling of a batch (one INPUT per cloud); CSV\n"
          "  cloud,index,slot,pooled_row in input order; pooling statistics on stdout.\n"
          "  --rho R          sub-bucket capacity (pooling ratio): 2 (default), 4 or 8\n"
          "  --variant NAME   GPU variant of PSH (default v9; `f3dbench psh --help` lists them)\n"
          "  --pool-variant NAME  GPU variant of pooling (default v9, the fastest at 600k on the H100), one of:\n");
  size_t nv = 0;
  const bpool_variant *vs = bpool_variants(&nv);
  for (size_t k = 0; k < nv; k++) fprintf(f, "                     %-3s  %s\n", vs[k].name, vs[k].summary);
  fprintf(f, "  other options as in `f3dbench psh --help`\n");
}

typedef struct pool_cli {
  wl_cloud *clouds;
  uint32_t B;
  wl_batch batch;
  uint32_t *off, *bucket, *offset, *count, *start, *slot, *perm, *ostart, *ocount, *members, *parent;
  uint32_t counters[PSH_NCOUNTERS];
  float *xyz, *pxyz, *up;
} pool_cli;

static void pool_cli_free(pool_cli *s) {
  for (uint32_t b = 0; b < s->B; b++) wl_cloud_free(&s->clouds[b]);
  free(s->clouds);
  wl_batch_free(&s->batch);
  free(s->off), free(s->bucket), free(s->offset), free(s->count), free(s->start), free(s->slot), free(s->perm);
  free(s->ostart), free(s->ocount), free(s->members), free(s->parent), free(s->xyz), free(s->pxyz), free(s->up);
}

/* psh_cli_run's contract (cmd_psh.c): the CSV rows go to f, opened by the caller before any work. */
static int pool_cli_run(pool_cli *s, char **inputs, uint32_t B, psh_params *p, uint32_t rho, int gpu,
                        const char *variant, const char *pool_variant, FILE *f, int *bad) {
  hx_err err = {HX_OK, ""};
  size_t nmax;
  if (f3d_read_batch(&s->clouds, &s->B, &s->batch, &nmax, inputs, B, "pool")) return 1;
  if (s->batch.n > PSH_MAX_POINTS) return f3d_fail("pool", "%zu points exceed the limit of %u", s->batch.n, PSH_MAX_POINTS), 1;
  const uint32_t n = (uint32_t)s->batch.n;
  if (p->nb == 0) p->nb = psh_auto_buckets(nmax, p->cap);
  s->off = malloc(((size_t)B + 1) * 4);
  if (!s->off) return f3d_fail("pool", "out of memory"), 1;
  for (uint32_t b = 0; b <= B; b++) s->off[b] = (uint32_t)s->batch.offset[b];
  if (psh_params_check(p, s->off, B, &err) != HX_OK) return f3d_fail_msg("pool", err.msg), 2;
  const psh_in span = {s->batch.xyz, s->off, B, n};
  if (psh_span_check(&span, p->voxel, &err) != HX_OK) return f3d_fail_msg("pool", err.msg), 1;
  const size_t nbt = (size_t)B * p->nb, max_out = (size_t)n / 2 + nbt + 1;
  s->bucket = malloc((size_t)n * 4 + 4), s->offset = malloc((size_t)n * 4 + 4), s->slot = malloc((size_t)n * 4 + 4);
  s->perm = malloc((size_t)n * 4 + 4), s->count = malloc(nbt * 4 + 4), s->start = malloc(nbt * 4 + 4);
  s->ostart = malloc(nbt * 4 + 4), s->ocount = malloc(nbt * 4 + 4), s->parent = malloc((size_t)n * 4 + 4);
  s->members = malloc(max_out * rho * 4), s->xyz = malloc((size_t)n * 12 + 12), s->pxyz = malloc(max_out * 12);
  s->up = malloc((size_t)n * 12 + 12);
  if (!s->bucket || !s->offset || !s->slot || !s->perm || !s->count || !s->start || !s->ostart || !s->ocount ||
      !s->parent || !s->members || !s->xyz || !s->pxyz || !s->up)
    return f3d_fail("pool", "out of memory for %u points and %zu buckets", n, nbt), 1;
  psh_in in = {s->batch.xyz, s->off, B, n};
  psh_out out = {s->bucket, s->offset, s->count, s->start, s->slot, s->perm, s->xyz, s->counters};
  uint32_t n_out = 0;
  if (!gpu) {
    if (psh_run_cpu(&out, &in, p, &err) != HX_OK) return f3d_fail("pool: psh", "%s", err.msg), 1;
    if (bpool_plan_cpu(s->ostart, s->ocount, &n_out, s->count, (uint32_t)nbt, rho, &err) != HX_OK ||
        bpool_assign_cpu(s->members, s->parent, s->pxyz, s->xyz, n, s->start, s->count, s->ostart, (uint32_t)nbt, rho,
                         &err) != HX_OK)
      return f3d_fail("pool", "%s", err.msg), 1;
  } else {
    const psh_variant *v = psh_variant_find(variant);
    const bpool_variant *pv = bpool_variant_find(pool_variant);
    if (!v) return f3d_fail("pool", "unknown PSH variant '%s'", variant), 2;
    if (!pv) return f3d_fail("pool", "unknown pooling variant '%s'", pool_variant), 2;
    psh_gpu *g = NULL;
    hx_status st = psh_gpu_create(&g, &in, p, 0, &err);
    if (st == HX_OK) st = psh_gpu_run(g, v, NULL, &err);
    if (st == HX_OK) st = psh_gpu_pool_plan(g, rho, &n_out, NULL, &err);
    if (st == HX_OK) st = psh_gpu_pool(g, pv, BPOOL_OP_COUNT, PSH_F32, NULL, &err);
    if (st == HX_OK) st = psh_gpu_download(g, &out, s->members, s->parent, s->pxyz, &n_out, &err);
    if (st == HX_OK) st = psh_gpu_unpool_xyz(g, pv, s->up, &err);
    psh_gpu_free(g);
    if (st != HX_OK) return f3d_fail("pool: gpu", "%s", err.msg), 1;
    if (bpool_plan_cpu(s->ostart, s->ocount, &n_out, s->count, (uint32_t)nbt, rho, &err) != HX_OK)
      return f3d_fail("pool", "%s", err.msg), 1;
  }
  if (psh_check(&out, &in, p, &err) != HX_OK) return f3d_fail("pool: psh check", "%s", err.msg), 1;
  /* unpool of the pooled coordinates: the CPU reference, and on the GPU path the kernel's result against it */
  {
    float *ref = gpu ? malloc((size_t)n * 12 + 12) : s->up;
    if (!ref) return f3d_fail("pool", "out of memory"), 1;
    hx_status ust = bpool_unpool_cpu(ref, s->pxyz, NULL, s->parent, n, 3, &err);
    const int same = ust == HX_OK && (!gpu || memcmp(ref, s->up, (size_t)n * 12) == 0);
    if (gpu) free(ref);
    if (ust != HX_OK) return f3d_fail("pool: unpool", "%s", err.msg), 1;
    if (!same) return f3d_fail("pool: unpool check", "the GPU unpool differs from bpool_unpool_cpu"), 1;
  }
  /* sub-bucket invariants */
  uint64_t full = 0;
  for (uint32_t g = 0; g < nbt; g++)
    for (uint32_t r = s->ostart[g]; r < s->ostart[g] + s->ocount[g]; r++) {
      uint32_t size = 0;
      for (uint32_t k = 0; k < rho; k++) {
        uint32_t row = s->members[(size_t)r * rho + k];
        if (row == BPOOL_NONE) continue;
        if (row < s->start[g] || row >= s->start[g] + s->count[g] || s->parent[row] != r)
          return f3d_fail("pool: check", "output row %u lists row %u outside its bucket or parent", r, row), 1;
        size++;
      }
      if (size == 0) return f3d_fail("pool: check", "output row %u is empty", r), 1;
      full += size == rho;
    }
  double ud_sum = 0.0, ud_max = 0.0;
  for (uint32_t r = 0; r < n; r++) {
    double d2 = 0.0;
    for (size_t d = 0; d < 3; d++) {
      const double e = (double)s->xyz[3 * (size_t)r + d] - (double)s->up[3 * (size_t)r + d];
      d2 += e * e;
    }
    const double dist = sqrt(d2);
    ud_sum += dist;
    ud_max = dist > ud_max ? dist : ud_max;
  }
  psh_quality qb, qp;
  if (psh_quality_buckets(&qb, s->xyz, s->start, s->count, (uint32_t)nbt, &err) != HX_OK)
    return f3d_fail_msg("pool: quality", err.msg), 1;
  /* pooled groups: members of each output row, measured through a gather into member order */
  float *mx = malloc((size_t)n * 12 + 12);
  uint32_t *gs = malloc((size_t)n_out * 4 + 4), *gc = malloc((size_t)n_out * 4 + 4);
  if (!mx || !gs || !gc) {
    free(mx), free(gs), free(gc);
    return f3d_fail("pool", "out of memory"), 1;
  }
  uint32_t row = 0;
  for (uint32_t r = 0; r < n_out; r++) {
    gs[r] = row;
    for (uint32_t k = 0; k < rho; k++) {
      uint32_t m = s->members[(size_t)r * rho + k];
      if (m != BPOOL_NONE) memcpy(mx + 3 * (size_t)row++, s->xyz + 3 * (size_t)m, 12);
    }
    gc[r] = row - gs[r];
  }
  const hx_status qst = psh_quality_buckets(&qp, mx, gs, gc, n_out, &err);
  free(mx), free(gs), free(gc);
  if (qst != HX_OK) return f3d_fail_msg("pool: quality", err.msg), 1;
  FILE *say = f == stdout ? stderr : stdout; /* --out - : the CSV alone on stdout */
  fprintf(say, "pool: %u points -> %u rows (rho %u, %s), full sub-buckets %llu (%.1f%%)\n", n, n_out, rho,
          gpu ? "gpu" : "cpu", (unsigned long long)full, n_out ? 100.0 * (double)full / n_out : 0.0);
  psh_stats pst; /* the PSH under the pooling: its overflow count for the note */
  psh_stats_compute(&pst, s->count, B * p->nb, s->counters, p->cap);
  f3d_psh_reach_note("pool", &in, p, pst.placed_overflow);
  fprintf(say,
          "locality (size-weighted mean / max, metres): buckets diag %.3f / %.3f; sub-buckets diag %.4f / %.4f, "
          "spread %.4f / %.4f\n",
          qb.diag_mean, qb.diag_max, qp.diag_mean, qp.diag_max, qp.spread_mean, qp.spread_max);
  fprintf(say, "unpool (%s): distance of a point to its pooled coordinate, mean / max %.4f / %.4f metres\n",
          gpu ? "gpu, equal to the cpu reference" : "cpu", n ? ud_sum / n : 0.0, ud_max);
  *bad = fprintf(f, "cloud,index,slot,pooled_row\n") < 0;
  for (uint32_t b = 0; b < B && !*bad; b++)
    for (uint32_t i = s->off[b]; i < s->off[b + 1]; i++)
      if (fprintf(f, "%u,%zu,%u,%u\n", b, wl_cloud_src_index(&s->clouds[b], i - s->off[b]), s->slot[i],
                  s->parent[s->slot[i]]) < 0) {
        *bad = 1;
        break;
      }
  return 0;
}

int f3d_cmd_pool(int argc, char **argv) {
  static const struct option opts[] = {
      {"rho", required_argument, NULL, 'r'},     {"hash", required_argument, NULL, 'H'},
      {"bucket-size", required_argument, NULL, 'S'}, {"buckets", required_argument, NULL, 'b'},
      {"voxel", required_argument, NULL, 'v'},   {"probes", required_argument, NULL, 'p'},
      {"variant", required_argument, NULL, 'V'}, {"device", required_argument, NULL, 'd'},
      {"seed", required_argument, NULL, 's'},    {"out", required_argument, NULL, 'o'},
      {"pool-variant", required_argument, NULL, 'P'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  psh_params p;
  psh_params_default(&p);
  const char *out_path = NULL, *variant = "v9", *pool_variant = "v9";
  int gpu = 0, c;
  uint32_t rho = 2;
  uint64_t u;
  optind = 1;
  while ((c = getopt_long(argc, argv, "r:H:S:b:v:p:V:P:d:s:o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'r':
      if (f3d_parse_u64(optarg, &u) || (u != 2 && u != 4 && u != 8)) return f3d_fail("pool", "--rho '%s': 2, 4 or 8", optarg), 2;
      rho = (uint32_t)u;
      break;
    case 'P':
      if (!bpool_variant_find(optarg))
        return f3d_fail("pool", "unknown pooling variant '%s' (--help lists them)", optarg), 2;
      pool_variant = optarg;
      break;
    case 'h': pool_usage(stdout); return 0;
    default: {
      int rc = f3d_psh_option(c, optarg, "pool", &p, &variant, &gpu, &out_path);
      if (rc < 0) {
        pool_usage(stderr);
        return 2;
      }
      if (rc) return rc;
      break;
    }
    }
  }
  int rc = f3d_psh_inputs_check("pool", out_path, argc, argv, optind);
  if (rc) return rc;
  if (gpu && f3d_gpu_ready("pool: gpu", NULL)) return 1;
  char *tmp;
  FILE *f = f3d_out_open("pool", out_path, &tmp);
  if (!f) return 1;
  pool_cli s;
  memset(&s, 0, sizeof s);
  int bad = 0;
  rc = pool_cli_run(&s, argv + optind, (uint32_t)(argc - optind), &p, rho, gpu, variant, pool_variant, f, &bad);
  pool_cli_free(&s);
  return rc ? f3d_out_discard(f, tmp, rc) : f3d_out_close("pool", f, tmp, out_path, bad);
}
