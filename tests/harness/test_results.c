/*
 * test_results.c - the results module: RFC 4180 quoting and parsing, run-id format, atomic file
 * writes, and the run-directory protocol (complete, aborted, and killed runs never show a results.csv).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

/* ---- helpers ---------------------------------------------------------------------------------------- */

static char *field_text(const char *s) {
  char *buf = NULL;
  size_t size = 0;
  FILE *m = open_memstream(&buf, &size);
  assert_non_null(m);
  assert_int_equal(hx_csv_field(m, s), 0);
  fclose(m);
  return buf;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

static int exists(const char *dir, const char *name) {
  char p[4200];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &sb) == 0;
}

static size_t count_entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void rm_rf(const char *path) { assert_int_equal(t_rm_rf(path), 0); }

static char *make_tmpdir(void) {
  char *d = malloc(64);
  assert_non_null(d);
  assert_int_equal(t_tmpdir(d, 64, "results"), 0);
  return d;
}

/* Value of `key` in a context.csv (parsed with hx_csv_read), copied to out; 0 when found. */
static int context_value(const char *dir, const char *key, char *out, size_t cap) {
  char p[4200], buf[4096], *f[4];
  size_t n;
  snprintf(p, sizeof p, "%s/context.csv", dir);
  FILE *fp = fopen(p, "r");
  if (!fp) return -1;
  int found = -1;
  while (hx_csv_read(fp, buf, sizeof buf, f, 4, &n, NULL) == HX_OK)
    if (n == 2 && strcmp(f[0], key) == 0) {
      snprintf(out, cap, "%s", f[1]);
      found = 0;
    }
  fclose(fp);
  return found;
}

/* ---- CSV ------------------------------------------------------------------------------------------ */

static void test_csv_quoting(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"\"", "\"\"\"\""},
      {"line1\nline2", "\"line1\nline2\""},
      {"cr\rhere", "\"cr\rhere\""},
      {"sp ace;semi", "sp ace;semi"}, /* spaces and semicolons need no quotes in RFC 4180 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *t = field_text(cases[i].in);
    assert_string_equal(t, cases[i].out);
    free(t);
  }
  char *t = field_text(NULL);
  assert_string_equal(t, "");
  free(t);
}

static void test_csv_round_trip(void **state) {
  (void)state;
  const char *rec[] = {"lidar", "a,b", "q\"uo\"te", "multi\nline\r\nfield", "", "\"", "end"};
  const size_t nrec = sizeof rec / sizeof rec[0];
  char *text = NULL;
  size_t size = 0;
  FILE *m = open_memstream(&text, &size);
  for (int r = 0; r < 2; r++) { /* two records in a row: the reader must stop at the right newline */
    for (size_t i = 0; i < nrec; i++) {
      if (i) fputc(',', m);
      hx_csv_field(m, rec[i]);
    }
    fputc('\n', m);
  }
  fclose(m);
  FILE *f = fmemopen(text, size, "r");
  char buf[512], *fields[16];
  size_t n;
  for (int r = 0; r < 2; r++) {
    assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 16, &n, NULL), HX_OK);
    assert_int_equal(n, nrec);
    for (size_t i = 0; i < nrec; i++) assert_string_equal(fields[i], rec[i]);
  }
  assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 16, &n, NULL), HX_EIO); /* end of file */
  fclose(f);
  free(text);
}

static void test_csv_crlf_and_malformed(void **state) {
  (void)state;
  char buf[64], *fields[8];
  size_t n;
  char crlf[] = "a,b\r\nc,d\r\n";
  FILE *f = fmemopen(crlf, strlen(crlf), "r");
  assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 8, &n, NULL), HX_OK);
  assert_int_equal(n, 2);
  assert_string_equal(fields[1], "b");
  assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 8, &n, NULL), HX_OK);
  assert_string_equal(fields[0], "c");
  fclose(f);
  static const char *const bad[] = {"ab\"c\n", "\"open field\n", "\"a\"x,b\n", "a,b,c,d,e,f,g,h,i\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
    hx_err err = {HX_OK, ""};
    assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 8, &n, &err), HX_EFORMAT);
    assert_true(strlen(err.msg) > 0);
    fclose(f);
  }
  /* a record longer than the buffer is an error, not a silent truncation */
  char longrec[200];
  memset(longrec, 'x', sizeof longrec - 2);
  longrec[sizeof longrec - 2] = '\n';
  longrec[sizeof longrec - 1] = '\0';
  f = fmemopen(longrec, strlen(longrec), "r");
  assert_int_equal(hx_csv_read(f, buf, sizeof buf, fields, 8, &n, NULL), HX_EFORMAT);
  fclose(f);
}

/* ---- run id ----------------------------------------------------------------------------------------- */

static void test_run_id(void **state) {
  (void)state;
  char id[64];
  assert_int_equal(hx_run_id(id, sizeof id, 0, "abc1234", NULL), HX_OK);
  assert_string_equal(id, "19700101T000000Z-abc1234");
  assert_int_equal(hx_run_id(id, sizeof id, 1763765000, "a711150", NULL), HX_OK);
  assert_string_equal(id, "20251121T224320Z-a711150");
  assert_int_equal(hx_run_id(id, sizeof id, 1763765000, NULL, NULL), HX_OK);
  assert_string_equal(id, "20251121T224320Z-nogit");
  assert_int_equal(hx_run_id(id, sizeof id, 1763765000, "", NULL), HX_OK);
  assert_string_equal(id, "20251121T224320Z-nogit");
  /* a hash that could escape the results directory or need quoting is refused */
  assert_int_equal(hx_run_id(id, sizeof id, 0, "../x", NULL), HX_EINVAL);
  assert_int_equal(hx_run_id(id, sizeof id, 0, "a b", NULL), HX_EINVAL);
  /* 16 + 1 + 7 characters do not fit in 24 bytes with the terminator */
  assert_int_equal(hx_run_id(id, 24, 0, "abc1234", NULL), HX_EINVAL);
  assert_int_equal(hx_run_id(id, 25, 0, "abc1234", NULL), HX_OK);
  /* a run directory's name holds at most 255 bytes (NAME_MAX): one longer is refused, not cut */
  char longid[300];
  memset(longid, 'a', 256);
  longid[256] = '\0';
  hx_results *r = NULL;
  hx_err err;
  assert_int_equal(hx_results_open(&r, "/tmp/f3d-test-results-unused", longid, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "256 bytes, a directory name holds at most 255"));
  assert_null(r);
}

/* ---- atomic writes ---------------------------------------------------------------------------------- */

static void test_atomic_write(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  char path[256];
  snprintf(path, sizeof path, "%s/file.txt", dir);
  assert_int_equal(hx_write_file_atomic(path, "first\n", 6, NULL), HX_OK);
  assert_int_equal(hx_write_file_atomic(path, "second\n", 7, NULL), HX_OK);
  char *s = slurp(path);
  assert_string_equal(s, "second\n");
  free(s);
  assert_int_equal(count_entries(dir), 1); /* no temporary left behind */
  /* Simulated failure at the last step: the target is a directory, so rename() fails after the data
   * was written. The old target must be untouched and the temporary removed. */
  char sub[256];
  snprintf(sub, sizeof sub, "%s/target", dir);
  assert_int_equal(mkdir(sub, 0777), 0);
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_write_file_atomic(sub, "data", 4, &err), HX_EIO);
  assert_non_null(strstr(err.msg, "target"));
  struct stat sb;
  assert_int_equal(stat(sub, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(count_entries(dir), 2); /* file.txt and target/, nothing else */
  /* failure at the first step: the directory does not exist */
  snprintf(path, sizeof path, "%s/missing/file.txt", dir);
  assert_int_equal(hx_write_file_atomic(path, "x", 1, NULL), HX_EIO);
  rm_rf(dir);
  free(dir);
}

/* ---- run directory ---------------------------------------------------------------------------------- */

static const hx_key key_a = {"lidar", 100000, 1, "workload", "generate", "cpu"};
static const hx_key key_q = {"my,\"scan\"", 5, 2, "p", "k", "v1"};

static void test_results_commit(void **state) {
  (void)state;
  char *root = make_tmpdir();
  char nested[256];
  snprintf(nested, sizeof nested, "%s/a/b", root); /* the root is created with its parents */
  hx_results *r = NULL;
  assert_int_equal(hx_results_open(&r, nested, "20251121T224320Z-abc1234", NULL), HX_OK);
  const char *dir = hx_results_dir(r);
  assert_true(exists(dir, "INCOMPLETE"));
  assert_false(exists(dir, "results.csv"));
  char v[256];
  assert_int_equal(context_value(dir, "status", v, sizeof v), 0);
  assert_string_equal(v, "running");
  assert_int_equal(hx_results_context(r, "device", "NVIDIA H100, 80GB", NULL), HX_OK);
  assert_int_equal(hx_results_contextf(r, NULL, "seed", "%d", 42), HX_OK);
  assert_int_equal(hx_results_context(r, "seed", "7", NULL), HX_OK); /* replaced, not duplicated */
  assert_int_equal(hx_results_add(r, &key_a, "time_median", 1.5, "ms", NULL), HX_OK);
  assert_int_equal(hx_results_add(r, &key_q, "bytes", 1e12, "B", NULL), HX_OK);
  const double s[] = {1.0, 2.25};
  assert_int_equal(hx_results_add_samples(r, &key_a, "time", s, 2, "ms", NULL), HX_OK);
  /* non-finite values and missing key fields are refused (a CSV cell "nan" would poison readers) */
  assert_int_equal(hx_results_add(r, &key_a, "x", 0.0 / 0.0, "ms", NULL), HX_EINVAL);
  hx_key bad = key_a;
  bad.kernel = NULL;
  assert_int_equal(hx_results_add(r, &bad, "x", 1.0, "ms", NULL), HX_EINVAL);
  /* what hx_run_load would refuse is refused as it is written: a negative time, size or rate, a cloud past 10^12
   * points; a ratio may be negative */
  hx_err e;
  assert_int_equal(hx_results_add(r, &key_a, "time_median", -1.5, "ms", &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "-1.5 ms is negative"));
  const double neg[] = {1.0, -2.0};
  assert_int_equal(hx_results_add_samples(r, &key_a, "time", neg, 2, "ms", NULL), HX_EINVAL);
  assert_int_equal(hx_results_add(r, &key_a, "bandwidth", -1.0, "GB/s", NULL), HX_EINVAL);
  bad = key_a;
  bad.n_points = HX_MAX_POINTS + 1;
  assert_int_equal(hx_results_add(r, &bad, "time_median", 1.0, "ms", &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "is more than any cloud"));
  assert_int_equal(hx_unit_is_rate("GB/s"), 1);
  assert_int_equal(hx_unit_is_rate("ms/step"), 0);
  assert_int_equal(hx_unit_not_negative("ms/step"), 0);
  assert_int_equal(hx_unit_not_negative("ratio"), 0);
  assert_false(exists(dir, "results.csv"));
  assert_int_equal(hx_results_commit(r, NULL), HX_OK);
  assert_false(exists(dir, "INCOMPLETE"));
  assert_false(exists(dir, "results.csv.partial"));
  assert_int_equal(count_entries(dir), 3);
  char p[4200];
  snprintf(p, sizeof p, "%s/results.csv", dir);
  char *text = slurp(p);
  assert_string_equal(text, HX_RESULTS_HEADER "\n"
                            "lidar,100000,1,workload,generate,cpu,time_median,1.5,ms\n"
                            "\"my,\"\"scan\"\"\",5,2,p,k,v1,bytes,1e+12,B\n");
  free(text);
  snprintf(p, sizeof p, "%s/samples.csv", dir);
  text = slurp(p);
  assert_string_equal(text, HX_SAMPLES_HEADER "\n"
                            "lidar,100000,1,workload,generate,cpu,time,0,1,ms\n"
                            "lidar,100000,1,workload,generate,cpu,time,1,2.25,ms\n");
  free(text);
  assert_int_equal(context_value(dir, "status", v, sizeof v), 0);
  assert_string_equal(v, "complete");
  assert_int_equal(context_value(dir, "device", v, sizeof v), 0);
  assert_string_equal(v, "NVIDIA H100, 80GB");
  assert_int_equal(context_value(dir, "seed", v, sizeof v), 0);
  assert_string_equal(v, "7");
  assert_int_equal(context_value(dir, "schema_version", v, sizeof v), 0);
  assert_int_equal(atoi(v), HX_RESULTS_SCHEMA);
  /* after commit the run is closed for writing */
  assert_int_equal(hx_results_add(r, &key_a, "late", 1.0, "ms", NULL), HX_EINVAL);
  hx_results_close(r);
  /* an existing run directory is never reused (old runs are never rewritten) */
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_results_open(&r, nested, "20251121T224320Z-abc1234", &err), HX_EIO);
  assert_null(r);
  rm_rf(root);
  free(root);
}

static void test_results_abort(void **state) {
  (void)state;
  char *root = make_tmpdir();
  hx_results *r = NULL;
  assert_int_equal(hx_results_open(&r, root, "run", NULL), HX_OK);
  assert_int_equal(hx_results_add(r, &key_a, "time_median", 1.5, "ms", NULL), HX_OK);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", hx_results_dir(r));
  assert_int_equal(hx_results_abort(r, "interrupted", "SIGINT", NULL), HX_OK);
  assert_int_equal(hx_results_commit(r, NULL), HX_EINVAL); /* an aborted run cannot be committed */
  hx_results_close(r);
  assert_false(exists(dir, "results.csv"));
  assert_false(exists(dir, "results.csv.partial"));
  assert_false(exists(dir, "samples.csv.partial"));
  assert_true(exists(dir, "INCOMPLETE"));
  char p[4200];
  snprintf(p, sizeof p, "%s/INCOMPLETE", dir);
  char *text = slurp(p);
  assert_string_equal(text, "interrupted: SIGINT\n");
  free(text);
  char v[64];
  assert_int_equal(context_value(dir, "status", v, sizeof v), 0);
  assert_string_equal(v, "interrupted");
  /* closing without commit marks the run abandoned */
  assert_int_equal(hx_results_open(&r, root, "run2", NULL), HX_OK);
  snprintf(dir, sizeof dir, "%s", hx_results_dir(r));
  hx_results_close(r);
  assert_false(exists(dir, "results.csv"));
  assert_int_equal(context_value(dir, "status", v, sizeof v), 0);
  assert_string_equal(v, "abandoned");
  rm_rf(root);
  free(root);
}

/* A process killed mid-run (no chance to clean up) leaves INCOMPLETE, a whole context.csv with
 * status=running, and no results.csv. */
static void test_results_killed(void **state) {
  (void)state;
  char *root = make_tmpdir();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    hx_results *r = NULL;
    if (hx_results_open(&r, root, "killed", NULL) != HX_OK) _exit(1);
    hx_results_context(r, "device", "none", NULL);
    for (int i = 0; i < 1000; i++) hx_results_add(r, &key_a, "time_median", (double)i, "ms", NULL);
    hx_results_flush(r, NULL);
    hx_results_add(r, &key_a, "time_median", 1.0, "ms", NULL); /* buffered, never flushed */
    raise(SIGKILL);
    _exit(2);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/killed", root);
  assert_true(exists(dir, "INCOMPLETE"));
  assert_false(exists(dir, "results.csv"));
  assert_false(exists(dir, "samples.csv"));
  char v[64];
  assert_int_equal(context_value(dir, "status", v, sizeof v), 0);
  assert_string_equal(v, "running");
  assert_int_equal(context_value(dir, "device", v, sizeof v), 0); /* flushed before the kill */
  assert_string_equal(v, "none");
  rm_rf(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_quoting),      cmocka_unit_test(test_csv_round_trip),
      cmocka_unit_test(test_csv_crlf_and_malformed), cmocka_unit_test(test_run_id),
      cmocka_unit_test(test_atomic_write),     cmocka_unit_test(test_results_commit),
      cmocka_unit_test(test_results_abort),    cmocka_unit_test(test_results_killed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
