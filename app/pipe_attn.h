/*
 * pipe_attn.h - the attention stage both sweep pipelines share (private to app).
 *
 * The paper's question is "same attention engine, different data movement": Flash3D attends in place
 * over PSH buckets (scope plans redirect tile addresses), PTv3 gathers q/k/v into padded patches first.
 * So both pipelines call f3d_attn_stage with the same engine (battn variant v5, the sweep's dtype, H x D = 4 x 16,
 * packed qkv [rows, 3, H, D] as a qkv projection writes it) and differ only in the plans they pass.
 *
 * attn_plans.c holds the host-only part (bucket table of a PSH result -> scope plans), so a CPU test can
 * build and validate the plans without the sweep; pipe_attn.c holds the GPU stage.
 */
#ifndef F3D_CLI_PIPE_ATTN_H
#define F3D_CLI_PIPE_ATTN_H

#include "app/sweep.h"
#include "kernels/kernels.h"

/* Defaults (Flash3D's public config: head dim 16 everywhere, bucket 512, scope 8 buckets = 4096 rows;
 * flash3d-code.md section 3). The paper's ablation shifts by one bucket and strides by two; the sweep
 * shifts by half a scope (the Swin convention: every scope boundary moves) and strides by two. */
#define F3D_ATTN_HEAD_DIM 16
#define F3D_ATTN_CHANNELS 64 /* C = H * D: H = 4 */
#define F3D_ATTN_SCOPE_BUCKETS 8u
#define F3D_ATTN_SWIN_SHIFT 4u
#define F3D_ATTN_STRIDE 2u
#define F3D_ATTN_PIECE_ROWS 512u /* PTv3 patches are cut into pieces of this many rows (one scope each) */
#define F3D_ATTN_CHECK_ROWS 256  /* sampled rows of the double reference (see pipe_attn.c) */
/* v0 (unfused cuBLAS, ~12 TFLOP/s at D = 16, i.e. ~12x slower than v5) only up to this many rows:
 * the default smallest case (100k points, batch 1) and nothing bigger. */
#define F3D_ATTN_V0_MAX_ROWS 131072

enum { F3D_ATTN_PLAIN = 0, F3D_ATTN_SWIN, F3D_ATTN_STRIDE_PLAN, F3D_ATTN_NPLANS };

/* The plain, swin and stride plans (in that order, F3D_ATTN_SCOPE_BUCKETS buckets per scope) over a PSH
 * result in its packed layout: `nclouds` clouds of `nb` buckets each, bucket g = c * nb + local owning
 * packed rows [bucket_start[g], bucket_start[g] + bucket_count[g]) (psh_out's tables as they are).
 * On failure every plan is left empty (battn_plan_free is safe on all three). */
hx_status f3d_attn_psh_plans(battn_plan plans[F3D_ATTN_NPLANS], const uint32_t *bucket_start,
                             const uint32_t *bucket_count, uint32_t nclouds, uint32_t nb, hx_err *err);
/* Kernel names of those plans in result rows: "attn.plain", "attn.swin4", "attn.stride2". */
const char *f3d_attn_plan_kernel(int which);

/* One plan of a stage: the row label and the host plan. */
typedef struct f3d_attn_item {
  const char *kernel;
  const battn_plan *plan;
} f3d_attn_item;

/* Run the attention stage of `pipeline` over `rows` rows (every plan's buckets lie inside [0, rows)).
 * rel_base: index of the item the others are compared with (rel_to_plain rows), or -1 for none.
 * Needs ctx->have_gpu; without it, prints why the stage is skipped and returns HX_OK. */
hx_status f3d_attn_stage(f3d_ctx *ctx, const char *pipeline, int64_t rows, const f3d_attn_item *items,
                         size_t n_items, int rel_base, hx_err *err);

#endif /* F3D_CLI_PIPE_ATTN_H */
