/*
 * spconv_device.cuh - private to nets/: the device helpers the implicit-GEMM convolutions share (v1's mma.sync
 * kernel and its relatives in spconv.cu, v6's wgmma kernel in spconv_wgmma.cu) and the fused MLPs (mlp.cu,
 * mlp_wgmma.cu) use: 16-byte cp.async copies, the shared-memory tile swizzle both kinds of kernel write their tiles
 * in, the packing of two fp32 outputs and its inverse, ldmatrix.x4, the m16n8k16 mma.sync, the exact-erf GELU (also
 * layers.cu's), the hardware tanh and GELU's tanh form.
 */
#ifndef F3D_NETS_SPCONV_DEVICE_CUH
#define F3D_NETS_SPCONV_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace spc_dev {

/* Byte offset of 16-byte chunk c of row r in a [rows][CPR chunks] tile, XOR-swizzled so that the 8 row
 * addresses of one ldmatrix phase (8 consecutive rows starting at a multiple of 8, one chunk column) fall in 8
 * distinct 16-byte bank groups: rows of one 128-byte line (RPL of them) already differ, and the chunk index is
 * XORed with the line number. BK = 64: c ^ (r % 8); 32: c ^ ((r / 2) % 4); 16: c ^ ((r / 4) % 2). It is also the
 * hardware's 128-, 64- and 32-byte swizzle of wgmma's K-major shared-memory operands (address bits [7, 10) XORed
 * into [4, 7)) for a tile whose base is aligned to the swizzle atom (8 rows). Rows of more than 8 chunks (the fused
 * MLP's fc2 rows) XOR the chunk's low 3 bits with r % 8, as at 8 chunks; that is no wgmma layout. */
template <int CPR> __device__ __forceinline__ uint32_t swz(int r, int c) {
  constexpr int X = CPR < 8 ? CPR : 8, RPL = 8 / X; /* RPL = 8 / CPR up to 8 chunks */
  return (uint32_t)(r * CPR * 16 + ((c ^ ((r / RPL) % X)) * 16));
}

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16-byte asynchronous copies global -> shared; src_bytes 0 reads nothing and writes 16 zero bytes (the
 * missing neighbours' rows). .ca keeps gathered rows in L1 (v1's tiles in the level's order: a row is a
 * neighbour of several rows of a tile, at several offsets), .cg goes through L2 only (v1's weights; v6's rows,
 * whose mask-sorted tiles are spread over the cloud: PTv3's 600k forward 33.10 against 33.17 ms on .ca). */
__device__ __forceinline__ void cp_async_ca(uint32_t dst, const void *src, uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_cg(uint32_t dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_cg(uint32_t dst, const void *src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* two fp32 values rounded to the dtype (the tag's type), in one 32-bit word */
__device__ __forceinline__ uint32_t pack2(float a, float b, __half) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t *>(&h);
}
__device__ __forceinline__ uint32_t pack2(float a, float b, __nv_bfloat16) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t *>(&h);
}
/* and back: the two values of a 32-bit word of the dtype T, low half first */
template <typename T> __device__ __forceinline__ float2 unpack2(uint32_t u);
template <> __device__ __forceinline__ float2 unpack2<__half>(uint32_t u) {
  return __half22float2(*reinterpret_cast<const __half2 *>(&u));
}
template <> __device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t u) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u));
}

/* torch.nn.GELU(): 0.5 v (1 + erf(v / sqrt 2)), the form of nets/layers.c's reference */
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

/* GELU's tanh form, 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))), cuBLASLt's fused GELU: within 4.74e-4 of
 * the erf form (tests/nets/test_layers.c measures it). tanh.approx.f32 (one MUFU op, relative error 2^-11) makes it
 * 5 instructions against erff's ~25. */
/* tanh on the MUFU unit: tanh.approx.f32, relative error 2^-11 */
__device__ __forceinline__ float tanh_approx(float u) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  return t;
}

__device__ __forceinline__ float gelu_tanh(float v) {
  const float u = v * fmaf(0.0356774081363001f, v * v, 0.7978845608028654f), hv = 0.5f * v;
  return fmaf(hv, tanh_approx(u), hv);
}

/* SwiGLU's silu(a) b, silu on the hardware tanh: a sigmoid(a) = a / 2 + a / 2 tanh(a / 2) */
__device__ __forceinline__ float swiglu(float a, float b) {
  const float ha = 0.5f * a;
  return fmaf(ha, tanh_approx(ha), ha) * b;
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

/* d += a b: m16n8k16, A row-major (4 regs), B column-major (2 regs), fp32 accumulators. */
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace spc_dev

#endif /* F3D_NETS_SPCONV_DEVICE_CUH */
