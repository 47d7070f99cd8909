/*
 * renameat2_shim.c - LD_PRELOAD stand-in for a file system or kernel without renameat2's RENAME_NOREPLACE, for
 * test_merge_rename.sh: every renameat2 call fails with EINVAL (ENOSYS when F3D_SHIM_ERRNO=ENOSYS), as such a file
 * system answers; with F3D_SHIM_APPEAR set it first creates the destination as an empty folder, as another process
 * could between merge's first look and its rename; rename(2) onto the path in F3D_SHIM_RENAME_EXDEV fails with EXDEV
 * (merge's fallback after its mkdir; the renames of its own files stay real). Every other call stays the C library's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
  (void)olddirfd, (void)oldpath, (void)flags;
  const char *e = getenv("F3D_SHIM_ERRNO");
  if (getenv("F3D_SHIM_APPEAR")) (void)mkdirat(newdirfd, newpath, 0777);
  errno = e && strcmp(e, "ENOSYS") == 0 ? ENOSYS : EINVAL;
  return -1;
}

int rename(const char *oldpath, const char *newpath) {
  const char *x = getenv("F3D_SHIM_RENAME_EXDEV");
  if (x && strcmp(x, newpath) == 0) {
    errno = EXDEV;
    return -1;
  }
  return renameat(AT_FDCWD, oldpath, AT_FDCWD, newpath);
}
