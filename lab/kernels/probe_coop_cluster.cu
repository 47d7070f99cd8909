/* probe_coop_cluster.cu - does this device accept a cooperative launch with a thread-block cluster dimension
 * (grid barrier + cluster barrier + DSMEM in one kernel), with PSH v9's block shape (1024 threads, ~200 KB of
 * dynamic shared memory, one block per SM)? A one-off feasibility check for a cluster-merged PSH phase 4.
 *   nvcc -arch=sm_90 -o probe lab/kernels/probe_coop_cluster.cu && for c in 1 2 4; do ./probe $c; done
 * H100 (2026-11-25, dd05b0a): clusters of 2 run all 132 blocks (66 clusters); clusters of 4 at most
 * 120 blocks (30 clusters), "too many blocks in cooperative launch" at 132. */
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
namespace cg = cooperative_groups;

/* the setup calls: a failure here must not read as "clusters not accepted" below */
#define PROBE_CHECK(call)                                                                  \
  do {                                                                                     \
    const cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "probe: %s: %s\n", #call, cudaGetErrorString(e_));                  \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

__global__ void __launch_bounds__(1024, 1) k(unsigned *out, unsigned rounds) {
  extern __shared__ unsigned sm[];
  cg::grid_group g = cg::this_grid();
  cg::cluster_group cl = cg::this_cluster();
  for (unsigned r = 0; r < rounds; r++) {
    if (threadIdx.x == 0) sm[0] = blockIdx.x * 1000u + r;
    cl.sync();
    const unsigned peer = (cl.block_rank() + 1u) % cl.num_blocks();
    unsigned *ps = cl.map_shared_rank(sm, peer);
    const unsigned v = ps[0];
    cl.sync();
    g.sync();
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}

int main(int argc, char **argv) {
  const int only = argc > 1 ? atoi(argv[1]) : 0; /* one cluster size per process: a failed launch poisons the context */
  int dev = 0, sms = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t smem = 200 * 1024;
  PROBE_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  PROBE_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  unsigned *d = nullptr;
  PROBE_CHECK(cudaMalloc(&d, 4096 * 4));
  for (int cs = 1; cs <= 4; cs *= 2) {
    if (only && cs != only) continue;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cs, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeCooperative;
    at[1].val.cooperative = 1;
    cfg.blockDim = dim3(1024);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = at;
    cfg.numAttrs = 2;
    int clusters = -1;
    cfg.gridDim = dim3(cs);
    cudaError_t eo = cudaOccupancyMaxActiveClusters(&clusters, k, &cfg);
    for (int grid = cs * (sms / cs); grid >= cs; grid -= cs) {
      cfg.gridDim = dim3(grid);
      cudaError_t e = cudaLaunchKernelEx(&cfg, k, d, 3u);
      cudaError_t e2 = e == cudaSuccess ? cudaDeviceSynchronize() : e;
      cudaGetLastError();
      if (e2 == cudaSuccess) {
        unsigned h[4] = {0, 0, 0, 0};
        cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
        printf("cluster %d: max active clusters %d (%s); largest grid that ran: %d blocks (out[0..1] = %u %u)\n", cs,
               clusters, cudaGetErrorString(eo), grid, h[0], h[1]);
        break;
      }
      if (grid == cs * (sms / cs) || grid == cs)
        printf("cluster %d grid %d: %s\n", cs, grid, cudaGetErrorString(e2));
    }
  }
  return 0;
}
