/*
 * spconv_internal.h - private to nets/spconv*: the one list of submanifold convolution variants. spconv.c
 * builds the variant table from it (both builds); spconv.cu defines each function, spconv_stub.c defines
 * each as HX_ENODEV from the same list, so a CPU-only build lists the same variants by the same names.
 */
#ifndef F3D_NETS_SPCONV_INTERNAL_H
#define F3D_NETS_SPCONV_INTERNAL_H

#include "nets/nets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, name, function, needs_rule, uses_order): never reuse a number; v0 is the library (cuBLAS) reference, v1
 * the fused implicit GEMM (in and out multiples of 16; HX_EUNSUPPORTED otherwise), v2 the small-input implicit GEMM
 * with register gathers (in <= 8, any out: the stem; HX_EUNSUPPORTED for wider inputs), v3 v1's kernel over the
 * rows sorted by their neighbour mask (k = 3 maps, v1's widths; the main path's k = 3 variant where v6 does not
 * run), v4 v3 with a deeper cp.async pipeline (no faster than v3 on an H200: an ablation), v5 v1's tiles in the
 * map's own order with each tile's input rows (its halo) held in shared memory across offsets (k = 3, v1's widths;
 * slower than v3 on an H200: an ablation; docs/spconv.md), v6 v3's rows on a warp-specialised wgmma kernel (sm_90a,
 * k = 3, widths multiples of 32; HX_EUNSUPPORTED elsewhere; nets/spconv_wgmma.cu; the main path's k = 3 variant
 * where it runs), v7 narrow k = 3 convolutions (in = 32 or 64, out a multiple of 32) as an implicit GEMM on
 * mma.sync with the A fragments gathered straight into registers, every offset multiplied, in the map's own row
 * order (no sort, no shared-memory staging of rows; an ablation), v8 v7's kernel over the rows in mask order (v3's),
 * multiplying only the offsets where one of a 16-row tile's rows has a neighbour (the main path's k = 3 variant at
 * 32 input channels; slower than v6 at 64 on an H200; docs/spconv.md). */
#define SPC_VARIANT_LIST(X)                                                                                   \
  X(0, "v0", spc_conv_v0, 1, 0) X(1, "v1", spc_conv_v1, 0, 0) X(2, "v2", spc_conv_v2, 0, 0)                   \
  X(3, "v3", spc_conv_v3, 0, 1) X(4, "v4", spc_conv_v4, 0, 1) X(5, "v5", spc_conv_v5, 0, 0)                   \
  X(6, "v6", spc_conv_v6, 0, 1) X(7, "v7", spc_conv_v7, 0, 0) X(8, "v8", spc_conv_v8, 0, 1)

/* v1's channel rule, shared by the kernel's boundary check and spc_variant_best: both widths a multiple of the
 * mma's k16 / n16 granularity (16-byte cp.async rows need 8; the ldmatrix.x4 fragments take 16). */
#define SPC_V1_CHANNELS 16u
static inline int spc_v1_takes(size_t in, size_t out) {
  return in && out && in % SPC_V1_CHANNELS == 0 && out % SPC_V1_CHANNELS == 0;
}

/* v2's channel rule: in padded to 4 or 8 channels per offset, so one k16 step of the mma covers 4 or 2 offsets
 * and each lane gathers 2 channels of one neighbour row; wider inputs are v1's (or v0's). */
#define SPC_V2_MAX_IN 8u
static inline int spc_v2_takes(size_t in, size_t out) { return in && out && in <= SPC_V2_MAX_IN; }

/* v6's channel rule: wgmma k16 steps over 32- or 64-channel input chunks (64- or 128-byte swizzled rows) and
 * output slices of 32 .. 256 channels (m64nN, N = the widest of 256, 128, 64, 32 dividing out). */
#define SPC_V6_CHANNELS 32u
static inline int spc_v6_takes(size_t in, size_t out) {
  return in && out && in % SPC_V6_CHANNELS == 0 && out % SPC_V6_CHANNELS == 0;
}
static inline uint32_t spc_v6_slice(size_t out) {
  return out % 256u == 0 ? 256u : out % 128u == 0 ? 128u : out % 64u == 0 ? 64u : 32u;
}

/* v7's channel rule: 32 or 64 input channels (one or two 16-byte loads a row and offset per lane), 32-channel
 * output slices. */
static inline int spc_v7_takes(size_t in, size_t out) { return (in == 32u || in == 64u) && out && out % 32u == 0; }

#define SPC_DECLARE_(id_, name_, fn_, rule_, order_)                                                                  \
  hx_status fn_(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,          \
                size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, struct CUstream_st *stream, hx_err *err);
SPC_VARIANT_LIST(SPC_DECLARE_)
#undef SPC_DECLARE_

/* v6's kernel (nets/spconv_wgmma.cu; CUDA builds only). spc_v6_check: HX_EUNSUPPORTED unless spc_v6_takes(in,
 * out), the device runs this build's sm_90a image (compute capability 9.0) and the driver has the TMA descriptor
 * encoder. spc_v6_launch: y = conv(x) over the rows in d_perm's order (a permutation of [0, n), v3's order),
 * its tiles in d_tiles' order when d_tiles is not NULL and tile_rows is the kernel's (spc_v6_tile_rows), else
 * last-first; arguments checked by the caller as v3's. */
hx_status spc_v6_check(size_t in, size_t out, hx_err *err);
hx_status spc_v6_launch(void *d_y, const void *d_x, const void *d_w, const float *d_b, const int32_t *d_nbr,
                        const uint32_t *d_perm, const uint32_t *d_tiles, uint32_t tile_rows, uint32_t n, uint32_t in,
                        uint32_t out, net_dtype dt, struct CUstream_st *stream, hx_err *err);

#ifdef __cplusplus
}
#endif
#endif /* F3D_NETS_SPCONV_INTERNAL_H */
