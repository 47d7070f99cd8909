/*
 * test_select.h - run the cmocka tests a command line names (tests/sanitize/run.sh checks the networks' own
 * kernels this way, leaving out the tests whose GEMMs go through cuBLAS). With no names the group's default tests
 * run (the first n_default; the rest run only when named); a name that is no test of the group is a usage error
 * (exit 2), so a renamed test cannot silently drop out of a sanitizer's list. Include after <cmocka.h>, in a CUDA
 * build only.
 */
#ifndef F3D_TEST_SELECT_H
#define F3D_TEST_SELECT_H

#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#define TS_MAX_TESTS 32

/* 1 when every name on the command line is a test of all[0..n), else a message naming the tests and 0 */
static inline int ts_names_ok(const struct CMUnitTest *all, size_t n, int argc, char **argv) {
  if (argc - 1 > TS_MAX_TESTS) {
    fprintf(stderr, "%s: at most %d test names\n", argv[0], TS_MAX_TESTS);
    return 0;
  }
  for (int a = 1; a < argc; ++a) {
    size_t i = 0;
    while (i < n && strcmp(all[i].name, argv[a]) != 0) ++i;
    if (i == n) {
      fprintf(stderr, "%s: no test named '%s'; the tests are:", argv[0], argv[a]);
      for (size_t j = 0; j < n; ++j) fprintf(stderr, " %s", all[j].name);
      fprintf(stderr, "\n");
      return 0;
    }
  }
  return 1;
}

/* the tests named on the command line (the first n_default with none), in the command line's order */
static inline int ts_run_selected(const char *group, const struct CMUnitTest *all, size_t n, size_t n_default,
                                  int argc, char **argv, CMFixtureFunction setup, CMFixtureFunction teardown) {
  if (argc <= 1) return _cmocka_run_group_tests(group, all, n_default, setup, teardown);
  if (!ts_names_ok(all, n, argc, argv)) return 2;
  struct CMUnitTest sel[TS_MAX_TESTS];
  size_t k = 0;
  for (int a = 1; a < argc; ++a)
    for (size_t i = 0; i < n; ++i)
      if (strcmp(all[i].name, argv[a]) == 0) sel[k++] = all[i];
  return _cmocka_run_group_tests(group, sel, k, setup, teardown);
}

/* a GPU test program's main: the names checked first (exit 2), then 77 (Meson: SKIP) without a CUDA device,
 * then the selected tests */
static inline int ts_gpu_main(const char *group, const struct CMUnitTest *all, size_t n, size_t n_default, int argc,
                              char **argv, CMFixtureFunction setup, CMFixtureFunction teardown) {
  if (!ts_names_ok(all, n, argc, argv)) return 2;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no CUDA device: skipping\n");
    return 77;
  }
  return ts_run_selected(group, all, n, n_default, argc, argv, setup, teardown);
}

#endif
