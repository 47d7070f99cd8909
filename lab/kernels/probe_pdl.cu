/* probe_pdl.cu - what programmatic dependent launch (PDL, sm_90) takes off a chain of dependent kernels, per
 * launch: the question is whether the forwards' ~300 launches of their own kernels on one stream leave a gap at
 * each boundary worth the change (docs/nets.md, "Launch gaps"). No code of the project; nothing here is on the
 * main path.
 *   nvcc -O3 -arch=sm_90 -o /tmp/ppdl lab/kernels/probe_pdl.cu && /tmp/ppdl
 * A chain of `len` launches of a streaming kernel (y = 1.0001 x + 1 over n floats, each launch reading the
 * previous one's output: a true dependence), for n from 256K to 32M floats (1-128 MB, 1-60 us a launch), in
 * three modes: plain launches; PDL (the launch attribute, griddepcontrol.wait at the kernel's top, the
 * implicit trigger at the previous kernel's end); PDL with an early trigger (griddepcontrol.launch_dependents
 * at the top as well, so the next grid is placed while this one runs and its blocks wait on the SMs). Each
 * eager and as one CUDA graph. Median of `reps` chains, per launch, in us; the last value of the chain is
 * checked against the same recurrence on the CPU (every mode must compute the same). */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                                   \
  do {                                                                             \
    const cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "probe_pdl: %s: %s\n", #call, cudaGetErrorString(e_));      \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

template <int kMode>
__global__ void __launch_bounds__(256) k_step(float *__restrict__ y, const float *__restrict__ x, size_t n4) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (kMode >= 1) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (kMode == 2) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  float4 *y4 = reinterpret_cast<float4 *>(y);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = x4[i];
    v.x = fmaf(v.x, 1.0001f, 1.0f), v.y = fmaf(v.y, 1.0001f, 1.0f);
    v.z = fmaf(v.z, 1.0001f, 1.0f), v.w = fmaf(v.w, 1.0001f, 1.0f);
    y4[i] = v;
  }
}

static void launch(int mode, float *y, const float *x, size_t n4, int grid, cudaStream_t s) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = mode ? 1 : 0;
  if (mode == 0) CK(cudaLaunchKernelEx(&cfg, k_step<0>, y, x, n4));
  if (mode == 1) CK(cudaLaunchKernelEx(&cfg, k_step<1>, y, x, n4));
  if (mode == 2) CK(cudaLaunchKernelEx(&cfg, k_step<2>, y, x, n4));
}

/* len launches ping-ponging between a and b, starting from a */
static void chain(int mode, float *a, float *b, size_t n4, int grid, int len, cudaStream_t s) {
  for (int i = 0; i < len; i++) launch(mode, (i & 1) ? a : b, (i & 1) ? b : a, n4, grid, s);
}

int main(int argc, char **argv) {
  const int len = argc > 1 ? atoi(argv[1]) : 200, reps = argc > 2 ? atoi(argv[2]) : 15;
  int dev = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("%s, %d SMs, chains of %d launches, median of %d\n", prop.name, sms, len, reps);
  const size_t sizes[] = {(size_t)1 << 18, (size_t)1 << 20, (size_t)1 << 22, (size_t)1 << 25};
  const size_t nmax = sizes[3];
  float *a, *b;
  CK(cudaMalloc(&a, nmax * sizeof(float)));
  CK(cudaMalloc(&b, nmax * sizeof(float)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const char *mname[] = {"plain", "pdl", "pdl+trigger"};
  printf("%-10s %-12s %12s %12s %10s\n", "MB", "mode", "eager us", "graph us", "check");
  for (size_t n : sizes) {
    const size_t n4 = n / 4;
    const int grid = (int)std::min<size_t>((n4 + 255) / 256, (size_t)sms * 8);
    for (int mode = 0; mode < 3; mode++) {
      float t[2] = {0, 0};
      bool ok = true;
      for (int g = 0; g < 2; g++) {
        cudaGraphExec_t ge = nullptr;
        if (g) {
          cudaGraph_t gr;
          CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
          chain(mode, a, b, n4, grid, len, s);
          CK(cudaStreamEndCapture(s, &gr));
          CK(cudaGraphInstantiate(&ge, gr, 0));
          CK(cudaGraphDestroy(gr));
        }
        std::vector<float> ms;
        for (int r = 0; r < reps + 2; r++) {
          CK(cudaMemsetAsync(a, 0, n * sizeof(float), s));
          CK(cudaEventRecord(e0, s));
          if (g) CK(cudaGraphLaunch(ge, s));
          else chain(mode, a, b, n4, grid, len, s);
          CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float m;
          CK(cudaEventElapsedTime(&m, e0, e1));
          if (r >= 2) ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        t[g] = ms[ms.size() / 2] * 1000.0f / len;
        /* the recurrence from 0, len times, in fp32 as the kernel does it */
        float want = 0.0f;
        for (int i = 0; i < len; i++) want = fmaf(want, 1.0001f, 1.0f);
        float got[2];
        float *last = (len & 1) ? b : a;
        CK(cudaMemcpy(&got[0], last, sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&got[1], last + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
        ok = ok && got[0] == want && got[1] == want;
        if (ge) CK(cudaGraphExecDestroy(ge));
      }
      printf("%-10.1f %-12s %12.2f %12.2f %10s\n", n * 4.0 / 1e6, mname[mode], t[0], t[1], ok ? "ok" : "WRONG");
    }
  }
  return 0;
}
