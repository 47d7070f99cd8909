/*
 * sfc_gpu.cu - CUDA serialization: grid coordinates, curve encode, per-row sort, inverse, and the whole
 * 4-order serialization as registered variants. Bit-exact against sfc.c (the tests check every variant).
 *
 * Variants of the whole serialization (sfc_serial_variants):
 *   v0 cub-per-order   one encode launch per order, CUB SortPairs per row on 64-bit keys restricted to the
 *                      bits in use, inverse scatter                       (PTv3's structure, done right)
 *   v1 fused-narrow    one encode launch for all rows that also writes the sort keys, 32-bit keys when
 *                      3*depth + batch bits <= 32, CUB per row, inverse scatter
 *   v2 fused-rowpacked one encode launch writing keys row << key_bits | code, ONE CUB sort of R*n pairs
 *                      (32-bit keys when the packed key fits), values land directly in d_order
 * Invariant: after any variant, d_order row r is the stable argsort of d_code row r (CUB's radix sort is
 * stable and values start as the point index), identical to sfc_sort_cpu.
 */
#include <cub/cub.cuh>

#include "baselines/gpu_util.cuh"
#include "baselines/variants_internal.h"

/* ---- grid coordinates --------------------------------------------------------------------------- */

typedef struct grid_params {
  unsigned long long off[SFC_MAX_CLOUDS + 1];
  uint32_t B;
  double g;
} grid_params;

static __device__ uint32_t cloud_of(const grid_params &p, size_t i) {
  uint32_t lo = 0, hi = p.B - 1; /* largest b with off[b] <= i */
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (p.off[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

static __global__ void k_grid_init(long long *mins, uint32_t *maxc, uint32_t B) {
  const uint32_t t = threadIdx.x;
  for (uint32_t k = t; k < 3 * B; k += blockDim.x) mins[k] = LLONG_MAX;
  if (t == 0) *maxc = 0;
}

/* Per-cloud minimum of the voxel coordinates. One atomicMin per axis per point on the same three words
 * serialises in L2 (1.8M contended atomics at 600k points measured 1.3 ms on an H200, 2026-11-21), so
 * each warp reduces first and warp 0 folds the block's warps: one atomic per axis per block and cloud
 * run. A warp that straddles a cloud boundary (rare: B-1 warps at most) falls back to per-lane atomics.
 * Launched with GRID_MIN_THREADS threads per block. */
#define GRID_MIN_THREADS 256
static __global__ void __launch_bounds__(GRID_MIN_THREADS) k_grid_min(long long *mins, const float *xyz, size_t n,
                                                                      grid_params p) {
  __shared__ long long s_min[GRID_MIN_THREADS / 32][3];
  __shared__ uint32_t s_cloud[GRID_MIN_THREADS / 32];
  const uint32_t FULL = 0xFFFFFFFFu, NONE = 0xFFFFFFFFu;
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool live = i < n;
  const uint32_t b = live ? cloud_of(p, i) : NONE;
  long long v[3];
  for (int a = 0; a < 3; a++) v[a] = live ? (long long)floor((double)xyz[3 * i + a] / p.g) : LLONG_MAX;
  /* dead lanes sit at the tail, so lane 0 is live whenever any lane is */
  const uint32_t b0 = __shfl_sync(FULL, b, 0);
  const bool uniform = __all_sync(FULL, !live || b == b0);
  if (uniform) {
    for (int a = 0; a < 3; a++)
      for (int off = 16; off > 0; off >>= 1) v[a] = min(v[a], __shfl_xor_sync(FULL, v[a], off));
    if (lane == 0) {
      s_cloud[warp] = b0;
      for (int a = 0; a < 3; a++) s_min[warp][a] = v[a];
    }
  } else {
    if (live)
      for (int a = 0; a < 3; a++) atomicMin(&mins[3 * b + a], v[a]);
    if (lane == 0) s_cloud[warp] = NONE;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t cur = NONE;
    long long acc[3] = {LLONG_MAX, LLONG_MAX, LLONG_MAX};
    for (uint32_t w = 0; w < blockDim.x / 32; w++) {
      const uint32_t c = s_cloud[w];
      if (c == NONE) continue;
      if (c != cur) {
        if (cur != NONE)
          for (int a = 0; a < 3; a++) atomicMin(&mins[3 * cur + a], acc[a]);
        cur = c;
        for (int a = 0; a < 3; a++) acc[a] = s_min[w][a];
      } else {
        for (int a = 0; a < 3; a++) acc[a] = min(acc[a], s_min[w][a]);
      }
    }
    if (cur != NONE)
      for (int a = 0; a < 3; a++) atomicMin(&mins[3 * cur + a], acc[a]);
  }
}

static __global__ void k_grid_apply(uint32_t *grid, uint32_t *batch, uint32_t *maxc, const long long *mins,
                                    const float *xyz, size_t n, grid_params p) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t m = 0;
  if (i < n) {
    const uint32_t b = cloud_of(p, i);
    for (int a = 0; a < 3; a++) {
      const uint32_t g = (uint32_t)((long long)floor((double)xyz[3 * i + a] / p.g) - mins[3 * b + a]);
      grid[3 * i + a] = g;
      m = max(m, g);
    }
    if (batch) batch[i] = b;
  }
  m = __reduce_max_sync(0xFFFFFFFFu, m); /* one atomic per warp, not per point */
  if ((threadIdx.x & 31) == 0) atomicMax(maxc, m);
}

extern "C" hx_status sfc_grid_gpu(uint32_t *d_grid, uint32_t *d_batch, uint32_t *d_max_coord, void *d_scratch,
                                  size_t *scratch_bytes, const float *d_xyz, const size_t *offset, uint32_t B,
                                  double grid_size, cudaStream_t stream) {
  if (B == 0 || B > SFC_MAX_CLOUDS || !(grid_size > 0.0)) return HX_EINVAL;
  bl_carve c = {(char *)d_scratch, 0};
  long long *mins = (long long *)bl_take(&c, 3 * B * sizeof(long long));
  hx_status sst;
  if (bl_scratch_answer(d_scratch, &c, scratch_bytes, &sst)) return sst;
  grid_params p;
  memset(&p, 0, sizeof p);
  for (uint32_t b = 0; b <= B; b++) p.off[b] = offset[b];
  p.B = B;
  p.g = grid_size;
  const size_t n = offset[B];
  k_grid_init<<<1, 256, 0, stream>>>(mins, d_max_coord, B);
  BL_LAUNCHED("k_grid_init");
  if (n == 0) return HX_OK;
  k_grid_min<<<bl_blocks(n, GRID_MIN_THREADS), GRID_MIN_THREADS, 0, stream>>>(mins, d_xyz, n, p);
  BL_LAUNCHED("k_grid_min");
  k_grid_apply<<<bl_blocks(n, 256), 256, 0, stream>>>(d_grid, d_batch, d_max_coord, mins, d_xyz, n, p);
  BL_LAUNCHED("k_grid_apply");
  return HX_OK;
}

/* ---- encode ------------------------------------------------------------------------------------- */

typedef struct enc_params {
  int R;
  int depth;
  int key_bits; /* bits of one row's packed code (row packing shifts the row index above them) */
  int rowpack;
  int orders[SFC_MAX_ORDERS];
} enc_params;

/* code[r*n + i] for every row; keys (optional) get the sort key of the same element, vals the index. */
template <typename K>
static __global__ void k_encode(uint64_t *code, K *keys, uint32_t *vals, const uint32_t *grid,
                                const uint32_t *batch, size_t n, enc_params p) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t gx = grid[3 * i], gy = grid[3 * i + 1], gz = grid[3 * i + 2];
  const uint64_t bb = (batch ? (uint64_t)batch[i] : 0u) << (3 * p.depth);
#pragma unroll
  for (int r = 0; r < SFC_MAX_ORDERS; r++) {
    if (r >= p.R) break;
    const uint64_t c = bb | sfc_code_fast((sfc_order)p.orders[r], gx, gy, gz, p.depth);
    const size_t e = (size_t)r * n + i;
    code[e] = c;
    if (keys) keys[e] = (K)(p.rowpack ? ((uint64_t)r << p.key_bits | c) : c);
    if (vals && (p.rowpack || r == 0)) vals[e] = (uint32_t)i;
  }
}

static hx_status check_enc(size_t n, int depth, const sfc_order *orders, int R) {
  if (depth < 1 || depth > SFC_MAX_DEPTH || R < 1 || R > SFC_MAX_ORDERS || n > (size_t)INT_MAX / SFC_MAX_ORDERS)
    return HX_EINVAL;
  for (int r = 0; r < R; r++)
    if ((unsigned)orders[r] >= SFC_ORDER_COUNT) return HX_EINVAL;
  return HX_OK;
}

extern "C" hx_status sfc_encode_gpu(uint64_t *d_code, const uint32_t *d_grid, const uint32_t *d_batch, size_t n,
                                    int depth, const sfc_order *orders, int R, cudaStream_t stream) {
  HX_TRY(check_enc(n, depth, orders, R));
  if (n == 0) return HX_OK;
  enc_params p = {R, depth, 0, 0, {0, 0, 0, 0}};
  for (int r = 0; r < R; r++) p.orders[r] = (int)orders[r];
  k_encode<uint64_t><<<bl_blocks(n, 256), 256, 0, stream>>>(d_code, NULL, NULL, d_grid, d_batch, n, p);
  BL_LAUNCHED("k_encode");
  return HX_OK;
}

/* ---- sort and inverse --------------------------------------------------------------------------- */

static __global__ void k_iota(uint32_t *v, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = (uint32_t)i;
}

static __global__ void k_inverse(uint32_t *inv, const uint32_t *order, size_t n, int R) {
  const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n * (size_t)R) return;
  const size_t r = e / n, j = e - r * n;
  inv[r * n + order[e]] = (uint32_t)j;
}

extern "C" hx_status sfc_inverse_gpu(uint32_t *d_inverse, const uint32_t *d_order, size_t n, int R,
                                     cudaStream_t stream) {
  if (n == 0) return HX_OK;
  k_inverse<<<bl_blocks(n * (size_t)R, 256), 256, 0, stream>>>(d_inverse, d_order, n, R);
  BL_LAUNCHED("k_inverse");
  return HX_OK;
}

/* CUB SortPairs of each row of keys (row r at keys + r*n) with the shared values `vals` (0..n-1). */
template <typename K>
static hx_status sort_rows(uint32_t *d_order, void *d_scratch, size_t *scratch_bytes, const K *keys,
                           const uint32_t *vals, K *keys_out, size_t n, int R, int end_bit, cudaStream_t stream) {
  size_t temp = 0;
  BL_CUDA(cub::DeviceRadixSort::SortPairs(NULL, temp, keys, keys_out, vals, d_order, (int)n, 0, end_bit, stream));
  if (!d_scratch) {
    *scratch_bytes = temp;
    return HX_OK;
  }
  for (int r = 0; r < R; r++) {
    BL_CUDA(cub::DeviceRadixSort::SortPairs(d_scratch, temp, keys + (size_t)r * n, keys_out, vals,
                                            d_order + (size_t)r * n, (int)n, 0, end_bit, stream));
  }
  return HX_OK;
}

extern "C" hx_status sfc_sort_gpu(uint32_t *d_order, void *d_scratch, size_t *scratch_bytes, const uint64_t *d_code,
                                  size_t n, int R, int key_bits, cudaStream_t stream) {
  if (n > (size_t)INT_MAX || R < 1 || R > SFC_MAX_ORDERS || key_bits < 0 || key_bits > 64) return HX_EINVAL;
  if (key_bits == 0) key_bits = 1; /* one point, one cloud: CUB wants begin_bit < end_bit */
  bl_carve c = {(char *)d_scratch, 0};
  uint64_t *keys_out = (uint64_t *)bl_take(&c, n * sizeof(uint64_t));
  uint32_t *vals = (uint32_t *)bl_take(&c, n * sizeof(uint32_t));
  size_t temp = 0;
  HX_TRY(sort_rows<uint64_t>(d_order, NULL, &temp, d_code, vals, keys_out, n, R, key_bits, stream));
  void *cub_temp = bl_take(&c, temp);
  hx_status sst;
  if (bl_scratch_answer(d_scratch, &c, scratch_bytes, &sst)) return sst;
  if (n == 0) return HX_OK;
  k_iota<<<bl_blocks(n, 256), 256, 0, stream>>>(vals, n);
  BL_LAUNCHED("k_iota");
  return sort_rows<uint64_t>(d_order, cub_temp, &temp, d_code, vals, keys_out, n, R, key_bits, stream);
}

/* ---- dedup ---------------------------------------------------------------------------------------- */

static __global__ void k_dedup_keys(uint64_t *keys, uint32_t *vals, const uint32_t *grid, const uint32_t *batch,
                                    size_t n, int depth) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  keys[i] = (batch ? (uint64_t)batch[i] : 0u) << (3 * depth) |
            sfc_z_fast(grid[3 * i], grid[3 * i + 1], grid[3 * i + 2], depth);
  vals[i] = (uint32_t)i;
}

/* flag[i] = 1 for the first (smallest) index of every voxel: the head of each run of equal sorted keys,
 * because the radix sort is stable and the values start in index order. flag starts zeroed. */
static __global__ void k_dedup_heads(uint32_t *flag, const uint64_t *keys, const uint32_t *vals, size_t n) {
  const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  if (j == 0 || keys[j] != keys[j - 1]) flag[vals[j]] = 1u;
}

static __global__ void k_dedup_compact(uint32_t *keep, const uint32_t *flag, const uint32_t *pos, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && flag[i]) keep[pos[i]] = (uint32_t)i;
}

/* offs[b] = kept points before input offset[b] (exclusive scan value; offset[B] = n takes the total). */
static __global__ void k_dedup_offsets(uint32_t *offs, const uint32_t *flag, const uint32_t *pos, size_t n,
                                       grid_params p) {
  const uint32_t b = threadIdx.x;
  if (b > p.B) return;
  const size_t i = p.off[b];
  offs[b] = i < n ? pos[i] : pos[n - 1] + flag[n - 1];
}

extern "C" hx_status sfc_dedup_gpu(uint32_t *d_keep, size_t *offset_out, size_t *dropped, void *d_scratch,
                                   size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch,
                                   const size_t *offset, uint32_t B, int depth, cudaStream_t stream) {
  if (B == 0 || B > SFC_MAX_CLOUDS || depth < 1 || depth > SFC_MAX_DEPTH) return HX_EINVAL;
  const size_t n = offset[B];
  if (n == 0 || n > (size_t)INT_MAX) return HX_EINVAL;
  const int kb = sfc_key_bits(depth, B);
  bl_carve c = {(char *)d_scratch, 0};
  uint64_t *keys = (uint64_t *)bl_take(&c, n * 8), *keys_out = (uint64_t *)bl_take(&c, n * 8);
  uint32_t *vals = (uint32_t *)bl_take(&c, n * 4), *vals_out = (uint32_t *)bl_take(&c, n * 4);
  uint32_t *flag = (uint32_t *)bl_take(&c, n * 4), *pos = (uint32_t *)bl_take(&c, n * 4);
  uint32_t *offs = (uint32_t *)bl_take(&c, (SFC_MAX_CLOUDS + 1) * 4);
  size_t sort_temp = 0, scan_temp = 0;
  BL_CUDA(cub::DeviceRadixSort::SortPairs(NULL, sort_temp, keys, keys_out, vals, vals_out, (int)n, 0, kb, stream));
  BL_CUDA(cub::DeviceScan::ExclusiveSum(NULL, scan_temp, flag, pos, (int)n, stream));
  size_t temp = sort_temp > scan_temp ? sort_temp : scan_temp;
  void *cub_temp = bl_take(&c, temp);
  hx_status sst;
  if (bl_scratch_answer(d_scratch, &c, scratch_bytes, &sst)) return sst;
  grid_params p;
  memset(&p, 0, sizeof p);
  for (uint32_t b = 0; b <= B; b++) p.off[b] = offset[b];
  p.B = B;
  k_dedup_keys<<<bl_blocks(n, 256), 256, 0, stream>>>(keys, vals, d_grid, d_batch, n, depth);
  BL_LAUNCHED("k_dedup_keys");
  BL_CUDA(cub::DeviceRadixSort::SortPairs(cub_temp, sort_temp, keys, keys_out, vals, vals_out, (int)n, 0, kb, stream));
  BL_CUDA(cudaMemsetAsync(flag, 0, n * 4, stream));
  k_dedup_heads<<<bl_blocks(n, 256), 256, 0, stream>>>(flag, keys_out, vals_out, n);
  BL_LAUNCHED("k_dedup_heads");
  BL_CUDA(cub::DeviceScan::ExclusiveSum(cub_temp, scan_temp, flag, pos, (int)n, stream));
  k_dedup_compact<<<bl_blocks(n, 256), 256, 0, stream>>>(d_keep, flag, pos, n);
  BL_LAUNCHED("k_dedup_compact");
  k_dedup_offsets<<<1, SFC_MAX_CLOUDS + 1, 0, stream>>>(offs, flag, pos, n, p);
  BL_LAUNCHED("k_dedup_offsets");
  uint32_t h[SFC_MAX_CLOUDS + 1];
  BL_CUDA(cudaMemcpyAsync(h, offs, (B + 1) * 4, cudaMemcpyDeviceToHost, stream));
  BL_CUDA(cudaStreamSynchronize(stream)); /* the kept count is data dependent */
  for (uint32_t b = 0; b <= B; b++) offset_out[b] = h[b];
  if (dropped) *dropped = n - h[B];
  return HX_OK;
}

/* ---- host conveniences (tools) ------------------------------------------------------------------ */

/* Device buffers of one host call; freed on every path by host_free. */
typedef struct host_bufs {
  void *p[6];
} host_bufs;

static void host_free(host_bufs *h) {
  for (int i = 0; i < 6; i++)
    if (h->p[i]) cudaFree(h->p[i]);
}

static hx_status host_cuda(hx_err *err, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return HX_OK;
  return hx_errf(err, e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? HX_ENODEV : HX_ECUDA, "%s: %s",
                 what, cudaGetErrorString(e));
}

static hx_status grid_host(host_bufs *h, uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                           uint32_t B, double grid_size, hx_err *err) {
  if (B == 0 || B > SFC_MAX_CLOUDS) return hx_errf(err, HX_EINVAL, "GPU grid: %u clouds (1..%d)", B, SFC_MAX_CLOUDS);
  const size_t n = offset[B];
  size_t sb = 0;
  HX_TRY(sfc_grid_gpu(NULL, NULL, NULL, NULL, &sb, NULL, offset, B, grid_size, NULL));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[0], n * 12 + 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[1], n * 12 + 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[2], 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[3], sb), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMemcpy(h->p[0], xyz, n * 12, cudaMemcpyHostToDevice), "upload"));
  hx_status st = sfc_grid_gpu((uint32_t *)h->p[1], NULL, (uint32_t *)h->p[2], h->p[3], &sb, (const float *)h->p[0],
                              offset, B, grid_size, NULL);
  if (st != HX_OK) return hx_errf(err, st, "sfc_grid_gpu failed");
  HX_TRY(host_cuda(err, cudaMemcpy(grid, h->p[1], n * 12, cudaMemcpyDeviceToHost), "download"));
  uint32_t m = 0;
  HX_TRY(host_cuda(err, cudaMemcpy(&m, h->p[2], 4, cudaMemcpyDeviceToHost), "download"));
  if (max_coord) *max_coord = m;
  return HX_OK;
}

extern "C" hx_status sfc_grid_host_gpu(uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                                       uint32_t B, double grid_size, hx_err *err) {
  if (!(grid_size > 0.0)) return hx_errf(err, HX_EINVAL, "grid size %g: must be positive", grid_size);
  for (uint32_t b = 0; b < B; b++)
    if (offset[b + 1] <= offset[b]) return hx_errf(err, HX_EINVAL, "cloud %u is empty", b);
  host_bufs h = {{NULL, NULL, NULL, NULL, NULL, NULL}};
  const hx_status st = grid_host(&h, grid, max_coord, xyz, offset, B, grid_size, err);
  host_free(&h);
  return st;
}

static hx_status dedup_host(host_bufs *h, uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                            const size_t *offset, uint32_t B, int depth, hx_err *err) {
  const size_t n = offset[B];
  uint32_t *batch = (uint32_t *)malloc(n * 4 + 4);
  if (!batch) return hx_errf(err, HX_ENOMEM, "dedup: batch index");
  hx_status st = sfc_batch_index_cpu(batch, offset, B, err);
  size_t sb = 0;
  if (st == HX_OK) st = sfc_dedup_gpu(NULL, offset_out, dropped, NULL, &sb, NULL, NULL, offset, B, depth, NULL);
  if (st == HX_OK) st = host_cuda(err, cudaMalloc(&h->p[0], n * 12 + 16), "cudaMalloc");
  if (st == HX_OK) st = host_cuda(err, cudaMalloc(&h->p[1], n * 4 + 16), "cudaMalloc");
  if (st == HX_OK) st = host_cuda(err, cudaMalloc(&h->p[2], n * 4 + 16), "cudaMalloc");
  if (st == HX_OK) st = host_cuda(err, cudaMalloc(&h->p[3], sb), "cudaMalloc");
  if (st == HX_OK) st = host_cuda(err, cudaMemcpy(h->p[0], grid, n * 12, cudaMemcpyHostToDevice), "upload");
  if (st == HX_OK) st = host_cuda(err, cudaMemcpy(h->p[1], batch, n * 4, cudaMemcpyHostToDevice), "upload");
  free(batch);
  HX_TRY(st);
  st = sfc_dedup_gpu((uint32_t *)h->p[2], offset_out, dropped, h->p[3], &sb, (const uint32_t *)h->p[0],
                     (const uint32_t *)h->p[1], offset, B, depth, NULL);
  if (st != HX_OK) return hx_errf(err, st, "sfc_dedup_gpu failed");
  return host_cuda(err, cudaMemcpy(keep, h->p[2], offset_out[B] * 4, cudaMemcpyDeviceToHost), "download");
}

extern "C" hx_status sfc_dedup_host_gpu(uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                                        const size_t *offset, uint32_t B, int depth, hx_err *err) {
  if (B == 0 || B > SFC_MAX_CLOUDS) return hx_errf(err, HX_EINVAL, "GPU dedup: %u clouds (1..%d)", B, SFC_MAX_CLOUDS);
  for (uint32_t b = 0; b < B; b++)
    if (offset[b + 1] <= offset[b]) return hx_errf(err, HX_EINVAL, "cloud %u is empty", b);
  host_bufs h = {{NULL, NULL, NULL, NULL, NULL, NULL}};
  const hx_status st = dedup_host(&h, keep, offset_out, dropped, grid, offset, B, depth, err);
  host_free(&h);
  return st;
}

static hx_status encode_host(host_bufs *h, uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n,
                             int depth, const sfc_order *orders, int R, hx_err *err) {
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[0], n * 12 + 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[1], n * 4 + 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMalloc(&h->p[2], n * 8 * (size_t)R + 16), "cudaMalloc"));
  HX_TRY(host_cuda(err, cudaMemcpy(h->p[0], grid, n * 12, cudaMemcpyHostToDevice), "upload"));
  if (batch) HX_TRY(host_cuda(err, cudaMemcpy(h->p[1], batch, n * 4, cudaMemcpyHostToDevice), "upload"));
  const hx_status st = sfc_encode_gpu((uint64_t *)h->p[2], (const uint32_t *)h->p[0],
                                      batch ? (const uint32_t *)h->p[1] : NULL, n, depth, orders, R, NULL);
  if (st != HX_OK) return hx_errf(err, st, "sfc_encode_gpu failed (depth %d, %d orders)", depth, R);
  return host_cuda(err, cudaMemcpy(code, h->p[2], n * 8 * (size_t)R, cudaMemcpyDeviceToHost), "download");
}

extern "C" hx_status sfc_encode_host_gpu(uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n,
                                         int depth, const sfc_order *orders, int R, hx_err *err) {
  host_bufs h = {{NULL, NULL, NULL, NULL, NULL, NULL}};
  const hx_status st = encode_host(&h, code, grid, batch, n, depth, orders, R, err);
  host_free(&h);
  return st;
}

/* ---- whole-serialization variants ----------------------------------------------------------------- */

static hx_status check_args(const sfc_serial_args *a) {
  HX_TRY(check_enc(a->n, a->depth, a->orders, a->R));
  if (sfc_key_bits(a->depth, a->B) > 63 || a->B == 0) return HX_EINVAL;
  return HX_OK;
}

static hx_status serial_v0(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a, cudaStream_t stream) {
  HX_TRY(check_args(a));
  /* CUB's scratch grows with the number of radix passes: query with the bits the sort will use */
  const int kb = sfc_key_bits(a->depth, a->B);
  if (!d_scratch) return sfc_sort_gpu(a->d_order, NULL, scratch_bytes, a->d_code, a->n, a->R, kb, stream);
  if (a->n == 0) return HX_OK;
  for (int r = 0; r < a->R; r++)
    HX_TRY(sfc_encode_gpu(a->d_code + (size_t)r * a->n, a->d_grid, a->d_batch, a->n, a->depth, &a->orders[r], 1, stream));
  HX_TRY(sfc_sort_gpu(a->d_order, d_scratch, scratch_bytes, a->d_code, a->n, a->R, kb, stream));
  return sfc_inverse_gpu(a->d_inverse, a->d_order, a->n, a->R, stream);
}

/* v1 and v2 share this body: K is the key type, rowpack selects one sort over all rows. */
template <typename K>
static hx_status serial_fused(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a, int rowpack,
                              cudaStream_t stream) {
  const size_t n = a->n, R = (size_t)a->R;
  const int kb = sfc_key_bits(a->depth, a->B);
  const int end_bit = rowpack ? kb + sfc_bit_length(R - 1) : (kb == 0 ? 1 : kb);
  const size_t items = rowpack ? n * R : n; /* items of one CUB call */
  bl_carve c = {(char *)d_scratch, 0};
  K *keys = (K *)bl_take(&c, n * R * sizeof(K));
  K *keys_out = (K *)bl_take(&c, items * sizeof(K));
  uint32_t *vals = (uint32_t *)bl_take(&c, items * sizeof(uint32_t));
  size_t temp = 0;
  HX_TRY(sort_rows<K>(a->d_order, NULL, &temp, keys, vals, keys_out, items, 1, end_bit, stream));
  void *cub_temp = bl_take(&c, temp);
  hx_status sst;
  if (bl_scratch_answer(d_scratch, &c, scratch_bytes, &sst)) return sst;
  if (n == 0) return HX_OK;
  enc_params p = {a->R, a->depth, kb, rowpack, {0, 0, 0, 0}};
  for (int r = 0; r < a->R; r++) p.orders[r] = (int)a->orders[r];
  k_encode<K><<<bl_blocks(n, 256), 256, 0, stream>>>(a->d_code, keys, vals, a->d_grid, a->d_batch, n, p);
  BL_LAUNCHED("k_encode (fused)");
  HX_TRY(sort_rows<K>(a->d_order, cub_temp, &temp, keys, vals, keys_out, items, rowpack ? 1 : a->R, end_bit, stream));
  return sfc_inverse_gpu(a->d_inverse, a->d_order, n, a->R, stream);
}

static hx_status serial_v1(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a, cudaStream_t stream) {
  HX_TRY(check_args(a));
  if (sfc_key_bits(a->depth, a->B) <= 32) return serial_fused<uint32_t>(d_scratch, scratch_bytes, a, 0, stream);
  return serial_fused<uint64_t>(d_scratch, scratch_bytes, a, 0, stream);
}

static hx_status serial_v2(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a, cudaStream_t stream) {
  HX_TRY(check_args(a));
  if (sfc_key_bits(a->depth, a->B) + sfc_bit_length((uint64_t)a->R - 1) <= 32)
    return serial_fused<uint32_t>(d_scratch, scratch_bytes, a, 1, stream);
  return serial_fused<uint64_t>(d_scratch, scratch_bytes, a, 1, stream);
}

/* the table from the one list (variants_internal.h), which the CPU-only stub expands too */
#define SFC_ROW(id, name, fn) {id, name, fn},
static const sfc_serial_variant sfc_serial_table[] = {SFC_SERIAL_VARIANT_LIST(SFC_ROW)};
#undef SFC_ROW

extern "C" int sfc_serial_variant_count(void) { return (int)(sizeof sfc_serial_table / sizeof sfc_serial_table[0]); }
extern "C" const sfc_serial_variant *sfc_serial_variant_get(int i) {
  return i >= 0 && i < sfc_serial_variant_count() ? &sfc_serial_table[i] : NULL;
}
extern "C" const sfc_serial_variant *sfc_serial_variant_best(void) {
  for (int i = 0; i < sfc_serial_variant_count(); i++)
    if (sfc_serial_table[i].id == SFC_SERIAL_BEST_ID) return &sfc_serial_table[i];
  return NULL;
}
