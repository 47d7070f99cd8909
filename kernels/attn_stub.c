/*
 * attn_stub.c - the bucket-swin attention variant table of a CPU-only build: the same names as attn.cu,
 * each returning HX_ENODEV, so the CLI and tests can list and skip them.
 */
#include "kernels/kernels.h"

static hx_status no_gpu(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                        hx_err *err) {
  (void)p, (void)d_scratch, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "attention: this build has no CUDA");
}

static const battn_variant battn_table[] = {
    {0, "v0", "unfused cuBLAS reference (needs CUDA)", no_gpu},
    {1, "v1", "fused mma.sync kernel (needs CUDA)", no_gpu},
    {2, "v2", "fused mma.sync kernel, f16x2 exp2 (needs CUDA)", no_gpu},
    {3, "v3", "fused mma.sync kernel, 128-key tiles, lazy rescale (needs CUDA)", no_gpu},
    {4, "v4", "fused mma.sync kernel, lazy rescale (needs CUDA)", no_gpu},
    {5, "v5", "fused mma.sync kernel, per-head-dim tiles (needs CUDA)", no_gpu},
    {6, "v6", "fused wgmma kernel, sm_90a (needs CUDA)", no_gpu},
    {7, "v7", "fused wgmma kernel without the softmax fence, sm_90a (needs CUDA)", no_gpu},
    {8, "v8", "fused wgmma kernel at every head dim, sm_90a (needs CUDA)", no_gpu},
    {9, "v9", "warp-specialised wgmma kernel, sm_90a, recommended there (needs CUDA)", no_gpu},
    {10, "v10", "warp-specialised wgmma kernel at every head dim, sm_90a (needs CUDA)", no_gpu},
    {11, "v11", "warp-specialised wgmma kernel without ping-pong, sm_90a (needs CUDA)", no_gpu},
};

const battn_variant *battn_variants(size_t *count) {
  if (count) *count = sizeof battn_table / sizeof battn_table[0];
  return battn_table;
}
