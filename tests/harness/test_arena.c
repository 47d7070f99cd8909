/*
 * test_arena.c - the memory arena's bookkeeping on a host backend (no GPU): sizes rounded to 256 B and
 * pointers aligned, bytes in use and the peak after allocations and frees, stage high-water marks,
 * capacity exhaustion (HX_ENOMEM naming the request and what is in use, accounting unchanged), backend
 * failures passed on, notes (memory allocated elsewhere), release_all and reset, and the backend seeing
 * exactly one release per allocation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

/* Host backend: aligned_alloc, counting live blocks; fail_after > 0 makes that call fail. */
typedef struct host_be {
  size_t allocs, releases, live, calls, fail_at;
  size_t last_bytes;
} host_be;

static hx_status h_alloc(void *ctx, void **p, size_t bytes, hx_err *err) {
  host_be *h = ctx;
  h->calls++;
  h->last_bytes = bytes;
  if (h->fail_at && h->calls == h->fail_at) return hx_errf(err, HX_ECUDA, "simulated out of memory");
  *p = aligned_alloc(HX_ARENA_ALIGN, bytes);
  if (!*p) return hx_errf(err, HX_ENOMEM, "host");
  memset(*p, 0xAB, bytes); /* the whole accounted size is usable */
  h->allocs++;
  h->live++;
  return HX_OK;
}
static void h_release(void *ctx, void *p) {
  host_be *h = ctx;
  h->releases++;
  h->live--;
  free(p);
}

static void init(hx_arena *a, host_be *h, size_t capacity) {
  memset(h, 0, sizeof *h);
  hx_arena_backend be = {h_alloc, h_release, h};
  hx_arena_init(a, "test", capacity, &be);
}

static void test_alloc_free_peak(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 0);
  void *p[4];
  hx_err e;
  assert_int_equal(hx_arena_alloc(&a, &p[0], 1, "one byte", &e), HX_OK);
  assert_int_equal(h.last_bytes, 256); /* the backend sees the rounded size */
  assert_int_equal(hx_arena_in_use(&a), 256);
  assert_int_equal(hx_arena_alloc(&a, &p[1], 256, "exact", &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 512);
  assert_int_equal(hx_arena_alloc(&a, &p[2], 257, "over", &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 1024);
  assert_int_equal(hx_arena_alloc(&a, &p[3], 0, "empty", &e), HX_OK); /* zero still takes one unit */
  assert_int_equal(hx_arena_in_use(&a), 1280);
  for (int i = 0; i < 4; i++) assert_int_equal((uintptr_t)p[i] % HX_ARENA_ALIGN, 0);
  assert_int_equal(hx_arena_peak(&a), 1280);
  assert_int_equal(hx_arena_count(&a), 4);
  assert_int_equal(hx_arena_live(&a), 4);
  /* free out of order; the peak stays, in_use falls by each accounted size */
  assert_int_equal(hx_arena_free(&a, p[2], &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 768);
  assert_int_equal(hx_arena_free(&a, p[0], &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 512);
  assert_int_equal(hx_arena_peak(&a), 1280);
  assert_int_equal(h.releases, 2);
  /* a freed pointer is no longer held; NULL is fine */
  assert_int_equal(hx_arena_free(&a, p[0], &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "does not hold"));
  assert_int_equal(hx_arena_free(&a, NULL, &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 512);
  /* a new peak after frees needs more than what was freed */
  void *big;
  assert_int_equal(hx_arena_alloc(&a, &big, 1000, "big", &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 1536);
  assert_int_equal(hx_arena_peak(&a), 1536);
  hx_arena_destroy(&a);
  assert_int_equal(h.live, 0);
  assert_int_equal(h.releases, h.allocs);
}

static void test_marks(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 0);
  hx_err e;
  void *base, *t1, *t2;
  assert_int_equal(hx_arena_alloc(&a, &base, 4096, "held", &e), HX_OK);
  /* stage 1 allocates and frees a temporary: its peak counts it, the arena's peak too */
  hx_arena_mark(&a);
  assert_int_equal(hx_arena_mark_peak(&a), 4096); /* what is held when the stage starts */
  assert_int_equal(hx_arena_alloc(&a, &t1, 8192, "tmp", &e), HX_OK);
  assert_int_equal(hx_arena_free(&a, t1, &e), HX_OK);
  assert_int_equal(hx_arena_mark_peak(&a), 4096 + 8192);
  /* stage 2 starts after the temporary is gone: only what is held, plus its own */
  hx_arena_mark(&a);
  assert_int_equal(hx_arena_mark_peak(&a), 4096);
  assert_int_equal(hx_arena_alloc(&a, &t2, 100, "small", &e), HX_OK);
  assert_int_equal(hx_arena_mark_peak(&a), 4096 + 256);
  assert_int_equal(hx_arena_peak(&a), 4096 + 8192);
  assert_true(hx_arena_mark_peak(&a) <= hx_arena_peak(&a));
  /* reset: everything freed, peaks and count start again */
  hx_arena_reset(&a);
  assert_int_equal(h.live, 0);
  assert_int_equal(hx_arena_in_use(&a), 0);
  assert_int_equal(hx_arena_peak(&a), 0);
  assert_int_equal(hx_arena_mark_peak(&a), 0);
  assert_int_equal(hx_arena_count(&a), 0);
  void *q;
  assert_int_equal(hx_arena_alloc(&a, &q, 512, "after reset", &e), HX_OK);
  assert_int_equal(hx_arena_peak(&a), 512);
  assert_int_equal(hx_arena_mark_peak(&a), 512);
  hx_arena_destroy(&a);
  assert_int_equal(h.live, 0);
}

static void test_exhaustion(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 1024);
  hx_err e;
  void *p, *q;
  assert_int_equal(hx_arena_alloc(&a, &p, 700, "first", &e), HX_OK); /* 768 accounted */
  size_t calls = h.calls;
  assert_int_equal(hx_arena_alloc(&a, &q, 300, "qkv buffer", &e), HX_ENOMEM); /* 768 + 512 > 1024 */
  assert_null(q);
  assert_int_equal(h.calls, calls); /* refused before the backend */
  assert_non_null(strstr(e.msg, "qkv buffer"));
  assert_non_null(strstr(e.msg, "300 B"));
  assert_non_null(strstr(e.msg, "768 B in use"));
  assert_non_null(strstr(e.msg, "capacity 1024 B"));
  assert_int_equal(hx_arena_in_use(&a), 768);
  assert_int_equal(hx_arena_peak(&a), 768);
  assert_int_equal(hx_arena_live(&a), 1);
  /* what still fits, fits exactly */
  assert_int_equal(hx_arena_alloc(&a, &q, 256, "fits", &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 1024);
  assert_int_equal(hx_arena_alloc(&a, &q, 1, "one more", &e), HX_ENOMEM);
  /* a request larger than the capacity on its own, and one whose rounding overflows */
  hx_arena_release_all(&a);
  assert_int_equal(hx_arena_in_use(&a), 0);
  assert_int_equal(hx_arena_peak(&a), 1024); /* release_all keeps the peak */
  assert_int_equal(hx_arena_alloc(&a, &q, 2000, "huge", &e), HX_ENOMEM);
  assert_int_equal(hx_arena_alloc(&a, &q, SIZE_MAX - 3, "overflow", &e), HX_EINVAL);
  hx_arena_destroy(&a);
  assert_int_equal(h.live, 0);
}

static void test_backend_failure(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 0);
  hx_err e;
  void *p, *q;
  assert_int_equal(hx_arena_alloc(&a, &p, 1000, "ok", &e), HX_OK);
  h.fail_at = h.calls + 1;
  assert_int_equal(hx_arena_alloc(&a, &q, 5000, "features", &e), HX_ECUDA);
  assert_null(q);
  assert_non_null(strstr(e.msg, "features"));
  assert_non_null(strstr(e.msg, "simulated out of memory"));
  assert_non_null(strstr(e.msg, "1024 B in use"));
  assert_int_equal(hx_arena_in_use(&a), 1024);
  assert_int_equal(hx_arena_count(&a), 1);
  hx_arena_destroy(&a);
  assert_int_equal(h.live, 0);
}

static void test_notes(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 0);
  hx_err e;
  int handle1, handle2;
  void *p;
  assert_int_equal(hx_arena_alloc(&a, &p, 256, "own", &e), HX_OK);
  hx_arena_mark(&a);
  assert_int_equal(hx_arena_note(&a, &handle1, 10000, "psh_gpu", &e), HX_OK);
  assert_int_equal(hx_arena_in_use(&a), 256 + 10240);
  assert_int_equal(hx_arena_mark_peak(&a), 256 + 10240);
  assert_int_equal(hx_arena_note(&a, &handle1, 1, "again", &e), HX_EINVAL); /* one entry per handle */
  assert_int_equal(hx_arena_note(&a, NULL, 1, "none", &e), HX_EINVAL);
  assert_int_equal(hx_arena_note(&a, &handle2, 0, "empty", &e), HX_OK);
  assert_int_equal(h.allocs, 1); /* notes never reach the backend */
  assert_int_equal(hx_arena_free(&a, &handle1, &e), HX_OK);
  assert_int_equal(h.releases, 0);
  assert_int_equal(hx_arena_in_use(&a), 512);
  assert_int_equal(hx_arena_peak(&a), 256 + 10240 + 256);
  hx_arena_release_all(&a); /* the note of handle2 is dropped, p is released once */
  assert_int_equal(h.releases, 1);
  assert_int_equal(hx_arena_live(&a), 0);
  hx_arena_destroy(&a);
  assert_int_equal(h.live, 0);
}

/* Many allocations: the table grows past its first size and every one is freed exactly once. */
static void test_many(void **state) {
  (void)state;
  host_be h;
  hx_arena a;
  init(&a, &h, 0);
  hx_err e;
  void *p[100];
  size_t want = 0;
  for (size_t i = 0; i < 100; i++) {
    assert_int_equal(hx_arena_alloc(&a, &p[i], i * 100 + 1, "many", &e), HX_OK);
    want += (i * 100 + 1 + 255) / 256 * 256;
  }
  assert_int_equal(hx_arena_in_use(&a), want);
  assert_int_equal(hx_arena_peak(&a), want);
  for (size_t i = 0; i < 100; i += 2) assert_int_equal(hx_arena_free(&a, p[i], &e), HX_OK);
  assert_int_equal(hx_arena_live(&a), 50);
  hx_arena_destroy(&a);
  assert_int_equal(h.allocs, 100);
  assert_int_equal(h.releases, 100);
}

/* The device backend without a device (CPU-only build) is a clear HX_ENODEV, not a crash. */
static void test_device_backend(void **state) {
  (void)state;
  int n = 0;
  if (hx_device_count(&n, NULL) == HX_OK && n > 0) skip(); /* a GPU test covers the real backend */
  hx_arena a;
  hx_arena_init(&a, "dev", 0, NULL);
  hx_err e;
  void *p = (void *)&a;
  hx_status st = hx_arena_alloc(&a, &p, 1024, "d_xyz", &e);
  assert_int_not_equal(st, HX_OK);
  assert_null(p);
  assert_non_null(strstr(e.msg, "d_xyz"));
  assert_int_equal(hx_arena_in_use(&a), 0);
  hx_arena_destroy(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_free_peak), cmocka_unit_test(test_marks), cmocka_unit_test(test_exhaustion),
      cmocka_unit_test(test_backend_failure), cmocka_unit_test(test_notes), cmocka_unit_test(test_many),
      cmocka_unit_test(test_device_backend),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
