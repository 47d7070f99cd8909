/* test_run_util.h - what the tests of loaded runs share (header only, no cmocka). */
#ifndef F3D_TEST_RUN_UTIL_H
#define F3D_TEST_RUN_UTIL_H

#include <string.h>

#include "harness/harness.h"

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
