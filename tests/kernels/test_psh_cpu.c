/*
 * test_psh_cpu.c - the PSH reference: hash values on hand-computed voxels (full-width codes, any nb),
 * the probe order, the invariants of psh_run_cpu on random, clustered, planar and adversarial clouds
 * (one voxel, N < S, N = NB*S, N prime, a batch with an empty cloud, over capacity) under all four hashes,
 * the phase-1 count against an independent histogram, determinism, the checker's ability to fail, the
 * padded layout, the row gather and the quality measure; the per-point pair rebuilt from slot and the bucket
 * table; the XOR hashes' probe reach (psh_xor_reach_blocks
 * and its byte form psh_xor_reach_bytes), which the GPU probe phase uses to stop probing a point that cannot
 * be placed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "tests/kernels/test_psh_util.h"

static void test_hash_values(void **state) {
  (void)state;
  assert_int_equal(psh_morton3(1, 0, 0), 4);
  assert_int_equal(psh_morton3(0, 1, 0), 2);
  assert_int_equal(psh_morton3(0, 0, 1), 1);
  /* x=011 y=101 z=110: triples (x_i y_i z_i) from bit 0: 110, 101, 011 -> 6 + 5*8 + 3*64 = 238 */
  assert_int_equal(psh_morton3(3, 5, 6), 238);
  /* XOR: 5 ^ 3 ^ 9 = 15 */
  assert_int_equal(psh_hash_voxel(PSH_XOR_MOD, 5, 3, 9, 4, 4), 15 % 4);
  assert_int_equal(psh_hash_voxel(PSH_XOR_MOD, 5, 3, 9, 4, 7), 15 % 7);
  assert_int_equal(psh_hash_voxel(PSH_XOR_DIV, 5, 3, 9, 4, 4), 3);  /* 15*4/16 */
  assert_int_equal(psh_hash_voxel(PSH_XOR_DIV, 5, 3, 9, 4, 3), 2);  /* 45/16 */
  assert_int_equal(psh_hash_voxel(PSH_XOR_DIV, 5, 0, 0, 4, 3), 0);  /* 15/16 */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, 3, 5, 6, 3, 2048), 952); /* 238*2048/512 */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, 3, 5, 6, 3, 10), 4);     /* 2380/512 */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_MOD, 3, 5, 6, 3, 100), 38);
  /* full width: no bit dropped at 21 bits per axis, any nb */
  const uint32_t M = (1u << 21) - 1u;
  assert_true(psh_morton3(M, M, M) == (1ull << 63) - 1ull);
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, M, M, M, 21, 65536), 65535);
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, M, M, M, 21, 3), 2);
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, 1u << 20, 0, 0, 21, 65536), 32768); /* code 2^62 */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, 0, 1u << 20, 0, 21, 65536), 16384); /* 2^61 */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_DIV, 0, 0, 1u << 20, 21, 65536), 8192);  /* 2^60: z MSB kept */
  assert_int_equal(psh_hash_voxel(PSH_ZORDER_MOD, 0, 0, 1u << 20, 21, 1000003), (uint32_t)((1ull << 60) % 1000003ull));
  assert_int_equal(psh_hash_voxel(PSH_XOR_DIV, M, 0, 0, 21, 100000), (uint32_t)((uint64_t)M * 100000 >> 21));
  assert_int_equal(psh_hash_voxel(PSH_XOR_DIV, 0, 0, 0, 0, 7), 0); /* one voxel: K = 0 */
  /* every bucket in range for odd nb */
  for (uint32_t i = 0; i < 5000; i++) {
    uint32_t x = (uint32_t)hx_rng_u64(1, i, 0) & M, y = (uint32_t)hx_rng_u64(1, i, 1) & M, z = (uint32_t)hx_rng_u64(1, i, 2) & M;
    for (int h = 0; h < PSH_HASH_COUNT; h++) assert_true(psh_hash_voxel((psh_hash)h, x, y, z, 21, 70001) < 70001);
  }
}

/* psh_span_check: a cloud is refused only past 2^21 - 1 voxels along an axis, naming the cloud and the axis; the span
 * counts from each cloud's own lowest point, so clouds far apart in one batch are each within it */
static void test_span_check(void **state) {
  (void)state;
  const float v = 0.05f;
  float xyz[12] = {0, 0, 0, 0, 0, 0, 5e6f, 0, 0, 5e6f, 0, 0};
  uint32_t off2[3] = {0, 2, 4}, off1[2] = {0, 4};
  hx_err e;
  xyz[4] = 104857.0f; /* cloud 0: 2,097,140 voxels along y, inside */
  psh_in two = {xyz, off2, 2, 4};
  assert_int_equal(psh_span_check(&two, v, &e), HX_OK);
  xyz[4] = 104858.0f; /* 2,097,160 voxels: past 2^21 - 1 */
  assert_int_equal(psh_span_check(&two, v, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "cloud 0 spans 104858 m along y"));
  xyz[4] = 0.0f;
  assert_int_equal(psh_span_check(&two, v, &e), HX_OK); /* two clouds 5000 km apart, each a point or two */
  psh_in one = {xyz, off1, 1, 4};
  assert_int_equal(psh_span_check(&one, v, &e), HX_EINVAL); /* as one cloud: 5000 km along x */
  assert_non_null(strstr(e.msg, "along x"));
  assert_int_equal(psh_span_check(&one, 1e6f, &e), HX_OK); /* at 1000 km voxels it fits */
}

static void test_hash_names(void **state) {
  (void)state;
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    psh_hash back;
    assert_int_equal(psh_hash_parse(psh_hash_name((psh_hash)h), &back), HX_OK);
    assert_int_equal(back, h);
  }
  psh_hash x;
  assert_int_equal(psh_hash_parse("xor", &x), HX_EINVAL);
}

static void test_probe_order(void **state) {
  (void)state;
  int8_t a[128][3], b[128][3], c[128][3];
  psh_probe_order(a, 128, 7);
  psh_probe_order(b, 128, 7);
  psh_probe_order(c, 128, 8);
  assert_memory_equal(a, b, sizeof a);
  assert_true(memcmp(a, c, sizeof a) != 0);
  int seen[7][7][7];
  memset(seen, 0, sizeof seen);
  for (int k = 0; k < 128; k++) {
    assert_false(a[k][0] == 0 && a[k][1] == 0 && a[k][2] == 0);
    for (int d = 0; d < 3; d++) assert_true(a[k][d] >= -3 && a[k][d] <= 3);
    seen[a[k][0] + 3][a[k][1] + 3][a[k][2] + 3]++;
  }
  int inner = 0;
  for (int x = 1; x <= 5; x++)
    for (int y = 1; y <= 5; y++)
      for (int z = 1; z <= 5; z++) inner += seen[x][y][z];
  assert_int_equal(inner, 124);
  assert_int_equal(seen[6][6][6], 1);
  assert_int_equal(seen[6][0][6], 1);
  assert_int_equal(seen[0][6][0], 1);
  assert_int_equal(seen[0][0][0], 1);
}

/* Run the reference on a batch, check invariants and counters, and with `rerun` that a second run gives the
 * same bits; returns the stats. */
static psh_stats run_checked(const float *xyz, const uint32_t *off, uint32_t nclouds, const psh_params *p, int rerun) {
  uint32_t n = off[nclouds];
  tres r;
  assert_true(tres_alloc(&r, n, nclouds * p->nb));
  psh_in in = {xyz, off, nclouds, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  hx_status st = psh_run_cpu(&out, &in, p, &err);
  if (st != HX_OK) fail_msg("psh_run_cpu: %s", err.msg);
  st = psh_check(&out, &in, p, &err);
  if (st != HX_OK) fail_msg("psh_check (%s, nb %u, S %u): %s", psh_hash_name(p->hash), p->nb, p->cap, err.msg);
  psh_stats s;
  psh_stats_compute(&s, r.count, nclouds * p->nb, r.counters, p->cap);
  assert_int_equal(s.n, n);
  assert_int_equal(s.placed_first + s.placed_probe + s.placed_overflow, n);
  assert_int_equal(s.placed_first, tphase1_expected(xyz, off, nclouds, p));
  if (rerun) { /* determinism: a second run gives the same bits */
    tres r2;
    assert_true(tres_alloc(&r2, n, nclouds * p->nb));
    psh_out out2 = tres_out(&r2);
    assert_int_equal(psh_run_cpu(&out2, &in, p, &err), HX_OK);
    assert_memory_equal(r.bucket, r2.bucket, (size_t)n * 4 + 0 * 1);
    assert_memory_equal(r.offset, r2.offset, (size_t)n * 4);
    tres_free(&r2);
  }
  tres_free(&r);
  return s;
}

static psh_stats run_and_check(const float *xyz, const uint32_t *off, uint32_t nclouds, const psh_params *p) {
  return run_checked(xyz, off, nclouds, p, 1);
}

static void params(psh_params *p, psh_hash h, uint32_t nb, uint32_t cap) {
  psh_params_default(p);
  p->hash = h;
  p->nb = nb;
  p->cap = cap;
  p->voxel = 0.1f;
}

static void test_invariants_kinds(void **state) {
  (void)state;
  const uint32_t n = 20011; /* prime: not a multiple of anything */
  float *xyz = malloc((size_t)n * 12);
  for (int kind = TC_UNIFORM; kind <= TC_PLANE; kind++) {
    tcloud_fill(xyz, 0, n, (tcloud_kind)kind, 11u + (uint64_t)kind);
    uint32_t off[2] = {0, n};
    for (int h = 0; h < PSH_HASH_COUNT; h++) {
      psh_params p;
      params(&p, (psh_hash)h, psh_auto_buckets(n, 64), 64);
      psh_stats s = run_and_check(xyz, off, 1, &p);
      assert_int_equal(s.over_cap_buckets, 0);
      assert_true(s.max_count <= 64);
      if (kind == TC_ONE_VOXEL) {
        /* one voxel: only S points keep their bucket, every probe re-hashes to the same voxel code 0 */
        assert_int_equal(s.placed_first, 64);
        assert_int_equal(s.placed_probe, 0);
        assert_int_equal(s.placed_overflow, n - 64);
      }
    }
  }
  free(xyz);
}

static void test_exact_capacity(void **state) {
  (void)state;
  /* N = NB * S exactly: every bucket ends exactly full */
  const uint32_t nb = 37, S = 48, n = nb * S;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_CLUSTERED, 5);
  uint32_t off[2] = {0, n};
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    psh_params p;
    params(&p, (psh_hash)h, nb, S);
    psh_stats s = run_and_check(xyz, off, 1, &p);
    assert_int_equal(s.max_count, S);
    assert_int_equal(s.empty_buckets, 0);
  }
  free(xyz);
}

static void test_small_and_batch(void **state) {
  (void)state;
  /* N < S, a batch with an empty cloud in the middle and one at the end, a single point */
  const uint32_t sizes[5] = {10, 0, 3001, 1, 0};
  uint32_t off[6] = {0};
  for (int c = 0; c < 5; c++) off[c + 1] = off[c] + sizes[c];
  float *xyz = malloc((size_t)off[5] * 12 + 12);
  for (int c = 0; c < 5; c++) tcloud_fill(xyz, off[c], sizes[c], TC_UNIFORM, 100u + (uint64_t)c);
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    psh_params p;
    params(&p, (psh_hash)h, 64, 64);
    psh_stats s = run_and_check(xyz, off, 5, &p);
    assert_int_equal(s.over_cap_buckets, 0);
    /* buckets of the empty clouds stay empty: at least 2 x 64 empty */
    assert_true(s.empty_buckets >= 128);
  }
  free(xyz);
}

static void test_over_capacity(void **state) {
  (void)state;
  /* 1000 points into 4 x 16 slots: the overflow policy spreads the excess round-robin */
  const uint32_t n = 1000;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 9);
  uint32_t off[2] = {0, n};
  psh_params p;
  params(&p, PSH_XOR_DIV, 4, 16);
  psh_stats s = run_and_check(xyz, off, 1, &p);
  assert_int_equal(s.over_cap_buckets, 4);
  assert_int_equal(s.max_count, 250); /* 1000 / 4: every bucket fills to S, then the excess goes round-robin */
  free(xyz);
}

static void test_big_nb(void **state) {
  (void)state;
  /* more than 64k buckets, not a power of two */
  const uint32_t n = 200003;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 21);
  uint32_t off[2] = {0, n};
  psh_params p;
  params(&p, PSH_ZORDER_DIV, 70001, 16);
  p.voxel = 0.01f;
  psh_stats s = run_and_check(xyz, off, 1, &p);
  assert_int_equal(s.over_cap_buckets, 0);
  assert_true(s.max_count <= 16);
  free(xyz);
}

static void test_4m_points(void **state) {
  (void)state;
  /* the largest cloud: 4M points in one cloud at S = 512, 8192 buckets (psh_auto_buckets), 95% full.
   * Z-order-mod: its 3 * bits wide code reaches every bucket (an XOR code is only bits wide: at 0.1 m this
   * 50 m cloud has bits = 9, so the XOR hashes reach 512 of the 8192 buckets, probes included, and the
   * overflow policy places the rest). test_psh_gpu runs every hash at this size against every GPU variant.
   * One CPU run plus the checker, not run_and_check's two, to spare CI's two cores. */
  const uint32_t n = 4000000;
  float *xyz = malloc((size_t)n * 12);
  assert_non_null(xyz);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 1000);
  uint32_t off[2] = {0, n};
  psh_params p;
  params(&p, PSH_ZORDER_MOD, psh_auto_buckets(n, 512), 512);
  assert_int_equal(p.nb, 8192);
  psh_stats s = run_checked(xyz, off, 1, &p, 0);
  assert_true(s.placed_first > n / 2); /* the first hash places most points */
  assert_true(s.placed_probe > 0);     /* at 95% some first choices are full, and probing finds room */
  assert_int_equal(s.over_cap_buckets, 0);
  assert_int_equal(s.max_count, 512);
  free(xyz);
}

static void test_xor_reach(void **state) {
  (void)state;
  /* An XOR code is as wide as one voxel index (bits), and probes wrap modulo 2^bits: the XOR hashes reach
   * only 2^bits buckets, and the overflow policy places what those cannot hold (docs/psh.md). A
   * 50 x 50 x 4 m cloud at 0.5 m: indices below 100, bits = 7, 128 codes; 2048 buckets of 16. */
  const uint32_t n = 20000;
  float *xyz = malloc((size_t)n * 12);
  assert_non_null(xyz);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 5);
  uint32_t off[2] = {0, n};
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    psh_params p;
    params(&p, (psh_hash)h, 2048, 16);
    p.voxel = 0.5f;
    psh_stats s = run_and_check(xyz, off, 1, &p);
    const uint64_t hashed = s.placed_first + s.placed_probe;
    psh_in in = {xyz, off, 1, n};
    uint32_t bits = 99;
    const uint32_t reach = psh_reachable_buckets(&in, &p, 0, &bits);
    assert_int_equal(bits, 7);
    assert_int_equal(reach, h == PSH_XOR_MOD || h == PSH_XOR_DIV ? 128 : 2048);
    if (h == PSH_XOR_MOD || h == PSH_XOR_DIV) {
      assert_int_equal(hashed, 128 * 16); /* every reachable bucket full, nothing more */
      assert_int_equal(s.placed_overflow, n - 128 * 16);
    } else {
      assert_true(hashed > n / 2); /* Z-order codes are 21 bits wide here: most points hash */
    }
    assert_int_equal(s.over_cap_buckets, 0);
  }
  /* an empty cloud reaches nothing; one voxel (bits 0) one bucket */
  uint32_t off2[3] = {0, 0, 1};
  psh_in in2 = {xyz, off2, 2, 1};
  psh_params p;
  params(&p, PSH_ZORDER_MOD, 64, 16);
  assert_int_equal(psh_reachable_buckets(&in2, &p, 0, NULL), 0);
  assert_int_equal(psh_reachable_buckets(&in2, &p, 1, NULL), 1);
  free(xyz);
}

/* Is local bucket g in the ranges of psh_xor_reach_blocks / psh_xor_block_buckets for voxel v? Also checks
 * that every range lies in [0, nb) and adds the ranges' sizes to *total. */
static int in_xor_reach(psh_hash h, const uint32_t v[3], uint32_t step, uint32_t bits, uint32_t nb, uint32_t g,
                        uint64_t *total) {
  uint32_t a[3][2];
  const uint32_t u = psh_xor_reach_blocks(v, step, bits, a);
  assert_true(u <= bits);
  int hit = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 2; k++) {
        if ((i && a[0][1] == a[0][0]) || (j && a[1][1] == a[1][0]) || (k && a[2][1] == a[2][0])) continue;
        uint32_t r[4];
        const uint32_t nr = psh_xor_block_buckets(h, a[0][i] ^ a[1][j] ^ a[2][k], u, bits, nb, r);
        assert_true(nr == 1 || nr == 2);
        for (uint32_t m = 0; m < nr; m++) {
          assert_true(r[2 * m] <= r[2 * m + 1]);
          assert_true(r[2 * m + 1] < nb);
          if (total) *total += r[2 * m + 1] - r[2 * m] + 1;
          hit |= g >= r[2 * m] && g <= r[2 * m + 1];
        }
      }
  return hit;
}

/* A fast form of psh_probe_bucket for the GPU probe phase, as the two tests below check it: where it applies to
 * (hash, step, width, count), and the bucket it gives for probe offsets o of voxel v with random word r. */
typedef struct fast_probe {
  const char *name;
  int (*applies)(psh_hash h, uint32_t step, uint32_t bits, uint32_t nb);
  uint32_t (*bucket)(psh_hash h, const uint32_t v[3], const int8_t o[3], uint32_t step, uint32_t bits, uint32_t nb,
                     uint64_t r);
} fast_probe;

/* Every probe of edge and random voxels (16 per case, all 128 probes each) over every hash, width and bucket
 * count given: where fp applies (it must apply exactly where want_applies says), its bucket must be
 * psh_probe_bucket's. Returns the number of probes compared. */
static uint64_t check_fast_probe(const fast_probe *fp, int (*want_applies)(psh_hash h, uint32_t nb), const uint32_t *widths,
                                 size_t nw, const uint32_t *nbs, size_t nn, uint64_t rng) {
  int8_t probe[PSH_NPROBE_MAX][3];
  uint64_t checked = 0;
  for (int h = PSH_XOR_MOD; h <= PSH_ZORDER_DIV; h++)
    for (size_t wi = 0; wi < nw; wi++)
      for (size_t ni = 0; ni < nn; ni++) {
        const uint32_t bits = widths[wi], nb = nbs[ni], step = psh_probe_step((psh_hash)h, bits, nb);
        const int on = fp->applies((psh_hash)h, step, bits, nb);
        if (on != want_applies((psh_hash)h, nb))
          fail_msg("%s: applies %d for hash %d bits %u nb %u", fp->name, on, h, bits, nb);
        if (!on) continue;
        const uint32_t vmax = bits ? (1u << bits) - 1u : 0u;
        for (int t = 0; t < 16; t++) {
          const uint64_t seed = hx_mix64(rng += 0x9E3779B97F4A7C15ull), gidx = seed >> 9;
          uint32_t v[3];
          for (int d = 0; d < 3; d++) /* edges first (probes wrap modulo 2^bits there), then random voxels */
            v[d] = t == 0 ? 0u : t == 1 ? vmax : (uint32_t)(hx_mix64(seed + (uint64_t)d) & vmax);
          psh_probe_order(probe, PSH_NPROBE_MAX, seed);
          for (uint32_t k = 0; k < PSH_NPROBE_MAX; k++) {
            const uint32_t want = psh_probe_bucket((psh_hash)h, v, probe[k], step, bits, nb, seed, gidx, k);
            const uint32_t got = fp->bucket((psh_hash)h, v, probe[k], step, bits, nb, hx_rng_u64(seed, gidx, k));
            if (got != want)
              fail_msg("%s: hash %d bits %u nb %u step %u voxel (%u %u %u) probe %u: bucket %u, psh_probe_bucket %u",
                       fp->name, h, bits, nb, step, v[0], v[1], v[2], k, got, want);
            checked++;
          }
        }
      }
  return checked;
}

static int zmod_applies(psh_hash h, uint32_t step, uint32_t bits, uint32_t nb) {
  (void)step;
  return psh_probe_zmod(h, bits, nb);
}
static uint32_t zmod_bucket(psh_hash h, const uint32_t v[3], const int8_t o[3], uint32_t step, uint32_t bits, uint32_t nb,
                            uint64_t r) {
  (void)h, (void)step, (void)r; /* no random word: a mod hash's step is 1 */
  return psh_probe_bucket_zmod(v, o, bits, nb);
}
static int want_zmod(psh_hash h, uint32_t nb) { return h == PSH_ZORDER_MOD && !(nb & (nb - 1u)); }
static int want_pow2(psh_hash h, uint32_t nb) { return (h == PSH_XOR_MOD || h == PSH_XOR_DIV) && !(nb & (nb - 1u)); }

static void test_probe_zmod(void **state) {
  (void)state;
  /* The GPU probe phase computes Z-order-mod's probe buckets with psh_probe_bucket_zmod where psh_probe_zmod holds
   * (psh_tiles.cuh, probe_point_zm): it must give psh_probe_bucket's bucket for every probe, or the probing would
   * differ from Alg. 2 while every invariant held. Widths with codes past 32 bits from 11 on; bucket counts up to
   * 2^24, powers of two and not. */
  static const uint32_t widths[] = {0, 1, 2, 3, 5, 8, 9, 13, 17, 20, 21};
  static const uint32_t nbs[] = {1, 2, 7, 8, 64, 100, 2048, 3000, 4096, 65536, 1u << 24};
  const fast_probe fp = {"psh_probe_bucket_zmod", zmod_applies, zmod_bucket};
  assert_int_equal(check_fast_probe(&fp, want_zmod, widths, 11, nbs, 11, 0x8CB92BA72F3D8DD7ull),
                   11 * 8 * 16 * 128); /* widths x power-of-two counts x voxels x probes */
  /* past 2^24 buckets the low 8 bits of each coordinate no longer give the bucket */
  assert_false(psh_probe_zmod(PSH_ZORDER_MOD, 21u, 1u << 25));
  assert_false(psh_probe_zmod(PSH_ZORDER_MOD, PSH_VOX_BITS + 1u, 2048u));
}

static void test_probe_pow2(void **state) {
  (void)state;
  /* The GPU probe phase computes an XOR hash's probe buckets with psh_probe_bucket_pow2 whenever nb is a power
   * of two (psh_tiles.cuh, probe_point): it must give psh_probe_bucket's bucket for every probe of every point,
   * or the probing would silently differ from Alg. 2 while every invariant still held. Widths and bucket counts
   * (powers of two and not). The largest step it can observe is 2^20 (bits 21, nb 2): with step 2^21 (nb 1)
   * every bucket is 0. */
  static const uint32_t widths[] = {0, 1, 2, 3, 5, 9, 13, 17, 20, 21};
  static const uint32_t nbs[] = {1, 2, 7, 8, 64, 100, 2048, 3000, 4096, 65536};
  const fast_probe fp = {"psh_probe_bucket_pow2", psh_probe_pow2, psh_probe_bucket_pow2};
  assert_int_equal(check_fast_probe(&fp, want_pow2, widths, 10, nbs, 10, 0xD1B54A32D192ED03ull),
                   2 * 10 * 7 * 16 * 128); /* hashes x widths x power-of-two counts x voxels x probes */
  /* wider than a frame can be: the step could pass 2^21, the jitter field's width, so the form does not apply
   * (from bits 23 on, XOR-div with nb = 2, its bucket would differ) */
  assert_false(psh_probe_pow2(PSH_XOR_DIV, psh_probe_step(PSH_XOR_DIV, PSH_VOX_BITS + 1u, 2u), PSH_VOX_BITS + 1u, 2u));
}

static void test_zcell_probe(void **state) {
  (void)state;
  /* The GPU probe phase skips a Z-order-div probe, without its random word or Morton code, when the 2 x 2 x 2
   * block of cells at psh_zcell_base + offset lies in buckets known full (psh_tiles.cuh, probe_point_z). That is
   * only right if (1) every code of a cell hashes to psh_zcell_bucket and (2) every probe's bucket is the bucket
   * of one of the 8 cells of its block: both checked here for all 128 probes of random and edge voxels, over
   * widths, bucket counts and seeds; and where the geometry applies. The far cell (+1) must be needed somewhere,
   * so a table that checked the base cell alone would fail this test. */
  static const uint32_t widths[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 21};
  static const uint32_t nbs[] = {1, 7, 8, 16, 64, 100, 2048, 4096, 16384, 65536};
  int8_t probe[PSH_NPROBE_MAX][3];
  uint64_t rng = 0xA0761D6478BD642Full, checked = 0, far = 0;
  for (uint32_t x = 0; x < 256; x++) assert_int_equal(psh_spread3_8(x), psh_spread3(x)); /* psh_zcell_bucket's */
  for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
    for (size_t ni = 0; ni < sizeof nbs / sizeof *nbs; ni++) {
      const uint32_t bits = widths[wi], nb = nbs[ni], step = psh_probe_step(PSH_ZORDER_DIV, bits, nb);
      const int pow2 = !(nb & (nb - 1u));
      const uint32_t lg = pow2 ? (uint32_t)__builtin_ctz(nb) : 0u;
      uint32_t m = 0, s = 0, r = 0;
      const int on = psh_zcell_geom(PSH_ZORDER_DIV, bits, nb, &m, &s, &r);
      assert_int_equal(on, pow2 && nb >= 16 && 3 * bits >= lg);
      assert_true(!on || m <= 8u); /* psh_zcell_bucket's range */
      assert_false(psh_zcell_geom(PSH_ZORDER_MOD, bits, nb, &m, &s, &r) || psh_zcell_geom(PSH_XOR_DIV, bits, nb, &m, &s, &r));
      if (!on) continue;
      psh_zcell_geom(PSH_ZORDER_DIV, bits, nb, &m, &s, &r);
      assert_int_equal(step, 1u << s);
      assert_int_equal(m, (lg + 2u) / 3u);
      assert_true(r <= 2u && m + s == bits);
      const uint32_t C = 1u << m, cm = C - 1u;
      for (uint32_t q = 0; q < 64; q++) { /* (1): both ends of random cells' code blocks */
        const uint64_t z = hx_mix64(rng += 0x9E3779B97F4A7C15ull);
        const uint32_t cx = (uint32_t)z & cm, cy = (uint32_t)(z >> 20) & cm, cz = (uint32_t)(z >> 40) & cm;
        const uint64_t lo = psh_morton(cx << s, cy << s, cz << s), hi = lo + (1ull << (3u * s)) - 1u;
        assert_int_equal(psh_bucket_of_code(PSH_ZORDER_DIV, lo, 3u * bits, nb), psh_zcell_bucket(cx, cy, cz, r));
        assert_int_equal(psh_bucket_of_code(PSH_ZORDER_DIV, hi, 3u * bits, nb), psh_zcell_bucket(cx, cy, cz, r));
      }
      const uint32_t vmax = (1u << bits) - 1u;
      for (int t = 0; t < 16; t++) { /* (2) */
        const uint64_t seed = hx_mix64(rng += 0x9E3779B97F4A7C15ull), gidx = seed >> 9;
        uint32_t v[3], b[3];
        for (int d = 0; d < 3; d++) {
          v[d] = t == 0 ? 0u : t == 1 ? vmax : (uint32_t)(hx_mix64(seed + (uint64_t)d) & vmax);
          b[d] = psh_zcell_base(v[d], bits, s);
        }
        psh_probe_order(probe, PSH_NPROBE_MAX, seed);
        for (uint32_t k = 0; k < PSH_NPROBE_MAX; k++) {
          const uint32_t g = psh_probe_bucket(PSH_ZORDER_DIV, v, probe[k], step, bits, nb, seed, gidx, k);
          int in = 0, in_base = 0;
          for (uint32_t q = 0; q < 8; q++) {
            uint32_t c[3];
            for (uint32_t d = 0; d < 3; d++) {
              const int32_t pd = probe[k][d];
              c[d] = (b[d] + (uint32_t)pd + (q >> d & 1u)) & cm;
            }
            const int hit = psh_zcell_bucket(c[0], c[1], c[2], r) == g;
            in |= hit;
            in_base |= hit && q == 0;
          }
          if (!in)
            fail_msg("bits %u nb %u voxel (%u %u %u) probe %u: bucket %u outside its 8 cells", bits, nb, v[0], v[1], v[2],
                     k, g);
          far += !in_base;
          checked++;
        }
      }
    }
  assert_int_equal(checked, 16u * 128u * 43u); /* voxels x probes x (width, count) pairs where it applies */
  assert_true(far > 1000);
  /* the 600k lidar cloud's geometry (13 bits, 2048 buckets; docs/psh.md): 16 cells per axis of 512
   * voxels, two cells a bucket */
  uint32_t m, s, r;
  assert_true(psh_zcell_geom(PSH_ZORDER_DIV, 13, 2048, &m, &s, &r));
  assert_true(m == 4 && s == 9 && r == 1);
  /* the largest bucket count PSH takes (PSH_NB_MAX = 2^24): m = 8, the spread's limit; one more is refused */
  assert_true(psh_zcell_geom(PSH_ZORDER_DIV, 21, 1u << 24, &m, &s, &r) && m == 8);
  assert_false(psh_zcell_geom(PSH_ZORDER_DIV, 21, 1u << 25, &m, &s, &r));
}

static void test_xor_probe_reach(void **state) {
  (void)state;
  /* The GPU probe phase gives up on a point once every bucket in its XOR reach is full (psh_tiles.cuh,
   * xor_reach_full), which is only right if every probe bucket lies in that reach: check it for all 128
   * probes of random voxels, including the edges where probes wrap modulo 2^bits, over widths, bucket
   * counts (powers of two and not) and seeds. */
  int8_t probe[PSH_NPROBE_MAX][3];
  int far = 0;
  psh_probe_order(probe, PSH_NPROBE_MAX, 11);
  for (uint32_t k = 0; k < PSH_NPROBE_MAX; k++)
    for (int d = 0; d < 3; d++) {
      assert_true(abs(probe[k][d]) <= PSH_PROBE_REACH);
      far |= abs(probe[k][d]) == PSH_PROBE_REACH;
    }
  assert_true(far);
  static const uint32_t widths[] = {0, 1, 2, 3, 5, 9, 13, 17, 21};
  static const uint32_t nbs[] = {1, 7, 64, 100, 2048, 3000, 65536};
  uint64_t rng = 0x9E3779B97F4A7C15ull, checked = 0, bytes_checked = 0;
  for (int h = PSH_XOR_MOD; h <= PSH_XOR_DIV; h++)
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
      for (size_t ni = 0; ni < sizeof nbs / sizeof *nbs; ni++) {
        const uint32_t bits = widths[wi], nb = nbs[ni], step = psh_probe_step((psh_hash)h, bits, nb);
        const uint32_t vmax = bits ? (1u << bits) - 1u : 0u;
        for (int t = 0; t < 24; t++) {
          const uint64_t seed = hx_mix64(rng += 0x9E3779B97F4A7C15ull);
          uint32_t v[3];
          for (int d = 0; d < 3; d++) /* edges first, then random voxels */
            v[d] = t == 0 ? 0u : t == 1 ? vmax : (uint32_t)(hx_mix64(seed + (uint64_t)d) & vmax);
          psh_probe_order(probe, PSH_NPROBE_MAX, seed);
          uint32_t grp[8];
          const int bytes = psh_xor_reach_bytes((psh_hash)h, v, step, bits, nb, grp);
          /* the byte form applies exactly where kernels.h's conditions say */
          const int pow2 = nb >= 8 && !(nb & (nb - 1));
          const uint32_t lg = pow2 ? (uint32_t)__builtin_ctz(nb) : 0;
          assert_int_equal(bytes, pow2 && (h == PSH_XOR_DIV ? bits >= lg : bits >= 3));
          bytes_checked += (uint64_t)bytes;
          for (uint32_t k = 0; k < PSH_NPROBE_MAX; k++) {
            const uint32_t g = psh_probe_bucket((psh_hash)h, v, probe[k], step, bits, nb, seed, seed >> 7, k);
            if (!in_xor_reach((psh_hash)h, v, step, bits, nb, g, NULL))
              fail_msg("hash %d bits %u nb %u step %u voxel (%u %u %u) probe %u: bucket %u outside the reach", h,
                       bits, nb, step, v[0], v[1], v[2], k, g);
            int in_grp = !bytes;
            for (int q = 0; q < 8 && bytes; q++) in_grp |= g / 8 == grp[q];
            if (!in_grp)
              fail_msg("hash %d bits %u nb %u voxel (%u %u %u) probe %u: bucket %u outside the byte reach", h, bits, nb,
                       v[0], v[1], v[2], k, g);
            checked++;
          }
        }
      }
  assert_true(checked > 60000);
  assert_true(bytes_checked > 200); /* the byte form was exercised */
  /* and the reach is small enough to be worth checking: a 13-bit cloud at 2048 buckets (600k lidar points at
   * 5 cm) reaches at most 8 blocks of 8 buckets with either XOR hash, against 2048 */
  for (int h = PSH_XOR_MOD; h <= PSH_XOR_DIV; h++) {
    const uint32_t v[3] = {4000, 123, 7777}, step = psh_probe_step((psh_hash)h, 13, 2048);
    uint64_t total = 0;
    in_xor_reach((psh_hash)h, v, step, 13, 2048, 0, &total);
    assert_true(total >= 8 && total <= 64);
  }
}

/* v10's L2 prefetch shares (psh_prefetch_share): the bulk prefetch needs 16-byte addresses and sizes, and one
 * past the array could touch an unmapped page, so for every alignment of the array, size and grid the shares
 * must be 16-byte aligned, lie inside the array, follow each other in block order without gap or overlap, and
 * cover exactly its 16-byte interior [ceil16(base), floor16(base + bytes)); an interior too small to hold a
 * 16-byte unit must give no share at all. */
static void test_prefetch_share(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 48, 100, 4096, 2400000, 7200004};
  static const uint32_t grids[] = {1, 2, 3, 7, 131, 132, 1024};
  uint64_t checked = 0;
  for (uint32_t mis = 0; mis < 16; mis++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
        const uintptr_t base = (uintptr_t)0x7f3a12340000ull + mis; /* every byte alignment */
        const size_t bytes = sizes[si];
        const uint32_t G = grids[gi];
        const uintptr_t a0 = (base + 15u) / 16u * 16u, a1 = (base + bytes) / 16u * 16u;
        uintptr_t lo = 0, hi = 0;
        if (a1 <= a0) {
          for (uint32_t b = 0; b < G; b++) assert_int_equal(psh_prefetch_share(base, bytes, b, G, &lo, &hi), 0);
          continue;
        }
        uintptr_t next = a0, covered = 0;
        for (uint32_t b = 0; b < G; b++) {
          assert_int_equal(psh_prefetch_share(base, bytes, b, G, &lo, &hi), 1);
          if (lo % 16u || hi % 16u || lo != next || hi < lo || lo < base || hi > base + bytes)
            fail_msg("base +%u, %zu bytes, block %u of %u: share [%+lld, %+lld), expected to start at %+lld",
                     (unsigned)(base & 15u), bytes, b, G, (long long)(lo - base), (long long)(hi - base),
                     (long long)(next - base));
          covered += hi - lo;
          next = hi;
          checked++;
        }
        assert_true(next == a1 && covered == a1 - a0);
      }
  assert_true(checked > 0);
  /* the shares count 16-byte units in 32 bits: an interior of 2^32 - G units or more (64 GB) gets no share
   * rather than a wrapped one; one unit fewer still tiles */
  if (sizeof(uintptr_t) >= 8)
    for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
      const uint32_t G = grids[gi];
      const uintptr_t base = (uintptr_t)0x100000000000ull, units = (uintptr_t)0xFFFFFFFFu - G;
      uintptr_t lo = 0, hi = 0, next = base;
      for (uint32_t b = 0; b < G; b++) assert_int_equal(psh_prefetch_share(base, (size_t)(16u * (units + 1u)), b, G, &lo, &hi), 0);
      for (uint32_t b = 0; b < G; b++) {
        assert_int_equal(psh_prefetch_share(base, (size_t)(16u * units), b, G, &lo, &hi), 1);
        assert_true(lo == next && hi >= lo && lo % 16u == 0 && hi % 16u == 0);
        next = hi;
      }
      assert_true(next == base + 16u * units);
    }
}

/* phase C's equal shares (psh_list_share): for every grid and list length, the blocks' shares are contiguous,
 * in block order, cover [0, n) exactly once, and none holds more than ceil(n / g) entries, so no entry is
 * probed twice or never (the GPU variants v5-v9 take their list entries this way). */
static void test_list_share(void **state) {
  (void)state;
  static const uint32_t big[] = {1u << 20, 4000000u, 0x7FFFFFFFu, 0xFFFFFFFFu - 4096u};
  for (uint32_t g = 1; g <= 1100; g += g < 40 ? 1 : 37)
    for (uint32_t q = 0; q < 2100 + 4; q += q < 2100 ? 1 + q / 300 : 1) {
      const uint32_t n = q < 2100 ? q : big[q - 2100];
      const uint32_t per = (uint32_t)(((uint64_t)n + g - 1) / g);
      uint32_t next = 0;
      for (uint32_t b = 0; b < g; b++) {
        uint32_t f = 0xDEADBEEFu, e = 0xDEADBEEFu;
        psh_list_share(n, g, b, &f, &e);
        assert_int_equal(f, next); /* contiguous, in block order: nothing skipped, nothing twice */
        assert_true(e >= f && e - f <= per);
        next = e;
      }
      assert_int_equal(next, n); /* the last share ends at the list's end */
    }
}

static void test_checker_fails(void **state) {
  (void)state;
  const uint32_t n = 500;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 2);
  uint32_t off[2] = {0, n};
  psh_params p;
  params(&p, PSH_XOR_MOD, 8, 64);
  tres r;
  assert_true(tres_alloc(&r, n, 8));
  psh_in in = {xyz, off, 1, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_OK);
  /* two points swapped in perm */
  uint32_t t = r.perm[0];
  r.perm[0] = r.perm[1];
  r.perm[1] = t;
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_ECHECK);
  r.perm[1] = r.perm[0];
  r.perm[0] = t;
  /* a duplicated offset */
  uint32_t i = r.perm[0], k = r.perm[1];
  if (r.bucket[i] == r.bucket[k]) {
    uint32_t o = r.offset[k];
    r.offset[k] = r.offset[i];
    assert_int_equal(psh_check(&out, &in, &p, &err), HX_ECHECK);
    r.offset[k] = o;
  }
  /* a batch whose last cloud offset is not n (the clouds' walks would read past the table) */
  off[1] = n - 1;
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_EINVAL);
  off[1] = n;
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_OK);
  /* a count above S in a cloud that fits */
  r.count[0] += 100;
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_ECHECK);
  tres_free(&r);
  free(xyz);
}

/* The frame of a one-cloud batch [0, n) as tphase1_expected computes it (XOR hashes: no axis shift). */
typedef struct tframe {
  float lo[3];
  uint32_t bits, step;
} tframe;
static tframe tframe_of(const float *xyz, uint32_t n, const psh_params *p) {
  tframe f = {{1e30f, 1e30f, 1e30f}, 0, 0};
  float hi[3] = {-1e30f, -1e30f, -1e30f};
  for (uint32_t j = 0; j < n; j++)
    for (int d = 0; d < 3; d++) {
      f.lo[d] = fminf(f.lo[d], xyz[3 * (size_t)j + (size_t)d]);
      hi[d] = fmaxf(hi[d], xyz[3 * (size_t)j + (size_t)d]);
    }
  uint32_t maxv = 0;
  for (int d = 0; d < 3; d++) {
    const float t = floorf((hi[d] - f.lo[d]) / p->voxel);
    maxv = t > (float)maxv ? (uint32_t)t : maxv;
  }
  while (maxv >> f.bits) f.bits++;
  f.step = psh_probe_step(p->hash, f.bits, p->nb);
  return f;
}

/* Home bucket (returned) and probe buckets pb[0, nprobe) (local, probe order) of point i, frame f. */
static uint32_t tprobes(const tframe *f, const float *xyz, const psh_params *p, uint32_t i, uint32_t *pb) {
  uint32_t v[3];
  for (int d = 0; d < 3; d++) {
    const float x = floorf((xyz[3 * (size_t)i + (size_t)d] - f->lo[d]) / p->voxel);
    v[d] = x > 0 ? (uint32_t)x : 0;
  }
  int8_t pr[128][3];
  psh_probe_order(pr, p->nprobe, p->seed);
  for (uint32_t k = 0; k < p->nprobe; k++) pb[k] = psh_probe_bucket(p->hash, v, pr[k], f->step, f->bits, p->nb, p->seed, i, k);
  return psh_hash_voxel(p->hash, v[0], v[1], v[2], f->bits, p->nb);
}

/* From point i0 on, the first point at its home bucket with a probe (other than home) whose bucket has room in r;
 * returns it (n if none) and that bucket in *to: moving the point there leaves its home with room. */
static uint32_t tfind_home_mover(const tframe *tf, const float *xyz, uint32_t n, const psh_params *p, const tres *r,
                                 uint32_t i0, uint32_t *to) {
  uint32_t pb[128];
  for (uint32_t i = i0; i < n; i++) {
    const uint32_t home = tprobes(tf, xyz, p, i, pb);
    uint32_t k = 0;
    while (k < p->nprobe && (pb[k] == home || r->count[pb[k]] >= p->cap)) k++;
    if (r->bucket[i] == home && k < p->nprobe) {
      *to = pb[k];
      return i;
    }
  }
  return n;
}

/* The rest of a one-cloud PSH output from r->bucket alone: counts, starts, offsets in point order, slot, perm,
 * packed coordinates (what a variant with other placements would write). */
static void tassemble(tres *r, const float *xyz, uint32_t n, uint32_t nb) {
  memset(r->count, 0, (size_t)nb * 4);
  for (uint32_t i = 0; i < n; i++) r->offset[i] = r->count[r->bucket[i]]++;
  for (uint32_t g = 0, acc = 0; g < nb; acc += r->count[g++]) r->start[g] = acc;
  for (uint32_t i = 0; i < n; i++) {
    r->slot[i] = r->start[r->bucket[i]] + r->offset[i];
    r->perm[r->slot[i]] = i;
    memcpy(r->xyz + 3 * (size_t)r->slot[i], xyz + 3 * (size_t)i, 12);
  }
}

/* The set-up of the placement tests: a clustered one-cloud batch of n points (seed), XOR-div with nb buckets of S,
 * its frame and the result buffers; returns the coordinates (free them, and tres_free r). */
static float *tplace_setup(uint32_t n, uint32_t nb, uint32_t S, uint64_t seed, psh_params *p, tframe *tf, tres *r) {
  float *xyz = malloc((size_t)n * 12);
  assert_non_null(xyz);
  tcloud_fill(xyz, 0, n, TC_CLUSTERED, seed);
  params(p, PSH_XOR_DIV, nb, S);
  *tf = tframe_of(xyz, n, p);
  assert_true(tres_alloc(r, n, nb));
  return xyz;
}

/* psh_check's placement rule on pairs rebuilt from slot, where slot = start + offset holds by construction. It
 * passes the run itself and a point moved to a later probe's bucket while an earlier one has room (the lanes of
 * the GPU queue pass race: psh_check in psh.c); it refuses counters that disagree with the placement, a probed
 * point moved to a bucket none of its probes reaches while one of them has room, a run of another hash (every
 * home differs), and a point moved from its full home, which leaves the home with room. Each of the rule's three
 * tests is needed for some case here (checked by removing each in turn). */
static void test_checker_placement(void **state) {
  (void)state;
  const uint32_t n = 3000, nb = 32, S = 128; /* within capacity (4096), clustered: probes and overflow happen */
  psh_params p, q;
  tframe tf;
  tres r;
  float *xyz = tplace_setup(n, nb, S, 91, &p, &tf, &r);
  uint32_t off[2] = {0, n}, pb[128];
  psh_in in = {xyz, off, 1, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  /* rebuild the pair from slot as psh_gpu does, then check it against the params pp */
#define REBUILT_CHECK(pp)                                                                                           \
  (assert_int_equal(psh_bo_from_slot_cpu(r.bucket, r.offset, r.slot, r.start, r.count, nb, n, &err), HX_OK), \
   psh_check(&out, &in, (pp), &err))
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  assert_true(r.counters[PSH_C_PROBE] > 0 && r.counters[PSH_C_OVERFLOW] > 0);
  assert_int_equal(REBUILT_CHECK(&p), HX_OK);
  /* counters that disagree (the sum still n) */
  r.counters[PSH_C_FIRST]--, r.counters[PSH_C_PROBE]++;
  assert_int_equal(REBUILT_CHECK(&p), HX_ECHECK);
  assert_non_null(strstr(err.msg, "counters say"));
  r.counters[PSH_C_FIRST]++, r.counters[PSH_C_PROBE]--;
  /* a probed point i moved to a later probe's bucket with room, an earlier probe's bucket (its own) left with room */
  uint32_t i = 0, k = 0, k2 = 0;
  for (; i < n; i++) {
    const uint32_t home = tprobes(&tf, xyz, &p, i, pb);
    if (r.bucket[i] == home) continue;
    for (k = 0; k < p.nprobe && pb[k] != r.bucket[i]; k++) {
    }
    for (k2 = k + 1; k2 < p.nprobe && (pb[k2] == home || pb[k2] == r.bucket[i] || r.count[pb[k2]] >= S); k2++) {
    }
    if (k < p.nprobe && k2 < p.nprobe) break;
  }
  assert_true(i < n);
  const uint32_t was = r.bucket[i];
  r.bucket[i] = pb[k2];
  tassemble(&r, xyz, n, nb);
  assert_int_equal(REBUILT_CHECK(&p), HX_OK);
  /* the same point moved to a bucket none of its probes reaches, its own probe's bucket now with room */
  uint32_t t = 0;
  for (; t < nb; t++) {
    int reached = t == tprobes(&tf, xyz, &p, i, pb);
    for (uint32_t j = 0; j < p.nprobe; j++) reached |= pb[j] == t;
    if (!reached && r.count[t] < S) break;
  }
  assert_true(t < nb); /* (deterministic: this cloud and seed have such a bucket) */
  r.bucket[i] = t;
  tassemble(&r, xyz, n, nb);
  assert_int_equal(REBUILT_CHECK(&p), HX_ECHECK);
  assert_non_null(strstr(err.msg, "none of its probes"));
  r.bucket[i] = was;
  tassemble(&r, xyz, n, nb);
  assert_int_equal(REBUILT_CHECK(&p), HX_OK);
  /* a run of another hash: the homes differ */
  q = p, q.hash = PSH_XOR_MOD;
  assert_int_equal(psh_run_cpu(&out, &in, &q, &err), HX_OK);
  assert_int_equal(REBUILT_CHECK(&q), HX_OK);
  assert_int_equal(REBUILT_CHECK(&p), HX_ECHECK);
  out.counters = NULL; /* the rule alone, without the counters' help */
  assert_int_equal(REBUILT_CHECK(&p), HX_ECHECK);
  /* a point at its (full) home moved to one of its probes' buckets with room: its home now has room */
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  uint32_t to = 0;
  i = tfind_home_mover(&tf, xyz, n, &p, &r, 0, &to);
  assert_true(i < n);
  r.bucket[i] = to;
  tassemble(&r, xyz, n, nb);
  assert_int_equal(REBUILT_CHECK(&p), HX_ECHECK); /* counters NULL: only the home rule sees it */
  assert_non_null(strstr(err.msg, "not its home bucket"));
#undef REBUILT_CHECK
  tres_free(&r);
  free(xyz);
}

/* psh_check splits the placement rule's points over threads (psh.c): with a violation in the first half of a
 * 200k-point cloud and one in the second, the report names a point no later than the first (what one pass meets
 * first), never the second; and the untouched run passes with its counters (every share's kinds summed once). */
static void test_checker_shares(void **state) {
  (void)state;
  const uint32_t n = 200000, nb = 256, S = 1024; /* 9-bit voxel codes: all 256 buckets reachable */
  psh_params p;
  tframe tf;
  tres r;
  float *xyz = tplace_setup(n, nb, S, 93, &p, &tf, &r);
  uint32_t off[2] = {0, n}, at[2] = {0, 0};
  psh_in in = {xyz, off, 1, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_OK);
  /* a point at its home in each half, moved to one of its probes' buckets with room: its home then has room */
  for (int half = 0; half < 2; half++) {
    uint32_t to = 0;
    const uint32_t i = tfind_home_mover(&tf, xyz, n, &p, &r, half ? n / 2 + 1000 : 1000, &to);
    assert_true(i < (half ? n : n / 2));
    at[half] = i;
    r.bucket[i] = to;
  }
  tassemble(&r, xyz, n, nb);
  out.counters = NULL;
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_ECHECK);
  const char *pt = strstr(err.msg, "point ");
  assert_non_null(pt);
  const unsigned long named = strtoul(pt + 6, NULL, 10);
  if (named > at[0]) fail_msg("psh_check named point %lu, after the first violation (%u): %s", named, at[0], err.msg);
  tres_free(&r);
  free(xyz);
}

/* psh_bo_from_slot_cpu, which rebuilds the per-point pair of a PSH run that stored none (the GPU's NULL pair):
 * equal to the reference's own pair on a batch of three clouds, the middle one empty (buckets without points, a
 * cloud without rows), and refusing a table whose rows overlap, leave a gap or pass n, and a slot past n. */
static void test_pair_from_slot(void **state) {
  (void)state;
  const uint32_t n1 = 1700, n = 2900, nb = 16, nbt = 3 * nb;
  float *xyz = malloc((size_t)n * 12);
  assert_non_null(xyz);
  tcloud_fill(xyz, 0, n1, TC_CLUSTERED, 77);
  tcloud_fill(xyz, n1, n - n1, TC_UNIFORM, 78);
  uint32_t off[4] = {0, n1, n1, n};
  psh_params p;
  params(&p, PSH_XOR_DIV, nb, 128);
  tres r;
  assert_true(tres_alloc(&r, n, nbt));
  psh_in in = {xyz, off, 3, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  uint32_t *bk = malloc((size_t)n * 4), *of = malloc((size_t)n * 4);
  assert_true(bk && of);
  memset(bk, 0xAB, (size_t)n * 4), memset(of, 0xAB, (size_t)n * 4);
  assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_OK);
  assert_memory_equal(bk, r.bucket, (size_t)n * 4);
  assert_memory_equal(of, r.offset, (size_t)n * 4);
  uint32_t g = 0; /* a bucket with at least 2 points, and the next bucket with points after it */
  while (r.count[g] < 2) g++;
  uint32_t h = g + 1;
  while (r.count[h] == 0) h++;
  r.count[g]++; /* overlaps the next bucket's first row */
  assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "is in buckets"));
  r.count[g] -= 2; /* leaves its last row in no bucket: the slot that points there is refused */
  assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "in no bucket"));
  r.count[g]++;
  r.start[h] = n - 1; /* bucket h's rows pass n */
  if (r.count[h] > 1) {
    assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_ECHECK);
    assert_non_null(strstr(err.msg, "pass the"));
  }
  assert_int_equal(psh_check(&out, &in, &p, &err), HX_ECHECK); /* the checker also sees the bad start */
  r.start[h] = r.start[g] + r.count[g];
  for (uint32_t j = g + 1; j < h; j++) assert_int_equal(r.count[j], 0);
  assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_OK);
  r.slot[5] = n; /* a slot past the rows */
  assert_int_equal(psh_bo_from_slot_cpu(bk, of, r.slot, r.start, r.count, nbt, n, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "point 5"));
  free(bk), free(of), free(xyz);
  tres_free(&r);
}

/* psh_run_paired, the launchers' handling of a NULL pair, with a launcher that only records what it was given:
 * the pair passes through when given; without it the size is the launcher's (rounded to 256 B) plus the pair's,
 * and the launcher gets the pair at the end of the scratch; one half of a pair, or too little scratch, is refused. */
typedef struct fake_call {
  int calls;
  const void *scratch;
  size_t bytes;
  const uint32_t *bucket, *offset;
} fake_call;
static fake_call fake_seen; /* a psh_fn has no user pointer; tests of this file run one at a time */
static hx_status fake_launcher(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                               const psh_params *p, void *stream, hx_err *err) {
  (void)in, (void)p, (void)stream, (void)err;
  fake_seen.calls++;
  fake_seen.scratch = d_scratch, fake_seen.bytes = scratch_bytes ? *scratch_bytes : 0;
  fake_seen.bucket = out->bucket, fake_seen.offset = out->offset;
  if (!d_scratch) *scratch_bytes = 1000; /* not a multiple of 256 */
  return HX_OK;
}
static void test_run_paired(void **state) {
  (void)state;
  const uint32_t n = 777;
  uint32_t b[4], o[4], sl[4], pe[4];
  psh_out out = {b, o, NULL, NULL, sl, pe, NULL, NULL};
  psh_in in = {NULL, NULL, 1, n};
  psh_params p;
  psh_params_default(&p);
  hx_err err = {0};
  size_t sb = 0;
  memset(&fake_seen, 0, sizeof fake_seen);
  assert_int_equal(psh_run_paired(fake_launcher, NULL, &sb, &out, &in, &p, NULL, &err), HX_OK);
  assert_int_equal(sb, 1000); /* with the pair: the launcher's own answer */
  assert_ptr_equal(fake_seen.bucket, b);
  out.bucket = out.offset = NULL;
  assert_int_equal(psh_pair_bytes(n), 6400); /* 8 x 777 = 6216, rounded up to 256 */
  assert_int_equal(psh_run_paired(fake_launcher, NULL, &sb, &out, &in, &p, NULL, &err), HX_OK);
  assert_int_equal(sb, 1024 + 6400);
  unsigned char *scr = malloc(sb);
  assert_non_null(scr);
  fake_seen.calls = 0;
  assert_int_equal(psh_run_paired(fake_launcher, scr, &sb, &out, &in, &p, NULL, &err), HX_OK);
  assert_int_equal(fake_seen.calls, 2); /* its size, then the run */
  assert_ptr_equal(fake_seen.scratch, scr);
  assert_int_equal(fake_seen.bytes, 1024);
  assert_ptr_equal(fake_seen.bucket, (const uint32_t *)(scr + 1024));
  assert_ptr_equal(fake_seen.offset, fake_seen.bucket + n);
  size_t small = sb - 1;
  assert_int_equal(psh_run_paired(fake_launcher, scr, &small, &out, &in, &p, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "scratch"));
  out.offset = o;
  assert_int_equal(psh_run_paired(fake_launcher, scr, &sb, &out, &in, &p, NULL, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "both or neither"));
  free(scr);
  /* the CPU reference and the checker need the pair */
  float xyz[3] = {1, 2, 3};
  uint32_t off[2] = {0, 1}, cnt[16], st[16];
  psh_in in1 = {xyz, off, 1, 1};
  params(&p, PSH_XOR_MOD, 16, 16);
  psh_out o1 = {NULL, NULL, cnt, st, sl, pe, NULL, NULL};
  assert_int_equal(psh_run_cpu(&o1, &in1, &p, &err), HX_EINVAL);
  assert_int_equal(psh_check(&o1, &in1, &p, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "psh_bo_from_slot_cpu"));
}

static void test_pad_and_gather(void **state) {
  (void)state;
  const uint32_t n = 3000, nb = 16, S = 256;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_CLUSTERED, 4);
  uint32_t off[2] = {0, n};
  psh_params p;
  params(&p, PSH_ZORDER_DIV, nb, S);
  tres r;
  assert_true(tres_alloc(&r, n, nb));
  psh_in in = {xyz, off, 1, n};
  psh_out out = tres_out(&r);
  hx_err err = {0};
  assert_int_equal(psh_run_cpu(&out, &in, &p, &err), HX_OK);
  uint32_t *perm_pad = malloc((size_t)nb * S * 4), *slot_pad = malloc((size_t)n * 4);
  assert_int_equal(psh_pad_cpu(perm_pad, slot_pad, r.bucket, r.offset, r.start, r.count, nb, n, S, r.perm, &err), HX_OK);
  uint32_t real = 0;
  for (uint32_t row = 0; row < nb * S; row++) {
    if (perm_pad[row] == PSH_NONE) {
      assert_true(row % S >= r.count[row / S]);
      continue;
    }
    real++;
    assert_int_equal(slot_pad[perm_pad[row]], row);
  }
  assert_int_equal(real, n);
  /* features: C = 5 fp32 and C = 3 16-bit rows, packed and padded */
  const uint32_t C = 5;
  float *feat = malloc((size_t)n * C * 4), *fp = malloc((size_t)nb * S * C * 4);
  for (uint32_t i = 0; i < n * C; i++) feat[i] = (float)i;
  assert_int_equal(psh_gather_rows_cpu(fp, feat, perm_pad, nb * S, C * 4), HX_OK);
  for (uint32_t row = 0; row < nb * S; row++)
    for (uint32_t c = 0; c < C; c++)
      assert_true(fp[row * C + c] == (perm_pad[row] == PSH_NONE ? 0.0f : (float)(perm_pad[row] * C + c)));
  uint16_t *h = malloc((size_t)n * 3 * 2), *hp = malloc((size_t)n * 3 * 2);
  for (uint32_t i = 0; i < n * 3; i++) h[i] = (uint16_t)(i * 7u);
  assert_int_equal(psh_gather_rows_cpu(hp, h, r.perm, n, 6), HX_OK);
  for (uint32_t row = 0; row < n; row++) assert_int_equal(hp[row * 3 + 2], (uint16_t)((r.perm[row] * 3 + 2) * 7u));
  /* over capacity refuses the padded layout */
  r.count[0] = S + 1;
  assert_int_equal(psh_pad_cpu(perm_pad, slot_pad, r.bucket, r.offset, r.start, r.count, nb, n, S, r.perm, &err), HX_EUNSUPPORTED);
  free(h), free(hp), free(feat), free(fp), free(perm_pad), free(slot_pad);
  tres_free(&r);
  free(xyz);
}

static void test_quality(void **state) {
  (void)state;
  /* two groups: a unit cube's 8 corners and a single point */
  float xyz[9 * 3];
  for (int k = 0; k < 8; k++) {
    xyz[3 * k] = (float)(k & 1);
    xyz[3 * k + 1] = (float)((k >> 1) & 1);
    xyz[3 * k + 2] = (float)((k >> 2) & 1);
  }
  xyz[24] = 10.0f, xyz[25] = 10.0f, xyz[26] = 10.0f;
  uint32_t start[2] = {0, 8}, count[2] = {8, 1};
  psh_quality q;
  assert_int_equal(psh_quality_buckets(&q, xyz, start, count, 2, NULL), HX_OK);
  assert_int_equal(q.groups, 2);
  assert_true(fabs(q.diag_max - sqrt(3.0)) < 1e-9);
  assert_true(fabs(q.spread_max - sqrt(0.75)) < 1e-9);
  assert_true(fabs(q.diag_mean - 8.0 * sqrt(3.0) / 9.0) < 1e-9); /* size-weighted */
  /* z-order patches of a line of 8 points 1 m apart, patch 4: each patch spans 3 m */
  float line[8 * 3] = {0};
  for (int k = 0; k < 8; k++) line[3 * (7 - k)] = (float)k; /* reversed input order */
  uint32_t off[2] = {0, 8};
  psh_in in = {line, off, 1, 8};
  assert_int_equal(psh_quality_zorder(&q, &in, 0.5f, 4, NULL), HX_OK);
  assert_int_equal(q.groups, 2);
  assert_true(fabs(q.diag_max - 3.0) < 1e-9);
  assert_true(fabs(q.diag_mean - 3.0) < 1e-9);
}

/* psh_floor_cpu, the reference of the sweep's floor row: each index array holds i, xyz_out is the input bit for
 * bit, count/start/counters stay as they were (poison kept), a NULL xyz_out is allowed, a NULL index array is
 * refused; psh_floor_check passes on it and names the array a one-bit change lands in; the floor is no PSH
 * variant: not in the table, not found by name. */
static void test_floor_cpu(void **state) {
  (void)state;
  const uint32_t n = 3001;
  tres r;
  assert_true(tres_alloc(&r, n, 8));
  float *xyz = malloc((size_t)n * 12);
  assert_non_null(xyz);
  tcloud_fill(xyz, 0, n, TC_CLUSTERED, 4242);
  uint32_t off[2] = {0, n};
  psh_in in = {xyz, off, 1, n};
  memset(r.bucket, 0xAB, (size_t)n * 4), memset(r.offset, 0xAB, (size_t)n * 4), memset(r.slot, 0xAB, (size_t)n * 4);
  memset(r.perm, 0xAB, (size_t)n * 4), memset(r.count, 0xAB, 8 * 4), memset(r.start, 0xAB, 8 * 4);
  memset(r.xyz, 0xAB, (size_t)n * 12);
  psh_out o = tres_out(&r);
  hx_err err = {0};
  assert_int_equal(psh_floor_cpu(&o, &in, &err), HX_OK);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(r.bucket[i], i);
    assert_int_equal(r.offset[i], i);
    assert_int_equal(r.slot[i], i);
    assert_int_equal(r.perm[i], i);
  }
  assert_memory_equal(r.xyz, xyz, (size_t)n * 12);
  for (int j = 0; j < 8; j++) assert_int_equal(r.count[j] & r.start[j], 0xABABABABu);
  /* psh_floor_check, the checker of the GPU floor: passes on the reference, names the first array that differs by
   * one element or one bit */
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_OK);
  r.slot[n - 1] ^= 1u;
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "slot"));
  r.slot[n - 1] ^= 1u;
  r.xyz[1] = -r.xyz[1];
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "xyz_out"));
  o.xyz = NULL; /* not checked without it */
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_OK);
  assert_int_equal(psh_floor_cpu(&o, &in, &err), HX_OK);
  /* without the pair (psh_gpu's floor: 20 B per point): checked without it, refused with one half of it */
  r.offset[7] ^= 4u;
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_ECHECK);
  assert_non_null(strstr(err.msg, "offset"));
  o.bucket = o.offset = NULL;
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_OK);
  memset(r.slot, 0xAB, (size_t)n * 4);
  assert_int_equal(psh_floor_cpu(&o, &in, &err), HX_OK);
  assert_int_equal(r.slot[n - 1], n - 1);
  assert_int_equal(r.offset[7], 7u ^ 4u); /* untouched */
  o.offset = r.offset;
  assert_int_equal(psh_floor_cpu(&o, &in, &err), HX_EINVAL);
  o.bucket = r.bucket;
  o.perm = NULL;
  assert_int_equal(psh_floor_check(&o, &in, &err), HX_EINVAL);
  assert_int_equal(psh_floor_cpu(&o, &in, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "NULL"));
  const psh_variant *fv = psh_floor_variant();
  assert_non_null(fv);
  assert_int_equal(fv->id, PSH_FLOOR_ID);
  assert_null(psh_variant_find(fv->name));
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  for (size_t k = 0; k < nv; k++) assert_true(vs[k].id != PSH_FLOOR_ID && strcmp(vs[k].name, fv->name));
  free(xyz);
  tres_free(&r);
}

static void test_params_check(void **state) {
  (void)state;
  psh_params p;
  uint32_t off[3] = {0, 5, 3};
  params(&p, PSH_XOR_DIV, 8, 16);
  hx_err err = {0};
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_EINVAL); /* decreasing offsets */
  off[2] = 9;
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_OK);
  p.cap = 24;
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_EINVAL);
  p.cap = 16;
  p.nprobe = 129;
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_EINVAL);
  p.nprobe = 128;
  p.nb = PSH_NB_MAX;
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_OK);
  p.nb = PSH_NB_MAX + 1; /* a typo'd --buckets must not allocate gigabytes */
  assert_int_equal(psh_params_check(&p, off, 2, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "limit"));
  assert_int_equal(psh_auto_buckets(600000, 512), 2048);
  assert_int_equal(psh_auto_buckets(0, 512), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash_values),    cmocka_unit_test(test_hash_names),     cmocka_unit_test(test_span_check),
      cmocka_unit_test(test_probe_order),    cmocka_unit_test(test_invariants_kinds),
      cmocka_unit_test(test_exact_capacity), cmocka_unit_test(test_small_and_batch),
      cmocka_unit_test(test_over_capacity),  cmocka_unit_test(test_big_nb),
      cmocka_unit_test(test_4m_points),      cmocka_unit_test(test_xor_reach), cmocka_unit_test(test_xor_probe_reach),
      cmocka_unit_test(test_probe_pow2),     cmocka_unit_test(test_probe_zmod),
      cmocka_unit_test(test_zcell_probe),
      cmocka_unit_test(test_list_share),     cmocka_unit_test(test_prefetch_share),
      cmocka_unit_test(test_checker_fails),  cmocka_unit_test(test_checker_placement), cmocka_unit_test(test_checker_shares),
      cmocka_unit_test(test_pad_and_gather), cmocka_unit_test(test_pair_from_slot),
      cmocka_unit_test(test_run_paired),
      cmocka_unit_test(test_quality),        cmocka_unit_test(test_params_check),
      cmocka_unit_test(test_floor_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
