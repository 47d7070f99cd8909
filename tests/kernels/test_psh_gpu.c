/*
 * test_psh_gpu.c - every registered PSH and pooling GPU variant against the invariants and the CPU
 * reference, outputs poisoned (0xAB bytes) before each run, each variant asked for the per-point (bucket, offset)
 * and not (NULL: the pair rebuilt on the host from slot and the bucket table, psh_gpu's way). Exits 77 (Meson:
 * SKIP) without CUDA.
 *
 * What must match the CPU exactly: the counters' sum (= n), phase-1 placements of v2 (= sum of
 * min(hist, S), computed independently), every point's bucket when the CPU reference needed no probe
 * (then no race decides anything), the one-voxel case's counts, the padded layout and row gathers derived
 * from the GPU's own permutation, and the whole pooling output (bitwise: same steps, same float order),
 * on packed, spread-out (rows in no bucket), many-bucket and empty bucket tables, through assign and
 * through the plan-and-assign call where a variant has one.
 * What may differ (racing): which overflowing point wins which slot; there only psh_check's invariants
 * are asserted.
 *   default  the main path of this device: PSH v1 and v2 (the naive ablation the sweep keeps) and psh_variant_best's
 *            pick for each case (v10 or v9, v7 or v4 by the case's shape), pooling v1 and bpool_variant_best's pick,
 *            on every edge case and hash; the recorded scans (when fetched) with those variants; the handle, floor,
 *            phase-trace and gather checks whole (every variant: they cost no CPU reference).
 *   --slow   every rung of both ladders on every case, and the 4M-point cloud (suite 'slow').
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f3d_config.h"
#include "kernels/kernels.h"
#include "tests/kernels/test_psh_util.h"
#include "tests/test_args.h"
#include "workloads/workloads.h"

#include <unistd.h>

#if F3D_HAVE_CUDA
#include <cuda_runtime.h>

#define CK(x) assert_int_equal((x), cudaSuccess)

static void *dalloc(size_t bytes) {
  void *p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 4));
  CK(cudaMemset(p, 0xAB, bytes ? bytes : 4));
  return p;
}
static void *dup_to_dev(const void *h, size_t bytes) {
  void *d = dalloc(bytes);
  if (bytes) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}
static void to_host(void *h, const void *d, size_t bytes) {
  if (bytes) CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

typedef struct gcase {
  const char *name;
  tcloud_kind kind;
  uint32_t nclouds;
  uint32_t sizes[5];
  uint32_t nb, cap; /* nb 0 = auto */
  float voxel;
  int no_probe;     /* the CPU places every point by its home bucket: 1 for every hash, 2 for Z-order only */
} gcase;

static const gcase gcases[] = {
    {"uniform 100k S=512", TC_UNIFORM, 1, {100000}, 0, 512, 0.05f, 0},
    {"clustered 50k S=64", TC_CLUSTERED, 1, {50000}, 0, 64, 0.05f, 0},
    {"one voxel", TC_ONE_VOXEL, 1, {5000}, 0, 64, 0.1f, 0},
    {"N < S", TC_UNIFORM, 1, {10}, 1, 64, 0.1f, 1},
    {"N = NB*S", TC_CLUSTERED, 1, {37 * 48}, 37, 48, 0.1f, 0},
    {"N prime", TC_PLANE, 1, {20011}, 0, 64, 0.1f, 0},
    {"batch with empty clouds", TC_UNIFORM, 5, {10, 0, 3001, 1, 0}, 64, 64, 0.1f, 0},
    {"over capacity", TC_UNIFORM, 1, {1000}, 4, 16, 0.1f, 0},
    {"70001 buckets", TC_UNIFORM, 1, {200003}, 70001, 16, 0.01f, 0},
    /* past 4096 buckets v4-v9 run v4's kernels with their arrays in dynamic shared memory (up to 16384): a
     * clustered cloud over capacity (probes and leftovers), and a batch at the 16384 limit */
    {"8192 buckets over capacity", TC_CLUSTERED, 1, {140000}, 8192, 16, 0.05f, 0},
    {"16384 buckets, batch", TC_UNIFORM, 3, {30000, 0, 20000}, 16384, 16, 0.05f, 0},
    {"16384 buckets over capacity", TC_CLUSTERED, 1, {300000}, 16384, 16, 0.05f, 0}, /* probes, leftovers, snapshot */
    {"sparse (no probes)", TC_UNIFORM, 1, {2000}, 4096, 64, 0.5f, 2},
    {"batch of 3 x 40k", TC_CLUSTERED, 3, {40000, 40000, 40000}, 0, 128, 0.05f, 0},
    /* 300k points: v4 puts several points per thread (tiles of 512 x ipt) on any GPU up to ~290 SMs;
     * tiles cross the cloud boundary at 150001 and skip the empty cloud */
    {"batch 150001 + 0 + 149999", TC_CLUSTERED, 3, {150001, 0, 149999}, 0, 128, 0.05f, 0},
};

/* One case and hash with its CPU reference, made once and checked against every variant. */
typedef struct prepared {
  const gcase *gc;
  uint32_t off[6], n, nbt;
  float *xyz;
  psh_params p;
  tres cpu;
  int no_probe;
} prepared;

/* src: the cloud's coordinates (one cloud, gc->sizes[0] points), or NULL to generate gc's clouds. */
static void prepare_from(prepared *pr, const gcase *gc, psh_hash hash, const float *src) {
  memset(pr, 0, sizeof *pr);
  pr->gc = gc;
  uint32_t nmax = 0;
  for (uint32_t c = 0; c < gc->nclouds; c++) {
    pr->off[c + 1] = pr->off[c] + gc->sizes[c];
    nmax = gc->sizes[c] > nmax ? gc->sizes[c] : nmax;
  }
  const uint32_t n = pr->n = pr->off[gc->nclouds];
  pr->xyz = malloc((size_t)n * 12 + 12);
  assert_non_null(pr->xyz);
  if (src) memcpy(pr->xyz, src, (size_t)n * 12);
  else
    for (uint32_t c = 0; c < gc->nclouds; c++) tcloud_fill(pr->xyz, pr->off[c], gc->sizes[c], gc->kind, 1000u + c);
  psh_params_default(&pr->p);
  pr->p.hash = hash;
  pr->p.cap = gc->cap;
  pr->p.voxel = gc->voxel;
  pr->p.nb = gc->nb ? gc->nb : psh_auto_buckets(nmax, gc->cap);
  pr->nbt = gc->nclouds * pr->p.nb;
  assert_true(tres_alloc(&pr->cpu, n, pr->nbt));
  psh_in hin = {pr->xyz, pr->off, gc->nclouds, n};
  psh_out hout = tres_out(&pr->cpu);
  hx_err err = {0};
  assert_int_equal(psh_run_cpu(&hout, &hin, &pr->p, &err), HX_OK);
  pr->no_probe = gc->no_probe == 1 || (gc->no_probe == 2 && (hash == PSH_ZORDER_DIV || hash == PSH_ZORDER_MOD));
  if (pr->no_probe) assert_int_equal(pr->cpu.counters[0], n);
}

static void prepare(prepared *pr, const gcase *gc, psh_hash hash) { prepare_from(pr, gc, hash, NULL); }

static void prepared_free(prepared *pr) {
  tres_free(&pr->cpu);
  free(pr->xyz);
}

/* pair 0: the variant is asked for no per-point (bucket, offset) (psh_gpu's way, NULL in psh_out); the host rebuilds
 * the pair from slot and the bucket table before the same checks. */
static void run_prepared_as(const psh_variant *v, const prepared *pr, int pair) {
  const gcase *gc = pr->gc;
  const uint32_t *off = pr->off;
  const uint32_t n = pr->n, nbt = pr->nbt;
  const float *xyz = pr->xyz;
  const psh_params p = pr->p;
  const tres cpu = pr->cpu;
  const int no_probe = pr->no_probe;
  const psh_hash hash = (psh_hash)p.hash;
  tres gpu;
  assert_true(tres_alloc(&gpu, n, nbt));
  psh_in hin = {xyz, off, gc->nclouds, n};
  hx_err err = {0};
  float *d_xyz = dup_to_dev(xyz, (size_t)n * 12);
  uint32_t *d_off = dup_to_dev(off, (gc->nclouds + 1) * 4u);
  psh_out dout = {pair ? dalloc((size_t)n * 4) : NULL, pair ? dalloc((size_t)n * 4) : NULL, dalloc((size_t)nbt * 4),
                  dalloc((size_t)nbt * 4), dalloc((size_t)n * 4), dalloc((size_t)n * 4), dalloc((size_t)n * 12),
                  dalloc(PSH_NCOUNTERS * 4)};
  psh_in din = {d_xyz, d_off, gc->nclouds, n};
  size_t scratch = 0;
  assert_int_equal(v->fn(NULL, &scratch, &dout, &din, &p, NULL, &err), HX_OK);
  void *d_scratch = dalloc(scratch);
  hx_status st = v->fn(d_scratch, &scratch, &dout, &din, &p, NULL, &err);
  if (st != HX_OK) fail_msg("%s: %s", v->name, err.msg);
  CK(cudaDeviceSynchronize());
  to_host(gpu.count, dout.bucket_count, (size_t)nbt * 4);
  to_host(gpu.start, dout.bucket_start, (size_t)nbt * 4);
  to_host(gpu.slot, dout.slot, (size_t)n * 4);
  if (pair) {
    to_host(gpu.bucket, dout.bucket, (size_t)n * 4);
    to_host(gpu.offset, dout.offset, (size_t)n * 4);
  } else {
    st = psh_bo_from_slot_cpu(gpu.bucket, gpu.offset, gpu.slot, gpu.start, gpu.count, nbt, n, &err);
    if (st != HX_OK) fail_msg("%s %s [%s], no pair: %s", v->name, gc->name, psh_hash_name(hash), err.msg);
  }
  to_host(gpu.perm, dout.perm, (size_t)n * 4);
  to_host(gpu.xyz, dout.xyz, (size_t)n * 12);
  to_host(gpu.counters, dout.counters, PSH_NCOUNTERS * 4);
  psh_out gout = tres_out(&gpu);
  st = psh_check(&gout, &hin, &p, &err);
  if (st != HX_OK) fail_msg("%s %s [%s]%s: %s", v->name, gc->name, psh_hash_name(hash), pair ? "" : ", no pair", err.msg);
  assert_int_equal((uint64_t)gpu.counters[0] + gpu.counters[1] + gpu.counters[2], n);
  if (v->id >= 2) assert_int_equal(gpu.counters[0], cpu.counters[0]); /* phase 1 is order free from v2 on */
  if (gc->kind == TC_ONE_VOXEL) {
    assert_int_equal(gpu.counters[0], gc->cap);
    assert_int_equal(gpu.counters[2], n - gc->cap);
    assert_memory_equal(gpu.count, cpu.count, (size_t)nbt * 4);
  }
  if (no_probe) {
    assert_int_equal(gpu.counters[0], n);
    assert_memory_equal(gpu.bucket, cpu.bucket, (size_t)n * 4); /* same frames and hashes as the CPU */
    assert_memory_equal(gpu.count, cpu.count, (size_t)nbt * 4);
  }
  /* padded layout from the GPU's own permutation vs the CPU's psh_pad_cpu on the same arrays */
  int fits = 1;
  for (uint32_t g = 0; g < nbt; g++) fits &= gpu.count[g] <= p.cap;
  if (pair && fits && (uint64_t)nbt * p.cap <= (1u << 26)) { /* psh_pad_gpu takes the device pair */
    const size_t rows = (size_t)nbt * p.cap;
    uint32_t *pp = malloc(rows * 4), *sp = malloc((size_t)n * 4 + 4), *gpp = malloc(rows * 4), *gsp = malloc((size_t)n * 4 + 4);
    assert_int_equal(psh_pad_cpu(pp, sp, gpu.bucket, gpu.offset, gpu.start, gpu.count, nbt, n, p.cap, gpu.perm, &err), HX_OK);
    uint32_t *d_pp = dalloc(rows * 4), *d_sp = dalloc((size_t)n * 4);
    assert_int_equal(psh_pad_gpu(d_pp, d_sp, dout.bucket, dout.offset, dout.bucket_start, dout.bucket_count, nbt, n,
                                 p.cap, dout.perm, NULL, &err), HX_OK);
    CK(cudaDeviceSynchronize());
    to_host(gpp, d_pp, rows * 4);
    to_host(gsp, d_sp, (size_t)n * 4);
    assert_memory_equal(pp, gpp, rows * 4);
    assert_memory_equal(sp, gsp, (size_t)n * 4);
    cudaFree(d_pp), cudaFree(d_sp);
    free(pp), free(sp), free(gpp), free(gsp);
  }
  cudaFree(d_scratch);
  cudaFree(d_xyz), cudaFree(d_off);
  if (pair) cudaFree(dout.bucket), cudaFree(dout.offset);
  cudaFree(dout.bucket_count), cudaFree(dout.bucket_start);
  cudaFree(dout.slot), cudaFree(dout.perm), cudaFree(dout.xyz), cudaFree(dout.counters);
  tres_free(&gpu);
}

static void run_prepared(const psh_variant *v, const prepared *pr) { run_prepared_as(v, pr, 0); }

/* Whether the run checks variant v on the prepared case: those F3D_PSH_VARIANTS lists when it is set (v5,v6:
 * compute-sanitizer runs, which are slow, or one new rung), else every variant with --slow (slow != 0), else the
 * main path (v1, v2 and psh_variant_best's pick for the case). */
static int psh_used(const psh_variant *v, const prepared *pr, int slow) {
  const char *only = getenv("F3D_PSH_VARIANTS");
  if (only) return hx_name_listed(only, v->name);
  if (slow || v->id == 1 || v->id == 2) return 1;
  const psh_variant *best = NULL;
  hx_err err = {0};
  if (psh_variant_best(&best, pr->n, pr->gc->nclouds, &pr->p, &err) != HX_OK) fail_msg("psh_variant_best: %s", err.msg);
  return v == best;
}

/* Each case and hash prepared once (the CPU reference), then every variant used: both ways of asking, with the
 * pair as an output and without (psh_gpu's, the sweep's). */
static void test_psh_variants(void **state) {
  const int slow = *(const int *)*state;
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  assert_true(nv >= 2);
  int ran = 0;
  for (size_t c = 0; c < sizeof gcases / sizeof gcases[0]; c++)
    for (int h = 0; h < PSH_HASH_COUNT; h++) {
      prepared pr;
      prepare(&pr, &gcases[c], (psh_hash)h);
      for (size_t k = 0; k < nv; k++) {
        if (!psh_used(&vs[k], &pr, slow)) continue;
        run_prepared_as(&vs[k], &pr, 1);
        run_prepared_as(&vs[k], &pr, 0);
        ran++;
      }
      prepared_free(&pr);
    }
  assert_true(ran > 0);
}

/* The largest cloud: 4M points in one cloud at S = 512 (8192 buckets, 95% full), every hash, every
 * variant (the one-wave variants fall back to the ones that take any size: v8/v9 -> v7 -> v4, whose kernels
 * take up to 16384 buckets with their arrays in dynamic shared memory). The CPU reference runs once per hash. --slow
 * only (its CPU reference and one psh_check per variant and hash: ~55 s on a 2-core dev box). */
static const gcase big_case = {"uniform 4M S=512", TC_UNIFORM, 1, {4000000}, 0, 512, 0.05f, 0};

static void test_psh_4m(void **state) {
  (void)state;
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    prepared pr;
    prepare(&pr, &big_case, (psh_hash)h);
    assert_int_equal(pr.p.nb, 8192);
    for (size_t k = 0; k < nv; k++) /* with the pair on two hashes, without it on the other two */
      if (psh_used(&vs[k], &pr, 1)) run_prepared_as(&vs[k], &pr, h % 2);
    prepared_free(&pr);
  }
}

/* Recorded clouds (workloads/fetch-recorded.sh; skipped when absent): every variant and hash on each PCL scan as
 * read (NaN points of the organised scans dropped), at 5 mm voxels (the scans are table-top to room sized:
 * at the sweep's 5 cm only 40 to 28k voxels are occupied) and S = 64, so that real surfaces (dense, planar,
 * unevenly sampled) overflow and probe as no generator does. */
static void test_psh_recorded(void **state) {
  const int slow = *(const int *)*state;
  static const char *const names[] = {"table_scene_lms400.pcd", "bun0.pcd", "table_scene_mug_stereo_textured.pcd",
                                      "milk_cartoon_all_small_clorox.pcd", "milk.pcd", "lamppost.pcd"};
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  int found = 0;
  for (size_t r = 0; r < sizeof names / sizeof *names; r++) {
    char path[600];
    snprintf(path, sizeof path, "%s/workloads/recorded/%s", F3D_SOURCE_ROOT, names[r]);
    wl_cloud cl;
    hx_err err = {0};
    const hx_status st = wl_read(&cl, path, WL_FMT_AUTO, &err);
    if (st == HX_EIO && access(path, R_OK) != 0) continue; /* not fetched */
    if (st == HX_EUNSUPPORTED) continue;                    /* binary_compressed without liblzf */
    if (st != HX_OK) fail_msg("%s: %s", names[r], err.msg);
    found++;
    const gcase gc = {names[r], TC_UNIFORM, 1, {(uint32_t)cl.n}, 0, 64, 0.005f, 0};
    uint64_t probed = 0;
    for (int h = 0; h < PSH_HASH_COUNT; h++) {
      prepared pr;
      prepare_from(&pr, &gc, (psh_hash)h, cl.xyz);
      probed += pr.cpu.counters[1];
      for (size_t k = 0; k < nv; k++)
        if (psh_used(&vs[k], &pr, slow)) run_prepared(&vs[k], &pr);
      prepared_free(&pr);
    }
    print_message("recorded %-36s %7zu points: %s and every hash checked (%llu probe placements on the CPU)\n",
                  names[r], cl.n, slow ? "every variant" : "the main path", (unsigned long long)probed);
    assert_true(probed > 0); /* real surfaces overflow their first choice at S = 64: the probe paths ran */
    wl_cloud_free(&cl);
  }
  if (!found) skip(); /* run workloads/fetch-recorded.sh to enable */
}

/* The phase traces of v5-v9 are only read where the variant ran its own kernel; after a fall-back the trace is
 * refused instead of being copied from another variant's scratch layout (before, that copy failed and left an
 * error behind that the next handle's CUB call reported: "create failed: ... invalid device ordinal" in
 * psh_bench at 4M points). Three batches: 60k points at 4096 buckets (every cooperative variant runs its own
 * kernel), 60k at 8192 buckets (all fall back: past the dense shared counters) and 3M at 4096 buckets, S =
 * 1024 (all fall back through the launchers' planning code: more tiles than one wave), so the trace's
 * decision is checked against the launchers' on both of their paths. */
static void test_phase_trace(void **state) {
  (void)state;
  static const struct {
    uint32_t n, nb, cap;
    int own;
  } cases[] = {{60000, 4096, 16, 1}, {60000, 8192, 16, 0}, {3000000, 4096, 1024, 0}};
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const uint32_t n = cases[c].n;
    float *xyz = malloc((size_t)n * 12);
    assert_non_null(xyz);
    tcloud_fill(xyz, 0, n, TC_UNIFORM, 77);
    uint32_t off[2] = {0, n};
    psh_in hin = {xyz, off, 1, n};
    psh_params p;
    psh_params_default(&p);
    p.hash = PSH_XOR_MOD;
    p.cap = cases[c].cap;
    p.nb = cases[c].nb;
    for (size_t k = 0; k < nv; k++) {
      if (vs[k].id < 5) continue;
      psh_gpu *g = NULL;
      hx_err err = {0};
      if (psh_gpu_create(&g, &hin, &p, 0, &err) != HX_OK) fail_msg("%s n %u nb %u: create: %s", vs[k].name, n, p.nb, err.msg);
      assert_int_equal(psh_gpu_run(g, &vs[k], NULL, &err), HX_OK);
      double ph[6];
      const hx_status st = psh_gpu_phase_trace(g, &vs[k], ph, &err);
      if (!cases[c].own) {
        if (st != HX_EUNSUPPORTED) fail_msg("%s n %u nb %u: a trace after a fall-back (status %d)", vs[k].name, n, p.nb, (int)st);
        assert_non_null(strstr(err.msg, "fell back"));
      } else {
        if (st != HX_OK) fail_msg("%s: phase trace: %s", vs[k].name, err.msg);
        assert_true(ph[0] > 0.0 && ph[1] >= ph[0] && ph[5] >= ph[1]); /* barrier 1 <= barrier 2 <= end */
      }
      if (vs[k].id >= 8) { /* v8, v9 and v10 stamp every block */
        double bt[16][4];
        uint32_t nbk = 0;
        assert_int_equal(psh_gpu_block_trace(g, &vs[k], bt, &nbk, &err), cases[c].own ? HX_OK : HX_EUNSUPPORTED);
      }
      assert_int_equal(cudaGetLastError(), cudaSuccess); /* nothing left behind for the next call */
      psh_gpu_free(g);
    }
    free(xyz);
  }
}

/* psh_gpu asks the variants for no pair and rebuilds it on download (psh_bo_from_slot_cpu): every variant through
 * the handle, its outputs poisoned first, downloaded with the pair into host buffers full of 0xAB, then psh_check
 * (and the CPU's buckets where the CPU needed no probe). After the floor, which writes no bucket table, a download
 * that asks for the pair fails with HX_ECHECK; the floor's own launch given a device pair writes it (the bucket =
 * offset = index branch of k8_floor, which psh_gpu never takes). */
static void test_handle_pair(void **state) {
  (void)state;
  static const gcase hc[] = {
      {"batch 30001 + 0 + 29999", TC_CLUSTERED, 3, {30001, 0, 29999}, 0, 64, 0.05f, 0},
      {"uniform 50000", TC_UNIFORM, 1, {50000}, 0, 512, 0.05f, 0},
  };
  size_t nv = 0;
  const psh_variant *vs = psh_variants(&nv), *fv = psh_floor_variant();
  const char *only = getenv("F3D_PSH_VARIANTS");
  for (size_t c = 0; c < sizeof hc / sizeof *hc; c++) {
    prepared pr;
    prepare(&pr, &hc[c], PSH_XOR_MOD);
    const uint32_t n = pr.n;
    psh_in hin = {pr.xyz, pr.off, hc[c].nclouds, n};
    psh_gpu *g = NULL;
    hx_err err = {0};
    if (psh_gpu_create(&g, &hin, &pr.p, 0, &err) != HX_OK) fail_msg("%s: create: %s", hc[c].name, err.msg);
    tres got;
    assert_true(tres_alloc(&got, n, pr.nbt));
    psh_out go = tres_out(&got);
    for (size_t k = 0; k < nv; k++) {
      if (only && !hx_name_listed(only, vs[k].name)) continue;
      memset(got.bucket, 0xAB, (size_t)n * 4), memset(got.offset, 0xAB, (size_t)n * 4);
      assert_int_equal(psh_gpu_poison(g, NULL, &err), HX_OK);
      if (psh_gpu_run(g, &vs[k], NULL, &err) != HX_OK) fail_msg("%s %s: %s", vs[k].name, hc[c].name, err.msg);
      if (psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err) != HX_OK)
        fail_msg("%s %s: download: %s", vs[k].name, hc[c].name, err.msg);
      if (psh_check(&go, &hin, &pr.p, &err) != HX_OK) fail_msg("%s %s: %s", vs[k].name, hc[c].name, err.msg);
      if (pr.no_probe) assert_memory_equal(got.bucket, pr.cpu.bucket, (size_t)n * 4);
    }
    /* the floor: no table (the poison stays), so no pair follows; given a device pair, it writes bucket = offset =
     * index. (Without the poison the last variant's table is still there, and the floor's slots, 0..n-1, fit it.) */
    assert_int_equal(psh_gpu_poison(g, NULL, &err), HX_OK);
    if (psh_gpu_run(g, fv, NULL, &err) == HX_OK) {
      assert_int_equal(psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err), HX_ECHECK);
      float *d_xyz = dup_to_dev(pr.xyz, (size_t)n * 12);
      uint32_t *d_off = dup_to_dev(pr.off, (hc[c].nclouds + 1) * 4u);
      psh_out dout = {dalloc((size_t)n * 4), dalloc((size_t)n * 4), NULL, NULL, dalloc((size_t)n * 4),
                      dalloc((size_t)n * 4), dalloc((size_t)n * 12), NULL};
      psh_in din = {d_xyz, d_off, hc[c].nclouds, n};
      size_t sb = 0;
      assert_int_equal(fv->fn(NULL, &sb, &dout, &din, &pr.p, NULL, &err), HX_OK);
      assert_int_equal(sb, 0);
      /* it needs no scratch, but a NULL one only asks the size: any device pointer will do */
      if (fv->fn((void *)dout.slot, &sb, &dout, &din, &pr.p, NULL, &err) != HX_OK) fail_msg("floor: %s", err.msg);
      CK(cudaDeviceSynchronize());
      to_host(got.bucket, dout.bucket, (size_t)n * 4);
      to_host(got.offset, dout.offset, (size_t)n * 4);
      to_host(got.slot, dout.slot, (size_t)n * 4);
      to_host(got.perm, dout.perm, (size_t)n * 4);
      to_host(got.xyz, dout.xyz, (size_t)n * 12);
      if (psh_floor_check(&go, &hin, &err) != HX_OK) fail_msg("floor with the pair: %s", err.msg);
      uint32_t *d_offset = dout.offset;
      dout.offset = NULL; /* one half of a pair */
      assert_int_equal(fv->fn((void *)dout.slot, &sb, &dout, &din, &pr.p, NULL, &err), HX_EINVAL);
      cudaFree(dout.bucket), cudaFree(d_offset), cudaFree(dout.slot), cudaFree(dout.perm), cudaFree(dout.xyz);
      cudaFree(d_xyz), cudaFree(d_off);
    }
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    tres_free(&got);
    psh_gpu_free(g);
    prepared_free(&pr);
  }
}

/* The floor (psh_floor_variant): where v10 runs its own kernel (its block trace exists), the floor's outputs after
 * poisoning equal psh_floor_cpu's bit for bit (psh_floor_check), plainly and as a CUDA graph, and count/start keep the poison (it
 * computes nothing); where v10 falls back, the floor refuses with HX_EUNSUPPORTED and launches nothing. Cases:
 * a batch with empty clouds and tiles across cloud boundaries, N prime, one voxel, 600k points (the sweep's
 * size), and 8192 buckets (v10 falls back). */
static void test_floor(void **state) {
  (void)state;
  static const gcase fcases[] = {
      {"batch 150001 + 0 + 149999", TC_CLUSTERED, 3, {150001, 0, 149999}, 0, 128, 0.05f, 0},
      {"batch with empty clouds", TC_UNIFORM, 5, {10, 0, 3001, 1, 0}, 64, 64, 0.1f, 0},
      {"N prime", TC_PLANE, 1, {20011}, 0, 64, 0.1f, 0},
      {"one voxel", TC_ONE_VOXEL, 1, {5000}, 0, 64, 0.1f, 0},
      {"600k", TC_UNIFORM, 1, {600000}, 0, 512, 0.05f, 0},
      {"8192 buckets", TC_CLUSTERED, 1, {140000}, 8192, 16, 0.05f, 0},
  };
  const psh_variant *fv = psh_floor_variant(), *v10 = psh_variant_find("v10");
  assert_non_null(v10);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (size_t c = 0; c < sizeof fcases / sizeof *fcases; c++) {
    const gcase *gc = &fcases[c];
    prepared pr;
    prepare(&pr, gc, PSH_XOR_MOD);
    const uint32_t n = pr.n;
    psh_in hin = {pr.xyz, pr.off, gc->nclouds, n};
    psh_gpu *g = NULL;
    hx_err err = {0};
    if (psh_gpu_create(&g, &hin, &pr.p, 0, &err) != HX_OK) fail_msg("%s: create: %s", gc->name, err.msg);
    assert_int_equal(psh_gpu_run(g, v10, s, &err), HX_OK);
    double bt[16][4];
    uint32_t nbk = 0;
    const int own = psh_gpu_block_trace(g, v10, bt, &nbk, &err) == HX_OK;
    assert_int_equal(own, gc->nb != 8192);
    tres got;
    assert_true(tres_alloc(&got, n, pr.nbt));
    psh_out go = tres_out(&got);
    go.bucket = go.offset = NULL; /* the floor writes no bucket table, so no pair follows from its slots */
    for (int graph = 0; graph < 2; graph++) {
      assert_int_equal(psh_gpu_poison(g, s, &err), HX_OK);
      const hx_status st = graph ? psh_gpu_run_graph(g, fv, s, &err) : psh_gpu_run(g, fv, s, &err);
      if (!own) {
        if (st != HX_EUNSUPPORTED) fail_msg("%s: the floor ran where v10 falls back (status %d)", gc->name, (int)st);
        assert_non_null(strstr(err.msg, "no one-wave launch"));
        CK(cudaStreamSynchronize(s));
        assert_int_equal(psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err), HX_OK);
        for (uint32_t i = 0; i < n; i++) assert_int_equal(got.slot[i], 0xFFFFFFFFu); /* nothing launched */
        break;
      }
      if (st != HX_OK) fail_msg("%s (graph %d): floor: %s", gc->name, graph, err.msg);
      CK(cudaStreamSynchronize(s));
      assert_int_equal(psh_gpu_download(g, &go, NULL, NULL, NULL, NULL, &err), HX_OK);
      if (psh_floor_check(&go, &hin, &err) != HX_OK) fail_msg("%s (graph %d): %s", gc->name, graph, err.msg);
      for (uint32_t j = 0; j < pr.nbt; j++) assert_int_equal(got.count[j] & got.start[j], 0xFFFFFFFFu);
    }
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    tres_free(&got);
    psh_gpu_free(g);
    prepared_free(&pr);
  }
  CK(cudaStreamDestroy(s));
}

static void test_gather(void **state) {
  (void)state;
  const uint32_t n = 5000, rows = 6000;
  uint32_t *src = malloc(rows * 4);
  for (uint32_t r = 0; r < rows; r++) src[r] = r % 7 == 3 ? PSH_NONE : (uint32_t)(hx_rng_u64(8, r, 0) % n);
  uint32_t *d_src = dup_to_dev(src, rows * 4);
  /* row sizes: fp32 C=5 (4-byte path), fp32 C=8 (16-byte), bf16 C=3 (2-byte), fp16 C=512, 1 byte odd */
  const size_t row_bytes[5] = {20, 32, 6, 1024, 3};
  for (int k = 0; k < 5; k++) {
    const size_t rb = row_bytes[k];
    unsigned char *in = malloc(n * rb), *want = malloc(rows * rb), *got = malloc(rows * rb);
    for (size_t i = 0; i < n * rb; i++) in[i] = (unsigned char)(hx_rng_u64(9, i, 0) & 0xFF);
    assert_int_equal(psh_gather_rows_cpu(want, in, src, rows, rb), HX_OK);
    void *d_in = dup_to_dev(in, n * rb), *d_out = dalloc(rows * rb);
    assert_int_equal(psh_gather_rows_gpu(d_out, d_in, d_src, rows, rb, NULL, NULL), HX_OK);
    CK(cudaDeviceSynchronize());
    to_host(got, d_out, rows * rb);
    assert_memory_equal(want, got, rows * rb);
    cudaFree(d_in), cudaFree(d_out);
    free(in), free(want), free(got);
  }
  cudaFree(d_src);
  free(src);
}

/* An auxiliary stream of the highest priority and its two events, as psh_gpu makes them (bpool_aux). */
static bpool_aux aux_pair_create(void) {
  int least = 0, greatest = 0;
  cudaStream_t st;
  cudaEvent_t e1, e2;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CK(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, greatest));
  CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  const bpool_aux a = {st, e1, e2};
  return a;
}
static void aux_pair_destroy(const bpool_aux *a) {
  CK(cudaStreamDestroy((cudaStream_t)a->stream));
  CK(cudaEventDestroy((cudaEvent_t)a->ev_fork));
  CK(cudaEventDestroy((cudaEvent_t)a->ev_join));
}

/* The pooling tests' input: the CPU PSH output (packed) of a 3-cloud clustered batch (30011, 0 and 12000
 * points) in 32 buckets of capacity 1040 per cloud, so buckets of 1025+ rows cross the 1024-row tile
 * boundary. Fills *r (free with tres_free) and returns the bucket count; n = 42011. */
static uint32_t pool_input(tres *r, uint64_t seed) {
  const uint32_t sizes[3] = {30011, 0, 12000};
  uint32_t off[4] = {0, 30011, 30011, 42011};
  const uint32_t n = off[3];
  float *xyz = malloc((size_t)n * 12);
  for (int c = 0; c < 3; c++) tcloud_fill(xyz, off[c], sizes[c], TC_CLUSTERED, seed + (uint64_t)c);
  psh_params p;
  psh_params_default(&p);
  p.nb = 32;
  p.cap = 1040;
  p.voxel = 0.05f;
  assert_true(tres_alloc(r, n, 3 * p.nb));
  psh_in in = {xyz, off, 3, n};
  psh_out out = tres_out(r);
  assert_int_equal(psh_run_cpu(&out, &in, &p, NULL), HX_OK);
  free(xyz);
  return 3 * p.nb;
}

/* Whether the pooling tests check variant v: those F3D_BPOOL_VARIANTS lists when it is set (v5,v9:
 * compute-sanitizer runs), else every variant with --slow (slow != 0), else the main path (v1, the ladder's first
 * rung, and bpool_variant_best's pick). */
static int pool_used(const bpool_variant *v, int slow) {
  const char *only = getenv("F3D_BPOOL_VARIANTS");
  if (only) return hx_name_listed(only, v->name);
  return slow || v->id == 1 || v == bpool_variant_best();
}

static void test_bpool_variants(void **state) {
  const int slow = *(const int *)*state;
  tres r;
  const uint32_t n = 42011, nbt = pool_input(&r, 40);
  const bpool_aux aux = aux_pair_create(); /* the one-call pooling runs once on a non-blocking main stream */
  cudaStream_t main_s;                     /* with this pair and once on the legacy stream without it */
  CK(cudaStreamCreateWithFlags(&main_s, cudaStreamNonBlocking));
  size_t nv = 0;
  const bpool_variant *vs = bpool_variants(&nv);
  assert_true(nv >= 1);
  for (uint32_t rho = 2; rho <= 8; rho *= 2) {
    uint32_t *os = malloc(nbt * 4), *oc = malloc(nbt * 4), n_out;
    assert_int_equal(bpool_plan_cpu(os, oc, &n_out, r.count, nbt, rho, NULL), HX_OK);
    uint32_t *members = malloc((size_t)n_out * rho * 4), *parent = malloc((size_t)n * 4);
    float *xo = malloc((size_t)n_out * 12);
    assert_int_equal(bpool_assign_cpu(members, parent, xo, r.xyz, n, r.start, r.count, os, nbt, rho, NULL), HX_OK);
    /* device inputs */
    uint32_t *d_count = dup_to_dev(r.count, nbt * 4), *d_start = dup_to_dev(r.start, nbt * 4);
    float *d_xyz = dup_to_dev(r.xyz, (size_t)n * 12);
    uint32_t *d_os = dalloc(nbt * 4), *d_oc = dalloc(nbt * 4);
    size_t sb = 0;
    hx_err err = {0};
    assert_int_equal(bpool_plan_gpu(NULL, &sb, d_os, d_oc, d_count, nbt, rho, NULL, &err), HX_OK);
    void *d_sc = dalloc(sb);
    assert_int_equal(bpool_plan_gpu(d_sc, &sb, d_os, d_oc, d_count, nbt, rho, NULL, &err), HX_OK);
    uint32_t *g_os = malloc(nbt * 4), *g_oc = malloc(nbt * 4);
    CK(cudaDeviceSynchronize());
    to_host(g_os, d_os, nbt * 4);
    to_host(g_oc, d_oc, nbt * 4);
    assert_memory_equal(os, g_os, nbt * 4);
    assert_memory_equal(oc, g_oc, nbt * 4);
    /* features [n, C] for C = 33 (per-element reduce paths) and C = 64 (16-byte paths), in one buffer */
    const uint32_t CMAX = 64, CS[2] = {33, 64};
    float *f = malloc((size_t)n * CMAX * 4);
    uint16_t *fb = malloc((size_t)n * CMAX * 2), *fh = malloc((size_t)n * CMAX * 2);
    for (uint32_t i = 0; i < n * CMAX; i++) {
      f[i] = (float)hx_rng_unit(5, i, 0) * 10.0f - 5.0f;
      fb[i] = (uint16_t)(hx_rng_u64(6, i, 0) & 0x7F7F); /* finite bf16 patterns */
      fh[i] = (uint16_t)(hx_rng_u64(7, i, 0) & 0xFBFF); /* finite fp16 patterns of either sign, subnormals too */
    }
    float *d_f = dup_to_dev(f, (size_t)n * CMAX * 4);
    uint16_t *d_fb = dup_to_dev(fb, (size_t)n * CMAX * 2), *d_fh = dup_to_dev(fh, (size_t)n * CMAX * 2);
    /* dtype k of the loops below: 0 fp32, 1 bf16, 2 fp16, with its host and device inputs */
    const psh_dtype dts[3] = {PSH_F32, PSH_BF16, PSH_F16};
    const void *h_in[3] = {f, fb, fh}, *d_in[3] = {d_f, d_fb, d_fh};
    for (size_t k = 0; k < nv; k++) {
      if (!pool_used(&vs[k], slow)) continue;
      uint32_t *d_m = dalloc((size_t)n_out * rho * 4), *d_p = dalloc((size_t)n * 4);
      float *d_xo = dalloc((size_t)n_out * 12);
      hx_status st = vs[k].assign(d_m, d_p, d_xo, d_xyz, n, d_start, d_count, d_os, nbt, rho, NULL, &err);
      if (st != HX_OK) fail_msg("bpool %s: %s", vs[k].name, err.msg);
      CK(cudaDeviceSynchronize());
      uint32_t *gm = malloc((size_t)n_out * rho * 4), *gp = malloc((size_t)n * 4);
      float *gx = malloc((size_t)n_out * 12);
      to_host(gm, d_m, (size_t)n_out * rho * 4);
      to_host(gp, d_p, (size_t)n * 4);
      to_host(gx, d_xo, (size_t)n_out * 12);
      assert_memory_equal(members, gm, (size_t)n_out * rho * 4);
      assert_memory_equal(parent, gp, (size_t)n * 4);
      assert_memory_equal(xo, gx, (size_t)n_out * 12);
      for (int ci = 0; ci < 2; ci++)
      for (int op = 0; op < BPOOL_OP_COUNT; op++)
        for (int dt = 0; dt < 3; dt++) {
          const uint32_t C = CS[ci];
          const psh_dtype t = dts[dt];
          const size_t es = psh_dtype_size(t), bytes = (size_t)n_out * C * es;
          void *want = malloc(bytes), *got = malloc(bytes), *d_o = dalloc(bytes);
          assert_int_equal(bpool_reduce_cpu(want, h_in[dt], members, n_out, rho, C, t, (bpool_op)op, NULL), HX_OK);
          st = vs[k].reduce(d_o, d_in[dt], d_m, n_out, rho, C, t, (bpool_op)op, NULL, &err);
          if (st != HX_OK) fail_msg("bpool %s reduce (C=%u): %s", vs[k].name, C, err.msg);
          CK(cudaDeviceSynchronize());
          to_host(got, d_o, bytes);
          assert_memory_equal(want, got, bytes);
          cudaFree(d_o);
          free(want), free(got);
        }
      /* the one-call pooling (plan, assign and reduce): every output poisoned first, the plan included, then
       * equal to the CPU's plan, assign and reduce, for both feature paths (C = 33, 64), every reduction and
       * dtype; once on one stream and once with an auxiliary stream (v6 overlaps two launches there) */
      if (vs[k].pool)
        for (int with_aux = 0; with_aux < 2; with_aux++)
        for (int ci = 0; ci < 2; ci++)
          for (int op = 0; op < BPOOL_OP_COUNT; op++)
            for (int dt = 0; dt < 3; dt++) {
              const uint32_t C = CS[ci];
              const psh_dtype t = dts[dt];
              const size_t es = psh_dtype_size(t), bytes = (size_t)n_out * C * es;
              void *want = malloc(bytes), *got = malloc(bytes), *d_o = dalloc(bytes);
              assert_int_equal(bpool_reduce_cpu(want, h_in[dt], members, n_out, rho, C, t, (bpool_op)op, NULL), HX_OK);
              uint32_t *d_os2 = dalloc(nbt * 4), *d_oc2 = dalloc(nbt * 4);
              CK(cudaMemset(d_o, 0xFF, bytes));
              CK(cudaMemset(d_m, 0xAB, (size_t)n_out * rho * 4)); /* 0xAB: never BPOOL_NONE */
              CK(cudaMemset(d_p, 0xAB, (size_t)n * 4));
              CK(cudaMemset(d_xo, 0xAB, (size_t)n_out * 12));
              /* the poison (legacy stream) must land before work on a non-blocking stream starts */
              CK(cudaDeviceSynchronize());
              size_t psb = 0;
              st = vs[k].pool(NULL, &psb, d_m, d_p, d_xo, d_o, d_xyz, d_in[dt], n, C, t, (bpool_op)op, d_start, d_count,
                              d_os2, d_oc2, nbt, rho, n_out,
                              with_aux ? &aux : NULL, with_aux ? main_s : NULL, &err);
              if (st != HX_OK) fail_msg("bpool %s pool size: %s", vs[k].name, err.msg);
              void *d_psc = dalloc(psb);
              CK(cudaDeviceSynchronize());
              st = vs[k].pool(d_psc, &psb, d_m, d_p, d_xo, d_o, d_xyz, d_in[dt], n, C, t, (bpool_op)op, d_start, d_count,
                              d_os2, d_oc2, nbt, rho, n_out,
                              with_aux ? &aux : NULL, with_aux ? main_s : NULL, &err);
              if (st != HX_OK) fail_msg("bpool %s pool (C=%u): %s", vs[k].name, C, err.msg);
              if (with_aux) CK(cudaStreamSynchronize(main_s));
              CK(cudaDeviceSynchronize());
              to_host(got, d_o, bytes);
              to_host(gm, d_m, (size_t)n_out * rho * 4);
              to_host(gp, d_p, (size_t)n * 4);
              to_host(gx, d_xo, (size_t)n_out * 12);
              to_host(g_os, d_os2, nbt * 4);
              to_host(g_oc, d_oc2, nbt * 4);
              assert_memory_equal(want, got, bytes);
              assert_memory_equal(members, gm, (size_t)n_out * rho * 4);
              assert_memory_equal(parent, gp, (size_t)n * 4);
              assert_memory_equal(xo, gx, (size_t)n_out * 12);
              assert_memory_equal(os, g_os, nbt * 4);
              assert_memory_equal(oc, g_oc, nbt * 4);
              cudaFree(d_o), cudaFree(d_os2), cudaFree(d_oc2), cudaFree(d_psc);
              free(want), free(got);
            }
      /* unpool of random pooled rows through the CPU parent map, fp32, bf16 and fp16, with and without a residual;
       * C = 33 takes the per-element path, C = 64 the 16-byte one */
      const uint32_t uc[2] = {33, 64};
      uint32_t *d_par = dup_to_dev(parent, (size_t)n * 4);
      for (int ci = 0; ci < 2; ci++)
        for (int dt = 0; dt < 3; dt++)
          for (int with_res = 0; with_res < 2; with_res++) {
            const psh_dtype t = dts[dt];
            const uint32_t CU = uc[ci];
            const size_t es = psh_dtype_size(t), nd = (size_t)n_out * CU, nu = (size_t)n * CU;
            unsigned char *down = malloc(nd * es), *res = malloc(nu * es), *want = malloc(nu * es), *got = malloc(nu * es);
            const uint16_t mask = dt == 2 ? 0xFBFF : 0x7F7F; /* finite fp16 / bf16 patterns */
            for (size_t i = 0; i < nd; i++) {
              if (dt) ((uint16_t *)down)[i] = (uint16_t)(hx_rng_u64(11, i, 0) & mask);
              else ((float *)down)[i] = (float)hx_rng_unit(11, i, 0) * 4.0f - 2.0f;
            }
            for (size_t i = 0; i < nu; i++) {
              if (dt) ((uint16_t *)res)[i] = (uint16_t)(hx_rng_u64(12, i, 0) & mask);
              else ((float *)res)[i] = (float)hx_rng_unit(12, i, 0) * 4.0f - 2.0f;
            }
            assert_int_equal(bpool_unpool_dt_cpu(want, down, with_res ? res : NULL, parent, n, CU, t, NULL), HX_OK);
            void *d_down = dup_to_dev(down, nd * es), *d_res = dup_to_dev(res, nu * es), *d_up = dalloc(nu * es);
            st = vs[k].unpool(d_up, d_down, with_res ? d_res : NULL, d_par, n, CU, t, NULL, &err);
            if (st != HX_OK) fail_msg("bpool %s unpool: %s", vs[k].name, err.msg);
            CK(cudaDeviceSynchronize());
            to_host(got, d_up, nu * es);
            assert_memory_equal(want, got, nu * es);
            cudaFree(d_down), cudaFree(d_res), cudaFree(d_up);
            free(down), free(res), free(want), free(got);
          }
      cudaFree(d_par);
      cudaFree(d_m), cudaFree(d_p), cudaFree(d_xo);
      free(gm), free(gp), free(gx);
    }
    cudaFree(d_f), cudaFree(d_fb), cudaFree(d_fh), cudaFree(d_sc), cudaFree(d_os), cudaFree(d_oc), cudaFree(d_count), cudaFree(d_start), cudaFree(d_xyz);
    free(f), free(fb), free(fh), free(g_os), free(g_oc), free(os), free(oc), free(members), free(parent), free(xo);
  }
  aux_pair_destroy(&aux);
  CK(cudaStreamDestroy(main_s));
  tres_free(&r);
}

/* Every pooling variant against the CPU on one bucket layout (host arrays), rho 2/4/8, through its three
 * entry points: assign (given the CPU's plan), assign_plan and the one-call pool where it has them (pool
 * with fp32 features of 64 channels, mean, on the legacy stream with an auxiliary stream pair, which v6
 * forks onto). Every output (members, parent, pooled xyz, features, and the plan where the call makes it)
 * is poisoned with 0xAB first (never BPOOL_NONE). misalign: the count and start arrays sit one word past a
 * 16-byte boundary on the device (the in-kernel plan's scalar path). */
static void check_assign_layout(const char *what, const float *xyz, uint32_t n, const uint32_t *start,
                                const uint32_t *count, uint32_t nbt, int misalign, int slow) {
  size_t nv = 0;
  const bpool_variant *vs = bpool_variants(&nv);
  const uint32_t sh = misalign ? 1u : 0u, C = 64;
  uint32_t *d_count0 = dalloc(((size_t)nbt + sh) * 4), *d_start0 = dalloc(((size_t)nbt + sh) * 4);
  uint32_t *d_count = d_count0 + sh, *d_start = d_start0 + sh;
  if (nbt) {
    CK(cudaMemcpy(d_count, count, (size_t)nbt * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_start, start, (size_t)nbt * 4, cudaMemcpyHostToDevice));
  }
  float *d_xyz = dup_to_dev(xyz, (size_t)n * 12);
  float *f = malloc((size_t)n * C * 4 + 4);
  for (size_t i = 0; i < (size_t)n * C; i++) f[i] = (float)hx_rng_unit(74, i, 0) * 8.0f - 4.0f;
  float *d_f = dup_to_dev(f, (size_t)n * C * 4);
  const bpool_aux aux = aux_pair_create();
  for (uint32_t rho = 2; rho <= 8; rho *= 2) {
    uint32_t *os = malloc((size_t)nbt * 4 + 4), *oc = malloc((size_t)nbt * 4 + 4), n_out = 0;
    assert_int_equal(bpool_plan_cpu(os, oc, &n_out, count, nbt, rho, NULL), HX_OK);
    uint32_t *members = malloc((size_t)n_out * rho * 4 + 4), *parent = malloc((size_t)n * 4 + 4);
    float *xo = malloc((size_t)n_out * 12 + 4), *fo = malloc((size_t)n_out * C * 4 + 4);
    assert_int_equal(bpool_assign_cpu(members, parent, xo, xyz, n, start, count, os, nbt, rho, NULL), HX_OK);
    assert_int_equal(bpool_reduce_cpu(fo, f, members, n_out, rho, C, PSH_F32, BPOOL_MEAN, NULL), HX_OK);
    uint32_t *gm = malloc((size_t)n_out * rho * 4 + 4), *gp = malloc((size_t)n * 4 + 4);
    uint32_t *gos = malloc((size_t)nbt * 4 + 4), *goc = malloc((size_t)nbt * 4 + 4);
    float *gx = malloc((size_t)n_out * 12 + 4), *gf = malloc((size_t)n_out * C * 4 + 4);
    uint32_t *d_os = dup_to_dev(os, (size_t)nbt * 4);
    for (size_t k = 0; k < nv; k++)
      for (int mode = 0; mode < 3; mode++) { /* 0 assign, 1 assign_plan, 2 pool */
        if (!pool_used(&vs[k], slow)) break;
        if ((mode == 1 && !vs[k].assign_plan) || (mode == 2 && !vs[k].pool)) continue;
        static const char *const mname[3] = {"assign", "assign_plan", "pool"};
        uint32_t *d_m = dalloc((size_t)n_out * rho * 4), *d_p = dalloc((size_t)n * 4);
        uint32_t *d_os2 = dalloc((size_t)nbt * 4), *d_oc2 = dalloc((size_t)nbt * 4);
        float *d_xo = dalloc((size_t)n_out * 12), *d_fo = dalloc((size_t)n_out * C * 4);
        hx_err err = {0};
        hx_status st = HX_OK;
        void *d_sc = NULL;
        size_t sb = 0;
        if (mode == 1 && (st = vs[k].assign_plan(NULL, &sb, d_m, d_p, d_xo, d_xyz, n, d_start, d_count, d_os2, d_oc2,
                                                 nbt, rho, NULL, &err)) == HX_OK) {
          d_sc = dalloc(sb);
          CK(cudaDeviceSynchronize());
          st = vs[k].assign_plan(d_sc, &sb, d_m, d_p, d_xo, d_xyz, n, d_start, d_count, d_os2, d_oc2, nbt, rho, NULL,
                                 &err);
        } else if (mode == 2 && (st = vs[k].pool(NULL, &sb, d_m, d_p, d_xo, d_fo, d_xyz, d_f, n, C, PSH_F32,
                                                 BPOOL_MEAN, d_start, d_count, d_os2, d_oc2, nbt, rho, n_out, &aux,
                                                 NULL, &err)) == HX_OK) {
          d_sc = dalloc(sb);
          CK(cudaDeviceSynchronize());
          st = vs[k].pool(d_sc, &sb, d_m, d_p, d_xo, d_fo, d_xyz, d_f, n, C, PSH_F32, BPOOL_MEAN, d_start, d_count,
                          d_os2, d_oc2, nbt, rho, n_out, &aux, NULL, &err);
        } else if (mode == 0) {
          st = vs[k].assign(d_m, d_p, d_xo, d_xyz, n, d_start, d_count, d_os, nbt, rho, NULL, &err);
        }
        if (st != HX_OK) fail_msg("bpool %s %s (%s): %s", vs[k].name, mname[mode], what, err.msg);
        CK(cudaDeviceSynchronize());
        to_host(gm, d_m, (size_t)n_out * rho * 4);
        to_host(gp, d_p, (size_t)n * 4);
        to_host(gx, d_xo, (size_t)n_out * 12);
        if (memcmp(members, gm, (size_t)n_out * rho * 4) || memcmp(parent, gp, (size_t)n * 4) ||
            memcmp(xo, gx, (size_t)n_out * 12))
          fail_msg("bpool %s %s (%s, rho %u): members/parent/xyz differ from the CPU", vs[k].name, mname[mode], what,
                   rho);
        if (mode >= 1) {
          to_host(gos, d_os2, (size_t)nbt * 4);
          to_host(goc, d_oc2, (size_t)nbt * 4);
          if (memcmp(os, gos, (size_t)nbt * 4) || memcmp(oc, goc, (size_t)nbt * 4))
            fail_msg("bpool %s %s (%s, rho %u): plan differs from bpool_plan_cpu", vs[k].name, mname[mode], what, rho);
        }
        if (mode == 2) {
          to_host(gf, d_fo, (size_t)n_out * C * 4);
          if (memcmp(fo, gf, (size_t)n_out * C * 4))
            fail_msg("bpool %s pool (%s, rho %u): features differ from bpool_reduce_cpu", vs[k].name, what, rho);
        }
        cudaFree(d_m), cudaFree(d_p), cudaFree(d_os2), cudaFree(d_oc2), cudaFree(d_xo), cudaFree(d_fo), cudaFree(d_sc);
      }
    cudaFree(d_os);
    free(os), free(oc), free(members), free(parent), free(xo), free(fo);
    free(gm), free(gp), free(gos), free(goc), free(gx), free(gf);
  }
  aux_pair_destroy(&aux);
  cudaFree(d_count0), cudaFree(d_start0), cudaFree(d_xyz), cudaFree(d_f);
  free(f);
}

/* Layouts for the assignment: the packed PSH output of a 3-cloud batch (buckets of up to 1040 rows, so
 * both of v5's shapes run; every row in a bucket), the same buckets spread out with rows in no bucket
 * before, between and after them (a padded layout: parent NONE there), also with the tables off 16-byte
 * alignment, 5000 small buckets (past v5's in-kernel plan limit) with 3 rows in no bucket at the end, 2051
 * of them (inside the limit), no bucket at all, and ten buckets without rows. */
static void test_bpool_layouts(void **state) {
  const int slow = *(const int *)*state;
  tres r;
  const uint32_t n = 42011, nbt = pool_input(&r, 70);
  check_assign_layout("packed", r.xyz, n, r.start, r.count, nbt, 0, slow);

  /* spread: bucket b at row 7 + 1050 b, 11 rows after the last; the rows in no bucket hold other points */
  const uint32_t pitch = 1050, n2 = 7 + nbt * pitch + 11;
  float *x2 = malloc((size_t)n2 * 12);
  uint32_t *s2 = malloc(nbt * 4);
  for (uint32_t i = 0; i < n2 * 3; i++) x2[i] = (float)hx_rng_unit(71, i, 0) * 20.0f - 10.0f;
  for (uint32_t b = 0; b < nbt; b++) {
    s2[b] = 7 + b * pitch;
    memcpy(x2 + 3 * (size_t)s2[b], r.xyz + 3 * (size_t)r.start[b], (size_t)r.count[b] * 12);
  }
  check_assign_layout("spread", x2, n2, s2, r.count, nbt, 0, slow);
  check_assign_layout("spread, arrays off 16-byte alignment", x2, n2, s2, r.count, nbt, 1, slow);

  /* many small buckets: 5000 buckets of 0..9 rows, packed, 3 rows in no bucket at the end */
  const uint32_t nb3 = 5000;
  uint32_t *s3 = malloc(nb3 * 4), *c3 = malloc(nb3 * 4), n3 = 0;
  for (uint32_t b = 0; b < nb3; b++) {
    c3[b] = (uint32_t)(hx_rng_u64(72, b, 0) % 10);
    s3[b] = n3;
    n3 += c3[b];
  }
  n3 += 3;
  float *x3 = malloc((size_t)n3 * 12);
  for (uint32_t i = 0; i < n3 * 3; i++) x3[i] = (float)hx_rng_unit(73, i, 0) * 5.0f;
  check_assign_layout("5000 small buckets", x3, n3, s3, c3, nb3, 0, slow);

  /* 2051 of those buckets (in-kernel plan: several count loads per thread and a scalar tail), packed, no
   * row outside them */
  check_assign_layout("2051 small buckets", x3, s3[2050] + c3[2050], s3, c3, 2051, 0, slow);

  /* no bucket, and ten buckets without rows: every row's parent is NONE */
  check_assign_layout("no bucket", x3, 100, s3, c3, 0, 0, slow);
  uint32_t zc[10] = {0}, zs[10] = {0, 5, 5, 99, 100, 0, 7, 7, 50, 3};
  check_assign_layout("ten empty buckets", x3, 100, zs, zc, 10, 0, slow);

  free(x2), free(s2), free(s3), free(c3), free(x3);
  tres_free(&r);
}

int main(int argc, char **argv) {
  static int slow = 0; /* --slow: every rung, and the 4M-point cloud */
  if ((slow = t_slow_arg(argc, argv)) < 0) return 2;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "test_psh_gpu: no CUDA device, skipping\n");
    return 77;
  }
  /* the default run; --slow adds the 4M-point cloud at the end */
#define PSH_GPU_TESTS                                                                                                  \
  cmocka_unit_test_prestate(test_psh_variants, &slow), cmocka_unit_test_prestate(test_psh_recorded, &slow),          \
      cmocka_unit_test(test_phase_trace), cmocka_unit_test(test_floor), cmocka_unit_test(test_handle_pair),            \
      cmocka_unit_test(test_gather), cmocka_unit_test_prestate(test_bpool_variants, &slow),                          \
      cmocka_unit_test_prestate(test_bpool_layouts, &slow)
  const struct CMUnitTest tests[] = {PSH_GPU_TESTS};
  const struct CMUnitTest slow_tests[] = {PSH_GPU_TESTS, cmocka_unit_test(test_psh_4m)};
  if (getenv("F3D_BPOOL_ONLY")) { /* a sanitizer run of the pooling variants: the pooling tests only */
    const struct CMUnitTest only[] = {cmocka_unit_test_prestate(test_bpool_variants, &slow),
                                      cmocka_unit_test_prestate(test_bpool_layouts, &slow)};
    return cmocka_run_group_tests(only, NULL, NULL);
  }
  if (getenv("F3D_PSH_VARIANTS")) { /* a sanitizer run of chosen PSH variants: the PSH test only */
    const struct CMUnitTest only[] = {cmocka_unit_test_prestate(test_psh_variants, &slow)};
    return cmocka_run_group_tests(only, NULL, NULL);
  }
  return slow ? cmocka_run_group_tests(slow_tests, NULL, NULL) : cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  fprintf(stderr, "test_psh_gpu: built without CUDA, skipping\n");
  return 77;
}
#endif
