/*
 * drv.cc - runs the emulated v4 (psh_v4.cu rewritten by run.sh onto emu.h) on small batches (uniform,
 * clustered, one voxel, N < S, empty clouds, over capacity, several points per thread, 4096 buckets,
 * S = 4096) for every hash, and checks what test_psh_gpu.c checks: psh_check's invariants, counters
 * summing to n, first-hash count equal to the CPU's, CPU buckets where the CPU needed no probe, the
 * one-voxel counts. Exit status 1 on any failure. EMU_MISALIGN (v7's second run): the coordinates in and
 * out start 4 or 8 bytes past a 16-byte boundary for some hashes (perm 4 bytes for the last), so the
 * gather's scalar fall-back runs too. EMU_NOPAIR=1 in the environment: the launcher is asked for no per-point
 * (bucket, offset) (psh_out's NULL pair; v8/v9's launcher, EMU_OWN_PAIR, carves its own copy, the others run
 * through psh_run_paired) and the pair is rebuilt from slot and the bucket table before the checks.
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
extern int emu_sms, emu_fallbacks;
#ifndef EMU_RUN
#define EMU_RUN psh_run_v4
#define EMU_SMS_MUL 1
#endif
struct Case { const char *name; int kind; std::vector<uint32_t> sizes; uint32_t nb, cap; float voxel; int sms; };
static void fill(float *x, uint32_t n, int kind, uint64_t seed) {
  for (uint32_t i = 0; i < n; i++) {
    for (int d = 0; d < 3; d++) {
      double u = hx_rng_unit(seed, i, (uint64_t)d);
      double v;
      if (kind == 0) v = 20.0 * u;
      else if (kind == 1) { uint64_t c = hx_rng_u64(seed, i, 9) % 5; v = (double)c * 7.0 + 1.5 * u; }
      else v = 3.25;
      if (kind == 3 && d == 2) v = 0.01 * u;
      x[3 * i + d] = (float)v;
    }
  }
}
#ifdef EMU_OWN_PAIR /* the launcher takes a NULL pair itself */
#define RUN(...) EMU_RUN(__VA_ARGS__)
#else
#define RUN(...) psh_run_paired(EMU_RUN, __VA_ARGS__)
#endif
int main() {
  const char *np = getenv("EMU_NOPAIR");
  const bool nopair = np && np[0] == '1';
  std::vector<Case> cases = {
#ifndef ONLY_NEW
      {"uniform 3000 S=64", 0, {3000}, 0, 64, 0.1f, 2},
      {"clustered 5000 S=32", 1, {5000}, 0, 32, 0.05f, 1},
      {"one voxel", 2, {700}, 0, 64, 0.1f, 1},
      {"N < S", 0, {10}, 1, 64, 0.1f, 1},
      {"batch with empty", 0, {10, 0, 3001, 1, 0}, 64, 64, 0.1f, 1},
      {"over capacity", 0, {1000}, 4, 16, 0.1f, 1},
      {"over capacity short", 0, {70}, 4, 16, 0.1f, 1}, /* a short overflow list with leftovers */
      {"batch 2 x 2500 + 0", 1, {2501, 0, 2499}, 0, 16, 0.05f, 1},
      {"plane 4097", 3, {4097}, 0, 32, 0.05f, 1},
      {"sparse nb 4096", 0, {2000}, 4096, 64, 0.5f, 1},
      {"nb 8192 over capacity", 1, {140000}, 8192, 16, 0.05f, 1}, /* v4's dynamic shared arrays, leftovers */
      {"nb 16384 batch", 0, {3000, 0, 2000}, 16384, 16, 0.05f, 1},
#endif
      {"uniform 20000 ipt 8", 0, {20000}, 0, 16, 0.05f, 1},
      {"one voxel 9000 S=4096", 2, {9000}, 1, 4096, 0.1f, 1},
      {"clustered 3 clouds ipt 3", 1, {3001, 2999, 100}, 0, 32, 0.05f, 1},
  };
  int fails = 0;
  for (auto &cs : cases) {
    emu_sms = cs.sms * EMU_SMS_MUL; /* v5: more resident blocks, so more cases fit one cooperative wave */
    std::vector<uint32_t> off(1, 0);
    uint32_t nmax = 0;
    for (auto s : cs.sizes) { off.push_back(off.back() + s); nmax = s > nmax ? s : nmax; }
    const uint32_t n = off.back(), nc = (uint32_t)cs.sizes.size();
    std::vector<float> xyzv((size_t)n * 3 + 8);
    for (int h = 0; h < 4; h++) {
#ifdef EMU_MISALIGN
      const size_t shin = h == 1 || h == 3 ? 1 : 0, shout = h == 1 || h == 3 ? 1 : h == 2 ? 2 : 0, shperm = h == 3;
#else
      const size_t shin = 0, shout = 0, shperm = 0;
#endif
      float *xyz = xyzv.data() + shin; /* vector storage is 16-byte aligned */
      for (uint32_t c = 0; c < nc; c++) fill(xyz + 3 * (size_t)off[c], cs.sizes[c], cs.kind, 1000 + c);
      psh_params p; psh_params_default(&p);
      p.hash = (psh_hash)h; p.cap = cs.cap; p.voxel = cs.voxel; p.nb = cs.nb ? cs.nb : psh_auto_buckets(nmax, cs.cap);
      const uint32_t nbt = nc * p.nb;
      auto mk = [](size_t k) { std::vector<uint32_t> v(k + 1); memset(v.data(), 0xAB, v.size() * 4); return v; };
      auto cb = mk(n), co = mk(n), cc = mk(nbt), cst = mk(nbt), csl = mk(n), cpe = mk(n), cct = mk(4);
      auto gb = mk(n), go = mk(n), gc = mk(nbt), gst = mk(nbt), gsl = mk(n), gpe = mk(n), gct = mk(4);
      std::vector<float> cx((size_t)n * 3 + 3), gxv((size_t)n * 3 + 8, -7.0f);
      float *gx = gxv.data() + shout;
      psh_in in = {xyz, off.data(), nc, n};
      psh_out co_ = {cb.data(), co.data(), cc.data(), cst.data(), csl.data(), cpe.data(), cx.data(), cct.data()};
      psh_out go_ = {gb.data(), go.data(), gc.data(), gst.data(), gsl.data(), gpe.data() + shperm, gx, gct.data()};
      hx_err err = {};
      if (psh_run_cpu(&co_, &in, &p, &err) != HX_OK) { printf("cpu fail %s\n", err.msg); return 1; }
      psh_out gr_ = go_; /* what the launcher is given */
      if (nopair) gr_.bucket = gr_.offset = NULL;
      size_t sb = 0;
      if (RUN(NULL, &sb, &gr_, &in, &p, NULL, &err) != HX_OK) { printf("size fail %s\n", err.msg); return 1; }
      void *scr = aligned_alloc(256, (sb + 255) / 256 * 256);
      memset(scr, 0xCD, sb);
      hx_status st = RUN(scr, &sb, &gr_, &in, &p, NULL, &err);
      if (st == HX_OK && nopair) st = psh_bo_from_slot_cpu(gb.data(), go.data(), gsl.data(), gst.data(), gc.data(), nbt, n, &err);
      if (st == HX_OK) st = psh_check(&go_, &in, &p, &err);
      if (st == HX_OK && (uint64_t)gct[0] + gct[1] + gct[2] != n) st = hx_errf(&err, HX_ECHECK, "counters sum %u %u %u", gct[0], gct[1], gct[2]);
      if (st == HX_OK && gct[0] != cct[0]) st = hx_errf(&err, HX_ECHECK, "first %u cpu %u", gct[0], cct[0]);
      if (st == HX_OK && cct[0] == n && memcmp(gb.data(), cb.data(), (size_t)n * 4)) st = hx_errf(&err, HX_ECHECK, "no-probe buckets differ");
      if (st == HX_OK && cs.kind == 2 && memcmp(gc.data(), cc.data(), (size_t)nbt * 4)) st = hx_errf(&err, HX_ECHECK, "one-voxel counts differ");
      printf("%-22s %-10s nb %5u: %s  first %u/%u probe %u/%u over %u/%u%s\n", cs.name, psh_hash_name(p.hash), p.nb,
             st == HX_OK ? "ok  " : err.msg, gct[0], cct[0], gct[1], cct[1], gct[2], cct[2],
             emu_fallbacks ? " (ran v4)" : "");
      emu_fallbacks = 0;
      fails += st != HX_OK;
      free(scr);
    }
  }
  printf("%d failures\n", fails);
  return fails != 0;
}
