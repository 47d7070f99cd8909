/*
 * test_safetensors.c - the safetensors reader and writer (stf_) and the model-independent part of net.c:
 * round trips (0-d scalar, a 0-size dimension, names with escapes, the header's 8-byte padding), F16 / BF16 /
 * F64 and integer (I64 .. U8, BOOL) files composed byte by byte here, every malformation the reader must
 * refuse (HX_EFORMAT with the file and the problem named, the output left empty; a refused dtype quoted with
 * ESC, C1 and NUL escaped; a finite F64 beyond fp32's range named with its value), writer refusals (a FIFO
 * target is not replaced, no temporary left behind), the parameter store (add/find/count, buffers not
 * counted), net_params_load's refusals (missing, extra, mis-shaped, integer-typed, NaN/Inf, a negative BatchNorm
 * running_var: each naming the tensor, the store unchanged) and the state_dict keys it ignores and counts
 * (.num_batches_tracked, ._extra_state; not their near misses), the name registry and the CPU-only GPU dispatch,
 * and a mutation loop over a valid file (run under ASan/UBSan to catch any overread: every read must return OK,
 * HX_EFORMAT or HX_EIO).
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
#include "nets/nets.h"

/* ---- scratch folder ------------------------------------------------------------------------------------ */
static char g_dir[64];

static const char *tpath(const char *name) {
  static char p[sizeof g_dir + 256];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  return p;
}

static int setup_dir(void **state) {
  (void)state;
  /* thousands of small rewrites in the mutation loop: tmpfs when there is one */
  struct stat sb;
  const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0
                         ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/stf-XXXXXX", base);
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

/* Entries of the scratch folder whose name contains `part` (temporaries left behind). */
static int count_entries(const char *part) {
  int n = 0;
  DIR *d = opendir(g_dir);
  struct dirent *e;
  while (d && (e = readdir(d))) n += strstr(e->d_name, part) != NULL;
  if (d) closedir(d);
  return n;
}

/* ---- composing files by hand --------------------------------------------------------------------------- */
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
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void put_u64(buf *b, uint64_t v) {
  unsigned char raw[8];
  for (int i = 0; i < 8; i++) raw[i] = (unsigned char)(v >> (8 * i));
  put(b, raw, 8);
}

static void put_u16(buf *b, uint16_t v) {
  unsigned char raw[2] = {(unsigned char)(v & 0xFFu), (unsigned char)(v >> 8)};
  put(b, raw, 2);
}

/* A whole file: length, header (as given, no padding), data bytes. */
static buf compose(const char *hdr, const void *data, size_t ndata) {
  buf b = {0};
  put_u64(&b, strlen(hdr));
  put(&b, hdr, strlen(hdr));
  put(&b, data, ndata);
  return b;
}

static void write_bytes(const char *name, const void *data, size_t n) {
  FILE *f = fopen(tpath(name), "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static unsigned char *read_bytes(const char *name, size_t *n) {
  FILE *f = fopen(tpath(name), "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long sz = ftell(f);
  assert_true(sz >= 0);
  rewind(f);
  unsigned char *p = malloc((size_t)sz + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return p;
}

static const stf_tensor *find_t(const stf_file *f, const char *name) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
  return NULL;
}

/* Read `name` expecting `want`; the message must name the file and contain `needle`; the output empty. */
static void expect_read(const char *name, hx_status want, const char *needle) {
  stf_file f;
  hx_err err = {0};
  hx_status st = stf_read(&f, tpath(name), &err);
  if (st != want) fail_msg("%s: status %d, want %d (%s)", name, (int)st, (int)want, st ? err.msg : "ok");
  if (st == HX_OK) {
    stf_free(&f);
    return;
  }
  assert_null(f.t);
  assert_int_equal(f.n, 0);
  if (!strstr(err.msg, name)) fail_msg("%s: message does not name the file: %s", name, err.msg);
  if (needle && !strstr(err.msg, needle)) fail_msg("%s: message lacks \"%s\": %s", name, needle, err.msg);
}

/* A header + 64 zero bytes of data, read back expecting HX_EFORMAT with `needle` in the message. */
static void expect_bad_header(const char *hdr, const char *needle) {
  static const unsigned char zeros[64];
  buf b = compose(hdr, zeros, sizeof zeros);
  write_bytes("bad.safetensors", b.p, b.n);
  free(b.p);
  expect_read("bad.safetensors", HX_EFORMAT, needle);
}

/* ---- round trip ---------------------------------------------------------------------------------------- */
static void test_roundtrip(void **state) {
  (void)state;
  float a[6] = {1.0f, -2.5f, 3.25f, 1e-30f, -1e30f, 0.0f}, s[1] = {42.0f}, big[1000];
  for (int i = 0; i < 1000; i++) big[i] = (float)i * 0.5f - 100.0f;
  stf_tensor t[5];
  memset(t, 0, sizeof t);
  snprintf(t[0].name, sizeof t[0].name, "backbone.enc.enc0.block0.attn.qkv.weight");
  t[0].ndim = 2, t[0].shape[0] = 2, t[0].shape[1] = 3, t[0].data = a;
  snprintf(t[1].name, sizeof t[1].name, "scalar");
  t[1].ndim = 0, t[1].data = s;
  snprintf(t[2].name, sizeof t[2].name, "empty");
  t[2].ndim = 3, t[2].shape[0] = 4, t[2].shape[1] = 0, t[2].shape[2] = 2, t[2].data = NULL;
  snprintf(t[3].name, sizeof t[3].name, "q\"uote\\back/slash\xc3\xa9");
  t[3].ndim = 8;
  for (int d = 0; d < 8; d++) t[3].shape[d] = 1;
  t[3].shape[7] = 6, t[3].data = a;
  snprintf(t[4].name, sizeof t[4].name, "big");
  t[4].ndim = 1, t[4].shape[0] = 1000, t[4].data = big;
  hx_err err = {0};
  assert_int_equal(stf_write(tpath("rt.safetensors"), t, 5, &err), HX_OK);
  assert_int_equal(count_entries(".tmp."), 0);

  stf_file f;
  assert_int_equal(stf_read(&f, tpath("rt.safetensors"), &err), HX_OK);
  assert_int_equal(f.n, 5);
  for (size_t i = 0; i < 5; i++) { /* header order is the written order */
    assert_string_equal(f.t[i].name, t[i].name);
    assert_int_equal(f.t[i].ndim, t[i].ndim);
    uint64_t numel = 1;
    for (int d = 0; d < t[i].ndim; d++) {
      assert_int_equal(f.t[i].shape[d], t[i].shape[d]);
      numel *= (uint64_t)t[i].shape[d];
    }
    assert_non_null(f.t[i].data); /* never NULL, even when empty */
    if (numel) assert_memory_equal(f.t[i].data, t[i].data, numel * sizeof(float));
  }
  stf_free(&f);
  assert_null(f.t);
  assert_int_equal(f.n, 0);

  /* the layout: header length a multiple of 8, JSON then spaces, data right after, little-endian fp32 */
  size_t n = 0;
  unsigned char *raw = read_bytes("rt.safetensors", &n);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | raw[i];
  assert_int_equal(hlen % 8, 0);
  assert_int_equal(n, 8 + hlen + (6 + 1 + 0 + 6 + 1000) * 4);
  assert_int_equal(raw[8], '{');
  size_t last = 8 + (size_t)hlen - 1;
  while (raw[last] == ' ') last--;
  assert_int_equal(raw[last], '}');
  assert_true(8 + (size_t)hlen - 1 - last < 8);
  assert_memory_equal(raw + 8 + hlen, a, sizeof a);
  free(raw);

  /* an empty file set round-trips too; rewriting replaces the file */
  assert_int_equal(stf_write(tpath("rt.safetensors"), NULL, 0, &err), HX_OK);
  assert_int_equal(stf_read(&f, tpath("rt.safetensors"), &err), HX_OK);
  assert_int_equal(f.n, 0);
  stf_free(&f);
}

/* ---- F16 / BF16 / F64 files, and what the reader accepts ------------------------------------------------ */
static void test_dtypes(void **state) {
  (void)state;
  static const uint16_t h16[7] = {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x8000, 0x3555};
  static const float h16f[7] = {1.0f, -2.0f, 0.5f, 65504.0f, 5.9604644775390625e-8f, -0.0f, 0.333251953125f};
  static const uint16_t b16[5] = {0x3F80, 0xC060, 0x4049, 0x0000, 0x7F7F};
  static const float b16f[5] = {1.0f, -3.5f, 3.140625f, 0.0f, 3.3895313892515355e38f};
  static const double f64[2] = {1.5, -0.25};
  /* F16 [7] at 0..14, BF16 [5] at 14..24, F64 [2] at 24..40 (the data area covered exactly, as the format
   * requires); unknown fields of an entry (arrays, numbers, literals, escapes) are accepted and skipped, and
   * string values of __metadata__ with escapes; names use \u escapes */
  const char *hdr =
      "{ \"__metadata__\" : {\"format\":\"pt\",\n"
      "    \"k\": \"v\\\"\\u00e9\"},\n"
      "  \"h\\u00e9\": {\"dtype\": \"F16\", \"shape\": [7], \"data_offsets\": [0, 14],\n"
      "    \"extra\": [1, -2.5e3, true, false, null, {\"x\": 2}]},\n"
      "  \"b\\ud83d\\ude00\": {\"shape\": [5, 1], \"dtype\": \"BF16\", \"data_offsets\": [14, 24]},\n"
      "  \"d\": {\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [24, 40]}\t}    ";
  buf b = {0};
  put_u64(&b, strlen(hdr));
  put(&b, hdr, strlen(hdr));
  for (int i = 0; i < 7; i++) put_u16(&b, h16[i]);
  for (int i = 0; i < 5; i++) put_u16(&b, b16[i]);
  for (int i = 0; i < 2; i++) {
    uint64_t u;
    memcpy(&u, &f64[i], 8);
    put_u64(&b, u);
  }
  write_bytes("half.safetensors", b.p, b.n);
  free(b.p);
  stf_file f;
  hx_err err = {0};
  assert_int_equal(stf_read(&f, tpath("half.safetensors"), &err), HX_OK);
  assert_int_equal(f.n, 3);
  const stf_tensor *h = find_t(&f, "h\xc3\xa9"), *bb = find_t(&f, "b\xf0\x9f\x98\x80"), *d = find_t(&f, "d");
  assert_non_null(h);
  assert_non_null(bb);
  assert_non_null(d);
  assert_int_equal(h->ndim, 1);
  assert_int_equal(bb->ndim, 2);
  assert_int_equal(bb->shape[0], 5);
  assert_int_equal(bb->shape[1], 1);
  for (int i = 0; i < 7; i++) {
    assert_true(h->data[i] == h16f[i]);
    assert_int_equal(signbit(h->data[i]) != 0, signbit(h16f[i]) != 0);
  }
  for (int i = 0; i < 5; i++) assert_true(bb->data[i] == b16f[i]);
  for (int i = 0; i < 2; i++) assert_true(d->data[i] == (float)f64[i]);
  stf_free(&f);

  /* a 127-byte name */
  char hdr2[512], name127[128];
  memset(name127, 'n', 127);
  name127[127] = 0;
  snprintf(hdr2, sizeof hdr2, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", name127);
  buf b2 = compose(hdr2, "\0\0\x80\x3f", 4);
  write_bytes("n127.safetensors", b2.p, b2.n);
  free(b2.p);
  assert_int_equal(stf_read(&f, tpath("n127.safetensors"), &err), HX_OK);
  assert_int_equal(f.n, 1);
  assert_string_equal(f.t[0].name, name127);
  assert_int_equal(f.t[0].ndim, 0);
  assert_true(f.t[0].data[0] == 1.0f);
  assert_string_equal(f.t[0].dtype, "F32");
  stf_free(&f);

  /* the integer dtypes of a state_dict (BatchNorm's num_batches_tracked is I64, TransformerEngine's
   * _extra_state U8): little-endian, sign-extended, converted to fp32; the file's dtype kept on the tensor */
  static const struct {
    const char *name, *dtype;
    size_t size;
    int n;
    uint64_t raw[3]; /* the stored bits, low `size` bytes each */
    float want[3];
  } ints[] = {
      {"i64", "I64", 8, 3, {0xFFFFFFFFFFFFFFFDull, 1ull << 40, 7}, {-3.0f, 1099511627776.0f, 7.0f}},
      {"i32", "I32", 4, 2, {0xFFFFFFFBu, 0x7FFFFFFFu}, {-5.0f, 2147483648.0f}},
      {"i16", "I16", 2, 2, {0xFFFEu, 0x7FFFu}, {-2.0f, 32767.0f}},
      {"i8", "I8", 1, 3, {0x80u, 0x05u, 0xFFu}, {-128.0f, 5.0f, -1.0f}},
      {"u64", "U64", 8, 1, {1ull << 63}, {9223372036854775808.0f}},
      {"u32", "U32", 4, 1, {0xFFFFFFFFu}, {4294967296.0f}},
      {"u16", "U16", 2, 1, {0xFFFFu}, {65535.0f}},
      {"bn.num_batches_tracked", "I64", 8, 0, {12345}, {12345.0f}}, /* 0-d: one value */
      {"blk._extra_state", "U8", 1, 3, {0x00u, 0xFFu, 0x80u}, {0.0f, 255.0f, 128.0f}},
      {"flag", "BOOL", 1, 2, {0, 1}, {0.0f, 1.0f}},
  };
  enum { NI = sizeof ints / sizeof ints[0] };
  char hdr3[2048];
  size_t hk = (size_t)snprintf(hdr3, sizeof hdr3, "{"), off = 0;
  buf data = {0};
  for (int i = 0; i < NI; i++) {
    const int cnt = ints[i].n ? ints[i].n : 1;
    hk += (size_t)snprintf(hdr3 + hk, sizeof hdr3 - hk, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%.0d],"
                           "\"data_offsets\":[%zu,%zu]}", i ? "," : "", ints[i].name, ints[i].dtype, ints[i].n, off,
                           off + (size_t)cnt * ints[i].size);
    for (int k = 0; k < cnt; k++) {
      unsigned char raw[8];
      for (size_t q = 0; q < ints[i].size; q++) raw[q] = (unsigned char)(ints[i].raw[k] >> (8u * q));
      put(&data, raw, ints[i].size);
    }
    off += (size_t)cnt * ints[i].size;
  }
  snprintf(hdr3 + hk, sizeof hdr3 - hk, "}");
  buf b3 = compose(hdr3, data.p, data.n);
  write_bytes("ints.safetensors", b3.p, b3.n);
  free(b3.p), free(data.p);
  assert_int_equal(stf_read(&f, tpath("ints.safetensors"), &err), HX_OK);
  assert_int_equal(f.n, NI);
  for (int i = 0; i < NI; i++) {
    const stf_tensor *t = find_t(&f, ints[i].name);
    assert_non_null(t);
    assert_string_equal(t->dtype, ints[i].dtype);
    assert_int_equal(t->ndim, ints[i].n ? 1 : 0);
    for (int k = 0; k < (ints[i].n ? ints[i].n : 1); k++)
      if (t->data[k] != ints[i].want[k])
        fail_msg("%s[%d] = %.9g, want %.9g", ints[i].name, k, (double)t->data[k], (double)ints[i].want[k]);
  }
  stf_free(&f);
}

/* ---- malformed files ---------------------------------------------------------------------------------- */
static void test_malformed_header(void **state) {
  (void)state;
  static const struct {
    const char *hdr, *needle;
  } cases[] = {
      /* JSON syntax */
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", "expected ',' or '}'"},
      {"{\"a\" {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "expected ':'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", "bytes after the header"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", "expected a string"},
      {"[1, 2]", "must be a JSON object"},
      {"{\"a\":5}", "must be an object"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}, \"b", "unterminated string"},
      {"{\"a\\q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "bad escape"},
      {"{\"a\\u12g4\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "bad \\u escape"},
      {"{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "control character"},
      {"{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "surrogate"},
      {"{\"a\\udc00\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "surrogate"},
      {"{\"__metadata__\":[1],\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       "__metadata__ must be an object"},
      {"{\"__metadata__\":{},\"__metadata__\":{}}", "__metadata__ given twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":tru}}", "unexpected character"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1.}}", "no digits after '.'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1e}}", "no exponent digits"},
      /* __metadata__ is a map of string to string (the reference loader's HashMap<String, String>) */
      {"{\"__metadata__\":{\"format\":5}}", "__metadata__ value of \"format\" is not a string"},
      {"{\"__metadata__\":{\"format\":\"pt\",\"n\":{\"k\":\"v\"}}}", "value of \"n\" is not a string"},
      {"{\"__metadata__\":{\"a\\u001bb\":null}}", "value of \"a\\x1bb\" is not a string"},
      {"{\"__metadata__\":{\"x\":[\"y\"]}}", "value of \"x\" is not a string"},
      /* every string is UTF-8; a name that is not is shown escaped, never raw */
      {"{\"a\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       "a string that is not UTF-8: \"a\\xff\\xfe\""},
      {"{\"a\\\\\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8: \"a\\x5c\\x5c\\xff\""},
      {"{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8: \"\\xc0\\xaf\""},
      {"{\"\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8"},
      {"{\"\xf4\x90\x80\x80\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8"},
      {"{\"h\xc3\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8: \"h\\xc3\""},
      {"{\"__metadata__\":{\"format\":\"p\x80t\"}}", "not UTF-8: \"p\\x80t\""},
      {"{\"a\":{\"dtype\":\"F3\xb2\",\"shape\":[2],\"data_offsets\":[0,8]}}", "not UTF-8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", "leading zero"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[true],\"data_offsets\":[0,4]}}", "expected a number"},
      {"{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "expected a string"},
      /* names */
      {"{\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "empty tensor name"},
      {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "NUL"},
      {"{\"a\\u001b[2Jb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "escaped control character"},
      {"{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "escaped control character"},
      {"{\"a\\u009bb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "escaped control character"},
      {"{\"a\\u007f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "escaped control character"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", "duplicate name"},
      /* entries */
      {"{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "dtype \"C64\""},
      {"{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", "dtype \"F8_E4M3\""},
      {"{\"a\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,8]}}", "size mismatch"},
      {"{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "dtype \"f32\""},
      {"{\"a\":{}}", "empty entry"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", "no data_offsets"},
      {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", "no dtype"},
      {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", "no shape"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"shape\":[2],\"data_offsets\":[0,8]}}", "given twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", "more than 2 values"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}}", "needs 2 values"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", "negative dimension"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", "not an integer"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]}}", "not an integer"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", "more than 8 dimensions"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", "larger than 2^63"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", "overflows"},
      {"{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", "overflows"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", "negative data offset"},
      /* offsets against sizes and each other */
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "size mismatch"},
      {"{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}", "size mismatch"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,4]}}", "size mismatch"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "begin 8 > end 0"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[32],\"data_offsets\":[0,128]}}", "past the data area"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[64,68]}}", "past the data area"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "overlap"},
      {"{\"c\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[16,48]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}", "overlap"},
      /* the tensors cover the 64 bytes of data exactly: no gap before, between or after them */
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[14],\"data_offsets\":[8,64]}}",
       "bytes [0, 8) of the data area belong to no tensor (before a)"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[16,64]}}",
       "bytes [8, 16) of the data area belong to no tensor (between a and b)"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[15],\"data_offsets\":[0,60]}}",
       "4 bytes after the last tensor's data (a ends at 60 of 64)"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", "64 bytes after the last tensor's data"},
      {"{}", "64 bytes of data and no tensor to hold them"},
      {"{\"__metadata__\":{\"format\":\"pt\"}}", "64 bytes of data and no tensor"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_bad_header(cases[i].hdr, cases[i].needle);

  /* the overlap message names both tensors */
  expect_bad_header("{\"first\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"second\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "first");
  expect_bad_header("{\"first\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"second\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "second");
  /* ... and a dtype or size message names its tensor */
  expect_bad_header("{\"enc.w\":{\"dtype\":\"U4\",\"shape\":[1],\"data_offsets\":[0,1]}}", "enc.w");
  expect_bad_header("{\"enc.w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "enc.w");

  /* a 128-byte name, and nesting deeper than the limit inside an entry's unknown field */
  char hdr[1024];
  char n128[129];
  memset(n128, 'x', 128);
  n128[128] = 0;
  snprintf(hdr, sizeof hdr, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", n128);
  expect_bad_header(hdr, "longer than 127");
  size_t k = (size_t)snprintf(hdr, sizeof hdr, "{\"a\":{\"dtype\":\"U8\",\"shape\":[64],\"data_offsets\":[0,64],"
                                                "\"x\":");
  for (int i = 0; i < 100; i++) hdr[k++] = '[';
  for (int i = 0; i < 100; i++) hdr[k++] = ']';
  snprintf(hdr + k, sizeof hdr - k, "}}");
  expect_bad_header(hdr, "nested more than 64");
}

/* A header + ndata (<= 64) zero bytes of data that must be read. */
static void expect_ok_header(const char *hdr, size_t ndata) {
  static const unsigned char zeros[64];
  assert_true(ndata <= sizeof zeros);
  buf b = compose(hdr, zeros, ndata);
  write_bytes("ok.safetensors", b.p, b.n);
  free(b.p);
  expect_read("ok.safetensors", HX_OK, NULL);
}

static void test_accepted_headers(void **state) {
  (void)state;
  expect_ok_header("{}", 0);
  expect_ok_header("  {  }  ", 0);
  expect_ok_header("{\"__metadata__\":{}}", 0);
  expect_ok_header("{\"__metadata__\":{\"format\":\"pt\",\"e\\u00e9\":\"\\u00e9\\\"\"}}", 0);
  /* -0 is the integer 0 */
  expect_ok_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-0,8]}}", 8);
  /* empty tensors hold no bytes: they overlap nothing, wherever they sit */
  expect_ok_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}", 16);
  /* tensors in any header order, covering the data area */
  expect_ok_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[14],\"data_offsets\":[8,64]},"
                   "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 64);
  /* raw UTF-8 in a name (2-, 3- and 4-byte characters) */
  expect_ok_header("{\"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":{\"dtype\":\"F32\",\"shape\":[2],"
                   "\"data_offsets\":[0,8]}}", 8);
  /* nesting within the limit, in an entry's unknown field */
  char hdr[1024];
  size_t k = (size_t)snprintf(hdr, sizeof hdr, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":");
  for (int i = 0; i < 60; i++) hdr[k++] = '[';
  for (int i = 0; i < 60; i++) hdr[k++] = ']';
  snprintf(hdr + k, sizeof hdr - k, "}}");
  expect_ok_header(hdr, 4);
}

static void test_malformed_file(void **state) {
  (void)state;
  write_bytes("empty.safetensors", "", 0);
  expect_read("empty.safetensors", HX_EFORMAT, "truncated");
  write_bytes("short.safetensors", "\x02\0\0\0\0", 5);
  expect_read("short.safetensors", HX_EFORMAT, "truncated");
  /* header length past the end of the file: by one byte, and by 2^64 - 1 */
  const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  buf b = {0};
  put_u64(&b, strlen(hdr) + 5);
  put(&b, hdr, strlen(hdr));
  put(&b, "\0\0\0\0", 4);
  write_bytes("past.safetensors", b.p, b.n);
  expect_read("past.safetensors", HX_EFORMAT, "past the end of the file");
  b.n = 0;
  put_u64(&b, 50u << 20);
  put(&b, hdr, strlen(hdr));
  write_bytes("past2.safetensors", b.p, b.n);
  expect_read("past2.safetensors", HX_EFORMAT, "past the end of the file");
  b.n = 0;
  put_u64(&b, UINT64_MAX);
  put(&b, hdr, strlen(hdr));
  write_bytes("huge.safetensors", b.p, b.n);
  expect_read("huge.safetensors", HX_EFORMAT, "100 MiB");
  b.n = 0;
  put_u64(&b, 0);
  write_bytes("zero.safetensors", b.p, b.n);
  expect_read("zero.safetensors", HX_EFORMAT, "too short");
  /* a file cut inside its data */
  b.n = 0;
  put_u64(&b, strlen(hdr));
  put(&b, hdr, strlen(hdr));
  put(&b, "\0\0", 2);
  write_bytes("cut.safetensors", b.p, b.n);
  expect_read("cut.safetensors", HX_EFORMAT, "past the data area");
  free(b.p);
  /* not a file at all */
  expect_read("no-such.safetensors", HX_EIO, "cannot open");
  assert_int_equal(mkdir(tpath("dir.safetensors"), 0755), 0);
  expect_read("dir.safetensors", HX_EIO, "not a regular file");
  rmdir(tpath("dir.safetensors"));
  assert_int_equal(mkfifo(tpath("fifo.safetensors"), 0644), 0);
  expect_read("fifo.safetensors", HX_EIO, "not a regular file"); /* refused, not waited on */
  unlink(tpath("fifo.safetensors"));
  hx_err err = {0};
  assert_int_equal(stf_read(NULL, "x", &err), HX_EINVAL);
  stf_free(NULL);
}

/* A message holds no byte outside printable ASCII (no ESC, no C1 as UTF-8, no raw bytes of the file). */
static void expect_printable(const char *msg) {
  for (const unsigned char *q = (const unsigned char *)msg; *q; q++)
    if (*q < 0x20 || *q >= 0x7f)
      fail_msg("byte 0x%02x at %zu of the message: %s", *q, (size_t)(q - (const unsigned char *)msg), msg);
}

/* A dtype the reader refuses is quoted as a name is (shown): an ESC or C1 from a \u escape and an embedded NUL
 * appear as \xNN, a dtype longer than the reader keeps ends in "...". */
static void test_dtype_shown(void **state) {
  (void)state;
  static const struct {
    const char *dtype, *needle;
  } cases[] = {
      {"\\u001b[2J\\u001b[31mX", "dtype \"\\x1b[2J\\x1b[31mX\" not supported"},
      {"\\u009b31mX", "dtype \"\\xc2\\x9b31mX\" not supported"},
      {"F32\\u0000junk", "dtype \"F32\\x00junk\" not supported"},
      {"F32\\u0000", "dtype \"F32\\x00\" not supported"},
      {"\\u001bXXXXXXXXXXXXXXXXXXXXXXXX", "dtype \"\\x1bXXXXXXXXXXXXXX...\" not supported"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char hdr[256];
    snprintf(hdr, sizeof hdr, "{\"a\":{\"dtype\":\"%s\",\"shape\":[16],\"data_offsets\":[0,64]}}",
             cases[i].dtype);
    static const unsigned char zeros[64];
    buf b = compose(hdr, zeros, sizeof zeros);
    write_bytes("dt.safetensors", b.p, b.n);
    free(b.p);
    stf_file f;
    hx_err err = {0};
    assert_int_equal(stf_read(&f, tpath("dt.safetensors"), &err), HX_EFORMAT);
    if (!strstr(err.msg, cases[i].needle)) fail_msg("case %zu: message lacks %s: %s", i, cases[i].needle, err.msg);
    expect_printable(err.msg);
  }
}

/* A finite F64 beyond fp32's range is refused naming the tensor, the value's index and the value, not read as
 * infinite; F64's own infinity and NaN are read (net_params_load refuses those, naming them so); the largest
 * finite fp32 and values that round to it are read. */
static void test_f64_range(void **state) {
  (void)state;
  static const struct {
    double v[2];
    const char *needle; /* NULL: read */
  } cases[] = {
      {{1.0, 1e300}, "tensor w: value 1 (1e+300, F64) is out of fp32's range"},
      {{-1e39, 0.0}, "tensor w: value 0 (-1e+39, F64) is out of fp32's range"},
      {{3.4028234663852886e38, -3.4028234663852886e38}, NULL}, /* FLT_MAX exactly */
      {{3.4028235e38, 1.0}, NULL},                             /* below FLT_MAX + ulp/2: rounds to FLT_MAX */
      {{INFINITY, NAN}, NULL},
  };
  const char *hdr = "{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    buf b = compose(hdr, cases[i].v, sizeof cases[i].v);
    write_bytes("f64.safetensors", b.p, b.n);
    free(b.p);
    stf_file f;
    hx_err err = {0};
    const hx_status st = stf_read(&f, tpath("f64.safetensors"), &err);
    if (!cases[i].needle) {
      if (st != HX_OK) fail_msg("case %zu: %s", i, err.msg);
      assert_true(isinf(f.t[0].data[0]) || f.t[0].data[0] == (float)cases[i].v[0]);
      stf_free(&f);
      continue;
    }
    assert_int_equal(st, HX_EFORMAT);
    assert_null(f.t);
    if (!strstr(err.msg, cases[i].needle) || !strstr(err.msg, "f64.safetensors"))
      fail_msg("case %zu: message lacks %s: %s", i, cases[i].needle, err.msg);
  }
}

/* ---- writer refusals ---------------------------------------------------------------------------------- */
static void test_write_refusals(void **state) {
  (void)state;
  float v[4] = {1, 2, 3, 4};
  stf_tensor t[2];
  memset(t, 0, sizeof t);
  snprintf(t[0].name, sizeof t[0].name, "w");
  t[0].ndim = 1, t[0].shape[0] = 4, t[0].data = v;
  t[1] = t[0];
  hx_err err = {0};
  /* a FIFO target is refused (a rename would replace it; writing would block) and stays a FIFO */
  assert_int_equal(mkfifo(tpath("fifo.out"), 0644), 0);
  assert_int_equal(stf_write(tpath("fifo.out"), t, 1, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "not a regular file"));
  struct stat sb;
  assert_int_equal(stat(tpath("fifo.out"), &sb), 0);
  assert_true(S_ISFIFO(sb.st_mode));
  unlink(tpath("fifo.out"));
  /* bad tensors: nothing written, no temporary left */
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "duplicate"));
  t[1].ndim = 9;
  snprintf(t[1].name, sizeof t[1].name, "x");
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  t[1].ndim = 1, t[1].shape[0] = -3;
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "negative"));
  t[1].shape[0] = 4, t[1].data = NULL;
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  t[1].data = v;
  memset(t[1].name, 'z', sizeof t[1].name); /* no NUL within 128 bytes */
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  t[1].name[0] = 0;
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  snprintf(t[1].name, sizeof t[1].name, "a\x1b[2Jb"); /* what the reader refuses, the writer does not write */
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "control character"));
  snprintf(t[1].name, sizeof t[1].name, "a\xff"); /* nor a name that is not UTF-8 */
  assert_int_equal(stf_write(tpath("dup.out"), t, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "not UTF-8"));
  assert_int_equal(access(tpath("dup.out"), F_OK), -1);
  char bad[300];
  snprintf(bad, sizeof bad, "%s/no-such-dir/x.safetensors", g_dir);
  assert_int_equal(stf_write(bad, t, 1, &err), HX_EIO);
  assert_non_null(strstr(err.msg, "x.safetensors"));
  assert_int_equal(stf_write(NULL, t, 1, &err), HX_EINVAL);
  assert_int_equal(count_entries(".tmp."), 0);
}

/* ---- the parameter store -------------------------------------------------------------------------------- */
/* enc.weight [4, 3], enc.bias [4], bn.running_mean [4] (a buffer), scale [] (0-d), empty [0, 3]. */
static void make_params(net_params *p, int skip, const char *extra, const int64_t *wshape) {
  static const struct {
    const char *name;
    int ndim, counted;
    int64_t shape[2];
  } spec[] = {{"enc.weight", 2, 1, {4, 3}}, {"enc.bias", 1, 1, {4, 0}}, {"bn.running_mean", 1, 0, {4, 0}},
              {"scale", 0, 1, {0, 0}},     {"empty", 2, 1, {0, 3}}};
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 5; i++) {
    if (i == skip) continue;
    net_tensor *t = NULL;
    const int64_t *shape = i == 0 && wshape ? wshape : spec[i].shape;
    assert_int_equal(net_params_add(p, spec[i].name, spec[i].ndim, shape, spec[i].counted, &t, NULL), HX_OK);
    assert_non_null(t);
    uint64_t numel = 1;
    for (int d = 0; d < spec[i].ndim; d++) numel *= (uint64_t)shape[d];
    for (uint64_t k = 0; k < numel; k++) t->data[k] = (float)(i * 100) + (float)k * 0.25f;
  }
  if (extra) {
    const int64_t s2[1] = {2};
    assert_int_equal(net_params_add(p, extra, 1, s2, 1, NULL, NULL), HX_OK);
  }
}

static void test_params_store(void **state) {
  (void)state;
  net_params p;
  make_params(&p, -1, NULL, NULL);
  assert_int_equal(p.n, 5);
  assert_int_equal(net_params_count(&p), 12 + 4 + 1 + 0); /* bn.running_mean is a buffer */
  const net_tensor *w = net_params_find(&p, "enc.weight");
  assert_non_null(w);
  assert_int_equal(w->ndim, 2);
  assert_int_equal(w->shape[1], 3);
  assert_true(w->data[5] == 1.25f);
  assert_non_null(net_params_find(&p, "empty"));
  assert_non_null(net_params_find(&p, "empty")->data);
  assert_null(net_params_find(&p, "enc"));
  assert_null(net_params_find(&p, "enc.weight.x"));
  assert_null(net_params_find(NULL, "enc.weight"));
  /* refusals: duplicate, too long, too many dims, negative dim; a fresh tensor is zero */
  hx_err err = {0};
  const int64_t s[6] = {1, 1, 1, 1, 1, 1}, neg[1] = {-1};
  net_tensor *t = NULL;
  assert_int_equal(net_params_add(&p, "enc.bias", 1, s, 1, &t, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "enc.bias"));
  assert_null(t);
  char n128[129];
  memset(n128, 'a', 128);
  n128[128] = 0;
  assert_int_equal(net_params_add(&p, n128, 1, s, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(net_params_add(&p, "", 1, s, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(net_params_add(&p, "six", 6, s, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(net_params_add(&p, "neg", 1, neg, 1, NULL, &err), HX_EINVAL);
  assert_int_equal(p.n, 5);
  n128[127] = 0;
  assert_int_equal(net_params_add(&p, n128, 5, s, 0, &t, &err), HX_OK);
  assert_true(t->data[0] == 0.0f);
  assert_int_equal(net_params_count(&p), 17);
  /* many tensors: the store grows and keeps every name findable */
  for (int i = 0; i < 300; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "grow.%d", i);
    assert_int_equal(net_params_add(&p, nm, 1, s, 1, NULL, NULL), HX_OK);
  }
  assert_int_equal(net_params_count(&p), 17 + 300);
  assert_non_null(net_params_find(&p, "grow.0"));
  assert_non_null(net_params_find(&p, "grow.299"));
  assert_true(net_params_find(&p, "enc.weight")->data[5] == 1.25f);
  net_params_free(&p);
  assert_null(p.t);
  assert_int_equal(p.n, 0);
  net_params_free(&p);
  net_params_free(NULL);
}

/* Load `file` into a fresh standard store expecting HX_EFORMAT naming `tensor` and `what`; the store keeps
 * its values. */
static void expect_load_refused(const char *file, const char *tensor, const char *what) {
  net_params q;
  make_params(&q, -1, NULL, NULL);
  hx_err err = {0};
  assert_int_equal(net_params_load(&q, tpath(file), NULL, &err), HX_EFORMAT);
  if (!strstr(err.msg, tensor) || !strstr(err.msg, what) || !strstr(err.msg, file))
    fail_msg("%s: message lacks %s / %s: %s", file, tensor, what, err.msg);
  net_params fresh;
  make_params(&fresh, -1, NULL, NULL);
  assert_memory_equal(q.t[0].data, fresh.t[0].data, 12 * sizeof(float));
  assert_memory_equal(q.t[1].data, fresh.t[1].data, 4 * sizeof(float));
  net_params_free(&fresh);
  net_params_free(&q);
}

static void test_params_load(void **state) {
  (void)state;
  hx_err err = {0};
  net_params p, q;
  make_params(&p, -1, NULL, NULL);
  assert_int_equal(net_params_save(&p, tpath("p.safetensors"), &err), HX_OK);
  /* the same layout, zeroed, loads every value back */
  memset(&q, 0, sizeof q);
  for (size_t i = 0; i < p.n; i++)
    assert_int_equal(net_params_add(&q, p.t[i].name, p.t[i].ndim, p.t[i].shape, p.t[i].counted, NULL, NULL), HX_OK);
  assert_int_equal(net_params_load(&q, tpath("p.safetensors"), NULL, &err), HX_OK);
  assert_memory_equal(q.t[0].data, p.t[0].data, 12 * sizeof(float));
  assert_memory_equal(q.t[1].data, p.t[1].data, 4 * sizeof(float));
  assert_memory_equal(q.t[2].data, p.t[2].data, 4 * sizeof(float));
  assert_true(q.t[3].data[0] == p.t[3].data[0]);
  net_params_free(&q);

  /* missing, extra, mis-shaped */
  net_params r;
  make_params(&r, 1, NULL, NULL);
  assert_int_equal(net_params_save(&r, tpath("missing.safetensors"), &err), HX_OK);
  net_params_free(&r);
  expect_load_refused("missing.safetensors", "enc.bias", "missing");
  make_params(&r, -1, "head.extra", NULL);
  assert_int_equal(net_params_save(&r, tpath("extra.safetensors"), &err), HX_OK);
  net_params_free(&r);
  expect_load_refused("extra.safetensors", "head.extra", "extra");
  const int64_t transposed[2] = {3, 4}, flat[1] = {12};
  make_params(&r, -1, NULL, transposed);
  assert_int_equal(net_params_save(&r, tpath("shape.safetensors"), &err), HX_OK);
  net_params_free(&r);
  expect_load_refused("shape.safetensors", "enc.weight", "[3, 4]");
  expect_load_refused("shape.safetensors", "enc.weight", "[4, 3]");
  /* same numel, different rank */
  memset(&r, 0, sizeof r);
  for (size_t i = 0; i < p.n; i++)
    assert_int_equal(net_params_add(&r, p.t[i].name, i == 0 ? 1 : p.t[i].ndim, i == 0 ? flat : p.t[i].shape,
                                    p.t[i].counted, NULL, NULL), HX_OK);
  assert_int_equal(net_params_save(&r, tpath("rank.safetensors"), &err), HX_OK);
  net_params_free(&r);
  expect_load_refused("rank.safetensors", "enc.weight", "shape");
  /* NaN and Inf */
  make_params(&r, -1, NULL, NULL);
  r.t[1].data[2] = NAN;
  assert_int_equal(net_params_save(&r, tpath("nan.safetensors"), &err), HX_OK);
  r.t[1].data[2] = 0.0f;
  r.t[3].data[0] = -INFINITY;
  assert_int_equal(net_params_save(&r, tpath("inf.safetensors"), &err), HX_OK);
  net_params_free(&r);
  expect_load_refused("nan.safetensors", "enc.bias", "NaN");
  expect_load_refused("inf.safetensors", "scale", "infinite");
  /* a real state_dict's unread entries: keys ending in .num_batches_tracked or ._extra_state are ignored and
   * counted, whatever their dtype (the writer's F32 here, I64 and U8 in the file composed below); a near miss
   * of either suffix is still an extra name */
  {
    stf_tensor t[9];
    memset(t, 0, sizeof t);
    for (size_t i = 0; i < p.n; i++) {
      snprintf(t[i].name, sizeof t[i].name, "%s", p.t[i].name);
      t[i].ndim = p.t[i].ndim;
      memcpy(t[i].shape, p.t[i].shape, sizeof p.t[i].shape);
      t[i].data = p.t[i].data;
    }
    float one = 3.0f, st4[4] = {1, 2, 3, 4};
    const char *ok[3] = {"bn.num_batches_tracked", "enc._extra_state", "num_batches_tracked"};
    for (int i = 0; i < 3; i++) {
      snprintf(t[p.n + (size_t)i].name, sizeof t[0].name, "%s", ok[i]);
      t[p.n + (size_t)i].ndim = i == 1 ? 1 : 0, t[p.n + (size_t)i].shape[0] = 4;
      t[p.n + (size_t)i].data = i == 1 ? st4 : &one;
    }
    assert_int_equal(stf_write(tpath("bn.safetensors"), t, p.n + 3, &err), HX_OK);
    memset(&q, 0, sizeof q);
    for (size_t i = 0; i < p.n; i++)
      assert_int_equal(net_params_add(&q, p.t[i].name, p.t[i].ndim, p.t[i].shape, p.t[i].counted, NULL, NULL), HX_OK);
    size_t ignored = 99;
    assert_int_equal(net_params_load(&q, tpath("bn.safetensors"), &ignored, &err), HX_OK);
    assert_int_equal(ignored, 3);
    assert_memory_equal(q.t[0].data, p.t[0].data, 12 * sizeof(float));
    net_params_free(&q);
    static const char *const near[] = {"bn.num_batches_tracked_x", "bn.xnum_batches_tracked", "enc.extra_state",
                                       "enc._extra_state.weight", "enc._Extra_state"};
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
      snprintf(t[p.n + 1].name, sizeof t[0].name, "%s", near[i]);
      assert_int_equal(stf_write(tpath("near.safetensors"), t, p.n + 3, &err), HX_OK);
      expect_load_refused("near.safetensors", near[i], "extra name");
    }
    ignored = 99;
    make_params(&q, -1, NULL, NULL);
    assert_int_equal(net_params_load(&q, tpath("near.safetensors"), &ignored, &err), HX_EFORMAT);
    assert_int_equal(ignored, 0); /* nothing reported on failure */
    net_params_free(&q);
  }
  /* the same with the dtypes PyTorch writes: I64 num_batches_tracked, U8 _extra_state; a parameter stored as
   * an integer is refused naming its dtype */
  for (int as_int = 0; as_int < 2; as_int++) {
    buf hb = {0}, db = {0};
    char h[1024];
    size_t k = (size_t)snprintf(h, sizeof h, "{");
    size_t off = 0;
    for (size_t i = 0; i < p.n; i++) {
      uint64_t numel = 1;
      for (int d = 0; d < p.t[i].ndim; d++) numel *= (uint64_t)p.t[i].shape[d];
      const int isint = as_int && i == 1; /* enc.bias as I32 */
      k += (size_t)snprintf(h + k, sizeof h - k, "\"%s\":{\"dtype\":\"%s\",\"shape\":[", p.t[i].name,
                            isint ? "I32" : "F32");
      for (int d = 0; d < p.t[i].ndim; d++)
        k += (size_t)snprintf(h + k, sizeof h - k, "%s%lld", d ? "," : "", (long long)p.t[i].shape[d]);
      k += (size_t)snprintf(h + k, sizeof h - k, "],\"data_offsets\":[%zu,%zu]},", off, off + (size_t)numel * 4u);
      if (isint) {
        for (uint64_t e = 0; e < numel; e++) {
          const int32_t v = (int32_t)p.t[i].data[e];
          put(&db, &v, 4);
        }
      } else {
        put(&db, p.t[i].data, (size_t)numel * 4u);
      }
      off += (size_t)numel * 4u;
    }
    const unsigned char nbt[8] = {42, 0, 0, 0, 0, 0, 0, 0}, xs[5] = {1, 2, 3, 4, 5};
    snprintf(h + k, sizeof h - k,
             "\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[%zu,%zu]},"
             "\"enc._extra_state\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[%zu,%zu]}}",
             off, off + 8, off + 8, off + 13);
    put(&db, nbt, 8), put(&db, xs, 5);
    hb = compose(h, db.p, db.n);
    write_bytes("pt.safetensors", hb.p, hb.n);
    free(hb.p), free(db.p);
    if (as_int) {
      expect_load_refused("pt.safetensors", "enc.bias", "dtype I32");
      continue;
    }
    memset(&q, 0, sizeof q);
    for (size_t i = 0; i < p.n; i++)
      assert_int_equal(net_params_add(&q, p.t[i].name, p.t[i].ndim, p.t[i].shape, p.t[i].counted, NULL, NULL), HX_OK);
    size_t ignored = 0;
    const hx_status st = net_params_load(&q, tpath("pt.safetensors"), &ignored, &err);
    if (st != HX_OK) fail_msg("%s", err.msg);
    assert_int_equal(ignored, 2);
    for (size_t i = 0; i < p.n; i++) {
      uint64_t numel = 1;
      for (int d = 0; d < p.t[i].ndim; d++) numel *= (uint64_t)p.t[i].shape[d];
      if (numel) assert_memory_equal(q.t[i].data, p.t[i].data, (size_t)numel * sizeof(float));
    }
    net_params_free(&q);
  }
  /* a malformed file passes stf_read's error through */
  write_bytes("junk.safetensors", "\x04\0\0\0\0\0\0\0{{{{", 12);
  assert_int_equal(net_params_load(&p, tpath("junk.safetensors"), NULL, &err), HX_EFORMAT);
  assert_int_equal(net_params_load(&p, tpath("nope.safetensors"), NULL, &err), HX_EIO);
  assert_int_equal(net_params_load(NULL, tpath("p.safetensors"), NULL, &err), HX_EINVAL);
  net_params_free(&p);
}

/* A BatchNorm running_var with a negative value is refused at load, naming the tensor and the value (the forward
 * would give NaN and blame the activations); zero and -0 are variances, and a running_mean may be negative. */
static void test_running_var(void **state) {
  (void)state;
  static const struct {
    const char *name;
    float bad;
    const char *needle; /* NULL: loads */
  } cases[] = {
      {"bn.running_var", -0.5f,
       "tensor bn.running_var: value 2 is -0.5: a BatchNorm running variance is never negative"},
      {"running_var", -1e-30f, "tensor running_var: value 2 is -1e-30"},
      {"bn.running_var", 0.0f, NULL},
      {"bn.running_var", -0.0f, NULL},
      {"bn.running_mean", -0.5f, NULL},
      {"bn.running_variance", -0.5f, NULL}, /* not a BatchNorm buffer's name */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int64_t s4[1] = {4};
    net_params p = {0}, q = {0};
    net_tensor *t = NULL;
    hx_err err = {0};
    assert_int_equal(net_params_add(&p, cases[i].name, 1, s4, 0, &t, NULL), HX_OK);
    for (int k = 0; k < 4; k++) t->data[k] = 1.0f + (float)k;
    t->data[2] = cases[i].bad;
    assert_int_equal(net_params_save(&p, tpath("var.safetensors"), &err), HX_OK);
    assert_int_equal(net_params_add(&q, cases[i].name, 1, s4, 0, NULL, NULL), HX_OK);
    const hx_status st = net_params_load(&q, tpath("var.safetensors"), NULL, &err);
    if (!cases[i].needle) {
      if (st != HX_OK) fail_msg("case %zu: %s", i, err.msg);
      assert_memory_equal(q.t[0].data, p.t[0].data, 4 * sizeof(float));
    } else {
      assert_int_equal(st, HX_EFORMAT);
      if (!strstr(err.msg, cases[i].needle) || !strstr(err.msg, "var.safetensors"))
        fail_msg("case %zu: message lacks %s: %s", i, cases[i].needle, err.msg);
      assert_true(q.t[0].data[2] == 0.0f); /* the store unchanged */
    }
    net_params_free(&p);
    net_params_free(&q);
  }
}

/* ---- registry and dispatch ------------------------------------------------------------------------------ */
static void test_registry(void **state) {
  (void)state;
  size_t n = 0;
  const char *const *names = net_config_names(&n);
  assert_non_null(names);
  assert_true(n >= 2);
  assert_null(names[n]);
  for (size_t i = 0; i < n; i++) {
    assert_true(strlen(names[i]) > 0 && strlen(names[i]) < 32);
    assert_true(strncmp(names[i], "ptv3", 4) == 0 || strncmp(names[i], "flash3d", 7) == 0);
  }
  net_config cfg;
  hx_err err = {0};
  assert_int_equal(net_config_named(&cfg, "ptv4", &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "ptv4"));
  for (size_t i = 0; i < n; i++) assert_non_null(strstr(err.msg, names[i]));
  assert_int_equal(net_config_named(&cfg, "ptv3-huge", &err), HX_EINVAL);
  assert_int_equal(net_config_named(&cfg, NULL, &err), HX_EINVAL);

  /* an unknown kind is refused before any model is reached */
  memset(&cfg, 0, sizeof cfg);
  snprintf(cfg.name, sizeof cfg.name, "bogus");
  cfg.kind = 7;
  net_params p = {0};
  assert_int_equal(net_params_init(&p, &cfg, 1, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "kind"));
  net_output o;
  net_input in;
  memset(&o, 0, sizeof o);
  memset(&in, 0, sizeof in);
  assert_int_equal(net_forward_cpu(&o, &cfg, &p, &in, 0, &err), HX_EINVAL);
  net_gpu *g = (net_gpu *)&cfg;
  assert_int_equal(net_gpu_create(&g, &cfg, &p, NET_F16, NULL, &err), HX_EINVAL);
  assert_null(g);
#if !F3D_HAVE_CUDA
  /* a CPU-only build has no GPU forward: HX_ENODEV, whatever the model */
  for (int kind = 0; kind < 2; kind++) {
    cfg.kind = kind;
    assert_int_equal(net_gpu_create(&g, &cfg, &p, NET_BF16, NULL, &err), HX_ENODEV);
    assert_non_null(strstr(err.msg, "built without CUDA"));
    assert_null(g);
    size_t bytes = 1;
    assert_int_equal(net_gpu_bytes(&bytes, &cfg, &in, NET_F16, &err), HX_ENODEV);
    assert_int_equal(bytes, 0);
  }
#endif
  net_gpu_destroy(NULL);
  assert_int_equal(net_gpu_graphable(NULL), 0);
  assert_int_equal(net_gpu_held_bytes(NULL), 0);

  /* net_output_free releases what a forward filled and leaves the struct empty */
  o.logits = malloc(16);
  o.level[0] = malloc(16);
  o.level[2 * NET_MAX_LEVELS - 1] = malloc(16);
  o.n = 4, o.n_levels = 2;
  net_output_free(&o);
  assert_null(o.logits);
  assert_null(o.level[0]);
  assert_int_equal(o.n, 0);
  net_output_free(&o);
  net_output_free(NULL);
}

/* ---- mutations of a valid file ----------------------------------------------------------------------------- */
#ifndef STF_MUTATIONS
#define STF_MUTATIONS 4000 /* ~0.3 s under ASan; a longer run: -DSTF_MUTATIONS=1000000 */
#endif
static void test_mutations(void **state) {
  (void)state;
  const char *hdr =
      "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\\\"\\u00e9\"},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
      "\"s\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[32,34]},"
      "\"e\":{\"dtype\":\"F64\",\"shape\":[1,0],\"data_offsets\":[34,34]},"
      "\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[34,42]}}";
  unsigned char data[42];
  for (int i = 0; i < 42; i++) data[i] = (unsigned char)(i * 7 + 3);
  buf base = compose(hdr, data, sizeof data);
  const size_t hend = 8 + strlen(hdr);
  write_bytes("mut.safetensors", base.p, base.n);
  expect_read("mut.safetensors", HX_OK, NULL);
  static const char interesting[] = "{}[]\":,\\0123456789-eE.u \x00\x01\x7f\xff";
  unsigned char *m = malloc(base.n);
  assert_non_null(m);
  int ok = 0, bad = 0;
  uint64_t ctr = 0;
  for (int trial = 0; trial < STF_MUTATIONS; trial++) {
    memcpy(m, base.p, base.n);
    size_t len = base.n;
    const int flips = 1 + (int)(hx_rng_u64(11, 0, ctr++) % 4);
    /* one trial in four changes data bytes only (the file stays valid); the others hit the length field and
     * header, where the parser is, one flip in four anywhere */
    const int data_only = trial % 4 == 0;
    for (int f = 0; f < flips; f++) {
      const uint64_t r = hx_rng_u64(11, 1, ctr++);
      const size_t at = (size_t)(data_only ? hend + (r >> 8) % (base.n - hend)
                                           : (r & 3u) ? (r >> 8) % hend : (r >> 8) % base.n);
      const uint64_t v = hx_rng_u64(11, 2, ctr++);
      m[at] = (v & 1u) ? (unsigned char)interesting[(v >> 1) % (sizeof interesting - 1)] : (unsigned char)(v >> 8);
    }
    if (hx_rng_u64(11, 3, (uint64_t)trial) % 10 == 0) len = (size_t)(hx_rng_u64(11, 4, (uint64_t)trial) % base.n);
    write_bytes("mut.safetensors", m, len);
    stf_file f;
    hx_err err = {0};
    const hx_status st = stf_read(&f, tpath("mut.safetensors"), &err);
    if (st == HX_OK) {
      ok++;
      assert_true(f.n <= 6);
      for (size_t i = 0; i < f.n; i++) {
        assert_non_null(f.t[i].data);
        assert_true(f.t[i].ndim >= 0 && f.t[i].ndim <= 8);
        assert_true(strlen(f.t[i].name) > 0 && strlen(f.t[i].name) < 128);
      }
      stf_free(&f);
    } else if (st == HX_EFORMAT || st == HX_EIO) {
      bad++;
      assert_null(f.t);
      assert_int_equal(f.n, 0);
      assert_true(strlen(err.msg) > 0);
    } else {
      fail_msg("trial %d: status %d (%s)", trial, (int)st, err.msg);
    }
  }
  /* both outcomes occur, so the loop exercises the parser's accept and refuse paths */
  print_message("mutations: %d read, %d refused\n", ok, bad);
  assert_true(ok > STF_MUTATIONS / 5);
  assert_true(bad > STF_MUTATIONS / 2);
  free(m);
  free(base.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),       cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_malformed_header), cmocka_unit_test(test_accepted_headers),
      cmocka_unit_test(test_malformed_file),  cmocka_unit_test(test_write_refusals),
      cmocka_unit_test(test_params_store),    cmocka_unit_test(test_params_load),
      cmocka_unit_test(test_registry),        cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_dtype_shown),     cmocka_unit_test(test_f64_range),
      cmocka_unit_test(test_running_var),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
