/*
 * cmd_psh.c - `f3dbench psh`: Flash3D PSH bucketing of a batch of recorded clouds (one INPUT per cloud),
 * written as CSV `cloud,index,bucket,offset,slot` in input order (index = the point's position in its file,
 * also past points dropped for NaN/Inf coordinates; bucket = the cloud-local bucket id,
 * slot = row of the packed output of the whole batch), with the balance statistics and the geometric
 * quality (bucket vs PTv3-style 1024-point z-order patches) printed on stdout. Every result is checked
 * with psh_check before anything is written; a failing check exits 1 and writes nothing.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "kernels/kernels.h"
#include "workloads/workloads.h"

static void psh_usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench psh [--hash xor-mod|xor-div|zorder-mod|zorder-div] [--bucket-size S] [--buckets NB]\n"
          "                    [--voxel V] [--probes P] [--variant NAME] [--device cpu|gpu] [--seed S]\n"
          "                    --out FILE INPUT...\n"
          "  PSH bucketing of a batch (one INPUT per cloud) as CSV cloud,index,bucket,offset,slot in input\n"
          "  order; balance statistics, bucket locality and what the buckets' fill costs attention over\n"
          "  scopes of 8 of them (its tiles' work over the real pairs, bucket by bucket and packed) on stdout.\n"
          "  --hash H         bucket hash (default xor-div, as the official code's config)\n"
          "  --bucket-size S  bucket capacity, a multiple of 16 (default 512)\n"
          "  --buckets NB     buckets per cloud (default 0: next power of two >= largest cloud / S)\n"
          "  --voxel V        voxel edge in metres (default 0.05)\n"
          "  --probes P       probe offsets tried per overflowing point, 0..128 (default 128)\n"
          "  --device D       cpu (deterministic reference, default) or gpu\n"
          "  --seed S         probe order and jitter seed (default 3407)\n"
          "  --out FILE       output CSV (written to a temporary name, then renamed over it, or over the file a\n"
          "                   symbolic link names; - is stdout; a FIFO or device is written in place)\n"
          "  --variant NAME   GPU variant with --device gpu (default v9, the fastest from a warm L2; v10 is faster\n"
          "                   from a cold one at 600k, within a few %% of v9 at 100k-300k), one of:\n");
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  for (size_t k = 0; k < nv; k++) fprintf(f, "                     %-3s  %s\n", vs[k].name, vs[k].summary);
}

typedef struct psh_cli {
  wl_cloud *clouds;
  uint32_t B;
  wl_batch batch;
  uint32_t *off;
  uint32_t *bucket, *offset, *count, *start, *slot, *perm, counters[PSH_NCOUNTERS];
  float *xyz;
} psh_cli;

static void psh_cli_free(psh_cli *s) {
  for (uint32_t b = 0; b < s->B; b++) wl_cloud_free(&s->clouds[b]);
  free(s->clouds);
  wl_batch_free(&s->batch);
  free(s->off), free(s->bucket), free(s->offset), free(s->count), free(s->start), free(s->slot), free(s->perm);
  free(s->xyz);
}

/* Runs and checks the PSH, then writes the CSV rows to f (opened by the caller before any work, so that an
 * unwritable --out fails at once): 0, or 1/2 after printing why; *bad = a row write failed. */
static int psh_cli_run(psh_cli *s, char **inputs, uint32_t B, psh_params *p, int gpu, const char *variant, FILE *f,
                       int *bad) {
  hx_err err = {HX_OK, ""};
  size_t nmax;
  if (f3d_read_batch(&s->clouds, &s->B, &s->batch, &nmax, inputs, B, "psh")) return 1;
  if (s->batch.n > PSH_MAX_POINTS) return f3d_fail("psh", "%zu points exceed the limit of %u", s->batch.n, PSH_MAX_POINTS), 1;
  const uint32_t n = (uint32_t)s->batch.n;
  if (p->nb == 0) p->nb = psh_auto_buckets(nmax, p->cap);
  s->off = malloc(((size_t)B + 1) * sizeof *s->off);
  if (!s->off) return f3d_fail("psh", "out of memory"), 1;
  for (uint32_t b = 0; b <= B; b++) s->off[b] = (uint32_t)s->batch.offset[b];
  if (psh_params_check(p, s->off, B, &err) != HX_OK) return f3d_fail_msg("psh", err.msg), 2;
  const psh_in span = {s->batch.xyz, s->off, B, n};
  if (psh_span_check(&span, p->voxel, &err) != HX_OK) return f3d_fail_msg("psh", err.msg), 1;
  const size_t nbt = (size_t)B * p->nb;
  s->bucket = malloc((size_t)n * 4 + 4), s->offset = malloc((size_t)n * 4 + 4), s->slot = malloc((size_t)n * 4 + 4);
  s->perm = malloc((size_t)n * 4 + 4), s->count = malloc(nbt * 4 + 4), s->start = malloc(nbt * 4 + 4);
  s->xyz = malloc((size_t)n * 12 + 12);
  if (!s->bucket || !s->offset || !s->slot || !s->perm || !s->count || !s->start || !s->xyz)
    return f3d_fail("psh", "out of memory for %u points and %zu buckets", n, nbt), 1;
  psh_in in = {s->batch.xyz, s->off, B, n};
  psh_out out = {s->bucket, s->offset, s->count, s->start, s->slot, s->perm, s->xyz, s->counters};
  const char *label = "cpu";
  if (!gpu) {
    if (psh_run_cpu(&out, &in, p, &err) != HX_OK) return f3d_fail_msg("psh", err.msg), 1;
  } else {
    const psh_variant *v = psh_variant_find(variant);
    if (!v) return f3d_fail("psh", "unknown PSH variant '%s'", variant), 2; /* f3d_psh_option checked it */
    label = v->name;
    psh_gpu *g = NULL;
    hx_status st = psh_gpu_create(&g, &in, p, 0, &err);
    if (st == HX_OK) st = psh_gpu_run(g, v, NULL, &err);
    if (st == HX_OK) st = psh_gpu_download(g, &out, NULL, NULL, NULL, NULL, &err);
    psh_gpu_free(g);
    if (st != HX_OK) return f3d_fail("psh: gpu", "%s", err.msg), 1;
  }
  if (psh_check(&out, &in, p, &err) != HX_OK) return f3d_fail("psh: check", "%s", err.msg), 1;
  psh_stats st;
  psh_stats_compute(&st, s->count, (uint32_t)nbt, s->counters, p->cap);
  psh_quality qb, qz;
  if (psh_quality_buckets(&qb, s->xyz, s->start, s->count, (uint32_t)nbt, &err) != HX_OK ||
      psh_quality_zorder(&qz, &in, p->voxel, 1024, &err) != HX_OK)
    return f3d_fail("psh: quality", "%s", err.msg), 1;
  FILE *say = f == stdout ? stderr : stdout; /* --out - : the CSV alone on stdout */
  fprintf(say, "psh: %u points, %u clouds, hash %s, %u buckets/cloud, S %u, voxel %g, %u probes, seed %llu, %s\n", n,
          B, psh_hash_name(p->hash), p->nb, p->cap, (double)p->voxel, p->nprobe, (unsigned long long)p->seed, label);
  fprintf(say, "placed: first hash %llu, probing %llu, overflow policy %llu\n", (unsigned long long)st.placed_first,
          (unsigned long long)st.placed_probe, (unsigned long long)st.placed_overflow);
  f3d_psh_reach_note("psh", &in, p, st.placed_overflow);
  fprintf(say, "buckets: fullest %u, empty %u of %u, over capacity %u, mean fill %.3f\n", st.max_count,
          st.empty_buckets, st.buckets, st.over_cap_buckets, st.mean_fill);
  fprintf(say, "locality (size-weighted mean / max, metres): buckets diag %.3f / %.3f, spread %.3f / %.3f\n",
          qb.diag_mean, qb.diag_max, qb.spread_mean, qb.spread_max);
  fprintf(say, "locality of z-order patches of 1024: diag %.3f / %.3f, spread %.3f / %.3f\n", qz.diag_mean,
          qz.diag_max, qz.spread_mean, qz.spread_max);
  /* what the buckets' fill costs the attention over them: Flash3D's scopes of 8 buckets in v23's and v24's tiles */
  {
    uint32_t *cb = malloc(((size_t)B + 1) * sizeof *cb);
    battn_plan pl;
    if (!cb) return f3d_fail("psh", "out of memory"), 1;
    for (uint32_t b = 0; b <= B; b++) cb[b] = b * p->nb;
    const hx_status ps = battn_plan_plain(&pl, 8, s->start, s->count, cb, B, &err);
    free(cb);
    if (ps != HX_OK) return f3d_fail("psh: attention plan", "%s", err.msg), 1;
    battn_tile_work w;
    battn_tile_work_compute(&w, &pl, 128, 64);
    battn_plan_free(&pl);
    if (w.real > 0)
      fprintf(say, "attention over scopes of 8 buckets, tiles of 128 queries x 64 keys: work / real pairs %.3f bucket "
              "by bucket (v23), %.3f packed (v24's walk, below 90%% mean fill)\n", w.by_bucket / w.real,
              w.packed / w.real);
  }
  /* CSV (f3d_out_close renames it into place, or it was written in place) */
  *bad = fprintf(f, "cloud,index,bucket,offset,slot\n") < 0;
  for (uint32_t b = 0; b < B && !*bad; b++)
    for (uint32_t i = s->off[b]; i < s->off[b + 1]; i++)
      if (fprintf(f, "%u,%zu,%u,%u,%u\n", b, wl_cloud_src_index(&s->clouds[b], i - s->off[b]), s->bucket[i] - b * p->nb,
                  s->offset[i], s->slot[i]) < 0) {
        *bad = 1;
        break;
      }
  return 0;
}

int f3d_cmd_psh(int argc, char **argv) {
  static const struct option opts[] = {
      {"hash", required_argument, NULL, 'H'},   {"bucket-size", required_argument, NULL, 'S'},
      {"buckets", required_argument, NULL, 'b'}, {"voxel", required_argument, NULL, 'v'},
      {"probes", required_argument, NULL, 'p'}, {"variant", required_argument, NULL, 'V'},
      {"device", required_argument, NULL, 'd'}, {"seed", required_argument, NULL, 's'},
      {"out", required_argument, NULL, 'o'},    {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  psh_params p;
  psh_params_default(&p);
  const char *out_path = NULL, *variant = "v9";
  int gpu = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "H:S:b:v:p:V:d:s:o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'h': psh_usage(stdout); return 0;
    default: {
      int rc = f3d_psh_option(c, optarg, "psh", &p, &variant, &gpu, &out_path);
      if (rc < 0) {
        psh_usage(stderr);
        return 2;
      }
      if (rc) return rc;
      break;
    }
    }
  }
  int rc = f3d_psh_inputs_check("psh", out_path, argc, argv, optind);
  if (rc) return rc;
  if (gpu && f3d_gpu_ready("psh: gpu", NULL)) return 1;
  char *tmp;
  FILE *f = f3d_out_open("psh", out_path, &tmp);
  if (!f) return 1;
  psh_cli s;
  memset(&s, 0, sizeof s);
  int bad = 0;
  rc = psh_cli_run(&s, argv + optind, (uint32_t)(argc - optind), &p, gpu, variant, f, &bad);
  psh_cli_free(&s);
  return rc ? f3d_out_discard(f, tmp, rc) : f3d_out_close("psh", f, tmp, out_path, bad);
}
