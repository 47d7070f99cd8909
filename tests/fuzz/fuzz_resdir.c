/*
 * fuzz_resdir.c - libFuzzer target for the result-directory reader that `compare`, `plot` and `merge` use
 * (hx_run_load, harness/resdir.c) and what those commands do with a loaded run: hx_run_groups,
 * hx_run_check_compatible, hx_compare_runs, hx_run_write_json and hx_run_merge.
 *
 * Input: byte 0 holds flags (bit 0: an INCOMPLETE marker exists; bit 1: the row files carry the
 * ".csv.partial" names of an interrupted run); the rest is split at NUL bytes into context.csv,
 * results.csv and samples.csv (a missing part: that file is absent). Checked besides the sanitizers:
 *   - a loaded run has a status key; status != complete, the marker or .partial names make it incomplete;
 *   - groups are sorted, cover every sample once, and hold equal keys;
 *   - a run is compatible with itself and compares with itself with one verdict per key, never faster or
 *     slower;
 *   - merging a complete run alone (a new directory) and loading the result gives back as many rows and
 *     samples.
 */
#include "fuzz_util.h"
#include "harness/harness.h"

#include <sys/stat.h>

/* Remove dir/{context,results,samples}.csv[.partial], INCOMPLETE, results.json and the merge folder. */
static void clean(const char *dir) {
  static const char *const names[] = {"context.csv", "results.csv", "samples.csv", "results.csv.partial",
                                      "samples.csv.partial", "INCOMPLETE", "results.json"};
  char p[1024];
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
}

static void check_groups(const hx_run *r) {
  size_t covered = 0;
  for (size_t g = 0; g < r->n_groups; g++) {
    const hx_run_group *gr = &r->groups[g];
    FZ_CHECK(gr->count > 0 && gr->first == covered);
    covered += gr->count;
    FZ_CHECK(covered <= r->n_samples);
    for (size_t i = gr->first + 1; i < gr->first + gr->count; i++)
      FZ_CHECK(hx_run_row_key_cmp(&r->samples[gr->first], &r->samples[i]) == 0);
    if (g > 0) FZ_CHECK(hx_run_row_key_cmp(&r->samples[r->groups[g - 1].first], &r->samples[gr->first]) < 0);
  }
  FZ_CHECK(covered == r->n_samples);
}

static void check_merge(hx_run *r, const char *base) {
  char out[1024];
  snprintf(out, sizeof out, "%s/merged", base);
  hx_err err = {HX_OK, ""};
  hx_status st = hx_run_merge(r, 1, out, 0, &err);
  fz_check_status(st, &err);
  if (st == HX_OK) {
    hx_run m;
    st = hx_run_load(&m, out, &err);
    fz_check_status(st, &err);
    if (st != HX_OK) fprintf(stderr, "merge wrote a directory its reader refuses: %s\n", err.msg);
    FZ_CHECK(st == HX_OK);
    FZ_CHECK(m.n_rows == r->n_rows && m.n_samples == r->n_samples);
    hx_run_free(&m);
  }
  clean(out);
  rmdir(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int marker = data[0] & 1, partial = (data[0] >> 1) & 1;
  const uint8_t *part[3] = {NULL, NULL, NULL};
  size_t plen[3] = {0, 0, 0};
  const uint8_t *p = data + 1, *end = data + size;
  for (int k = 0; k < 3 && p <= end; k++) {
    const uint8_t *z = memchr(p, 0, (size_t)(end - p));
    part[k] = p;
    plen[k] = (size_t)((z ? z : end) - p);
    if (!z) break;
    p = z + 1;
  }
  const char *dir = fz_dir();
  char path[1024];
  clean(dir);
  fz_put(path, sizeof path, "context.csv", part[0], plen[0]);
  fz_put(path, sizeof path, partial ? "results.csv.partial" : "results.csv", part[1], plen[1]);
  fz_put(path, sizeof path, partial ? "samples.csv.partial" : "samples.csv", part[2], plen[2]);
  if (marker) fz_put(path, sizeof path, "INCOMPLETE", (const uint8_t *)"fuzz\n", 5);

  hx_run r;
  hx_err err = {HX_OK, ""};
  hx_status st = hx_run_load(&r, dir, &err);
  fz_check_status(st, &err);
  if (st != HX_OK) {
    FZ_CHECK(r.rows == NULL && r.samples == NULL && r.ctx_keys == NULL && r.dir == NULL);
    return 0;
  }
  const char *status = hx_run_context(&r, "status");
  FZ_CHECK(status != NULL);
  if (marker || partial || strcmp(status, "complete") != 0) FZ_CHECK(r.incomplete);
  for (size_t i = 0; i < r.n_rows; i++) FZ_CHECK(r.rows[i].sample == -1 && r.rows[i].unit != NULL);

  st = hx_run_groups(&r, &err);
  fz_check_status(st, &err);
  if (st == HX_OK) check_groups(&r);
  st = hx_run_check_compatible(&r, &r, 1, &err);
  FZ_CHECK(st == HX_OK);

  char *mem = NULL;
  size_t mlen = 0;
  FILE *m = open_memstream(&mem, &mlen);
  if (!m) abort();
  hx_compare_counts counts;
  st = hx_compare_runs(&r, &r, 0.05, 0.02, m, &counts, &err);
  fz_check_status(st, &err);
  fclose(m);
  free(mem);
  if (st == HX_OK) /* one verdict per key, and a run never differs from itself */
    FZ_CHECK(counts.faster == 0 && counts.slower == 0 && counts.same + counts.unknown == r.n_groups);

  snprintf(path, sizeof path, "%s/results.json", dir);
  st = hx_run_write_json(&r, path, &err);
  fz_check_status(st, &err);
  if (!r.incomplete) check_merge(&r, dir);
  hx_run_free(&r);
  return 0;
}
