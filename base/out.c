/*
 * out.c - what a writer may do with an output path (base.h: hx_out_resolve), for every writer of every floor (the
 * harness's atomic files, the program's --out, the workloads' cloud writers).
 * Only a regular file (or nothing) is ours to replace: renaming over a FIFO, a device node or a symbolic link
 * would turn it into a regular file (as root, --out /dev/null would replace the system's /dev/null).
 * A symbolic link is followed (hx_out_resolve): the regular file at the end of its chain is replaced by a temporary
 * written beside it, so the link stays a link and a failed write leaves the old target whole. Links that live in
 * /proc (/dev/stdout -> /proc/self/fd/1, /dev/fd/N) name a stream the process holds, not a file: written in place.
 * Following a link by hand skips the kernel's fs.protected_symlinks check, so its rule is applied here: a link in a
 * sticky, world-writable folder (/tmp) is followed only when the writer or the folder's owner owns it.
 */
#include "base/base.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linux's own limit on the links one lookup follows (ELOOP past it). */
#define OUT_MAX_LINKS 40
#define OUT_STICKY 01000 /* S_ISVTX, which POSIX (the build's _POSIX_C_SOURCE) leaves to the XSI option */

/* fs.protected_symlinks' rule for the link at `link` (lstat'ed into ls): 0 when it may be followed. */
static int foreign_link(const char *link, const struct stat *ls) {
  char dir[4096];
  const char *slash = strrchr(link, '/');
  const size_t n = slash ? (size_t)(slash - link) : 0;
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (n == 0) snprintf(dir, sizeof dir, "/");
  else if (n < sizeof dir) memcpy(dir, link, n), dir[n] = '\0';
  else return 1; /* a folder name this long: not followed */
  struct stat ds;
  if (stat(dir, &ds) != 0) return 1;
  const int sticky_public = (ds.st_mode & OUT_STICKY) && (ds.st_mode & S_IWOTH);
  return sticky_public && ls->st_uid != geteuid() && ls->st_uid != ds.st_uid;
}

/* dest (holding a symbolic link's path) becomes the path its target names: as is when absolute, else beside the
 * link (relative to the link's folder, as the kernel resolves it). */
static hx_status follow(char *dest, size_t cap, char *t, const char *path, hx_err *err) {
  ssize_t n = readlink(dest, t, cap);
  if (n < 0) return hx_errf(err, HX_EIO, "%s: cannot read the symbolic link %s", path, dest);
  if ((size_t)n >= cap) return hx_errf(err, HX_EINVAL, "%s: the symbolic link's target path is too long", path);
  t[n] = '\0';
  size_t keep = 0; /* the link's folder, with its '/', kept in front of a relative target */
  if (t[0] != '/') {
    const char *slash = strrchr(dest, '/');
    keep = slash ? (size_t)(slash - dest) + 1 : 0;
  }
  if (keep + (size_t)n >= cap) return hx_errf(err, HX_EINVAL, "%s: the symbolic link's target path is too long", path);
  memcpy(dest + keep, t, (size_t)n + 1);
  return HX_OK;
}

int hx_tmp_path(char *buf, size_t cap, const char *dest) {
  return snprintf(buf, cap, "%s.tmp.%ld", dest, (long)getpid());
}

hx_status hx_out_resolve(const char *path, char *dest, size_t cap, int *in_place, hx_err *err) {
  *in_place = 0;
  if (!path || !dest || cap == 0) return hx_errf(err, HX_EINVAL, "output: no path");
  size_t len = strlen(path);
  if (len >= cap) return hx_errf(err, HX_EINVAL, "%s: path too long", path);
  memcpy(dest, path, len + 1);
  struct stat ls, ts, proc;
  if (lstat(path, &ls) != 0 || S_ISREG(ls.st_mode)) return HX_OK; /* absent: creating the temporary says why not */
  const int target_ok = stat(path, &ts) == 0;
  if (S_ISDIR(ls.st_mode) || (target_ok && S_ISDIR(ts.st_mode)))
    return hx_errf(err, HX_EIO, "%s: is a directory, not a file to write", path);
  /* a FIFO, device or socket, named directly or at the end of links: written in place, never replaced */
  if (!S_ISLNK(ls.st_mode) || (target_ok && !S_ISREG(ts.st_mode))) {
    *in_place = 1;
    return HX_OK;
  }
  /* a link to a regular file, or to nothing (dangling: the rename creates its target): follow it hop by hop,
   * stopping at a link that lives in /proc (the same filesystem as /proc/self/fd) */
  const int have_proc = lstat("/proc/self/fd", &proc) == 0;
  char *t = malloc(cap);
  if (!t) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  hx_status st = HX_OK;
  for (int hop = 0; st == HX_OK; hop++) {
    if (lstat(dest, &ls) != 0 || !S_ISLNK(ls.st_mode)) break; /* the end of the chain: a regular file or nothing */
    if (have_proc && ls.st_dev == proc.st_dev) {
      memcpy(dest, path, len + 1);
      *in_place = 1;
      break;
    }
    if (hop == OUT_MAX_LINKS)
      st = hx_errf(err, HX_EIO, "%s: more than %d symbolic links in a row (a loop?)", path, OUT_MAX_LINKS);
    else if (foreign_link(dest, &ls))
      st = hx_errf(err, HX_EIO, "%s: %s is a symbolic link another user owns in a sticky world-writable folder: not "
                   "followed (the kernel's protected_symlinks rule)", path, dest);
    else
      st = follow(dest, cap, t, path, err);
  }
  free(t);
  if (st != HX_OK) memcpy(dest, path, len + 1);
  return st;
}
