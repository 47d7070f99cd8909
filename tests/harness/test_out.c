/*
 * test_out.c - hx_out_resolve (base/out.c): which file a writer replaces for an output path. A regular file or
 * nothing is replaced as named; a symbolic link is followed to the regular file (or nothing) at the end of its
 * chain, so the writer's temporary and rename land beside that target and the link stays a link; a FIFO, a device,
 * a socket or a link in /proc (/dev/stdout) is written in place; a directory, a link to one, a link loop and (as
 * root, who can make one) a link another user owns in a sticky world-writable folder are refused naming the path.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

static char root[256];

static int setup(void **state) {
  (void)state;
  return t_tmpdir(root, sizeof root, "out");
}

static int teardown(void **state) {
  (void)state;
  return t_rm_rf(root);
}

static const char *at(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", root, name);
  return buf;
}

/* resolve path: expect status, in_place and (when want_dest is not NULL) dest */
static void expect(const char *path, hx_status want, int want_in_place, const char *want_dest) {
  char dest[1024];
  int in_place = -1;
  hx_err e = {0};
  hx_status st = hx_out_resolve(path, dest, sizeof dest, &in_place, &e);
  if (st != want) fail_msg("%s: status %d (%s), wanted %d", path, st, e.msg, want);
  if (st != HX_OK) {
    assert_non_null(strstr(e.msg, path)); /* the message names the path asked for */
    return;
  }
  if (in_place != want_in_place) fail_msg("%s: in_place %d, wanted %d", path, in_place, want_in_place);
  if (want_dest && strcmp(dest, want_dest) != 0) fail_msg("%s: dest '%s', wanted '%s'", path, dest, want_dest);
}

static void test_resolve(void **state) {
  (void)state;
  char a[512], b[512], c[512], d[512];
  /* absent and regular: replaced as named */
  expect(at(a, sizeof a, "absent.ply"), HX_OK, 0, a);
  FILE *f = fopen(at(a, sizeof a, "target.ply"), "w");
  assert_non_null(f);
  assert_int_equal(fclose(f), 0);
  expect(a, HX_OK, 0, a);
  /* a relative link, a chain of a relative and an absolute link, a link in a sub-folder to "../target.ply": the
   * regular file at the end */
  assert_int_equal(symlink("target.ply", at(b, sizeof b, "rel.ply")), 0);
  expect(b, HX_OK, 0, a);
  assert_int_equal(symlink(b, at(c, sizeof c, "abs.ply")), 0);
  assert_int_equal(symlink("abs.ply", at(d, sizeof d, "chain.ply")), 0);
  expect(d, HX_OK, 0, a);
  assert_int_equal(mkdir(at(c, sizeof c, "sub"), 0700), 0);
  assert_int_equal(symlink("../target.ply", at(c, sizeof c, "sub/up.ply")), 0);
  char want[600];
  snprintf(want, sizeof want, "%s/sub/../target.ply", root);
  expect(c, HX_OK, 0, want);
  /* a dangling link: its target, which the writer's rename creates */
  assert_int_equal(symlink("new.ply", at(b, sizeof b, "dangling.ply")), 0);
  expect(b, HX_OK, 0, at(c, sizeof c, "new.ply"));
  /* a FIFO, and a link to it: in place, never replaced */
  assert_int_equal(mkfifo(at(a, sizeof a, "fifo"), 0600), 0);
  expect(a, HX_OK, 1, a);
  assert_int_equal(symlink("fifo", at(b, sizeof b, "to-fifo")), 0);
  expect(b, HX_OK, 1, b);
  /* a directory and a link to one: refused */
  assert_int_equal(mkdir(at(a, sizeof a, "dir"), 0700), 0);
  expect(a, HX_EIO, 0, NULL);
  assert_int_equal(symlink("dir", at(b, sizeof b, "to-dir")), 0);
  expect(b, HX_EIO, 0, NULL);
  /* a loop: refused */
  assert_int_equal(symlink("loop2", at(a, sizeof a, "loop1")), 0);
  assert_int_equal(symlink("loop1", at(b, sizeof b, "loop2")), 0);
  expect(a, HX_EIO, 0, NULL);
  /* a path or a target longer than dest */
  char small[8];
  int in_place;
  hx_err e = {0};
  assert_int_equal(hx_out_resolve(at(a, sizeof a, "target.ply"), small, sizeof small, &in_place, &e), HX_EINVAL);
  char longname[760], big[768]; /* the target fits in big; the link's folder in front of it does not */
  memset(longname, 'x', sizeof longname - 1), longname[sizeof longname - 1] = '\0';
  assert_int_equal(symlink(longname, at(a, sizeof a, "longlink")), 0);
  assert_int_equal(hx_out_resolve(a, big, sizeof big, &in_place, &e), HX_EINVAL);
  /* fs.protected_symlinks' rule: in a sticky world-writable folder a link another user owns is not followed (the
   * writer must not replace what a planted link names); only root can make such a link here */
  if (geteuid() == 0) {
    char dir[512], lk[600];
    assert_int_equal(mkdir(at(dir, sizeof dir, "public"), 0777), 0);
    assert_int_equal(chmod(dir, 01777), 0);
    snprintf(lk, sizeof lk, "%s/planted.csv", dir);
    assert_int_equal(symlink(at(a, sizeof a, "target.ply"), lk), 0);
    assert_int_equal(lchown(lk, 65534, 65534), 0);
    expect(lk, HX_EIO, 0, NULL);
    assert_int_equal(lchown(lk, 0, 0), 0); /* the writer's own link: followed */
    expect(lk, HX_OK, 0, a);
  }
  /* links in /proc name a stream of the process (/dev/stdout is one, whatever standard output is): in place, even
   * when standard output is a regular file */
  struct stat sb;
  if (lstat("/proc/self/fd/1", &sb) == 0) {
    expect("/proc/self/fd/1", HX_OK, 1, "/proc/self/fd/1");
    if (lstat("/dev/stdout", &sb) == 0 && S_ISLNK(sb.st_mode)) expect("/dev/stdout", HX_OK, 1, "/dev/stdout");
    if (lstat("/dev/fd/1", &sb) == 0) expect("/dev/fd/1", HX_OK, 1, "/dev/fd/1");
    FILE *o = fopen(at(a, sizeof a, "stdout.txt"), "w");
    assert_non_null(o);
    int saved = dup(1);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(o), 1) >= 0);
    char dest[1024];
    in_place = -1;
    hx_status st = hx_out_resolve("/dev/stdout", dest, sizeof dest, &in_place, &e);
    assert_true(dup2(saved, 1) >= 0);
    close(saved);
    fclose(o);
    assert_int_equal(st, HX_OK);
    assert_int_equal(in_place, 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolve)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
