/*
 * pipe_spconv.h - the k = 3 submanifold convolution timed alone, a stage of the ptv3-net pipeline (pipe_spconv.c),
 * and the CPU arithmetic it rests on (spconv_cost.c: the roofline of a convolution on a given kernel map, and the
 * sub-problem that checks sampled output rows against the CPU reference).
 *
 * The roofline (issue #36's definition for sparse convolution v1) of y [n, out] = conv(x [n, in]) on a map of n
 * rows and K offsets with `pairs` real neighbour pairs, 16-bit activations and weights (fp16 or bf16, sweep --dtype:
 * 2 bytes either way), fp32 bias:
 *     flops    = 2 * pairs * in * out
 *     bytes    = x_reads * in * 2      each input row once per output tile it is a neighbour of: x_reads = sum over
 *                                      tiles of `tile` consecutive output rows of the distinct input rows their map
 *                                      rows name (a row shared by two tiles counts twice, twice in one tile once)
 *              + n * out * 2          each output row written once
 *              + n * K * 4            the map, read once
 *              + K * in * out * 2 + out * 4   the weights and the bias, once
 *     roofline_ms = max(flops / gemm rate, bytes / copy bandwidth): the lower of the two attainable rates, at the
 *                   run's own ceilings (ceiling_gemm_<dtype>_tflops, ceiling_copy_gbs); share = roofline_ms / median.
 * The tile is v1's: BM = 256 output rows for maps of >= 16384 rows at k = 3, else 128 (nets/spconv.cu), all out
 * channels of a tile counted as one (a fused kernel that keeps its tile's neighbour rows on chip reads each once,
 * whatever its output-channel slicing). halo = x_reads / n: 1 for a map whose tiles share no input row.
 */
#ifndef F3D_APP_PIPE_SPCONV_H
#define F3D_APP_PIPE_SPCONV_H

#include "app/sweep.h"
#include "nets/nets.h"

/* The roofline's parts for one map and one channel pair (formulas above). */
typedef struct f3d_spc_cost {
  double pairs;     /* real neighbour pairs (map entries != -1) */
  double flops;     /* 2 * pairs * in * out */
  double x_reads;   /* input rows read, once per tile each */
  double halo;      /* x_reads / n (0 for an empty map) */
  double map_bytes; /* n * K * 4 */
  double bytes;     /* everything a fused kernel must move */
  uint32_t tile;    /* output rows per tile */
} f3d_spc_cost;

/* The cost of conv on the host map nbr [n * K] (entries -1 or < n) in tiles of `tile` rows. HX_EINVAL for a NULL
 * map with n > 0, K = 0, tile = 0, in or out = 0, or an entry outside [-1, n) (naming it); HX_ENOMEM. */
hx_status f3d_spc_cost_count(f3d_spc_cost *c, const int32_t *nbr, uint32_t n, uint32_t K, size_t in, size_t out,
                             uint32_t tile, hx_err *err);

/* max(flops / (tflops * 1e12), bytes / (gbs * 1e9)) in ms; *bound (may be NULL) gets "FLOPs" or "bytes". NaN when
 * a ceiling is not finite and > 0 or a count is not finite and >= 0. */
double f3d_spc_roofline_ms(double flops, double bytes, double tflops, double gbs, const char **bound);

/* The sub-problem of sampled output rows: rows [0, S) of m are the outputs sel[0..S) of the full map (their map rows
 * with every neighbour renumbered), rows [S, m.n) hold the distinct input rows those name, in first-seen order, and
 * have no neighbours. src[r] is the full problem's row whose features sub row r holds (UINT32_MAX for r < S: no input
 * features are read there, zeros will do). spc_conv_cpu on it gives, in rows [0, S), exactly what it gives for rows
 * sel[] of the full problem (the same operations in the same order). m.k, m.K, m.pairs and m.opairs are set, m.rule
 * is NULL. HX_EINVAL for k not 3 or 5, S = 0, a sel entry >= n or a map entry outside [-1, n); HX_ENOMEM. */
typedef struct f3d_spc_sample {
  spc_map m;     /* host map of the sub-problem (m.nbr malloc'd) */
  uint32_t *src; /* [m.n] */
  uint32_t S;
} f3d_spc_sample;
hx_status f3d_spc_sample_map(f3d_spc_sample *s, const int32_t *nbr, uint32_t n, uint32_t k, const uint32_t *sel,
                             uint32_t S, hx_err *err);
void f3d_spc_sample_free(f3d_spc_sample *s);

/* The stage (pipe_spconv.c): on the run's largest size only (ctx->c.n_points >= ctx->max_points), with a GPU, the
 * case's level-0 voxels at ctx->c.voxel (PTv3's grid coordinates), one k = 3 map with its pair counts, random
 * features and weights in ctx->dtype from the sweep seed, for C = 64 and 256 (in = out = C): every convolution variant
 * that takes the shape (v0, v1, v3-v8), each checked on sampled rows against spc_conv_cpu with poisoned outputs, then
 * timed. Rows under (pipeline, "spconv.k3_C<C>", variant): check (bool), check_rows (count), check_err_over_tol
 * (ratio: the worst |gpu - ref| / tolerance over the sampled values) and check_err (abs: the worst |gpu - ref|), both
 * for a variant that passed, the time rows with flops/tflops and bytes/bandwidth
 * (the roofline's FLOPs and bytes, declared by the closure), pairs (count), halo (ratio), map_bytes (B),
 * tile_rows (count), best_entry (1 on the variant spc_variant_main picks), and with the run's ceilings in its
 * context roofline_ms (ms) and roofline_share (ratio: roofline_ms / the measured median). Nothing without a GPU. */
hx_status f3d_spconv_stage(f3d_ctx *ctx, const char *pipeline, hx_err *err);

#endif /* F3D_APP_PIPE_SPCONV_H */
