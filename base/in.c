/*
 * in.c - the one rule for opening an input file (base.h: hx_open_regular), for every reader of every floor (the
 * workloads' clouds, the harness's run files and calibrations, the networks' weights).
 * Only a regular file is read: the open is non-blocking so that a FIFO (which would wait for a writer forever), a
 * socket or a device (/dev/zero never ends) is refused by fstat instead of waited on or read; O_NONBLOCK changes
 * nothing for a regular file's reads.
 */
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

hx_status hx_open_regular(const char *path, int *fd, size_t *size, hx_err *err) {
  *fd = -1;
  if (size) *size = 0;
  if (!path) return hx_errf(err, HX_EINVAL, "input: no path");
  const int d = open(path, O_RDONLY | O_NONBLOCK);
  if (d < 0) return hx_errf(err, HX_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  hx_status st = HX_OK;
  if (fstat(d, &sb) != 0) st = hx_errf(err, HX_EIO, "%s: stat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode)) st = hx_errf(err, HX_EIO, "%s: not a regular file", path);
  else if ((uintmax_t)sb.st_size >= (uintmax_t)SIZE_MAX) st = hx_errf(err, HX_ENOMEM, "%s: file too large for memory", path);
  if (st != HX_OK) {
    close(d);
    return st;
  }
  *fd = d;
  if (size) *size = (size_t)sb.st_size;
  return HX_OK;
}

hx_status hx_fopen_regular(const char *path, FILE **f, size_t *size, hx_err *err) {
  *f = NULL;
  int d;
  HX_TRY(hx_open_regular(path, &d, size, err));
  *f = fdopen(d, "rb");
  if (!*f) {
    const hx_status st = hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
    close(d);
    return st;
  }
  return HX_OK;
}
