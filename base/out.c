/*
 * out.c - what a writer may do with an output path (base.h: hx_out_target), for every writer of every floor
 * (the harness's atomic files, the program's --out, the workloads' cloud writers).
 * Only a regular file (or nothing) is ours to replace: renaming over a FIFO, a device node or a symbolic link
 * would turn it into a regular file (as root, --out /dev/null would replace the system's /dev/null).
 */
#include "base/base.h"

#include <sys/stat.h>

hx_status hx_out_target(const char *path, int *in_place, hx_err *err) {
  struct stat ls, ts;
  *in_place = 0;
  if (lstat(path, &ls) != 0 || S_ISREG(ls.st_mode)) return HX_OK; /* absent: creating the temporary says why not */
  if (S_ISDIR(ls.st_mode) || (stat(path, &ts) == 0 && S_ISDIR(ts.st_mode)))
    return hx_errf(err, HX_EIO, "%s: is a directory, not a file to write", path);
  *in_place = 1;
  return HX_OK;
}
