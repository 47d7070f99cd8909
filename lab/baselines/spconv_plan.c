/*
 * spconv_plan.c - what the implicit-GEMM sparse convolutions would move and multiply on PTv3's own k = 3 maps, level
 * by level, counted on the CPU (no GPU): the napkin math for choosing the next convolution kernel.
 *   build/lab/spconv_plan [--points N] [--seed S] [--voxel V]      (defaults 600k, 3407, 0.05 m: the forward's)
 * The levels are those of PTv3-m1's forward (net_ptv3_struct_build: serialization, pooling, the maps the CPU
 * forward uses; the GPU forward builds the same maps). For each level's map, for row tiles of 128 and 256 rows,
 * in two row orders (the level's own, as v1 reads it, and sorted by neighbour mask, as v3 reads it):
 *   steps    offsets at which some row of a tile has a neighbour, per tile (v1/v3: one step per offset and input
 *            chunk, each gathering all tile rows of that chunk)
 *   pad      mma work of v1/v3 over the real pairs' work: a 16-row group multiplies at every offset where one of
 *            its rows has a neighbour (16 rows x offsets with a neighbour in the group / real pairs)
 *   copies   gathered rows per input chunk: tile rows x steps summed over tiles, over n (v1/v3 issue them all)
 *   halo     distinct input rows a tile's map rows name: mean, 99th percentile and largest per tile, and the sum
 *            over n: the rows a kernel that keeps a tile's input rows in shared memory across offsets would copy
 *   q1, q4   steps per tile over the first and the last quarter of the tiles in the order
 *   span     the tiles' steps list-scheduled on 132 slots (one CTA an SM, each taking the next tile when it is
 *            free, as the block scheduler does) in the order's tile order, then last-first, over the ideal
 *            (all steps / 132): the tail a launch's waves leave; lpt: longest first (tiles sorted by steps)
 * Then the v6 launches themselves, per level at the channels v6 runs there (level 0: the decoder's 64; enc0 runs v8):
 * its tile rows (spc_v6_tile_rows), output slices (CTAs a tile), resident slots (132 SMs x 2 CTAs at slices of <= 64
 * channels, x 1 above), and the list-scheduled span over the ideal of the CTAs in three launch orders: last-first,
 * longest first by steps (spc_tile_order_cpu, the main path) and longest first by block steps; each priced two
 * ways: a tile's steps (the producer's and the barriers' work: every step, whatever its blocks) and its block steps
 * (the consumers' tensor work: each 64-row block at the offsets where it has a neighbour).
 * Prints two tables; nothing is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/nets.h"
#include "nets/nets_internal.h"
#include "nets/spconv_internal.h"
#include "workloads/workloads.h"

typedef struct plan_row {
  double steps, pad, copies, halo_mean, halo_sum, q1, q4, span_fwd, span_rev, span_lpt;
  uint32_t halo_p99, halo_max;
} plan_row;

static int cmp_u32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* One (map, row order, tile) case; order NULL: the map's own order. halo: ceil(n / T) words (clobbered). The padded
 * groups are spc_group_steps_cpu's (T is a multiple of 16, so its 16-row groups never straddle two tiles). */
static int plan_count(plan_row *r, const spc_map *m, const uint32_t *order, uint32_t T, uint32_t *halo,
                      hx_err *err) {
  if (m->K > 32u) return hx_errf(err, HX_EINVAL, "spconv_plan: K = %u offsets (k = 3 maps only)", m->K), 1;
  const uint32_t n = m->n, K = m->K, tiles = (n + T - 1) / T;
  uint64_t steps = 0, copies = 0, halo_sum = 0, q[2] = {0, 0};
  for (uint32_t t = 0; t < tiles; t++) {
    const uint32_t r0 = t * T, r1 = n - r0 < T ? n : r0 + T;
    uint32_t act = 0; /* offsets at which some row of the tile has a neighbour */
    for (uint32_t i = r0; i < r1; i++) {
      const int32_t *e = m->nbr + (size_t)(order ? order[i] : i) * K;
      for (uint32_t o = 0; o < K; o++)
        if (e[o] >= 0) act |= 1u << o;
    }
    const uint32_t a = (uint32_t)__builtin_popcount(act);
    steps += a;
    copies += (uint64_t)a * T;
    if (t < tiles / 4) q[0] += a;
    if (t >= tiles - tiles / 4) q[1] += a;
    halo[t] = a; /* the tile's steps, for the schedule below (halo[] is refilled after) */
  }
  r->q1 = tiles >= 4 ? (double)q[0] / (tiles / 4) : 0.0;
  r->q4 = tiles >= 4 ? (double)q[1] / (tiles / 4) : 0.0;
  for (int rev = 0; rev < 3; rev++) {
    if (rev == 2) qsort(halo, tiles, sizeof *halo, cmp_u32); /* ascending: taken last-first, longest first */
    enum { SLOTS = 132 };
    uint64_t free_at[SLOTS] = {0}, span = 0;
    for (uint32_t k = 0; k < tiles; k++) {
      int s0 = 0;
      for (int sl = 1; sl < SLOTS; sl++) s0 = free_at[sl] < free_at[s0] ? sl : s0;
      free_at[s0] += halo[rev ? tiles - 1 - k : k];
      span = free_at[s0] > span ? free_at[s0] : span;
    }
    const double ideal = (double)steps / SLOTS;
    *(rev == 2 ? &r->span_lpt : rev ? &r->span_rev : &r->span_fwd) = ideal > 0 ? (double)span / ideal : 0.0;
  }
  if (spc_tile_halos_cpu(halo, m, order, T, err) != HX_OK) return 1;
  for (uint32_t t = 0; t < tiles; t++) halo_sum += halo[t];
  qsort(halo, tiles, sizeof *halo, cmp_u32);
  r->steps = tiles ? (double)steps / tiles : 0.0;
  r->pad = m->pairs ? 16.0 * (double)spc_group_steps_cpu(m, order) / (double)m->pairs : 0.0;
  r->copies = n ? (double)copies / n : 0.0;
  r->halo_mean = tiles ? (double)halo_sum / tiles : 0.0;
  r->halo_sum = n ? (double)halo_sum / n : 0.0;
  r->halo_p99 = tiles ? halo[(size_t)((tiles - 1) * 0.99)] : 0;
  r->halo_max = tiles ? halo[tiles - 1] : 0;
  return 0;
}

/* Span over the ideal of CTAs list-scheduled on `slots` slots in launch order: tile order[k] (k < nt), each tile's
 * `slices` CTAs in a row, a CTA costing cost[tile]. */
static double list_span(const uint32_t *order, const uint32_t *cost, uint32_t nt, uint32_t slices, uint32_t slots,
                        uint64_t *free_at) {
  uint64_t span = 0, all = 0;
  memset(free_at, 0, slots * sizeof *free_at);
  for (uint32_t k = 0; k < nt; k++)
    for (uint32_t sl = 0; sl < slices; sl++) {
      uint32_t s0 = 0;
      for (uint32_t i = 1; i < slots; i++) s0 = free_at[i] < free_at[s0] ? i : s0;
      free_at[s0] += cost[order[k]];
      all += cost[order[k]];
      span = free_at[s0] > span ? free_at[s0] : span;
    }
  return all ? (double)span * slots / (double)all : 0.0;
}

/* Tiles sorted by key descending, ties in increasing tile index (spc_tile_order_cpu's rule). */
static void order_by(uint32_t *order, const uint32_t *key, uint32_t nt) {
  for (uint32_t t = 0; t < nt; t++) order[t] = t;
  for (uint32_t i = 1; i < nt; i++) { /* insertion sort: stable; nt is a few thousand */
    const uint32_t v = order[i];
    uint32_t j = i;
    while (j > 0 && key[order[j - 1]] < key[v]) order[j] = order[j - 1], j--;
    order[j] = v;
  }
}

/* The v6 table's row for level map m in mask order `rows` at C channels (see the header). */
static int v6_row(int l, const spc_map *m, const uint32_t *rows, uint32_t C, hx_err *err) {
  const uint32_t T = spc_v6_tile_rows(C), BN = spc_v6_slice(C), slices = C / BN, slots = 132u * (BN <= 64 ? 2u : 1u);
  const uint32_t nt = (m->n + T - 1) / T;
  uint32_t *steps = malloc(nt * sizeof *steps), *blocks = malloc(nt * sizeof *blocks);
  uint32_t *by_steps = malloc(nt * sizeof *by_steps), *by_blocks = malloc(nt * sizeof *by_blocks);
  uint32_t *rev = malloc(nt * sizeof *rev);
  uint64_t *free_at = malloc(slots * sizeof *free_at);
  int rc = 1;
  if (!steps || !blocks || !by_steps || !by_blocks || !rev || !free_at) {
    hx_errf(err, HX_ENOMEM, "level %d: %u tiles", l, nt);
    goto out;
  }
  for (uint32_t t = 0; t < nt; t++) {
    uint32_t any = 0, b = 0;
    for (uint32_t r0 = t * T; r0 < m->n && r0 < t * T + T; r0 += 64u) { /* 64-row blocks */
      uint32_t blk = 0;
      for (uint32_t i = r0; i < m->n && i < r0 + 64u; i++)
        for (uint32_t o = 0; o < m->K; o++) {
          const int32_t j = m->nbr[(size_t)rows[i] * m->K + o];
          blk |= (j >= 0 && (uint32_t)j < m->n ? 1u : 0u) << o;
        }
      any |= blk;
      b += (uint32_t)__builtin_popcount(blk);
    }
    steps[t] = (uint32_t)__builtin_popcount(any), blocks[t] = b, rev[t] = nt - 1 - t;
  }
  if (spc_tile_order_cpu(by_steps, m, rows, T, err) != HX_OK) goto out;
  order_by(by_blocks, blocks, nt);
  const uint32_t ctas = nt * slices;
  printf("%-5d %8u %5u %5u %6u %5u %6u %5.1f | %6.2f %6.2f | %6.2f %6.2f %6.2f\n", l, m->n, C, T, slices, slots, ctas,
         (double)ctas / slots, list_span(rev, steps, nt, slices, slots, free_at),
         list_span(by_steps, steps, nt, slices, slots, free_at), list_span(rev, blocks, nt, slices, slots, free_at),
         list_span(by_steps, blocks, nt, slices, slots, free_at), list_span(by_blocks, blocks, nt, slices, slots, free_at));
  rc = 0;
out:
  free(steps), free(blocks), free(by_steps), free(by_blocks), free(rev), free(free_at);
  return rc;
}

static void usage(void) {
  fprintf(stderr, "usage: spconv_plan [--points N] [--seed S] [--voxel V]\n"
                  "  PTv3-m1's k = 3 kernel maps level by level (synthetic lidar, the forward's structure): tile steps,\n"
                  "  padded mma work, gathered rows and per-tile input halos for 128- and 256-row tiles, in the level's\n"
                  "  order and sorted by neighbour mask. Defaults: 600000 points, seed 3407, voxel 0.05 m.\n");
}

int main(int argc, char **argv) {
  size_t points = 600000;
  uint64_t seed = 3407;
  double voxel = 0.05;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return usage(), 0;
    if (i + 1 >= argc) return usage(), 2;
    char *end = NULL;
    if (strcmp(argv[i], "--points") == 0) points = strtoull(argv[++i], &end, 10);
    else if (strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[++i], &end, 10);
    else if (strcmp(argv[i], "--voxel") == 0) voxel = strtod(argv[++i], &end);
    else return usage(), 2;
    if (!end || *end || points == 0 || !(voxel > 0.0)) return fprintf(stderr, "spconv_plan: bad %s\n", argv[i - 1]), 2;
  }
  hx_err err = {HX_OK, ""};
  wl_cloud cl = {0};
  wl_batch bt = {0};
  net_config cfg;
  net_ptv3_struct s;
  memset(&s, 0, sizeof s);
  float *feat = NULL;
  int rc = 1;
  if (net_config_named(&cfg, "ptv3", &err) != HX_OK ||
      wl_make_exact(&cl, WL_LIDAR, NULL, points, voxel, seed, NULL, &err) != HX_OK ||
      wl_batch_from_clouds(&bt, &cl, 1, &err) != HX_OK)
    goto out;
  feat = calloc(bt.n * 4, sizeof *feat);
  if (!feat) {
    hx_errf(&err, HX_ENOMEM, "features of %zu points", bt.n);
    goto out;
  }
  const net_input in = {bt.xyz, feat, bt.offset, 1, bt.n, voxel, seed};
  if (net_ptv3_struct_build(&s, &cfg, &in, 1, &err) != HX_OK) goto out;
  printf("PTv3-m1 k = 3 maps, %zu lidar points, seed %llu, voxel %g m (CPU count)\n", bt.n, (unsigned long long)seed,
         voxel);
  printf("%-5s %8s %6s %5s %-6s %6s %5s %7s %8s %6s %6s %7s %5s %5s %5s %5s %5s\n", "level", "rows", "pairs", "tile",
         "order", "steps", "pad", "copies", "halo", "p99", "max", "halo/n", "q1", "q4", "span", "rspan", "lpt");
  for (int l = 0; l < s.L; l++) {
    const spc_map *m = &s.lv[l].map;
    uint32_t *order = malloc((size_t)m->n * sizeof *order), *halo = malloc(((size_t)m->n / 128 + 1) * sizeof *halo);
    if (!order || !halo || spc_mask_order_cpu(order, m, &err) != HX_OK) {
      free(order), free(halo);
      if (err.status == HX_OK) hx_errf(&err, HX_ENOMEM, "level %d: %u rows", l, m->n);
      goto out;
    }
    for (int ti = 0; ti < 2; ti++)
      for (int oi = 0; oi < 2; oi++) {
        plan_row r;
        const uint32_t T = ti ? 256u : 128u;
        if (plan_count(&r, m, oi ? order : NULL, T, halo, &err)) {
          free(order), free(halo);
          goto out;
        }
        printf("%-5d %8u %6.2f %5u %-6s %6.1f %5.2f %7.1f %8.1f %6u %6u %7.2f %5.1f %5.1f %5.2f %5.2f %5.2f\n", l, m->n,
               m->n ? (double)m->pairs / m->n : 0.0, T, oi ? "mask" : "level", r.steps, r.pad, r.copies, r.halo_mean,
               r.halo_p99, r.halo_max, r.halo_sum, r.q1, r.q4, r.span_fwd, r.span_rev, r.span_lpt);
      }
    free(order), free(halo);
  }
  printf("\nv6's launches (span over the ideal; priced by a tile's steps, then by its 64-row blocks' steps)\n");
  printf("%-5s %8s %5s %5s %6s %5s %6s %5s | %6s %6s | %6s %6s %6s\n", "level", "rows", "C", "tile", "slices", "slots",
         "CTAs", "waves", "rev", "lpt", "rev", "lpt", "blpt");
  for (int l = 0; l < s.L; l++) {
    const spc_map *m = &s.lv[l].map;
    const uint32_t C = (uint32_t)(l == 0 ? cfg.dec_channels[0] : cfg.enc_channels[l]);
    uint32_t *order = malloc((size_t)m->n * sizeof *order);
    if (!order || spc_mask_order_cpu(order, m, &err) != HX_OK || v6_row(l, m, order, C, &err)) {
      free(order);
      if (err.status == HX_OK) hx_errf(&err, HX_ENOMEM, "level %d: %u rows", l, m->n);
      goto out;
    }
    free(order);
  }
  rc = 0;
out:
  if (rc) fprintf(stderr, "spconv_plan: %s\n", err.msg);
  net_ptv3_struct_free(&s);
  free(feat);
  wl_batch_free(&bt);
  wl_cloud_free(&cl);
  return rc;
}
