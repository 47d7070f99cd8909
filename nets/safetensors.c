/*
 * safetensors.c - reader and writer of the safetensors format (stf_):
 *     [u64 little-endian N][N bytes of JSON header, may end in spaces][data area]
 * The header is one object: "__metadata__" (a map of string to string, checked and skipped) and one entry per tensor,
 *     "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * with offsets relative to the start of the data area.
 *
 * Nothing read from the file is trusted. Invariants checked before any tensor is allocated: N <= 100 MiB
 * and 8 + N <= the file size; the header is well-formed JSON (a small recursive-descent parser with a
 * nesting limit; no tree is built: the one object we know is read field by field, anything else is only
 * validated and skipped); every name is 1..127 bytes with no NUL and appears once; every dtype is F32, F16,
 * BF16, F64 or one of the integer types a PyTorch state_dict holds (I64, I32, I16, I8, U64, U32, U16, U8,
 * BOOL: BatchNorm's num_batches_tracked is I64, TransformerEngine's _extra_state U8); every shape has at
 * most 8 non-negative dimensions whose product (and its size in bytes) does not overflow; begin <= end <= the
 * data area's size, end - begin == numel * dtype size, and no two non-empty tensors share a byte. So every
 * allocation is bounded by the file's size (at most 4 times it, U8 -> fp32) and every read lies inside the
 * file. Every value is converted to fp32 (integers beyond 2^24 rounded; a finite F64 beyond fp32's range is
 * refused, naming the tensor and the value, rather than read as infinite); the file's dtype stays on the tensor,
 * so a caller can refuse integers where it needs floats. As the reference loader (Hugging Face safetensors)
 * requires, the non-empty tensors cover the data area exactly (no byte before, between or after them that no
 * tensor holds: such bytes mean offsets that are not the writer's), every string of the header is UTF-8, and
 * __metadata__'s values are strings. On failure the output is empty, nothing leaks, and the message names the
 * file and, where there is one, the tensor; bytes of a header string a message quotes (a dtype, a key, a name
 * that is refused) that are not printable ASCII, an embedded NUL included, are shown escaped (\xNN) so a message
 * never carries raw bytes of the file to the terminal.
 *
 * The writer writes fp32 tensors in the given order with the header padded with spaces to a multiple of 8
 * bytes (so the data area starts 8-byte aligned), atomically: PATH.tmp.<pid>, fsync, rename over PATH.
 */
#include "nets/nets.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads and writes fp32 data in host order: a big-endian host needs byte swaps"
#endif

#define STF_MAX_HEADER ((uint64_t)100 << 20) /* 100 MiB: ~1M tensors' entries; real headers are < 1 MiB */
#define STF_MAX_DEPTH 64                     /* JSON nesting inside a tensor entry's unknown fields */
#define STF_MAX_DIMS 8                       /* stf_tensor.shape */
#define STF_NAME_CAP 128                     /* stf_tensor.name, NUL included */

typedef struct stf_dtype {
  const char *name;
  size_t size;
} stf_dtype;
static const stf_dtype stf_dtypes[] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8},
                                       {"I32", 4}, {"I16", 2},  {"I8", 1},   {"U64", 8}, {"U32", 4},
                                       {"U16", 2}, {"U8", 1},   {"BOOL", 1}};
enum {
  STF_F32 = 0,
  STF_F16 = 1,
  STF_BF16 = 2,
  STF_F64 = 3,
  STF_I64 = 4, /* STF_I64 .. STF_I8 signed, STF_U64 .. STF_BOOL unsigned integers */
  STF_I8 = 7,
  STF_U64 = 8,
  STF_BOOL = 12,
  STF_NDTYPES = 13
};

/* One header entry as parsed (offsets relative to the data area). */
typedef struct stf_entry {
  char name[STF_NAME_CAP];
  int dtype;
  int ndim;
  int64_t shape[STF_MAX_DIMS];
  uint64_t begin, end, numel;
} stf_entry;

/* ---- JSON cursor ------------------------------------------------------------------------------------- */
typedef struct jcur {
  const char *begin, *p, *end;
  const char *path;
  hx_err *err;
} jcur;

/* A control character (C0, DEL, or C1 as UTF-8) in a NUL-terminated name: it would reach the terminal through every
 * message that names the tensor, and no module name holds one, so neither stf_read nor stf_write takes it. */
static int has_control(const char *name) {
  for (const unsigned char *q = (const unsigned char *)name; *q; q++)
    if (*q < 0x20 || *q == 0x7f || (*q == 0xc2 && q[1] >= 0x80 && q[1] <= 0x9f)) return 1;
  return 0;
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it is not one: no overlong form, no
 * surrogate, nothing past U+10FFFF (what a JSON text must be, and the reference loader requires). */
static size_t utf8_len(const unsigned char *p, size_t n) {
  if (n == 0) return 0;
  if (p[0] < 0x80) return 1;
  size_t k;
  unsigned lo = 0x80, hi = 0xBF;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) k = 2;
  else if (p[0] >= 0xE0 && p[0] <= 0xEF) k = 3, lo = p[0] == 0xE0 ? 0xA0 : 0x80, hi = p[0] == 0xED ? 0x9F : 0xBF;
  else if (p[0] >= 0xF0 && p[0] <= 0xF4) k = 4, lo = p[0] == 0xF0 ? 0x90 : 0x80, hi = p[0] == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (n < k || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return k;
}

/* Up to n bytes of s for a message, NUL-terminated in out (cap >= 8): printable ASCII as it is, '\\' and every
 * other byte (an embedded NUL too) as \xNN, "..." when cut here or when `cut` says s is already a prefix. Every
 * string from the header that a message quotes (a name, a key, a dtype) reaches the terminal only so. */
static const char *shown(char *out, size_t cap, const char *s, size_t n, int cut) {
  size_t k = 0, i = 0;
  for (; i < n; i++) {
    const unsigned char ch = (unsigned char)s[i];
    const int plain = ch >= 0x20 && ch < 0x7f && ch != '\\';
    if (k + (plain ? 1u : 4u) + 4u > cap) break;
    if (plain) out[k++] = (char)ch;
    else k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
  }
  if (i < n || cut) k += (size_t)snprintf(out + k, cap - k, "...");
  out[k] = 0;
  return out;
}

static hx_status jfail(jcur *c, const char *what) {
  return hx_errf(c->err, HX_EFORMAT, "%s: malformed safetensors header at byte %zu: %s", c->path,
                 (size_t)(c->p - c->begin) + 8u, what);
}

static void jws(jcur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Skip white space, then require the character ch and step over it. */
static hx_status jexpect(jcur *c, char ch, const char *what) {
  jws(c);
  if (c->p >= c->end || *c->p != ch) return jfail(c, what);
  c->p++;
  return HX_OK;
}

static int jhex(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

static hx_status ju4(jcur *c, unsigned *u) {
  if (c->end - c->p < 4) return jfail(c, "truncated \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = jhex(c->p[i]);
    if (h < 0) return jfail(c, "bad \\u escape");
    v = v * 16u + (unsigned)h;
  }
  c->p += 4;
  *u = v;
  return HX_OK;
}

/* Append one decoded byte: kept while it fits in cap - 1 bytes, always counted in *len. */
static void jput(char *out, size_t cap, size_t *len, unsigned byte) {
  if (out && *len + 1 < cap) out[*len] = (char)(unsigned char)byte;
  (*len)++;
}

/*
 * A JSON string at the cursor (white space skipped first). Decoded (escapes, \u with surrogate pairs, as
 * UTF-8) into out (cap bytes, NUL-terminated, truncated) when out is not NULL; *len gets the full decoded
 * length and *has_nul whether it holds a NUL byte. Raw control characters are refused, as JSON requires.
 */
static hx_status jstring(jcur *c, char *out, size_t cap, size_t *len, int *has_nul) {
  size_t n = 0;
  int nul = 0;
  HX_TRY(jexpect(c, '"', "expected a string"));
  const char *start = c->p;
  for (;;) {
    if (c->p >= c->end) return jfail(c, "unterminated string");
    unsigned char ch = (unsigned char)*c->p++;
    if (ch == '"') break;
    if (ch < 0x20) return jfail(c, "control character inside a string");
    if (ch >= 0x80) { /* a raw multi-byte character: valid UTF-8, or the string is refused, shown escaped */
      const size_t k = utf8_len((const unsigned char *)c->p - 1, (size_t)(c->end - c->p) + 1u);
      if (!k) {
        const char *q = c->p;
        while (q < c->end && *q != '"') q++;
        char b[200], msg[240];
        c->p--;
        snprintf(msg, sizeof msg, "a string that is not UTF-8: \"%s\"",
                 shown(b, sizeof b, start, (size_t)(q - start), 0));
        return jfail(c, msg);
      }
      for (size_t i = 0; i < k; i++) jput(out, cap, &n, (unsigned char)c->p[(ptrdiff_t)i - 1]);
      c->p += k - 1;
      continue;
    }
    if (ch != '\\') {
      jput(out, cap, &n, ch);
      continue;
    }
    if (c->p >= c->end) return jfail(c, "unterminated string");
    char e = *c->p++;
    unsigned u = 0;
    switch (e) {
    case '"': case '\\': case '/': jput(out, cap, &n, (unsigned char)e); continue;
    case 'b': jput(out, cap, &n, '\b'); continue;
    case 'f': jput(out, cap, &n, '\f'); continue;
    case 'n': jput(out, cap, &n, '\n'); continue;
    case 'r': jput(out, cap, &n, '\r'); continue;
    case 't': jput(out, cap, &n, '\t'); continue;
    case 'u': break;
    default: c->p--; return jfail(c, "bad escape in a string");
    }
    HX_TRY(ju4(c, &u));
    if (u >= 0xDC00 && u <= 0xDFFF) return jfail(c, "lone low surrogate in a \\u escape");
    if (u >= 0xD800 && u <= 0xDBFF) {
      unsigned lo = 0;
      if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u') return jfail(c, "lone high surrogate");
      c->p += 2;
      HX_TRY(ju4(c, &lo));
      if (lo < 0xDC00 || lo > 0xDFFF) return jfail(c, "high surrogate not followed by a low one");
      u = 0x10000u + ((u - 0xD800u) << 10) + (lo - 0xDC00u);
    }
    if (u == 0) nul = 1;
    if (u < 0x80) {
      jput(out, cap, &n, u);
    } else if (u < 0x800) {
      jput(out, cap, &n, 0xC0u | (u >> 6));
      jput(out, cap, &n, 0x80u | (u & 0x3Fu));
    } else if (u < 0x10000) {
      jput(out, cap, &n, 0xE0u | (u >> 12));
      jput(out, cap, &n, 0x80u | ((u >> 6) & 0x3Fu));
      jput(out, cap, &n, 0x80u | (u & 0x3Fu));
    } else {
      jput(out, cap, &n, 0xF0u | (u >> 18));
      jput(out, cap, &n, 0x80u | ((u >> 12) & 0x3Fu));
      jput(out, cap, &n, 0x80u | ((u >> 6) & 0x3Fu));
      jput(out, cap, &n, 0x80u | (u & 0x3Fu));
    }
  }
  if (out && cap) out[n < cap ? n : cap - 1] = 0;
  if (len) *len = n;
  if (has_nul) *has_nul = nul;
  return HX_OK;
}

static int jdigit(const jcur *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/*
 * A JSON number at the cursor, by the grammar -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. When v is not
 * NULL it must be a non-negative integer no larger than INT64_MAX, stored in *v; what names the value in
 * the message.
 */
static hx_status jnumber(jcur *c, uint64_t *v, const char *what) {
  char msg[96];
  jws(c);
  int neg = 0, frac = 0, over = 0;
  uint64_t x = 0;
  if (c->p < c->end && *c->p == '-') neg = 1, c->p++;
  if (!jdigit(c)) return jfail(c, "expected a number");
  if (*c->p == '0') {
    c->p++;
    if (jdigit(c)) return jfail(c, "number with a leading zero");
  } else {
    while (jdigit(c)) {
      unsigned d = (unsigned)(*c->p++ - '0');
      if (x > ((uint64_t)INT64_MAX - d) / 10u) over = 1;
      else x = x * 10u + d;
    }
  }
  if (c->p < c->end && *c->p == '.') {
    frac = 1, c->p++;
    if (!jdigit(c)) return jfail(c, "number with no digits after '.'");
    while (jdigit(c)) c->p++;
  }
  if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
    frac = 1, c->p++;
    if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
    if (!jdigit(c)) return jfail(c, "number with no exponent digits");
    while (jdigit(c)) c->p++;
  }
  if (!v) return HX_OK;
  if (neg && (x != 0 || frac)) snprintf(msg, sizeof msg, "negative %s", what);
  else if (frac) snprintf(msg, sizeof msg, "%s is not an integer", what);
  else if (over) snprintf(msg, sizeof msg, "%s larger than 2^63 - 1", what);
  else {
    *v = x;
    return HX_OK;
  }
  return jfail(c, msg);
}

static hx_status jliteral(jcur *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return jfail(c, "unexpected character");
  c->p += n;
  return HX_OK;
}

/* Validate and step over any JSON value (the contents of __metadata__ and of unknown fields). */
static hx_status jskip(jcur *c, int depth) {
  jws(c);
  if (c->p >= c->end) return jfail(c, "unexpected end of the header");
  if (depth > STF_MAX_DEPTH) return jfail(c, "nested more than 64 deep");
  switch (*c->p) {
  case '"': return jstring(c, NULL, 0, NULL, NULL);
  case 't': return jliteral(c, "true");
  case 'f': return jliteral(c, "false");
  case 'n': return jliteral(c, "null");
  case '{':
  case '[': {
    const char close = *c->p == '{' ? '}' : ']';
    const int object = close == '}';
    c->p++;
    jws(c);
    if (c->p < c->end && *c->p == close) {
      c->p++;
      return HX_OK;
    }
    for (;;) {
      if (object) {
        HX_TRY(jstring(c, NULL, 0, NULL, NULL));
        HX_TRY(jexpect(c, ':', "expected ':' after a key"));
      }
      HX_TRY(jskip(c, depth + 1));
      jws(c);
      if (c->p < c->end && *c->p == ',') {
        c->p++;
        continue;
      }
      return jexpect(c, close, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  default:
    if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) return jnumber(c, NULL, NULL);
    return jfail(c, "unexpected character");
  }
}

/* __metadata__: an object whose values are strings (the reference loader's map of string to string). */
static hx_status jmeta(jcur *c) {
  HX_TRY(jexpect(c, '{', "__metadata__ must be an object"));
  jws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
    return HX_OK;
  }
  for (;;) {
    char key[64], b[100], msg[200];
    size_t klen = 0;
    HX_TRY(jstring(c, key, sizeof key, &klen, NULL));
    HX_TRY(jexpect(c, ':', "expected ':' after a key"));
    jws(c);
    if (c->p >= c->end || *c->p != '"') {
      snprintf(msg, sizeof msg, "__metadata__ value of \"%s\" is not a string (a map of string to string)",
               shown(b, sizeof b, key, klen < sizeof key ? klen : sizeof key - 1, klen >= sizeof key));
      return jfail(c, msg);
    }
    HX_TRY(jstring(c, NULL, 0, NULL, NULL));
    jws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    return jexpect(c, '}', "expected ',' or '}'");
  }
}

/* An array of non-negative integers into v (at most cap; more is "too many"): the shape and offsets. */
static hx_status jint_array(jcur *c, uint64_t *v, int cap, int *count, const char *what, const char *too_many) {
  int n = 0;
  HX_TRY(jexpect(c, '[', "expected '['"));
  jws(c);
  if (c->p < c->end && *c->p == ']') {
    c->p++;
    *count = 0;
    return HX_OK;
  }
  for (;;) {
    if (n == cap) return jfail(c, too_many);
    HX_TRY(jnumber(c, &v[n], what));
    n++;
    jws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    HX_TRY(jexpect(c, ']', "expected ',' or ']'"));
    *count = n;
    return HX_OK;
  }
}

/* One tensor's entry object: dtype, shape and data_offsets, each exactly once; unknown fields skipped. */
static hx_status jentry(jcur *c, stf_entry *e) {
  int have_dtype = 0, have_shape = 0, have_offsets = 0;
  char key[32], dt[16];
  size_t klen = 0, dlen = 0;
  HX_TRY(jexpect(c, '{', "a tensor's entry must be an object"));
  jws(c);
  if (c->p < c->end && *c->p == '}') return hx_errf(c->err, HX_EFORMAT, "%s: tensor %s: empty entry", c->path, e->name);
  for (;;) {
    HX_TRY(jstring(c, key, sizeof key, &klen, NULL));
    HX_TRY(jexpect(c, ':', "expected ':' after a key"));
    int *seen = NULL;
    if (klen == 5 && strcmp(key, "dtype") == 0) {
      seen = &have_dtype;
      if (!*seen) {
        HX_TRY(jstring(c, dt, sizeof dt, &dlen, NULL));
        e->dtype = -1;
        for (int i = 0; i < STF_NDTYPES; i++)
          if (dlen == strlen(stf_dtypes[i].name) && strcmp(dt, stf_dtypes[i].name) == 0) e->dtype = i;
        if (e->dtype < 0) { /* shown escaped as a name is: an ESC or C1 from a \u escape, an embedded NUL */
          char b[64];
          return hx_errf(c->err, HX_EFORMAT, "%s: tensor %s: dtype \"%s\" not supported (F32, F16, BF16, F64, "
                         "I64, I32, I16, I8, U64, U32, U16, U8, BOOL)", c->path, e->name,
                         shown(b, sizeof b, dt, dlen < sizeof dt ? dlen : sizeof dt - 1u, dlen >= sizeof dt));
        }
      }
    } else if (klen == 5 && strcmp(key, "shape") == 0) {
      seen = &have_shape;
      if (!*seen) {
        uint64_t v[STF_MAX_DIMS];
        HX_TRY(jint_array(c, v, STF_MAX_DIMS, &e->ndim, "dimension", "shape has more than 8 dimensions"));
        for (int i = 0; i < e->ndim; i++) e->shape[i] = (int64_t)v[i];
      }
    } else if (klen == 12 && strcmp(key, "data_offsets") == 0) {
      seen = &have_offsets;
      if (!*seen) {
        uint64_t v[2];
        int n = 0;
        HX_TRY(jint_array(c, v, 2, &n, "data offset", "data_offsets has more than 2 values"));
        if (n != 2)
          return hx_errf(c->err, HX_EFORMAT, "%s: tensor %s: data_offsets needs 2 values, has %d", c->path, e->name, n);
        e->begin = v[0];
        e->end = v[1];
      }
    } else {
      HX_TRY(jskip(c, 1));
    }
    if (seen) {
      if (*seen)
        return hx_errf(c->err, HX_EFORMAT, "%s: tensor %s: field %s given twice", c->path, e->name, key);
      *seen = 1;
    }
    jws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    HX_TRY(jexpect(c, '}', "expected ',' or '}'"));
    break;
  }
  const char *missing = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_offsets ? "data_offsets" : NULL;
  if (missing) return hx_errf(c->err, HX_EFORMAT, "%s: tensor %s: no %s", c->path, e->name, missing);
  return HX_OK;
}

/* The whole header: fills *ents (n entries, in header order). The caller frees *ents on any status. */
static hx_status parse_header(jcur *c, stf_entry **ents, size_t *n) {
  size_t cap = 0;
  int have_meta = 0;
  *ents = NULL;
  *n = 0;
  HX_TRY(jexpect(c, '{', "the header must be a JSON object"));
  jws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
  } else {
    for (;;) {
      char name[STF_NAME_CAP];
      size_t len = 0;
      int nul = 0;
      HX_TRY(jstring(c, name, sizeof name, &len, &nul));
      HX_TRY(jexpect(c, ':', "expected ':' after a key"));
      if (len == 12 && strcmp(name, "__metadata__") == 0) {
        if (have_meta) return jfail(c, "__metadata__ given twice");
        have_meta = 1;
        HX_TRY(jmeta(c));
      } else {
        if (len == 0) return jfail(c, "empty tensor name");
        if (nul) return jfail(c, "tensor name holds a NUL character");
        if (has_control(name)) return jfail(c, "tensor name holds an escaped control character");
        if (len >= STF_NAME_CAP)
        {
          char b[100];
          return hx_errf(c->err, HX_EFORMAT, "%s: tensor name longer than 127 bytes (%zu): %s", c->path, len,
                         shown(b, sizeof b, name, 61, 1));
        }
        if (*n == cap) {
          size_t nc = cap ? 2 * cap : 64;
          stf_entry *grown = realloc(*ents, nc * sizeof *grown);
          if (!grown) return hx_errf(c->err, HX_ENOMEM, "%s: out of memory for %zu header entries", c->path, nc);
          *ents = grown;
          cap = nc;
        }
        stf_entry *e = &(*ents)[*n];
        memset(e, 0, sizeof *e);
        memcpy(e->name, name, len + 1);
        HX_TRY(jentry(c, e));
        (*n)++;
      }
      jws(c);
      if (c->p < c->end && *c->p == ',') {
        c->p++;
        continue;
      }
      HX_TRY(jexpect(c, '}', "expected ',' or '}'"));
      break;
    }
  }
  jws(c); /* the format pads the header with spaces */
  if (c->p != c->end) return jfail(c, "bytes after the header object");
  return HX_OK;
}

/* ---- validation of the parsed entries ------------------------------------------------------------------ */
static int cmp_name(const void *a, const void *b) {
  return strcmp((*(const stf_entry *const *)a)->name, (*(const stf_entry *const *)b)->name);
}

static int cmp_begin(const void *a, const void *b) {
  const stf_entry *x = *(const stf_entry *const *)a, *y = *(const stf_entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Sizes, offsets inside the data area, no duplicate names, no overlap, and the non-empty tensors cover the data
 * area exactly: a byte no tensor holds (a gap, or data past the last tensor) means offsets that are not the
 * writer's, so the values read may not be the tensors' (the reference loader refuses both). */
static hx_status check_entries(stf_entry *e, size_t n, uint64_t data_size, const char *path, hx_err *err) {
  for (size_t i = 0; i < n; i++) {
    uint64_t numel = 1;
    int zero = 0;
    for (int d = 0; d < e[i].ndim; d++) zero |= e[i].shape[d] == 0;
    for (int d = 0; d < e[i].ndim && !zero; d++) {
      const uint64_t s = (uint64_t)e[i].shape[d];
      if (numel > UINT64_MAX / s)
        return hx_errf(err, HX_EFORMAT, "%s: tensor %s: shape's element count overflows", path, e[i].name);
      numel *= s;
    }
    if (zero) numel = 0;
    const size_t es = stf_dtypes[e[i].dtype].size;
    if (numel > UINT64_MAX / es)
      return hx_errf(err, HX_EFORMAT, "%s: tensor %s: shape's byte count overflows", path, e[i].name);
    e[i].numel = numel;
    if (e[i].begin > e[i].end)
      return hx_errf(err, HX_EFORMAT, "%s: tensor %s: data_offsets begin %llu > end %llu", path, e[i].name,
                     (unsigned long long)e[i].begin, (unsigned long long)e[i].end);
    if (e[i].end > data_size)
      return hx_errf(err, HX_EFORMAT, "%s: tensor %s: data_offsets end %llu past the data area (%llu bytes; file "
                     "truncated?)", path, e[i].name, (unsigned long long)e[i].end, (unsigned long long)data_size);
    if (e[i].end - e[i].begin != numel * es)
      return hx_errf(err, HX_EFORMAT, "%s: tensor %s: size mismatch: data_offsets span %llu bytes, the shape needs "
                     "%llu (%llu x %s)", path, e[i].name, (unsigned long long)(e[i].end - e[i].begin),
                     (unsigned long long)(numel * es), (unsigned long long)numel, stf_dtypes[e[i].dtype].name);
  }
  if (n == 0) {
    if (data_size == 0) return HX_OK;
    return hx_errf(err, HX_EFORMAT, "%s: %llu bytes of data and no tensor to hold them", path,
                   (unsigned long long)data_size);
  }
  const stf_entry **ix = malloc(n * sizeof *ix);
  if (!ix) return hx_errf(err, HX_ENOMEM, "%s: out of memory for %zu tensors", path, n);
  for (size_t i = 0; i < n; i++) ix[i] = &e[i];
  hx_status st = HX_OK;
  qsort(ix, n, sizeof *ix, cmp_name);
  for (size_t i = 1; i < n && st == HX_OK; i++)
    if (strcmp(ix[i - 1]->name, ix[i]->name) == 0)
      st = hx_errf(err, HX_EFORMAT, "%s: tensor %s: duplicate name", path, ix[i]->name);
  if (st == HX_OK) {
    /* sorted by begin: a non-empty tensor starting before the furthest end so far shares bytes with it */
    qsort(ix, n, sizeof *ix, cmp_begin);
    const stf_entry *far = NULL;
    for (size_t i = 0; i < n && st == HX_OK; i++) {
      if (ix[i]->begin == ix[i]->end) continue;
      if (far && ix[i]->begin < far->end)
        st = hx_errf(err, HX_EFORMAT, "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap", path, far->name,
                     (unsigned long long)far->begin, (unsigned long long)far->end, ix[i]->name,
                     (unsigned long long)ix[i]->begin, (unsigned long long)ix[i]->end);
      if (!far || ix[i]->end > far->end) far = ix[i];
    }
  }
  if (st == HX_OK) { /* no overlap: in begin order, each non-empty tensor starts where the one before ends */
    const stf_entry *prev = NULL;
    uint64_t pos = 0;
    for (size_t i = 0; i < n && st == HX_OK; i++) {
      if (ix[i]->begin == ix[i]->end) continue;
      if (ix[i]->begin != pos)
        st = hx_errf(err, HX_EFORMAT, "%s: bytes [%llu, %llu) of the data area belong to no tensor (%s%s%s%s): "
                     "the tensors' data_offsets must cover it without gaps", path, (unsigned long long)pos,
                     (unsigned long long)ix[i]->begin, prev ? "between " : "before ", prev ? prev->name : "",
                     prev ? " and " : "", ix[i]->name);
      pos = ix[i]->end;
      prev = ix[i];
    }
    if (st == HX_OK && pos != data_size)
      st = hx_errf(err, HX_EFORMAT, "%s: %llu bytes after the last tensor's data (%s ends at %llu of %llu): the "
                   "tensors' data_offsets must cover the data area", path, (unsigned long long)(data_size - pos),
                   prev ? prev->name : "none", (unsigned long long)pos, (unsigned long long)data_size);
  }
  free(ix);
  return st;
}

/* ---- reading ------------------------------------------------------------------------------------------- */
/* Read exactly n bytes at offset off; HX_EIO on an error or a short read (the file changed under us). */
static hx_status read_at(int fd, void *dst, size_t n, uint64_t off, const char *path, const char *what, hx_err *err) {
  unsigned char *p = dst;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return hx_errf(err, HX_EIO, "%s: %s: read failed at byte %llu: %s", path, what, (unsigned long long)off,
                     r < 0 ? strerror(errno) : "unexpected end of file");
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return HX_OK;
}

static float f16_to_f32(uint16_t h) { return net_to_float(NET_F16, h); }
static float bf16_to_f32(uint16_t h) { return net_to_float(NET_BF16, h); }

/* One tensor's values, converted to fp32 into dst (numel floats). */
static hx_status read_tensor(int fd, float *dst, const stf_entry *e, uint64_t base, const char *path, hx_err *err) {
  if (e->numel == 0) return HX_OK;
  if (e->dtype == STF_F32) return read_at(fd, dst, (size_t)e->numel * 4u, base + e->begin, path, e->name, err);
  unsigned char buf[1 << 16];
  const size_t es = stf_dtypes[e->dtype].size, per = sizeof buf / es;
  for (uint64_t i = 0; i < e->numel;) {
    const size_t m = (size_t)(e->numel - i < per ? e->numel - i : per);
    HX_TRY(read_at(fd, buf, m * es, base + e->begin + i * es, path, e->name, err));
    for (size_t k = 0; k < m; k++) {
      const unsigned char *b = buf + k * es;
      if (e->dtype == STF_F64) {
        double d;
        memcpy(&d, b, sizeof d);
        dst[i + k] = (float)d; /* IEEE: a finite d beyond fp32's range rounds to +-inf, refused below */
        if (isfinite(d) && isinf(dst[i + k]))
          return hx_errf(err, HX_EFORMAT, "%s: tensor %s: value %llu (%.9g, F64) is out of fp32's range "
                         "(|x| <= %.9g)", path, e->name, (unsigned long long)(i + k), d, (double)FLT_MAX);
      } else if (e->dtype >= STF_I64) { /* little-endian integers, sign-extended from es bytes */
        uint64_t u = 0;
        for (size_t q = es; q > 0; q--) u = u << 8 | b[q - 1u];
        if (e->dtype <= STF_I8 && es < 8u && (u >> (8u * es - 1u)) & 1u) u |= ~(uint64_t)0 << (8u * es);
        dst[i + k] = e->dtype <= STF_I8 ? (float)(int64_t)u : (float)u;
      } else {
        const uint16_t h = (uint16_t)(b[0] | (b[1] << 8));
        dst[i + k] = e->dtype == STF_F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
    }
    i += m;
  }
  return HX_OK;
}

void stf_free(stf_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->n; i++) free(f->t[i].data);
  free(f->t);
  f->t = NULL;
  f->n = 0;
}

/* fd: a regular file of `size` bytes (hx_open_regular) */
static hx_status read_file(stf_file *out, int fd, uint64_t size, const char *path, hx_err *err) {
  if (size < 8) return hx_errf(err, HX_EFORMAT, "%s: truncated: %llu bytes, not even the 8-byte header length", path,
                               (unsigned long long)size);
  unsigned char lenb[8];
  HX_TRY(read_at(fd, lenb, 8, 0, path, "header length", err));
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | lenb[i];
  if (hlen > STF_MAX_HEADER)
    return hx_errf(err, HX_EFORMAT, "%s: header length %llu larger than the 100 MiB limit (not a safetensors file?)",
                   path, (unsigned long long)hlen);
  if (hlen > size - 8)
    return hx_errf(err, HX_EFORMAT, "%s: header length %llu past the end of the file (%llu bytes; truncated?)", path,
                   (unsigned long long)hlen, (unsigned long long)size);
  if (hlen < 2) return hx_errf(err, HX_EFORMAT, "%s: header length %llu: too short for a JSON object", path,
                               (unsigned long long)hlen);
  char *hdr = malloc((size_t)hlen);
  if (!hdr) return hx_errf(err, HX_ENOMEM, "%s: out of memory for a %llu-byte header", path, (unsigned long long)hlen);
  stf_entry *ents = NULL;
  size_t n = 0;
  hx_status st = read_at(fd, hdr, (size_t)hlen, 8, path, "header", err);
  if (st == HX_OK) {
    jcur c = {hdr, hdr, hdr + hlen, path, err};
    st = parse_header(&c, &ents, &n);
  }
  free(hdr);
  if (st == HX_OK) st = check_entries(ents, n, size - 8 - hlen, path, err);
  if (st == HX_OK && n > 0) {
    out->t = calloc(n, sizeof *out->t);
    if (!out->t) st = hx_errf(err, HX_ENOMEM, "%s: out of memory for %zu tensors", path, n);
  }
  for (size_t i = 0; i < n && st == HX_OK; i++) {
    stf_tensor *t = &out->t[i];
    memcpy(t->name, ents[i].name, sizeof t->name);
    snprintf(t->dtype, sizeof t->dtype, "%s", stf_dtypes[ents[i].dtype].name);
    t->ndim = ents[i].ndim;
    memcpy(t->shape, ents[i].shape, sizeof t->shape);
    /* numel * 4 <= 4 * file size (U8 is the narrowest), so this is bounded; never NULL, even when empty */
    const size_t cnt = ents[i].numel ? (size_t)ents[i].numel : 1u;
    t->data = malloc(cnt * sizeof *t->data);
    out->n = i + 1;
    if (!t->data) st = hx_errf(err, HX_ENOMEM, "%s: tensor %s: out of memory for %zu values", path, t->name, cnt);
    else st = read_tensor(fd, t->data, &ents[i], 8 + hlen, path, err);
  }
  free(ents);
  return st;
}

hx_status stf_read(stf_file *out, const char *path, hx_err *err) {
  if (!out || !path) return hx_errf(err, HX_EINVAL, "stf_read: missing output or path");
  out->t = NULL;
  out->n = 0;
  int fd;
  size_t size;
  HX_TRY(hx_open_regular(path, &fd, &size, err)); /* a FIFO is refused, not waited on */
  hx_status st = read_file(out, fd, (uint64_t)size, path, err);
  close(fd);
  if (st != HX_OK) stf_free(out);
  return st;
}

/* ---- writing ------------------------------------------------------------------------------------------- */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t nc = (b->n + n + 1) * 2;
    char *g = realloc(b->p, nc);
    if (!g) {
      b->oom = 1;
      return;
    }
    b->p = g;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(sbuf *b, uint64_t v) {
  char tmp[24];
  int k = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  sb_put(b, tmp, (size_t)k);
}

/* A JSON string literal: '"' and '\\' escaped, control characters as \u00XX, other bytes as they are. */
static void sb_json(sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (; *s; s++) {
    const unsigned char ch = (unsigned char)*s;
    char tmp[8];
    if (ch == '"' || ch == '\\') {
      tmp[0] = '\\', tmp[1] = (char)ch;
      sb_put(b, tmp, 2);
    } else if (ch < 0x20) {
      snprintf(tmp, sizeof tmp, "\\u%04x", ch);
      sb_put(b, tmp, 6);
    } else {
      sb_put(b, s, 1);
    }
  }
  sb_put(b, "\"", 1);
}

static int cmp_tname(const void *a, const void *b) {
  return strcmp((*(const stf_tensor *const *)a)->name, (*(const stf_tensor *const *)b)->name);
}

/* The arguments of stf_write: names 1..127 bytes, unique; ndim 0..8; shapes >= 0 without overflow; data. */
static hx_status check_write(const stf_tensor *t, size_t n, uint64_t *numel, const char *path, hx_err *err) {
  for (size_t i = 0; i < n; i++) {
    const char *nm = t[i].name;
    if (!memchr(nm, 0, sizeof t[i].name))
      return hx_errf(err, HX_EINVAL, "%s: tensor %zu: name not NUL-terminated within 127 bytes", path, i);
    if (!nm[0]) return hx_errf(err, HX_EINVAL, "%s: tensor %zu: empty name", path, i);
    if (has_control(nm)) return hx_errf(err, HX_EINVAL, "%s: tensor %zu: name holds a control character", path, i);
    for (size_t q = 0, k; nm[q]; q += k) /* the reader takes UTF-8 names only: what it would refuse is not written */
      if (!(k = utf8_len((const unsigned char *)nm + q, strlen(nm + q))))
        return hx_errf(err, HX_EINVAL, "%s: tensor %zu: name is not UTF-8 (byte %zu)", path, i, q);
    if (t[i].ndim < 0 || t[i].ndim > STF_MAX_DIMS)
      return hx_errf(err, HX_EINVAL, "%s: tensor %s: %d dimensions (0..8 allowed)", path, nm, t[i].ndim);
    uint64_t m = 1;
    int zero = 0;
    for (int d = 0; d < t[i].ndim; d++) {
      if (t[i].shape[d] < 0)
        return hx_errf(err, HX_EINVAL, "%s: tensor %s: negative dimension %lld", path, nm, (long long)t[i].shape[d]);
      zero |= t[i].shape[d] == 0;
    }
    for (int d = 0; d < t[i].ndim && !zero; d++) {
      if (m > (UINT64_MAX / 4u) / (uint64_t)t[i].shape[d])
        return hx_errf(err, HX_EINVAL, "%s: tensor %s: element count overflows", path, nm);
      m *= (uint64_t)t[i].shape[d];
    }
    numel[i] = zero ? 0 : m;
    if (numel[i] && !t[i].data) return hx_errf(err, HX_EINVAL, "%s: tensor %s: no data", path, nm);
  }
  if (n < 2) return HX_OK;
  const stf_tensor **ix = malloc(n * sizeof *ix);
  if (!ix) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  for (size_t i = 0; i < n; i++) ix[i] = &t[i];
  qsort(ix, n, sizeof *ix, cmp_tname);
  hx_status st = HX_OK;
  for (size_t i = 1; i < n && st == HX_OK; i++)
    if (strcmp(ix[i - 1]->name, ix[i]->name) == 0)
      st = hx_errf(err, HX_EINVAL, "%s: tensor %s: duplicate name", path, ix[i]->name);
  free(ix);
  return st;
}

/* The header (JSON + spaces to a multiple of 8 bytes) for tensors of numel[i] fp32 values. */
static hx_status build_header(sbuf *b, const stf_tensor *t, const uint64_t *numel, size_t n, const char *path,
                              hx_err *err) {
  uint64_t off = 0;
  sb_str(b, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (size_t i = 0; i < n; i++) {
    sb_str(b, ",");
    sb_json(b, t[i].name);
    sb_str(b, ":{\"dtype\":\"F32\",\"shape\":[");
    for (int d = 0; d < t[i].ndim; d++) {
      if (d) sb_str(b, ",");
      sb_u64(b, (uint64_t)t[i].shape[d]);
    }
    sb_str(b, "],\"data_offsets\":[");
    sb_u64(b, off);
    sb_str(b, ",");
    if (numel[i] * 4u > UINT64_MAX - off) return hx_errf(err, HX_EINVAL, "%s: total size overflows", path);
    off += numel[i] * 4u;
    sb_u64(b, off);
    sb_str(b, "]}");
  }
  sb_str(b, "}");
  while (!b->oom && b->n % 8u) sb_str(b, " ");
  if (b->oom) return hx_errf(err, HX_ENOMEM, "%s: out of memory for the header", path);
  return HX_OK;
}

hx_status stf_write(const char *path, const stf_tensor *t, size_t n, hx_err *err) {
  if (!path || (n > 0 && !t)) return hx_errf(err, HX_EINVAL, "stf_write: missing path or tensors");
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return hx_errf(err, HX_EINVAL, "%s: exists and is not a regular file: not replaced", path);
  uint64_t *numel = malloc((n ? n : 1) * sizeof *numel);
  if (!numel) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  sbuf h = {0};
  hx_status st = check_write(t, n, numel, path, err);
  if (st == HX_OK) st = build_header(&h, t, numel, n, path, err);
  if (st != HX_OK) {
    free(numel);
    free(h.p);
    return st;
  }
  const size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  FILE *f = NULL;
  if (!tmp) {
    st = hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  } else {
    hx_tmp_path(tmp, plen + 32, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) st = hx_errf(err, HX_EIO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    else if (!(f = fdopen(fd, "wb"))) {
      st = hx_errf(err, HX_EIO, "%s: fdopen: %s", path, strerror(errno));
      close(fd);
      unlink(tmp);
    }
  }
  if (st == HX_OK) {
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    int ok = fwrite(lenb, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
    for (size_t i = 0; i < n && ok; i++)
      ok = numel[i] == 0 || fwrite(t[i].data, sizeof(float), (size_t)numel[i], f) == numel[i];
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    const int e1 = errno;
    const int closed = fclose(f) == 0;
    if (!ok || !closed) st = hx_errf(err, HX_EIO, "%s: write failed: %s", tmp, strerror(ok ? errno : e1));
    else if (rename(tmp, path) != 0) st = hx_errf(err, HX_EIO, "%s: rename from %s: %s", path, tmp, strerror(errno));
    if (st != HX_OK) unlink(tmp);
  }
  free(tmp);
  free(numel);
  free(h.p);
  return st;
}
