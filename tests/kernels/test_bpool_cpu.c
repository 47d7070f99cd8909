/*
 * test_bpool_cpu.c - the in-bucket pooling reference: the plan, the sub-bucket invariants (every row of a
 * bucket in exactly one output row of that bucket, 1..rho members, full step-1 sub-buckets, members and
 * parent consistent, coordinates = member mean) on PSH outputs with buckets of 1, odd, 1024, 1025 and
 * 2051 rows and padding rows, rho 2/4/8; reductions (sums preserved, min <= mean <= max, bf16 = rounded
 * fp32); unpool; determinism.
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
#include "tests/kernels/test_psh_util.h"

/* A layout with gaps: bucket b at start[b], count[b] rows, one padding row between buckets. */
typedef struct tlayout {
  uint32_t nb, n_rows, n_out;
  uint32_t *start, *count, *out_start, *out_count;
  float *xyz;
} tlayout;

static void layout_make(tlayout *L, const uint32_t *counts, uint32_t nb, uint64_t seed) {
  memset(L, 0, sizeof *L);
  L->nb = nb;
  L->start = malloc(nb * 4u);
  L->count = malloc(nb * 4u);
  L->out_start = malloc(nb * 4u);
  L->out_count = malloc(nb * 4u);
  uint32_t row = 0;
  for (uint32_t b = 0; b < nb; b++) {
    L->start[b] = row;
    L->count[b] = counts[b];
    row += counts[b] + 1; /* padding row */
  }
  L->n_rows = row;
  L->xyz = malloc((size_t)row * 12 + 12);
  tcloud_fill(L->xyz, 0, row, TC_CLUSTERED, seed);
  assert_int_equal(bpool_plan_cpu(L->out_start, L->out_count, &L->n_out, L->count, nb, 2, NULL), HX_OK);
}

static void layout_free(tlayout *L) {
  free(L->start), free(L->count), free(L->out_start), free(L->out_count), free(L->xyz);
}

static void check_assign(const tlayout *L, uint32_t rho, const uint32_t *members, const uint32_t *parent,
                         const float *xyz_out) {
  uint32_t *seen = calloc(L->n_rows, 4);
  for (uint32_t b = 0; b < L->nb; b++) {
    for (uint32_t r = L->out_start[b]; r < L->out_start[b] + L->out_count[b]; r++) {
      uint32_t size = 0;
      double m[3] = {0, 0, 0};
      for (uint32_t k = 0; k < rho; k++) {
        uint32_t row = members[(size_t)r * rho + k];
        if (row == BPOOL_NONE) {
          /* members are listed first */
          for (uint32_t k2 = k; k2 < rho; k2++) assert_int_equal(members[(size_t)r * rho + k2], BPOOL_NONE);
          break;
        }
        assert_true(row >= L->start[b] && row < L->start[b] + L->count[b]);
        assert_int_equal(parent[row], r);
        seen[row]++;
        for (int d = 0; d < 3; d++) m[d] += (double)L->xyz[3 * (size_t)row + (size_t)d];
        size++;
      }
      assert_true(size >= 1 && size <= rho);
      for (int d = 0; d < 3; d++) assert_true(fabs(m[d] / size - (double)xyz_out[3 * (size_t)r + (size_t)d]) <= 1e-4 * (1.0 + fabs(m[d] / size)));
    }
  }
  for (uint32_t b = 0; b < L->nb; b++) {
    for (uint32_t row = L->start[b]; row < L->start[b] + L->count[b]; row++) assert_int_equal(seen[row], 1);
    assert_int_equal(parent[L->start[b] + L->count[b]], BPOOL_NONE); /* padding row */
  }
  free(seen);
}

static void test_plan(void **state) {
  (void)state;
  uint32_t count[5] = {0, 1, 7, 1024, 1025}, os[5], oc[5], n;
  assert_int_equal(bpool_plan_cpu(os, oc, &n, count, 5, 4, NULL), HX_OK);
  assert_int_equal(oc[0], 0);
  assert_int_equal(oc[1], 1);
  assert_int_equal(oc[2], 2);
  assert_int_equal(oc[3], 256);
  assert_int_equal(oc[4], 257);
  assert_int_equal(os[4], 259);
  assert_int_equal(n, 516);
  assert_int_equal(bpool_plan_cpu(os, oc, &n, count, 5, 3, NULL), HX_EINVAL);
}

static void test_assign(void **state) {
  (void)state;
  const uint32_t counts[8] = {1, 2, 7, 333, 1024, 1025, 2051, 0};
  for (uint32_t rho = 2; rho <= 8; rho *= 2) {
    tlayout L;
    layout_make(&L, counts, 8, 77 + rho);
    assert_int_equal(bpool_plan_cpu(L.out_start, L.out_count, &L.n_out, L.count, L.nb, rho, NULL), HX_OK);
    uint32_t *members = malloc((size_t)L.n_out * rho * 4), *parent = malloc((size_t)L.n_rows * 4);
    float *xo = malloc((size_t)L.n_out * 12);
    hx_err err = {0};
    assert_int_equal(bpool_assign_cpu(members, parent, xo, L.xyz, L.n_rows, L.start, L.count, L.out_start, L.nb, rho, &err), HX_OK);
    check_assign(&L, rho, members, parent, xo);
    /* full sub-buckets: in a tile of m rows at most ceil(m/rho) output rows, so at most rho-1 rows are
     * missing overall per tile: count the output rows with fewer than rho members */
    for (uint32_t b = 0; b < L.nb; b++) {
      uint32_t partial = 0, missing = 0;
      for (uint32_t r = L.out_start[b]; r < L.out_start[b] + L.out_count[b]; r++) {
        uint32_t size = 0;
        for (uint32_t k = 0; k < rho; k++) size += members[(size_t)r * rho + k] != BPOOL_NONE;
        partial += size < rho;
        missing += rho - size;
      }
      uint32_t tiles = (L.count[b] + BPOOL_TILE - 1) / BPOOL_TILE;
      assert_true(missing <= tiles * (rho - 1));
      (void)partial;
    }
    /* determinism */
    uint32_t *m2 = malloc((size_t)L.n_out * rho * 4);
    assert_int_equal(bpool_assign_cpu(m2, parent, xo, L.xyz, L.n_rows, L.start, L.count, L.out_start, L.nb, rho, &err), HX_OK);
    assert_memory_equal(members, m2, (size_t)L.n_out * rho * 4);
    free(m2), free(members), free(parent), free(xo);
    layout_free(&L);
  }
}

static void test_assign_one_voxel(void **state) {
  (void)state;
  /* all rows at the same point: zero extent, every row in slot 0 */
  uint32_t start[1] = {0}, count[1] = {37}, os[1], oc[1], n_out;
  float xyz[37 * 3];
  for (int i = 0; i < 37 * 3; i++) xyz[i] = 1.5f;
  assert_int_equal(bpool_plan_cpu(os, oc, &n_out, count, 1, 8, NULL), HX_OK);
  uint32_t members[5 * 8], parent[37];
  float xo[5 * 3];
  assert_int_equal(bpool_assign_cpu(members, parent, xo, xyz, 37, start, count, os, 1, 8, NULL), HX_OK);
  assert_int_equal(n_out, 5);
  for (int i = 0; i < 15; i++) assert_true(xo[i] == 1.5f);
  uint32_t hits[37] = {0};
  for (int k = 0; k < 40; k++)
    if (members[k] != BPOOL_NONE) hits[members[k]]++;
  for (int i = 0; i < 37; i++) assert_int_equal(hits[i], 1);
}

static void test_reduce(void **state) {
  (void)state;
  const uint32_t counts[4] = {5, 600, 1030, 64}, C = 7;
  for (uint32_t rho = 2; rho <= 8; rho *= 2) {
    tlayout L;
    layout_make(&L, counts, 4, 5 + rho);
    assert_int_equal(bpool_plan_cpu(L.out_start, L.out_count, &L.n_out, L.count, L.nb, rho, NULL), HX_OK);
    uint32_t *members = malloc((size_t)L.n_out * rho * 4), *parent = malloc((size_t)L.n_rows * 4);
    float *xo = malloc((size_t)L.n_out * 12);
    assert_int_equal(bpool_assign_cpu(members, parent, xo, L.xyz, L.n_rows, L.start, L.count, L.out_start, L.nb, rho, NULL), HX_OK);
    float *f = malloc((size_t)L.n_rows * C * 4);
    uint16_t *fb = malloc((size_t)L.n_rows * C * 2), *fh = malloc((size_t)L.n_rows * C * 2);
    for (uint32_t i = 0; i < L.n_rows * C; i++) {
      /* bf16- and fp16-representable values so the 16-bit paths see the same inputs */
      f[i] = (float)((int)(hx_rng_u64(3, i, 0) % 255) - 127) / 8.0f; /* 8 significant bits */
      uint32_t u;
      memcpy(&u, &f[i], 4);
      fb[i] = (uint16_t)(u >> 16);
      fh[i] = battn_from_float(BATTN_F16, f[i]);
      assert_true(battn_to_float(BATTN_F16, fh[i]) == f[i]);
    }
    float *out[BPOOL_OP_COUNT];
    for (int op = 0; op < BPOOL_OP_COUNT; op++) {
      out[op] = malloc((size_t)L.n_out * C * 4);
      assert_int_equal(bpool_reduce_cpu(out[op], f, members, L.n_out, rho, C, PSH_F32, (bpool_op)op, NULL), HX_OK);
      uint16_t *ob = malloc((size_t)L.n_out * C * 2), *oh = malloc((size_t)L.n_out * C * 2);
      assert_int_equal(bpool_reduce_cpu(ob, fb, members, L.n_out, rho, C, PSH_BF16, (bpool_op)op, NULL), HX_OK);
      assert_int_equal(bpool_reduce_cpu(oh, fh, members, L.n_out, rho, C, PSH_F16, (bpool_op)op, NULL), HX_OK);
      for (uint32_t e = 0; e < L.n_out * C; e++) {
        /* a 16-bit result = the fp32 result rounded to nearest even */
        float x = out[op][e];
        uint32_t u;
        memcpy(&u, &x, 4);
        uint16_t want = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        assert_int_equal(ob[e], want);
        assert_int_equal(oh[e], battn_from_float(BATTN_F16, x));
      }
      free(ob), free(oh);
    }
    /* sums preserved per channel (only bucket rows count) */
    for (uint32_t c = 0; c < C; c++) {
      double a = 0, b = 0;
      for (uint32_t bk = 0; bk < L.nb; bk++)
        for (uint32_t r = L.start[bk]; r < L.start[bk] + L.count[bk]; r++) a += (double)f[(size_t)r * C + c];
      for (uint32_t r = 0; r < L.n_out; r++) b += (double)out[BPOOL_SUM][(size_t)r * C + c];
      assert_true(fabs(a - b) < 1e-3);
    }
    for (uint32_t e = 0; e < L.n_out * C; e++) {
      assert_true(out[BPOOL_MIN][e] <= out[BPOOL_MEAN][e] + 1e-6f);
      assert_true(out[BPOOL_MEAN][e] <= out[BPOOL_MAX][e] + 1e-6f);
    }
    /* unpool: every bucket row gets its parent's value plus the residual */
    float *up = malloc((size_t)L.n_rows * C * 4);
    assert_int_equal(bpool_unpool_cpu(up, out[BPOOL_MAX], f, parent, L.n_rows, C, NULL), HX_OK);
    for (uint32_t r = 0; r < L.n_rows; r++)
      for (uint32_t c = 0; c < C; c++) {
        float want = parent[r] == BPOOL_NONE ? f[(size_t)r * C + c] : out[BPOOL_MAX][(size_t)parent[r] * C + c] + f[(size_t)r * C + c];
        assert_true(up[(size_t)r * C + c] == want);
      }
    /* bf16 unpool = the fp32 unpool of the same (bf16-representable) values, rounded to nearest even; rows
     * outside every bucket get the residual alone */
    uint16_t *ob = malloc((size_t)L.n_out * C * 2), *upb = malloc((size_t)L.n_rows * C * 2);
    for (uint32_t e = 0; e < L.n_out * C; e++) {
      uint32_t u;
      memcpy(&u, &out[BPOOL_MIN][e], 4);
      ob[e] = (uint16_t)(u >> 16);
      u &= 0xFFFF0000u;
      memcpy(&out[BPOOL_MIN][e], &u, 4); /* now bf16-representable too */
    }
    assert_int_equal(bpool_unpool_cpu(up, out[BPOOL_MIN], f, parent, L.n_rows, C, NULL), HX_OK);
    assert_int_equal(bpool_unpool_dt_cpu(upb, ob, fb, parent, L.n_rows, C, PSH_BF16, NULL), HX_OK);
    uint32_t outside = 0;
    for (uint32_t e = 0; e < L.n_rows * C; e++) {
      uint32_t u;
      memcpy(&u, &up[e], 4);
      assert_int_equal(upb[e], (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16));
      outside += parent[e / C] == BPOOL_NONE;
    }
    assert_true(outside > 0); /* the layout has padding rows, so the NONE path is exercised */
    /* fp16 the same way (the values are fp16-representable as well: 8 significant bits, |x| < 64) */
    for (uint32_t e = 0; e < L.n_out * C; e++) ob[e] = battn_from_float(BATTN_F16, out[BPOOL_MIN][e]);
    assert_int_equal(bpool_unpool_dt_cpu(upb, ob, fh, parent, L.n_rows, C, PSH_F16, NULL), HX_OK);
    for (uint32_t e = 0; e < L.n_rows * C; e++) assert_int_equal(upb[e], battn_from_float(BATTN_F16, up[e]));
    free(ob), free(upb);
    free(up);
    for (int op = 0; op < BPOOL_OP_COUNT; op++) free(out[op]);
    free(f), free(fb), free(fh), free(members), free(parent), free(xo);
    layout_free(&L);
  }
}

static void test_on_psh_output(void **state) {
  (void)state;
  /* pool the packed PSH output of a real cloud */
  const uint32_t n = 9001, nb = 32, S = 512;
  float *xyz = malloc((size_t)n * 12);
  tcloud_fill(xyz, 0, n, TC_UNIFORM, 31);
  uint32_t off[2] = {0, n};
  psh_params p;
  psh_params_default(&p);
  p.nb = nb;
  p.cap = S;
  p.voxel = 0.1f;
  tres r;
  assert_true(tres_alloc(&r, n, nb));
  psh_in in = {xyz, off, 1, n};
  psh_out out = tres_out(&r);
  assert_int_equal(psh_run_cpu(&out, &in, &p, NULL), HX_OK);
  uint32_t os[32], oc[32], n_out;
  assert_int_equal(bpool_plan_cpu(os, oc, &n_out, r.count, nb, 4, NULL), HX_OK);
  uint32_t *members = malloc((size_t)n_out * 16), *parent = malloc((size_t)n * 4);
  float *xo = malloc((size_t)n_out * 12);
  assert_int_equal(bpool_assign_cpu(members, parent, xo, r.xyz, n, r.start, r.count, os, nb, 4, NULL), HX_OK);
  for (uint32_t i = 0; i < n; i++) assert_true(parent[i] < n_out);
  /* pooled points are local: each member within the bucket's extent of its output coordinate */
  psh_quality qb, qp;
  assert_int_equal(psh_quality_buckets(&qb, r.xyz, r.start, r.count, nb, NULL), HX_OK);
  assert_int_equal(psh_quality_buckets(&qp, xo, os, oc, nb, NULL), HX_OK);
  assert_true(qp.diag_max <= qb.diag_max + 1e-6);
  free(members), free(parent), free(xo);
  tres_free(&r);
  free(xyz);
}

static void test_names(void **state) {
  (void)state;
  for (int op = 0; op < BPOOL_OP_COUNT; op++) {
    bpool_op back;
    assert_int_equal(bpool_op_parse(bpool_op_name((bpool_op)op), &back), HX_OK);
    assert_int_equal(back, op);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan),   cmocka_unit_test(test_assign),        cmocka_unit_test(test_assign_one_voxel),
      cmocka_unit_test(test_reduce), cmocka_unit_test(test_on_psh_output), cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
