/* probe_sanitize_cublaslt.cu - how compute-sanitizer's initcheck and racecheck treat a cuBLASLt GEMM, with no code
 * of the project. Under initcheck an unfiltered PTv3 forward reported ~271k "uninitialized __global__ memory
 * read"s, the first hundred all in our LayerNorm reading rows whose last writer was a cuBLASLt GEMM, while the
 * forward matched its CPU reference; under racecheck every forward stopped with "Internal Sanitizer Error: The
 * Sanitizer failed to handle a hardware exception" at a GEMM launch. The probe:
 *   0. X [rows, in] and W [out, in] (fp16) uploaded with cudaMemcpy; Y [rows, out] cudaMalloc'ed, never touched;
 *   1. control: Z written by fill_kernel (our own stores), then read_kernel reads Z;
 *   2. Y = X W^T by cublasLtMatmul (the heuristic's first algorithm, as nl_linear_gpu takes it);
 *   3. read_kernel sums every value of Y into one float (initialised by cudaMemset);
 *   4. Y copied to the host and 5. checked against a CPU GEMM on every row (the GEMM really wrote all of Y).
 * initcheck: reports in step 3 and none in step 1 while step 5 passes mean the sanitizer does not track that
 * GEMM kernel's stores (false positives), not uninitialised data. racecheck: where it fails, it fails at step 2.
 *   nvcc -O2 -arch=sm_90 -o /tmp/pic lab/kernels/probe_sanitize_cublaslt.cu -lcublasLt
 *   compute-sanitizer --tool initcheck --print-limit 0 /tmp/pic 1500 32 32 | grep -E 'step|at |SUMMARY' | uniq -c
 *   compute-sanitizer --tool racecheck /tmp/pic 1500 32 32
 * Arguments: rows in out [bias|stream] (in and out multiples of 8; bias: the GEMM with CUBLASLT_EPILOGUE_BIAS and
 * an fp16 bias of zeros, as nl_linear_gpu takes biases; stream: every launch on a created stream, as the
 * forwards run). Prints each step as it starts and the check. */
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_fp16.h>
#include <cublasLt.h>

#define PIC_CUDA(call)                                                                       \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "probe_sanitize: %s: %s\n", #call, cudaGetErrorString(e_));           \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
#define PIC_LT(call)                                                                         \
  do {                                                                                       \
    const cublasStatus_t s_ = (call);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      fprintf(stderr, "probe_sanitize: %s: status %d\n", #call, (int)s_);                   \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

__global__ void read_kernel(const __half *y, size_t n, float *sum) {
  float s = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    s += __half2float(y[i]);
  atomicAdd(sum, s);
}

__global__ void fill_kernel(__half *z, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    z[i] = __float2half((float)(i % 7) - 3.f);
}

int main(int argc, char **argv) {
  const int rows = argc > 1 ? atoi(argv[1]) : 1500, in = argc > 2 ? atoi(argv[2]) : 32,
            out = argc > 3 ? atoi(argv[3]) : 32;
  const char *mode = argc > 4 ? argv[4] : "plain";
  const int bias = strcmp(mode, "bias") == 0, use_stream = strcmp(mode, "stream") == 0;
  if (rows <= 0 || in <= 0 || out <= 0 || in % 8 || out % 8 || (argc > 4 && !bias && !use_stream)) {
    fprintf(stderr, "usage: probe_sanitize_cublaslt ROWS IN OUT [bias|stream] (IN, OUT multiples of 8)\n");
    return 2;
  }
  std::vector<__half> hx((size_t)rows * in), hw((size_t)out * in), hy((size_t)rows * out);
  uint32_t s = 12345u;
  for (auto &v : hx) { s = s * 1664525u + 1013904223u; v = __float2half((float)(s >> 8) / 16777216.f - .5f); }
  for (auto &v : hw) { s = s * 1664525u + 1013904223u; v = __float2half((float)(s >> 8) / 16777216.f - .5f); }
  __half *dx, *dw, *dy, *dz;
  float *dsum;
  void *ws;
  const size_t wsb = 32u << 20;
  PIC_CUDA(cudaMalloc(&dx, hx.size() * 2));
  PIC_CUDA(cudaMalloc(&dw, hw.size() * 2));
  PIC_CUDA(cudaMalloc(&dy, hy.size() * 2));
  PIC_CUDA(cudaMalloc(&dz, hy.size() * 2));
  PIC_CUDA(cudaMalloc(&dsum, 2 * sizeof(float)));
  PIC_CUDA(cudaMalloc(&ws, wsb));
  PIC_CUDA(cudaMemcpy(dx, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  PIC_CUDA(cudaMemcpy(dw, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
  PIC_CUDA(cudaMemset(dsum, 0, 2 * sizeof(float)));
  __half *db;
  PIC_CUDA(cudaMalloc(&db, (size_t)out * 2));
  PIC_CUDA(cudaMemset(db, 0, (size_t)out * 2));
  cudaStream_t st = 0;
  if (use_stream) PIC_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  /* Y [rows, out] row-major = column-major [out, rows] = op(W) X with W column-major [in, out] transposed. */
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  PIC_LT(cublasLtCreate(&lt));
  PIC_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t tT = CUBLAS_OP_T, tN = CUBLAS_OP_N;
  PIC_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tT, sizeof tT));
  PIC_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tN, sizeof tN));
  if (bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bt = CUDA_R_16F;
    PIC_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    PIC_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    PIC_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &db, sizeof db));
  }
  PIC_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, in, out, in));
  PIC_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, in, rows, in));
  PIC_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, out, rows, out));
  cublasLtMatmulPreference_t pref;
  PIC_LT(cublasLtMatmulPreferenceCreate(&pref));
  PIC_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  PIC_LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found));
  if (!found) { fprintf(stderr, "probe_sanitize: no cuBLASLt algorithm\n"); return 1; }
  const float one = 1.f, zero = 0.f;
  /* the control first: a report printed before "step 2" is the sanitizer's view of our own stores */
  printf("step 1: fill_kernel writes Z, read_kernel reads Z (control)\n");
  fflush(stdout);
  fill_kernel<<<64, 256, 0, st>>>(dz, hy.size());
  PIC_CUDA(cudaGetLastError());
  read_kernel<<<64, 256, 0, st>>>(dz, hy.size(), dsum + 1);
  PIC_CUDA(cudaGetLastError());
  PIC_CUDA(cudaStreamSynchronize(st));
  printf("step 2: cublasLtMatmul Y[%d, %d] = X[%d, %d] W^T (%s)\n", rows, out, rows, in, mode);
  fflush(stdout);
  PIC_LT(cublasLtMatmul(lt, op, &one, dw, la, dx, lb, &zero, dy, ld, dy, ld, &heur.algo, ws, wsb, st));
  PIC_CUDA(cudaStreamSynchronize(st));
  printf("step 3: read_kernel over Y (written by cuBLASLt)\n");
  fflush(stdout);
  read_kernel<<<64, 256, 0, st>>>(dy, hy.size(), dsum);
  PIC_CUDA(cudaGetLastError());
  PIC_CUDA(cudaStreamSynchronize(st));
  printf("step 4: Y copied to the host\n");
  fflush(stdout);
  PIC_CUDA(cudaMemcpy(hy.data(), dy, hy.size() * 2, cudaMemcpyDeviceToHost));
  double worst = 0;
  size_t bad = 0; /* values off by more than 1e-2 relative, or not finite (a NaN compares false) */
  for (int r = 0; r < rows; r++)
    for (int o = 0; o < out; o++) {
      double ref = 0;
      for (int c = 0; c < in; c++)
        ref += (double)__half2float(hx[(size_t)r * in + c]) * __half2float(hw[(size_t)o * in + c]);
      const double e = fabs(ref - __half2float(hy[(size_t)r * out + o])) / (1.0 + fabs(ref));
      if (!(e <= 1e-2)) bad++;
      else if (e > worst) worst = e;
    }
  const int ok = bad == 0;
  printf("step 5: Y against a CPU GEMM on all %d rows: %zu values off, worst relative error of the rest %.2e: %s\n",
         rows, bad, worst, ok ? "ok (the GEMM wrote every value)" : "FAILED");
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(lt);
  cudaFree(dx); cudaFree(dw); cudaFree(dy); cudaFree(dz); cudaFree(dsum); cudaFree(ws); cudaFree(db);
  if (st) cudaStreamDestroy(st);
  return ok ? 0 : 1;
}
