/* probe_lt_algos.cu - how far the cuBLASLt heuristic's first algorithm is from the best of its list on the
 * backbones' Linear shapes (skinny GEMMs: hundreds of thousands of rows, 32-784 channels), which run at 1.4-1.7x
 * their bytes at the copy bandwidth in the forwards (docs/layers.md). nl_linear_gpu takes the first algorithm; this
 * asks for up to 16, times each on the same operands (fp16, fp32 accumulation, Y = X W^T [+ b] [GELU] [+ Y], the
 * layouts and epilogues nl_linear_gpu builds) and prints, per shape, the first's time, the best's time and index,
 * and the bytes floor (X, W, b read, Y written, Y read too when accumulating) at a device-to-device copy's
 * bandwidth measured in the same run. No code of the project; nothing here is on the main path.
 *   nvcc -O2 -arch=sm_90 -o /tmp/plt lab/kernels/probe_lt_algos.cu -lcublasLt && /tmp/plt
 * Arguments: none (the PTv3-m1 and Flash3D-46m shapes at 600k points, level l with 600000 >> l rows), or
 * rows in out flags... with flags a string of b (bias), g (GELU), a (accumulate), or "ptv3": the shapes PTv3-m1's
 * 600k forward runs on cuBLASLt, weighted by their launches a forward. Every candidate's time and config go to
 * stdout as "cand" lines (tile, stages, split-K, reduction scheme, swizzle, cluster, waves), for rules that
 * pick from the heuristic's list without timing. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_fp16.h>
#include <cublasLt.h>

#define PL_CUDA(call)                                                                    \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define PL_LT(call)                                                                      \
  do {                                                                                   \
    const cublasStatus_t s_ = (call);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #call, cublasLtGetStatusString(s_), __FILE__, __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

struct shape {
  const char *name;
  size_t rows, in, out;
  int bias, gelu, acc;
  int launches; /* how often one forward runs it (the "ptv3" list; 1 elsewhere) */
};

static const char *reduction_name(int r) {
  switch (r) {
  case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
  case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
  case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute";
  case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output";
  default: return "?";
  }
}

/* the config attributes a rule may read (cublasLtMatmulAlgoConfigGetAttribute) */
struct algo_cfg {
  int id, tile, stages, splitk, reduction, swizzle, custom, cluster;
};
static algo_cfg cfg_of(const cublasLtMatmulAlgo_t *a) {
  algo_cfg c;
  std::memset(&c, 0, sizeof c);
  size_t w;
  uint32_t u = 0;
  uint16_t h = 0;
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &c.id, sizeof c.id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &u, sizeof u, &w), c.tile = (int)u;
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &u, sizeof u, &w), c.stages = (int)u;
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c.splitk, sizeof c.splitk, &w);
  u = 0, cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &u, sizeof u, &w);
  c.reduction = (int)u;
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle, sizeof c.swizzle, &w);
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom, sizeof c.custom, &w);
  cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &h, sizeof h, &w), c.cluster = h;
  return c;
}

static float median_ms(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/* median of 15 timed runs (3 warm-up) of fn on stream st */
template <class F> static float time_it(cudaStream_t st, F fn) {
  cudaEvent_t a, b;
  PL_CUDA(cudaEventCreate(&a));
  PL_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) fn();
  std::vector<float> t;
  for (int i = 0; i < 15; i++) {
    PL_CUDA(cudaEventRecord(a, st));
    fn();
    PL_CUDA(cudaEventRecord(b, st));
    PL_CUDA(cudaEventSynchronize(b));
    float ms;
    PL_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median_ms(t);
}

int main(int argc, char **argv) {
  std::vector<shape> shapes;
  if (argc == 2 && !std::strcmp(argv[1], "ptv3")) {
    /* PTv3-m1 at 600k lidar points (rows per level as the forward's pooling gives them; qkv on the padded
     * slots, rounded here to whole 1024-row patches): what nl_linear_gpu runs there */
    static const size_t n[5] = {600000, 314655, 143324, 51714, 16532}, c[5] = {32, 64, 128, 256, 512};
    static const size_t dc[4] = {64, 64, 128, 256}; /* decoder channels, levels 0-3 */
    static const int enc_d[5] = {2, 2, 2, 6, 2};
    for (int l = 0; l < 5; l++) {
      const size_t slots = (n[l] + 1023) / 1024 * 1024;
      shapes.push_back({"proj", n[l], c[l], c[l], 1, 0, 1, enc_d[l]});
      if (c[l] >= 128) shapes.push_back({"qkv", slots, c[l], 3 * c[l], 1, 0, 0, enc_d[l]});
      if (l > 0) shapes.push_back({"down", n[l - 1], c[l - 1], c[l], 1, 0, 0, 1});
    }
    for (int l = 3; l >= 0; l--) {
      const size_t slots = (n[l] + 1023) / 1024 * 1024, cin = l == 3 ? 512 : dc[l + 1];
      shapes.push_back({"up_proj", n[l + 1], cin, dc[l], 1, 1, 0, 1});
      shapes.push_back({"up_skip", n[l], c[l], dc[l], 1, 1, 0, 1});
      shapes.push_back({"dec proj", n[l], dc[l], dc[l], 1, 0, 1, 2});
      if (dc[l] >= 128) shapes.push_back({"dec qkv", slots, dc[l], 3 * dc[l], 1, 0, 0, 2});
    }
    shapes.push_back({"fc1 512", n[4], 512, 2048, 1, 1, 0, 2});
    shapes.push_back({"fc2 512", n[4], 2048, 512, 1, 0, 1, 2});
    shapes.push_back({"head", n[0], 64, 16, 1, 0, 0, 1});
  } else if (argc >= 4) {
    for (int i = 1; i + 2 < argc; i += 4) {
      const char *fl = i + 3 < argc ? argv[i + 3] : "";
      shapes.push_back({"arg", std::strtoull(argv[i], 0, 10), std::strtoull(argv[i + 1], 0, 10),
                        std::strtoull(argv[i + 2], 0, 10), !!std::strchr(fl, 'b'), !!std::strchr(fl, 'g'),
                        !!std::strchr(fl, 'a'), 1});
    }
  } else {
    static const size_t f3d[5] = {48, 96, 192, 400, 784};
    for (int l = 0; l < 5; l++) {
      const size_t n = 600000u >> l, c = 32u << l, d = f3d[l];
      shapes.push_back({"ptv3 qkv", n, c, 3 * c, 1, 0, 0, 1});
      shapes.push_back({"ptv3 proj", n, c, c, 1, 0, 1, 1});
      shapes.push_back({"ptv3 fc1", n, c, 4 * c, 1, 1, 0, 1});
      shapes.push_back({"ptv3 fc2", n, 4 * c, c, 1, 0, 1, 1});
      shapes.push_back({"f3d qkv", n, d, 3 * d, 1, 0, 0, 1});
      shapes.push_back({"f3d fc1", n, d, 8 * d, 1, 0, 0, 1});
      shapes.push_back({"f3d fc2", n, 4 * d, d, 1, 0, 1, 1});
    }
  }
  size_t max_x = 0, max_y = 0, max_w = 0;
  for (const shape &s : shapes)
    max_x = std::max(max_x, s.rows * s.in), max_y = std::max(max_y, s.rows * s.out),
    max_w = std::max(max_w, s.in * s.out);
  half *x, *y, *w, *b;
  PL_CUDA(cudaMalloc(&x, max_x * 2));
  PL_CUDA(cudaMalloc(&y, max_y * 2));
  PL_CUDA(cudaMalloc(&w, max_w * 2));
  PL_CUDA(cudaMalloc(&b, 8192 * 2));
  PL_CUDA(cudaMemset(x, 0x22, max_x * 2)); /* small finite fp16 values: 0x2222 ~ 0.0129 */
  PL_CUDA(cudaMemset(y, 0, max_y * 2));
  PL_CUDA(cudaMemset(w, 0x22, max_w * 2));
  PL_CUDA(cudaMemset(b, 0, 8192 * 2));
  void *ws;
  const size_t ws_bytes = (size_t)32 << 20;
  PL_CUDA(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st;
  PL_CUDA(cudaStreamCreate(&st));
  cublasLtHandle_t lt;
  PL_LT(cublasLtCreate(&lt));

  /* the copy bandwidth (read + write) on a 512 MiB device-to-device copy */
  const size_t cb = (size_t)512 << 20;
  void *c0, *c1;
  PL_CUDA(cudaMalloc(&c0, cb));
  PL_CUDA(cudaMalloc(&c1, cb));
  const float cms = time_it(st, [&] { PL_CUDA(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice, st)); });
  const double gbs = 2.0 * cb / (cms * 1e6);
  cudaFree(c0);
  cudaFree(c1);
  std::printf("copy %.1f GB/s (read + write)\n", gbs);
  std::printf("%-10s %7s %5s %5s %4s | %8s %8s %4s %5s | %8s %6s %6s\n", "shape", "rows", "in", "out", "epi",
              "first ms", "best ms", "idx", "algos", "floor ms", "first/f", "best/f");
  double sum_first = 0, sum_best = 0, sum_floor = 0, sum_nosplit = 0; /* weighted by launches */
  for (const shape &s : shapes) {
    cublasLtMatmulDesc_t op;
    PL_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    PL_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PL_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const cublasLtEpilogue_t epi = s.bias ? (s.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                          : (s.gelu ? CUBLASLT_EPILOGUE_GELU : CUBLASLT_EPILOGUE_DEFAULT);
    PL_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (s.bias) {
      const cudaDataType_t bt = CUDA_R_16F;
      PL_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
      PL_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
    }
    cublasLtMatrixLayout_t la, lb, lc;
    PL_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, s.in, s.out, (int64_t)s.in));
    PL_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, s.in, s.rows, (int64_t)s.in));
    PL_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, s.out, s.rows, (int64_t)s.out));
    cublasLtMatmulPreference_t pref;
    PL_LT(cublasLtMatmulPreferenceCreate(&pref));
    PL_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                               sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t res[16];
    int found = 0;
    PL_LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &found));
    const float alpha = 1.0f, beta = s.acc ? 1.0f : 0.0f;
    float first = 0, best = 1e30f, nosplit = -1; /* first: the first usable entry, the one nl_linear_gpu takes */
    int bi = -1;
    for (int i = 0; i < found; i++) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float t = time_it(st, [&] {
        PL_LT(cublasLtMatmul(lt, op, &alpha, w, la, x, lb, &beta, y, lc, y, lc, &res[i].algo, ws, ws_bytes, st));
      });
      const algo_cfg c = cfg_of(&res[i].algo);
      std::printf("cand %s %zu %zu %zu %d | %2d %8.4f | id %d tile %d stages %d splitk %d red %s swz %d custom %d "
                  "cluster %d waves %.2f ws %zu\n", s.name, s.rows, s.in, s.out, s.launches, i, t, c.id, c.tile,
                  c.stages, c.splitk, reduction_name(c.reduction), c.swizzle, c.custom, c.cluster, res[i].wavesCount,
                  res[i].workspaceSize);
      if (bi < 0) first = t;
      if (nosplit < 0 && c.splitk <= 1) nosplit = t;
      if (t < best) best = t, bi = i;
    }
    const double bytes = 2.0 * (s.rows * s.in + s.in * s.out + (s.bias ? s.out : 0) + s.rows * s.out * (s.acc ? 2 : 1));
    const double fl = bytes / (gbs * 1e6);
    std::printf("%-10s %7zu %5zu %5zu %s%s%s x%d | %8.4f %8.4f %4d %5d | %8.4f %6.2f %6.2f | nosplit %8.4f\n", s.name,
                s.rows, s.in, s.out, s.bias ? "b" : "-", s.gelu ? "g" : "-", s.acc ? "a" : "-", s.launches, first, best,
                bi, found, fl, first / fl, best / fl, nosplit);
    sum_first += first * s.launches, sum_best += best * s.launches, sum_floor += fl * s.launches;
    sum_nosplit += (nosplit < 0 ? first : nosplit) * s.launches;
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  std::printf("sum x launches: first %.3f ms, best %.3f ms, first without split-K %.3f ms, floor %.3f ms\n",
              sum_first, sum_best, sum_nosplit, sum_floor);
  return 0;
}
