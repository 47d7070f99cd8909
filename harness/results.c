/*
 * results.c - the result directory of one run: tidy CSV rows, raw samples, a key/value context file,
 * and the protocol that keeps an interrupted run from looking finished (see harness.h, results).
 *
 * Invariant: a run directory holds results.csv and samples.csv only after hx_results_commit renamed
 * the fully written, fsync'ed "*.csv.partial" files, or after hx_results_stop renamed them cut back to the
 * last checkpoint (whole units of work, the run still marked); the INCOMPLETE file exists from open until the
 * very last step of a successful commit, so "INCOMPLETE absent" is the one test of a finished run.
 * context.csv is always whole (rewritten to a temporary name and renamed) and carries a `status` key:
 * running, complete, or the reason a run stopped (interrupted, failed, abandoned).
 */
#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HX_PATH_MAX 4096

typedef struct kv {
  char *key, *value;
} kv;

struct hx_results {
  char dir[HX_PATH_MAX];
  FILE *rows, *samples; /* the partial files while the run is open */
  kv *ctx;
  size_t nctx, capctx;
  int state; /* 0 open, 1 committed, 2 aborted */
  int checkpointed;               /* 1 once hx_results_checkpoint succeeded */
  off_t keep_rows, keep_samples; /* lengths of the partial files at the last checkpoint */
};

/* ---- CSV ------------------------------------------------------------------------------------------ */

int hx_csv_field(FILE *f, const char *s) {
  if (!s) return 0;
  if (strpbrk(s, ",\"\r\n") == NULL) return fputs(s, f) < 0 ? EOF : 0;
  if (putc('"', f) == EOF) return EOF;
  for (const char *p = s; *p; p++) {
    if (*p == '"' && putc('"', f) == EOF) return EOF;
    if (putc(*p, f) == EOF) return EOF;
  }
  return putc('"', f) == EOF ? EOF : 0;
}

hx_status hx_csv_read(FILE *f, char *buf, size_t buf_size, char **fields, size_t cap, size_t *count,
                      hx_err *err) {
  size_t len = 0, nf = 0;
  int c = getc(f);
  *count = 0;
  if (c == EOF) return hx_errf(err, HX_EIO, "end of file");
  if (buf_size == 0 || cap == 0) return hx_errf(err, HX_EINVAL, "csv: no room for a record");
  int in_quotes = 0, was_quoted = 0;
  fields[nf++] = buf;
  for (;; c = getc(f)) {
    if (c == EOF) {
      if (in_quotes) return hx_errf(err, HX_EFORMAT, "csv: end of file inside a quoted field");
      break;
    }
    /* A NUL would end the field early in every C string that holds it ("0.09\0" "30500016" read as 0.09): no
     * text this project writes holds one, so the file is damaged or not a CSV file. */
    if (c == '\0') return hx_errf(err, HX_EFORMAT, "csv: NUL byte (damaged or not a text file)");
    if (in_quotes) {
      if (c == '"') {
        int d = getc(f);
        if (d == '"') {
          c = '"'; /* doubled quote: a literal quote, fall through to store it */
        } else {
          in_quotes = 0;
          if (d != EOF) ungetc(d, f);
          continue;
        }
      }
    } else if (c == '"') {
      if (len > (size_t)(fields[nf - 1] - buf) || was_quoted)
        return hx_errf(err, HX_EFORMAT, "csv: quote inside an unquoted field");
      in_quotes = was_quoted = 1;
      continue;
    } else if (c == ',') {
      if (len + 1 >= buf_size) return hx_errf(err, HX_EFORMAT, "csv: record longer than %zu bytes", buf_size);
      buf[len++] = '\0';
      if (nf == cap) return hx_errf(err, HX_EFORMAT, "csv: more than %zu fields", cap);
      fields[nf++] = buf + len;
      was_quoted = 0;
      continue;
    } else if (c == '\n') {
      break;
    } else if (c == '\r') {
      int d = getc(f);
      if (d == '\n') break;
      if (d != EOF) ungetc(d, f);
    } else if (was_quoted) {
      return hx_errf(err, HX_EFORMAT, "csv: text after a closing quote");
    }
    if (len + 1 >= buf_size) return hx_errf(err, HX_EFORMAT, "csv: record longer than %zu bytes", buf_size);
    buf[len++] = (char)c;
  }
  buf[len] = '\0';
  *count = nf;
  return HX_OK;
}

/* ---- run id --------------------------------------------------------------------------------------- */

hx_status hx_run_id(char *buf, size_t cap, int64_t unix_time, const char *git_hash, hx_err *err) {
  const char *h = (git_hash && *git_hash) ? git_hash : "nogit";
  for (const char *p = h; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
      return hx_errf(err, HX_EINVAL, "run id: git hash '%s' has a character other than [0-9a-zA-Z]", h);
  time_t t = (time_t)unix_time;
  struct tm tm;
  if (!gmtime_r(&t, &tm)) return hx_errf(err, HX_EINVAL, "run id: time %lld out of range", (long long)unix_time);
  char ts[32];
  if (strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm) == 0) return hx_errf(err, HX_EINVAL, "run id: bad time");
  int n = snprintf(buf, cap, "%s-%s", ts, h);
  if (n < 0 || (size_t)n >= cap) return hx_errf(err, HX_EINVAL, "run id: buffer of %zu bytes too small", cap);
  return HX_OK;
}

/* ---- atomic files --------------------------------------------------------------------------------- */

/* In place: no fsync (a FIFO or a device refuses it with EINVAL) and nothing to remove on failure. */
static hx_status write_in_place(const char *path, const void *data, size_t size, hx_err *err) {
  FILE *f = fopen(path, "wb");
  if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  int bad = (size && fwrite(data, 1, size, f) != size) || fflush(f) != 0;
  int saved = errno;
  if (fclose(f) != 0 && !bad) bad = 1, saved = errno;
  if (bad) return hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(saved));
  return HX_OK;
}

hx_status hx_stage_file(const char *path, const void *data, size_t size, char *tmp, char *dest, size_t cap,
                        int *in_place, hx_err *err) {
  tmp[0] = '\0';
  *in_place = 0;
  HX_TRY(hx_out_resolve(path, dest, cap, in_place, err)); /* dest: path, or the regular file its link ends at */
  if (*in_place) return HX_OK;
  int n = hx_tmp_path(tmp, cap, dest);
  FILE *f = n < 0 || (size_t)n >= cap ? NULL : fopen(tmp, "wb");
  if (!f) {
    const hx_status st = n < 0 || (size_t)n >= cap ? hx_errf(err, HX_EINVAL, "%s: path too long", path)
                                                   : hx_errf(err, HX_EIO, "%s: %s", tmp, strerror(errno));
    tmp[0] = '\0';
    return st;
  }
  int bad = (size && fwrite(data, 1, size, f) != size) || fflush(f) != 0 || fsync(fileno(f)) != 0;
  int saved = errno;
  if (fclose(f) != 0 && !bad) bad = 1, saved = errno;
  if (bad) {
    unlink(tmp);
    tmp[0] = '\0';
    return hx_errf(err, HX_EIO, "%s: %s", path, strerror(saved));
  }
  return HX_OK;
}

hx_status hx_write_file_atomic(const char *path, const void *data, size_t size, hx_err *err) {
  int in_place = 0;
  char dest[HX_PATH_MAX], tmp[HX_PATH_MAX];
  HX_TRY(hx_stage_file(path, data, size, tmp, dest, sizeof tmp, &in_place, err));
  if (in_place) return write_in_place(path, data, size, err);
  if (rename(tmp, dest) != 0) {
    const int saved = errno;
    unlink(tmp);
    return hx_errf(err, HX_EIO, "%s: %s", path, strerror(saved));
  }
  return HX_OK;
}

/* ---- the run directory ---------------------------------------------------------------------------- */

static hx_status path_in(const hx_results *r, const char *name, char *out, size_t cap, hx_err *err) {
  int n = snprintf(out, cap, "%s/%s", r->dir, name);
  if (n < 0 || (size_t)n >= cap) return hx_errf(err, HX_EINVAL, "%s/%s: path too long", r->dir, name);
  return HX_OK;
}

/* mkdir -p; existing directories are fine. */
static hx_status make_dirs(const char *path, hx_err *err) {
  char p[HX_PATH_MAX];
  int n = snprintf(p, sizeof p, "%s", path);
  if (n < 0 || (size_t)n >= sizeof p) return hx_errf(err, HX_EINVAL, "%s: path too long", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return hx_errf(err, HX_EIO, "%s: %s", p, strerror(errno));
    *s = '/';
  }
  if (mkdir(p, 0777) != 0 && errno != EEXIST) return hx_errf(err, HX_EIO, "%s: %s", p, strerror(errno));
  return HX_OK;
}

static hx_status write_context(hx_results *r, hx_err *err) {
  char *text = NULL;
  size_t size = 0;
  FILE *m = open_memstream(&text, &size);
  if (!m) return hx_errf(err, HX_ENOMEM, "context: no memory");
  int bad = fputs("key,value\n", m) < 0;
  for (size_t i = 0; i < r->nctx && !bad; i++)
    bad = hx_csv_field(m, r->ctx[i].key) || putc(',', m) == EOF || hx_csv_field(m, r->ctx[i].value) ||
          putc('\n', m) == EOF;
  if (fclose(m) != 0 || bad) {
    free(text);
    return hx_errf(err, HX_ENOMEM, "context: could not format");
  }
  char path[HX_PATH_MAX];
  hx_status st = path_in(r, "context.csv", path, sizeof path, err);
  if (st == HX_OK) st = hx_write_file_atomic(path, text, size, err);
  free(text);
  return st;
}

static hx_status write_marker(hx_results *r, const char *text, hx_err *err) {
  char path[HX_PATH_MAX];
  HX_TRY(path_in(r, "INCOMPLETE", path, sizeof path, err));
  return hx_write_file_atomic(path, text, strlen(text), err);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

hx_status hx_results_context(hx_results *r, const char *key, const char *value, hx_err *err) {
  if (!r || !key || !*key) return hx_errf(err, HX_EINVAL, "context: empty key");
  if (!value) value = "";
  char *v = dup_str(value);
  if (!v) return hx_errf(err, HX_ENOMEM, "context: no memory");
  for (size_t i = 0; i < r->nctx; i++)
    if (strcmp(r->ctx[i].key, key) == 0) {
      free(r->ctx[i].value);
      r->ctx[i].value = v;
      return HX_OK;
    }
  if (r->nctx == r->capctx) {
    size_t cap = r->capctx ? 2 * r->capctx : 32;
    kv *grown = realloc(r->ctx, cap * sizeof *grown);
    if (!grown) {
      free(v);
      return hx_errf(err, HX_ENOMEM, "context: no memory");
    }
    r->ctx = grown;
    r->capctx = cap;
  }
  char *k = dup_str(key);
  if (!k) {
    free(v);
    return hx_errf(err, HX_ENOMEM, "context: no memory");
  }
  r->ctx[r->nctx].key = k;
  r->ctx[r->nctx].value = v;
  r->nctx++;
  return HX_OK;
}

hx_status hx_results_contextf(hx_results *r, hx_err *err, const char *key, const char *fmt, ...) {
  char v[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  return hx_results_context(r, key, v, err);
}

static FILE *open_partial(hx_results *r, const char *name, const char *header, hx_err *err) {
  char path[HX_PATH_MAX];
  if (path_in(r, name, path, sizeof path, err) != HX_OK) return NULL;
  FILE *f = fopen(path, "wb");
  if (!f) {
    hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
    return NULL;
  }
  if (fprintf(f, "%s\n", header) < 0) {
    hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
    fclose(f);
    return NULL;
  }
  return f;
}

static void results_free(hx_results *r) {
  if (r->rows) fclose(r->rows);
  if (r->samples) fclose(r->samples);
  for (size_t i = 0; i < r->nctx; i++) free(r->ctx[i].key), free(r->ctx[i].value);
  free(r->ctx);
  free(r);
}

hx_status hx_results_open(hx_results **out, const char *root, const char *run_id, hx_err *err) {
  *out = NULL;
  if (!root || !*root) return hx_errf(err, HX_EINVAL, "results: empty output directory");
  if (!run_id || !*run_id || strchr(run_id, '/') || !strcmp(run_id, ".") || !strcmp(run_id, ".."))
    return hx_errf(err, HX_EINVAL, "run id '%s': must be a plain directory name (no '/', not empty, '.' or '..')",
                   run_id ? run_id : "");
  if (strlen(run_id) > 255) /* NAME_MAX: mkdir would fail with ENAMETOOLONG, and callers' buffers cut it */
    return hx_errf(err, HX_EINVAL, "run id '%.40s...': %zu bytes, a directory name holds at most 255", run_id,
                   strlen(run_id));
  hx_status ms = make_dirs(root, err);
  if (ms != HX_OK) return ms;
  hx_results *r = calloc(1, sizeof *r);
  if (!r) return hx_errf(err, HX_ENOMEM, "results: no memory");
  int n = snprintf(r->dir, sizeof r->dir, "%s/%s", root, run_id);
  if (n < 0 || (size_t)n >= sizeof r->dir) {
    free(r);
    return hx_errf(err, HX_EINVAL, "%s/%s: path too long", root, run_id);
  }
  if (mkdir(r->dir, 0777) != 0) {
    hx_status st = hx_errf(err, HX_EIO, "%s: %s", r->dir, strerror(errno));
    free(r);
    return st;
  }
  hx_status st = hx_results_context(r, "status", "running", err);
  if (st == HX_OK) st = hx_results_contextf(r, err, "schema_version", "%d", HX_RESULTS_SCHEMA);
  if (st == HX_OK) st = write_marker(r, "running\n", err);
  if (st == HX_OK) st = write_context(r, err);
  if (st == HX_OK && !(r->rows = open_partial(r, "results.csv.partial", HX_RESULTS_HEADER, err))) st = HX_EIO;
  if (st == HX_OK && !(r->samples = open_partial(r, "samples.csv.partial", HX_SAMPLES_HEADER, err)))
    st = HX_EIO;
  if (st != HX_OK) {
    results_free(r);
    return st;
  }
  *out = r;
  return HX_OK;
}

const char *hx_results_dir(const hx_results *r) { return r ? r->dir : NULL; }

static int write_key(FILE *f, const hx_key *k) {
  return hx_csv_field(f, k->workload) || fprintf(f, ",%llu,%u,", (unsigned long long)k->n_points, k->batch) < 0 ||
         hx_csv_field(f, k->pipeline) || putc(',', f) == EOF || hx_csv_field(f, k->kernel) ||
         putc(',', f) == EOF || hx_csv_field(f, k->variant) || putc(',', f) == EOF;
}

static hx_status check_row(const hx_results *r, const hx_key *k, const char *metric, const char *unit,
                           hx_err *err) {
  if (!r || r->state != 0) return hx_errf(err, HX_EINVAL, "results: run is not open");
  if (!k || !k->workload || !k->pipeline || !k->kernel || !k->variant || !metric || !*metric || !unit)
    return hx_errf(err, HX_EINVAL, "results: row with a missing key field");
  if (k->n_points > HX_MAX_POINTS)
    return hx_errf(err, HX_EINVAL, "results: %s/%s/%s: n_points %llu is more than any cloud", k->pipeline, k->kernel,
                   metric, (unsigned long long)k->n_points);
  return HX_OK;
}

int hx_unit_is_rate(const char *unit) {
  const size_t n = strlen(unit);
  return n >= 2 && strcmp(unit + n - 2, "/s") == 0;
}

int hx_unit_not_negative(const char *unit) {
  static const char *const units[] = {"ms", "ns", "s", "B", "count", "FLOP", "MHz", "%"};
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(unit, units[i]) == 0) return 1;
  return hx_unit_is_rate(unit);
}

/* a value the reader would refuse (hx_run_load) is refused here, where the pipeline that made it is still known */
static hx_status check_value(const hx_key *k, const char *metric, double v, const char *unit, hx_err *err) {
  if (!isfinite(v)) return hx_errf(err, HX_EINVAL, "results: %s/%s/%s: value is not finite", k->pipeline, k->kernel, metric);
  if (v < 0.0 && hx_unit_not_negative(unit))
    return hx_errf(err, HX_EINVAL, "results: %s/%s/%s: %g %s is negative", k->pipeline, k->kernel, metric, v, unit);
  return HX_OK;
}

hx_status hx_results_add(hx_results *r, const hx_key *k, const char *metric, double value,
                         const char *unit, hx_err *err) {
  hx_status cs = check_row(r, k, metric, unit, err);
  if (cs == HX_OK) cs = check_value(k, metric, value, unit, err);
  if (cs != HX_OK) return cs; /* caller error: reported in err, not traced */
  FILE *f = r->rows;
  if (write_key(f, k) || hx_csv_field(f, metric) || fprintf(f, ",%.10g,", value) < 0 || hx_csv_field(f, unit) ||
      putc('\n', f) == EOF)
    return hx_errf(err, HX_EIO, "%s/results.csv.partial: write failed", r->dir);
  return HX_OK;
}

hx_status hx_results_add_samples(hx_results *r, const hx_key *k, const char *metric, const double *v,
                                 size_t n, const char *unit, hx_err *err) {
  hx_status cs = check_row(r, k, metric, unit, err);
  for (size_t i = 0; i < n && cs == HX_OK; i++) cs = check_value(k, metric, v[i], unit, err);
  if (cs != HX_OK) return cs; /* caller error: reported in err, not traced */
  FILE *f = r->samples;
  for (size_t i = 0; i < n; i++)
    if (write_key(f, k) || hx_csv_field(f, metric) || fprintf(f, ",%zu,%.10g,", i, v[i]) < 0 ||
        hx_csv_field(f, unit) || putc('\n', f) == EOF)
      return hx_errf(err, HX_EIO, "%s/samples.csv.partial: write failed", r->dir);
  return HX_OK;
}

/* Flush, fsync and close a partial file, then rename it to its final name. */
static hx_status finish_file(hx_results *r, FILE **fp, const char *partial, const char *final, hx_err *err) {
  char from[HX_PATH_MAX], to[HX_PATH_MAX];
  HX_TRY(path_in(r, partial, from, sizeof from, err));
  HX_TRY(path_in(r, final, to, sizeof to, err));
  FILE *f = *fp;
  *fp = NULL;
  int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
  if (fclose(f) != 0) bad = 1;
  if (bad) return hx_errf(err, HX_EIO, "%s: write failed", from);
  if (rename(from, to) != 0) return hx_errf(err, HX_EIO, "%s: %s", to, strerror(errno));
  return HX_OK;
}

hx_status hx_results_commit(hx_results *r, hx_err *err) {
  if (!r || r->state != 0) return hx_errf(err, HX_EINVAL, "results: run is not open");
  hx_status st = finish_file(r, &r->samples, "samples.csv.partial", "samples.csv", err);
  if (st == HX_OK) st = finish_file(r, &r->rows, "results.csv.partial", "results.csv", err);
  if (st == HX_OK) st = hx_results_context(r, "status", "complete", err);
  if (st == HX_OK) st = write_context(r, err);
  char marker[HX_PATH_MAX];
  if (st == HX_OK) st = path_in(r, "INCOMPLETE", marker, sizeof marker, err);
  if (st == HX_OK && unlink(marker) != 0) st = hx_errf(err, HX_EIO, "%s: %s", marker, strerror(errno));
  if (st != HX_OK) {
    hx_err ignored;
    hx_results_abort(r, "failed", err ? err->msg : "commit failed", &ignored);
    return st;
  }
  r->state = 1;
  return HX_OK;
}

hx_status hx_results_abort(hx_results *r, const char *status, const char *reason, hx_err *err) {
  if (!r || r->state != 0) return hx_errf(err, HX_EINVAL, "results: run is not open");
  r->state = 2;
  if (r->rows) fclose(r->rows), r->rows = NULL;
  if (r->samples) fclose(r->samples), r->samples = NULL;
  const char *names[] = {"results.csv.partial", "samples.csv.partial", "results.csv", "samples.csv"};
  char path[HX_PATH_MAX];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (path_in(r, names[i], path, sizeof path, NULL) == HX_OK) unlink(path);
  char text[1024];
  snprintf(text, sizeof text, "%s: %s\n", status ? status : "failed", reason ? reason : "");
  hx_status st = write_marker(r, text, err);
  hx_status st2 = hx_results_context(r, "status", status ? status : "failed", err);
  if (st2 == HX_OK && reason) st2 = hx_results_context(r, "status_reason", reason, err);
  if (st2 == HX_OK) st2 = write_context(r, err);
  return st != HX_OK ? st : st2;
}

hx_status hx_results_discard(hx_results *r, hx_err *err) {
  if (!r || r->state == 1) return hx_errf(err, HX_EINVAL, "results: run is not open or aborted");
  char path[HX_PATH_MAX];
  if (path_in(r, "results.csv", path, sizeof path, err) != HX_OK) return err ? err->status : HX_EINVAL;
  if (access(path, F_OK) == 0) return hx_errf(err, HX_EINVAL, "%s: the run kept rows: not removed", r->dir);
  if (r->state == 0) hx_results_abort(r, "abandoned", "discarded", NULL); /* closes and deletes the partial files */
  /* what the writer puts in a run directory, and the temporaries of its atomic writes ("<name>.tmp.<pid>") */
  static const char *const names[] = {"INCOMPLETE", "context.csv", "results.csv.partial", "samples.csv.partial",
                                      "samples.csv"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char tmp[HX_PATH_MAX + 32];
    if (path_in(r, names[i], path, sizeof path, NULL) != HX_OK) continue;
    unlink(path);
    hx_tmp_path(tmp, sizeof tmp, path);
    unlink(tmp);
  }
  if (rmdir(r->dir) != 0) return hx_errf(err, HX_EIO, "%s: not removed: %s", r->dir, strerror(errno));
  return HX_OK;
}

void hx_results_close(hx_results *r) {
  if (!r) return;
  if (r->state == 0) hx_results_abort(r, "abandoned", "closed without commit", NULL);
  results_free(r);
}

hx_status hx_results_flush(hx_results *r, hx_err *err) {
  if (!r || r->state != 0) return hx_errf(err, HX_EINVAL, "results: run is not open");
  if (fflush(r->rows) != 0 || fflush(r->samples) != 0)
    return hx_errf(err, HX_EIO, "%s: flushing the partial files failed", r->dir);
  return write_context(r, err);
}

hx_status hx_results_checkpoint(hx_results *r, hx_err *err) {
  HX_TRY(hx_results_flush(r, err));
  off_t a = ftello(r->rows), b = ftello(r->samples);
  if (a < 0 || b < 0) return hx_errf(err, HX_EIO, "%s: position of the partial files: %s", r->dir, strerror(errno));
  r->keep_rows = a;
  r->keep_samples = b;
  r->checkpointed = 1;
  return HX_OK;
}

/* Cut one partial file back to `keep` bytes, sync and close it, and rename it to its final name. */
static hx_status keep_file(hx_results *r, FILE **fp, off_t keep, const char *partial, const char *final, hx_err *err) {
  char from[HX_PATH_MAX], to[HX_PATH_MAX];
  HX_TRY(path_in(r, partial, from, sizeof from, err));
  HX_TRY(path_in(r, final, to, sizeof to, err));
  FILE *f = *fp;
  *fp = NULL;
  int bad = fflush(f) != 0 || ftruncate(fileno(f), keep) != 0 || fsync(fileno(f)) != 0;
  int saved = errno;
  if (fclose(f) != 0 && !bad) bad = 1, saved = errno;
  if (bad) return hx_errf(err, HX_EIO, "%s: keeping the finished rows: %s", from, strerror(saved));
  if (rename(from, to) != 0) return hx_errf(err, HX_EIO, "%s: %s", to, strerror(errno));
  return HX_OK;
}

hx_status hx_results_stop(hx_results *r, const char *status, const char *reason, hx_err *err) {
  if (!r || r->state != 0) return hx_errf(err, HX_EINVAL, "results: run is not open");
  if (!r->checkpointed) return hx_results_abort(r, status, reason, err);
  /* samples first, as the commit does: results.csv present means its samples are too */
  hx_status st = keep_file(r, &r->samples, r->keep_samples, "samples.csv.partial", "samples.csv", err);
  if (st == HX_OK) st = keep_file(r, &r->rows, r->keep_rows, "results.csv.partial", "results.csv", err);
  if (st != HX_OK) {
    hx_err ignored;
    hx_results_abort(r, "failed", err ? err->msg : "keeping the finished rows failed", &ignored);
    return st;
  }
  r->state = 2;
  char text[1024];
  snprintf(text, sizeof text, "%s: %s\n", status ? status : "failed", reason ? reason : "");
  st = write_marker(r, text, err);
  hx_status st2 = hx_results_context(r, "status", status ? status : "failed", err);
  if (st2 == HX_OK && reason) st2 = hx_results_context(r, "status_reason", reason, err);
  if (st2 == HX_OK) st2 = write_context(r, err);
  return st != HX_OK ? st : st2;
}
