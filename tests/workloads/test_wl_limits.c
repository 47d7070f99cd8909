/*
 * test_wl_limits.c - large inputs without large memory: the index arithmetic of every entry point that
 * turns point counts into sizes or offsets, at the 2^31 and 2^32 boundaries (and at 2^64 where size_t
 * wraps), through the validators that run before anything is allocated or touched.
 *
 * The rule (issue "Large inputs"): clouds up to 10M points and batches up to 16 clouds are accepted; past a
 * limit the call is refused with HX_EINVAL/HX_ENOMEM/HX_EUNSUPPORTED and a message naming it, never an
 * integer wrap that would size a buffer too small. What is exercised, and the limits each one enforces:
 *   psh_params_check    n <= 2^30 (PSH_MAX_POINTS), nclouds * nb < 2^31, offsets non-decreasing (so a caller's
 *                       uint32 cast of a size_t offset past 2^32, which wraps, is refused)
 *   psh_pad_cpu         nbuckets * S <= 2^32 - 1 rows (PSH_NONE is 2^32 - 1)
 *   sfc_* (check_offsets, sfc_sort_cpu)  n <= 2^32 - 1 points; sfc_depth: 3 depth + bit_length(B) <= 63
 *   shuf_pad_sizes      sum of padded clouds <= 2^31 - 1 (cu_seqlens are int32), per-cloud rounding and the
 *                       sum never wrap (2^64)
 *   wl_batch_from_clouds, wl_cloud_alloc, wl_voxel_dedup   total points and bytes never wrap
 *   wl_read             an element count bounds nothing when its records hold no property (PLY ascii)
 * Fake clouds (n huge, xyz NULL) stand for clouds that would not fit: a validator must refuse them before it
 * reads a coordinate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baselines/baselines.h"
#include "kernels/kernels.h"
#include "workloads/workloads.h"

#define M10 10000000u /* the largest cloud the issue asks for */
#define BMAX 16u      /* the largest batch */

static void assert_msg(const hx_err *err, const char *part) {
  if (!strstr(err->msg, part)) fail_msg("message \"%s\" does not name \"%s\"", err->msg, part);
}

/* ---- PSH ------------------------------------------------------------------------------------------- */
static void psh_defaults_for(psh_params *p, size_t nmax) {
  psh_params_default(p);
  p->nb = psh_auto_buckets(nmax, p->cap);
}

static void test_psh_batch_limits(void **state) {
  (void)state;
  psh_params p;
  hx_err err;
  uint32_t off[BMAX + 1];
  /* 16 clouds of 10M: 160M points, 16 x 32768 buckets */
  psh_defaults_for(&p, M10);
  assert_int_equal(p.nb, 32768); /* next power of two >= ceil(10M / 512) = 19532 */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = b * M10;
  assert_int_equal(psh_params_check(&p, off, BMAX, &err), HX_OK);
  /* 2^30 points in all: the limit itself is accepted, one more is refused */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = b * (PSH_MAX_POINTS / BMAX);
  assert_int_equal(psh_params_check(&p, off, BMAX, &err), HX_OK);
  off[BMAX] = PSH_MAX_POINTS + 1u;
  assert_int_equal(psh_params_check(&p, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "exceed the limit");
  /* a caller that casts size_t offsets past 2^32 to uint32 gets wrapped (smaller) offsets: refused as
   * decreasing, never taken as a small batch */
  size_t big[BMAX + 1];
  for (uint32_t b = 0; b <= BMAX; b++) big[b] = (size_t)b * ((size_t)1 << 28); /* offset[16] = 2^32 */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (uint32_t)big[b];
  assert_int_equal(psh_params_check(&p, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "decrease");
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (uint32_t)(big[b] / 2); /* 2^31 in all: over 2^30 */
  assert_int_equal(psh_params_check(&p, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "exceed the limit");
}

static void test_psh_bucket_limits(void **state) {
  (void)state;
  psh_params p;
  hx_err err;
  psh_params_default(&p);
  /* nclouds * nb < 2^31 (the leftover flag is bit 31 of a bucket id): 127 x 2^24 passes, 128 x 2^24 = 2^31
   * does not; the product is taken in 64 bits, so UINT32_MAX clouds do not wrap it back under */
  p.nb = PSH_NB_MAX;
  assert_int_equal(psh_params_check(&p, NULL, 127, &err), HX_OK);
  assert_int_equal(psh_params_check(&p, NULL, 128, &err), HX_EINVAL);
  assert_msg(&err, "2^31 buckets");
  p.nb = 2;
  assert_int_equal(psh_params_check(&p, NULL, 1u << 30, &err), HX_EINVAL);
  assert_int_equal(psh_params_check(&p, NULL, UINT32_MAX, &err), HX_EINVAL);
  p.nb = PSH_NB_MAX;
  assert_int_equal(psh_params_check(&p, NULL, UINT32_MAX, &err), HX_EINVAL);
  /* more buckets per cloud than allowed: what psh_auto_buckets gives for 2^30 points at S = 16 */
  psh_defaults_for(&p, PSH_MAX_POINTS);
  assert_int_equal(p.nb, 2048u * 1024u); /* 2^30 / 512 = 2^21 */
  p.cap = 16;
  p.nb = psh_auto_buckets(PSH_MAX_POINTS, p.cap);
  assert_int_equal(p.nb, 1u << 26);
  assert_int_equal(psh_params_check(&p, NULL, 1, &err), HX_EINVAL);
  assert_msg(&err, "exceed the limit");
  /* 2^32 and more points ask for the capped 2^30 buckets, refused the same way */
  p.nb = psh_auto_buckets((size_t)1 << 32, p.cap);
  assert_int_equal(p.nb, 1u << 28);
  p.nb = psh_auto_buckets((size_t)1 << 40, p.cap);
  assert_int_equal(p.nb, 1u << 30);
  assert_int_equal(psh_params_check(&p, NULL, 1, &err), HX_EINVAL);
}

static void test_psh_pad_limits(void **state) {
  (void)state;
  /* the padded layout has nbuckets * S rows, indexed in uint32 with PSH_NONE = 2^32 - 1 reserved: 2^16 buckets
   * of 2^16 rows (2^32) are refused before any row is written (the outputs are NULL here) */
  const uint32_t nbk = 1u << 16;
  uint32_t *count = calloc(nbk, sizeof *count);
  assert_non_null(count);
  hx_err err;
  assert_int_equal(psh_pad_cpu(NULL, NULL, NULL, NULL, NULL, count, nbk, 0, 1u << 16, NULL, &err), HX_EUNSUPPORTED);
  assert_msg(&err, "2^32 rows");
  free(count);
}

/* ---- PTv3 serialization ---------------------------------------------------------------------------- */
static void test_sfc_limits(void **state) {
  (void)state;
  hx_err err;
  size_t off[BMAX + 1];
  /* n = 2^32 points: one more than uint32 indices hold; refused by every stage before it writes */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (size_t)b * ((size_t)1 << 28);
  assert_int_equal(sfc_batch_index_cpu(NULL, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "2^32-1");
  assert_int_equal(sfc_grid_cpu(NULL, NULL, NULL, off, BMAX, 0.05, &err), HX_EINVAL);
  assert_msg(&err, "2^32-1");
  size_t dropped;
  assert_int_equal(sfc_dedup_cpu(NULL, NULL, &dropped, NULL, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "2^32-1");
  assert_int_equal(sfc_sort_cpu(NULL, NULL, NULL, (size_t)1 << 32, 1, &err), HX_EINVAL);
  assert_msg(&err, "2^32-1");
  /* an empty cloud inside the batch (offsets that repeat) is refused, as PTv3 needs every cloud */
  off[3] = off[2];
  assert_int_equal(sfc_batch_index_cpu(NULL, off, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "empty");

  /* key bits: 16 clouds at the deepest grid take 3 * 16 + 5 = 53 <= 63 bits */
  int depth;
  assert_int_equal(sfc_depth(&depth, (1u << 16) - 2u, BMAX, 0.05, &err), HX_OK);
  assert_int_equal(depth, 16);
  assert_int_equal(sfc_key_bits(depth, BMAX), 52); /* bit_length(15) = 4 batch bits */
  /* B = 2^31 and UINT32_MAX clouds: 32 batch bits, so depth <= 10 */
  assert_int_equal(sfc_depth(&depth, 1022u, 1u << 31, 0.05, &err), HX_OK);
  assert_int_equal(depth, 10);
  assert_int_equal(sfc_depth(&depth, 1023u, 1u << 31, 0.05, &err), HX_EINVAL);
  assert_msg(&err, "> 63");
  assert_int_equal(sfc_depth(&depth, 1023u, UINT32_MAX, 0.05, &err), HX_EINVAL);
  assert_int_equal(sfc_key_bits(10, UINT32_MAX), 62);
  /* the largest coordinate: max + 1 is taken in 64 bits (2^32 would wrap to 0 and give depth 0) */
  assert_int_equal(sfc_depth(&depth, UINT32_MAX, 1, 0.05, &err), HX_EINVAL);
  assert_msg(&err, "depth 33");
}

/* ---- PTv3 patch padding ------------------------------------------------------------------------------ */
static void test_shuf_pad_limits(void **state) {
  (void)state;
  hx_err err;
  size_t sum_p = 0, nsl = 0, off[BMAX + 1];
  /* 16 clouds of 10M at K = 1024: each pads to ceil(10M / 1024) = 9766 patches */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (size_t)b * M10;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, off, BMAX, 1024, &err), HX_OK);
  assert_true(sum_p == (size_t)BMAX * 9766u * 1024u);
  assert_true(nsl == (size_t)BMAX * 9766u + 1u);
  /* cu_seqlens are int32: 2^31 - 1 padded slots fit, 2^31 do not (K = 1: padding adds nothing) */
  size_t one[2] = {0, (size_t)INT32_MAX};
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1, &err), HX_OK);
  assert_true(sum_p == (size_t)INT32_MAX);
  one[1] = (size_t)INT32_MAX + 1u;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1, &err), HX_EINVAL);
  assert_msg(&err, "int32");
  /* padding itself crosses 2^31: 2^31 - 1024 points stay, 2^31 - 1023 round up to 2^31 */
  one[1] = ((size_t)1 << 31) - 1024u;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1024, &err), HX_OK);
  one[1] = ((size_t)1 << 31) - 1023u;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1024, &err), HX_EINVAL);
  /* 2^32 points in one cloud, and 16 clouds summing to 2^32 */
  one[1] = (size_t)1 << 32;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1024, &err), HX_EINVAL);
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (size_t)b * ((size_t)1 << 28);
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, off, BMAX, 1024, &err), HX_EINVAL);
  /* size_t wraps: rounding a cloud of SIZE_MAX - 5 points up to K, and two clouds whose padded sizes sum
   * to 2^64; both must be refused, not read as tiny batches */
  one[1] = SIZE_MAX - 5u;
  sum_p = 12345;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, one, 1, 1024, &err), HX_EINVAL);
  assert_true(sum_p == 12345); /* untouched on failure */
  size_t two[3] = {0, ((size_t)1 << 63) - 1u, SIZE_MAX - 1u};
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, two, 2, 2, &err), HX_EINVAL);
  /* a patch size of 2^32 - 1 leaves every cloud unpadded */
  for (uint32_t b = 0; b <= BMAX; b++) off[b] = (size_t)b * M10;
  assert_int_equal(shuf_pad_sizes(&sum_p, &nsl, off, BMAX, UINT32_MAX, &err), HX_OK);
  assert_true(sum_p == (size_t)BMAX * M10 && nsl == BMAX + 1u);
}

/* ---- workloads --------------------------------------------------------------------------------------- */
static void test_wl_sizes(void **state) {
  (void)state;
  hx_err err;
  wl_cloud fake[BMAX];
  memset(fake, 0, sizeof fake);
  wl_batch bt;
  /* 16 clouds of 2^60 points: the total (2^64) wraps; refused before any coordinate is copied */
  for (uint32_t b = 0; b < BMAX; b++) fake[b].n = (size_t)1 << 60;
  assert_int_equal(wl_batch_from_clouds(&bt, fake, BMAX, &err), HX_EINVAL);
  assert_msg(&err, "overflows");
  assert_null(bt.xyz);
  assert_null(bt.offset);
  /* two clouds of 2^61: 2^62 points fit size_t, their 12 bytes each do not */
  fake[0].n = fake[1].n = (size_t)1 << 61;
  assert_int_equal(wl_batch_from_clouds(&bt, fake, 2, &err), HX_ENOMEM);
  assert_msg(&err, "overflows");
  assert_null(bt.xyz);
  /* one cloud: SIZE_MAX / 12 points is the byte limit */
  wl_cloud c;
  assert_int_equal(wl_cloud_alloc(&c, SIZE_MAX / 12u + 1u, &err), HX_ENOMEM);
  assert_msg(&err, "overflows");
  assert_null(c.xyz);
  assert_true(c.n == 0);
  /* dedup of a cloud too large to index: refused before a coordinate is read (the hash table's doubling
   * must not run past 2^63, where it wraps to 0 and never ends) */
  wl_cloud big = {((size_t)1 << 62) + 1u, NULL, 0, NULL}, out;
  size_t dropped = 7;
  assert_int_equal(wl_voxel_dedup(&out, &big, 0.05, &dropped, &err), HX_ENOMEM);
  assert_msg(&err, "overflows");
  assert_true(out.n == 0 && out.xyz == NULL && dropped == 0);
  big.n = SIZE_MAX;
  assert_int_equal(wl_voxel_dedup(&out, &big, 0.05, NULL, &err), HX_ENOMEM);
  /* generating or resampling more points than memory can index */
  assert_int_equal(wl_generate(&c, WL_UNIFORM, SIZE_MAX / 12u + 1u, 1, &err), HX_ENOMEM);
  assert_null(c.xyz);
  assert_int_equal(wl_make_exact(&c, WL_UNIFORM, NULL, SIZE_MAX / 2u, 0.05, 1, NULL, &err), HX_ENOMEM);
  assert_null(c.xyz);
}

/* A header's element count is bounded by the bytes its records need; an element without properties needs
 * none, so its count (10^16 here) bounds nothing and must not be iterated. */
static void test_wl_read_empty_records(void **state) {
  (void)state;
  char path[] = "/tmp/f3d-wl-limits-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const char ply[] = "ply\nformat ascii 1.0\nelement nothing 11191111111111111\nelement vertex 1\n"
                            "property float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n";
  assert_true(write(fd, ply, sizeof ply - 1) == (ssize_t)(sizeof ply - 1));
  close(fd);
  wl_cloud c;
  hx_err err;
  assert_int_equal(wl_read(&c, path, WL_FMT_PLY, &err), HX_OK);
  assert_true(c.n == 1 && c.xyz[0] == 1.0f && c.xyz[2] == 3.0f);
  wl_cloud_free(&c);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_psh_batch_limits), cmocka_unit_test(test_psh_bucket_limits),
      cmocka_unit_test(test_psh_pad_limits),   cmocka_unit_test(test_sfc_limits),
      cmocka_unit_test(test_shuf_pad_limits),  cmocka_unit_test(test_wl_sizes),
      cmocka_unit_test(test_wl_read_empty_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
