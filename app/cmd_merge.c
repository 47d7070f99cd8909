/*
 * cmd_merge.c - `f3dbench merge -o OUT SHARD_DIR...`: join the result directories of a sharded sweep
 * (`sweep --shard I/N`, e.g. one Slurm array task per GPU) into one run directory, refusing shards from
 * different devices, builds or commits, overlapping rows and missing shards unless --force
 * (hx_run_merge). Also writes OUT/results.json.
 */
#include "app/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *f) {
  fputs("usage: f3dbench merge -o OUT_DIR [--force] SHARD_DIR...\n"
        "Join the result directories of a sharded sweep (sweep --shard I/N) into OUT_DIR: rows and raw\n"
        "samples concatenated, the first shard's context without its shard key plus merged_from (the case\n"
        "counts and lists over all shards), and a results.json. Refuses incomplete shards, different\n"
        "devices/builds/commits, shards without samples.csv and missing shards unless --force; a forced\n"
        "merge of missing or incomplete shards is marked incomplete (status partial, an INCOMPLETE file)\n"
        "and says so on stderr. Overlapping rows are refused even with --force (a run holds each row once).\n"
        "  -o, --output DIR   the merged run directory (created: an existing one is refused, even with --force)\n"
        "  -f, --force        merge anyway\n"
        "  -h, --help         this text\n",
        f);
}

int f3d_cmd_merge(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"force", no_argument, NULL, 'f'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *out = NULL;
  int force = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'f': force = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (!out || optind >= argc) {
    f3d_fail("merge", "need -o OUT_DIR and at least one shard directory");
    usage(stderr);
    return 2;
  }
  size_t n = (size_t)(argc - optind);
  hx_run *runs = f3d_runs_load("merge", argv + optind, n);
  if (!runs) return 1;
  hx_err err;
  int rc = 0;
  if (rc == 0 && hx_run_merge(runs, n, out, force, &err) != HX_OK) {
    f3d_fail_msg("merge", err.msg);
    rc = 1;
  }
  if (rc == 0) {
    hx_run m;
    char path[4096];
    snprintf(path, sizeof path, "%s/results.json", out);
    if (hx_run_load(&m, out, &err) != HX_OK || hx_run_write_json(&m, path, &err) != HX_OK) {
      f3d_fail_msg("merge", err.msg);
      rc = 1;
    } else {
      printf("merged %zu directories into %s (%zu rows, %zu samples)\n", n, out, m.n_rows, m.n_samples);
      char why[600];
      if (m.incomplete) /* only --force gets here: what it let through is said, not passed off as whole */
        f3d_fail("merge", "warning: %s: %s", out, hx_run_incomplete_why(&m, why, sizeof why));
    }
    hx_run_free(&m);
  }
  f3d_runs_free(runs, n);
  return rc;
}
