/*
 * test_psh_cli.c - `f3dbench psh` and `f3dbench pool` as a user runs them (argv[1] = the program): usage
 * errors exit 2, a missing input exits 1, a generated lidar cloud plus an indoor cloud give a CSV with
 * one row per point in input order whose slots are a permutation and whose offsets stay below S, the CPU
 * output is byte-identical across runs, pool rows point at valid pooled rows; with a GPU the gpu path is
 * checked for the same invariants (its assignment may differ: racing). Bad option values exit 2 before any
 * work; points with NaN/Inf coordinates are dropped with a note and the CSV index stays the file position.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *prog;
static char dir[256];

/* Run prog with the formatted arguments and the shell redirection `tail`; its exit status, -1 if killed. */
static int vrun(const char *tail, const char *fmt, va_list ap) {
  char cmd[2048];
  int len = snprintf(cmd, sizeof cmd, "'%s' ", prog);
  vsnprintf(cmd + len, sizeof cmd - (size_t)len, fmt, ap);
  strncat(cmd, tail, sizeof cmd - strlen(cmd) - 1);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int run(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int rc = vrun(" > /dev/null 2>&1", fmt, ap);
  va_end(ap);
  return rc;
}

/* Read the CSV, check header and invariants; returns the row count. cols = 5 (psh) or 4 (pool). */
static uint32_t check_csv(const char *path, int cols, uint32_t n_expect) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[256];
  assert_non_null(fgets(line, sizeof line, f));
  assert_string_equal(line, cols == 5 ? "cloud,index,bucket,offset,slot\n" : "cloud,index,slot,pooled_row\n");
  uint8_t *seen = calloc(n_expect + 1, 1), *hit = calloc(n_expect + 1, 1);
  uint32_t top = 0;
  uint32_t rows = 0, last_cloud = 0, last_index = 0;
  unsigned a[5];
  while (fgets(line, sizeof line, f)) {
    int k = cols == 5 ? sscanf(line, "%u,%u,%u,%u,%u", &a[0], &a[1], &a[2], &a[3], &a[4])
                      : sscanf(line, "%u,%u,%u,%u", &a[0], &a[1], &a[2], &a[3]);
    assert_int_equal(k, cols);
    /* input order: (cloud, index) increasing */
    if (rows) assert_true(a[0] > last_cloud || (a[0] == last_cloud && a[1] == last_index + 1));
    last_cloud = a[0], last_index = a[1];
    const unsigned slot = cols == 5 ? a[4] : a[2];
    assert_true(slot < n_expect);
    assert_int_equal(seen[slot], 0);
    seen[slot] = 1;
    if (cols == 5) assert_true(a[3] < 512); /* offset < S */
    else {
      assert_true(a[3] < n_expect / 2 + 256); /* n_out <= n/rho + buckets */
      hit[a[3]] = 1;
      top = a[3] > top ? a[3] : top;
    }
    rows++;
  }
  fclose(f);
  if (cols == 4)
    for (uint32_t r = 0; r <= top; r++) assert_int_equal(hit[r], 1); /* every pooled row has members */
  free(seen);
  free(hit);
  assert_int_equal(rows, n_expect);
  return rows;
}

static int same_file(const char *a, const char *b) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
  return system(cmd) == 0;
}

static void test_usage(void **state) {
  (void)state;
  assert_int_equal(run("psh --help"), 0);
  assert_int_equal(run("pool --help"), 0);
  assert_int_equal(run("psh %s/a.ply", dir), 2);                          /* no --out */
  assert_int_equal(run("psh --out %s/x.csv", dir), 2);                    /* no input */
  assert_int_equal(run("psh --bucket-size 20 --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("psh --hash xor --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("pool --rho 3 --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("psh --out %s/x.csv %s/missing.ply", dir, dir), 1);
  /* every option value is checked before any work, whatever the device */
  assert_int_equal(run("psh --variant bogus --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("pool --pool-variant bogus --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("psh --seed ' -1' --out %s/x.csv %s/a.ply", dir, dir), 2);  /* would wrap to 2^64 - 1 */
  assert_int_equal(run("psh --buckets 0x10 --out %s/x.csv %s/a.ply", dir, dir), 2); /* decimal only */
  assert_int_equal(run("psh --buckets 2147483647 --out %s/x.csv %s/a.ply", dir, dir), 2); /* not gigabytes */
  assert_int_equal(run("pool --buckets 16777217 --out %s/x.csv %s/a.ply", dir, dir), 2);
  assert_int_equal(run("psh --voxel 1e-300 --out %s/x.csv %s/a.ply", dir, dir), 2); /* 0 as a float */
  assert_int_equal(run("psh --out %s/nodir/x.csv %s/a.ply", dir, dir), 1);
  /* a bad value's message names the option, the value and what the option takes (the limit, not a rule the
   * value keeps: 2147483632 is a multiple of 16) */
  static const struct {
    const char *args, *msg;
  } msgs[] = {
      {"psh --bucket-size 2147483632", "psh: --bucket-size '2147483632': a multiple of 16 from 16 to 1048576"},
      {"psh --probes 999", "psh: --probes '999': an integer from 0 to 128"},
      {"psh --device x", "psh: --device 'x': cpu or gpu"},
      {"pool --device x", "pool: --device 'x': cpu or gpu"},
      {"psh --voxel abc", "psh: --voxel 'abc': a voxel edge in metres, a decimal number from"},
      {"psh --voxel 1e39", "psh: --voxel '1e39': a voxel edge in metres"},
      {"psh --hash xor", "psh: --hash 'xor': one of xor-mod, xor-div, zorder-mod or zorder-div"},
      {"psh --buckets 2147483647", "psh: --buckets '2147483647': buckets per cloud, 0 (the default"},
      {"psh --seed ' -1'", "psh: --seed ' -1': an integer from 0 to 18446744073709551615"},
  };
  for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
    char cmd[1024];
    assert_int_equal(run("%s --out %s/x.csv %s/a.ply", msgs[i].args, dir, dir), 2);
    snprintf(cmd, sizeof cmd, "'%s' %s --out '%s/x.csv' '%s/a.ply' 2>&1 >/dev/null | grep -qF \"f3dbench: %s\"", prog,
             msgs[i].args, dir, dir, msgs[i].msg);
    if (system(cmd) != 0) fail_msg("%s: the message does not start '%s'", msgs[i].args, msgs[i].msg);
  }
  char x[300];
  snprintf(x, sizeof x, "%s/x.csv", dir);
  assert_int_not_equal(access(x, F_OK), 0); /* failures leave no output */
}

/* An --out that is one of the inputs (the same path, or a symbolic link to it) is a usage error naming both, and
 * the cloud stays as it was (the CSV would have replaced it). */
static void test_out_is_input(void **state) {
  (void)state;
  char cmd[4096], c[300], keep[300], link[300];
  snprintf(c, sizeof c, "%s/self.bin", dir);
  snprintf(keep, sizeof keep, "%s/self.keep", dir);
  snprintf(link, sizeof link, "%s/self-link.csv", dir);
  snprintf(cmd, sizeof cmd, "cp '%s/b.bin' '%s' && cp '%s' '%s' && ln -sf self.bin '%s'", dir, c, c, keep, link);
  assert_int_equal(system(cmd), 0);
  static const char *const cmds[] = {"psh", "pool"};
  for (int k = 0; k < 2; k++) {
    for (int l = 0; l < 2; l++) {
      const char *out = l ? link : c;
      snprintf(cmd, sizeof cmd, "'%s' %s --out '%s' '%s/a.ply' '%s' 2>&1 >/dev/null | grep -q -- '%s: --out %s is "
               "the input %s: '", prog, cmds[k], out, dir, c, cmds[k], out, c);
      assert_int_equal(system(cmd), 0);
      assert_int_equal(run("%s --out '%s' '%s/a.ply' '%s'", cmds[k], out, dir, c), 2);
      assert_true(same_file(c, keep));
    }
  }
}

/* A .bin cloud of 100 points with NaN/Inf coordinates at points 5, 7 and 50: both commands drop them, say so,
 * and keep `index` = the position in the file (97 rows: 0..99 without 5, 7, 50). */
static void test_nonfinite_indices(void **state) {
  (void)state;
  char path[300], csv[300];
  snprintf(path, sizeof path, "%s/nan.bin", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (int i = 0; i < 100; i++) {
    float r[4] = {(float)(i % 10) * 0.3f, (float)(i / 10) * 0.3f, (float)i * 0.01f, 0.0f};
    if (i == 5) r[0] = NAN;
    if (i == 7) r[1] = INFINITY;
    if (i == 50) r[2] = -INFINITY;
    assert_int_equal(fwrite(r, sizeof r, 1, f), 1);
  }
  assert_int_equal(fclose(f), 0);
  for (int cmd = 0; cmd < 2; cmd++) {
    snprintf(csv, sizeof csv, "%s/nan%d.csv", dir, cmd);
    char err[300];
    snprintf(err, sizeof err, "%s/nan%d.err", dir, cmd);
    char line[2048];
    snprintf(line, sizeof line, "'%s' %s --bucket-size 16 --out '%s' '%s' 2> '%s' > /dev/null", prog, cmd ? "pool" : "psh",
             csv, path, err);
    assert_int_equal(system(line), 0);
    FILE *e = fopen(err, "r");
    assert_non_null(e);
    assert_non_null(fgets(line, sizeof line, e));
    fclose(e);
    assert_non_null(strstr(line, "3 points with non-finite coordinates dropped"));
    FILE *c = fopen(csv, "r");
    assert_non_null(c);
    assert_non_null(fgets(line, sizeof line, c)); /* header */
    int want = 0, rows = 0;
    unsigned cl, idx;
    while (fgets(line, sizeof line, c)) {
      assert_int_equal(sscanf(line, "%u,%u,", &cl, &idx), 2);
      while (want == 5 || want == 7 || want == 50) want++;
      assert_int_equal(idx, want);
      want++, rows++;
    }
    fclose(c);
    assert_int_equal(rows, 97);
  }
}

/* run() with stderr kept in dir/err.txt (stdout discarded). */
static int run_err(const char *fmt, ...) {
  char tail[400];
  snprintf(tail, sizeof tail, " > /dev/null 2>'%s/err.txt'", dir);
  va_list ap;
  va_start(ap, fmt);
  const int rc = vrun(tail, fmt, ap);
  va_end(ap);
  return rc;
}

/* Whether file path contains text. */
static int file_has(const char *path, const char *text) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[8192];
  const size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = '\0';
  return strstr(buf, text) != NULL;
}

/* At 1 m voxels cloud a's indices are a few bits wide: psh and pool say on stderr that an XOR hash reaches only
 * 2^bits of the 4096 buckets (psh_reachable_buckets); Z-order reaches them all and gets no note. */
static void test_reach_note(void **state) {
  (void)state;
  char err[300];
  snprintf(err, sizeof err, "%s/err.txt", dir);
  const char *opts = "--voxel 1 --bucket-size 16 --buckets 4096";
  assert_int_equal(run_err("psh --hash xor-mod %s --out %s/r.csv %s/a.ply", opts, dir, dir), 0);
  assert_true(file_has(err, "f3dbench: psh: note: cloud 0's voxel indices are "));
  assert_true(file_has(err, "so xor-mod reaches "));
  assert_int_equal(run_err("pool --hash xor-div %s --out %s/r.csv %s/a.ply", opts, dir, dir), 0);
  assert_true(file_has(err, "f3dbench: pool: note: "));
  assert_int_equal(run_err("psh --hash zorder-mod %s --out %s/r.csv %s/a.ply", opts, dir, dir), 0);
  assert_false(file_has(err, "note: cloud"));
}

/* psh's attention line: the tiles' work over the real pairs, bucket by bucket at least packed, packed at least 1,
 * and both above 1 on a lidar cloud at S = 512, whose buckets PSH fills unevenly (battn_tile_work_compute). */
static void test_tile_work_line(void **state) {
  (void)state;
  char out[300];
  snprintf(out, sizeof out, "%s/stats.txt", dir);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' psh --out %s/t.csv %s/a.ply > '%s' 2>/dev/null", prog, dir, dir, out);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(out, "r");
  assert_non_null(f);
  char line[512];
  double by = 0, packed = 0;
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "attention over scopes of 8 buckets, tiles of 128 queries x 64 keys: work / real pairs %lf "
                     "bucket by bucket (v23), %lf packed", &by, &packed) == 2)
      found = 1;
  fclose(f);
  assert_true(found);
  assert_true(packed > 1.0 && by >= packed && by < 2.0);
}

static void test_psh_cpu_and_gpu(void **state) {
  (void)state;
  char a[300], b[300];
  const uint32_t n = 30000 + 8000;
  const char *hashes[4] = {"xor-mod", "xor-div", "zorder-mod", "zorder-div"};
  for (int h = 0; h < 4; h++) {
    snprintf(a, sizeof a, "%s/psh1.csv", dir);
    snprintf(b, sizeof b, "%s/psh2.csv", dir);
    assert_int_equal(run("psh --hash %s --out %s %s/a.ply %s/b.bin", hashes[h], a, dir, dir), 0);
    assert_int_equal(run("psh --hash %s --out %s %s/a.ply %s/b.bin", hashes[h], b, dir, dir), 0);
    check_csv(a, 5, n);
    assert_true(same_file(a, b));
  }
  assert_int_equal(run("pool --rho 4 --out %s/pool.csv %s/a.ply %s/b.bin", dir, dir, dir), 0);
  snprintf(a, sizeof a, "%s/pool.csv", dir);
  check_csv(a, 4, n);
  /* GPU path when this build and machine have one (exit 1 with "no CUDA" otherwise) */
  int rc = run("psh --device gpu --out %s/gpu.csv %s/a.ply %s/b.bin", dir, dir, dir);
  if (rc == 0) {
    snprintf(a, sizeof a, "%s/gpu.csv", dir);
    check_csv(a, 5, n);
    assert_int_equal(run("pool --device gpu --rho 2 --out %s/gpool.csv %s/a.ply %s/b.bin", dir, dir, dir), 0);
    snprintf(a, sizeof a, "%s/gpool.csv", dir);
    check_csv(a, 4, n);
  } else {
    assert_int_equal(rc, 1);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_psh_cli F3DBENCH\n");
    return 2;
  }
  prog = argv[1];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/psh-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return 1;
  if (run("gen --out %s/a.ply --kind lidar --points 30000 --seed 3", dir) != 0 ||
      run("gen --out %s/b.bin --kind indoor --points 8000 --seed 4", dir) != 0) {
    fprintf(stderr, "test_psh_cli: f3dbench gen failed\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_usage), cmocka_unit_test(test_out_is_input),
                                     cmocka_unit_test(test_nonfinite_indices),
                                     cmocka_unit_test(test_reach_note), cmocka_unit_test(test_tile_work_line),
                                     cmocka_unit_test(test_psh_cpu_and_gpu)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "test_psh_cli: could not remove %s\n", dir);
  return rc;
}
