/*
 * test_shuf.c - CPU global shuffle reference (baselines/shuf.c): the ptv3.md 2.1 padding example,
 * padding invariants on random batches, composition, and the row gather.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "baselines/baselines.h"

static void test_padding_example(void **state) {
  (void)state;
  const size_t offset[3] = {0, 2500, 3300};
  size_t sum_p = 0, ns = 0;
  assert_int_equal(shuf_pad_sizes(&sum_p, &ns, offset, 2, 1024, NULL), HX_OK);
  assert_int_equal(sum_p, 3872);
  assert_int_equal(ns, 5);
  uint32_t pad[3872], unpad[3300];
  int32_t cu[5];
  assert_int_equal(shuf_padding_cpu(pad, unpad, cu, offset, 2, 1024, NULL), HX_OK);
  const int32_t want_cu[5] = {0, 1024, 2048, 3072, 3872};
  for (int i = 0; i < 5; i++) assert_int_equal(cu[i], want_cu[i]);
  for (uint32_t s = 0; s < 2500; s++) assert_int_equal(pad[s], s);
  for (uint32_t s = 2500; s < 3072; s++) assert_int_equal(pad[s], s - 1024); /* 1476..2047 */
  assert_int_equal(pad[2500], 1476);
  assert_int_equal(pad[3071], 2047);
  for (uint32_t s = 3072; s < 3872; s++) assert_int_equal(pad[s], s - 572); /* cloud 1: 2500..3299 */
  assert_int_equal(unpad[2499], 2499);
  assert_int_equal(unpad[2500], 3072);
  assert_int_equal(unpad[3299], 3871);
}

/* Random batches (including n_b = K, 2K, K+1, 1): invariants of ptv3.md 2.1. */
static void test_padding_invariants(void **state) {
  (void)state;
  const uint32_t K = 64;
  for (uint64_t t = 0; t < 200; t++) {
    const uint32_t B = 1 + (uint32_t)(hx_rng_u64(5, 0, t) % 5);
    size_t offset[6] = {0};
    static const size_t special[6] = {64, 128, 65, 1, 63, 200};
    for (uint32_t b = 0; b < B; b++) {
      const size_t nb = t < 6 ? special[(t + b) % 6] : 1 + hx_rng_u64(5, 1 + b, t) % 300;
      offset[b + 1] = offset[b] + nb;
    }
    size_t sum_p, ns;
    assert_int_equal(shuf_pad_sizes(&sum_p, &ns, offset, B, K, NULL), HX_OK);
    uint32_t *pad = malloc(sum_p * sizeof *pad), *unpad = malloc(offset[B] * sizeof *unpad);
    int32_t *cu = malloc(ns * sizeof *cu);
    assert_true(pad && unpad && cu);
    assert_int_equal(shuf_padding_cpu(pad, unpad, cu, offset, B, K, NULL), HX_OK);
    for (size_t j = 0; j < offset[B]; j++) assert_int_equal(pad[unpad[j]], j);
    size_t offp = 0, c = 0;
    for (uint32_t b = 0; b < B; b++) {
      const size_t nb = offset[b + 1] - offset[b], pb = nb > K ? (nb + K - 1) / K * K : nb;
      for (size_t s = offp; s < offp + pb; s++) {
        assert_true(pad[s] >= offset[b] && pad[s] < offset[b + 1]); /* own cloud only */
      }
      /* the last patch reads exactly the cloud's last min(K, nb) sorted points (as a set: the slots of a
       * padded patch hold [n-r .. n-1] then the previous patch's offsets r..K-1) */
      const size_t last = nb < K ? nb : K;
      unsigned char seen[64] = {0};
      for (size_t s = offp + pb - last; s < offp + pb; s++) {
        assert_true(pad[s] >= offset[b + 1] - last);
        assert_int_equal(seen[pad[s] - (offset[b + 1] - last)]++, 0);
      }
      for (size_t s = offp; s < offp + pb; s += K) assert_int_equal(cu[c++], (int32_t)s);
      offp += pb;
    }
    assert_int_equal(cu[c], (int32_t)sum_p);
    assert_int_equal(c + 1, ns);
    free(pad), free(unpad), free(cu);
  }
}

static void test_compose_and_gather(void **state) {
  (void)state;
  /* one cloud of 5 sorted by order = [3,1,4,0,2], K = 4: p = 8 slots */
  const size_t offset[2] = {0, 5};
  const uint32_t order[5] = {3, 1, 4, 0, 2};
  uint32_t inverse[5];
  for (uint32_t j = 0; j < 5; j++) inverse[order[j]] = j;
  uint32_t pad[8], unpad[5], order_p[8], inverse_p[5];
  assert_int_equal(shuf_padding_cpu(pad, unpad, NULL, offset, 1, 4, NULL), HX_OK);
  assert_int_equal(shuf_compose_cpu(order_p, inverse_p, order, inverse, pad, unpad, 5, 8), HX_OK);
  const uint32_t want_p[8] = {3, 1, 4, 0, 2, 1, 4, 0}; /* slots 5..7 re-read positions 1..3 */
  for (int s = 0; s < 8; s++) assert_int_equal(order_p[s], want_p[s]);
  for (uint32_t i = 0; i < 5; i++) assert_int_equal(order_p[inverse_p[i]], i); /* round trip */
  /* gather rows of width 3 */
  uint16_t in[5 * 3], out[8 * 3], back[5 * 3];
  for (int k = 0; k < 15; k++) in[k] = (uint16_t)(1000 + k);
  memset(out, 0xFF, sizeof out);
  assert_int_equal(shuf_gather_cpu(out, in, order_p, 8, 3, SHUF_BF16), HX_OK);
  for (uint32_t s = 0; s < 8; s++)
    for (uint32_t c = 0; c < 3; c++) assert_int_equal(out[s * 3 + c], in[want_p[s] * 3 + c]);
  assert_int_equal(shuf_gather_cpu(back, out, inverse_p, 5, 3, SHUF_F16), HX_OK);
  assert_memory_equal(back, in, sizeof in);
}

static void test_bad_padding(void **state) {
  (void)state;
  const size_t offset[2] = {0, 10};
  size_t sp;
  assert_int_equal(shuf_pad_sizes(&sp, NULL, offset, 1, 0, NULL), HX_EINVAL);
  assert_int_equal(shuf_pad_sizes(&sp, NULL, offset, 0, 16, NULL), HX_EINVAL);
  const size_t down[3] = {0, 10, 5};
  assert_int_equal(shuf_pad_sizes(&sp, NULL, down, 2, 16, NULL), HX_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_padding_example),
      cmocka_unit_test(test_padding_invariants),
      cmocka_unit_test(test_compose_and_gather),
      cmocka_unit_test(test_bad_padding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
