/*
 * wl_write.c - writers: binary little-endian PLY (x, y, z float) and KITTI .bin (x, y, z, intensity 0).
 *
 * Atomic: the file is written under a temporary name in the same folder ("<dest>.tmp.<pid>"), flushed,
 * synced and renamed over the target, so a reader never sees a half-written file and a failure leaves
 * the target untouched and no temporary behind. Only a regular file (or nothing) is replaced so: a symbolic link
 * is followed to the regular file it ends at, which is replaced (the link kept); an existing FIFO or device is
 * written in place, a directory refused (hx_out_resolve, base.h).
 */
#include "workloads/wl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct tmpfile_ {
  char *tmp;
  FILE *f;
  char dest[4096]; /* what the rename replaces: the path, or the regular file its symbolic link ends at */
} tmpfile_;

static hx_status tmp_open(tmpfile_ *t, const char *path, hx_err *err) {
  t->f = NULL;
  t->tmp = NULL;
  int in_place = 0;
  HX_TRY(hx_out_resolve(path, t->dest, sizeof t->dest, &in_place, err));
  size_t n = strlen(t->dest);
  if (in_place) {
    t->f = fopen(path, "wb");
    if (!t->f) return hx_errf(err, HX_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
    return HX_OK; /* in place: t->tmp stays NULL */
  }
  t->tmp = malloc(n + 32);
  if (!t->tmp) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  /* "<dest>.tmp.<pid>": a name the caller can know before the file exists (workloads.h), so a program removing its
   * temporaries on a signal can name it; one process writes one file at a time */
  hx_tmp_path(t->tmp, n + 32, t->dest);
  /* a stale one of a killed process with this pid goes first; O_EXCL then never writes through a link made to it */
  (void)unlink(t->tmp);
  int fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  if (fd < 0) {
    hx_status st = hx_errf(err, HX_EIO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
    free(t->tmp);
    t->tmp = NULL;
    return st;
  }
  t->f = fdopen(fd, "wb");
  if (!t->f) {
    hx_status st = hx_errf(err, HX_EIO, "%s: fdopen: %s", path, strerror(errno));
    close(fd);
    unlink(t->tmp);
    free(t->tmp);
    t->tmp = NULL;
    return st;
  }
  return HX_OK;
}

/* Finish: on ok, flush + fsync + rename; otherwise (or if any of that fails) remove the temporary. */
static hx_status tmp_close(tmpfile_ *t, int ok, const char *path, hx_err *err) {
  hx_status st = HX_OK;
  if (!t->tmp) { /* in place: no fsync (EINVAL on a FIFO or a device), nothing to rename or remove */
    if (ok && (fflush(t->f) != 0 || ferror(t->f)))
      st = hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(t->f) != 0 && ok && st == HX_OK)
      st = hx_errf(err, HX_EIO, "%s: close failed: %s", path, strerror(errno));
    t->f = NULL;
    return st;
  }
  if (ok && (fflush(t->f) != 0 || ferror(t->f) || fsync(fileno(t->f)) != 0))
    st = hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(errno));
  if (fclose(t->f) != 0 && ok && st == HX_OK) st = hx_errf(err, HX_EIO, "%s: close failed: %s", path, strerror(errno));
  if (ok && st == HX_OK && rename(t->tmp, t->dest) != 0)
    st = hx_errf(err, HX_EIO, "%s: rename from %s failed: %s", path, t->tmp, strerror(errno));
  if (!ok || st != HX_OK) unlink(t->tmp);
  free(t->tmp);
  t->tmp = NULL;
  t->f = NULL;
  return st;
}

/* Write the points as little-endian float32 records of `nfloat` values (extra values zero). */
static int write_records(FILE *f, const wl_cloud *c, int nfloat) {
  unsigned char buf[4096 * 16];
  size_t rec = 4 * (size_t)nfloat, per = sizeof buf / rec;
  for (size_t i = 0; i < c->n; i += per) {
    size_t m = c->n - i < per ? c->n - i : per;
    memset(buf, 0, m * rec);
    for (size_t k = 0; k < m; k++)
      for (int a = 0; a < 3; a++) wl_put_f32le(buf + k * rec + 4 * (size_t)a, c->xyz[3 * (i + k) + (size_t)a]);
    if (fwrite(buf, rec, m, f) != m) return 0;
  }
  return 1;
}

static hx_status check_args(const wl_cloud *c, const char *path, hx_err *err) {
  if (!c || !path || (c->n > 0 && !c->xyz)) return hx_errf(err, HX_EINVAL, "write: missing cloud or path");
  return HX_OK;
}

hx_status wl_write_ply(const wl_cloud *c, const char *path, hx_err *err) {
  WL_PASS(check_args(c, path, err));
  tmpfile_ t;
  WL_PASS(tmp_open(&t, path, err));
  int ok = fprintf(t.f,
                   "ply\nformat binary_little_endian 1.0\ncomment flash3d-bench\nelement vertex %zu\n"
                   "property float x\nproperty float y\nproperty float z\nend_header\n",
                   c->n) > 0;
  ok = ok && write_records(t.f, c, 3);
  if (!ok) hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(errno));
  hx_status st = tmp_close(&t, ok, path, err);
  return ok ? st : HX_EIO;
}

hx_status wl_write_bin(const wl_cloud *c, const char *path, hx_err *err) {
  WL_PASS(check_args(c, path, err));
  tmpfile_ t;
  WL_PASS(tmp_open(&t, path, err));
  int ok = write_records(t.f, c, 4);
  if (!ok) hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(errno));
  hx_status st = tmp_close(&t, ok, path, err);
  return ok ? st : HX_EIO;
}
