/* test_run_util.h - what the harness tests share (header only, no cmocka): their temporary directories and the rows
 * of loaded runs. */
#ifndef F3D_TEST_RUN_UTIL_H
#define F3D_TEST_RUN_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

/* A new directory /tmp/f3d-test-<name>-XXXXXX into root (cap bytes); 0 made, -1 not. */
static inline int t_tmpdir(char *root, size_t cap, const char *name) {
  snprintf(root, cap, "/tmp/f3d-test-%s-XXXXXX", name);
  return mkdtemp(root) ? 0 : -1;
}

/* rm -rf dir (a test's own temporary directory); 0 removed, -1 not. */
static inline int t_rm_rf(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The last row of r with this pipeline, kernel, variant and metric, NULL when none; *n = how many there are. */
static inline const hx_run_row *t_run_row(const hx_run *r, const char *pipeline, const char *kernel,
                                          const char *variant, const char *metric, int *n) {
  const hx_run_row *found = NULL;
  *n = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (!strcmp(w->pipeline, pipeline) && !strcmp(w->kernel, kernel) && !strcmp(w->variant, variant) &&
        !strcmp(w->metric, metric))
      found = w, (*n)++;
  }
  return found;
}

#endif
