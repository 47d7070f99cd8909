/*
 * test_wl_io.c - readers and writers: round trips for every format and encoding (files built here,
 * byte by byte, including PCD binary_compressed through lzf_compress), NaN/Inf handling, malformed
 * and truncated inputs of each format (HX_EFORMAT with the file named, nothing returned, no crash; a PCD header
 * keyword given twice),
 * random byte corruption (run under -Db_sanitize=address,undefined to catch any overread), size
 * claims far beyond the file, atomic writers, inputs that are not regular files (a FIFO, /dev/zero, a directory:
 * refused at once), and the recorded clouds when workloads/recorded/ holds them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "f3d_config.h"
#include "workloads/workloads.h"
#if F3D_HAVE_LZF
#include <lzf.h>
#endif

#ifndef F3D_SOURCE_ROOT
#define F3D_SOURCE_ROOT "."
#endif

/* ---- scratch folder and byte buffers ------------------------------------------------------------- */
static char g_dir[64];

static const char *tpath(const char *name) {
  static char p[sizeof g_dir + 256];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  return p;
}

static int setup_dir(void **state) {
  (void)state;
  /* thousands of small rewrites: tmpfs when there is one (ext4 flushes a file truncated and rewritten) */
  struct stat sb;
  const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0
                         ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/wl-io-XXXXXX", base);
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown_dir(void **state) {
  (void)state;
  DIR *d = opendir(g_dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tpath(e->d_name));
  if (d) closedir(d);
  return rmdir(g_dir);
}

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void putf(buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < sizeof tmp);
  put(b, tmp, (size_t)n);
}

/* Store an integer or IEEE value of `size` bytes in the given byte order. */
static void put_num(buf *b, double v, char type, size_t size, int big) {
  unsigned char raw[8];
  uint64_t u = 0;
  if (type == 'F' && size == 4) {
    float f = (float)v;
    uint32_t w;
    memcpy(&w, &f, 4);
    u = w;
  } else if (type == 'F') {
    memcpy(&u, &v, 8);
  } else if (type == 'I') {
    u = (uint64_t)(int64_t)v;
  } else {
    u = (uint64_t)v;
  }
  for (size_t i = 0; i < size; i++) raw[big ? size - 1 - i : i] = (unsigned char)(u >> (8 * i));
  put(b, raw, size);
}

static void write_file(const char *name, const void *data, size_t n) {
  FILE *f = fopen(tpath(name), "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The reference points: a few ordinary ones, negative and large coordinates; index 3 and 5 are
 * NaN/Inf in the "nan" variants. */
#define NP 7
static const double pts[NP][3] = {
    {0.5, -1.25, 2.0}, {-3.0, 4.5, 0.125}, {1000.25, -2000.5, 3.75}, {1.0, 2.0, 3.0},
    {-0.001, 0.002, -0.003}, {7.0, 8.0, 9.0}, {123.456, -78.9, 0.0},
};

static double coord(size_t i, int a, int with_nan) {
  if (with_nan && i == 3 && a == 1) return (double)NAN;
  if (with_nan && i == 5 && a == 2) return (double)INFINITY;
  return pts[i][a];
}

/* Expect the finite reference points, in order, as float (F4) or from double (F8) input. */
static void check_cloud(const wl_cloud *c, int with_nan) {
  size_t j = 0;
  for (size_t i = 0; i < NP; i++) {
    if (with_nan && (i == 3 || i == 5)) continue;
    assert_true(j < c->n);
    for (int a = 0; a < 3; a++) assert_true(c->xyz[3 * j + (size_t)a] == (float)pts[i][a]);
    assert_int_equal(wl_cloud_src_index(c, j), i); /* the file position, past the dropped points */
    j++;
  }
  assert_int_equal(c->n, j);
  assert_int_equal(c->dropped_nonfinite, with_nan ? 2 : 0);
  if (with_nan) assert_non_null(c->src);
  else assert_null(c->src); /* no drop, no map */
}

static void read_ok(const char *name, wl_format fmt, int with_nan) {
  wl_cloud c;
  hx_err err = {0};
  hx_status st = wl_read(&c, tpath(name), fmt, &err);
  if (st != HX_OK) fail_msg("%s: %s", name, err.msg);
  check_cloud(&c, with_nan);
  wl_cloud_free(&c);
}

static hx_status read_status(const char *name, wl_format fmt, hx_err *err) {
  wl_cloud c;
  hx_status st = wl_read(&c, tpath(name), fmt, err);
  if (st != HX_OK) {
    assert_null(c.xyz);
    assert_int_equal(c.n, 0);
  } else {
    assert_non_null(c.xyz);
    assert_true(c.n > 0);
    for (size_t i = 0; i < 3 * c.n; i++) assert_true(isfinite(c.xyz[i]));
  }
  wl_cloud_free(&c);
  return st;
}

static void expect_fail(const char *name, const void *data, size_t n, wl_format fmt, hx_status want, const char *why) {
  write_file(name, data, n);
  hx_err err = {0};
  hx_status st = read_status(name, fmt, &err);
  if (st != want) fail_msg("%s (%s): got status %d (%s), wanted %d", name, why, st, err.msg, want);
  assert_non_null(strstr(err.msg, name)); /* the message names the file */
}

/* ---- PCD builder ----------------------------------------------------------------------------------- */
typedef struct pcd_field_spec {
  const char *name;
  size_t size;
  char type;
  size_t count;
} pcd_field_spec;

static double field_value(const pcd_field_spec *f, size_t i, size_t k, int with_nan) {
  if (!strcmp(f->name, "x")) return coord(i, 0, with_nan);
  if (!strcmp(f->name, "y")) return coord(i, 1, with_nan);
  if (!strcmp(f->name, "z")) return coord(i, 2, with_nan);
  return (double)((i * 7 + k * 3) % 100); /* something representable in every type */
}

/* enc: 0 ascii, 1 binary, 2 binary_compressed. width x height must be NP. */
static void build_pcd(buf *b, const pcd_field_spec *f, size_t nf, int enc, size_t width, size_t height,
                      int with_nan) {
  putf(b, "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS");
  for (size_t i = 0; i < nf; i++) putf(b, " %s", f[i].name);
  putf(b, "\nSIZE");
  for (size_t i = 0; i < nf; i++) putf(b, " %zu", f[i].size);
  putf(b, "\nTYPE");
  for (size_t i = 0; i < nf; i++) putf(b, " %c", f[i].type);
  putf(b, "\nCOUNT");
  for (size_t i = 0; i < nf; i++) putf(b, " %zu", f[i].count);
  putf(b, "\nWIDTH %zu\nHEIGHT %zu\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %d\nDATA %s\n", width, height, NP,
       enc == 0 ? "ascii" : enc == 1 ? "binary" : "binary_compressed");
  if (enc == 0) {
    for (size_t i = 0; i < NP; i++) {
      for (size_t q = 0; q < nf; q++)
        for (size_t k = 0; k < f[q].count; k++) {
          double v = field_value(&f[q], i, k, with_nan);
          if (isnan(v)) putf(b, "nan ");
          else if (isinf(v)) putf(b, "inf ");
          else putf(b, "%.17g ", v);
        }
      putf(b, "\n");
    }
  } else if (enc == 1) {
    for (size_t i = 0; i < NP; i++)
      for (size_t q = 0; q < nf; q++)
        for (size_t k = 0; k < f[q].count; k++) put_num(b, field_value(&f[q], i, k, with_nan), f[q].type, f[q].size, 0);
  } else {
#if F3D_HAVE_LZF
    buf soa = {0};
    for (size_t q = 0; q < nf; q++)
      for (size_t i = 0; i < NP; i++)
        for (size_t k = 0; k < f[q].count; k++) put_num(&soa, field_value(&f[q], i, k, with_nan), f[q].type, f[q].size, 0);
    unsigned char *z = malloc(2 * soa.n + 64);
    assert_non_null(z);
    unsigned int cs = lzf_compress(soa.p, (unsigned int)soa.n, z, (unsigned int)(2 * soa.n + 64));
    assert_true(cs > 0);
    put_num(b, cs, 'U', 4, 0);
    put_num(b, (double)soa.n, 'U', 4, 0);
    put(b, z, cs);
    free(z);
    free(soa.p);
#endif
  }
}

static const pcd_field_spec xyz_f4[] = {{"x", 4, 'F', 1}, {"y", 4, 'F', 1}, {"z", 4, 'F', 1}};
/* x/y/z as F8 scattered among other fields, counts > 1, integer types and a padding field */
static const pcd_field_spec mixed[] = {
    {"intensity", 2, 'U', 1}, {"x", 8, 'F', 1}, {"normal", 4, 'F', 3}, {"y", 8, 'F', 1},
    {"rgb", 4, 'U', 1},       {"label", 1, 'I', 1}, {"z", 8, 'F', 1}, {"_", 1, 'U', 4},
};

static void test_pcd_roundtrip(void **state) {
  (void)state;
  for (int enc = 0; enc < 3; enc++)
    for (int layout = 0; layout < 2; layout++)
      for (int with_nan = 0; with_nan < 2; with_nan++)
        for (int organized = 0; organized < 2; organized++) {
          if (organized && layout) continue;
          buf b = {0};
          const pcd_field_spec *f = layout ? mixed : xyz_f4;
          size_t nf = layout ? sizeof mixed / sizeof mixed[0] : 3;
          build_pcd(&b, f, nf, enc, organized ? 1 : NP, organized ? NP : 1, with_nan);
          char name[64];
          snprintf(name, sizeof name, "rt_%d_%d_%d_%d.pcd", enc, layout, with_nan, organized);
          write_file(name, b.p, b.n);
#if !F3D_HAVE_LZF
          if (enc == 2) {
            hx_err err = {0};
            assert_int_equal(read_status(name, WL_FMT_AUTO, &err), HX_EUNSUPPORTED);
            assert_non_null(strstr(err.msg, "liblzf"));
            free(b.p);
            continue;
          }
#endif
          read_ok(name, WL_FMT_AUTO, with_nan);
          read_ok(name, WL_FMT_PCD, with_nan);
          free(b.p);
        }
}

/* ---- PLY builder ----------------------------------------------------------------------------------- */
typedef struct ply_spec {
  int format;        /* 0 ascii, 1 LE, 2 BE */
  int dbl;           /* x/y/z as double */
  int extra_props;   /* uchar/short/uint/float props around x/y/z */
  int elem_before;   /* a face element (lists) before the vertex element */
  int elem_after;    /* and one after it */
  int vertex_list;   /* a list property inside the vertex element */
} ply_spec;

static void ply_value(buf *b, const ply_spec *s, double v, char type, size_t size) {
  if (s->format == 0) {
    if (isnan(v)) putf(b, "nan ");
    else if (isinf(v)) putf(b, "inf ");
    else putf(b, "%.17g ", v);
  } else {
    put_num(b, v, type, size, s->format == 2);
  }
}

static void ply_faces(buf *b, const ply_spec *s) {
  for (int r = 0; r < 2; r++) {
    int n = 3 + r;
    ply_value(b, s, n, 'U', 1);
    for (int k = 0; k < n; k++) ply_value(b, s, k, 'I', 4);
    if (s->format == 0) putf(b, "\n");
  }
}

static void build_ply(buf *b, const ply_spec *s, int with_nan) {
  static const char *const fmts[] = {"ascii", "binary_little_endian", "binary_big_endian"};
  const char *ct = s->dbl ? "double" : "float";
  putf(b, "ply\nformat %s 1.0\ncomment made by test_wl_io\nobj_info none\n", fmts[s->format]);
  if (s->elem_before) putf(b, "element face 2\nproperty list uchar int vertex_indices\n");
  putf(b, "element vertex %d\n", NP);
  if (s->extra_props) putf(b, "property uchar red\nproperty short s\n");
  if (s->vertex_list) putf(b, "property list uint8 float32 tags\n");
  putf(b, "property %s x\n", ct);
  if (s->extra_props) putf(b, "property uint u\n");
  putf(b, "property %s y\nproperty %s z\n", ct, ct);
  if (s->extra_props) putf(b, "property float nx\n");
  if (s->elem_after) putf(b, "element edge 2\nproperty list uchar int vertex_indices\n");
  putf(b, "end_header\n");
  if (s->elem_before) ply_faces(b, s);
  size_t cs = s->dbl ? 8 : 4;
  for (size_t i = 0; i < NP; i++) {
    if (s->extra_props) {
      ply_value(b, s, (double)(i * 30 % 256), 'U', 1);
      ply_value(b, s, -(double)i, 'I', 2);
    }
    if (s->vertex_list) {
      ply_value(b, s, (double)(i % 3), 'U', 1);
      for (size_t k = 0; k < i % 3; k++) ply_value(b, s, 0.5 * (double)k, 'F', 4);
    }
    ply_value(b, s, coord(i, 0, with_nan), 'F', cs);
    if (s->extra_props) ply_value(b, s, (double)i * 1000.0, 'U', 4);
    ply_value(b, s, coord(i, 1, with_nan), 'F', cs);
    ply_value(b, s, coord(i, 2, with_nan), 'F', cs);
    if (s->extra_props) ply_value(b, s, 0.25, 'F', 4);
    if (s->format == 0) putf(b, "\n");
  }
  if (s->elem_after) ply_faces(b, s);
}

static void test_ply_roundtrip(void **state) {
  (void)state;
  int count = 0;
  for (int format = 0; format < 3; format++)
    for (int dbl = 0; dbl < 2; dbl++)
      for (int extra = 0; extra < 2; extra++)
        for (int with_nan = 0; with_nan < 2; with_nan++) {
          ply_spec s = {format, dbl, extra, extra, extra, extra};
          buf b = {0};
          build_ply(&b, &s, with_nan);
          char name[64];
          snprintf(name, sizeof name, "rt_%d%d%d%d.ply", format, dbl, extra, with_nan);
          write_file(name, b.p, b.n);
          read_ok(name, WL_FMT_AUTO, with_nan);
          free(b.p);
          count++;
        }
  assert_int_equal(count, 24);
  /* our own writer */
  wl_cloud c;
  assert_int_equal(wl_cloud_alloc(&c, NP, NULL), HX_OK);
  for (size_t i = 0; i < NP; i++)
    for (int a = 0; a < 3; a++) c.xyz[3 * i + (size_t)a] = (float)pts[i][a];
  assert_int_equal(wl_write_ply(&c, tpath("w.ply"), NULL), HX_OK);
  read_ok("w.ply", WL_FMT_AUTO, 0);
  { /* the same file with one record more than its header counts: refused, not read short */
    FILE *f = fopen(tpath("w.ply"), "rb");
    assert_non_null(f);
    unsigned char d[4096];
    size_t m = fread(d, 1, sizeof d - 12, f);
    fclose(f);
    memcpy(d + m, d + m - 12, 12);
    expect_fail("w_extra.ply", d, m + 12, WL_FMT_AUTO, HX_EFORMAT, "12 bytes after the last element");
  }
  /* overwrite keeps working and replaces the content */
  c.n = 2;
  assert_int_equal(wl_write_ply(&c, tpath("w.ply"), NULL), HX_OK);
  wl_cloud r;
  assert_int_equal(wl_read(&r, tpath("w.ply"), WL_FMT_AUTO, NULL), HX_OK);
  assert_int_equal(r.n, 2);
  wl_cloud_free(&r);
  c.n = NP;
  wl_cloud_free(&c);
}

static void test_bin_roundtrip(void **state) {
  (void)state;
  wl_cloud c;
  assert_int_equal(wl_cloud_alloc(&c, NP, NULL), HX_OK);
  for (size_t i = 0; i < NP; i++)
    for (int a = 0; a < 3; a++) c.xyz[3 * i + (size_t)a] = (float)pts[i][a];
  assert_int_equal(wl_write_bin(&c, tpath("w.bin"), NULL), HX_OK);
  struct stat sb;
  assert_int_equal(stat(tpath("w.bin"), &sb), 0);
  assert_int_equal(sb.st_size, NP * 16);
  read_ok("w.bin", WL_FMT_AUTO, 0);
  read_ok("w.bin", WL_FMT_BIN4, 0);
  wl_cloud_free(&c);
  /* nuScenes records: 5 float32 (x y z intensity ring), with NaN/Inf */
  for (int with_nan = 0; with_nan < 2; with_nan++) {
    buf b = {0};
    for (size_t i = 0; i < NP; i++) {
      for (int a = 0; a < 3; a++) put_num(&b, coord(i, a, with_nan), 'F', 4, 0);
      put_num(&b, 17.0, 'F', 4, 0);
      put_num(&b, (double)i, 'F', 4, 0);
    }
    const char *name = with_nan ? "n.pcd.bin" : "c.pcd.bin";
    write_file(name, b.p, b.n);
    read_ok(name, WL_FMT_AUTO, with_nan);
    read_ok(name, WL_FMT_BIN5, with_nan);
    /* the same bytes read as 4-float records are misaligned: 35 floats is not a multiple of 4 */
    hx_err err = {0};
    assert_int_equal(read_status(name, WL_FMT_BIN4, &err), HX_EFORMAT);
    assert_non_null(strstr(err.msg, "multiple"));
    free(b.p);
  }
}

static void test_xyz_roundtrip(void **state) {
  (void)state;
  static const char *const seps[] = {" ", "\t", ",", ", ", "  \t "};
  for (size_t s = 0; s < sizeof seps / sizeof seps[0]; s++)
    for (int variant = 0; variant < 4; variant++) {
      int with_nan = variant & 1, header = variant & 2;
      buf b = {0};
      if (header) putf(&b, "x%sy%sz%sintensity\r\n", seps[s], seps[s], seps[s]);
      putf(&b, "# a comment line\n\n");
      for (size_t i = 0; i < NP; i++) {
        for (int a = 0; a < 3; a++) {
          double v = coord(i, a, with_nan);
          if (isnan(v)) putf(&b, "nan");
          else if (isinf(v)) putf(&b, "inf");
          else putf(&b, "%.17g", v);
          putf(&b, "%s", seps[s]);
        }
        putf(&b, "%s\n", i % 2 ? "42 label" : "0.5"); /* extra columns ignored */
      }
      static const char *const ext[] = {".xyz", ".txt", ".csv"};
      char name[64];
      snprintf(name, sizeof name, "t%zu_%d%s", s, variant, ext[(s + (size_t)variant) % 3]);
      write_file(name, b.p, b.n);
      read_ok(name, WL_FMT_AUTO, with_nan);
      free(b.p);
    }
  /* no trailing newline, CRLF, plain three columns */
  const char *t = "1 2 3\r\n4 5 6";
  write_file("plain.xyz", t, strlen(t));
  wl_cloud c;
  assert_int_equal(wl_read(&c, tpath("plain.xyz"), WL_FMT_AUTO, NULL), HX_OK);
  assert_int_equal(c.n, 2);
  assert_true(c.xyz[5] == 6.0f);
  wl_cloud_free(&c);
}

/* ---- malformed input ------------------------------------------------------------------------------ */
static void test_malformed(void **state) {
  (void)state;
  static const struct {
    const char *name, *text;
    hx_status want;
    const char *why;
  } cases[] = {
      {"e.pcd", "", HX_EFORMAT, "empty file"},
      {"nodata.pcd", "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nHEIGHT 1\nPOINTS 1\n", HX_EFORMAT, "no DATA"},
      {"nofields.pcd", "VERSION 0.7\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nPOINTS 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "no FIELDS"},
      {"sizecount.pcd", "FIELDS x y z\nSIZE 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "SIZE count"},
      {"badsize.pcd", "FIELDS x y z\nSIZE 4 4 3\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "SIZE 3"},
      {"badtype.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F Q\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "TYPE Q"},
      {"nox.pcd", "FIELDS a y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "no x"},
      {"intx.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE I F F\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EUNSUPPORTED, "integer x"},
      {"wh.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nHEIGHT 2\nPOINTS 3\nDATA ascii\n1 2 3\n1 2 3\n1 2 3\n", HX_EFORMAT, "POINTS != W*H"},
      {"enc.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA zip\n", HX_EFORMAT, "unknown DATA"},
      {"kw.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nBOGUS 1\nWIDTH 1\nDATA ascii\n1 2 3\n", HX_EFORMAT, "unknown keyword"},
      {"short.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nDATA ascii\n1 2 3\n", HX_EFORMAT, "fewer lines"},
      {"cols.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2\n", HX_EFORMAT, "two columns"},
      {"word.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 two 3\n", HX_EFORMAT, "not a number"},
      {"zero.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 0\nDATA ascii\n", HX_EFORMAT, "POINTS 0"},
      {"allnan.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\nnan nan nan\n", HX_EFORMAT, "only NaN"},
      {"huge.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1000000000000\nHEIGHT 1\nPOINTS 1000000000000\nDATA binary\n0123456789ab", HX_EFORMAT, "10^12 points binary"},
      {"hugea.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1000000000000\nDATA ascii\n1 2 3\n", HX_EFORMAT, "10^12 points ascii"},
      {"ovf.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 99999999999999999999999\nDATA ascii\n1 2 3\n", HX_EFORMAT, "WIDTH overflow"},
      {"whovf.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 4294967296\nHEIGHT 4294967296\nDATA binary\n", HX_EFORMAT, "W*H overflow"},
      {"e.ply", "", HX_EFORMAT, "empty file"},
      {"magic.ply", "plx\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n1\n", HX_EFORMAT, "bad magic"},
      {"fmt.ply", "ply\nformat binary_middle_endian 1.0\nelement vertex 1\nend_header\n", HX_EFORMAT, "unknown format"},
      {"nofmt.ply", "ply\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n", HX_EFORMAT, "no format"},
      {"extra.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n4 5 6\n", HX_EFORMAT, "more records than the header counts"},
      {"noend.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", HX_EFORMAT, "no end_header"},
      {"novert.ply", "ply\nformat ascii 1.0\nelement face 0\nproperty list uchar int v\nend_header\n", HX_EFORMAT, "no vertex"},
      {"noz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n", HX_EFORMAT, "no z"},
      {"intx.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty int x\nproperty float y\nproperty float z\nend_header\n1 2 3\n", HX_EUNSUPPORTED, "int x"},
      {"ptype.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float128 x\nend_header\n", HX_EFORMAT, "unknown type"},
      {"orphan.ply", "ply\nformat ascii 1.0\nproperty float x\nend_header\n", HX_EFORMAT, "property before element"},
      {"listf.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nproperty list float int l\nend_header\n1 2 3 1 1\n", HX_EFORMAT, "float list count"},
      {"neglist.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nproperty list int int l\nend_header\n1 2 3 -1\n", HX_EFORMAT, "negative list length"},
      {"shortlist.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nproperty list int int l\nend_header\n1 2 3 5 1 2\n", HX_EFORMAT, "list runs out"},
      {"words.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 b 3\n", HX_EFORMAT, "not a number"},
      {"fewa.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n4 5 6\n", HX_EFORMAT, "fewer records"},
      {"huge.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 1000000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n0123456789ab", HX_EFORMAT, "10^12 vertices"},
      {"hugeface.ply", "ply\nformat binary_little_endian 1.0\nelement face 18446744073709551615\nproperty list uchar int v\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n", HX_EFORMAT, "2^64-1 faces"},
      {"zero.ply", "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n", HX_EFORMAT, "no vertices"},
      {"e.bin", "", HX_EFORMAT, "empty file"},
      {"odd.bin", "0123456789abcdefg", HX_EFORMAT, "17 bytes"},
      {"e.xyz", "", HX_EFORMAT, "empty file"},
      {"hdr.xyz", "x y z\n", HX_EFORMAT, "header only"},
      {"two.xyz", "1 2 3\n1 2\n", HX_EFORMAT, "two columns"},
      {"word.csv", "x,y,z\n1,2,3\n1,oops,3\n", HX_EFORMAT, "not a number"},
      {"hdr2.txt", "x y z\nu v w\n1 2 3\n", HX_EFORMAT, "two header lines"},
      {"commas.csv", "1,,2,3\n", HX_EFORMAT, "empty field"},
      {"nan.xyz", "nan 1 2\n1 inf 2\n", HX_EFORMAT, "only non-finite"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_fail(cases[i].name, cases[i].text, strlen(cases[i].text), WL_FMT_AUTO, cases[i].want, cases[i].why);

  /* binary PCD with 1 point of 12 bytes but only 11 present */
  const char *h = "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA binary\n01234567890";
  expect_fail("trunc.pcd", h, strlen(h), WL_FMT_PCD, HX_EFORMAT, "binary truncated");
#if F3D_HAVE_LZF
  /* compressed PCD: corrupt stream, sizes that do not match the header, and an absurd expansion */
  {
    const char *hdr = "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nDATA binary_compressed\n";
    buf b = {0};
    put(&b, hdr, strlen(hdr));
    put_num(&b, 6, 'U', 4, 0);
    put_num(&b, 24, 'U', 4, 0);
    put(&b, "\xff\xff\xff\xff\xff\xff", 6); /* back-reference before the start */
    expect_fail("corrupt.pcd", b.p, b.n, WL_FMT_PCD, HX_EFORMAT, "corrupt lzf");
    b.n = strlen(hdr);
    put_num(&b, 6, 'U', 4, 0);
    put_num(&b, 25, 'U', 4, 0);
    put(&b, "\0\0\0\0\0\0", 6);
    expect_fail("usize.pcd", b.p, b.n, WL_FMT_PCD, HX_EFORMAT, "uncompressed size mismatch");
    b.n = strlen(hdr);
    put_num(&b, 100, 'U', 4, 0);
    put_num(&b, 24, 'U', 4, 0);
    put(&b, "\0\0\0\0\0\0", 6);
    expect_fail("csize.pcd", b.p, b.n, WL_FMT_PCD, HX_EFORMAT, "compressed size beyond the file");
    free(b.p);
  }
#endif
  hx_err err = {0};
  wl_cloud c;
  /* a word where a number belongs: the message quotes it, unprintable bytes as '?', at most 24 bytes then "..." */
  static const struct {
    const char *line, *want;
  } words[] = {{"1 two 3\n", "value 2 ('two') is not a number"},
               {"1 2 \033[31mred\n", "value 3 ('?[31mred') is not a number"},
               {"abcdefghijklmnopqrstuvwxyz0123 2 3\n", "value 1 ('abcdefghijklmnopqrstuvwx...') is not a number"}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n%s", words[i].line);
    write_file("word.pcd", text, strlen(text));
    assert_int_equal(wl_read(&c, tpath("word.pcd"), WL_FMT_AUTO, &err), HX_EFORMAT);
    if (!strstr(err.msg, words[i].want)) fail_msg("%s: got '%s'", words[i].want, err.msg);
  }
  /* missing file and a folder */
  assert_int_equal(wl_read(&c, tpath("does-not-exist.pcd"), WL_FMT_AUTO, &err), HX_EIO);
  assert_non_null(strstr(err.msg, "does-not-exist.pcd"));
  assert_int_equal(wl_read(&c, g_dir, WL_FMT_PCD, &err), HX_EIO);
  write_file("mystery.dat", "1 2 3\n", 6);
  assert_int_equal(wl_read(&c, tpath("mystery.dat"), WL_FMT_AUTO, &err), HX_EINVAL);
  assert_int_equal(wl_read(&c, tpath("mystery.dat"), WL_FMT_XYZ, &err), HX_OK);
  wl_cloud_free(&c);
}

/* ---- PCD data past POINTS --------------------------------------------------------------------------- */
/* A PCD header keyword given twice is refused naming the line and the keyword: a second FIELDS (or COLUMNS,
 * its old name) would leave fields with no SIZE or TYPE, a second WIDTH or POINTS would bypass the count checks. */
static void test_pcd_repeated_keyword(void **state) {
  (void)state;
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nFIELDS x y z w\nWIDTH 1\nPOINTS 1\nDATA ascii\n1 2 3 4\n",
       "line 4: a second FIELDS line"},
      {"FIELDS x y z w\nSIZE 4 4 4 4\nTYPE F F F F\nFIELDS x y z\nWIDTH 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
       "line 4: a second FIELDS line"},
      {"FIELDS x y z\nCOLUMNS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n",
       "line 2: a second COLUMNS line"},
      {"FIELDS x y z\nSIZE 4 4 4\nSIZE 8 8 8\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", "line 3: a second SIZE line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", "line 4: a second TYPE line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nCOUNT 1 1 1\nWIDTH 1\nDATA ascii\n1 2 3\n",
       "line 5: a second COUNT line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nWIDTH 1\nDATA ascii\n1 2 3\n", "line 5: a second WIDTH line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nHEIGHT 1\nHEIGHT 1\nDATA ascii\n1 2 3\n",
       "line 6: a second HEIGHT line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nPOINTS 2\nPOINTS 1\nDATA ascii\n1 2 3\n",
       "line 6: a second POINTS line"},
      {"VERSION 0.7\nVERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n",
       "line 2: a second VERSION line"},
      {"FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nVIEWPOINT 0 0 0 1 0 0 0\nVIEWPOINT 0 0 0 1 0 0 0\n"
       "DATA ascii\n1 2 3\n", "line 6: a second VIEWPOINT line"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_cloud c;
    hx_err err = {0};
    write_file("rep.pcd", cases[i].text, strlen(cases[i].text));
    assert_int_equal(wl_read(&c, tpath("rep.pcd"), WL_FMT_AUTO, &err), HX_EFORMAT);
    assert_null(c.xyz);
    if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, "rep.pcd"))
      fail_msg("case %zu: message lacks '%s': %s", i, cases[i].want, err.msg);
  }
  /* each keyword once, every one of them: read */
  const char *ok = "# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\n"
                   "VIEWPOINT 0 0 0 1 0 0 0\nPOINTS 1\nDATA ascii\n1 2 3\n";
  write_file("once.pcd", ok, strlen(ok));
  wl_cloud c;
  hx_err err = {0};
  if (wl_read(&c, tpath("once.pcd"), WL_FMT_AUTO, &err) != HX_OK) fail_msg("%s", err.msg);
  assert_int_equal(c.n, 1);
  wl_cloud_free(&c);
}

/* A PCD whose data outlasts its POINTS (a header count below the points present) is refused, as PLY's element
 * counts are: ascii values on a line past the last point, binary bytes past the last record, bytes after the
 * binary_compressed block. Blank lines after the last ascii point (a writer's final newline, CRLF) stay valid. */
static void test_pcd_past_points(void **state) {
  (void)state;
  const char *hdr = "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ";
  static const struct {
    const char *data;
    hx_status want;
    const char *msg;
  } ascii[] = {
      {"1 2 3\n4 5 6\n", HX_EFORMAT, "line 7: data after the last of the header's POINTS 1 points"},
      {"1 2 3\n\n\n4 5 6", HX_EFORMAT, "line 9: data after the last of the header's POINTS 1 points"},
      {"1 2 3\n", HX_OK, NULL},
      {"1 2 3", HX_OK, NULL},
      {"1 2 3\r\n\r\n \t\n", HX_OK, NULL},
  };
  for (size_t i = 0; i < sizeof ascii / sizeof ascii[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "%sascii\n%s", hdr, ascii[i].data);
    write_file("past.pcd", text, strlen(text));
    hx_err err = {0};
    hx_status st = read_status("past.pcd", WL_FMT_AUTO, &err);
    if (st != ascii[i].want) fail_msg("ascii case %zu: status %d (%s), wanted %d", i, st, err.msg, ascii[i].want);
    if (ascii[i].msg && !strstr(err.msg, ascii[i].msg)) fail_msg("ascii case %zu: got '%s'", i, err.msg);
  }
  /* binary: one record of 12 bytes, then a second record (refused), then a lone newline or 11 bytes of trailer (read,
   * as PCL reads them: fewer bytes than a record are no point) */
  buf b = {0};
  putf(&b, "%sbinary\n", hdr);
  for (int a = 0; a < 3; a++) put_num(&b, a + 1.0, 'F', 4, 0);
  write_file("past.pcd", b.p, b.n);
  hx_err err = {0};
  assert_int_equal(read_status("past.pcd", WL_FMT_AUTO, &err), HX_OK);
  const size_t one = b.n;
  for (int a = 0; a < 3; a++) put_num(&b, a + 4.0, 'F', 4, 0);
  expect_fail("past.pcd", b.p, b.n, WL_FMT_AUTO, HX_EFORMAT, "a second record past POINTS 1");
  assert_int_equal(read_status("past.pcd", WL_FMT_AUTO, &err), HX_EFORMAT);
  assert_non_null(strstr(err.msg, "12 bytes after the last of the header's POINTS 1 records of 12 bytes"));
  b.n = one;
  put(&b, "\n", 1);
  write_file("past.pcd", b.p, b.n);
  assert_int_equal(read_status("past.pcd", WL_FMT_AUTO, &err), HX_OK);
  put(&b, "0123456789", 10);
  write_file("past.pcd", b.p, b.n);
  assert_int_equal(read_status("past.pcd", WL_FMT_AUTO, &err), HX_OK);
  put(&b, "!", 1); /* 12 bytes: a record */
  expect_fail("past.pcd", b.p, b.n, WL_FMT_AUTO, HX_EFORMAT, "a 12-byte trailer past POINTS 1");
  free(b.p);
#if F3D_HAVE_LZF
  /* binary_compressed: the round trip's file, then a trailer past its block (read: the block says how many) */
  buf z = {0};
  build_pcd(&z, xyz_f4, 3, 2, NP, 1, 0);
  write_file("pastz.pcd", z.p, z.n);
  read_ok("pastz.pcd", WL_FMT_AUTO, 0);
  put(&z, "\n\0\0", 3);
  write_file("pastz.pcd", z.p, z.n);
  read_ok("pastz.pcd", WL_FMT_AUTO, 0);
  free(z.p);
#endif
}

/* ---- the xyz header rule and decimal-only numbers -------------------------------------------------- */
/* The first content line of an xyz/txt/csv file is a header only when it starts with a name: one that starts with
 * a number but is not three numbers is an error naming line 1 (it was skipped as a header, losing a point with no
 * word). Hexadecimal is no number in any text reader (strtod took "0x10" as 16); "nan" and "inf" still are, and
 * their points are dropped. */
static void test_xyz_first_line(void **state) {
  (void)state;
  static const struct {
    const char *text, *line;
  } bad[] = {
      {"1 2 zz\n4 5 6\n7 8 9\n", "line 1:"},      {"1 2\n4 5 6\n7 8 9\n", "line 1:"},
      {"-1 2\n4 5 6\n", "line 1:"},               {".5,2\n4,5,6\n", "line 1:"},
      {"0x10 0x20 0x30\n4 5 6\n", "line 1:"},      {"# c\n\n1 2 q\n4 5 6\n", "line 3:"},
      {"4 5 6\n0x10 2 3\n", "line 2:"},           {"x y z\n4 5 6\n1 0X1p3 2\n", "line 3:"},
      {"x y z\n4 5 6\n1 -0x1 2\n", "line 3:"},  {"x y z\n1 \v0x10 3\n", "line 2:"},
      {"2.5\n1 2 3\n", "line 1:"},               {"2\n3\n1 2 3\n", "line 2:"},
      /* a lone point count is the file's claim: more or fewer points than it says are refused, naming both */
      {"5\n1 2 3\n", "line 1: a point count of 5, but 1 points follow"},
      {"# c\n1\n1 2 3\n4 5 6\n", "line 2: a point count of 1, but 2 points follow"},
      {"99999999999999999999999\n1 2 3\n", "line 1: a point count of 18446744073709551615, but 1 points follow"},
      {"3\nnan 1 2\n1 2 3\n", "line 1: a point count of 3, but 2 points follow"},
  };
  hx_err err = {0};
  wl_cloud c;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file("first.xyz", bad[i].text, strlen(bad[i].text));
    hx_status st = wl_read(&c, tpath("first.xyz"), WL_FMT_AUTO, &err);
    if (st != HX_EFORMAT) fail_msg("'%s': status %d (%s), n %zu: not refused", bad[i].text, st, err.msg, c.n);
    if (!strstr(err.msg, bad[i].line) || !strstr(err.msg, "first.xyz"))
      fail_msg("'%s': the message does not name %s: %s", bad[i].text, bad[i].line, err.msg);
    assert_null(c.xyz);
  }
  static const struct {
    const char *text;
    size_t n, dropped;
  } good[] = {
      {"x y z\n1 2 3\n4 5 6\n", 2, 0},      {"X,Y,Z,intensity\n1,2,3,4\n4,5,6,7\n", 2, 0},
      {"# a\n\nx y z\n1 2 3\n", 1, 0},      {"nan 1 2\n1 2 3\n4 5 6\n", 2, 1},
      {"inf,1,2\n1,2,3\n", 1, 1},            {"-x -y -z\n+1 -2 .5\n", 1, 0},
      {"2\n1 2 3\n4 5 6\n", 2, 0},          {"  1 \r\n1 2 3\n", 1, 0}, /* a .pts count line */
      {"2\nnan 1 2\n1 2 3\n\n", 1, 1}, /* the count counts a dropped point's line */
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    write_file("first.xyz", good[i].text, strlen(good[i].text));
    hx_status st = wl_read(&c, tpath("first.xyz"), WL_FMT_AUTO, &err);
    if (st != HX_OK) fail_msg("'%s': %s", good[i].text, err.msg);
    if (c.n != good[i].n || c.dropped_nonfinite != good[i].dropped)
      fail_msg("'%s': %zu points, %zu dropped; wanted %zu, %zu", good[i].text, c.n, c.dropped_nonfinite, good[i].n,
               good[i].dropped);
    wl_cloud_free(&c);
  }
  /* hexadecimal in the other text readers */
  const char *pcd = "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 0x2 3\n";
  expect_fail("hex.pcd", pcd, strlen(pcd), WL_FMT_AUTO, HX_EFORMAT, "hexadecimal in PCD ascii");
  const char *ply = "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                    "property float z\nend_header\n1 2 0x3\n";
  expect_fail("hex.ply", ply, strlen(ply), WL_FMT_AUTO, HX_EFORMAT, "hexadecimal in PLY ascii");
}

/* ---- truncation and corruption sweeps -------------------------------------------------------------- */
typedef struct sample {
  const char *name;
  buf b;
  int text; /* a prefix of a text file can itself be valid */
  size_t record; /* .bin: a prefix that is a whole number of records is valid */
} sample;

static size_t make_samples(sample *s) {
  size_t n = 0;
  for (int enc = 0; enc < 3; enc++) {
#if !F3D_HAVE_LZF
    if (enc == 2) continue;
#endif
    static const char *const names[] = {"s_a.pcd", "s_b.pcd", "s_c.pcd"};
    s[n] = (sample){names[enc], {0}, enc == 0, 0};
    build_pcd(&s[n].b, mixed, sizeof mixed / sizeof mixed[0], enc, NP, 1, 1);
    n++;
  }
  for (int format = 0; format < 3; format++) {
    static const char *const names[] = {"s_a.ply", "s_le.ply", "s_be.ply"};
    ply_spec sp = {format, format == 2, 1, 1, 1, 1};
    s[n] = (sample){names[format], {0}, format == 0, 0};
    build_ply(&s[n].b, &sp, 1);
    n++;
  }
  s[n] = (sample){"s.bin", {0}, 0, 16};
  for (size_t i = 0; i < 4 * NP; i++) put_num(&s[n].b, (double)i, 'F', 4, 0);
  n++;
  s[n] = (sample){"s.csv", {0}, 1, 0};
  putf(&s[n].b, "x,y,z\n1,2,3\n4.5,-6e2,7\nnan,1,2\n8,9,10,extra\n");
  n++;
  return n;
}

static void test_truncated(void **state) {
  (void)state;
  sample s[16];
  size_t ns = make_samples(s);
  for (size_t k = 0; k < ns; k++) {
    write_file(s[k].name, s[k].b.p, s[k].b.n);
    hx_err err = {0};
    assert_int_equal(read_status(s[k].name, WL_FMT_AUTO, &err), HX_OK);
    for (size_t len = 0; len < s[k].b.n; len++) {
      write_file(s[k].name, s[k].b.p, len);
      hx_status st = read_status(s[k].name, WL_FMT_AUTO, &err);
      int may_pass = s[k].text || (s[k].record && len % s[k].record == 0 && len > 0);
      if (st == HX_OK && may_pass) continue;
      if (st != HX_EFORMAT) fail_msg("%s cut at %zu of %zu: status %d (%s)", s[k].name, len, s[k].b.n, st, err.msg);
    }
    free(s[k].b.p);
  }
}

static void test_corrupted(void **state) {
  (void)state;
  sample s[16];
  size_t ns = make_samples(s);
  uint64_t ctr = 0;
  for (size_t k = 0; k < ns; k++) {
    unsigned char *m = malloc(s[k].b.n);
    assert_non_null(m);
    for (int trial = 0; trial < 400; trial++) {
      memcpy(m, s[k].b.p, s[k].b.n);
      int flips = 1 + trial % 3;
      for (int f = 0; f < flips; f++) {
        size_t at = (size_t)(hx_rng_u64(7, 1, ctr++) % s[k].b.n);
        m[at] = (unsigned char)hx_rng_u64(7, 2, ctr++);
      }
      write_file(s[k].name, m, s[k].b.n);
      hx_err err = {0};
      hx_status st = read_status(s[k].name, WL_FMT_AUTO, &err);
      if (st != HX_OK && st != HX_EFORMAT && st != HX_EUNSUPPORTED)
        fail_msg("%s trial %d: status %d (%s)", s[k].name, trial, st, err.msg);
    }
    free(m);
    free(s[k].b.p);
  }
}

/* ---- writers ---------------------------------------------------------------------------------------- */
static void test_writers_atomic(void **state) {
  (void)state;
  wl_cloud c;
  assert_int_equal(wl_generate(&c, WL_UNIFORM, 5000, 1, NULL), HX_OK);
  hx_err err = {0};
  char bad[300];
  snprintf(bad, sizeof bad, "%s/no-such-dir/x.ply", g_dir);
  assert_int_equal(wl_write_ply(&c, bad, &err), HX_EIO);
  assert_non_null(strstr(err.msg, "x.ply"));
  assert_int_equal(wl_write_bin(&c, bad, &err), HX_EIO);
  assert_int_equal(wl_write_ply(&c, tpath("big.ply"), NULL), HX_OK);
  assert_int_equal(wl_write_bin(&c, tpath("big.bin"), NULL), HX_OK);
  for (int k = 0; k < 2; k++) {
    wl_cloud r;
    assert_int_equal(wl_read(&r, tpath(k ? "big.bin" : "big.ply"), WL_FMT_AUTO, NULL), HX_OK);
    assert_int_equal(r.n, c.n);
    assert_memory_equal(r.xyz, c.xyz, c.n * 3 * sizeof(float));
    wl_cloud_free(&r);
  }
  /* no temporary file is left behind */
  DIR *d = opendir(g_dir);
  struct dirent *e;
  assert_non_null(d);
  while ((e = readdir(d))) assert_null(strstr(e->d_name, ".tmp."));
  closedir(d);
  wl_cloud_free(&c);
}

/* ---- what is not a regular file ------------------------------------------------------------------ */
/* A FIFO, a device or a directory is refused at once as "not a regular file", naming the path: a FIFO without
 * a writer once blocked the open forever (net --input FIFO hung), /dev/zero would never end. alarm() turns a
 * hang into a failed test (SIGALRM ends the program) instead of a test that waits for Meson's timeout. */
static void expect_not_regular(const char *path) {
  wl_cloud c;
  hx_err err = {0};
  alarm(20);
  hx_status st = wl_read(&c, path, WL_FMT_AUTO, &err);
  alarm(0);
  if (st != HX_EIO) fail_msg("%s: got status %d (%s), wanted HX_EIO", path, st, err.msg);
  assert_null(c.xyz);
  assert_int_equal(c.n, 0);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "not a regular file"));
}

static void test_not_regular(void **state) {
  (void)state;
  char fifo[sizeof g_dir + 256];
  snprintf(fifo, sizeof fifo, "%s", tpath("fifo.ply"));
  assert_int_equal(mkfifo(fifo, 0600), 0);
  expect_not_regular(fifo);
  unlink(fifo);
  struct stat sb;
  if (stat("/dev/zero", &sb) == 0 && S_ISCHR(sb.st_mode)) expect_not_regular("/dev/zero");
  char dir[sizeof g_dir + 256];
  snprintf(dir, sizeof dir, "%s", tpath("dir.xyz"));
  assert_int_equal(mkdir(dir, 0700), 0);
  wl_cloud c;
  hx_err err = {0};
  hx_status st = wl_read(&c, dir, WL_FMT_AUTO, &err);
  rmdir(dir);
  assert_int_not_equal(st, HX_OK);
  assert_non_null(strstr(err.msg, dir));
  /* and a regular file still reads */
  write_file("regular.xyz", "1 2 3\n4 5 6\n", 12);
  assert_int_equal(wl_read(&c, tpath("regular.xyz"), WL_FMT_AUTO, &err), HX_OK);
  assert_int_equal(c.n, 2);
  wl_cloud_free(&c);
}

/* ---- recorded clouds (workloads/fetch-recorded.sh) ------------------------------------------------- */
static void test_recorded(void **state) {
  (void)state;
  static const struct {
    const char *name;
    size_t points; /* POINTS in the header: kept + NaN dropped */
    int organized_nan;
    double extent; /* every |coordinate| below this (metres) */
  } rec[] = {
      {"table_scene_lms400.pcd", 460400, 0, 10.0},
      {"bun0.pcd", 112586, 0, 20.0}, /* not the bunny: a ~29 x 14 x 3 m scan */
      {"table_scene_mug_stereo_textured.pcd", 307200, 1, 10.0},
      {"milk_cartoon_all_small_clorox.pcd", 307200, 1, 10.0},
      {"milk.pcd", 12575, 0, 10.0},
      {"lamppost.pcd", 1771, 0, 100.0},
  };
  int found = 0;
  for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/workloads/recorded/%s", F3D_SOURCE_ROOT, rec[i].name);
    if (access(path, R_OK) != 0) continue;
    found++;
    wl_cloud c;
    hx_err err = {0};
    hx_status st = wl_read(&c, path, WL_FMT_AUTO, &err);
#if !F3D_HAVE_LZF
    if (st == HX_EUNSUPPORTED) continue; /* binary_compressed without liblzf */
#endif
    if (st != HX_OK) fail_msg("%s: %s", rec[i].name, err.msg);
    print_message("recorded %-38s %8zu points, %7zu NaN dropped\n", rec[i].name, c.n, c.dropped_nonfinite);
    if (rec[i].points) assert_int_equal(c.n + c.dropped_nonfinite, rec[i].points);
    if (rec[i].organized_nan) assert_true(c.dropped_nonfinite > 0);
    else assert_int_equal(c.dropped_nonfinite, 0);
    double maxabs = 0.0;
    for (size_t k = 0; k < 3 * c.n; k++) maxabs = fmax(maxabs, fabs((double)c.xyz[k]));
    print_message("  largest |coordinate| %.3f\n", maxabs);
    assert_true(maxabs < rec[i].extent);
    /* and it resamples to an exact size both ways */
    wl_cloud e;
    int tiled = -1;
    assert_int_equal(wl_make_exact(&e, WL_LIDAR, &c, 1000, 0.01, 1, &tiled, NULL), HX_OK);
    assert_int_equal(e.n, 1000);
    wl_cloud_free(&e);
    wl_cloud_free(&c);
  }
  if (!found) skip(); /* run workloads/fetch-recorded.sh to enable */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pcd_roundtrip), cmocka_unit_test(test_ply_roundtrip),
      cmocka_unit_test(test_bin_roundtrip), cmocka_unit_test(test_xyz_roundtrip),
      cmocka_unit_test(test_malformed),     cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_corrupted),     cmocka_unit_test(test_writers_atomic),
      cmocka_unit_test(test_recorded),      cmocka_unit_test(test_not_regular),
      cmocka_unit_test(test_xyz_first_line), cmocka_unit_test(test_pcd_past_points),
      cmocka_unit_test(test_pcd_repeated_keyword),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
