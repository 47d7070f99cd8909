/*
 * resdir.c - reading a finished result directory back (results.csv, samples.csv, context.csv), grouping
 * raw samples per row key, the compatibility check of two runs, merging shards, and the JSON export in a
 * schema close to NVBench's (meta, devices, benchmarks -> states -> summaries).
 *
 * Invariant: an hx_run owns every string it points to; rows keep the file order; a run whose INCOMPLETE
 * marker exists or whose status is not "complete" is flagged incomplete, so callers can refuse it or say
 * why (hx_run_incomplete_why). Such a run has results.csv when it was stopped keeping its finished cases
 * (status interrupted, hx_results_stop); one killed outright has only the "*.csv.partial" files, which load
 * with from_partial set (their last case may be cut short); one with neither does not load, and the error
 * says why the run is incomplete. Groups (hx_run_group) are sorted by key and index the samples array,
 * which hx_run_groups sorts by (key, sample index) once.
 */
#include "harness/harness.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RD_PATH 4096
#define RD_LINE 65536
#define RD_FIELDS 16

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void row_free(hx_run_row *r) {
  free(r->workload);
  free(r->pipeline);
  free(r->kernel);
  free(r->variant);
  free(r->metric);
  free(r->unit);
}

void hx_run_free(hx_run *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_rows; i++) row_free(&r->rows[i]);
  for (size_t i = 0; i < r->n_samples; i++) row_free(&r->samples[i]);
  for (size_t i = 0; i < r->n_ctx; i++) {
    free(r->ctx_keys[i]);
    free(r->ctx_vals[i]);
  }
  free(r->rows);
  free(r->samples);
  free(r->ctx_keys);
  free(r->ctx_vals);
  free(r->groups);
  free(r->dir);
  memset(r, 0, sizeof *r);
}

const char *hx_run_context(const hx_run *r, const char *key) {
  for (size_t i = 0; i < r->n_ctx; i++)
    if (strcmp(r->ctx_keys[i], key) == 0) return r->ctx_vals[i];
  return NULL;
}

const char *hx_run_dtype(const hx_run *r) {
  const char *d = hx_run_context(r, "dtype");
  return d && *d ? d : "fp16";
}

const char *hx_run_gemm_ceiling_key(const hx_run *r, char *buf, size_t cap) {
  snprintf(buf, cap, "ceiling_gemm_%s_tflops", hx_run_dtype(r));
  return buf;
}

static const char *incomplete_why(const hx_run *r, char *buf, size_t cap);

/* The status and reason come from the run's context.csv: shown printable (hx_str_printable), as an error would be. */
const char *hx_run_incomplete_why(const hx_run *r, char *buf, size_t cap) {
  if (!cap) return buf;
  char raw[1024];
  incomplete_why(r, raw, sizeof raw);
  hx_str_printable(buf, cap, raw);
  return buf;
}

static const char *incomplete_why(const hx_run *r, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!r->incomplete) return buf;
  const char *status = hx_run_context(r, "status"), *reason = hx_run_context(r, "status_reason");
  const char *done = hx_run_context(r, "cases_done"), *total = hx_run_context(r, "cases_total");
  char cases[96] = ""; /* "N of M cases" when the writer recorded them (the sweep does, at every case) */
  if (done && total) snprintf(cases, sizeof cases, "%.40s of %.40s cases", done, total);
  if (!status) status = "?";
  if (strcmp(status, "interrupted") == 0)
    snprintf(buf, cap, "incomplete run (interrupted after %s%s%s)", cases[0] ? cases : "an unknown number of cases",
             reason && *reason ? ": " : "", reason && *reason ? reason : "");
  else if (strcmp(status, "running") == 0 || strcmp(status, "complete") == 0)
    /* never stopped in order: killed (SIGKILL, a second Ctrl-C, a crash) while writing */
    snprintf(buf, cap, "incomplete run (killed while running%s%s%s)", cases[0] ? ", after " : "", cases,
             r->from_partial ? "; rows read from the .partial files, the last case may be cut short" : "");
  else
    snprintf(buf, cap, "incomplete run (%s%s%s%s%s)", status, reason && *reason ? ": " : "",
             reason && *reason ? reason : "", cases[0] ? ", after " : "", cases);
  return buf;
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static hx_status parse_u64(const char *s, uint64_t *out) {
  return hx_parse_dec_u64(s, UINT64_MAX, out) == 0 ? HX_OK : HX_EFORMAT;
}

/* A finite decimal number, as the writers print it (%.10g): they refuse NaN and infinities (README,
 * results/README.md), so one in a file is damage or a hand edit, and it would poison every mean, ratio and test
 * computed from it; strtod alone would also take blanks, hexadecimal ("0x10" = 16), "infinity" and "nan". */
static hx_status parse_double(const char *s, double *out) {
  char *end;
  const char *d = s + (s[0] == '-' || s[0] == '+');
  if (!((d[0] >= '0' && d[0] <= '9') || d[0] == '.') || strpbrk(s, "xXpP")) return HX_EFORMAT;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return HX_EFORMAT;
  *out = v;
  return HX_OK;
}

/* Open a CSV file for reading with a line buffer of RD_LINE bytes (the caller frees it and closes f). Only a
 * regular file is read (hx_fopen_regular: a FIFO, a socket or a device is refused, "not a regular file", instead
 * of waited on or read). */
static hx_status csv_open(const char *path, FILE **f, char **buf, hx_err *err) {
  *buf = NULL;
  HX_TRY(hx_fopen_regular(path, f, NULL, err));
  *buf = malloc(RD_LINE);
  if (!*buf) {
    fclose(*f);
    return hx_errf(err, HX_ENOMEM, "%s: no memory", path);
  }
  return HX_OK;
}

/* The next non-blank row of an open CSV file into fld/nf: 1 when there is one; 0 at the end of the
 * file (*st = HX_OK) or on a read error (*st and err say "path:line: why"). *line counts every line
 * read, blank ones included, so messages name the line of the file. */
static int csv_next_row(FILE *f, char *buf, char **fld, size_t *nf, size_t *line, const char *path, hx_status *st,
                        hx_err *err) {
  for (;;) {
    hx_err e2;
    hx_status rs = hx_csv_read(f, buf, RD_LINE, fld, RD_FIELDS, nf, &e2);
    ++*line;
    if (rs == HX_EIO) {
      *st = HX_OK;
      return 0;
    }
    if (rs != HX_OK) {
      *st = hx_errf(err, rs, "%s:%zu: %s", path, *line, e2.msg);
      return 0;
    }
    if (!(*nf == 1 && fld[0][0] == '\0')) return 1; /* blank lines are skipped */
  }
}

/* 1 when the file f does not end in a newline: its last record was cut short (a writer killed mid-row); *size is
 * the file's length. f is left at its start. */
static int ends_torn(FILE *f, off_t *size) {
  *size = -1;
  int torn = 0;
  if (fseeko(f, 0, SEEK_END) == 0 && (*size = ftello(f)) > 0 && fseeko(f, -1, SEEK_END) == 0) torn = getc(f) != '\n';
  rewind(f);
  return torn;
}

/* Where the run of NUL bytes that ends the file f (size bytes) starts, or -1 when it ends in another byte: a file
 * system may leave the blocks past a crashed writer's last sync zero-filled. f is left at its start. */
static off_t nul_tail(FILE *f, off_t size) {
  unsigned char blk[4096];
  off_t end = size;
  while (end > 0) {
    const off_t at = end > (off_t)sizeof blk ? end - (off_t)sizeof blk : 0;
    const size_t want = (size_t)(end - at);
    if (fseeko(f, at, SEEK_SET) != 0 || fread(blk, 1, want, f) != want) break;
    size_t i = want;
    while (i > 0 && blk[i - 1] == 0) i--;
    if (i > 0) {
      end = at + (off_t)i;
      break;
    }
    end = at;
  }
  rewind(f);
  return end < size ? end : -1;
}

/* Read one row file. with_sample: the samples layout (a `sample` column before value). torn_ok: a partial file of
 * a killed writer, whose last record, when the file does not end in a newline, is dropped (cut short, it could
 * read as a valid row with a wrong value: "12.5" cut to "12."). */
static hx_status read_rows(const char *path, int with_sample, int torn_ok, hx_run_row **rows, size_t *n,
                           size_t **lines, hx_err *err) {
  FILE *f;
  char *buf;
  const hx_status so = csv_open(path, &f, &buf, err);
  if (so != HX_OK) return so; /* already says why, with the path */
  off_t size = 0; /* set by ends_torn where torn */
  const int torn = torn_ok && ends_torn(f, &size);
  const off_t nul_from = torn ? nul_tail(f, size) : -1; /* a zero-filled tail: torn there */
  const char *want = with_sample ? HX_SAMPLES_HEADER : HX_RESULTS_HEADER;
  size_t want_n = with_sample ? 10 : 9;
  char *fld[RD_FIELDS];
  size_t nf, cap = 0, line = 1;
  hx_status st = hx_csv_read(f, buf, RD_LINE, fld, RD_FIELDS, &nf, err);
  if (st == HX_OK) {
    /* rebuild the header to compare it with the fixed one */
    char hdr[256] = "";
    for (size_t i = 0; i < nf; i++) {
      if (i) strncat(hdr, ",", sizeof hdr - strlen(hdr) - 1);
      strncat(hdr, fld[i], sizeof hdr - strlen(hdr) - 1);
    }
    if (strcmp(hdr, want) != 0) st = hx_errf(err, HX_EFORMAT, "%s: header is not \"%s\"", path, want);
  } else if (st == HX_EIO) {
    st = hx_errf(err, HX_EFORMAT, "%s: empty file (no header)", path);
  } else { /* the header itself is malformed: say how, with the line */
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err ? err->msg : "malformed record");
    st = hx_errf(err, HX_EFORMAT, "%s:1: %s", path, why);
  }
  while (st == HX_OK) {
    int got = csv_next_row(f, buf, fld, &nf, &line, path, &st, err);
    /* the record that ran to the cut end of the file, or into its zero-filled tail: dropped, read or not */
    if (torn && (ftello(f) == size || (nul_from >= 0 && ftello(f) > nul_from))) {
      st = HX_OK;
      break;
    }
    if (!got) break;
    if (nf != want_n) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: %zu fields, expected %zu", path, line, nf, want_n);
      break;
    }
    if (*n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      hx_run_row *nr = realloc(*rows, nc * sizeof *nr);
      if (nr) *rows = nr;
      size_t *nl = realloc(*lines, nc * sizeof *nl);
      if (nl) *lines = nl;
      if (!nr || !nl) {
        st = hx_errf(err, HX_ENOMEM, "%s: no memory for %zu rows", path, nc);
        break;
      }
      cap = nc;
    }
    (*lines)[*n] = line;
    hx_run_row *r = &(*rows)[*n];
    memset(r, 0, sizeof *r);
    uint64_t batch = 0, sample = 0;
    size_t vi = with_sample ? 8 : 7;
    if (parse_u64(fld[1], &r->n_points) != HX_OK || parse_u64(fld[2], &batch) != HX_OK ||
        batch > UINT32_MAX || (with_sample && (parse_u64(fld[7], &sample) != HX_OK || sample > (uint64_t)INT64_MAX)) ||
        parse_double(fld[vi], &r->value) != HX_OK) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: bad number (n_points, batch and sample are decimal counts; value is a finite number)", path, line);
      break;
    }
    if (r->n_points > HX_MAX_POINTS) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: n_points %s is more than any cloud (at most 10^12)", path, line, fld[1]);
      break;
    }
    if (r->value < 0.0 && hx_unit_not_negative(fld[vi + 1])) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: %s %s %s is negative", path, line, fld[6], fld[vi], fld[vi + 1]);
      break;
    }
    r->batch = (uint32_t)batch;
    r->sample = with_sample ? (int64_t)sample : -1;
    r->workload = dupstr(fld[0]);
    r->pipeline = dupstr(fld[3]);
    r->kernel = dupstr(fld[4]);
    r->variant = dupstr(fld[5]);
    r->metric = dupstr(fld[6]);
    r->unit = dupstr(fld[vi + 1]);
    (*n)++;
    if (!r->workload || !r->pipeline || !r->kernel || !r->variant || !r->metric || !r->unit) {
      st = hx_errf(err, HX_ENOMEM, "%s: no memory", path);
      break;
    }
  }
  free(buf);
  fclose(f);
  return st;
}

/* Rows by key, then sample index (-1 in results.csv's rows). */
static int cmp_sample_rows(const void *x, const void *y) {
  const hx_run_row *a = x, *b = y;
  int c = hx_run_row_key_cmp(a, b);
  if (c) return c;
  return (a->sample > b->sample) - (a->sample < b->sample);
}

typedef struct row_at {
  const hx_run_row *row;
  size_t line;
} row_at;
static int cmp_row_at(const void *x, const void *y) {
  const row_at *a = x, *b = y;
  const int c = cmp_sample_rows(a->row, b->row);
  return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Refuse a row file that holds one key (and, in samples.csv, one sample index) twice: every reader would count
 * the measurement twice (a table listing it twice, a gate testing it against itself); the writer never repeats a
 * key, so a repeat is a hand edit or two files joined by hand. lines[i] is row i's line in path. */
static hx_status check_unique_rows(const char *path, const hx_run_row *rows, const size_t *lines, size_t n,
                                   hx_err *err) {
  if (n < 2) return HX_OK;
  row_at *v = malloc(n * sizeof *v);
  if (!v) return hx_errf(err, HX_ENOMEM, "%s: no memory", path);
  for (size_t i = 0; i < n; i++) v[i] = (row_at){&rows[i], lines[i]};
  qsort(v, n, sizeof *v, cmp_row_at);
  hx_status st = HX_OK;
  for (size_t i = 1; i < n && st == HX_OK; i++) {
    const hx_run_row *a = v[i - 1].row, *b = v[i].row;
    if (cmp_sample_rows(a, b) != 0) continue;
    char idx[48] = "";
    if (b->sample >= 0) snprintf(idx, sizeof idx, " sample %lld", (long long)b->sample);
    st = hx_errf(err, HX_EFORMAT, "%s:%zu: the same row as line %zu (%s,%llu,%u,%s,%s,%s,%s%s twice)", path, v[i].line,
                 v[i - 1].line, b->workload, (unsigned long long)b->n_points, (unsigned)b->batch, b->pipeline,
                 b->kernel, b->variant, b->metric, idx);
  }
  free(v);
  return st;
}

/* Read context.csv into r: key,value records, each key once (a repeat is refused: which value counts would
 * depend on the reader, e.g. status complete then interrupted); *schema_line receives schema_version's line. */
static hx_status read_context(hx_run *r, const char *path, size_t *schema_line, hx_err *err) {
  FILE *f;
  char *buf;
  const hx_status so = csv_open(path, &f, &buf, err);
  if (so != HX_OK) return so; /* already says why, with the path */
  char *fld[RD_FIELDS];
  size_t nf, cap = 0, line = 0, *key_line = NULL; /* key_line[i]: the line of ctx_keys[i] */
  hx_status st = HX_OK;
  *schema_line = 0;
  while (csv_next_row(f, buf, fld, &nf, &line, path, &st, err)) {
    if (nf != 2) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: expected key,value", path, line);
      break;
    }
    if (line == 1 && strcmp(fld[0], "key") == 0) continue; /* header */
    size_t seen = 0;
    for (size_t i = 0; i < r->n_ctx && !seen; i++)
      if (strcmp(r->ctx_keys[i], fld[0]) == 0) seen = key_line[i];
    /* merged_from: a merge of merged runs before 2026-12-01 copied the input's and added its own; the first is kept */
    if (seen && strcmp(fld[0], "merged_from") == 0) continue;
    if (seen) {
      st = hx_errf(err, HX_EFORMAT, "%s:%zu: key \"%s\" given twice (first on line %zu)", path, line, fld[0], seen);
      break;
    }
    if (strcmp(fld[0], "schema_version") == 0) *schema_line = line;
    if (r->n_ctx == cap) {
      size_t nc = cap ? 2 * cap : 32;
      char **k = realloc(r->ctx_keys, nc * sizeof *k);
      if (k) r->ctx_keys = k;
      char **v = realloc(r->ctx_vals, nc * sizeof *v);
      if (v) r->ctx_vals = v;
      size_t *kl = realloc(key_line, nc * sizeof *kl);
      if (kl) key_line = kl;
      if (!k || !v || !kl) {
        st = hx_errf(err, HX_ENOMEM, "%s: no memory", path);
        break;
      }
      cap = nc;
    }
    key_line[r->n_ctx] = line;
    r->ctx_keys[r->n_ctx] = dupstr(fld[0]);
    r->ctx_vals[r->n_ctx] = dupstr(fld[1]);
    r->n_ctx++;
    if (!r->ctx_keys[r->n_ctx - 1] || !r->ctx_vals[r->n_ctx - 1]) {
      st = hx_errf(err, HX_ENOMEM, "%s: no memory", path);
      break;
    }
  }
  free(key_line);
  free(buf);
  fclose(f);
  return st;
}

hx_status hx_run_load(hx_run *out, const char *dir, hx_err *err) {
  memset(out, 0, sizeof *out);
  char p[RD_PATH];
  out->dir = dupstr(dir);
  if (!out->dir) return hx_errf(err, HX_ENOMEM, "%s: no memory", dir);
  hx_status st = HX_OK;
  struct stat ds;
  if (stat(dir, &ds) != 0) st = hx_errf(err, HX_EIO, "%s: %s", dir, strerror(errno));
  else if (!S_ISDIR(ds.st_mode)) st = hx_errf(err, HX_EIO, "%s: not a directory", dir);
  if (st != HX_OK) {
    hx_run_free(out);
    return st;
  }
  snprintf(p, sizeof p, "%s/INCOMPLETE", dir);
  out->incomplete = file_exists(p);
  /* Every run directory has a context.csv with a status key from its first moment (hx_results_open).
   * Without it the device/build checks of compare and merge would compare nothing against something
   * and blame "different devices"; say what is wrong instead. */
  snprintf(p, sizeof p, "%s/context.csv", dir);
  if (!file_exists(p)) st = hx_errf(err, HX_EFORMAT, "%s: no context.csv (is this a result directory?)", dir);
  size_t schema_line = 0;
  if (st == HX_OK) st = read_context(out, p, &schema_line, err);
  const char *status = hx_run_context(out, "status");
  if (st == HX_OK && !status) st = hx_errf(err, HX_EFORMAT, "%s: context.csv has no status key (damaged or written by hand)", dir);
  /* The layout of the files is the one HX_RESULTS_SCHEMA names; a file of another (or none, written by hand) would
   * be read as if it were this one. */
  const char *schema = hx_run_context(out, "schema_version");
  if (st == HX_OK && !schema)
    st = hx_errf(err, HX_EFORMAT, "%s: no schema_version key (this build reads schema_version %d)", p,
                 HX_RESULTS_SCHEMA);
  char want_schema[16];
  snprintf(want_schema, sizeof want_schema, "%d", HX_RESULTS_SCHEMA);
  if (st == HX_OK && strcmp(schema, want_schema) != 0)
    st = hx_errf(err, HX_EFORMAT, "%s:%zu: schema_version \"%.40s\" is not the one this build reads (%d)", p,
                 schema_line, schema, HX_RESULTS_SCHEMA);
  if (status && strcmp(status, "complete") != 0) out->incomplete = 1;
  /* the case counts, which merge sums and the reports quote: counts, done <= total, and all done when complete */
  const char *ck[2] = {"cases_total", "cases_done"};
  uint64_t cv[2] = {0, 0};
  int has[2] = {0, 0};
  for (int k = 0; k < 2 && st == HX_OK; k++) {
    const char *v = hx_run_context(out, ck[k]);
    if (!v) continue;
    has[k] = 1;
    if (parse_u64(v, &cv[k]) != HX_OK || cv[k] > (uint64_t)1 << 40)
      st = hx_errf(err, HX_EFORMAT, "%s: %s \"%.40s\" is not a count of cases", p, ck[k], v);
  }
  if (st == HX_OK && has[0] && has[1] && cv[1] > cv[0])
    st = hx_errf(err, HX_EFORMAT, "%s: cases_done %llu is more than cases_total %llu", p, (unsigned long long)cv[1],
                 (unsigned long long)cv[0]);
  if (st == HX_OK && has[0] && has[1] && !out->incomplete && cv[1] != cv[0])
    st = hx_errf(err, HX_EFORMAT, "%s: a complete run with %llu of %llu cases done", p, (unsigned long long)cv[1],
                 (unsigned long long)cv[0]);
  const char *names[2] = {"results.csv", "samples.csv"};
  for (int k = 0; k < 2 && st == HX_OK; k++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[k]);
    if (!file_exists(p)) {
      snprintf(p, sizeof p, "%s/%s.partial", dir, names[k]);
      if (!file_exists(p)) {
        if (k == 0 && out->incomplete) { /* stopped before any case finished, or failed: say which */
          char why[512];
          st = hx_errf(err, HX_EIO, "%s: %s: no finished case to read", dir, hx_run_incomplete_why(out, why, sizeof why));
        } else if (k == 0) {
          st = hx_errf(err, HX_EIO, "%s: no results.csv (is this a result directory?)", dir);
        }
        continue; /* a run without raw samples is still readable */
      }
      out->incomplete = 1;
      out->from_partial = 1;
    }
    size_t *lines = NULL;
    st = k == 0 ? read_rows(p, 0, out->from_partial, &out->rows, &out->n_rows, &lines, err)
                : read_rows(p, 1, out->from_partial, &out->samples, &out->n_samples, &lines, err);
    if (st == HX_OK)
      st = check_unique_rows(p, k == 0 ? out->rows : out->samples, lines, k == 0 ? out->n_rows : out->n_samples, err);
    free(lines);
    /* a run is read for its rows: one without any (a header alone) would plot and compare as empty, silently; but a
     * shard whose sweep had no case (cases_total 0: more shards than cases) is whole, and a merge needs it */
    const char *total = hx_run_context(out, "cases_total");
    if (st == HX_OK && k == 0 && out->n_rows == 0 && !(total && strcmp(total, "0") == 0)) {
      char why[512];
      st = out->incomplete ? hx_errf(err, HX_EFORMAT, "%s: %s: no finished case to read", dir,
                                     hx_run_incomplete_why(out, why, sizeof why))
                           : hx_errf(err, HX_EFORMAT, "%s: no rows (a complete run holds at least one)", p);
    }
  }
  if (st != HX_OK) hx_run_free(out);
  return st;
}

/* ---- grouping ---------------------------------------------------------------------------------- */

int hx_run_row_key_cmp(const hx_run_row *a, const hx_run_row *b) {
  int c;
  if ((c = strcmp(a->pipeline, b->pipeline))) return c;
  if ((c = strcmp(a->kernel, b->kernel))) return c;
  if ((c = strcmp(a->variant, b->variant))) return c;
  if ((c = strcmp(a->workload, b->workload))) return c;
  if (a->n_points != b->n_points) return a->n_points < b->n_points ? -1 : 1;
  if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
  return strcmp(a->metric, b->metric);
}

hx_status hx_run_groups(hx_run *r, hx_err *err) {
  free(r->groups);
  r->groups = NULL;
  r->n_groups = 0;
  if (r->n_samples == 0) return HX_OK;
  qsort(r->samples, r->n_samples, sizeof *r->samples, cmp_sample_rows);
  size_t ng = 0;
  for (size_t i = 0; i < r->n_samples; i++)
    if (i == 0 || hx_run_row_key_cmp(&r->samples[i - 1], &r->samples[i]) != 0) ng++;
  r->groups = malloc(ng * sizeof *r->groups);
  if (!r->groups) return hx_errf(err, HX_ENOMEM, "%s: no memory for %zu groups", r->dir, ng);
  for (size_t i = 0; i < r->n_samples; i++) {
    if (i == 0 || hx_run_row_key_cmp(&r->samples[i - 1], &r->samples[i]) != 0) {
      r->groups[r->n_groups].first = i;
      r->groups[r->n_groups].count = 0;
      r->n_groups++;
    }
    r->groups[r->n_groups - 1].count++;
  }
  return HX_OK;
}

/* ---- compatibility -------------------------------------------------------------------------------- */

/* Context keys that must agree for two runs to be comparable (or mergeable): the hardware and the
 * build. The git commit is NOT here for compare (comparing commits is the point), but merge adds it. */
static const char *const hx_same_device_keys[] = {
    "device", "device_name", "device_cc", "device_sm_count", "device_mem_bytes", "cuda_driver_version",
};
static const char *const hx_same_build_keys[] = {
    "build_type", "c_compiler", "cuda_compiler", "gpu_arch", "have_cuda", "cuda_runtime_version",
    "schema_version",
};

hx_status hx_run_check_compatible(const hx_run *a, const hx_run *b, int same_commit, hx_err *err) {
  /* a setting that changes what every key measures: sweep --dtype (fp16 where a run predates the key) */
  const char *da = hx_run_dtype(a), *db = hx_run_dtype(b);
  if (strcmp(da, db) != 0)
    return hx_errf(err, HX_EINVAL, "different settings: dtype = \"%s\" in %s but \"%s\" in %s", da, a->dir, db,
                   b->dir);
  const char *const *lists[2] = {hx_same_device_keys, hx_same_build_keys};
  const size_t lens[2] = {sizeof hx_same_device_keys / sizeof *hx_same_device_keys,
                          sizeof hx_same_build_keys / sizeof *hx_same_build_keys};
  const char *what[2] = {"different devices", "different builds"};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; i < lens[l]; i++) {
      const char *va = hx_run_context(a, lists[l][i]), *vb = hx_run_context(b, lists[l][i]);
      if (va && vb && strcmp(va, vb) != 0)
        return hx_errf(err, HX_EINVAL, "%s: %s = \"%s\" in %s but \"%s\" in %s", what[l], lists[l][i], va,
                       a->dir, vb, b->dir);
      if ((va == NULL) != (vb == NULL))
        return hx_errf(err, HX_EINVAL, "%s: %s is set only in %s", what[l], lists[l][i], va ? a->dir : b->dir);
    }
  }
  if (same_commit) {
    const char *keys[] = {"git_commit", "git_dirty"};
    for (size_t i = 0; i < 2; i++) {
      const char *va = hx_run_context(a, keys[i]), *vb = hx_run_context(b, keys[i]);
      if (va && vb && strcmp(va, vb) != 0)
        return hx_errf(err, HX_EINVAL, "different builds: %s = \"%s\" in %s but \"%s\" in %s", keys[i], va,
                       a->dir, vb, b->dir);
    }
  }
  return HX_OK;
}

/* ---- writing ------------------------------------------------------------------------------------ */

static int put_row(FILE *f, const hx_run_row *r, int with_sample) {
  int bad = 0;
  bad |= hx_csv_field(f, r->workload);
  bad |= fprintf(f, ",%llu,%u,", (unsigned long long)r->n_points, (unsigned)r->batch) < 0;
  bad |= hx_csv_field(f, r->pipeline);
  bad |= putc(',', f) == EOF;
  bad |= hx_csv_field(f, r->kernel);
  bad |= putc(',', f) == EOF;
  bad |= hx_csv_field(f, r->variant);
  bad |= putc(',', f) == EOF;
  bad |= hx_csv_field(f, r->metric);
  if (with_sample) bad |= fprintf(f, ",%lld", (long long)r->sample) < 0;
  /* %.10g as results.c writes, unless that does not read back as the same finite value (1.797...e308 rounds to a
   * number past DBL_MAX, which the reader refuses): then all 17 digits, which always round-trip */
  char num[40];
  snprintf(num, sizeof num, "%.10g", r->value);
  if (strtod(num, NULL) != r->value) snprintf(num, sizeof num, "%.17g", r->value);
  bad |= fprintf(f, ",%s,", num) < 0;
  bad |= hx_csv_field(f, r->unit);
  bad |= putc('\n', f) == EOF;
  return bad;
}

/* Write a buffer built with open_memstream atomically to dir/name. */
static hx_status flush_mem(FILE *m, char **mem, size_t *len, const char *dir, const char *name, hx_err *err) {
  if (fclose(m) != 0) {
    free(*mem);
    return hx_errf(err, HX_ENOMEM, "%s/%s: could not build the file in memory", dir, name);
  }
  char p[RD_PATH];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  hx_status st = hx_write_file_atomic(p, *mem, *len, err);
  free(*mem);
  *mem = NULL;
  return st;
}

hx_status hx_run_write_rows(const char *dir, const hx_run_row *rows, size_t n, int with_sample, hx_err *err) {
  char *mem = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&mem, &len);
  if (!m) return hx_errf(err, HX_ENOMEM, "%s: open_memstream failed", dir);
  int bad = fprintf(m, "%s\n", with_sample ? HX_SAMPLES_HEADER : HX_RESULTS_HEADER) < 0;
  for (size_t i = 0; i < n; i++) bad |= put_row(m, &rows[i], with_sample);
  if (bad) {
    fclose(m);
    free(mem);
    return hx_errf(err, HX_EIO, "%s: writing rows failed", dir);
  }
  return flush_mem(m, &mem, &len, dir, with_sample ? "samples.csv" : "results.csv", err);
}

hx_status hx_run_write_context(const char *dir, const char *const *keys, const char *const *vals, size_t n,
                               hx_err *err) {
  char *mem = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&mem, &len);
  if (!m) return hx_errf(err, HX_ENOMEM, "%s: open_memstream failed", dir);
  int bad = fputs("key,value\n", m) < 0;
  for (size_t i = 0; i < n; i++) {
    bad |= hx_csv_field(m, keys[i]);
    bad |= putc(',', m) == EOF;
    bad |= hx_csv_field(m, vals[i]);
    bad |= putc('\n', m) == EOF;
  }
  if (bad) {
    fclose(m);
    free(mem);
    return hx_errf(err, HX_EIO, "%s: writing context failed", dir);
  }
  return flush_mem(m, &mem, &len, dir, "context.csv", err);
}

/* ---- JSON --------------------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s) {
  putc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      putc('\\', f);
      putc(*p, f);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p);
    } else {
      putc(*p, f);
    }
  }
  putc('"', f);
}

static void json_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.10g", v);
  else
    fputs("null", f);
}

/* Same benchmark = same (pipeline, kernel, variant); same state = same (workload, n_points, batch). */
static int same_bench(const hx_run_row *a, const hx_run_row *b) {
  return !strcmp(a->pipeline, b->pipeline) && !strcmp(a->kernel, b->kernel) && !strcmp(a->variant, b->variant);
}
static int same_state(const hx_run_row *a, const hx_run_row *b) {
  return same_bench(a, b) && !strcmp(a->workload, b->workload) && a->n_points == b->n_points &&
         a->batch == b->batch;
}

static int cmp_rows_key(const void *x, const void *y) {
  return hx_run_row_key_cmp((const hx_run_row *)x, (const hx_run_row *)y);
}

hx_status hx_run_write_json(hx_run *r, const char *path, hx_err *err) {
  HX_TRY(hx_run_groups(r, err));
  hx_run_row *rows = malloc((r->n_rows ? r->n_rows : 1) * sizeof *rows);
  if (!rows) return hx_errf(err, HX_ENOMEM, "json: no memory");
  if (r->n_rows) memcpy(rows, r->rows, r->n_rows * sizeof *rows); /* shallow: a view, strings stay owned by r */
  qsort(rows, r->n_rows, sizeof *rows, cmp_rows_key);
  char *mem = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&mem, &len);
  if (!f) {
    free(rows);
    return hx_errf(err, HX_ENOMEM, "json: open_memstream failed");
  }
  fputs("{\n  \"meta\": {\"schema\": \"flash3d-bench/nvbench-like\", \"schema_version\": 1, \"source\": ", f);
  json_str(f, r->dir);
  fputs(", \"incomplete\": ", f);
  fputs(r->incomplete ? "true" : "false", f);
  fputs(", \"context\": {", f);
  for (size_t i = 0; i < r->n_ctx; i++) {
    fputs(i ? ", " : "", f);
    json_str(f, r->ctx_keys[i]);
    fputs(": ", f);
    json_str(f, r->ctx_vals[i]);
  }
  fputs("}},\n  \"devices\": [{\"id\": 0", f);
  /* NVBench device fields we can fill from the context file, when the sweep recorded them. */
  const char *dev_keys[][2] = {{"name", "device"},
                               {"number_of_sms", "device_sm_count"},
                               {"l2_cache_size", "device_l2_bytes"},
                               {"global_memory_size", "device_mem_bytes"},
                               {"max_sm_clock_rate_khz", "device_sm_clock_khz"},
                               {"driver_version", "cuda_driver_version"},
                               {"sm_version", "device_cc"}};
  for (size_t i = 0; i < sizeof dev_keys / sizeof dev_keys[0]; i++) {
    const char *v = hx_run_context(r, dev_keys[i][1]);
    if (!v) continue;
    fprintf(f, ", \"%s\": ", dev_keys[i][0]);
    json_str(f, v);
  }
  fputs("}],\n  \"benchmarks\": [", f);
  size_t nb = 0, gi = 0;
  for (size_t i = 0; i < r->n_rows;) {
    size_t j = i;
    while (j < r->n_rows && same_bench(&rows[i], &rows[j])) j++;
    fprintf(f, "%s\n    {\"index\": %zu, \"name\": ", nb ? "," : "", nb);
    char name[1024];
    snprintf(name, sizeof name, "%s/%s/%s", rows[i].pipeline, rows[i].kernel, rows[i].variant);
    json_str(f, name);
    fputs(", \"devices\": [0], \"axes\": [{\"name\": \"workload\", \"type\": \"string\"}, "
          "{\"name\": \"n_points\", \"type\": \"int64\"}, {\"name\": \"batch\", \"type\": \"int64\"}],\n"
          "     \"states\": [",
          f);
    size_t ns = 0;
    for (size_t s = i; s < j;) {
      size_t t = s;
      while (t < j && same_state(&rows[s], &rows[t])) t++;
      fprintf(f, "%s\n      {\"name\": ", ns ? "," : "");
      snprintf(name, sizeof name, "Device=0 workload=%s n_points=%llu batch=%u", rows[s].workload,
               (unsigned long long)rows[s].n_points, (unsigned)rows[s].batch);
      json_str(f, name);
      fputs(", \"device\": 0, \"axis_values\": [{\"name\": \"workload\", \"type\": \"string\", \"value\": ", f);
      json_str(f, rows[s].workload);
      fprintf(f,
              "}, {\"name\": \"n_points\", \"type\": \"int64\", \"value\": \"%llu\"}, "
              "{\"name\": \"batch\", \"type\": \"int64\", \"value\": \"%u\"}],\n       \"summaries\": [",
              (unsigned long long)rows[s].n_points, (unsigned)rows[s].batch);
      for (size_t k = s; k < t; k++) {
        fprintf(f, "%s\n        {\"tag\": ", k > s ? "," : "");
        snprintf(name, sizeof name, "f3d/%s", rows[k].metric);
        json_str(f, name);
        fputs(", \"name\": ", f);
        json_str(f, rows[k].metric);
        fputs(", \"data\": [{\"name\": \"value\", \"type\": \"float64\", \"value\": ", f);
        json_num(f, rows[k].value);
        fputs("}, {\"name\": \"unit\", \"type\": \"string\", \"value\": ", f);
        json_str(f, rows[k].unit);
        fputs("}]}", f);
      }
      fputs("],\n       \"samples\": {", f);
      /* raw samples of this state: groups are sorted with the same key order as rows */
      size_t nsm = 0;
      for (; gi < r->n_groups; gi++) {
        const hx_run_row *g = &r->samples[r->groups[gi].first];
        int c = strcmp(g->pipeline, rows[s].pipeline);
        if (!c) c = strcmp(g->kernel, rows[s].kernel);
        if (!c) c = strcmp(g->variant, rows[s].variant);
        if (!c) c = strcmp(g->workload, rows[s].workload);
        if (!c) c = (g->n_points > rows[s].n_points) - (g->n_points < rows[s].n_points);
        if (!c) c = (g->batch > rows[s].batch) - (g->batch < rows[s].batch);
        if (c > 0) break;
        if (c < 0) continue; /* samples without summary rows are skipped */
        fputs(nsm++ ? ", " : "", f);
        json_str(f, g->metric);
        fputs(": {\"unit\": ", f);
        json_str(f, g->unit);
        fputs(", \"values\": [", f);
        for (size_t q = 0; q < r->groups[gi].count; q++) {
          fputs(q ? ", " : "", f);
          json_num(f, r->samples[r->groups[gi].first + q].value);
        }
        fputs("]}", f);
      }
      fputs("}}", f);
      ns++;
      s = t;
    }
    fputs("]}", f);
    nb++;
    i = j;
  }
  fputs("\n  ]\n}\n", f);
  free(rows);
  if (fclose(f) != 0) {
    free(mem);
    return hx_errf(err, HX_ENOMEM, "json: could not build the file in memory");
  }
  hx_status st = hx_write_file_atomic(path, mem, len, err);
  free(mem);
  return st;
}

/* ---- merge ------------------------------------------------------------------------------------- */

static hx_status parse_shard(const char *s, unsigned *i, unsigned *n) {
  char *end;
  unsigned long a = strtoul(s, &end, 10);
  if (end == s || *end != '/') return HX_EFORMAT;
  const char *q = end + 1;
  unsigned long b = strtoul(q, &end, 10);
  if (end == q || *end || b == 0 || a > b) return HX_EFORMAT;
  *i = (unsigned)a;
  *n = (unsigned)b;
  return HX_OK;
}

/* The sum of a decimal count key over the runs into buf; 0 (nothing written) when a run lacks it or holds
 * something else, so a merged count is never one shard's alone. */
static int sum_key(const hx_run *runs, size_t n, const char *key, char *buf, size_t cap) {
  uint64_t sum = 0;
  for (size_t k = 0; k < n; k++) {
    const char *v = hx_run_context(&runs[k], key);
    uint64_t x;
    if (!v || parse_u64(v, &x) != HX_OK || x > UINT64_MAX - sum) return 0;
    sum += x;
  }
  snprintf(buf, cap, "%llu", (unsigned long long)sum);
  return 1;
}

/* The space-separated lists of a key joined over the runs, in input order (malloc'd; NULL when no run has the
 * key or there is no memory: *nomem says which). */
static char *join_key(const hx_run *runs, size_t n, const char *key, int *nomem) {
  size_t len = 1;
  int any = 0;
  for (size_t k = 0; k < n; k++) {
    const char *v = hx_run_context(&runs[k], key);
    if (v) len += strlen(v) + 1, any = 1;
  }
  if (!any) return NULL;
  char *s = malloc(len);
  if (!s) {
    *nomem = 1;
    return NULL;
  }
  s[0] = '\0';
  for (size_t k = 0; k < n; k++) {
    const char *v = hx_run_context(&runs[k], key);
    if (!v || !*v) continue;
    if (*s) strcat(s, " ");
    strcat(s, v);
  }
  return s;
}

/* The context keys a merge computes over all shards instead of copying the first shard's: counts summed, lists
 * joined (the sweep's per-case keys, app/sweep.c); status and status_reason say whether the merge is whole. */
static const char *const merge_sum_keys[] = {"cases_total", "cases_done"};
static const char *const merge_join_keys[] = {"cases_finished", "gpu_stages_per_case"};

hx_status hx_run_merge(hx_run *runs, size_t n, const char *out_dir, int force, hx_err *err) {
  if (n == 0) return hx_errf(err, HX_EINVAL, "no input directories");
  unsigned shard_n = 0;
  int mixed = 0;      /* shards of different splits (only with --force): coverage cannot be judged */
  int twice = 0;      /* a shard given twice (only with --force) */
  const hx_run *incomplete = NULL; /* the first incomplete input (only with --force) */
  unsigned char seen[4096] = {0}; /* by index modulo N: N/N is 0/N, as the sweep runs it */
  for (size_t k = 0; k < n; k++) {
    if (runs[k].incomplete) {
      if (!force) {
        char why[512];
        return hx_errf(err, HX_EINVAL, "%s: %s (use --force to merge it anyway)", runs[k].dir,
                       hx_run_incomplete_why(&runs[k], why, sizeof why));
      }
      if (!incomplete) incomplete = &runs[k];
    }
    if (k > 0 && !force) HX_TRY(hx_run_check_compatible(&runs[0], &runs[k], 1, err));
    if (runs[k].n_rows && !runs[k].n_samples && !force) /* a sweep writes both: samples.csv is missing */
      return hx_errf(err, HX_EINVAL, "%s: no raw samples (samples.csv missing?): merging would lose them (use --force)",
                     runs[k].dir);
    const char *sh = hx_run_context(&runs[k], "shard");
    unsigned si, sn;
    if (!sh) continue;
    if (parse_shard(sh, &si, &sn) != HX_OK || sn > 4095)
      return hx_errf(err, HX_EFORMAT, "%s: shard \"%s\" is not I/N", runs[k].dir, sh);
    if (shard_n && sn != shard_n) {
      if (!force)
        return hx_errf(err, HX_EINVAL, "%s: shard %s is not of the same split as the first (N = %u)", runs[k].dir,
                       sh, shard_n);
      mixed = 1;
    }
    shard_n = sn;
    if (seen[si % sn]) {
      if (!force) return hx_errf(err, HX_EINVAL, "%s: shard %s given twice", runs[k].dir, sh);
      twice = 1;
    }
    seen[si % sn] = 1;
  }
  /* Whether the inputs make one whole sweep: every shard 0..N-1 of one split, each complete. What --force lets
   * through is merged but marked (status partial, INCOMPLETE), never passed off as a complete run. */
  char missing[256] = "";
  unsigned have = 0;
  if (shard_n && !mixed) {
    size_t ml = 0;
    for (unsigned i = 0; i < shard_n; i++) {
      if (seen[i]) {
        have++;
        continue;
      }
      if (ml + 40 >= sizeof missing) {
        if (!strstr(missing, "...")) strcat(missing, ", ...");
        continue;
      }
      ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%u/%u", ml ? ", " : "", i, shard_n);
      if (i == 0) ml += (size_t)snprintf(missing + ml, sizeof missing - ml, " (= %u/%u)", shard_n, shard_n);
    }
    if (have != shard_n && !force)
      return hx_errf(err, HX_EINVAL, "%u of %u shards given, missing %s (use --force for a partial merge)", have,
                     shard_n, missing);
  }
  char reason[1024] = "";
  if (shard_n && mixed)
    snprintf(reason, sizeof reason, "merged with --force from shards of different splits");
  else if (shard_n && have != shard_n)
    snprintf(reason, sizeof reason, "merged with --force from %u of %u shards, missing %s", have, shard_n, missing);
  else if (twice)
    snprintf(reason, sizeof reason, "merged with --force from a shard given twice");
  else if (incomplete) {
    char why[512];
    snprintf(reason, sizeof reason, "merged with --force from %.300s, an %s", incomplete->dir,
             hx_run_incomplete_why(incomplete, why, sizeof why));
  }
  const int whole = reason[0] == '\0';
  /* concatenate rows (shallow copies; strings stay owned by the runs) and refuse overlaps */
  size_t nr = 0, ns = 0;
  for (size_t k = 0; k < n; k++) {
    nr += runs[k].n_rows;
    ns += runs[k].n_samples;
  }
  hx_run_row *rows = malloc((nr ? nr : 1) * sizeof *rows);
  hx_run_row *samples = malloc((ns ? ns : 1) * sizeof *samples);
  if (!rows || !samples) {
    free(rows);
    free(samples);
    return hx_errf(err, HX_ENOMEM, "no memory for %zu rows", nr + ns);
  }
  nr = ns = 0;
  for (size_t k = 0; k < n; k++) {
    if (runs[k].n_rows) memcpy(rows + nr, runs[k].rows, runs[k].n_rows * sizeof *rows); /* rows may be NULL */
    nr += runs[k].n_rows;
    if (runs[k].n_samples) memcpy(samples + ns, runs[k].samples, runs[k].n_samples * sizeof *samples);
    ns += runs[k].n_samples;
  }
  hx_status st = HX_OK;
  qsort(rows, nr, sizeof *rows, cmp_rows_key);
  /* overlaps are refused even with --force: a run holds each row (and sample) once, and hx_run_load refuses one
   * that does not, so the merged directory would not read back */
  for (size_t i = 1; i < nr && st == HX_OK; i++)
    if (hx_run_row_key_cmp(&rows[i - 1], &rows[i]) == 0)
      st = hx_errf(err, HX_EINVAL, "%s/%s/%s %s n=%llu metric %s appears in two inputs (shards overlap)",
                   rows[i].pipeline, rows[i].kernel, rows[i].variant, rows[i].workload,
                   (unsigned long long)rows[i].n_points, rows[i].metric);
  qsort(samples, ns, sizeof *samples, cmp_sample_rows);
  for (size_t i = 1; i < ns && st == HX_OK; i++)
    if (cmp_sample_rows(&samples[i - 1], &samples[i]) == 0)
      st = hx_errf(err, HX_EINVAL, "%s/%s/%s %s n=%llu sample %lld of %s appears in two inputs (shards overlap)",
                   samples[i].pipeline, samples[i].kernel, samples[i].variant, samples[i].workload,
                   (unsigned long long)samples[i].n_points, (long long)samples[i].sample, samples[i].metric);
  /* a new directory only, --force or not: an existing one may be an input or another run */
  int made = 0;
  if (st == HX_OK && mkdir(out_dir, 0777) != 0)
    st = errno == EEXIST ? hx_errf(err, HX_EINVAL, "%s already exists: merge writes a new directory", out_dir)
                         : hx_errf(err, HX_EIO, "%s: %s", out_dir, strerror(errno));
  else if (st == HX_OK)
    made = 1;
  if (st == HX_OK) st = hx_run_write_rows(out_dir, rows, nr, 0, err);
  if (st == HX_OK) st = hx_run_write_rows(out_dir, samples, ns, 1, err);
  if (st == HX_OK) {
    /* the first run's context without its shard key, plus where the rows came from; the case counts and lists
     * over all shards (merge_sum_keys, merge_join_keys); status complete only for a whole merge */
    size_t nc = runs[0].n_ctx, nk = sizeof merge_sum_keys / sizeof *merge_sum_keys,
           nj = sizeof merge_join_keys / sizeof *merge_join_keys;
    const char **keys = malloc((nc + nk + nj + 4) * sizeof *keys), **vals = malloc((nc + nk + nj + 4) * sizeof *vals);
    char sums[2][24], *joined[2] = {NULL, NULL};
    int have_sum[2], nomem = 0;
    for (size_t i = 0; i < nk; i++) have_sum[i] = sum_key(runs, n, merge_sum_keys[i], sums[i], sizeof sums[i]);
    /* without every shard the sweep's total is not known: cases_total would be the given shards' only */
    if (!whole && shard_n && have != shard_n) have_sum[0] = 0;
    for (size_t i = 0; i < nj; i++) joined[i] = join_key(runs, n, merge_join_keys[i], &nomem);
    char *from = NULL;
    size_t from_len = 1;
    for (size_t k = 0; k < n; k++) from_len += strlen(runs[k].dir) + 1;
    from = malloc(from_len);
    if (!keys || !vals || !from || nomem) {
      st = hx_errf(err, HX_ENOMEM, "no memory");
    } else {
      size_t m = 0;
      int put_status = 0, put_sum[2] = {0, 0}, put_join[2] = {0, 0};
      for (size_t i = 0; i < nc; i++) {
        const char *key = runs[0].ctx_keys[i], *val = runs[0].ctx_vals[i];
        if (!strcmp(key, "shard") || !strcmp(key, "status_reason") || !strcmp(key, "merged_from")) continue;
        if (!strcmp(key, "status")) val = whole ? "complete" : "partial", put_status = 1;
        int drop = 0;
        for (size_t j = 0; j < nk; j++)
          if (!strcmp(key, merge_sum_keys[j])) val = sums[j], drop = !have_sum[j], put_sum[j] = 1;
        for (size_t j = 0; j < nj; j++)
          if (!strcmp(key, merge_join_keys[j])) val = joined[j], drop = !joined[j], put_join[j] = 1;
        if (drop) continue;
        keys[m] = key;
        vals[m++] = val;
      }
      if (!put_status) keys[m] = "status", vals[m++] = whole ? "complete" : "partial";
      if (!whole) keys[m] = "status_reason", vals[m++] = reason;
      for (size_t j = 0; j < nk; j++)
        if (!put_sum[j] && have_sum[j]) keys[m] = merge_sum_keys[j], vals[m++] = sums[j];
      for (size_t j = 0; j < nj; j++)
        if (!put_join[j] && joined[j]) keys[m] = merge_join_keys[j], vals[m++] = joined[j];
      from[0] = '\0';
      for (size_t k = 0; k < n; k++) {
        if (k) strcat(from, ";");
        strcat(from, runs[k].dir);
      }
      keys[m] = "merged_from";
      vals[m++] = from;
      st = hx_run_write_context(out_dir, keys, vals, m, err);
    }
    /* a merge that is not whole keeps an INCOMPLETE file, as every run that did not finish does */
    if (st == HX_OK && !whole) {
      char p[RD_PATH], text[1100];
      snprintf(p, sizeof p, "%s/INCOMPLETE", out_dir);
      snprintf(text, sizeof text, "partial: %s\n", reason);
      st = hx_write_file_atomic(p, text, strlen(text), err);
    }
    free((void *)keys);
    free((void *)vals);
    free(from);
    for (size_t i = 0; i < nj; i++) free(joined[i]);
  }
  /* a failed merge leaves nothing: what it wrote is removed with the directory it created (the files are written
   * whole or not at all: hx_write_file_atomic) */
  if (st != HX_OK && made) {
    static const char *const names[] = {"results.csv", "samples.csv", "context.csv", "INCOMPLETE"};
    char p[RD_PATH];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
      snprintf(p, sizeof p, "%s/%s", out_dir, names[i]);
      unlink(p);
    }
    rmdir(out_dir);
  }
  free(rows);
  free(samples);
  return st;
}
