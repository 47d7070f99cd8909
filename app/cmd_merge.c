/*
 * cmd_merge.c - `f3dbench merge -o OUT SHARD_DIR...`: join the result directories of a sharded sweep
 * (`sweep --shard I/N`, e.g. one Slurm array task per GPU) into one run directory, refusing shards from
 * different devices, builds, dtypes (sweep --dtype) or commits, overlapping rows and missing shards unless --force
 * (hx_run_merge). Also writes OUT/results.json.
 */
#define _GNU_SOURCE /* renameat2 (RENAME_NOREPLACE) */
#include "app/cli.h"
#include "app/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f) {
  fputs("usage: f3dbench merge -o OUT_DIR [--force] SHARD_DIR...\n"
        "Join the result directories of a sharded sweep (sweep --shard I/N) into OUT_DIR: rows and raw\n"
        "samples concatenated, the first shard's context without its shard key plus merged_from (the case\n"
        "counts and lists over all shards), and a results.json. Refuses incomplete shards, different\n"
        "devices/builds/dtypes/commits, shards without samples.csv and missing shards unless --force;\n"
        "a forced merge of missing or incomplete shards is marked incomplete (status partial, an\n"
        "INCOMPLETE file) and says so on stderr. Overlapping rows are refused even with --force (a run\n"
        "holds each row once).\n"
        "  -o, --output DIR   the merged run directory (created: an existing one is refused, even with --force;\n"
        "                     written as DIR.tmp.<pid> and renamed at the end, so DIR appears whole or not at all)\n"
        "  -f, --force        merge anyway\n"
        "  -h, --help         this text\n",
        f);
}

/* Rename the finished run tmp to outd, never over anything: renameat2(RENAME_NOREPLACE), or where the file system or
 * kernel has none (EINVAL, ENOSYS) mkdir(outd) and then rename(tmp, outd): the mkdir fails on a name that exists, and
 * rename(2) replaces only that empty folder (one something wrote into meanwhile is refused, ENOTEMPTY). On failure
 * outd is as it was (a folder made here removed again) and the message names outd and why; the caller removes tmp. */
static hx_status put_in_place(const char *tmp, const char *outd, hx_err *err) {
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, outd, RENAME_NOREPLACE) == 0) return HX_OK;
  int e = errno;
  if (e != EINVAL && e != ENOSYS)
    return hx_errf(err, HX_EIO, "%s: cannot put the merged run in place: %s%s; the merged run was removed", outd,
                   e == EEXIST || e == ENOTEMPTY ? "it appeared while merging: " : "", strerror(e));
  int made = 0;
  /* made and registered with SIGINT and SIGTERM held off: a signal never leaves an empty OUT behind, nor removes an
   * empty folder someone else made under that name; once registered, a signal before the rename removes ours (rmdir:
   * only while empty) */
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, &old);
  if (mkdir(outd, 0777) == 0) made = 1, (void)f3d_tmp_add(outd, F3D_TMP_EMPTY_DIR);
  const int mkdir_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  errno = mkdir_errno;
  if (made && rename(tmp, outd) == 0) {
    f3d_tmp_drop(outd);
    return HX_OK;
  }
  e = errno;
  if (made) rmdir(outd), f3d_tmp_drop(outd);
  return hx_errf(err, HX_EIO, "%s: cannot put the merged run in place: %s%s (this file system has no atomic rename "
                 "that refuses to replace, so merge creates the folder first, then renames the run onto it); the "
                 "merged run was removed", outd, e == EEXIST || e == ENOTEMPTY ? "it appeared while merging: " : "",
                 strerror(e));
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
  if (!*out) { /* mkdir("") said "No such file or directory" under the name "" */
    f3d_fail("merge", "-o '': an empty directory name");
    return 2;
  }
  /* Everything is written into OUT_DIR.tmp.<pid> (removed on failure, and by a signal: stop.h) and renamed to
   * OUT_DIR at the end, so OUT_DIR appears whole or not at all: an interrupted merge once left part of its files
   * there, no INCOMPLETE marker, and a name the next merge refused. */
  char outd[4096], tmp[4200];
  size_t ol = strlen(out);
  while (ol > 1 && out[ol - 1] == '/') ol--; /* "m/": the temporary goes beside m, not inside it */
  if (ol >= sizeof outd) {
    f3d_fail("merge", "-o %.80s...: path too long", out);
    return 2;
  }
  memcpy(outd, out, ol);
  outd[ol] = '\0';
  struct stat sb;
  if (lstat(outd, &sb) == 0) {
    f3d_fail("merge", "%s already exists: merge writes a new directory", outd);
    return 1;
  }
  { /* OUT's folder must exist and take a new entry: merge makes OUT only (its temporary would fail naming itself) */
    char parent[4096];
    const int e = f3d_out_folder(outd, parent, sizeof parent);
    if (e == ENOENT || e == ENOTDIR) {
      f3d_fail("merge", "-o %s: %s is not an existing folder (merge makes OUT, not the folders above it)", outd, parent);
      return 2;
    }
    if (e) {
      f3d_fail("merge", "-o %s: cannot create it in %s: %s", outd, parent, strerror(e));
      return 1;
    }
  }
  hx_tmp_path(tmp, sizeof tmp, outd);
  if (lstat(tmp, &sb) == 0) { /* a killed merge's, whose pid this one has: not this merge's to write into or remove */
    f3d_fail("merge", "%s already exists (left by an earlier merge that was killed): remove it", tmp);
    return 1;
  }
  size_t n = (size_t)(argc - optind);
  hx_run *runs = f3d_runs_load("merge", argv + optind, n);
  if (!runs) return 1;
  hx_err err;
  int rc = 0;
  (void)f3d_tmp_add(tmp, F3D_TMP_DIR);
  if (hx_run_merge(runs, n, tmp, force, &err) != HX_OK) {
    f3d_fail_msg("merge", err.msg);
    rc = 1;
  }
  if (rc == 0) {
    hx_run m;
    char path[4300];
    snprintf(path, sizeof path, "%s/results.json", tmp);
    hx_status st = hx_run_load(&m, tmp, &err);
    char *final_dir = st == HX_OK ? strdup(outd) : NULL; /* the JSON's source: where the run will be */
    if (st == HX_OK && final_dir) free(m.dir), m.dir = final_dir;
    if (st == HX_OK) st = hx_run_write_json(&m, path, &err);
    if (st == HX_OK) st = put_in_place(tmp, outd, &err);
    if (st == HX_OK) f3d_tmp_drop(tmp); /* renamed: a signal from here on leaves the finished run */
    if (st != HX_OK) {
      f3d_fail_msg("merge", err.msg);
      rc = 1;
    } else {
      printf("merged %zu directories into %s (%zu rows, %zu samples)\n", n, outd, m.n_rows, m.n_samples);
      char why[600];
      if (m.incomplete) /* only --force gets here: what it let through is said, not passed off as whole */
        f3d_fail("merge", "warning: %s: %s", outd, hx_run_incomplete_why(&m, why, sizeof why));
    }
    hx_run_free(&m);
  }
  if (rc != 0) { /* the merge's own new folder: its files, then the folder */
    static const char *const names[] = {"results.csv", "samples.csv", "context.csv", "INCOMPLETE", "results.json"};
    char p[4300];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
      snprintf(p, sizeof p, "%s/%s", tmp, names[i]);
      unlink(p);
    }
    rmdir(tmp);
  }
  f3d_tmp_drop(tmp);
  f3d_runs_free(runs, n);
  return rc;
}
