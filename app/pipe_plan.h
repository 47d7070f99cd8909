/*
 * pipe_plan.h - what a sweep case measures (private to app): the main path, or every rung of every kernel ladder
 * with `sweep --ladder`.
 *
 * The main path is, per operation, the best entry of its library (psh_variant_best, bpool_variant_best,
 * battn_variant_best, sfc_serial_variant_best, shuf_gather_variant_best: the measured winner for this device and
 * size, with its fall-backs), the paper-faithful baseline (PTv3's path: the ptv3 pipeline's serialization,
 * padding, gathers, attention over patches and serialized pooling) and the naive ablation the paper's ratios need
 * (PSH v1, Alg. 1 and 2 with global atomics, against v2's two-stage counters; attention v0, unfused, on the small
 * cases): everything REPORT.md's headline tables and figures read, nothing else. The ladder adds every other
 * variant and the stages that split one into its parts (serialization's encode/sort/inverse, pooling's assignment
 * alone, the copy yardsticks, PTv3's dedup check, the CPU references' timings where a GPU runs).
 * Rows keep the variant name of the variant that ran ("v10", "v10.graph", "v2"), so a main-path row has the key
 * its rung has in a --ladder run, and runs of either kind compare key by key.
 *
 * pipe_plan.c holds the rules as data and pure functions of the variant tables (a CPU-only build lists the same
 * variants), so tests/harness/test_sweep_plan.c checks them without a GPU.
 */
#ifndef F3D_APP_PIPE_PLAN_H
#define F3D_APP_PIPE_PLAN_H

#include <stddef.h>

#include "baselines/baselines.h"
#include "kernels/kernels.h"

/* 1 when the main path measures stage `kernel` of `pipeline` (kernel names as the result rows spell them,
 * "gather_qkv_C64", "psh.xor-div"); 0 for a stage only --ladder measures. Unknown pipelines: 1 (a new pipeline
 * is on the main path until it says otherwise). */
int f3d_main_stage(const char *pipeline, const char *kernel);

/* Which variants of a ladder a stage runs, in run order, into out[cap]; returns how many. With ladder: every
 * variant of the table, in table order. Otherwise: the naive ablation (PSH only: v1, then v2), then best unless it
 * is one of those; best may be NULL (then only the ablation). */
size_t f3d_plan_psh(const psh_variant **out, size_t cap, int ladder, const psh_variant *best);
size_t f3d_plan_pool(const bpool_variant **out, size_t cap, int ladder, const bpool_variant *best);
size_t f3d_plan_serial(const sfc_serial_variant **out, size_t cap, int ladder, const sfc_serial_variant *best);
size_t f3d_plan_gather(const shuf_gather_variant **out, size_t cap, int ladder, const shuf_gather_variant *best);

#endif /* F3D_APP_PIPE_PLAN_H */
