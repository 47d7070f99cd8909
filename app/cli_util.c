/*
 * cli_util.c - helpers shared by the subcommands (see cli.h): error lines, number parsing, and the
 * build/host/device/git keys every run records in context.csv, and the options and input reading that
 * `psh` and `pool` share (including the atomic write of their CSV).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "f3d_config.h"
#include "app/cli.h"
#include "app/stop.h"
#include "kernels/kernels.h"
#include "workloads/workloads.h"

#ifndef F3D_SOURCE_ROOT
#define F3D_SOURCE_ROOT "."
#endif

void f3d_fail(const char *what, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "f3dbench: %s: ", what);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void f3d_fail_msg(const char *what, const char *msg) {
  const size_t k = strlen(what);
  /* library messages already start with their module or file ("psh: ...", "a.ply: ..."): not twice */
  if (strncmp(msg, what, k) == 0 && msg[k] == ':') fprintf(stderr, "f3dbench: %s\n", msg);
  else fprintf(stderr, "f3dbench: %s: %s\n", what, msg);
}

/* Numbers are decimal digits only: strtoull and strtod would also take leading blanks, a sign (" -1" wraps
 * to 2^64 - 1), octal ("010" = 8) and hexadecimal, none of which a user means. Counts go through
 * hx_parse_dec_u64; a number strtod reads must start with a digit or '.' and hold no hexadecimal mark. */
static int decimal_number(const char *s, const char *marks) {
  return s && ((*s >= '0' && *s <= '9') || *s == '.') && !strpbrk(s, marks);
}

int f3d_parse_u64(const char *s, uint64_t *out) { return hx_parse_dec_u64(s, UINT64_MAX, out); }

int f3d_parse_bytes(const char *s, uint64_t *out) {
  if (!decimal_number(s, "xXpPeE")) return -1;
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v)) return -1;
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1.0},          {"K", 1024.0},           {"KiB", 1024.0},           {"M", 1048576.0},
               {"MiB", 1048576.0}, {"G", 1073741824.0},     {"GiB", 1073741824.0},     {"T", 1099511627776.0},
               {"TiB", 1099511627776.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(end, units[i].suffix) != 0) continue;
    v *= units[i].scale;
    if (v < 1.0 || v > 9.0e15 || v != floor(v)) return -1; /* whole bytes, well inside uint64 and double */
    *out = (uint64_t)v;
    return 0;
  }
  return -1;
}

int f3d_parse_count(const char *s, uint64_t *out) {
  if (!decimal_number(s, "xXpP")) return -1; /* no hexadecimal floats either */
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s) return -1;
  double scale = 1.0;
  if (*end == 'k' || *end == 'K') scale = 1e3, end++;
  else if (*end == 'M' || *end == 'm') scale = 1e6, end++;
  if (*end) return -1;
  v *= scale;
  /* Only whole counts: "1.5k" is 1500, "1.2345k" is refused rather than silently rounded. */
  if (!isfinite(v) || v < 0.0 || v > 1e15 || v != floor(v)) return -1;
  *out = (uint64_t)v;
  return 0;
}

int f3d_parse_nonneg_double(const char *s, double *out) {
  if (!decimal_number(s, "xXpP")) return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return -1; /* no sign is possible: v >= 0 */
  *out = v;
  return 0;
}

int f3d_parse_pos_double(const char *s, double *out) {
  double v;
  if (f3d_parse_nonneg_double(s, &v) || v <= 0.0) return -1;
  *out = v;
  return 0;
}

int f3d_opt_count(const char *what, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v = 0;
  if (f3d_parse_count(arg, &v) == 0 && v >= lo && v <= hi) return *out = v, 0;
  return f3d_fail(what, "%s '%s': a whole count from %llu to %llu (digits, or with a k or M suffix: 64k, 1.5M)", opt,
                  arg, (unsigned long long)lo, (unsigned long long)hi), 2;
}

int f3d_opt_u64(const char *what, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v = 0;
  if (f3d_parse_u64(arg, &v) == 0 && v >= lo && v <= hi) return *out = v, 0;
  return f3d_fail(what, "%s '%s': an integer from %llu to %llu (decimal digits)", opt, arg, (unsigned long long)lo,
                  (unsigned long long)hi), 2;
}

int f3d_opt_word(const char *what, const char *opt, const char *arg, const char *const *words, size_t n, int *out) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(arg, words[i]) == 0) return *out = (int)i, 0;
  char list[256] = "";
  for (size_t i = 0, len = 0; i < n && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i]);
  return f3d_fail(what, "%s '%s': %s%s", opt, arg, n > 2 ? "one of " : "", list), 2;
}

void f3d_psh_reach_note(const char *what, const psh_in *in, const psh_params *p, uint64_t placed_overflow) {
  uint32_t worst = 0, reach = p->nb, bits = 0;
  for (uint32_t c = 0; c < in->nclouds; c++) {
    uint32_t b = 0;
    const uint32_t r = psh_reachable_buckets(in, p, c, &b);
    if (in->cloud_offset[c] < in->cloud_offset[c + 1] && r < reach) worst = c, reach = r, bits = b;
  }
  if (reach >= p->nb) return;
  fprintf(stderr,
          "f3dbench: %s: note: cloud %u's voxel indices are %u bits wide at --voxel %g, so %s reaches %u of its %u "
          "buckets, probes included; the overflow policy placed %llu points in all, in bucket order, without "
          "locality (%s or a finer --voxel reaches more)\n",
          what, worst, bits, (double)p->voxel, psh_hash_name(p->hash), reach, p->nb, (unsigned long long)placed_overflow,
          p->hash == PSH_XOR_MOD || p->hash == PSH_XOR_DIV ? "a Z-order hash" : "fewer --buckets");
}

int f3d_psh_option(int c, const char *arg, const char *what, psh_params *p, const char **variant, int *gpu,
                   const char **out_path) {
  uint64_t u;
  double d;
  switch (c) {
  case 'H': {
    const char *names[PSH_HASH_COUNT];
    for (int h = 0; h < PSH_HASH_COUNT; h++) names[h] = psh_hash_name((psh_hash)h);
    int h = 0;
    if (f3d_opt_word(what, "--hash", arg, names, PSH_HASH_COUNT, &h)) return 2;
    p->hash = (psh_hash)h;
    return 0;
  }
  case 'S': /* the kernels tile a bucket by 16 rows; past 2^20 rows a bucket's arrays outgrow their indices */
    if (f3d_parse_u64(arg, &u) || u == 0 || u % 16 || u > (1u << 20))
      return f3d_fail(what, "--bucket-size '%s': a multiple of 16 from 16 to %u", arg, 1u << 20), 2;
    p->cap = (uint32_t)u;
    return 0;
  case 'b':
    if (f3d_parse_count(arg, &u) || u > PSH_NB_MAX)
      return f3d_fail(what, "--buckets '%s': buckets per cloud, 0 (the default: from the largest cloud) to %u "
                      "(k/M suffixes)", arg, PSH_NB_MAX), 2;
    p->nb = (uint32_t)u;
    return 0;
  case 'v': /* the kernels use it as a float: a value that rounds to 0 or Inf there is refused too */
    if (f3d_parse_pos_double(arg, &d) || d > (double)FLT_MAX || !((float)d > 0.0f))
      return f3d_fail(what, "--voxel '%s': a voxel edge in metres, a decimal number from %g to %g", arg,
                      (double)FLT_TRUE_MIN, (double)FLT_MAX), 2;
    p->voxel = (float)d;
    return 0;
  case 'p':
    if (f3d_opt_u64(what, "--probes", arg, 0, PSH_NPROBE_MAX, &u)) return 2;
    p->nprobe = (uint32_t)u;
    return 0;
  case 'V':
    if (!psh_variant_find(arg)) return f3d_fail(what, "--variant '%s': not a PSH variant (--help lists them)", arg), 2;
    *variant = arg;
    return 0;
  case 'd': {
    static const char *const devices[] = {"cpu", "gpu"};
    return f3d_opt_word(what, "--device", arg, devices, 2, gpu);
  }
  case 's':
    if (f3d_opt_u64(what, "--seed", arg, 0, UINT64_MAX, &u)) return 2;
    p->seed = u;
    return 0;
  case 'o': *out_path = arg; return 0;
  default: return -1;
  }
}

int f3d_psh_inputs_check(const char *what, const char *out_path, int argc, char **argv, int optind_) {
  if (!out_path) return f3d_fail(what, "--out FILE is required"), 2;
  if (optind_ >= argc) return f3d_fail(what, "no INPUT given"), 2;
  if ((size_t)(argc - optind_) >= (1u << 16)) return f3d_fail(what, "too many inputs"), 2;
  return f3d_out_not_input(what, out_path, argv + optind_, (size_t)(argc - optind_));
}

int f3d_out_not_input(const char *what, const char *out_path, char *const *inputs, size_t n) {
  struct stat o, s;
  /* a path that names no regular file yet cannot be an input; stat follows links, as the write does */
  if (strcmp(out_path, "-") == 0 || stat(out_path, &o) != 0 || !S_ISREG(o.st_mode)) return 0;
  for (size_t i = 0; i < n; i++)
    if (stat(inputs[i], &s) == 0 && s.st_dev == o.st_dev && s.st_ino == o.st_ino)
      return f3d_fail(what, "--out %s is the input %s: the CSV would replace the cloud", out_path, inputs[i]), 2;
  return 0;
}

void f3d_warn_dropped(const char *input, size_t n) {
  fprintf(stderr, "f3dbench: %s: %zu point%s with non-finite coordinates dropped\n", input, n, n == 1 ? "" : "s");
}

int f3d_read_batch(wl_cloud **clouds, uint32_t *nclouds, wl_batch *batch, size_t *nmax, char **inputs, uint32_t B,
                   const char *what) {
  hx_err err = {HX_OK, ""};
  *clouds = calloc(B, sizeof **clouds);
  if (!*clouds) return f3d_fail(what, "out of memory"), 1;
  *nclouds = B;
  *nmax = 0;
  for (uint32_t b = 0; b < B; b++) {
    wl_cloud *cl = &(*clouds)[b];
    if (wl_read(cl, inputs[b], WL_FMT_AUTO, &err) != HX_OK) return f3d_fail_msg(what, err.msg), 1; /* "PATH: ..." */
    if (cl->dropped_nonfinite) f3d_warn_dropped(inputs[b], cl->dropped_nonfinite);
    *nmax = cl->n > *nmax ? cl->n : *nmax;
  }
  if (wl_batch_from_clouds(batch, *clouds, B, &err) != HX_OK) return f3d_fail_msg(what, err.msg), 1;
  return 0;
}

/* Standard output is the output for "-" and for a path written in place that names what it is (/dev/stdout, or a
 * FIFO the shell also redirected stdout to), whatever that is (a regular file too: `--out /dev/stdout > f` opened
 * anew would truncate f and write from its start under the summary): the CSV goes there unmixed and the commands
 * print their summary on stderr. */
static int is_stdout(const char *path) {
  struct stat a, b;
  return strcmp(path, "-") == 0 || (stat(path, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev &&
                                    a.st_ino == b.st_ino);
}

FILE *f3d_out_open(const char *what, const char *path, char **tmp) {
  *tmp = NULL;
  hx_err err = {HX_OK, ""};
  int in_place = 0;
  char dest[4096]; /* path, or the regular file its symbolic link ends at: the temporary goes beside it */
  if (strcmp(path, "-") != 0 && hx_out_resolve(path, dest, sizeof dest, &in_place, &err) != HX_OK)
    return f3d_fail_msg(what, err.msg), NULL;
  if (in_place || strcmp(path, "-") == 0) {
    if (is_stdout(path)) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) f3d_fail(what, "%s: cannot open for writing: %s", path, strerror(errno));
    return f;
  }
  size_t cap = strlen(dest) + 32;
  *tmp = malloc(cap);
  if (!*tmp) return f3d_fail(what, "out of memory"), NULL;
  hx_tmp_path(*tmp, cap, dest);
  (void)f3d_tmp_add(*tmp, F3D_TMP_FILE); /* a signal removes it (stop.h); dropped once renamed or removed */
  FILE *f = fopen(*tmp, "w");
  if (!f) { /* the folder named, not the temporary in it */
    const int e = errno;
    char folder[4096];
    f3d_parent_dir(folder, sizeof folder, dest);
    f3d_fail(what, "%s: cannot write in %s: %s", path, folder, strerror(e));
    f3d_tmp_drop(*tmp);
    free(*tmp);
    *tmp = NULL;
  }
  return f;
}

/* Standard output is flushed, never closed; anything else opened is closed. 0 or an errno. */
static int out_finish(FILE *f) {
  if (f == stdout) return fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
  return fclose(f) != 0 ? errno : 0;
}

int f3d_out_discard(FILE *f, char *tmp, int rc) {
  (void)out_finish(f);
  if (tmp) remove(tmp), f3d_tmp_drop(tmp);
  free(tmp);
  return rc;
}

int f3d_out_close(const char *what, FILE *f, char *tmp, const char *path, int bad) {
  /* the reason of the first failure: a write (ferror, e.g. ENOSPC), the flush in fclose, or the rename */
  int e = bad && ferror(f) ? errno : 0;
  const int e_close = out_finish(f);
  if (e_close && !e) e = e_close, bad = 1;
  const char *step = "write";
  if (!bad && tmp) {
    /* the file replaced is the one the temporary is named after ("<dest>.tmp.<pid>", f3d_out_open): path itself,
     * or the regular file its symbolic link ends at */
    char suffix[32];
    const size_t sl = (size_t)hx_tmp_path(suffix, sizeof suffix, ""); /* ".tmp.<pid>" */
    char *dest = strdup(tmp);
    if (dest) dest[strlen(dest) - sl] = '\0';
    if (!dest || rename(tmp, dest) != 0) e = dest ? errno : ENOMEM, bad = 1, step = "rename of the finished file";
    free(dest);
  }
  if (tmp) f3d_tmp_drop(tmp); /* renamed, or removed just below */
  if (bad) {
    const char *left = tmp ? "nothing written" : "written in place: incomplete";
    if (tmp) remove(tmp);
    free(tmp);
    return f3d_fail(what, "%s: %s failed%s%s (%s)", strcmp(path, "-") == 0 ? "standard output" : path, step,
                    e ? ": " : "", e ? strerror(e) : "", left),
           1;
  }
  free(tmp);
  return 0;
}

int f3d_out_folder(const char *path, char *parent, size_t cap) {
  f3d_parent_dir(parent, cap, path);
  struct stat ps;
  if (!path[0] || stat(parent, &ps) != 0) return ENOENT;
  if (!S_ISDIR(ps.st_mode)) return ENOTDIR;
  return access(parent, W_OK | X_OK) == 0 ? 0 : errno ? errno : EACCES;
}

void f3d_parent_dir(char *out, size_t cap, const char *path) {
  snprintf(out, cap, "%s", path);
  size_t n = strlen(out);
  while (n > 1 && out[n - 1] == '/') out[--n] = '\0'; /* "out/" names "out" */
  char *slash = strrchr(out, '/');
  if (!slash) snprintf(out, cap, ".");
  else if (slash == out) out[1] = '\0';
  else *slash = '\0';
}

const char *f3d_cut_path(char buf[128], const char *s) {
  const size_t n = strlen(s);
  if (n <= 120) return s;
  const char *t = s + n - 117;
  while (((unsigned char)*t & 0xc0) == 0x80) t++;
  snprintf(buf, 128, "...%s", t);
  return buf;
}

hx_status f3d_save_dir_check(const char *dir, hx_err *err) {
  struct stat st;
  char db[128], pb[128];
  const char *d = f3d_cut_path(db, dir);
  if (!dir[0]) return hx_errf(err, HX_EINVAL, "an empty directory name");
  if (stat(dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return hx_errf(err, HX_EINVAL, "%s: not a directory", d);
    if (access(dir, W_OK | X_OK) != 0) return hx_errf(err, HX_EIO, "%s: %s", d, strerror(errno));
    return HX_OK;
  }
  if (errno != ENOENT) return hx_errf(err, HX_EIO, "%s: %s", d, strerror(errno));
  if (lstat(dir, &st) == 0) return hx_errf(err, HX_EINVAL, "%s: a link to nothing (mkdir would fail)", d);
  char parent[4096];
  const int e = f3d_out_folder(dir, parent, sizeof parent);
  if (e == ENOENT || e == ENOTDIR)
    return hx_errf(err, HX_EIO, "%s: its parent %s is not an existing directory", d, f3d_cut_path(pb, parent));
  if (e) return hx_errf(err, HX_EIO, "%s: cannot create it in %s: %s", d, f3d_cut_path(pb, parent), strerror(e));
  return HX_OK;
}

hx_status f3d_stage_open(f3d_stage *st, const char *dir, const char *tag, hx_err *err) {
  memset(st, 0, sizeof *st);
  if ((size_t)snprintf(st->dir, sizeof st->dir, "%s", dir) >= sizeof st->dir)
    return hx_errf(err, HX_EINVAL, "%.80s...: a path too long", dir);
  /* a signal removes the staging folder and a DIR this save made (stop.h), as f3d_stage_abort does; DIR is registered
   * once made, so a signal never rmdirs an empty folder the user had (one arriving before leaves DIR, empty) */
  if (mkdir(dir, 0777) == 0) st->made_dir = 1, (void)f3d_tmp_add(dir, F3D_TMP_EMPTY_DIR);
  else if (errno != EEXIST) return hx_errf(err, HX_EIO, "%s: cannot create: %s", dir, strerror(errno));
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return hx_errf(err, HX_EINVAL, "%s: not a directory", dir);
  snprintf(st->stage, sizeof st->stage, "%s/.%s-save.XXXXXX", dir, tag);
  if (!mkdtemp(st->stage)) { /* the user's folder named, not the staging folder inside it */
    const int e = errno;
    if (st->made_dir) (void)rmdir(dir), f3d_tmp_drop(dir);
    st->made_dir = 0;
    return hx_errf(err, HX_EIO, "%s: cannot write in it: %s", dir, strerror(e));
  }
  (void)f3d_tmp_add(st->stage, F3D_TMP_DIR); /* its name is made by mkdtemp: registered as soon as it exists */
  return HX_OK;
}

hx_status f3d_stage_path(f3d_stage *st, char *path, size_t cap, const char *name, hx_err *err) {
  if (st->n >= F3D_STAGE_MAX) return hx_errf(err, HX_EINVAL, "%s: more than %d files to save", st->dir, F3D_STAGE_MAX);
  if (strlen(name) >= sizeof st->name[0]) return hx_errf(err, HX_EINVAL, "%s: a file name too long: %s", st->dir, name);
  snprintf(st->name[st->n], sizeof st->name[0], "%s", name);
  if ((size_t)snprintf(path, cap, "%s/%s", st->stage, st->name[st->n]) >= cap)
    return hx_errf(err, HX_EINVAL, "%s: a path too long", st->dir);
  st->n++;
  return HX_OK;
}

void f3d_stage_abort(f3d_stage *st) {
  char path[4300];
  for (int i = 0; i < st->n; i++) {
    snprintf(path, sizeof path, "%s/%s", st->stage, st->name[i]);
    (void)unlink(path);
  }
  (void)rmdir(st->stage);
  f3d_tmp_drop(st->stage);
  if (st->made_dir) (void)rmdir(st->dir);
  f3d_tmp_drop(st->dir);
}

hx_status f3d_stage_commit(f3d_stage *st, hx_err *err) {
  char path[4300], from[4300];
  struct stat sb;
  for (int i = 0; i < st->n; i++) { /* every destination free for a file before the first rename */
    snprintf(path, sizeof path, "%s/%s", st->dir, st->name[i]);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      f3d_stage_abort(st);
      return hx_errf(err, HX_EINVAL, "%s: is a directory: nothing saved", path);
    }
  }
  for (int i = 0; i < st->n; i++) {
    snprintf(from, sizeof from, "%s/%s", st->stage, st->name[i]);
    snprintf(path, sizeof path, "%s/%s", st->dir, st->name[i]);
    if (rename(from, path) != 0) {
      const int e = errno;
      st->made_dir = 0; /* files of this save are in it */
      f3d_stage_abort(st);
      return hx_errf(err, HX_EIO, "%s: cannot move the saved file into place: %s (%d of %d in place)", path,
                     strerror(e), i, st->n);
    }
  }
  (void)rmdir(st->stage);
  f3d_tmp_drop(st->stage), f3d_tmp_drop(st->dir); /* saved: a signal from here on leaves DIR */
  return HX_OK;
}

/* err's message with every "STAGE/" in it (st's staging folder) put as "DIR/": the file it was staged for. */
static void stage_names(const f3d_stage *st, hx_err *err) {
  char out[sizeof err->msg], from[4300];
  const size_t fl = (size_t)snprintf(from, sizeof from, "%s/", st->stage);
  size_t o = 0;
  for (const char *m = err->msg; *m && o + 1 < sizeof out;) {
    if (strncmp(m, from, fl) == 0) {
      const int w = snprintf(out + o, sizeof out - o, "%s/", st->dir);
      o = w > 0 && (size_t)w < sizeof out - o ? o + (size_t)w : sizeof out - 1;
      m += fl;
    } else {
      out[o++] = *m++;
    }
  }
  out[o] = '\0';
  memcpy(err->msg, out, o + 1);
}

hx_status f3d_stage_save(const char *dir, const char *tag, f3d_stage_files_fn files, void *arg, hx_err *err) {
  f3d_stage *st = calloc(1, sizeof *st);
  if (!st) return hx_errf(err, HX_ENOMEM, "%s: out of memory", dir);
  hx_status s = f3d_stage_open(st, dir, tag, err);
  if (s == HX_OK && (s = files(st, arg, err)) != HX_OK) {
    stage_names(st, err);
    hx_err e2;
    hx_errf(&e2, s, "%s: %s", dir, err->msg);
    *err = e2;
    f3d_stage_abort(st);
  } else if (s == HX_OK) {
    s = f3d_stage_commit(st, err);
  }
  free(st);
  return s;
}

hx_status f3d_npy_write(const char *path, const char *descr, size_t size, const void *data, int ndim,
                        const size_t *shape, hx_err *err) {
  if (ndim < 1 || ndim > 4) return hx_errf(err, HX_EINVAL, "%s: %d dimensions (1..4 supported)", path, ndim);
  if (size != 2 && size != 4) return hx_errf(err, HX_EINVAL, "%s: elements of %zu bytes (2 or 4)", path, size);
  char dict[256];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  size_t count = 1;
  for (int d = 0; d < ndim; d++) {
    /* NumPy's own form: "(n,)" for one dimension, "(a, b)" for more */
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%zu%s", shape[d],
                    ndim == 1 ? "," : d + 1 < ndim ? ", " : "");
    count *= shape[d];
  }
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  /* magic (6) + version (2) + header length (2) + dict padded with spaces and a final '\n' to a multiple of 64 */
  const size_t head = ((10 + (size_t)len + 1 + 63) / 64) * 64;
  const size_t total = head + count * size;
  unsigned char *buf = malloc(total);
  if (!buf) return hx_errf(err, HX_ENOMEM, "%s: %zu bytes", path, total);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  const size_t hl = head - 10;
  buf[8] = (unsigned char)(hl & 0xFF);
  buf[9] = (unsigned char)(hl >> 8);
  memset(buf + 10, ' ', hl);
  memcpy(buf + 10, dict, (size_t)len);
  buf[head - 1] = '\n';
  for (size_t i = 0; i < count; i++) { /* each element little endian */
    uint32_t u = 0;
    if (size == 4) memcpy(&u, (const unsigned char *)data + i * 4, 4);
    else {
      uint16_t h;
      memcpy(&h, (const unsigned char *)data + i * 2, 2);
      u = h;
    }
    unsigned char *q = buf + head + i * size;
    for (size_t b = 0; b < size; b++) q[b] = (unsigned char)(u >> (8 * b));
  }
  hx_status st = hx_write_file_atomic(path, buf, total, err);
  free(buf);
  return st;
}

/* Run a git command in the source tree and return its first output line ("" on any failure). */
static void git_line(const char *args, char *out, size_t cap) {
  char cmd[4096];
  out[0] = '\0';
  snprintf(cmd, sizeof cmd, "git -C '%s' %s 2>/dev/null", F3D_SOURCE_ROOT, args);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  if (!fgets(out, (int)cap, p)) out[0] = '\0';
  int c;
  while ((c = fgetc(p)) != EOF) /* drain so git is not killed by SIGPIPE */
    ;
  int rc = pclose(p);
  out[strcspn(out, "\r\n")] = '\0';
  if (rc != 0) out[0] = '\0';
}

/* F3D_GIT_COMMIT (and F3D_GIT_DIRTY=yes|no) from the environment: the commit of a source tree whose own
 * git cannot tell it (a copy sent to another machine, with no .git or with a stale one); ./f3d sets them
 * from git when git works and the caller did not. A value that is not a plain name (letters, digits,
 * '.', '_', '-', at most 40) is ignored. */
static void git_from_env(char *hash, size_t cap, int *dirty) {
  const char *v = getenv("F3D_GIT_COMMIT");
  size_t len = v ? strlen(v) : 0;
  if (len == 0 || len > 40 || len >= cap || strspn(v, "0123456789abcdefABCDEF"
                                                      "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ._-") != len)
    return;
  memcpy(hash, v, len + 1);
  const char *d = getenv("F3D_GIT_DIRTY");
  *dirty = d && strcmp(d, "yes") == 0 ? 1 : d && strcmp(d, "no") == 0 ? 0 : -1;
}

void f3d_git_state(char *hash, size_t cap, int *dirty) {
  /* An explicit F3D_GIT_COMMIT wins over git: a tree copied to a GPU machine can carry a .git of an
   * older commit (seen on the device machines: HEAD of the day's first copy, "dirty"), which would
   * name the wrong source. */
  hash[0] = '\0';
  *dirty = -1;
  git_from_env(hash, cap, dirty);
  if (hash[0]) return;
  git_line("rev-parse --short=7 HEAD", hash, cap);
  if (!hash[0]) return;
  /* One line of porcelain output is enough to know the tree is dirty; untracked files do not count
   * (build directories, results) since they do not change what was compiled. */
  char line[512];
  char check[64];
  git_line("rev-parse --is-inside-work-tree", check, sizeof check);
  if (strcmp(check, "true") != 0) return;
  git_line("status --porcelain --untracked-files=no", line, sizeof line);
  *dirty = line[0] ? 1 : 0;
}

hx_status f3d_context_build(hx_results *r, hx_err *err) {
  char hash[64];
  int dirty;
  f3d_git_state(hash, sizeof hash, &dirty);
  HX_TRY(hx_results_context(r, "f3d_version", F3D_VERSION, err));
  HX_TRY(hx_results_context(r, "git_commit", hash[0] ? hash : "unknown", err));
  HX_TRY(hx_results_context(r, "git_dirty", dirty < 0 ? "unknown" : dirty ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "build_type", F3D_BUILD_TYPE, err));
  HX_TRY(hx_results_context(r, "c_compiler", F3D_C_COMPILER, err));
  HX_TRY(hx_results_context(r, "cuda_compiler", F3D_CUDA_COMPILER, err));
  HX_TRY(hx_results_context(r, "gpu_arch", F3D_HAVE_CUDA ? F3D_GPU_ARCH_LABEL : "none", err));
  HX_TRY(hx_results_context(r, "have_cuda", F3D_HAVE_CUDA ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "have_lzf", F3D_HAVE_LZF ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "have_cupti", F3D_HAVE_CUPTI ? "yes" : "no", err));
  /* a build with the regression gate's planted slowdown (meson -Dplant_delay_pct) says so in every run */
  if (F3D_PLANT_DELAY_PCT > 0) HX_TRY(hx_results_contextf(r, err, "plant_delay_pct", "%d", F3D_PLANT_DELAY_PCT));
  return HX_OK;
}

/* The CPU model from /proc/cpuinfo (Linux), or "unknown". */
static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *v = strchr(line, ':');
    if (v) {
      v++;
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\r\n")] = '\0';
      snprintf(out, cap, "%s", v);
    }
    break;
  }
  fclose(f);
}

hx_status f3d_gpu_check(hx_device_info *dev, hx_err *err) {
  hx_device_info d;
  int n = 0;
  HX_TRY(hx_device_count(&n, err));
  HX_TRY(hx_device_query(&d, 0, err));
  HX_TRY(hx_arch_check(F3D_CUDA_ARCH, &d, err));
  if (dev) *dev = d;
  return HX_OK;
}

int f3d_gpu_ready(const char *what, hx_device_info *dev) {
  hx_err err = {HX_OK, ""};
  if (f3d_gpu_check(dev, &err) != HX_OK) return f3d_fail_msg(what, err.msg), 1;
  return 0;
}

hx_status f3d_context_device(hx_results *r, const hx_device_info *dev, hx_err *err) {
  char host[256] = "unknown", cpu[256];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  cpu_model(cpu, sizeof cpu);
  HX_TRY(hx_results_context(r, "hostname", host, err));
  HX_TRY(hx_results_context(r, "cpu_model", cpu, err));
  HX_TRY(hx_results_contextf(r, err, "cpu_count", "%ld", sysconf(_SC_NPROCESSORS_ONLN)));
  if (!dev) {
    HX_TRY(hx_results_context(r, "device", "none", err));
    return HX_OK;
  }
  char drv[32], rt[32];
  hx_cuda_version_str(drv, sizeof drv, dev->driver_version);
  hx_cuda_version_str(rt, sizeof rt, dev->runtime_version);
  HX_TRY(hx_results_context(r, "device", dev->name, err));
  HX_TRY(hx_results_contextf(r, err, "device_index", "%d", dev->index));
  HX_TRY(hx_results_contextf(r, err, "device_cc", "%d.%d", dev->cc_major, dev->cc_minor));
  HX_TRY(hx_results_contextf(r, err, "device_sm_count", "%d", dev->sm_count));
  HX_TRY(hx_results_contextf(r, err, "device_l2_bytes", "%d", dev->l2_bytes));
  HX_TRY(hx_results_contextf(r, err, "device_mem_bytes", "%zu", dev->mem_bytes));
  HX_TRY(hx_results_contextf(r, err, "device_sm_clock_khz", "%d", dev->sm_clock_khz));
  HX_TRY(hx_results_contextf(r, err, "device_mem_clock_khz", "%d", dev->mem_clock_khz));
  HX_TRY(hx_results_contextf(r, err, "device_mem_bus_bits", "%d", dev->mem_bus_bits));
  HX_TRY(hx_results_context(r, "device_pci_bus_id", dev->pci_bus_id, err));
  HX_TRY(hx_results_context(r, "cuda_driver_version", drv, err));
  HX_TRY(hx_results_context(r, "cuda_runtime_version", rt, err));
  return HX_OK;
}

hx_run *f3d_runs_load(const char *what, char *const *dirs, size_t n) {
  hx_run *runs = calloc(n ? n : 1, sizeof *runs);
  if (!runs) {
    f3d_fail(what, "out of memory");
    return NULL;
  }
  hx_err err;
  for (size_t i = 0; i < n; i++) {
    if (hx_run_load(&runs[i], dirs[i], &err) != HX_OK) {
      f3d_fail(what, "%s", err.msg);
      f3d_runs_free(runs, i);
      return NULL;
    }
  }
  return runs;
}

void f3d_runs_free(hx_run *runs, size_t n) {
  if (!runs) return;
  for (size_t i = 0; i < n; i++) hx_run_free(&runs[i]);
  free(runs);
}
