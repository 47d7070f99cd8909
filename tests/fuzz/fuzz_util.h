/*
 * fuzz_util.h - shared by the libFuzzer targets of tests/fuzz (one reader each; see meson.build there).
 *
 * A target returns 0 for every input; anything the sanitizers report, and every broken invariant of the
 * reader's contract (checked with FZ_CHECK, which aborts so libFuzzer saves the input as a crash), is a
 * finding. The contract checked everywhere: a reader's status is HX_OK or a failure with a message in
 * its hx_err whose status matches; a failure leaves its output empty.
 *
 * Readers that take a path get the input through files in one scratch directory per process, made at
 * the first call under $TMPDIR and removed at exit (run.sh also points TMPDIR at a folder it removes).
 */
#ifndef F3D_FUZZ_UTIL_H
#define F3D_FUZZ_UTIL_H

#include "base/base.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                                   \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);                       \
      abort();                                                                                           \
    }                                                                                                    \
  } while (0)

/* A failing status comes with a message and the same status in err. */
static inline void fz_check_status(hx_status st, const hx_err *err) {
  if (st == HX_OK) return;
  FZ_CHECK(err->status == st);
  FZ_CHECK(err->msg[0] != '\0');
  FZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL);
}

/* The process's scratch directory: created at the first call, removed with what the targets left in it (files
 * and one level of folders) when libFuzzer exits normally; a crash leaves it for inspection. The harness of a
 * fuzz target is the one place a static is the simplest correct state: libFuzzer calls the target with no
 * context argument. */
static char fz_dir_path[512];

static inline void fz_rm_tree(const char *path, int depth) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      if (unlink(p) != 0 && depth > 0) fz_rm_tree(p, depth - 1);
    }
    closedir(d);
  }
  rmdir(path);
}

static inline void fz_dir_remove(void) { fz_rm_tree(fz_dir_path, 1); }

static inline const char *fz_dir(void) {
  if (!fz_dir_path[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(fz_dir_path, sizeof fz_dir_path, "%s/f3dfuzz.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fz_dir_path)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(fz_dir_remove);
  }
  return fz_dir_path;
}

/* dir/name, written with the given bytes (absent when data is NULL: the file is removed). */
static inline void fz_put(char *path, size_t cap, const char *name, const uint8_t *data, size_t size) {
  snprintf(path, cap, "%s/%s", fz_dir(), name);
  if (!data) {
    unlink(path);
    return;
  }
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

/* A NUL-terminated heap copy (the workloads readers' contract: the slurped file ends in a NUL). */
static inline unsigned char *fz_nul_copy(const uint8_t *data, size_t size) {
  unsigned char *d = malloc(size + 1);
  if (!d) abort();
  if (size) memcpy(d, data, size);
  d[size] = 0;
  return d;
}

#endif /* F3D_FUZZ_UTIL_H */
