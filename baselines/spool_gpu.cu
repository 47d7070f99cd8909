/*
 * spool_gpu.cu - CUDA serialized pooling (stride 2), same results as spool.c.
 *
 * PTv3 runs torch.unique (a sort) over code[0] >> 3. Here the row-0 order from the serialization already
 * sorts code[0], and code >> 3 is monotone in code, so walking positions j = 0..n-1 of order[0] visits the
 * clusters in ascending order with their children contiguous: a flag at every change of code >> 3, an
 * inclusive scan of the flags gives the cluster of each position, and no sort is needed. Then 8 lanes per
 * cluster reduce its <= 8 children (max of features, mean of coordinates, smallest child index = head).
 * The pooled rows need no sort either: pooled row r's codes are parent row perm[r]'s codes >> 3, and a
 * pooled voxel's code is its own (codes are injective), so walking parent row perm[r] in its order, the
 * changes of code >> 3 meet every pooled point once, in ascending pooled code: a flag at each change over
 * all R rows at once, one inclusive scan (row r holds exactly m flags, so a flag's scan value - 1 is its place
 * in the row-major [R, m] order), and the flagged positions write their child's cluster. This replaced a CUB
 * radix sort of the R rows (sfc_sort_gpu; 78 onesweep launches, ~0.9 ms in a 600k PTv3 forward on an H200).
 * The orders are then inverted.
 * spool_gpu reads the pooled size back (one host synchronisation); spool_gpu_sized takes it from the caller
 * (what spool_gpu returned for the same input) and launches the same work without synchronising.
 */
#include <cub/cub.cuh>

#include <float.h>

#include "baselines/gpu_util.cuh"

static __global__ void k_pool_flags(uint32_t *flag, const uint64_t *code0, const uint32_t *order0, size_t n) {
  const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  flag[j] = j == 0 || (code0[order0[j]] >> 3) != (code0[order0[j - 1]] >> 3);
}

static __global__ void k_pool_scatter(uint32_t *cluster, uint32_t *idx_ptr, const uint32_t *seg,
                                      const uint32_t *order0, size_t n) {
  const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const uint32_t k = seg[j] - 1;
  cluster[order0[j]] = k;
  if (j == 0 || seg[j - 1] != seg[j]) idx_ptr[k] = (uint32_t)j;
  if (j == n - 1) idx_ptr[k + 1] = (uint32_t)n;
}

typedef struct pool_params {
  size_t n, m, C;
  int R, perm[SFC_MAX_ORDERS];
} pool_params;

/* p.perm[r] without indexing the parameter array by a register (that costs a local copy) */
static __device__ __forceinline__ int perm_at(const pool_params &p, size_t r) {
  int src = p.perm[0];
#pragma unroll
  for (int q = 1; q < SFC_MAX_ORDERS; q++)
    if (r == (size_t)q) src = p.perm[q];
  return src;
}

/* One group of 8 lanes a cluster, 4 clusters a warp: lane q holds child j0 + q (injective codes give at most 8
 * children; a longer cluster, from codes that are not, is walked in chunks of 8), so the children's order entries,
 * coordinates and rows are loaded at once rather than one dependent load after another (a warp a cluster walking
 * them in turn took 112 us for 600k -> 315k rows on an H200). The coordinates' double sums still run child by child
 * in position order, as spool_cpu's; the features' max is exact in any order. Every lane runs every shuffle. */
static __global__ void k_pool_reduce(spool_out o, spool_in in, pool_params p) {
  const size_t k = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 3;
  const uint32_t lane = threadIdx.x & 31, q = lane & 7, base = lane & 24u;
  const bool live = k < p.m;
  const uint32_t j0 = live ? o.idx_ptr[k] : 0u, j1 = live ? o.idx_ptr[k + 1] : 0u;
  const uint32_t cnt = j1 - j0;
  const uint32_t chunks = __reduce_max_sync(0xFFFFFFFFu, (cnt + 7u) >> 3);
  uint32_t head = UINT32_MAX, mine = 0;
  double s = 0.0; /* lane q < 3: coordinate q's sum */
  for (uint32_t c = 0; c < chunks; c++) {
    const uint32_t j = j0 + 8u * c + q;
    float x = 0.0f, y = 0.0f, z = 0.0f;
    if (j < j1) {
      const uint32_t r = in.order[j];
      if (c == 0) mine = r;
      head = min(head, r);
      x = in.coord[(size_t)r * 3], y = in.coord[(size_t)r * 3 + 1], z = in.coord[(size_t)r * 3 + 2];
    }
#pragma unroll
    for (uint32_t i = 0; i < 8; i++) {
      const float vx = __shfl_sync(0xFFFFFFFFu, x, (int)(base + i)), vy = __shfl_sync(0xFFFFFFFFu, y, (int)(base + i)),
                  vz = __shfl_sync(0xFFFFFFFFu, z, (int)(base + i));
      if (q < 3 && j0 + 8u * c + i < j1) s += (double)(q == 0 ? vx : q == 1 ? vy : vz);
    }
  }
#pragma unroll
  for (int d = 4; d >= 1; d >>= 1) head = min(head, __shfl_xor_sync(0xFFFFFFFFu, head, d));
  uint32_t kid[8]; /* the first 8 children's rows, in every lane of the group */
#pragma unroll
  for (uint32_t i = 0; i < 8; i++) kid[i] = __shfl_sync(0xFFFFFFFFu, mine, (int)(base + i));
  if (!live) return;
  if (in.feat)
    for (size_t f = q; f < p.C; f += 8) {
      float mx = -FLT_MAX;
#pragma unroll
      for (uint32_t i = 0; i < 8; i++)
        if (i < cnt) mx = fmaxf(mx, in.feat[(size_t)kid[i] * p.C + f]);
      for (uint32_t j = j0 + 8u; j < j1; j++) mx = fmaxf(mx, in.feat[(size_t)in.order[j] * p.C + f]); /* past 8 */
      o.feat[k * p.C + f] = mx;
    }
  if (q < 3) {
    o.coord[k * 3 + q] = (float)(s / (double)cnt);
    o.grid[k * 3 + q] = in.grid[(size_t)head * 3 + q] >> 1;
  }
  if (q == 0) {
    o.head[k] = head;
    o.batch[k] = in.batch[head];
  }
  if (q < (uint32_t)p.R) o.code[q * p.m + k] = in.code[(size_t)perm_at(p, q) * p.n + head] >> 3;
}

/* t over R rows of n: position j of parent row perm[r]; flag at j == 0 or a change of code >> 3 there. */
static __global__ void k_order_flags(uint32_t *flag, const uint64_t *code, const uint32_t *order, pool_params p) {
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)p.R * p.n) return;
  const size_t r = t / p.n, j = t - r * p.n;
  const int src = perm_at(p, r);
  const uint64_t *c = code + (size_t)src * p.n;
  const uint32_t *o = order + (size_t)src * p.n;
  flag[t] = j == 0 || (c[o[j]] >> 3) != (c[o[j - 1]] >> 3);
}

/* Flagged positions write their child's cluster at their place in pooled row r. Places outside row r and
 * clusters >= m, which only order rows that are not sorted or a wrong n_out (spool_gpu_sized) give, are
 * dropped: the orders, zeroed first, then hold wrong but in-range values, so the inverse stays in bounds. */
static __global__ void k_order_scatter(uint32_t *out_order, const uint32_t *flag, const uint32_t *seg,
                                       const uint32_t *order, const uint32_t *cluster, pool_params p) {
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)p.R * p.n || !flag[t]) return;
  const size_t r = t / p.n, j = t - r * p.n, at = (size_t)seg[t] - 1;
  const int src = perm_at(p, r);
  const uint32_t k = cluster[order[(size_t)src * p.n + j]];
  if (at >= r * p.m && at < (r + 1) * p.m && k < p.m) out_order[at] = k;
}

/* known_m = 0: read the pooled size back (one stream synchronisation); else trust it (spool_gpu_sized). */
static hx_status spool_run(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                           size_t known_m, cudaStream_t stream) {
  const size_t n = in->n;
  if (n == 0 || n > (size_t)INT_MAX || in->depth < 1 || in->R < 1 || in->R > SFC_MAX_ORDERS) return HX_EINVAL;
  if (known_m > n) return HX_EINVAL;
  for (int r = 0; r < in->R; r++)
    if (in->perm[r] < 0 || in->perm[r] >= in->R) return HX_EINVAL;
  const size_t Rn = (size_t)in->R * n; /* the pooled orders' flags cover R rows; the clusters' use row 0 */
  if (Rn > (size_t)INT_MAX) return HX_EINVAL;
  bl_carve c = {(char *)d_scratch, 0};
  uint32_t *flag = (uint32_t *)bl_take(&c, Rn * sizeof(uint32_t));
  uint32_t *seg = (uint32_t *)bl_take(&c, Rn * sizeof(uint32_t));
  size_t scan_temp = 0, scan_temp_n = 0;
  BL_CUDA(cub::DeviceScan::InclusiveSum(NULL, scan_temp, flag, seg, (int)Rn, stream));
  BL_CUDA(cub::DeviceScan::InclusiveSum(NULL, scan_temp_n, flag, seg, (int)n, stream));
  if (scan_temp_n > scan_temp) scan_temp = scan_temp_n;
  void *scan_scratch = bl_take(&c, scan_temp);
  hx_status sst;
  if (bl_scratch_answer(d_scratch, &c, scratch_bytes, &sst)) return sst;
  k_pool_flags<<<bl_blocks(n, 256), 256, 0, stream>>>(flag, in->code, in->order, n);
  BL_LAUNCHED("k_pool_flags");
  BL_CUDA(cub::DeviceScan::InclusiveSum(scan_scratch, scan_temp, flag, seg, (int)n, stream));
  uint32_t m32 = (uint32_t)known_m;
  if (!known_m) {
    BL_CUDA(cudaMemcpyAsync(&m32, seg + n - 1, sizeof m32, cudaMemcpyDeviceToHost, stream));
    BL_CUDA(cudaStreamSynchronize(stream)); /* the pooled size is data dependent (torch.unique syncs too) */
  }
  const size_t m = m32;
  k_pool_scatter<<<bl_blocks(n, 256), 256, 0, stream>>>(out->cluster, out->idx_ptr, seg, in->order, n);
  BL_LAUNCHED("k_pool_scatter");
  pool_params p = {n, m, in->C, in->R, {0, 0, 0, 0}};
  for (int r = 0; r < in->R; r++) p.perm[r] = in->perm[r];
  k_pool_reduce<<<bl_blocks(m * 8, 256), 256, 0, stream>>>(*out, *in, p);
  BL_LAUNCHED("k_pool_reduce");
  /* the clusters are known: flag and seg are free for the pooled orders */
  BL_CUDA(cudaMemsetAsync(out->order, 0, (size_t)in->R * m * sizeof(uint32_t), stream));
  k_order_flags<<<bl_blocks(Rn, 256), 256, 0, stream>>>(flag, in->code, in->order, p);
  BL_LAUNCHED("k_order_flags");
  BL_CUDA(cub::DeviceScan::InclusiveSum(scan_scratch, scan_temp, flag, seg, (int)Rn, stream));
  k_order_scatter<<<bl_blocks(Rn, 256), 256, 0, stream>>>(out->order, flag, seg, in->order, out->cluster, p);
  BL_LAUNCHED("k_order_scatter");
  HX_TRY(sfc_inverse_gpu(out->inverse, out->order, m, in->R, stream));
  out->n_out = m;
  out->depth = in->depth - 1;
  return HX_OK;
}

extern "C" hx_status spool_gpu(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                               cudaStream_t stream) {
  return spool_run(out, d_scratch, scratch_bytes, in, 0, stream);
}

extern "C" hx_status spool_gpu_sized(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                                     size_t n_out, cudaStream_t stream) {
  if (n_out == 0) return HX_EINVAL;
  return spool_run(out, d_scratch, scratch_bytes, in, n_out, stream);
}
