/* probe_l2_atomics.cu - how fast can one GPU's threads take slots on a few hundred bucket counters, as PSH's probe
 * phase does (a read, then a returning atomicAdd), and does it matter how the counters are laid out? A one-off
 * measurement for the "counters spread over more cache lines" lead (43fb629, docs/psh.md): Z-order-div at
 * 100k places ~90k points into 256 buckets whose 4-byte counters share 8 cache lines.
 *   nvcc -O3 -arch=sm_90 -o /tmp/pla lab/kernels/probe_l2_atomics.cu && /tmp/pla
 * Every thread of one wave of 1024-thread blocks (one per SM) runs `iters` dependent attempts: bucket g from a
 * hash of (thread, attempt, the previous returned value), __ldcg of its counter, atomicAdd of 1 (the returned
 * value feeds the next hash, so the attempts of a thread are a chain, as a lane's probes are). Counter g lives
 * at word g * stride: stride 1 packs 32 per 128-byte line, 8 gives each its own 32-byte sector, 32 its own line.
 * spread: the lanes of a warp pick buckets independently; warp: all 32 lanes of a warp the same bucket (one
 * address per warp instruction, as neighbours in list order often want). Prints attempts per microsecond. */
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#define PLA_CHECK(call)                                                                    \
  do {                                                                                     \
    const cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "probe_l2_atomics: %s: %s\n", #call, cudaGetErrorString(e_));       \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

template <bool kRead>
__global__ void __launch_bounds__(1024, 1) k(uint32_t *cnt, uint32_t nb, uint32_t stride, uint32_t iters, int warp,
                                              uint32_t *sink) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, key = warp ? t >> 5 : t;
  uint32_t prev = 0, acc = 0;
  for (uint32_t a = 0; a < iters; a++) {
    const uint32_t g = mix32(key * 0x9E3779B9u + a * 0x85EBCA6Bu + (warp ? 0u : prev)) % nb;
    uint32_t *c = cnt + (size_t)g * stride;
    uint32_t v = 0;
    if (kRead) v = __ldcg(c);
    if (v < 0xFFFFFFF0u) prev = atomicAdd(c, 1u);
    acc += prev;
  }
  if (acc == 0xFFFFFFFFu) sink[0] = acc; /* keeps the chain live */
}

int main(void) {
  int dev = 0, sms = 0;
  PLA_CHECK(cudaGetDevice(&dev));
  PLA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  PLA_CHECK(cudaGetDeviceProperties(&prop, dev));
  const uint32_t nbs[] = {256, 2048}, strides[] = {1, 8, 32}, iters = 16;
  uint32_t *cnt = nullptr, *sink = nullptr;
  PLA_CHECK(cudaMalloc(&cnt, 2048u * 32u * sizeof(uint32_t)));
  PLA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
  cudaEvent_t e0, e1;
  PLA_CHECK(cudaEventCreate(&e0));
  PLA_CHECK(cudaEventCreate(&e1));
  printf("%s, %d SMs, %d x 1024 threads x %u dependent attempts each\n", prop.name, sms, sms, iters);
  printf("%-6s %-5s %-6s %-7s %10s %12s\n", "nb", "read", "pick", "stride", "median us", "attempts/us");
  for (int rd = 0; rd < 2; rd++)
    for (int warp = 0; warp < 2; warp++)
      for (uint32_t nb : nbs)
        for (uint32_t st : strides) {
          float ms[9];
          for (int r = 0; r < 9; r++) {
            PLA_CHECK(cudaMemset(cnt, 0, 2048u * 32u * sizeof(uint32_t)));
            PLA_CHECK(cudaEventRecord(e0));
            if (rd) k<true><<<sms, 1024>>>(cnt, nb, st, iters, warp, sink);
            else k<false><<<sms, 1024>>>(cnt, nb, st, iters, warp, sink);
            PLA_CHECK(cudaEventRecord(e1));
            PLA_CHECK(cudaEventSynchronize(e1));
            PLA_CHECK(cudaGetLastError());
            PLA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
          }
          for (int i = 1; i < 9; i++) /* insertion sort for the median */
            for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
              const float x = ms[j];
              ms[j] = ms[j - 1];
              ms[j - 1] = x;
            }
          const double us = 1000.0 * ms[4], att = (double)sms * 1024.0 * iters;
          printf("%-6u %-5s %-6s %-7u %10.1f %12.0f\n", nb, rd ? "yes" : "no", warp ? "warp" : "spread", st, us,
                 att / us);
        }
  return 0;
}
