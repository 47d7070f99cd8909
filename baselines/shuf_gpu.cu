/*
 * shuf_gpu.cu - CUDA global shuffle: PTv3 patch padding (pad, unpad, cu_seqlens), index composition and
 * the row gathers before/after attention. Bit-exact against shuf.c (gathers move bits).
 *
 * Gather variants (shuf_gather_variants), out[r] = in[idx[r]] with rows of width 2-byte elements:
 *   v0 elementwise     one thread per element, 2-byte loads (the shape of torch's index_select)
 *   v1 warp-row-16B    one warp per row, 16-byte loads and stores
 *   v2 group-16B       a group of G = pow2_floor(row chunks) <= 32 threads per row, each thread keeps up to
 *                      4 16-byte loads in flight before storing (memory-level parallelism)
 *   v3 group-16B-cs    v2 with streaming (evict-first) loads of the source, which is read once here
 * Napkin math: a gather moves 2*rows*row_bytes (+4 bytes/row of index), so C=256 qkv at 600k rows is
 * 600k*1536*2 = 1.84 GB; at ~3 TB/s that is ~0.6 ms.
 */
#include "baselines/gpu_util.cuh"
#include "baselines/variants_internal.h"

/* ---- padding -------------------------------------------------------------------------------------- */

typedef struct pad_params {
  uint32_t off[SFC_MAX_CLOUDS + 1];  /* point offsets */
  uint32_t offp[SFC_MAX_CLOUDS + 1]; /* slot offsets */
  uint32_t cub[SFC_MAX_CLOUDS + 1];  /* first cu_seqlens entry of each cloud */
  uint32_t B, K, n, sum_p, n_cu;
} pad_params;

static __device__ uint32_t find_le(const uint32_t *a, uint32_t B, uint32_t v) {
  uint32_t lo = 0, hi = B - 1; /* largest b < B with a[b] <= v (a non-decreasing) */
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (a[mid] <= v) lo = mid; else hi = mid - 1;
  }
  return lo;
}

static __global__ void k_padding(uint32_t *pad, uint32_t *unpad, int32_t *cu, pad_params p) {
  hx_pdl_wait();
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (pad && t < p.sum_p) {
    /* a cloud with zero slots has offp[b] == offp[b+1]; the largest b with offp[b] <= t is non-empty */
    const uint32_t b = find_le(p.offp, p.B, t);
    const uint32_t nb = p.off[b + 1] - p.off[b], pb = p.offp[b + 1] - p.offp[b];
    uint32_t s = t - p.offp[b] + p.off[b];
    if (pb != nb && t >= p.offp[b + 1] - p.K + nb % p.K) s -= p.K;
    pad[t] = s;
  }
  if (unpad && t < p.n) {
    const uint32_t b = find_le(p.off, p.B, t);
    unpad[t] = t + p.offp[b] - p.off[b];
  }
  if (cu && t < p.n_cu) {
    if (t == p.n_cu - 1) {
      cu[t] = (int32_t)p.sum_p;
    } else {
      const uint32_t b = find_le(p.cub, p.B, t);
      cu[t] = (int32_t)(p.offp[b] + (t - p.cub[b]) * p.K);
    }
  }
}

extern "C" hx_status shuf_padding_gpu(uint32_t *d_pad, uint32_t *d_unpad, int32_t *d_cu_seqlens, const size_t *offset,
                                      uint32_t B, uint32_t K, cudaStream_t stream) {
  if (B == 0 || B > SFC_MAX_CLOUDS || K == 0) return HX_EINVAL;
  size_t sum_p = 0, n_cu = 0;
  HX_TRY(shuf_pad_sizes(&sum_p, &n_cu, offset, B, K, NULL));
  if (offset[B] > UINT32_MAX / 2) return HX_EINVAL;
  pad_params p;
  memset(&p, 0, sizeof p);
  uint32_t offp = 0, cub = 0;
  for (uint32_t b = 0; b < B; b++) {
    const uint32_t nb = (uint32_t)(offset[b + 1] - offset[b]);
    const uint32_t pb = nb > K ? (nb + K - 1) / K * K : nb;
    p.off[b] = (uint32_t)offset[b];
    p.offp[b] = offp;
    p.cub[b] = cub;
    offp += pb;
    cub += (pb + K - 1) / K;
  }
  p.off[B] = (uint32_t)offset[B];
  p.offp[B] = offp;
  p.cub[B] = cub;
  /* An empty cloud repeats the next start; "largest b with a[b] <= v" then picks the owner. */
  p.B = B;
  p.K = K;
  p.n = (uint32_t)offset[B];
  p.sum_p = (uint32_t)sum_p;
  p.n_cu = (uint32_t)n_cu;
  size_t work = sum_p > p.n ? sum_p : p.n;
  if (n_cu > work) work = n_cu;
  hx_launch(k_padding, bl_blocks(work, 256), 256, 0, stream, d_pad, d_unpad, d_cu_seqlens, p);
  BL_LAUNCHED("k_padding");
  return HX_OK;
}

static __global__ void k_compose(uint32_t *order_p, uint32_t *inverse_p, const uint32_t *order_row,
                                 const uint32_t *inverse_row, const uint32_t *pad, const uint32_t *unpad, size_t n,
                                 size_t sum_p) {
  hx_pdl_wait();
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (order_p && t < sum_p) order_p[t] = order_row[pad[t]];
  if (inverse_p && t < n) inverse_p[t] = unpad[inverse_row[t]];
}

extern "C" hx_status shuf_compose_gpu(uint32_t *d_order_p, uint32_t *d_inverse_p, const uint32_t *d_order_row,
                                      const uint32_t *d_inverse_row, const uint32_t *d_pad, const uint32_t *d_unpad,
                                      size_t n, size_t sum_p, cudaStream_t stream) {
  const size_t work = sum_p > n ? sum_p : n;
  if (work == 0) return HX_OK;
  hx_launch(k_compose, bl_blocks(work, 256), 256, 0, stream, d_order_p, d_inverse_p, d_order_row, d_inverse_row, d_pad,
            d_unpad, n, sum_p);
  BL_LAUNCHED("k_compose");
  return HX_OK;
}

/* ---- gathers -------------------------------------------------------------------------------------- */

/* A planted slowdown for the regression gate's proof (lab/harness/gate-proof.sh), never in a normal build:
 * meson -Dplant_delay_pct=N passes SHUF_PLANT_DELAY_PCT=N to this library (0 by default: the #if below compiles
 * nothing, and the grid is the plain one). v3 (group-16B-cs, the main path's gather of 384 B rows: ptv3's
 * gather_qkv_C64) then runs ceil(rows x N / 100) extra rows in the same launch, redoing the first rows (the same
 * values to the same places), so the memory-bound kernel moves ~N% more bytes; an extra launch instead would add a
 * fixed cost that does not scale with the kernel. */
#ifndef SHUF_PLANT_DELAY_PCT
#define SHUF_PLANT_DELAY_PCT 0
#endif
static __host__ __device__ inline size_t shuf_plant_rows(size_t rows) {
  return (rows * (size_t)SHUF_PLANT_DELAY_PCT + 99) / 100;
}

static __global__ void k_gather_elem(uint16_t *out, const uint16_t *in, const uint32_t *idx, size_t rows,
                                     size_t width) {
  hx_pdl_wait();
  const size_t total = rows * width;
  for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (size_t)gridDim.x * blockDim.x) {
    const size_t r = t / width, c = t - r * width;
    out[t] = in[(size_t)idx[r] * width + c];
  }
}

static __global__ void k_gather_warp(uint4 *out, const uint4 *in, const uint32_t *idx, size_t rows, uint32_t chunks) {
  hx_pdl_wait();
  const size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint32_t lane = threadIdx.x & 31;
  if (r >= rows) return;
  const size_t src = (size_t)idx[r] * chunks, dst = r * chunks;
  for (uint32_t c = lane; c < chunks; c += 32) out[dst + c] = in[src + c];
}

template <int G, bool STREAM>
static __global__ void k_gather_group(uint4 *out, const uint4 *in, const uint32_t *idx, size_t rows,
                                      uint32_t chunks) {
  hx_pdl_wait();
  size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / G;
  const uint32_t lane = threadIdx.x % G;
#if SHUF_PLANT_DELAY_PCT > 0
  if (STREAM && r >= rows && r < rows + shuf_plant_rows(rows)) r -= rows; /* the planted extra rows */
#endif
  if (r >= rows) return;
  const size_t src = (size_t)idx[r] * chunks, dst = r * chunks;
  for (uint32_t c0 = lane; c0 < chunks; c0 += 4 * G) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t c = c0 + (uint32_t)u * G;
      if (c < chunks) v[u] = STREAM ? __ldcs(in + src + c) : __ldg(in + src + c);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t c = c0 + (uint32_t)u * G;
      if (c < chunks) out[dst + c] = v[u];
    }
  }
}

static hx_status check_vec(const void *d_out, const void *d_in, size_t width, uint32_t *chunks) {
  if ((width * 2) % 16 != 0 || ((uintptr_t)d_out | (uintptr_t)d_in) % 16 != 0) return HX_EUNSUPPORTED;
  if (width * 2 / 16 > UINT32_MAX) return HX_EINVAL;
  *chunks = (uint32_t)(width * 2 / 16);
  return HX_OK;
}

static hx_status gather_v0(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                           shuf_dtype dt, cudaStream_t stream) {
  (void)dt;
  if (rows == 0 || width == 0) return HX_OK;
  size_t blocks = (rows * width + 255) / 256;
  if (blocks > 65535u * 32u) blocks = 65535u * 32u;
  hx_launch(k_gather_elem, (unsigned)blocks, 256, 0, stream, (uint16_t *)d_out, (const uint16_t *)d_in, d_idx, rows,
            width);
  BL_LAUNCHED("k_gather_elem");
  return HX_OK;
}

static hx_status gather_v1(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                           shuf_dtype dt, cudaStream_t stream) {
  (void)dt;
  uint32_t chunks;
  HX_TRY(check_vec(d_out, d_in, width, &chunks));
  if (rows == 0 || chunks == 0) return HX_OK;
  hx_launch(k_gather_warp, bl_blocks(rows * 32, 256), 256, 0, stream, (uint4 *)d_out, (const uint4 *)d_in, d_idx, rows,
            chunks);
  BL_LAUNCHED("k_gather_warp");
  return HX_OK;
}

template <bool STREAM>
static hx_status gather_group(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                              cudaStream_t stream) {
  uint32_t chunks;
  HX_TRY(check_vec(d_out, d_in, width, &chunks));
  if (rows == 0 || chunks == 0) return HX_OK;
  uint4 *o = (uint4 *)d_out;
  const uint4 *i = (const uint4 *)d_in;
  const size_t grid_rows = rows + (STREAM ? shuf_plant_rows(rows) : 0); /* rows but in a planted build */
#define BL_GROUP(G)                                                                                   \
  if (chunks >= (G) || (G) == 1) {                                                                    \
    hx_launch(k_gather_group<G, STREAM>, bl_blocks(grid_rows * (G), 256), 256, 0, stream, o, i, d_idx, rows, chunks); \
    BL_LAUNCHED("k_gather_group");                                                                    \
    return HX_OK;                                                                                     \
  }
  BL_GROUP(32)
  BL_GROUP(16)
  BL_GROUP(8)
  BL_GROUP(4)
  BL_GROUP(2)
  BL_GROUP(1)
#undef BL_GROUP
  return HX_OK;
}

static hx_status gather_v2(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                           shuf_dtype dt, cudaStream_t stream) {
  (void)dt;
  return gather_group<false>(d_out, d_in, d_idx, rows, width, stream);
}

static hx_status gather_v3(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows, size_t width,
                           shuf_dtype dt, cudaStream_t stream) {
  (void)dt;
  return gather_group<true>(d_out, d_in, d_idx, rows, width, stream);
}

/* the table from the one list (variants_internal.h), which the CPU-only stub expands too */
#define SHUF_ROW(id, name, fn) {id, name, fn},
static const shuf_gather_variant shuf_gather_table[] = {SHUF_GATHER_VARIANT_LIST(SHUF_ROW)};
#undef SHUF_ROW

extern "C" int shuf_gather_variant_count(void) {
  return (int)(sizeof shuf_gather_table / sizeof shuf_gather_table[0]);
}
extern "C" const shuf_gather_variant *shuf_gather_variant_get(int i) {
  return i >= 0 && i < shuf_gather_variant_count() ? &shuf_gather_table[i] : NULL;
}
extern "C" const shuf_gather_variant *shuf_gather_variant_best(size_t width) {
  const int id = shuf_gather_best_id(width);
  for (int i = 0; i < shuf_gather_variant_count(); i++)
    if (shuf_gather_table[i].id == id) return &shuf_gather_table[i];
  return NULL;
}
