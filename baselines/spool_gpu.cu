/*
 * spool_gpu.cu - CUDA serialized pooling (stride 2), same results as spool.c.
 *
 * PTv3 runs torch.unique (a sort) over code[0] >> 3. Here the row-0 order from the serialization already
 * sorts code[0], and code >> 3 is monotone in code, so walking positions j = 0..n-1 of order[0] visits the
 * clusters in ascending order with their children contiguous: a flag at every change of code >> 3, an
 * inclusive scan of the flags gives the cluster of each position, and no sort is needed. Then one warp per
 * cluster reduces its <= 8 children (max of features, mean of coordinates, smallest child index = head)
 * and the R rows of head codes >> 3 are sorted again with CUB (sfc_sort_gpu) and inverted.
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

static __global__ void k_pool_reduce(spool_out o, spool_in in, pool_params p) {
  const size_t k = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint32_t lane = threadIdx.x & 31;
  if (k >= p.m) return;
  const uint32_t j0 = o.idx_ptr[k], j1 = o.idx_ptr[k + 1];
  uint32_t head = UINT32_MAX;
  for (uint32_t j = j0 + lane; j < j1; j += 32) head = min(head, in.order[j]);
  head = __reduce_min_sync(0xFFFFFFFFu, head);
  for (size_t f = lane; f < p.C; f += 32) {
    float mx = -FLT_MAX;
    for (uint32_t j = j0; j < j1; j++) mx = fmaxf(mx, in.feat[(size_t)in.order[j] * p.C + f]);
    o.feat[k * p.C + f] = mx;
  }
  if (lane < 3) {
    double s = 0.0;
    for (uint32_t j = j0; j < j1; j++) s += (double)in.coord[(size_t)in.order[j] * 3 + lane];
    o.coord[k * 3 + lane] = (float)(s / (double)(j1 - j0));
    o.grid[k * 3 + lane] = in.grid[(size_t)head * 3 + lane] >> 1;
  }
  if (lane == 0) {
    o.head[k] = head;
    o.batch[k] = in.batch[head];
  }
  /* select perm[lane] without indexing the parameter array by a register (that costs a local copy) */
  int src = p.perm[0];
#pragma unroll
  for (int r = 1; r < SFC_MAX_ORDERS; r++)
    if (lane == (uint32_t)r) src = p.perm[r];
  if (lane < (uint32_t)p.R) o.code[lane * p.m + k] = in.code[(size_t)src * p.n + head] >> 3;
}

/* known_m = 0: read the pooled size back (one stream synchronisation); else trust it (spool_gpu_sized). */
static hx_status spool_run(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                           size_t known_m, cudaStream_t stream) {
  const size_t n = in->n;
  if (n == 0 || n > (size_t)INT_MAX || in->depth < 1 || in->R < 1 || in->R > SFC_MAX_ORDERS) return HX_EINVAL;
  if (known_m > n) return HX_EINVAL;
  for (int r = 0; r < in->R; r++)
    if (in->perm[r] < 0 || in->perm[r] >= in->R) return HX_EINVAL;
  const int kb = sfc_key_bits(in->depth - 1, in->B);
  bl_carve c = {(char *)d_scratch, 0};
  uint32_t *flag = (uint32_t *)bl_take(&c, n * sizeof(uint32_t));
  uint32_t *seg = (uint32_t *)bl_take(&c, n * sizeof(uint32_t));
  size_t scan_temp = 0, sort_temp = 0;
  BL_CUDA(cub::DeviceScan::InclusiveSum(NULL, scan_temp, flag, seg, (int)n, stream));
  /* n_out <= n, so scratch sized for n covers the re-sort of the pooled rows */
  HX_TRY(sfc_sort_gpu(out->order, NULL, &sort_temp, out->code, n, in->R, kb, stream));
  void *scan_scratch = bl_take(&c, scan_temp);
  void *sort_scratch = bl_take(&c, sort_temp);
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
  k_pool_reduce<<<bl_blocks(m * 32, 256), 256, 0, stream>>>(*out, *in, p);
  BL_LAUNCHED("k_pool_reduce");
  HX_TRY(sfc_sort_gpu(out->order, sort_scratch, &sort_temp, out->code, m, in->R, kb, stream));
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
