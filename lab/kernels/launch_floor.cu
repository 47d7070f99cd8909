/* launch_floor.cu - the fixed costs under PSH v9/v10's whole-PSH time: what an empty launch of v10's shape costs
 * (one wave of 1024-thread blocks, one per SM but one, 177 KiB of dynamic shared memory, cooperative), what each
 * grid barrier adds, what reading the input (12 B per point into shared memory, as v10's phase 1) adds, and what
 * writing PSH's 28 B of outputs per point adds (coalesced: less than the real kernel's scattered stores cost), and
 * 20 B without the per-point (bucket, offset), as the sweep has run PSH since 8633e87.
 * A floor for kernels of this shape (cooperative-groups grid barriers, outputs written after the last one), not
 * for every design. Why (48bc18e, docs/psh.md): the ">= 20x over the serialization" target needs the whole PSH at
 * 600k in ~15.5 us; before this probe these parts were estimated from block stamps against graph times.
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o launch_floor lab/kernels/launch_floor.cu && ./launch_floor [n_points] [reps]
 * Cold: a memset of twice the L2 before every sample, outside the events, as psh_bench does (the sweep also
 * queues its samples behind a spinning hold kernel; here the flush gives the host time to queue the launch).
 * Hot: batches of 20 launches submitted back to back, per launch; for the shortest cases the host's submission
 * may set that pace. Median and min/max of reps event-timed samples, us. The SM clock is not recorded.
 * A dev probe: no CPU reference (it computes nothing); it checks its launches and the coordinates it moved. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                                      \
  do {                                                                                \
    const cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "launch_floor: %s: %s\n", #call, cudaGetErrorString(e_));      \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

namespace cg = cooperative_groups;

__global__ void k_empty() {}

/* kSync grid barriers; kLoad: the block's tile of xyz (tile points, 12 B each) into shared memory first, and
 * one word of it out (so the loads cannot be dropped); kWrite: after the barriers, the block's tile of PSH's
 * outputs, 28 B per point (bucket, offset, slot, perm: 4 B each; xyz_out: 12 B), all coalesced in input order;
 * kWords = 2: without the per-point (bucket, offset), which slot and the bucket table imply (20 B per point).
 * The real kernel scatters perm and xyz_out (runs of ~2 rows), so this is a lower bound on its stores. */
template <int kSync, bool kLoad, bool kWrite, int kWords = 4>
__global__ void __launch_bounds__(1024, 1) k_coop(const float *xyz, uint32_t n, uint32_t tile, float *out, uint32_t *w4,
                                                  float *xyz_out) {
  extern __shared__ float sm[];
  float acc = 0.f;
  const size_t lo = (size_t)blockIdx.x * tile, hi = lo + tile < n ? lo + tile : (size_t)n;
  const uint32_t cnt = (uint32_t)(hi > lo ? hi - lo : 0), nv = 3u * cnt / 4u;
  if (kLoad) {
    const float4 *src = (const float4 *)(xyz + 3 * lo); /* tile is a multiple of 32 points: 16-byte aligned */
    for (uint32_t j = threadIdx.x; j < nv; j += blockDim.x) ((float4 *)sm)[j] = __ldg(src + j);
    __syncthreads();
    acc = nv ? sm[threadIdx.x % (4 * nv)] : 1.0f; /* a tile of < 2 points has no whole float4 */
  }
  for (int s = 0; s < kSync; s++) cg::this_grid().sync();
  if (kWrite) {
    const uint32_t a = __float_as_uint(acc);
    for (uint32_t q = threadIdx.x; q < cnt; q += blockDim.x) /* four words per point, four arrays of n */
      for (int k = 0; k < kWords; k++) w4[(size_t)k * n + lo + q] = a + q + (uint32_t)k;
    float4 *dst = (float4 *)(xyz_out + 3 * lo);
    for (uint32_t j = threadIdx.x; j < nv; j += blockDim.x) dst[j] = kLoad ? ((const float4 *)sm)[j] : make_float4(acc, acc, acc, acc);
  }
  if (kLoad && threadIdx.x == 0) out[blockIdx.x] = acc;
}

struct Case {
  const char *name;
  const void *fn;
  bool coop;
  int threads;
  size_t smem;
  bool grid_full; /* one wave (a block per SM but one, v9's tiling of one cloud), else one block */
};

int main(int argc, char **argv) {
  const uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 600000u;
  const int reps = argc > 2 ? atoi(argv[2]) : 100;
  if (n == 0 || reps < 3) {
    fprintf(stderr, "usage: launch_floor [n_points > 0] [reps >= 3]\n");
    return 2;
  }
  int dev = 0, sms = 0, l2 = 0, smem_max = 0, coop = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  if (!coop) {
    fprintf(stderr, "launch_floor: no cooperative launch on this device\n");
    return 1;
  }
  /* v9/v10's tiling: tiles of a multiple of 32 points so that one wave fills every SM but one (one cloud) */
  uint32_t tile = (n + (uint32_t)sms - 2u) / (uint32_t)(sms - 1);
  tile = (tile + 31u) & ~31u;
  const int blocks = (int)((n + tile - 1) / tile);
  const size_t smem = 177u * 1024u; /* 177 KiB, v10's at 600k (tile 4608, nb 2048) */
  if ((size_t)tile * 12 > smem || (int)smem > smem_max) {
    fprintf(stderr, "launch_floor: a tile of %u points does not fit %zu bytes of shared memory\n", tile, smem);
    return 1;
  }
  float *xyz = NULL, *out = NULL, *xyz_out = NULL;
  uint32_t *w4 = NULL;
  void *flush = NULL;
  const size_t flush_bytes = 2 * (size_t)l2;
  CK(cudaMalloc(&xyz, (size_t)n * 12));
  CK(cudaMalloc(&out, (size_t)blocks * 4));
  CK(cudaMalloc(&xyz_out, (size_t)n * 12));
  CK(cudaMalloc(&w4, (size_t)n * 16));
  CK(cudaMalloc(&flush, flush_bytes));
  {
    std::vector<float> h((size_t)n * 3);
    for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 1000) * 0.01f + 1.0f; /* never 0 */
    CK(cudaMemcpy(xyz, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  }
  const Case cases[] = {
      {"empty, 1 block of 32", (const void *)k_empty, false, 32, 0, false},
      {"empty, one wave of 1024, no smem", (const void *)k_empty, false, 1024, 0, true},
      {"empty, one wave, 177 KiB smem", (const void *)k_coop<0, false, false>, false, 1024, smem, true},
      {"cooperative, 177 KiB, no barrier", (const void *)k_coop<0, false, false>, true, 1024, smem, true},
      {"cooperative, 1 grid barrier", (const void *)k_coop<1, false, false>, true, 1024, smem, true},
      {"cooperative, 2 grid barriers", (const void *)k_coop<2, false, false>, true, 1024, smem, true},
      {"cooperative, xyz read, 0 barriers", (const void *)k_coop<0, true, false>, true, 1024, smem, true},
      {"cooperative, xyz read, 2 barriers", (const void *)k_coop<2, true, false>, true, 1024, smem, true},
      {"outputs written (28 B/pt), no read", (const void *)k_coop<0, false, true>, false, 1024, smem, true},
      {"xyz read, 1 barrier, outputs", (const void *)k_coop<1, true, true>, true, 1024, smem, true},
      {"xyz read, 2 barriers, outputs", (const void *)k_coop<2, true, true>, true, 1024, smem, true},
      {"xyz read, 2 barriers, 20 B/pt out", (const void *)k_coop<2, true, true, 2>, true, 1024, smem, true},
  };
  const int nc = (int)(sizeof cases / sizeof cases[0]);
  for (int c = 0; c < nc; c++)
    if (cases[c].smem) CK(cudaFuncSetAttribute(cases[c].fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cases[c].smem));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  uint32_t nn = n, tt = tile;
  void *args[] = {&xyz, &nn, &tt, &out, &w4, &xyz_out};
  auto launch = [&](const Case &k) {
    const dim3 g(k.grid_full ? (unsigned)blocks : 1u), b((unsigned)k.threads);
    if (k.coop) CK(cudaLaunchCooperativeKernel(k.fn, g, b, args, k.smem, s));
    else if (k.fn == (const void *)k_empty) CK(cudaLaunchKernel(k.fn, g, b, NULL, k.smem, s));
    else CK(cudaLaunchKernel(k.fn, g, b, args, k.smem, s));
  };
  /* samples interleaved over the cases, so that a drift of the clocks spreads over all of them */
  std::vector<std::vector<float>> cold(nc), hot(nc);
  const int kHot = 20;
  for (int c = 0; c < nc; c++) launch(cases[c]); /* warm-up */
  CK(cudaStreamSynchronize(s));
  for (int r = 0; r < reps; r++)
    for (int c = 0; c < nc; c++) {
      for (int mode = 0; mode < 2; mode++) {
        /* cold: one launch after the flush (queued while the flush runs); hot: a batch of kHot launches back to
         * back after one more (the sweep's hot batches: one launch alone would also time the host's submission) */
        const int k = mode == 0 ? 1 : kHot;
        if (mode == 0) CK(cudaMemsetAsync(flush, r & 0xFF, flush_bytes, s));
        else launch(cases[c]);
        CK(cudaEventRecord(e0, s));
        for (int b = 0; b < k; b++) launch(cases[c]);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0.f;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        (mode == 0 ? cold : hot)[c].push_back(ms * 1000.f / (float)k);
      }
    }
  CK(cudaGetLastError());
  {
    std::vector<float> h(blocks);
    CK(cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
      if (!(h[b] >= 1.0f)) {
        fprintf(stderr, "launch_floor: block %d read %g, not the input\n", b, h[b]);
        return 1;
      }
    /* the last case timed wrote every full tile's coordinates back out: they must equal the input */
    const size_t nf = (size_t)3 * (size_t)(blocks - 1) * tile;
    std::vector<float> x(nf + 1), y(nf + 1);
    CK(cudaMemcpy(x.data(), xyz, nf * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), xyz_out, nf * 4, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < nf; j++)
      if (x[j] != y[j]) {
        fprintf(stderr, "launch_floor: xyz_out[%zu] = %g, input %g\n", j, y[j], x[j]);
        return 1;
      }
  }
  printf("# %s, %d SMs, L2 %d MB; n %u, %d blocks of 1024 threads, tiles of %u points, %zu B dynamic shared memory; "
         "%d samples each, us\n",
         prop.name, sms, l2 >> 20, n, blocks, tile, smem, reps);
  printf("%-36s %8s %8s %8s | %8s %8s %8s\n", "case", "cold med", "min", "max", "hot med", "min", "max");
  for (int c = 0; c < nc; c++) {
    std::sort(cold[c].begin(), cold[c].end());
    std::sort(hot[c].begin(), hot[c].end());
    printf("%-36s %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f\n", cases[c].name, cold[c][reps / 2], cold[c][0], cold[c][reps - 1],
           hot[c][reps / 2], hot[c][0], hot[c][reps - 1]);
  }
  return 0;
}
