/*
 * nets.h - the one public header of the networks folder: whole inference backbones (PTv3-m1 and Flash3D)
 * and the layers they are made of. Prefixes: nl_ (dense layers), spc_ (submanifold sparse convolution),
 * stf_ (safetensors files), net_ (models: configurations, parameters, forward passes).
 *
 * Floors: nets/ sits on the leaves (kernels/, baselines/, workloads/: their public headers only) and base/;
 * it never includes harness/ or app/ (tests/check_includes.sh). Timing, NVTX and counters reach a forward
 * only through the net_hooks callbacks below, which the program fills in.
 *
 * Conventions (every routine):
 *  - activations are row-major [rows, C]; on the GPU fp16 or bf16 (net_dtype) with fp32 accumulation; the
 *    CPU references are plain fp32 C;
 *  - Linear weights are PyTorch's [out, in] (y = x W^T + b); sparse-convolution weights are spconv 2's
 *    [out, k, k, k, in] (offset order below); everything a network holds is a named fp32 host tensor
 *    (net_tensor), uploaded to the device in the activation dtype (biases and norm parameters in fp32);
 *  - GPU entry points take device pointers (d_ prefix), return hx_status with err filled, take the stream
 *    last, never synchronise the host unless their comment says so, and report scratch sizes when given a
 *    NULL scratch pointer (CUB's protocol);
 *  - all validation happens once at the API boundary; kernels trust their params.
 */
#ifndef F3D_NETS_H
#define F3D_NETS_H

#include "base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

typedef enum net_dtype { NET_F16 = 0, NET_BF16 = 1 } net_dtype;

/* A device allocator every buffer of a forward (weights included) is drawn from: the program passes its arena
 * through it, so the peak-memory rows see everything. An all-NULL net_alloc means plain cudaMalloc / cudaFree. */
typedef struct net_alloc {
  hx_status (*alloc)(void *ctx, void **p, size_t bytes, const char *label, hx_err *err);
  void (*release)(void *ctx, void *p);
  void *ctx;
} net_alloc;
const char *net_dtype_name(net_dtype t);
hx_status net_dtype_parse(const char *name, net_dtype *out, hx_err *err);
/* fp32 <-> fp16 / bf16 bit patterns, round to nearest even (host; what the tests and uploads use). */
uint16_t net_from_float(net_dtype t, float x);
float net_to_float(net_dtype t, uint16_t h);

/* ==== Dense layers (nl_: nets/layers.c CPU references, nets/layers.cu GPU) ========================== */
/*
 * A cuBLASLt context: one handle, one workspace, the matmul descriptors cached per shape. Created once per
 * forward object (never inside a timed region). nl_linear_gpu computes
 *     Y[rows, out] (+)= act(X[rows, in] W^T + b)
 * with the bias, GELU and accumulate-into-Y (residual add: beta = 1) fused into cuBLASLt's epilogue where
 * it offers them. GELU: NL_ACT_GELU is the exact erf form of torch.nn.GELU in the CPU reference; cuBLASLt's
 * fused epilogue is the tanh approximation (|difference| < 1e-3 for |x| < 10), documented in docs/layers.md
 * and covered by the stated tolerance.
 */
typedef enum nl_act { NL_ACT_NONE = 0, NL_ACT_GELU = 1 } nl_act;

typedef struct nl_blas nl_blas; /* opaque */
/* How a shape's algorithm is picked the first time nl_linear_gpu runs it (its plan is cached after):
 * NL_BLAS_TUNED (the networks' default): where the call overwrites Y (no accumulate) and its stream is not capturing
 * a graph, the heuristic's first NL_BLAS_CANDIDATES algorithms are timed on the call's own operands and the
 * earliest within 3% of the fastest is taken, otherwise the first. The pick is made per object on the device it runs
 * on; Y's bits follow the algorithm, so two objects may differ in their last bits where their picks do
 * (nets_layers_gpu checks each candidate against nl_linear_cpu on the networks' kinds of shape). NL_BLAS_FIRST:
 * always the heuristic's first (bits that depend only on the device and the library). 0 .. NL_BLAS_CANDIDATES - 1:
 * that candidate of the heuristic's list (tests; HX_EUNSUPPORTED from nl_linear_gpu, its message naming the forced
 * candidate, where the list is shorter). */
enum { NL_BLAS_TUNED = -2, NL_BLAS_FIRST = -1, NL_BLAS_CANDIDATES = 8 };
hx_status nl_blas_create(nl_blas **out, int pick, hx_err *err);
void nl_blas_destroy(nl_blas *b);
/* What the plans built so far did: plans built, how many were timed, how many of those took another algorithm than
 * the heuristic's first, and the sums of the first's and the pick's times (ms a call) over the timed ones. */
typedef struct nl_blas_stats {
  size_t plans, tuned, moved;
  double first_ms, pick_ms;
} nl_blas_stats;
void nl_blas_stats_get(const nl_blas *b, nl_blas_stats *out); /* zeros for a NULL b */

/* CPU reference: y[rows, out] = act(x W^T + b) (+ y when accumulate). b may be NULL. */
hx_status nl_linear_cpu(float *y, const float *x, const float *w, const float *b, size_t rows, size_t in,
                        size_t out, nl_act act, int accumulate, hx_err *err);
/* GPU: d_x [rows, in] and d_y [rows, out] in dtype, d_w [out, in] in dtype, d_b [out] in dtype or NULL: cuBLASLt's
 * bias epilogues take the bias in the output's type for fp16/bf16 outputs (an fp32 bias vector made every
 * heuristic query fail with "unsupported value" on the H100, CUDA 13.0, 2026-11-28).
 * in and out multiples of 8 (cuBLASLt's 16-byte rule for half types); rows may be 0 (nothing done). */
hx_status nl_linear_gpu(nl_blas *blas, void *d_y, const void *d_x, const void *d_w, const void *d_b, size_t rows,
                        size_t in, size_t out, nl_act act, int accumulate, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err);
/* The same with x's rows ldx elements apart (ldx >= in, a multiple of 8): Flash3D's projection reading the
 * attention's output where it lies over q's columns of qkv (ldx = 3C). */
hx_status nl_linear_ld_gpu(nl_blas *blas, void *d_y, const void *d_x, size_t ldx, const void *d_w, const void *d_b,
                           size_t rows, size_t in, size_t out, nl_act act, int accumulate, net_dtype dt,
                           struct CUstream_st *stream, hx_err *err);

/* LayerNorm over the last dim (eps as given; PyTorch's default 1e-5): y = (x - mean) / sqrt(var + eps) * g + b.
 * y may equal x (in place). */
hx_status nl_layernorm_cpu(float *y, const float *x, const float *g, const float *b, size_t rows, size_t C,
                           float eps, hx_err *err);
hx_status nl_layernorm_gpu(void *d_y, const void *d_x, const float *d_g, const float *d_b, size_t rows, size_t C,
                           float eps, net_dtype dt, struct CUstream_st *stream, hx_err *err);
/* y[r] = LayerNorm(x[idx[r]]) for r < rows: a row gather fused into the LayerNorm's read (PTv3's norm.1 read in
 * the padded serialized order its qkv Linear and attention take, so the qkv rows are never gathered). x has
 * x_rows rows; every idx[r] < x_rows (the CPU form checks, the GPU form trusts it); y must not overlap x. */
hx_status nl_layernorm_rows_cpu(float *y, const float *x, const uint32_t *idx, size_t x_rows, const float *g,
                                const float *b, size_t rows, size_t C, float eps, hx_err *err);
hx_status nl_layernorm_rows_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t x_rows, const float *d_g,
                                const float *d_b, size_t rows, size_t C, float eps, net_dtype dt,
                                struct CUstream_st *stream, hx_err *err);
/* y += LayerNorm(x) (a residual branch ending in a LayerNorm, as PTv3's xCPE): y must not overlap x. The GPU
 * form rounds y + LN(x) once, where LN then nl_add round twice. */
hx_status nl_layernorm_add_cpu(float *y, const float *x, const float *g, const float *b, size_t rows, size_t C,
                               float eps, hx_err *err);
hx_status nl_layernorm_add_gpu(void *d_y, const void *d_x, const float *d_g, const float *d_b, size_t rows, size_t C,
                               float eps, net_dtype dt, struct CUstream_st *stream, hx_err *err);

/* Inference BatchNorm folded to one affine per channel, then an optional GELU:
 *     y = act(x * scale + shift),  scale = gamma / sqrt(var + eps),  shift = beta - mean * scale.
 * nl_bn_fold computes scale/shift (C floats each) from the four BatchNorm1d tensors. y may equal x. */
void nl_bn_fold(float *scale, float *shift, const float *gamma, const float *beta, const float *mean,
                const float *var, size_t C, float eps);
hx_status nl_affine_act_cpu(float *y, const float *x, const float *scale, const float *shift, size_t rows, size_t C,
                            nl_act act, hx_err *err);
hx_status nl_affine_act_gpu(void *d_y, const void *d_x, const float *d_scale, const float *d_shift, size_t rows,
                            size_t C, nl_act act, net_dtype dt, struct CUstream_st *stream, hx_err *err);

/* A block's MLP with the residual, y[rows, C] += fc2(act(fc1(x))), fc2 w2 [C, H] + b2 [C] (Linear's layout; b1, b2
 * may be NULL). NL_MLP_GELU (PTv3): fc1 w1 [H, C] + b1 [H], act = GELU. NL_MLP_SWIGLU (Flash3D's LayerNormMLP):
 * fc1 w1 [2H, C] + b1 [2H], act = SwiGLU (silu of the first H values times the second H, nl_swiglu_cpu). The CPU
 * reference is the Linears (and SwiGLU) it stands for, the hidden row in fp32, GELU the exact erf form.
 * nl_mlp_gpu is one kernel that keeps the hidden row on chip (rounded to dtype before fc2, as the stored hidden of the
 * unfused path is), its GELU the tanh form that nl_linear_gpu's cuBLASLt epilogue also computes, its silu on the
 * hardware tanh: an mma.sync kernel with the weights in shared memory at C <= 80 (nets/mlp.cu), a wgmma kernel
 * streaming them by TMA at C >= 96 (GELU 128 and 256, SwiGLU 96 to 192; nets/mlp_wgmma.cu, sm_90a only). x, y, w1 and
 * w2 in dtype, b1 and b2 too; x, y, w1 and w2 16-byte aligned, b1 and b2 2-byte aligned; x and y not overlapping
 * (HX_EINVAL). HX_EUNSUPPORTED, so that the caller runs the unfused path instead (both networks' forwards do), for a
 * (C, H, kind) that nl_mlp_gpu_takes refuses, for unaligned x, y, w1 or w2, at C >= 96 on a device without the sm_90a
 * image, and on a device that grants a CTA less shared memory than the kernel needs (sm_80's 163 KB against the C = 80
 * SwiGLU kernel's 208 KB; every other width fits). rows may be 0 (at most 2^32 - 257 at C >= 96). Scratch by CUB's
 * protocol: the wgmma kernel's Stream-K split (mlp_wgmma.cu) asks for the fp32 partial sums of one tile a CTA where its
 * last round of tiles on the current device would be at most half full (17 MB at C = 256 on 132 SMs; 16-byte aligned),
 * every other call for 0 bytes; a NULL d_scratch is a size query even then (it runs nothing). */
typedef enum nl_mlp_kind { NL_MLP_GELU = 0, NL_MLP_SWIGLU = 1 } nl_mlp_kind;
hx_status nl_mlp_cpu(float *y, const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
                     size_t rows, size_t C, size_t H, nl_mlp_kind kind, hx_err *err);
hx_status nl_mlp_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, const void *d_w2, const void *d_b2,
                     size_t rows, size_t C, size_t H, nl_mlp_kind kind, void *d_scratch, size_t *scratch_bytes,
                     net_dtype dt, struct CUstream_st *stream, hx_err *err);
/* 1 when nl_mlp_gpu has a kernel for rows of C with a hidden row of H, else 0 (host; any build): GELU H = 4C at C =
 * 32, 64, 128 and 256 (128 and 256: HX_EUNSUPPORTED without sm_90a, above); SwiGLU H = 4C at C = 32, 48, 64 and 80
 * (the weights and tiles fit one sm_90 SM's shared memory; C = 80 is HX_EUNSUPPORTED on a device that grants less)
 * and at 96, 128, 160 and 192 (the wgmma kernel: HX_EUNSUPPORTED without sm_90a). */
int nl_mlp_gpu_takes(size_t C, size_t H, nl_mlp_kind kind);
/* 1 when the current device runs nl_mlp_gpu (ln 0) or nl_ln_mlp_gpu (ln 1) at (C, H, kind): nl_mlp_gpu_takes, the
 * sm_90a image at C >= 96 and a CTA's shared memory within what the device grants; 0 where either would return
 * HX_EUNSUPPORTED for any reason but alignment (host; queries the device; 0 in a build without CUDA). The forwards
 * size their work buffers by it. */
int nl_mlp_gpu_runs(size_t C, size_t H, nl_mlp_kind kind, int ln);

/* The same MLP after a LayerNorm of its own input, in one kernel: y[rows, C] += MLP(LN(y)) (LN: gamma g, beta, eps;
 * y is the residual stream, normalised on chip, so the LayerNorm's row is never stored). CPU reference: nl_ln_mlp_cpu
 * (nl_layernorm_cpu then nl_mlp_cpu). nl_ln_mlp_gpu: nl_mlp_gpu's kernel with the LayerNorm applied to its A
 * fragments, fp32 statistics as nl_layernorm_gpu, the normalised row rounded to dtype as the unfused path stores
 * it; the widths, alignment (y, w1, w2), scratch and HX_EUNSUPPORTED cases of nl_mlp_gpu (nl_mlp_gpu_takes). g and
 * beta fp32 [C]. */
hx_status nl_ln_mlp_cpu(float *y, const float *g, const float *beta, float eps, const float *w1, const float *b1,
                        const float *w2, const float *b2, size_t rows, size_t C, size_t H, nl_mlp_kind kind, hx_err *err);
hx_status nl_ln_mlp_gpu(void *d_y, const float *d_g, const float *d_beta, float eps, const void *d_w1, const void *d_b1,
                        const void *d_w2, const void *d_b2, size_t rows, size_t C, size_t H, nl_mlp_kind kind,
                        void *d_scratch, size_t *scratch_bytes, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err);

/* A LayerNorm read through a row index and the Linear that follows it, in one kernel: y[r, N] = LN(x[idx[r]]) W^T +
 * b for r < rows (PTv3's norm.1 and qkv on the patch slots), or with idx NULL y[r] = LN(x[r]) W^T + b (Flash3D's
 * norm and qkv; x_rows >= rows), W [N, C] and b [N] (NULL: none) as Linear's, g and beta fp32 [C]. CPU reference:
 * nl_ln_linear_cpu (nl_layernorm_rows_cpu, or nl_layernorm_cpu in order, then nl_linear_cpu; every idx[r] < x_rows
 * checked). nl_ln_linear_gpu (nets/mlp.cu): one mma.sync kernel, the normalised row on chip, rounded to dtype
 * before the GEMM as the unfused path stores it, every idx[r] < x_rows trusted; x, y and w 16-byte aligned
 * (HX_EUNSUPPORTED otherwise, and for (C, N) nl_ln_linear_gpu_takes refuses, so the caller runs the unfused
 * path); x and y must not overlap (HX_EINVAL); rows may be 0. */
hx_status nl_ln_linear_cpu(float *y, const float *x, const uint32_t *idx, size_t x_rows, const float *g,
                           const float *beta, float eps, const float *w, const float *b, size_t rows, size_t C, size_t N,
                           hx_err *err);
hx_status nl_ln_linear_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t x_rows, const float *d_g,
                           const float *d_beta, float eps, const void *d_w, const void *d_b, size_t rows, size_t C,
                           size_t N, net_dtype dt, struct CUstream_st *stream, hx_err *err);
/* 1 when nl_ln_linear_gpu has a kernel for (C, N): C = 32, 48, 64 and 96, N = 3C (host; any build). */
int nl_ln_linear_gpu_takes(size_t C, size_t N);

/* A Linear, the LayerNorm of its row and a residual add, in one kernel: y[rows, C] += LN(x W^T + b), W [C, C] and b
 * [C] (NULL: none) as Linear's, g and beta fp32 [C] (the end of PTv3's xCPE: y += LN(Linear(conv(x)))). CPU
 * reference: nl_linear_ln_add_cpu (nl_linear_cpu then nl_layernorm_add_cpu). nl_linear_ln_add_gpu (nets/mlp.cu):
 * one mma.sync kernel, the Linear's row on chip, rounded to dtype as the unfused path stores it, y + LN rounded
 * once; x, y and w 16-byte aligned (HX_EUNSUPPORTED otherwise, and for C that nl_linear_ln_add_gpu_takes refuses, so
 * the caller runs the unfused path); x and y must not overlap (HX_EINVAL); rows may be 0. */
hx_status nl_linear_ln_add_cpu(float *y, const float *x, const float *w, const float *b, const float *g,
                               const float *beta, float eps, size_t rows, size_t C, hx_err *err);
hx_status nl_linear_ln_add_gpu(void *d_y, const void *d_x, const void *d_w, const void *d_b, const float *d_g,
                               const float *d_beta, float eps, size_t rows, size_t C, net_dtype dt,
                               struct CUstream_st *stream, hx_err *err);
/* 1 when nl_linear_ln_add_gpu has a kernel for rows of C: C = 32 and 64 (host; any build). */
int nl_linear_ln_add_gpu_takes(size_t C);

/* SwiGLU of TransformerEngine's LayerNormMLP: x [rows, 2H] holds (a | b) halves, y [rows, H] = silu(a) * b. */
hx_status nl_swiglu_cpu(float *y, const float *x, size_t rows, size_t H, hx_err *err);
hx_status nl_swiglu_gpu(void *d_y, const void *d_x, size_t rows, size_t H, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err);
/* fc1 and SwiGLU as one GEMM, for the blocks too wide for nl_mlp_gpu: y [rows, H] = silu(x w1[:H]^T + b1[:H]) *
 * (x w1[H:]^T + b1[H:]), w1 [2H, C] and b1 [2H] (NULL: none) as Linear's; the CPU reference is nl_linear_cpu then
 * nl_swiglu_cpu. nl_linear_swiglu_gpu (nets/mlp.cu) keeps fc1's 2H-wide row on chip: it writes H values a row
 * where fc1 and the SwiGLU pass write 2H and H and read 2H; silu on the hardware tanh, y rounded once. x, y, w1 in
 * dtype, 16-byte aligned (HX_EUNSUPPORTED otherwise, and for (C, H) nl_linear_swiglu_gpu_takes refuses); x and y
 * not overlapping (HX_EINVAL). rows may be 0. */
hx_status nl_linear_swiglu_cpu(float *y, const float *x, const float *w1, const float *b1, size_t rows, size_t C,
                               size_t H, hx_err *err);
hx_status nl_linear_swiglu_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, size_t rows, size_t C,
                               size_t H, net_dtype dt, struct CUstream_st *stream, hx_err *err);
/* 1 when nl_linear_swiglu_gpu takes (C, H) (host; any build), H a multiple of 64: C = 32, 64 or 96 on an mma.sync
 * kernel (the reduction and two row tiles in shared memory, two CTAs an SM; at C = 160 and 192 it measured slower
 * than the unfused path: docs/layers.md), and C >= 128, a multiple of 16, on a wgmma GEMM (sm_90a; HX_EUNSUPPORTED
 * elsewhere). nl_linear_swiglu_gpu_runs: 1 when it takes (C, H) and the current device runs that kernel. */
int nl_linear_swiglu_gpu_takes(size_t C, size_t H);
int nl_linear_swiglu_gpu_runs(size_t C, size_t H);

/* y += x (residual add), elementwise over n values. */
hx_status nl_add_cpu(float *y, const float *x, size_t n, hx_err *err);
hx_status nl_add_gpu(void *d_y, const void *d_x, size_t n, net_dtype dt, struct CUstream_st *stream, hx_err *err);

/* Row gather y[i] = x[idx[i]] (C values a row) and the conversions in and out of the activation dtype. */
hx_status nl_gather_rows_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t rows, size_t C, net_dtype dt,
                             struct CUstream_st *stream, hx_err *err);
/* Gather and add, y[i] = x[idx[i]] + u[i] (C values a row; the unpoolings' coarse rows onto their children's skip
 * rows in one pass). y may not overlap x or u; every idx[i] must be a row of x. */
hx_status nl_gather_add_cpu(float *y, const float *x, const uint32_t *idx, const float *u, size_t rows, size_t C,
                            hx_err *err);
hx_status nl_gather_add_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, const void *d_u, size_t rows, size_t C,
                            net_dtype dt, struct CUstream_st *stream, hx_err *err);
hx_status nl_from_f32_gpu(void *d_y, const float *d_x, size_t n, net_dtype dt, struct CUstream_st *stream, hx_err *err);
hx_status nl_to_f32_gpu(float *d_y, const void *d_x, size_t n, net_dtype dt, struct CUstream_st *stream, hx_err *err);

/* Segment max over rows: y[s] = max over x[idx[j]] for j in [ptr[s], ptr[s+1]) (PTv3's pooling reduce of
 * projected features, torch_scatter.segment_csr "max"). */
hx_status nl_segment_max_cpu(float *y, const float *x, const uint32_t *idx, const uint32_t *ptr, size_t segments,
                             size_t C, hx_err *err);
hx_status nl_segment_max_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, const uint32_t *d_ptr,
                             size_t segments, size_t C, net_dtype dt, struct CUstream_st *stream, hx_err *err);

/* Fixed windows over packed clouds (the public Flash3D code's attention "buckets": bucket_size-row windows of the
 * packed sequence, flash3d-code.md section 8): cloud c's rows [off[c], off[c+1]) cut into nb windows of S rows,
 * window w = rows [off[c] + w S, off[c] + (w+1) S) clipped to the cloud (empty past its end).
 * start/count get B * nb + 1 entries: window g = c * nb + w, then start off[B] with count 0 (the total a bucket
 * table's consumers read at its end). off must be non-decreasing; a cloud longer than nb windows is an error
 * (the CPU reference says so; the GPU launcher cannot see device offsets and clips it). */
hx_status nl_windows_cpu(uint32_t *start, uint32_t *count, const uint32_t *off, uint32_t B, uint32_t nb, uint32_t S,
                         hx_err *err);
hx_status nl_windows_gpu(uint32_t *d_start, uint32_t *d_count, const uint32_t *d_off, uint32_t B, uint32_t nb,
                         uint32_t S, struct CUstream_st *stream, hx_err *err);

/* ==== Submanifold sparse 3D convolution (spc_: nets/spconv.c CPU, nets/spconv.cu GPU) =============== */
/*
 * Active voxels are (batch, x, y, z) with x, y, z in [0, 2^18) and batch < 2^10 (spc_pack_key; larger is
 * HX_EINVAL at the boundary). For a kernel of
 * side k (3 or 5; r = k / 2), offset index o = ((dx + r) * k + (dy + r)) * k + (dz + r) over dx, dy, dz in
 * [-r, r]: spconv 2's weight [out, k, k, k, in] read as [out][o][in]. The kernel map of a point set holds, for
 * every output row i and offset o, the input row j whose voxel is voxel(i) + (dx, dy, dz) in the same cloud,
 * or -1: nbr[i * K + o] (K = k^3). Submanifold: outputs exactly at the inputs, so the centre offset maps i to i.
 * A map is built once per level and shared by every convolution of that level, encoder and decoder (PTv3's
 * indice_key). The GPU build is a hash table of the occupied 2^3-voxel blocks (open addressing on the packed
 * block key) and 27 (k = 5) or 8 (k = 3) block probes per point; it must give exactly the CPU map.
 *     y[i] = b + sum_o sum_{c} W[:, o, c] * x[nbr[i*K+o], c]
 */
static inline HX_HD uint64_t spc_pack_key(uint32_t b, uint32_t x, uint32_t y, uint32_t z) {
  return ((uint64_t)(b & 0x3FFu) << 54) | ((uint64_t)(x & 0x3FFFFu) << 36) | ((uint64_t)(y & 0x3FFFFu) << 18) |
         (uint64_t)(z & 0x3FFFFu);
}

#define SPC_KMAX 125u /* K of the largest kernel (k = 5) */
typedef struct spc_map {
  uint32_t n;      /* rows */
  uint32_t k;      /* kernel side (3 or 5) */
  uint32_t K;      /* k^3 */
  int32_t *nbr;    /* [n * K], host or device (whoever built it) */
  uint64_t pairs;  /* entries != -1: the real neighbour pairs (FLOPs of a conv = 2 * pairs * in * out) */
  /* The rulebook (GPU maps built with d_rule; NULL otherwise), spconv's indice_pairs: device int32
   * [2][K][n] + [K]: rule[o*n + p] = input row j and rule[K*n + o*n + p] = output row i of the p-th pair of
   * offset o (p < count, increasing i), then the K per-offset counts. Memory 8*K*n bytes, like spconv's. */
  int32_t *rule;
  /* Host copy of the per-offset counts (sum = pairs), filled with pairs. opairs[K/2] == n tells they are
   * present (the centre offset pairs every row with itself). The gather-GEMM-scatter variant sizes its GEMMs
   * from them on the host, so a forward keeps the counts its untimed prepare found. */
  uint32_t opairs[SPC_KMAX];
  /* NULL, or device [n]: the rows in mask order (spc_mask_order_gpu), built once per map and read by every
   * convolution of a variant with uses_order instead of sorting in each call (PTv3 shares a level's map the same
   * way). spc_map_gpu and spc_map_cpu set it to NULL. */
  uint32_t *order;
  /* NULL, or device [ceil(n / tile_rows)]: the tiles of tile_rows rows of `order`, most active offsets first
   * (spc_mask_tiles_gpu, built with the order): v6 runs its tiles in this order when they have tile_rows rows
   * (spc_v6_tile_rows), else last-first; on a map without an order, v6 sorts and orders its tiles in the call.
   * spc_map_gpu and spc_map_cpu set it to NULL and tile_rows to 0. */
  uint32_t *tiles;
  uint32_t tile_rows;
} spc_map;

/* CPU reference map. grid [n*3] (x, y, z per row), batch [n] (NULL: one cloud). nbr is allocated (free with
 * spc_map_free_host); pairs and opairs are filled, rule is NULL. Duplicate voxels in one cloud are HX_EINVAL
 * naming both rows. */
hx_status spc_map_cpu(spc_map *m, const uint32_t *grid, const uint32_t *batch, uint32_t n, uint32_t k, hx_err *err);
void spc_map_free_host(spc_map *m);
/* GPU map into caller memory: d_nbr [n * k^3]; d_rule NULL or int32 [spc_rule_elems(n, k)] (the rulebook
 * above); scratch by CUB's protocol (NULL asks the size; the hash table lives there; the size depends on whether
 * d_rule is NULL, not on where it points: a rulebook needs 8 n k^3 more bytes). m->pairs and m->opairs
 * are filled only when count_pairs (one stream synchronisation); otherwise they are left as they were (a
 * forward re-running the map of the input it prepared keeps prepare's counts). The device checks the input
 * (coordinates < 2^18, batch < 2^10, unique voxels per cloud) and the result is read back with the counts:
 * with count_pairs an invalid input is HX_EINVAL naming a row; without it the map of an invalid input is
 * unspecified (but every write stays in bounds). */
static inline size_t spc_rule_elems(uint32_t n, uint32_t k) { return (2u * (size_t)n + 1u) * k * k * k; }
hx_status spc_map_gpu(spc_map *m, int32_t *d_nbr, int32_t *d_rule, void *d_scratch, size_t *scratch_bytes,
                      const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, uint32_t k, int count_pairs,
                      struct CUstream_st *stream, hx_err *err);
/* The k = 5 map and the k = 3 map of the same voxels in one pass (PTv3's stem and its level-0 xCPE): the k = 3
 * map is the inner 3^3 of every row's 5^3 window, written from the same probes; equal to spc_map_gpu's maps
 * entry for entry. d_nbr5 [n * 125], d_nbr3 [n * 27]; no rulebooks and no counts (both maps' pairs and opairs are
 * left as they were, as a forward keeps what its prepare counted); scratch as spc_map_gpu's without a rulebook. */
hx_status spc_map_pair_gpu(spc_map *m5, int32_t *d_nbr5, spc_map *m3, int32_t *d_nbr3, void *d_scratch,
                           size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n,
                           struct CUstream_st *stream, hx_err *err);

/* CPU reference convolution: y [n, out] = conv(x [n, in]); w [out, K, in]; b [out] or NULL. */
hx_status spc_conv_cpu(float *y, const float *x, const float *w, const float *b, const spc_map *m, size_t in,
                       size_t out, hx_err *err);
/* A Linear after a convolution folded into it: w2 [out2, K, in] = lw [out2, out] w [out, K, in], b2 [out2] = lw b + lb
 * (b, lb NULL: zero), so that conv(x; w2, b2) = Linear(conv(x; w, b)) in real arithmetic (sums in double). */
hx_status spc_fold_linear_cpu(float *w2, float *b2, const float *w, const float *b, const float *lw, const float *lb,
                              size_t in, size_t out, size_t out2, uint32_t K, hx_err *err);
/* GPU variants (device map, dtype activations, weights re-laid out by spc_weights_upload). */
typedef struct spc_weights {
  void *d_w;      /* the variant's layout, dtype */
  float *d_b;     /* [out] fp32 or NULL */
  size_t in, out;
  uint32_t K;
  net_alloc alloc; /* where d_w and d_b came from (all NULL: cudaMalloc) */
} spc_weights;
/* Upload h_w [out, K, in] (spconv's layout) and h_b [out] (NULL: no bias) in dtype (bias fp32), drawn from alloc
 * (NULL or all-NULL: cudaMalloc), called outside timed regions. On failure nothing stays allocated. spc_weights_free frees and zeroes. */
hx_status spc_weights_upload(spc_weights *w, const float *h_w, const float *h_b, size_t in, size_t out, uint32_t K,
                             net_dtype dt, const net_alloc *alloc, hx_err *err);
void spc_weights_free(spc_weights *w);
/* PTv3's stem in one pass (spc_stem_gpu): the k = 5 convolution of in <= SPC_STEM_MAX_IN channels to out <= 32
 * (in <= 4: out <= 64), read straight from the voxel table, so its 125-entry map is never stored; then y =
 * act(scale (conv + b) + shift) on the fp32 sums (a folded inference BatchNorm; scale and shift both NULL: none), one
 * rounding to the dtype. The widths it takes, and its reference (spc_map_cpu's k = 5 map, spc_conv_cpu,
 * nl_affine_act_cpu, all in fp32): */
#define SPC_STEM_MAX_IN 8u
static inline int spc_stem_takes(size_t in, size_t out) {
  return in && out && in <= SPC_STEM_MAX_IN && out <= (in <= 4u ? 64u : 32u);
}
hx_status spc_stem_cpu(float *y, const float *x, const float *w, const float *b, const float *scale, const float *shift,
                       nl_act act, const spc_map *m, size_t in, size_t out, hx_err *err);
/* w: spc_weights_upload's, K = 125. m5 gets n, k, K and no map (nbr NULL); with count_pairs also pairs and opairs
 * (one stream synchronisation; the input is then checked and an invalid one is HX_EINVAL naming a row, as
 * spc_map_gpu's); without, they are left as they were. m3 (or NULL) and d_nbr3 [n * 27]: the k = 3 map of the same
 * voxels, as spc_map_pair_gpu's. Scratch by CUB's protocol (the voxel table). Widths spc_stem_takes refuses, or a
 * device without the shared memory, are HX_EUNSUPPORTED (the map and a convolution variant take those). */
hx_status spc_stem_gpu(void *d_y, const void *d_x, const spc_weights *w, const float *d_scale, const float *d_shift,
                       nl_act act, spc_map *m5, spc_map *m3, int32_t *d_nbr3, void *d_scratch, size_t *scratch_bytes,
                       const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, int count_pairs, net_dtype dt,
                       struct CUstream_st *stream, hx_err *err);
/* The variants' library context (v0's cuBLAS handle), created once per forward object, never in a timed region. */
typedef struct spc_ctx spc_ctx; /* opaque */
hx_status spc_ctx_create(spc_ctx **out, hx_err *err);
void spc_ctx_destroy(spc_ctx *c);
/* y = conv(x) on the map m (device, with its rulebook and counts for v0); d_y must not alias d_x. Scratch by
 * CUB's protocol, sized from m->n and the weights. */
typedef hx_status (*spc_conv_fn)(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                                 size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, struct CUstream_st *stream,
                                 hx_err *err);
typedef struct spc_variant {
  int id;           /* v0: gather-GEMM-scatter per offset through cuBLAS; v1: fused implicit GEMM; v2: small in;
                     * v3: v1 over rows sorted by neighbour mask (spc_mask_order_cpu is its order's reference);
                     * v4: v3 with a deeper pipeline; v5: each tile's input halo in shared memory (k = 3) */
  const char *name;
  spc_conv_fn fn;
  int needs_rule;   /* 1: reads the map's rulebook and host counts (v0); 0: only nbr (v1, v2, v3), and needs no ctx */
  int uses_order;   /* 1: convolves in the map's row order when the map has one (v3), else builds it in scratch */
} spc_variant;
int spc_variant_count(void);
const spc_variant *spc_variant_get(int i);
const spc_variant *spc_variant_by_id(int id); /* NULL when no variant has that id */
/* The row order v3 (and v4, v6) convolve in: rows sorted by their neighbour mask (bit o set when nbr[i * K + o] is
 * a row of the map), ascending, rows of one mask in increasing order (a stable sort). A 16-row group of rows that
 * share a mask has neighbours at fewer offsets, so the kernels skip more (group, offset) steps. order [m->n];
 * K <= 32 (HX_EINVAL otherwise). The CPU reference, and the GPU order (a mask kernel and CUB's stable radix sort)
 * into d_order [m->n] with scratch by CUB's protocol; the two are equal. */
hx_status spc_mask_order_cpu(uint32_t *order, const spc_map *m, hx_err *err);
hx_status spc_mask_order_gpu(uint32_t *d_order, const spc_map *m, void *d_scratch, size_t *scratch_bytes,
                             struct CUstream_st *stream, hx_err *err);
/* The order v6 takes its tiles in: tiles of tile_rows rows of the rows taken in `order` (NULL: as they are), the
 * ones with the most active offsets (an offset where one of the tile's rows has a neighbour: a step of v6's
 * kernel) first, ties in increasing tile index (a stable sort). The block scheduler hands out tiles in launch
 * order, so the lightest run in the last wave (longest processing time first). tiles [ceil(n / tile_rows)]; K <=
 * 32 and tile_rows > 0 (HX_EINVAL otherwise). The CPU reference; spc_mask_tiles_gpu is the mask order and this
 * order of its tiles in one call (d_tiles NULL: spc_mask_order_gpu, same scratch), equal to the CPU's. */
hx_status spc_tile_order_cpu(uint32_t *tiles, const spc_map *m, const uint32_t *order, uint32_t tile_rows,
                             hx_err *err);
hx_status spc_mask_tiles_gpu(uint32_t *d_order, uint32_t *d_tiles, uint32_t tile_rows, const spc_map *m,
                             void *d_scratch, size_t *scratch_bytes, struct CUstream_st *stream, hx_err *err);
/* The rows of v6's tiles for out output channels (128, or 256 where its output slice is 128 channels): the
 * tile_rows of the tile order its convolutions read. */
uint32_t spc_v6_tile_rows(size_t out);
/* The (16-row group, offset) steps v1's kernel multiplies over rows taken in `order` (NULL: as they are; groups
 * are rows [16 g, 16 g + 16) of that sequence, as v1's tiles are multiples of 16): a group steps at offset o when
 * one of its rows has a neighbour there. 16 x steps / m->pairs is the padding of v1's tensor work. */
uint64_t spc_group_steps_cpu(const spc_map *m, const uint32_t *order);
/* Each tile's halo: halo[t] = the distinct input rows the map rows of tile t name, tiles of `tile` rows taken in
 * `order` (NULL: as they are), ceil(m->n / tile) of them; entries outside [0, n) count as none. The rows v5 copies
 * into shared memory per tile and chunk; their sum over the tiles is the input reads of the spconv roofline. */
hx_status spc_tile_halos_cpu(uint32_t *halo, const spc_map *m, const uint32_t *order, uint32_t tile, hx_err *err);
/* What v1's kernel (v1, v3; deep: v4) would launch for this map and these weights on a device with smem_optin
 * bytes of shared memory per CTA (0: the current device's): the tile rows (256 for k = 3 maps of >= 16384 rows
 * where that tile fits, as on sm_90; 128 otherwise, as at 128 output channels on sm_80's 163 KB) and the cp.async
 * pipeline stages (3; with deep, up to 8 at 256-row tiles where they fit). Nothing is launched and, with
 * smem_optin given, no device is asked. HX_EUNSUPPORTED for widths v1 does not take, HX_ENODEV without CUDA. */
hx_status spc_launch_plan(int *tile_rows, int *stages, const spc_map *m, const spc_weights *w, int deep,
                          int smem_optin, hx_err *err);
/* The halo rows a v5 tile holds in one page for these weights on a device with smem_optin bytes of shared memory
 * per CTA and smem_sm per SM (either <= 0: the current device's): two CTAs an SM where half the SM holds 512 rows
 * at out slices of <= 64 channels, else one CTA with all it may take. A 128-row tile whose map names more input
 * rows runs in pages. HX_EUNSUPPORTED for widths v5 does not take (v1's: in and out multiples of 16). */
hx_status spc_v5_halo_rows(uint32_t *rows, const spc_weights *w, int smem_optin, int smem_sm, hx_err *err);
/* The best variant for (in, out) at K offsets on this build, whatever the device (spc_variant_main refines it): v2
 * where in <= 8; v8 at K = 27 and in = 32 (out a multiple of 32); where in and out are multiples of 16, v3 at
 * K = 27 (k = 3, PTv3's xCPE) and v1 at other K; else v0. A map whose convolutions all take a variant without
 * needs_rule can be built without d_rule. */
const spc_variant *spc_variant_best(size_t in, size_t out, uint32_t K);
/* The main path's variant on the current device: v6 where spc_variant_best gives v3 and v6 takes the widths here
 * (multiples of 32, a compute capability 9.0 device running this build's sm_90a image, a driver with the TMA
 * descriptor encoder; it asks once per thread and device), else spc_variant_best. The PTv3 forward and the
 * sweep's spconv stage use it. */
const spc_variant *spc_variant_main(size_t in, size_t out, uint32_t K);
/* Whether v takes (in, out) at K by its channel rule alone (v6's device check aside; its size query asks that too). */
int spc_variant_takes(const spc_variant *v, size_t in, size_t out, uint32_t K);
/* v's size query for (in, out) at K on the current device, an empty map: HX_OK where it runs them, HX_EUNSUPPORTED
 * for widths (or a device) it does not take, HX_ENODEV in a build without CUDA, HX_EINVAL for v NULL. */
hx_status spc_variant_query(const spc_variant *v, size_t in, size_t out, uint32_t K);

/* ==== safetensors (stf_: nets/safetensors.c) ========================================================== */
/*
 * Reader and writer of the safetensors format: 8-byte little-endian header length, a JSON header
 * {"name": {"dtype": "F32"|"F16"|"BF16"|.., "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {string:
 * string}} in UTF-8, then raw little-endian data that the tensors' offsets cover exactly (no gap, nothing after). The reader takes F32, F16, BF16, F64 and the integer dtypes of a state_dict
 * (I64 .. I8, U64 .. U8, BOOL), every value converted to fp32. Every malformed header, offset outside the file,
 * overlap, shape/size mismatch or unsupported dtype is HX_EFORMAT naming the file and the tensor; never a crash.
 */
typedef struct stf_tensor {
  char name[128];
  int ndim;
  int64_t shape[8];
  float *data;   /* converted to fp32 */
  char dtype[8]; /* read: the file's dtype ("F32", "I64", ..); the writer ignores it and writes F32 */
} stf_tensor;
typedef struct stf_file {
  stf_tensor *t;
  size_t n;
} stf_file;
hx_status stf_read(stf_file *out, const char *path, hx_err *err);
void stf_free(stf_file *f);
/* fp32 tensors, written atomically (temporary name, rename). */
hx_status stf_write(const char *path, const stf_tensor *t, size_t n, hx_err *err);

/* ==== Models (net_: nets/net.c registry and parameters, net_ptv3*.c / net_flash3d*.c) ================ */

typedef struct net_tensor {
  char name[128]; /* PyTorch state_dict key, e.g. "backbone.enc.enc0.block0.attn.qkv.weight" */
  int ndim;
  int64_t shape[5];
  float *data;    /* host fp32, owned by the net_params */
  int counted;    /* 1: a learnable parameter (counts toward net_params_count); 0: a buffer (BN running stats) */
} net_tensor;

typedef struct net_params {
  net_tensor *t;
  size_t n, cap;
} net_params;
hx_status net_params_add(net_params *p, const char *name, int ndim, const int64_t *shape, int counted,
                         net_tensor **out, hx_err *err);
const net_tensor *net_params_find(const net_params *p, const char *name);
uint64_t net_params_count(const net_params *p);
void net_params_free(net_params *p);
/* Replace every tensor's values with those of a safetensors file: every expected name present with its exact
 * shape and a float dtype, no extra names (HX_EFORMAT naming the first missing, extra, mis-shaped or integer
 * tensor), no NaN/Inf, and no negative value in a BatchNorm running_var. The state_dict entries no forward reads are ignored, counted in *ignored (NULL: not
 * reported): keys ending in ".num_batches_tracked" (BatchNorm's counter, Pointcept and Flash3D) or
 * "._extra_state" (TransformerEngine modules' FP8 metadata, Flash3D); any other extra key is refused. */
hx_status net_params_load(net_params *p, const char *path, size_t *ignored, hx_err *err);
hx_status net_params_save(const net_params *p, const char *path, hx_err *err);

/* One input batch: B clouds concatenated; cloud c owns rows [offset[c], offset[c+1]). feat = (x, y, z,
 * intensity) as both models take it (in_channels 4). Host pointers for the CPU forward; the GPU forward
 * uploads them itself. */
typedef struct net_input {
  const float *xyz;      /* [n*3] */
  const float *feat;     /* [n*C_in] */
  const size_t *offset;  /* [B+1] */
  uint32_t B;
  size_t n;
  double grid_size;      /* voxel size (m): PTv3's GridSample grid and Flash3D's PSH voxel */
  uint64_t seed;         /* order shuffles (PTv3), PSH seeds (Flash3D) */
} net_input;

/* What a forward hands back (host, fp32): logits [n, classes] in input row order, and optionally every level's
 * output (encoder levels after their blocks, decoder levels after theirs) for --save. */
#define NET_MAX_LEVELS 8
typedef struct net_output {
  float *logits;                      /* [n * classes] */
  size_t n, classes;
  float *level[2 * NET_MAX_LEVELS];   /* NULL where not asked for */
  size_t level_rows[2 * NET_MAX_LEVELS], level_C[2 * NET_MAX_LEVELS];
  char level_name[2 * NET_MAX_LEVELS][32]; /* "enc0".."enc4", "dec3".."dec0" */
  size_t n_levels;
} net_output;
void net_output_free(net_output *o);

/* Timing and profiling reach a forward only through these callbacks (all optional; NULL hooks = none).
 * range(ctx, name, 1) before and range(ctx, name, 0) after each named piece of work, on the forward's stream;
 * names nest: "enc2", "enc2/block1", and every innermost range is one component whose category is its last
 * path element's prefix before '.', from the fixed list NET_COMPONENTS (e.g. "enc2/block1/attn"). The hook
 * records events, pushes NVTX or CUPTI ranges; it must not synchronise when capture is set. */
#define NET_COMPONENTS "serialize,psh,cpe,norm,qkv,attn,gather,proj,mlp,pool,unpool,embed,head"
typedef struct net_hooks {
  void (*range)(void *ctx, const char *name, int begin, struct CUstream_st *stream);
  void *ctx;
} net_hooks;

/* net_config's mlp_chunk default: 2^25 hidden elements, 64 MiB of fp16 (128 MiB for an unfused SwiGLU's input). */
#define NET_MLP_CHUNK ((size_t)1 << 25)

/* A model: named configuration, its parameters, CPU and GPU forwards. */
typedef struct net_config {
  char name[32];         /* "ptv3", "ptv3-patch4096", "ptv3-tiny", "flash3d-public", "flash3d-46m", ... (net_config_names) */
  int kind;              /* 0 PTv3-m1, 1 Flash3D */
  int levels;            /* encoder levels */
  int enc_depth[NET_MAX_LEVELS], enc_channels[NET_MAX_LEVELS], enc_heads[NET_MAX_LEVELS];
  int dec_depth[NET_MAX_LEVELS], dec_channels[NET_MAX_LEVELS], dec_heads[NET_MAX_LEVELS];
  int in_channels, classes, mlp_ratio;
  int patch;             /* PTv3: patch size (1024) */
  int bucket, scope;     /* Flash3D: bucket rows (512), buckets per scope (8) */
  int rehash;            /* Flash3D: 1 = each encoder level runs a PSH of its own pooled points */
  double bucket_fill;    /* Flash3D: buckets per cloud of a hashed level. 0: the public code's rule, the next power
                          * of two >= rows / bucket (fill 50-100%, a step at each power of two); f in [0.1, 1]:
                          * ceil(rows / (bucket f)), every hashed level filled to about f (latency then grows in
                          * proportion to the points; docs/nets.md) */
  int spconv_force;      /* PTv3 on the GPU: 0 = spc_variant_main for every convolution (the default); 1 + id =
                          * variant id for the k = 3 (xCPE) ones whose widths it takes, spc_variant_main's for the
                          * others (an ablation; an unknown id is an error) */
  int attn_force;        /* on the GPU: 0 = battn_variant_best at every level (the default); 1 + id = that attention
                          * variant at every level (an ablation; one that does not run here, or whose id is unknown,
                          * is an error at create) */
  int mlp_fused;         /* on the GPU: 1 = nl_mlp_gpu for the blocks whose (C, 4C) it takes (PTv3's GELU MLP at C
                          * 32, 64, 128 and 256, Flash3D's SwiGLU MLP at C 32, 48, 64, 80, 96, 128, 160 and 192) and,
                          * for Flash3D's other blocks, fc1 + SwiGLU as nl_linear_swiglu_gpu where it takes the width
                          * (also where the device cannot run nl_mlp_gpu's wgmma kernel at C 96; the default,
                          * docs/layers.md "The fused MLP"); 2 = Flash3D: nl_linear_swiglu_gpu wherever it takes the
                          * width, never nl_mlp_gpu (an ablation); 0 = nl_linear_gpu calls (and Flash3D's
                          * nl_swiglu_gpu) at every width (an ablation) */
  int ln_fused;          /* on the GPU: 1 = a LayerNorm inside the kernel of the Linear next to it where one takes
                          * the width (a block's norm.1 in its qkv Linear at C 32 and 64, Flash3D's also at 48 and 96;
                          * PTv3's xCPE LayerNorm + residual in its Linear at C 32 and 64; the MLP's LayerNorm in the
                          * whole-MLP kernel; the default, docs/layers.md
                          * "LayerNorm inside the kernels"); 0 = separate LayerNorm passes (an ablation) */
  int stem_fused;        /* PTv3 on the GPU: 1 = the stem in one pass, spc_stem_gpu (its k = 5 map never stored), where
                          * it takes the widths and level 0's k = 3 map needs no rulebook (the default); 0 = the k = 5
                          * map, a convolution variant and the BatchNorm + GELU pass (an ablation) */
  int tile_order;        /* PTv3 on the GPU: 1 = spconv v6 takes a level's tiles most active offsets first (the
                          * map's tile order, spc_mask_tiles_gpu, once per level; the default); 0 = last-first (an
                          * ablation) */
  int overlap;           /* PTv3 on the GPU: 1 = the structure (serialization, pooling structure, kernel maps with their
                          * orders, padding: what the coordinates alone decide) on a second stream of the device's
                          * highest priority, ahead of the features, which wait for each level's (the default; a
                          * forward with hooks runs on one stream, so each range holds its own work); 0 = one stream
                          * (an ablation, docs/nets.md "The structure ahead") */
  int cpe_fold;          /* PTv3 on the GPU: 1 = each xCPE's Linear folded into its convolution's weights at create
                          * (spc_fold_linear_cpu; x += LN(conv'(x)), one GEMM fewer a block: the default, 0.34 ms less
                          * at 600k on an H200, docs/nets.md); 0 = conv, then the Linear (an ablation) */
  int lt_tune;           /* on the GPU: 1 = each cuBLASLt shape's algorithm timed among the heuristic's first 8 when the
                          * forward first runs it (NL_BLAS_TUNED, in prepare; the default); 0 = the heuristic's first
                          * (NL_BLAS_FIRST: an ablation, and bits that do not depend on timings) */
  size_t mlp_chunk;      /* on the GPU: the most elements a block's MLP holds in its hidden rows outside one kernel
                          * (fc1's [rows, H] output, or its [rows, 2H] SwiGLU input where unfused: twice that): the
                          * rows go through fc1, the activation and fc2 in chunks of net_mlp_chunk_rows, so the work
                          * buffers are sized for a chunk, not a level (NET_MLP_CHUNK, the default; 0 = every row at
                          * once, an ablation). The one-kernel MLPs hold no hidden row and run whole */
  int keep_levels;       /* on the GPU: 0 = the level activations held only while a later step reads them (the
                          * default): PTv3's decoder outputs share one buffer, Flash3D's level inputs and decoder
                          * streams one and its encoder streams another, each sized for the largest level; the skips
                          * (PTv3's encoder outputs, Flash3D's pooling projections) stay per level. 1 = every level
                          * keeps its own, so net_gpu_download can fetch them after the forward (net --save) */
} net_config;

hx_status net_config_named(net_config *cfg, const char *name, hx_err *err); /* unknown name: HX_EINVAL listing all */
/* Flash3D: buckets per cloud of a hashed level whose largest cloud has n rows, buckets of S rows, net_config's
 * bucket_fill rule (0: psh_auto_buckets; f: ceil(n / (S f)), at least 1; past PSH_NB_MAX psh_params_check refuses). */
uint32_t net_f3d_buckets(size_t n, uint32_t S, double fill);
const char *const *net_config_names(size_t *n);
/* PTv3 models: the serialization order each of level s's four code rows holds after PTv3's shuffles (Pointcept
 * draws torch.randperm(4) at the serialization and at every pooling; here sfc_row_perm(seed, s), s = 0 the
 * serialization): orders[r] is row r's sfc_order (z, z-trans, hilbert, hilbert-trans), and block i of level s,
 * encoder and decoder, attends in row i % 4. Both forwards encode level 0 in these orders; their poolings apply
 * the same sfc_row_perm(seed, s) to the parent's rows (nets_ptv3 asserts every level's codes agree with the names).
 * net --save writes them (orders.txt) so a Pointcept run can be given the same. HX_EINVAL for a Flash3D model or a
 * level out of range. */
hx_status net_ptv3_orders(const net_config *cfg, uint64_t seed, int s, int orders[4], hx_err *err);

/* Parameters with the configuration's exact names and shapes, seeded random values (PyTorch's default init
 * ranges; BatchNorm statistics drawn near mean 0, var 1 so the fold is exercised). */
hx_status net_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err);

/* Full fp32 CPU forward (the reference every GPU forward is checked against). */
hx_status net_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                          int keep_levels, hx_err *err);

/* GPU forward object: device weights in dtype, a cuBLASLt context, and the level plans of the last input. */
typedef struct net_gpu net_gpu;
hx_status net_gpu_create(net_gpu **out, const net_config *cfg, const net_params *p, net_dtype dt,
                         const net_alloc *alloc, hx_err *err);
void net_gpu_destroy(net_gpu *g);
/* Bytes the forward of `in` would hold at its peak (weights included), computed on the host before any
 * allocation: what the program compares with cudaMemGetInfo to refuse an input that cannot fit. */
hx_status net_gpu_bytes(size_t *bytes, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err);
/* Where those bytes go: the same sizing pass by kind of buffer and by buffer (each label summed over the levels,
 * in the order the forward allocates them). Invariants: total == net_gpu_bytes, the kinds sum to total, the parts
 * sum to total (a buffer past NET_MEM_PARTS labels is added to the last part, named "other"). */
typedef enum net_mem_kind {
  NET_MEM_WEIGHTS,   /* parameters in the dtype (folded BatchNorms, packed convolution weights) */
  NET_MEM_IO,        /* the input points and features, the logits */
  NET_MEM_STRUCTURE, /* per level: codes, orders, kernel maps, buckets, pooling plans, index arrays */
  NET_MEM_LEVELS,    /* activations: each level's skip the decoder reads back, the streams (net_config keep_levels) */
  NET_MEM_WORK,      /* work buffers shared by the levels, each sized for the largest level that uses it */
  NET_MEM_SCRATCH,   /* the launchers' scratch blocks (sorts, scans, partial sums) */
  NET_MEM_KINDS
} net_mem_kind;
#define NET_MEM_PARTS 48
typedef struct net_mem_part {
  const char *label; /* a static string naming the buffer */
  net_mem_kind kind;
  uint32_t count; /* buffers under the label (one a level, say) */
  size_t bytes;   /* each allocation rounded up to 256 bytes, as the forward allocates them */
} net_mem_part;
typedef struct net_mem {
  size_t total, kind[NET_MEM_KINDS];
  uint32_t n_parts;
  net_mem_part part[NET_MEM_PARTS];
} net_mem;
hx_status net_gpu_memory(net_mem *m, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err);
/* "weights", "io", "structure", "levels", "work", "scratch"; NULL past the kinds. */
const char *net_mem_kind_name(net_mem_kind k);
/* net_gpu_prepare refuses an input feature past the dtype's largest finite value (fp16: 65504; HX_EINVAL naming
 * the point: the forward converts the features to the dtype first), uploads the input and runs the data-dependent
 * structure once (serialization or PSH, pooled sizes of every level, kernel maps) to learn every size, then
 * allocates every buffer: untimed. net_gpu_forward
 * is the timed forward, everything from the uploaded points to the logits: serialization / PSH, kernel maps,
 * pooling, every layer, re-run from the input each call, with the sizes prepare found; no allocation, and no
 * host synchronisation, so it can be captured in a CUDA graph (a step that cannot avoid one says so in
 * net_gpu_graphable and docs/nets.md). net_gpu_download fetches logits (and, when keep_levels, every
 * level's output: HX_EINVAL unless the object was created with net_config's keep_levels) in input row order. */
hx_status net_gpu_prepare(net_gpu *g, const net_input *in, struct CUstream_st *stream, hx_err *err);
hx_status net_gpu_forward(net_gpu *g, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err);
hx_status net_gpu_download(net_gpu *g, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err);
/* The whole-network check: the GPU forward of `in` (already prepared and run on g) against the fp32 CPU forward on
 * the same structure (for Flash3D the GPU's own bucket layouts: PSH placement may differ where threads race).
 * Passes when every logit is finite and the relative L2 error ||gpu - cpu|| / ||cpu|| <= tol; HX_ECHECK with the
 * figures otherwise. net_check_tolerance gives the stated tolerance of a dtype (docs/nets.md says why). */
typedef struct net_check_report {
  double rel_l2, max_abs, ref_rms, tol;
  size_t nonfinite, n;
} net_check_report;
double net_check_tolerance(net_dtype dt);
/* The check's arithmetic on m logits already in hand (got against ref, both fp32): the report net_gpu_check fills,
 * tol that of dt; returns 1 when it passes (every logit finite, rel_l2 <= tol), else 0. */
int net_check_logits(net_check_report *rep, const float *got, const float *ref, size_t m, net_dtype dt);
hx_status net_gpu_check(net_check_report *rep, net_gpu *g, const net_params *p, const net_input *in,
                        struct CUstream_st *stream, hx_err *err);
/* 1 when net_gpu_forward never synchronises the host (it may then be captured in a CUDA graph). */
int net_gpu_graphable(const net_gpu *g);
/* Bytes the forward object holds after prepare (weights, plans, activations): the arena's view. */
size_t net_gpu_held_bytes(const net_gpu *g);
/* What its cuBLASLt plans did so far (nl_blas_stats: shapes planned, timed, moved off the heuristic's first); zeros
 * for NULL. */
void net_gpu_blas_stats(const net_gpu *g, nl_blas_stats *out);

/* The cost model of a prepared forward (nets/net_costs.c states every formula): per component, named as the hook
 * categories of NET_COMPONENTS (only those the model runs, in that list's order), then one entry "forward" holding
 * the sums. gemm_flops: 2 * rows * in * out of every Linear and 2 * pairs * in * out of every sparse convolution
 * (the real neighbour pairs of its kernel map); attn_flops: 4 * H * D * sum over query rows of the keys each
 * attends to (PTv3: padded patches; Flash3D: bucket scopes with their real rows); bytes: the fewest bytes the
 * component's operations must move through DRAM, each input read once, each output written once, weights once.
 * Shapes are those of the prepared input (Flash3D: the bucket layouts of the last forward, which waits for the
 * device). out has room for cap entries (NET_COSTS_MAX always suffices); *n gets the count. HX_EUNSUPPORTED where
 * the model has no cost model, HX_EINVAL before a successful prepare or when cap is too small. */
#define NET_COSTS_MAX 16
/* With rates (a GEMM rate in FLOP/s and a copy bandwidth in B/s, both > 0) each entry also gets its floor summed
 * operation by operation: an operation without attention FLOPs takes the more of its GEMM FLOPs at the GEMM rate and
 * its bytes at the bandwidth, as its own kernel would at best, and op_gemm_s and op_mem_s sum the operations each
 * bounds (seconds); attn_bytes holds the attention operations' bytes, whose floor needs the attention kernel's rate
 * (the caller's). Without rates (NULL) those three are NaN. */
typedef struct net_cost_rates {
  double gemm_flops_s, copy_bytes_s;
} net_cost_rates;
typedef struct net_cost {
  char name[16];
  double gemm_flops, attn_flops, bytes;
  double op_gemm_s, op_mem_s, attn_bytes;
} net_cost;
hx_status net_gpu_costs(const net_gpu *g, const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n,
                        hx_err *err);

#ifdef __cplusplus
}
#endif
#endif /* F3D_NETS_H */
