/*
 * wgmma_device.cuh - private to nets/: what nets' Hopper kernels share (v6's convolution in spconv_wgmma.cu, the whole
 * MLP at C = 96-256 in mlp_wgmma.cu, fc1 + SwiGLU at C >= 128 in swiglu_wgmma.cu). Device side, only in the sm_90a
 * image (NWG_ON): the wgmma instructions (both operands from shared memory, or A from registers), their fences and
 * waits, mbarriers, the TMA tile copy, setmaxnreg and the shared-memory matrix descriptor. Host side: the driver's TMA
 * descriptor encoder, a 2-D tensor map in wgmma's swizzle, the SM count, and the check that the device runs this
 * build's sm_90a image.
 * The same wrappers as attention's (kernels/attn_wgmma.cu): .cuh files stay in their folder (STYLE.md).
 */
#ifndef F3D_NETS_WGMMA_DEVICE_CUH
#define F3D_NETS_WGMMA_DEVICE_CUH

#include "base/base.h"
#include "nets/nets.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NWG_ON 1
#else
#define NWG_ON 0
#endif

/* HX_OK when the current device is compute capability 9.0, runs the sm_90a image of nets' wgmma files (a probe
 * kernel, compiled with them, says so) and the driver has cuTensorMapEncodeTiled; HX_EUNSUPPORTED naming who
 * otherwise. Cached per thread and device: the answer never flips within a process. (spconv_wgmma.cu) */
extern "C" hx_status nwg_sm90a_check(const char *who, hx_err *err);

/* nl_mlp_gpu (d_g NULL) and nl_ln_mlp_gpu (d_g, d_beta, eps: y += MLP(LN(y)), d_x unused) on the wgmma kernel
 * (mlp_wgmma.cu), hidden 4C: GELU at C = 128 and 256, SwiGLU at C = 96, 128, 160 and 192 (nl_mlp_wg_takes);
 * arguments checked by the callers (mlp.cu); HX_EUNSUPPORTED where nwg_sm90a_check refuses; HX_EINVAL for
 * scratch_bytes under nl_mlp_wg_scratch's. nl_mlp_wg_scratch: the scratch the launch needs for rows of C on the
 * current device (0 where it takes whole tiles or cannot run). */
static inline int nl_mlp_wg_takes(size_t C, nl_mlp_kind kind) {
  return nl_mlp_gpu_takes(C, 4 * C, kind) && C > 80; /* past 80 the weights leave mlp.cu's shared memory */
}
extern "C" hx_status nl_mlp_wg_launch(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, const void *d_w2,
                                      const void *d_b2, size_t rows, size_t C, nl_mlp_kind kind, const float *d_g,
                                      const float *d_beta, float eps, void *d_scratch, size_t scratch_bytes,
                                      net_dtype dt, struct CUstream_st *stream, hx_err *err);
extern "C" hx_status nl_mlp_wg_scratch(size_t rows, size_t C, nl_mlp_kind kind, size_t *bytes, hx_err *err);
/* nl_linear_swiglu_gpu on the wgmma GEMM (swiglu_wgmma.cu): the widths nl_linear_swiglu_gpu_takes gives it, past
 * mlp.cu's mma.sync kernel (C <= 96); arguments checked by the caller (mlp.cu); HX_EUNSUPPORTED where
 * nwg_sm90a_check refuses. */
static inline int nl_lsw_wg_takes(size_t C, size_t H) {
  return nl_linear_swiglu_gpu_takes(C, H) && C > 96;
}
extern "C" hx_status nl_lsw_wg_launch(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, size_t rows,
                                      size_t C, size_t H, net_dtype dt, struct CUstream_st *stream, hx_err *err);

namespace nwg {

#if NWG_ON
/* cp.async and st.shared writes are generic-proxy writes; wgmma reads through the async proxy */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* keeps the compiler from reading an accumulator of an in-flight wgmma before the wait that completes it */
__device__ __forceinline__ void pin(float &x) { asm volatile("" : "+f"(x)::"memory"); }

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* the initialised barriers visible to the async proxy, whose TMA copies complete bytes on them (after mbar_init) */
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred P1;\nNWG_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               "@P1 bra NWG_DONE;\nbra NWG_WAIT;\nNWG_DONE:\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/* one TMA tile copy of a 2-D tensor (coordinates: innermost first) into shared memory, completing its bytes on
 * bar; coordinates outside the tensor read as zeros (and still count their bytes) */
__device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap *tm, int c0, int c1, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(tm)), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}
template <int N> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

/* Shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte units), swizzle
 * mode in bits 62-63 (1 = 128 B, 2 = 64 B). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo, int mode) {
  return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)mode << 62);
}
/* d (m64 x N fp32, N / 2 a thread) = A B (scale_d 0) or += A B (1). wg_ss: A (64 x 16) and B (N x 16) K-major in
 * shared memory (descriptors da, db). wg_rs: A from registers a[0..3] (the m64k16 fragment: rows lane / 4 and
 * + 8 of the warp's 16, columns 2 (lane % 4) + {0, 1} and + 8, the accumulator layout of two n8 blocks), B K-major
 * in shared memory. */
template <typename T, int N> __device__ __forceinline__ void wg_ss(float *d, uint64_t da, uint64_t db, int scale_d = 1);
template <typename T, int N> __device__ __forceinline__ void wg_rs(float *d, const uint32_t (&a)[4], uint64_t db);
#define WG_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define WG_D16(i) WG_D8(i), WG_D8(i + 8)
#define WG_D32(i) WG_D16(i), WG_D16(i + 16)
#define WG_D64(i) WG_D32(i), WG_D32(i + 32)
#define WG_D48(i) WG_D32(i), WG_D16(i + 32)
#define WG_D80(i) WG_D64(i), WG_D16(i + 64)
#define WG_D96(i) WG_D64(i), WG_D32(i + 64)
#define WG_D128(i) WG_D64(i), WG_D64(i + 64)
/* The accumulators' operand numbers %0 .. %(N/2 - 1): WG_R<k> 16 of them, WG_A<m> the first m; the other operands
 * follow them: the preprocessor cannot count, so each instance names their numbers. */
#define WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define WG_R1 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_R2 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define WG_R3 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WG_R4 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define WG_R5 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define WG_R6 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define WG_R7 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WG_A32 WG_R0 ", " WG_R1
#define WG_A64 WG_A32 ", " WG_R2 ", " WG_R3
#define WG_A48 WG_A32 ", " WG_R2
#define WG_A80 WG_A64 ", " WG_R4
#define WG_A96 WG_A80 ", " WG_R5
#define WG_A128 WG_A64 ", " WG_R4 ", " WG_R5 ", " WG_R6 ", " WG_R7
#define WG_SS(TY, PT, N, REGS, DOUT, IA, IB, IS) \
  template <> __device__ __forceinline__ void wg_ss<TY, N>(float *d, uint64_t da, uint64_t db, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS ", 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT "." PT " {" REGS "}, %" IA ", %" IB \
                 ", p, 1, 1, 0, 0;\n}\n" \
                 : DOUT \
                 : "l"(da), "l"(db), "r"(scale_d)); \
  }
/* RS: A's registers, B's descriptor, the scale-d flag (always accumulate); imm-trans-b 0: B K-major */
#define WG_RS(TY, PT, N, REGS, DOUT, A0, A1, A2, A3, IB, IS) \
  template <> __device__ __forceinline__ void wg_rs<TY, N>(float *d, const uint32_t (&a)[4], uint64_t db) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS ", 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT "." PT " {" REGS "}, {%" A0 ", %" A1 \
                 ", %" A2 ", %" A3 "}, %" IB ", p, 1, 1, 0;\n}\n" \
                 : DOUT \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)); \
  }
WG_SS(__half, "f16", 32, WG_R0, WG_D16(0), "16", "17", "18")
WG_SS(__half, "f16", 64, WG_A32, WG_D32(0), "32", "33", "34")
WG_SS(__half, "f16", 128, WG_A64, WG_D64(0), "64", "65", "66")
WG_SS(__half, "f16", 256, WG_A128, WG_D128(0), "128", "129", "130")
WG_SS(__nv_bfloat16, "bf16", 32, WG_R0, WG_D16(0), "16", "17", "18")
WG_SS(__nv_bfloat16, "bf16", 64, WG_A32, WG_D32(0), "32", "33", "34")
WG_SS(__nv_bfloat16, "bf16", 128, WG_A64, WG_D64(0), "64", "65", "66")
WG_SS(__nv_bfloat16, "bf16", 256, WG_A128, WG_D128(0), "128", "129", "130")
WG_RS(__half, "f16", 128, WG_A64, WG_D64(0), "64", "65", "66", "67", "68", "69")
WG_RS(__half, "f16", 96, WG_A48, WG_D48(0), "48", "49", "50", "51", "52", "53")
WG_RS(__half, "f16", 160, WG_A80, WG_D80(0), "80", "81", "82", "83", "84", "85")
WG_RS(__half, "f16", 192, WG_A96, WG_D96(0), "96", "97", "98", "99", "100", "101")
WG_RS(__half, "f16", 256, WG_A128, WG_D128(0), "128", "129", "130", "131", "132", "133")
WG_RS(__nv_bfloat16, "bf16", 128, WG_A64, WG_D64(0), "64", "65", "66", "67", "68", "69")
WG_RS(__nv_bfloat16, "bf16", 96, WG_A48, WG_D48(0), "48", "49", "50", "51", "52", "53")
WG_RS(__nv_bfloat16, "bf16", 160, WG_A80, WG_D80(0), "80", "81", "82", "83", "84", "85")
WG_RS(__nv_bfloat16, "bf16", 192, WG_A96, WG_D96(0), "96", "97", "98", "99", "100", "101")
WG_RS(__nv_bfloat16, "bf16", 256, WG_A128, WG_D128(0), "128", "129", "130", "131", "132", "133")
#undef WG_RS
#undef WG_SS
#undef WG_A128
#undef WG_A64
#undef WG_A48
#undef WG_A80
#undef WG_A96
#undef WG_A32
#undef WG_R0
#undef WG_R1
#undef WG_R2
#undef WG_R3
#undef WG_R4
#undef WG_R5
#undef WG_R6
#undef WG_R7
#undef WG_D128
#undef WG_D48
#undef WG_D80
#undef WG_D96
#undef WG_D64
#undef WG_D32
#undef WG_D16
#undef WG_D8
#endif /* NWG_ON */

/* The driver's TMA descriptor encoder through the runtime (no libcuda link), or NULL when the driver has none.
 * Looked up once per thread: the launchers need it at every call. */
inline PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static thread_local int looked = 0;
  static thread_local PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!looked) {
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    looked = 1;
  }
  return fn;
}

/* The current device's SM count: the persistent grids' size. */
inline hx_status sm_count(int *sms, hx_err *err) {
  int dev = 0;
  HX_CUDA(err, cudaGetDevice(&dev));
  HX_CUDA(err, cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  return HX_OK;
}

/* A 2-D row-major tensor [rows][cols] of 2-byte values as a TMA descriptor: boxes of box_rows x box_cols values
 * (box_cols 64 or 32), swizzled as wgmma reads a K-major tile (128 bytes at 64, 64 at 32). The copy moves bytes:
 * fp16 names the element size for bf16 too. */
inline hx_status tensor_map(CUtensorMap *tm, const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                            uint32_t box_cols, const char *who, hx_err *err) {
  const PFN_cuTensorMapEncodeTiled_v12000 enc = encoder();
  if (!enc) return hx_errf(err, HX_EUNSUPPORTED, "%s: the driver has no cuTensorMapEncodeTiled", who);
  const cuuint64_t dim[2] = {cols, rows}, stride[1] = {cols * 2u};
  const cuuint32_t box[2] = {box_cols, box_rows}, estride[2] = {1, 1};
  const CUresult r = enc(tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void *>(base), dim, stride, box, estride,
                         CU_TENSOR_MAP_INTERLEAVE_NONE,
                         box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return hx_errf(err, HX_ECUDA, "%s: cuTensorMapEncodeTiled (%llu x %llu, box %u x %u) failed: %d", who,
                   (unsigned long long)rows, (unsigned long long)cols, box_rows, box_cols, (int)r);
  return HX_OK;
}

} // namespace nwg

#endif /* F3D_NETS_WGMMA_DEVICE_CUH */
