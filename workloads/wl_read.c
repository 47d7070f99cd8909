/*
 * wl_read.c - readers for recorded point clouds: PCD v0.7 (ascii, binary, binary_compressed), PLY
 * (ascii, binary little/big endian), KITTI/nuScenes .bin (4 or 5 float32 per record) and x y z text.
 *
 * Every reader works on the whole file held in memory (NUL-terminated) and never trusts a count it
 * reads: before anything is allocated, the number of points a header claims is checked against the
 * bytes that are actually there (a point needs at least its record size in binary, two characters
 * per value in text), so a header claiming 10^12 points fails as truncated instead of allocating.
 * On any failure the output cloud is left empty and nothing is leaked; the message names the file and
 * the problem. Points with a NaN/Inf coordinate are dropped and counted in dropped_nonfinite, and then
 * every kept point's position in the file is in src. A PLY or PCD file whose data outlasts its header's counts
 * (element counts; POINTS) is refused (the counts, and so the points, would be wrong): past the last point only
 * blank lines in text; in binary nothing in a PLY, less than a record in a PCD (a writer's trailer, which PCL reads
 * past too). A PCD header gives each keyword once (a repeated FIELDS, SIZE, WIDTH ... is refused). Numbers in text
 * are decimal (hexadecimal is refused); an x y z text file may open with one header line: names ("x y z") or a
 * lone point count, which must equal the points that follow.
 */
#include "workloads/wl_internal.h"
#include "f3d_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#if F3D_HAVE_LZF
#include <lzf.h>
#endif

/* ---- whole-file input ------------------------------------------------------------------------------ */
/* Only a regular file is read (hx_open_regular: a FIFO, socket or device is refused, never waited on): its size,
 * known before the read, bounds the buffer. */
hx_status wl_slurp(const char *path, unsigned char **data, size_t *size, hx_err *err) {
  *data = NULL;
  *size = 0;
  FILE *f;
  size_t n;
  HX_TRY(hx_fopen_regular(path, &f, &n, err));
  unsigned char *buf = malloc(n + 1);
  if (!buf) {
    fclose(f);
    return hx_errf(err, HX_ENOMEM, "%s: cannot hold %zu bytes in memory", path, n);
  }
  size_t got = n ? fread(buf, 1, n, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (bad || got != n) {
    free(buf);
    return hx_errf(err, HX_EIO, "%s: read failed (%zu of %zu bytes)", path, got, n);
  }
  buf[n] = 0;
  *data = buf;
  *size = n;
  return HX_OK;
}

/* ---- small text helpers ---------------------------------------------------------------------------- */
/* A line cursor over [p, end). */
typedef struct cur {
  const char *p, *end;
  size_t line;
} cur;

/* Next line without its terminator ("\n" or "\r\n"); 0 at the end of the buffer. */
static int next_line(cur *c, const char **s, size_t *len) {
  if (c->p >= c->end) return 0;
  const char *b = c->p, *e = memchr(b, '\n', (size_t)(c->end - b));
  c->p = e ? e + 1 : c->end;
  if (!e) e = c->end;
  if (e > b && e[-1] == '\r') e--;
  *s = b;
  *len = (size_t)(e - b);
  c->line++;
  return 1;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v'; }

/* Split a line into at most `max` whitespace-separated tokens (each [tok[i], tok[i]+tl[i])). Returns the
 * token count, or max + 1 when there are more. */
static size_t split(const char *s, size_t len, const char **tok, size_t *tl, size_t max) {
  size_t n = 0, i = 0;
  while (i < len) {
    while (i < len && is_space(s[i])) i++;
    if (i == len) break;
    size_t b = i;
    while (i < len && !is_space(s[i])) i++;
    if (n == max) return max + 1;
    tok[n] = s + b;
    tl[n] = i - b;
    n++;
  }
  return n;
}

static int tok_is(const char *t, size_t tl, const char *word) {
  size_t wl = strlen(word);
  return tl == wl && memcmp(t, word, wl) == 0;
}

/* Parse a decimal unsigned integer token (digits only). */
static int tok_size(const char *t, size_t tl, size_t *out) {
  size_t v = 0;
  if (tl == 0) return 0;
  for (size_t i = 0; i < tl; i++) {
    if (t[i] < '0' || t[i] > '9') return 0;
    size_t d = (size_t)(t[i] - '0');
    if (v > (SIZE_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = v;
  return 1;
}

/* strtod over a token that ends at whitespace, a comma, or `end`; *next is set past the number. Decimal only:
 * strtod would also take hexadecimal ("0x10" = 16, "0x1p3" = 8), which no point cloud format writes and the
 * command line refuses too, so a hex token is not a number here. "nan" and "inf" are kept: they parse, and the
 * point is then dropped as non-finite (or refused by net), as a NaN written by a real scanner is. */
static int parse_num(const char *p, const char *end, double *v, const char **next) {
  char *q;
  while (p < end && is_space(*p)) p++; /* as strtod would, so the hexadecimal test sees the token itself */
  if (p >= end) return 0;
  const char *t = p + (*p == '+' || *p == '-');
  if (end - t >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return 0;
  errno = 0;
  double x = strtod(p, &q);
  if (q == p || q > end) return 0;
  if (q < end && !is_space(*q) && *q != ',') return 0;
  (void)errno; /* ERANGE: overflow gives +-HUGE_VAL (dropped as non-finite), underflow a tiny value */
  *v = x;
  *next = q;
  return 1;
}

/* Copy a token into a short NUL-terminated buffer for messages. */
static const char *tok_str(char *buf, size_t cap, const char *t, size_t tl) {
  size_t n = tl < cap - 1 ? tl : cap - 1;
  for (size_t i = 0; i < n; i++) buf[i] = isprint((unsigned char)t[i]) ? t[i] : '?';
  buf[n] = 0;
  return buf;
}

/* ---- PCD ------------------------------------------------------------------------------------------- */
#define PCD_MAX_FIELDS 1024
typedef struct pcd_field {
  const char *name;
  size_t name_len, size, count, offset; /* offset of the field within one binary point record */
  char type;
} pcd_field;

typedef struct pcd_hdr {
  pcd_field f[PCD_MAX_FIELDS];
  size_t nf, width, height, points, point_size;
  int have_points, have_width, have_height, have_size, have_type, have_count, have_fields;
  unsigned seen; /* bit i: keyword kw[i] of pcd_header given */
  int data; /* 0 ascii, 1 binary, 2 binary_compressed */
  size_t ix[3]; /* field index of x, y, z */
  size_t col[3]; /* ascii column of x, y, z */
} pcd_hdr;

static hx_status pcd_header(pcd_hdr *h, cur *c, const char *path, hx_err *err) {
  const char *s;
  size_t len;
  static const size_t maxtok = PCD_MAX_FIELDS + 1;
  const char *tok[PCD_MAX_FIELDS + 2];
  size_t tl[PCD_MAX_FIELDS + 2];
  char b1[48];
  for (;;) {
    if (!next_line(c, &s, &len))
      return hx_errf(err, HX_EFORMAT, "%s: PCD header ends without a DATA line (truncated?)", path);
    size_t nt = split(s, len, tok, tl, maxtok);
    if (nt == 0 || tok[0][0] == '#') continue;
    if (nt > maxtok) return hx_errf(err, HX_EFORMAT, "%s: line %zu: more than %d fields", path, c->line, PCD_MAX_FIELDS);
    const char *k = tok[0];
    size_t kl = tl[0], na = nt - 1;
    /* each keyword once (COLUMNS is FIELDS' old name): a second FIELDS would leave fields with no SIZE or TYPE
     * and a second WIDTH or POINTS would bypass the count checks, so a repeat is refused, never overwritten */
    static const char *const kw[] = {"VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "VIEWPOINT",
                                     "POINTS"};
    for (unsigned i = 0; i < sizeof kw / sizeof kw[0]; i++) {
      if (!tok_is(k, kl, kw[i]) && !(i == 1 && tok_is(k, kl, "COLUMNS"))) continue;
      if (h->seen & (1u << i))
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: a second %s line (each PCD header keyword is given once%s)",
                       path, c->line, tok_str(b1, sizeof b1, k, kl), i == 1 ? "; COLUMNS is FIELDS' old name" : "");
      h->seen |= 1u << i;
    }
    if (tok_is(k, kl, "VERSION") || tok_is(k, kl, "VIEWPOINT")) continue;
    if (tok_is(k, kl, "FIELDS") || tok_is(k, kl, "COLUMNS")) {
      if (na == 0) return hx_errf(err, HX_EFORMAT, "%s: line %zu: FIELDS lists no field", path, c->line);
      h->nf = na;
      for (size_t i = 0; i < na; i++) {
        h->f[i].name = tok[i + 1];
        h->f[i].name_len = tl[i + 1];
        h->f[i].count = 1;
      }
      h->have_fields = 1;
    } else if (tok_is(k, kl, "SIZE") || tok_is(k, kl, "TYPE") || tok_is(k, kl, "COUNT")) {
      if (!h->have_fields)
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: %s before FIELDS", path, c->line, tok_str(b1, sizeof b1, k, kl));
      if (na != h->nf)
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: %s has %zu entries for %zu fields", path, c->line,
                       tok_str(b1, sizeof b1, k, kl), na, h->nf);
      for (size_t i = 0; i < na; i++) {
        const char *t = tok[i + 1];
        size_t v = 0;
        if (k[0] == 'T') {
          if (tl[i + 1] != 1 || (t[0] != 'F' && t[0] != 'I' && t[0] != 'U'))
            return hx_errf(err, HX_EFORMAT, "%s: line %zu: TYPE '%s' is not F, I or U", path, c->line,
                           tok_str(b1, sizeof b1, t, tl[i + 1]));
          h->f[i].type = t[0];
          continue;
        }
        if (!tok_size(t, tl[i + 1], &v))
          return hx_errf(err, HX_EFORMAT, "%s: line %zu: bad %s value '%s'", path, c->line,
                         k[0] == 'S' ? "SIZE" : "COUNT", tok_str(b1, sizeof b1, t, tl[i + 1]));
        if (k[0] == 'S') {
          if (v != 1 && v != 2 && v != 4 && v != 8)
            return hx_errf(err, HX_EFORMAT, "%s: line %zu: SIZE %zu is not 1, 2, 4 or 8", path, c->line, v);
          h->f[i].size = v;
        } else {
          if (v == 0 || v > (1u << 20))
            return hx_errf(err, HX_EFORMAT, "%s: line %zu: COUNT %zu out of range", path, c->line, v);
          h->f[i].count = v;
        }
      }
      if (k[0] == 'S') h->have_size = 1;
      else if (k[0] == 'T') h->have_type = 1;
      else h->have_count = 1;
    } else if (tok_is(k, kl, "WIDTH") || tok_is(k, kl, "HEIGHT") || tok_is(k, kl, "POINTS")) {
      size_t v;
      if (na != 1 || !tok_size(tok[1], tl[1], &v))
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: %s needs one non-negative integer", path, c->line,
                       tok_str(b1, sizeof b1, k, kl));
      if (k[0] == 'W') { h->width = v; h->have_width = 1; }
      else if (k[0] == 'H') { h->height = v; h->have_height = 1; }
      else { h->points = v; h->have_points = 1; }
    } else if (tok_is(k, kl, "DATA")) {
      if (na != 1) return hx_errf(err, HX_EFORMAT, "%s: line %zu: DATA needs one encoding", path, c->line);
      if (tok_is(tok[1], tl[1], "ascii")) h->data = 0;
      else if (tok_is(tok[1], tl[1], "binary")) h->data = 1;
      else if (tok_is(tok[1], tl[1], "binary_compressed")) h->data = 2;
      else
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: unknown DATA encoding '%s'", path, c->line,
                       tok_str(b1, sizeof b1, tok[1], tl[1]));
      break;
    } else {
      return hx_errf(err, HX_EFORMAT, "%s: line %zu: unknown PCD header keyword '%s'", path, c->line,
                     tok_str(b1, sizeof b1, k, kl));
    }
  }
  if (!h->have_fields || !h->have_size || !h->have_type)
    return hx_errf(err, HX_EFORMAT, "%s: PCD header lacks %s", path,
                   !h->have_fields ? "FIELDS" : !h->have_size ? "SIZE" : "TYPE");
  if (!h->have_width) return hx_errf(err, HX_EFORMAT, "%s: PCD header lacks WIDTH", path);
  if (!h->have_height) h->height = 1;
  size_t wh;
  if (!wl_mul_ok(h->width, h->height, &wh))
    return hx_errf(err, HX_EFORMAT, "%s: WIDTH x HEIGHT overflows", path);
  if (!h->have_points) h->points = wh;
  if (h->points != wh)
    return hx_errf(err, HX_EFORMAT, "%s: POINTS %zu differs from WIDTH x HEIGHT = %zu x %zu", path, h->points,
                   h->width, h->height);
  size_t off = 0, col = 0;
  int found[3] = {0, 0, 0};
  for (size_t i = 0; i < h->nf; i++) {
    pcd_field *f = &h->f[i];
    if (f->type == 'F' && f->size != 4 && f->size != 8)
      return hx_errf(err, HX_EFORMAT, "%s: field '%s' is TYPE F with SIZE %zu (4 or 8 expected)", path,
                     tok_str(b1, sizeof b1, f->name, f->name_len), f->size);
    f->offset = off;
    off += f->size * f->count; /* <= 1024 fields * 8 bytes * 2^20: no overflow */
    for (int a = 0; a < 3; a++) {
      static const char *const axis[3] = {"x", "y", "z"};
      if (!tok_is(f->name, f->name_len, axis[a]) || found[a]) continue;
      if (f->type != 'F' || f->count != 1)
        return hx_errf(err, HX_EUNSUPPORTED, "%s: coordinate field '%s' is TYPE %c SIZE %zu COUNT %zu; only F4 or "
                       "F8 with COUNT 1 is supported", path, axis[a], f->type, f->size, f->count);
      found[a] = 1;
      h->ix[a] = i;
      h->col[a] = col;
    }
    col += f->count;
  }
  h->point_size = off;
  for (int a = 0; a < 3; a++)
    if (!found[a]) return hx_errf(err, HX_EFORMAT, "%s: PCD FIELDS has no '%c' field", path, "xyz"[a]);
  return HX_OK;
}

static double pcd_coord(const unsigned char *p, size_t size) {
  return size == 8 ? wl_get_f64(p, 0) : wl_get_f32(p, 0); /* PCD binary is little-endian */
}

hx_status wl_read_pcd(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err) {
  pcd_hdr *h = calloc(1, sizeof *h);
  if (!h) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  cur c = {(const char *)d, (const char *)d + size, 0};
  wl_sink sk = {{0, NULL, 0, NULL}, 0, 0, 0, 0, 0.0};
  unsigned char *raw = NULL;
  hx_status st = pcd_header(h, &c, path, err);
  if (st != HX_OK) goto fail;
  if (h->points == 0) {
    st = hx_errf(err, HX_EFORMAT, "%s: empty cloud (POINTS 0)", path);
    goto fail;
  }
  const unsigned char *body = (const unsigned char *)c.p;
  size_t avail = (size_t)((const unsigned char *)c.end - body), need;
  if (h->data == 0) {
    size_t ncol = 0, maxpts;
    for (size_t i = 0; i < h->nf; i++) ncol += h->f[i].count;
    maxpts = (avail + 1) / (2 * ncol); /* each value takes a character and a separator */
    if (h->points > maxpts) {
      st = hx_errf(err, HX_EFORMAT, "%s: truncated: POINTS %zu needs more than the %zu bytes of ascii data", path,
                   h->points, avail);
      goto fail;
    }
    if ((st = wl_sink_init(&sk, h->points, path, err)) != HX_OK) goto fail;
    size_t done = 0;
    const char *s;
    size_t len;
    while (done < h->points) {
      if (!next_line(&c, &s, &len)) {
        st = hx_errf(err, HX_EFORMAT, "%s: truncated: %zu of %zu points", path, done, h->points);
        goto fail;
      }
      const char *p = s, *e = s + len;
      double v[3] = {0, 0, 0};
      size_t k = 0;
      for (;; k++) {
        while (p < e && is_space(*p)) p++;
        if (p == e) break;
        double x;
        const char *q;
        if (!parse_num(p, e, &x, &q) || *q == ',') {
          const char *t = p; /* the token, quoted (at most 24 bytes, unprintable ones as '?'), so the user sees
                              * what broke; "..." when it was cut */
          while (t < e && !is_space(*t)) t++;
          char b1[25];
          st = hx_errf(err, HX_EFORMAT, "%s: line %zu: value %zu ('%s%s') is not a number", path, c.line, k + 1,
                       tok_str(b1, sizeof b1, p, (size_t)(t - p)), t - p > 24 ? "..." : "");
          goto fail;
        }
        for (int a = 0; a < 3; a++)
          if (k == h->col[a]) v[a] = x;
        p = q;
      }
      if (k == 0) continue; /* blank line */
      if (k != ncol) {
        st = hx_errf(err, HX_EFORMAT, "%s: line %zu: %zu values, the header says %zu", path, c.line, k, ncol);
        goto fail;
      }
      wl_sink_push(&sk, v[0], v[1], v[2]);
      done++;
    }
    /* past the last point only blank lines (a writer's final newline): values there mean POINTS is below the
     * points present, so the cloud read would not be the file's (as PLY's element counts) */
    while (next_line(&c, &s, &len)) {
      size_t i = 0;
      while (i < len && is_space(s[i])) i++;
      if (i < len) {
        st = hx_errf(err, HX_EFORMAT, "%s: line %zu: data after the last of the header's POINTS %zu points: the "
                     "header's point count does not match the data", path, c.line, h->points);
        goto fail;
      }
    }
  } else if (h->data == 1) {
    if (!wl_mul_ok(h->points, h->point_size, &need) || need > avail) {
      st = hx_errf(err, HX_EFORMAT, "%s: truncated: %zu points of %zu bytes need more than the %zu bytes present",
                   path, h->points, h->point_size, avail);
      goto fail;
    }
    /* a whole record past POINTS: the header's count is wrong, so the points read would not be the file's; fewer
     * bytes are a writer's trailer (a newline; CloudCompare is reported to leave some), which PCL ignores too */
    if (h->point_size && avail - need >= h->point_size) {
      st = hx_errf(err, HX_EFORMAT, "%s: %zu bytes after the last of the header's POINTS %zu records of %zu bytes: the "
                   "header's point count does not match the data", path, avail - need, h->points, h->point_size);
      goto fail;
    }
    if ((st = wl_sink_init(&sk, h->points, path, err)) != HX_OK) goto fail;
    for (size_t i = 0; i < h->points; i++) {
      const unsigned char *rec = body + i * h->point_size;
      double v[3];
      for (int a = 0; a < 3; a++) v[a] = pcd_coord(rec + h->f[h->ix[a]].offset, h->f[h->ix[a]].size);
      wl_sink_push(&sk, v[0], v[1], v[2]);
    }
  } else {
#if F3D_HAVE_LZF
    if (avail < 8) {
      st = hx_errf(err, HX_EFORMAT, "%s: truncated: binary_compressed data lacks its 8-byte size header", path);
      goto fail;
    }
    size_t csize = wl_get_u32(body, 0), usize = wl_get_u32(body + 4, 0);
    if (csize > avail - 8) {
      st = hx_errf(err, HX_EFORMAT, "%s: truncated: compressed block of %zu bytes, %zu present", path, csize, avail - 8);
      goto fail;
    }
    /* bytes after the block are a writer's trailer: the block's own size, checked against POINTS below, says how
     * many points the file holds */
    if (!wl_mul_ok(h->points, h->point_size, &need) || need != usize) {
      st = hx_errf(err, HX_EFORMAT, "%s: uncompressed size %zu differs from POINTS x point size (%zu x %zu)", path,
                   usize, h->points, h->point_size);
      goto fail;
    }
    /* LZF expands at most ~88x (a 3-byte back-reference copies up to 264 bytes) */
    if (usize / 88 > csize + 1) {
      st = hx_errf(err, HX_EFORMAT, "%s: uncompressed size %zu is impossible for %zu compressed bytes", path, usize,
                   csize);
      goto fail;
    }
    raw = malloc(usize ? usize : 1);
    if (!raw) {
      st = hx_errf(err, HX_ENOMEM, "%s: cannot allocate %zu bytes", path, usize);
      goto fail;
    }
    unsigned int got = lzf_decompress(body + 8, (unsigned int)csize, raw, (unsigned int)usize);
    if (got != usize) {
      st = hx_errf(err, HX_EFORMAT, "%s: corrupt binary_compressed data (LZF gave %u of %zu bytes)", path, got, usize);
      goto fail;
    }
    if ((st = wl_sink_init(&sk, h->points, path, err)) != HX_OK) goto fail;
    /* compressed PCD stores the fields one after another (structure of arrays) */
    const unsigned char *base[3];
    size_t stride[3];
    for (int a = 0; a < 3; a++) {
      const pcd_field *f = &h->f[h->ix[a]];
      base[a] = raw + h->points * f->offset;
      stride[a] = f->size;
    }
    for (size_t i = 0; i < h->points; i++) {
      double v[3];
      for (int a = 0; a < 3; a++) v[a] = pcd_coord(base[a] + i * stride[a], stride[a]);
      wl_sink_push(&sk, v[0], v[1], v[2]);
    }
#else
    st = hx_errf(err, HX_EUNSUPPORTED, "%s: DATA binary_compressed needs liblzf, and this build has none "
                 "(install liblzf-dev and reconfigure)", path);
    goto fail;
#endif
  }
  free(raw);
  free(h);
  return wl_sink_finish(&sk, out, path, err);
fail:
  free(raw);
  free(h);
  wl_sink_free(&sk);
  return st;
}

/* ---- PLY ------------------------------------------------------------------------------------------- */
#define PLY_MAX_ELEMS 64
#define PLY_MAX_PROPS 256
enum { PT_NONE = 0, PT_I8, PT_U8, PT_I16, PT_U16, PT_I32, PT_U32, PT_F32, PT_F64 };
static const struct {
  const char *name;
  int type;
} ply_types[] = {
    {"char", PT_I8},    {"int8", PT_I8},    {"uchar", PT_U8},   {"uint8", PT_U8},    {"short", PT_I16},
    {"int16", PT_I16},  {"ushort", PT_U16}, {"uint16", PT_U16}, {"int", PT_I32},     {"int32", PT_I32},
    {"uint", PT_U32},   {"uint32", PT_U32}, {"float", PT_F32},  {"float32", PT_F32}, {"double", PT_F64},
    {"float64", PT_F64},
};
static const size_t pt_size[] = {0, 1, 1, 2, 2, 4, 4, 4, 8};

typedef struct ply_prop {
  int type;       /* scalar type, or item type of a list */
  int count_type; /* PT_NONE for a scalar */
  int axis;       /* 0..2 for x/y/z of the vertex element, -1 otherwise */
} ply_prop;

typedef struct ply_elem {
  char name[32];
  size_t count, nprop;
  ply_prop prop[PLY_MAX_PROPS];
} ply_elem;

typedef struct ply_hdr {
  int format; /* 0 ascii, 1 little endian, 2 big endian */
  size_t ne;
  ply_elem e[PLY_MAX_ELEMS];
} ply_hdr;

static int ply_type(const char *t, size_t tl) {
  for (size_t i = 0; i < sizeof ply_types / sizeof ply_types[0]; i++)
    if (tok_is(t, tl, ply_types[i].name)) return ply_types[i].type;
  return PT_NONE;
}

static double ply_bin_value(const unsigned char *p, int type, int big) {
  switch (type) {
    case PT_I8: return (double)(int8_t)p[0];
    case PT_U8: return (double)p[0];
    case PT_I16: {
      uint16_t u = (uint16_t)(big ? ((unsigned)p[0] << 8 | p[1]) : ((unsigned)p[1] << 8 | p[0]));
      return (double)(int16_t)u;
    }
    case PT_U16: return (double)(big ? ((unsigned)p[0] << 8 | p[1]) : ((unsigned)p[1] << 8 | p[0]));
    case PT_I32: return (double)(int32_t)wl_get_u32(p, big);
    case PT_U32: return (double)wl_get_u32(p, big);
    case PT_F32: return wl_get_f32(p, big);
    default: return wl_get_f64(p, big);
  }
}

static hx_status ply_header(ply_hdr *h, cur *c, const char *path, hx_err *err) {
  const char *s, *tok[8];
  size_t len, tl[8];
  char b1[48];
  if (!next_line(c, &s, &len) || !(len == 3 && memcmp(s, "ply", 3) == 0))
    return hx_errf(err, HX_EFORMAT, "%s: not a PLY file (no 'ply' magic line)", path);
  int have_format = 0;
  for (;;) {
    if (!next_line(c, &s, &len))
      return hx_errf(err, HX_EFORMAT, "%s: PLY header ends without end_header (truncated?)", path);
    size_t nt = split(s, len, tok, tl, 6);
    if (nt == 0) continue;
    if (tok_is(tok[0], tl[0], "comment") || tok_is(tok[0], tl[0], "obj_info")) continue;
    if (nt > 6) return hx_errf(err, HX_EFORMAT, "%s: line %zu: too many words in a PLY header line", path, c->line);
    if (tok_is(tok[0], tl[0], "end_header")) break;
    if (tok_is(tok[0], tl[0], "format")) {
      if (nt != 3) return hx_errf(err, HX_EFORMAT, "%s: line %zu: format needs a kind and a version", path, c->line);
      if (tok_is(tok[1], tl[1], "ascii")) h->format = 0;
      else if (tok_is(tok[1], tl[1], "binary_little_endian")) h->format = 1;
      else if (tok_is(tok[1], tl[1], "binary_big_endian")) h->format = 2;
      else return hx_errf(err, HX_EFORMAT, "%s: line %zu: unknown PLY format '%s'", path, c->line, tok_str(b1, sizeof b1, tok[1], tl[1]));
      have_format = 1;
    } else if (tok_is(tok[0], tl[0], "element")) {
      size_t cnt;
      if (nt != 3 || !tok_size(tok[2], tl[2], &cnt))
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: element needs a name and a count", path, c->line);
      if (h->ne == PLY_MAX_ELEMS) return hx_errf(err, HX_EFORMAT, "%s: more than %d PLY elements", path, PLY_MAX_ELEMS);
      ply_elem *e = &h->e[h->ne++];
      tok_str(e->name, sizeof e->name, tok[1], tl[1]);
      e->count = cnt;
      e->nprop = 0;
    } else if (tok_is(tok[0], tl[0], "property")) {
      if (h->ne == 0) return hx_errf(err, HX_EFORMAT, "%s: line %zu: property before any element", path, c->line);
      ply_elem *e = &h->e[h->ne - 1];
      if (e->nprop == PLY_MAX_PROPS) return hx_errf(err, HX_EFORMAT, "%s: element '%s' has too many properties", path, e->name);
      ply_prop *p = &e->prop[e->nprop];
      p->axis = -1;
      const char *name;
      size_t nl;
      if (nt == 5 && tok_is(tok[1], tl[1], "list")) {
        p->count_type = ply_type(tok[2], tl[2]);
        p->type = ply_type(tok[3], tl[3]);
        if (p->count_type == PT_NONE || p->type == PT_NONE || p->count_type >= PT_F32)
          return hx_errf(err, HX_EFORMAT, "%s: line %zu: bad list types (count must be an integer type)", path, c->line);
        name = tok[4];
        nl = tl[4];
      } else if (nt == 3) {
        p->count_type = PT_NONE;
        p->type = ply_type(tok[1], tl[1]);
        if (p->type == PT_NONE)
          return hx_errf(err, HX_EFORMAT, "%s: line %zu: unknown property type '%s'", path, c->line, tok_str(b1, sizeof b1, tok[1], tl[1]));
        name = tok[2];
        nl = tl[2];
      } else {
        return hx_errf(err, HX_EFORMAT, "%s: line %zu: malformed property line", path, c->line);
      }
      if (strcmp(e->name, "vertex") == 0)
        for (int a = 0; a < 3; a++)
          if (tok_is(name, nl, a == 0 ? "x" : a == 1 ? "y" : "z")) p->axis = a;
      e->nprop++;
    } else {
      return hx_errf(err, HX_EFORMAT, "%s: line %zu: unknown PLY header keyword '%s'", path, c->line, tok_str(b1, sizeof b1, tok[0], tl[0]));
    }
  }
  if (!have_format) return hx_errf(err, HX_EFORMAT, "%s: PLY header has no format line", path);
  return HX_OK;
}

/* Check the vertex element: x, y, z present once each as float scalars; returns its index. */
static hx_status ply_vertex(const ply_hdr *h, size_t *vi, const char *path, hx_err *err) {
  size_t i;
  for (i = 0; i < h->ne; i++)
    if (strcmp(h->e[i].name, "vertex") == 0) break;
  if (i == h->ne) return hx_errf(err, HX_EFORMAT, "%s: PLY file has no vertex element", path);
  int seen[3] = {0, 0, 0};
  for (size_t k = 0; k < h->e[i].nprop; k++) {
    const ply_prop *p = &h->e[i].prop[k];
    if (p->axis < 0) continue;
    if (seen[p->axis]) return hx_errf(err, HX_EFORMAT, "%s: vertex property '%c' appears twice", path, "xyz"[p->axis]);
    if (p->count_type != PT_NONE)
      return hx_errf(err, HX_EFORMAT, "%s: vertex property '%c' is a list", path, "xyz"[p->axis]);
    if (p->type != PT_F32 && p->type != PT_F64)
      return hx_errf(err, HX_EUNSUPPORTED, "%s: vertex property '%c' is an integer; only float or double is supported",
                     path, "xyz"[p->axis]);
    seen[p->axis] = 1;
  }
  for (int a = 0; a < 3; a++)
    if (!seen[a]) return hx_errf(err, HX_EFORMAT, "%s: vertex element has no '%c' property", path, "xyz"[a]);
  *vi = i;
  return HX_OK;
}

/* Smallest number of bytes (binary) or values (ascii) a record of element e can take. */
static size_t ply_min_record(const ply_elem *e, int ascii) {
  size_t m = 0;
  for (size_t k = 0; k < e->nprop; k++)
    m += ascii ? 1 : pt_size[e->prop[k].count_type != PT_NONE ? e->prop[k].count_type : e->prop[k].type];
  return m;
}

static hx_status ply_binary(const ply_hdr *h, size_t vi, wl_sink *sk, const unsigned char *p,
                            const unsigned char *end, const char *path, hx_err *err) {
  int big = h->format == 2;
  for (size_t ei = 0; ei < h->ne; ei++) {
    const ply_elem *e = &h->e[ei];
    size_t minrec = ply_min_record(e, 0), need;
    if (!wl_mul_ok(e->count, minrec, &need) || need > (size_t)(end - p))
      return hx_errf(err, HX_EFORMAT, "%s: truncated: element '%s' needs at least %zu x %zu bytes, %zu left", path,
                     e->name, e->count, minrec, (size_t)(end - p));
    if (ei == vi) WL_PASS(wl_sink_init(sk, e->count, path, err));
    int has_list = 0;
    for (size_t k = 0; k < e->nprop; k++) has_list |= e->prop[k].count_type != PT_NONE;
    if (!has_list && ei != vi) { /* fixed-size records: skip at once */
      p += need;
      continue;
    }
    for (size_t r = 0; r < e->count; r++) {
      double v[3] = {0, 0, 0};
      for (size_t k = 0; k < e->nprop; k++) {
        const ply_prop *pp = &e->prop[k];
        if (pp->count_type == PT_NONE) {
          size_t sz = pt_size[pp->type];
          if ((size_t)(end - p) < sz) goto trunc;
          if (pp->axis >= 0 && ei == vi) v[pp->axis] = ply_bin_value(p, pp->type, big);
          p += sz;
        } else {
          size_t csz = pt_size[pp->count_type], isz = pt_size[pp->type], bytes;
          if ((size_t)(end - p) < csz) goto trunc;
          double cnt = ply_bin_value(p, pp->count_type, big);
          p += csz;
          if (cnt < 0) return hx_errf(err, HX_EFORMAT, "%s: element '%s' record %zu: negative list length", path, e->name, r);
          if (!wl_mul_ok((size_t)cnt, isz, &bytes) || bytes > (size_t)(end - p)) goto trunc;
          p += bytes;
        }
      }
      if (ei == vi) wl_sink_push(sk, v[0], v[1], v[2]);
      continue;
    trunc:
      return hx_errf(err, HX_EFORMAT, "%s: truncated in element '%s' record %zu of %zu", path, e->name, r, e->count);
    }
  }
  /* data the header does not account for: its counts are wrong (e.g. a vertex count below the records
   * present), so the points read may not be the file's */
  if (p != end)
    return hx_errf(err, HX_EFORMAT, "%s: %zu bytes after the last element: the header's element counts do not match the data",
                   path, (size_t)(end - p));
  return HX_OK;
}

/* Next whitespace-separated ascii value; 0 at the end of data, -1 when it is not a number. */
static int ply_ascii_value(const char **pp, const char *end, double *v) {
  const char *p = *pp, *q;
  while (p < end && is_space(*p)) p++;
  if (p == end) return 0;
  if (!parse_num(p, end, v, &q) || (q < end && *q == ',')) return -1;
  *pp = q;
  return 1;
}

static hx_status ply_ascii(const ply_hdr *h, size_t vi, wl_sink *sk, const char *p, const char *end,
                           const char *path, hx_err *err) {
  for (size_t ei = 0; ei < h->ne; ei++) {
    const ply_elem *e = &h->e[ei];
    size_t minv = ply_min_record(e, 1), need;
    /* each value takes a character and a separator: refuse counts the file cannot hold */
    if (!wl_mul_ok(e->count, 2 * minv, &need) || need > (size_t)(end - p) + 1)
      return hx_errf(err, HX_EFORMAT, "%s: truncated: element '%s' claims %zu records, the file is too short", path,
                     e->name, e->count);
    /* records without properties hold no values, so nothing bounds their count (10^16 empty records took
     * hours): skip them at once, as ply_binary skips fixed-size records (never the vertex: it has x, y, z) */
    if (minv == 0) continue;
    if (ei == vi) WL_PASS(wl_sink_init(sk, e->count, path, err));
    for (size_t r = 0; r < e->count; r++) {
      double v[3] = {0, 0, 0}, x;
      for (size_t k = 0; k < e->nprop; k++) {
        const ply_prop *pp = &e->prop[k];
        int rc = ply_ascii_value(&p, end, &x);
        if (rc <= 0) goto bad;
        if (pp->count_type == PT_NONE) {
          if (pp->axis >= 0 && ei == vi) v[pp->axis] = x;
          continue;
        }
        if (!(x >= 0.0 && x <= 2147483647.0) || x != floor(x))
          return hx_errf(err, HX_EFORMAT, "%s: element '%s' record %zu: bad list length", path, e->name, r);
        size_t items = (size_t)x;
        for (size_t j = 0; j < items; j++)
          if (ply_ascii_value(&p, end, &x) <= 0) goto bad;
      }
      if (ei == vi) wl_sink_push(sk, v[0], v[1], v[2]);
      continue;
    bad:
      return hx_errf(err, HX_EFORMAT, "%s: element '%s' record %zu of %zu: missing or non-numeric value", path,
                     e->name, r, e->count);
    }
  }
  while (p < end && is_space(*p)) p++;
  if (p != end) /* values past the last record: the header's counts are wrong, as in ply_binary */
    return hx_errf(err, HX_EFORMAT, "%s: values after the last element: the header's element counts do not match the data",
                   path);
  return HX_OK;
}

hx_status wl_read_ply(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err) {
  ply_hdr *h = calloc(1, sizeof *h);
  if (!h) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  cur c = {(const char *)d, (const char *)d + size, 0};
  wl_sink sk = {{0, NULL, 0, NULL}, 0, 0, 0, 0, 0.0};
  size_t vi = 0;
  hx_status st = ply_header(h, &c, path, err);
  if (st == HX_OK) st = ply_vertex(h, &vi, path, err);
  if (st == HX_OK && h->e[vi].count == 0) st = hx_errf(err, HX_EFORMAT, "%s: empty cloud (element vertex 0)", path);
  if (st == HX_OK) {
    if (h->format == 0) st = ply_ascii(h, vi, &sk, c.p, c.end, path, err);
    else st = ply_binary(h, vi, &sk, (const unsigned char *)c.p, d + size, path, err);
  }
  free(h);
  if (st != HX_OK) {
    wl_sink_free(&sk);
    return st;
  }
  return wl_sink_finish(&sk, out, path, err);
}

/* ---- KITTI / nuScenes .bin ------------------------------------------------------------------------- */
hx_status wl_read_bin(wl_cloud *out, const unsigned char *d, size_t size, size_t nfloat, const char *path,
                      hx_err *err) {
  size_t rec = 4 * nfloat;
  if (size % rec != 0)
    return hx_errf(err, HX_EFORMAT, "%s: size %zu is not a multiple of the %zu-byte record (%zu float32)", path, size,
                   rec, nfloat);
  if (size == 0) return hx_errf(err, HX_EFORMAT, "%s: empty cloud (empty file)", path);
  wl_sink sk;
  WL_PASS(wl_sink_init(&sk, size / rec, path, err));
  for (size_t i = 0; i < size / rec; i++)
    wl_sink_push(&sk, wl_get_f32(d + i * rec, 0), wl_get_f32(d + i * rec + 4, 0), wl_get_f32(d + i * rec + 8, 0));
  return wl_sink_finish(&sk, out, path, err);
}

/* ---- x y z text ------------------------------------------------------------------------------------ */
/* Three numbers separated by blanks or one comma (with optional blanks); the rest of the line is ignored. */
static int xyz_line(const char *s, const char *e, double v[3]) {
  const char *p = s;
  for (int k = 0; k < 3; k++) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (k > 0 && p < e && *p == ',') {
      p++;
      while (p < e && (*p == ' ' || *p == '\t')) p++;
    }
    if (!parse_num(p, e, &v[k], &p)) return 0;
  }
  return 1;
}

/* Whether a line (its blanks skipped) starts like a number: an optional sign, then a digit, or a point and a
 * digit; or a token strtod reads ("nan", "inf"). A header starts with a name ("x y z", "X,Y,Z,intensity"). */
static int starts_numeric(const char *p, const char *e) {
  const char *t = p + (p < e && (*p == '+' || *p == '-'));
  if (t < e && *t >= '0' && *t <= '9') return 1;
  if (e - t >= 2 && t[0] == '.' && t[1] >= '0' && t[1] <= '9') return 1;
  double v;
  const char *q;
  return parse_num(p, e, &v, &q);
}

/* Whether a line (its blanks skipped) is one unsigned decimal integer and nothing else: a point count. */
static int count_line(const char *p, const char *e) {
  const char *t = p;
  while (t < e && *t >= '0' && *t <= '9') t++;
  if (t == p) return 0;
  while (t < e && is_space(*t)) t++;
  return t == e;
}

/* Invariant: every content line (not blank, not a '#' or '//' comment) is a point, except that the first one
 * may be a header: one that starts with a name ("x y z"), or a lone point count (the .pts layout's first line,
 * "600000"), which must then equal the point lines that follow. A first line that starts with a number but is
 * neither three numbers nor a lone count ("1 2 zz", "1 2", "0x10 0x20 0x30") is an error naming line 1, as any
 * other malformed line is, never skipped. */
hx_status wl_read_xyz(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err) {
  size_t lines = 1;
  for (size_t i = 0; i < size; i++) lines += d[i] == '\n';
  cur c = {(const char *)d, (const char *)d + size, 0};
  if (size >= 3 && memcmp(d, "\xEF\xBB\xBF", 3) == 0) c.p += 3; /* UTF-8 byte order mark */
  wl_sink sk;
  WL_PASS(wl_sink_init(&sk, lines, path, err));
  const char *s;
  size_t len;
  int first = 1;
  size_t points = 0, declared = 0, count_at = 0; /* points: lines read as points, dropped ones included;
                                                  * count_at: the line of a lone point count, 0 when none */
  while (next_line(&c, &s, &len)) {
    const char *e = s + len, *p = s;
    while (p < e && is_space(*p)) p++;
    if (p == e || *p == '#' || (e - p >= 2 && p[0] == '/' && p[1] == '/')) continue;
    double v[3];
    if (!xyz_line(p, e, v)) {
      const int numeric = starts_numeric(p, e);
      if (first && (!numeric || count_line(p, e))) { /* one header line ("x,y,z", "X Y Z intensity", "600000") */
        if (numeric) { /* a count: saturated, so a count past SIZE_MAX still differs from the points */
          count_at = c.line;
          for (const char *t = p; t < e && *t >= '0' && *t <= '9'; t++) {
            const size_t dg = (size_t)(*t - '0');
            declared = declared > (SIZE_MAX - dg) / 10 ? SIZE_MAX : declared * 10 + dg;
          }
        }
        first = 0;
        continue;
      }
      char b1[40];
      wl_sink_free(&sk);
      return hx_errf(err, HX_EFORMAT, "%s: line %zu: expected three decimal numbers x y z, found '%s'%s", path, c.line,
                     tok_str(b1, sizeof b1, s, len),
                     first ? " (a header line starts with a name, or is a lone point count)" : "");
    }
    first = 0;
    wl_sink_push(&sk, v[0], v[1], v[2]);
    points++;
  }
  if (count_at && points != declared) { /* the count is the file's claim: a cloud that differs is not the file's */
    wl_sink_free(&sk);
    return hx_errf(err, HX_EFORMAT, "%s: line %zu: a point count of %zu, but %zu points follow", path, count_at,
                   declared, points);
  }
  return wl_sink_finish(&sk, out, path, err);
}

/* ---- dispatch -------------------------------------------------------------------------------------- */
static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  if (m > n) return 0;
  for (size_t i = 0; i < m; i++)
    if (tolower((unsigned char)s[n - m + i]) != suffix[i]) return 0;
  return 1;
}

hx_status wl_read(wl_cloud *out, const char *path, wl_format fmt, hx_err *err) {
  wl_cloud_clear(out);
  if (!path) return hx_errf(err, HX_EINVAL, "read: no path");
  unsigned char *d;
  size_t size;
  WL_PASS(wl_slurp(path, &d, &size, err));
  if (fmt == WL_FMT_AUTO) {
    if (ends_with(path, ".pcd.bin")) fmt = WL_FMT_BIN5;
    else if (ends_with(path, ".pcd")) fmt = WL_FMT_PCD;
    else if (ends_with(path, ".ply")) fmt = WL_FMT_PLY;
    else if (ends_with(path, ".bin")) fmt = WL_FMT_BIN4;
    else if (ends_with(path, ".xyz") || ends_with(path, ".txt") || ends_with(path, ".csv")) fmt = WL_FMT_XYZ;
    else if (size >= 4 && memcmp(d, "ply", 3) == 0 && (d[3] == '\n' || d[3] == '\r')) fmt = WL_FMT_PLY;
    else if (size >= 7 && (memcmp(d, "# .PCD", 6) == 0 || memcmp(d, "VERSION", 7) == 0)) fmt = WL_FMT_PCD;
    else {
      free(d);
      return hx_errf(err, HX_EINVAL, "%s: cannot tell the format from the name (.pcd .ply .bin .pcd.bin .xyz .txt "
                     ".csv) or the content; name it explicitly", path);
    }
  }
  hx_status st;
  switch (fmt) {
    case WL_FMT_PCD: st = wl_read_pcd(out, d, size, path, err); break;
    case WL_FMT_PLY: st = wl_read_ply(out, d, size, path, err); break;
    case WL_FMT_BIN4: st = wl_read_bin(out, d, size, 4, path, err); break;
    case WL_FMT_BIN5: st = wl_read_bin(out, d, size, 5, path, err); break;
    case WL_FMT_XYZ: st = wl_read_xyz(out, d, size, path, err); break;
    default: st = hx_errf(err, HX_EINVAL, "%s: unknown format %d", path, (int)fmt); break;
  }
  free(d);
  return st;
}
