/*
 * variants_internal.h - private to kernels/: the one list of every variant of each kernel ladder (PSH, pooling,
 * attention), as X-macros. The CUDA tables (psh.cu, bpool.cu, attn.cu) and the CPU-only stubs (psh_stub.c,
 * attn_stub.c) both expand these lists, so ids, names and summaries are written once and a CPU-only build lists
 * exactly the variants a CUDA build has.
 *
 * Each entry names its launchers too, as tokens that only the CUDA files expand (the stubs' X ignores them, so
 * they need not exist there); a launcher whose name holds a comma (a template-id) is written in parentheses.
 * Rules: never reuse an id; v0 is the library or baseline reference; a new rung is one line here.
 */
#ifndef F3D_VARIANTS_INTERNAL_H
#define F3D_VARIANTS_INTERNAL_H

/* PSH bucketing: X(id, name, summary, launcher) with launcher a psh_fn (psh.cu). */
#define PSH_VARIANT_LIST(X)                                                                                           \
  X(1, "v1", "naive: Alg. 1+2 with global atomics, one thread per point", paired<run_v1>)                            \
  X(2, "v2", "two-stage counters (shared hash table, bulk atomicAdd, rebase) + probe kernel", paired<run_v2>)        \
  X(3, "v3", "v2 with warp-cooperative probing (32 probes per counter round trip)", paired<run_v3>)                  \
  X(4, "v4",                                                                                                          \
    "4 launches: tiled bbox, dense shared counts + bulk commit, probe only on overflow, per-tile scan + scatter "     \
    "(psh_v4.cu)",                                                                                                    \
    paired<psh_run_v4>)                                                                                               \
  X(5, "v5", "one cooperative launch: v4's tiles as 4 phases with grid barriers, placements in registers (psh_v5.cu)", \
    paired<psh_run_v5>)                                                                                               \
  X(6, "v6", "v5 with the coordinates gathered after one more grid barrier (coalesced stores) (psh_v5.cu)",          \
    paired<psh_run_v6>)                                                                                               \
  X(7, "v7",                                                                                                          \
    "v6 with a shared-atomic rank, one warp per overflow point on short lists, one 16-B record per row + "            \
    "coalesced gather (psh_v7.cu)",                                                                                   \
    paired<psh_run_v7>)                                                                                               \
  X(8, "v8",                                                                                                          \
    "1024-thread tiles kept in shared memory, 2 grid barriers: short overflow lists resolved in every block, "        \
    "perm/xyz written in bucket order (psh_v8.cu)",                                                                   \
    psh_run_v8)                                                                                                       \
  X(9, "v9",                                                                                                          \
    "v8 with the short overflow list walked by one warp in list order (no block barriers), redux.sync minima, "       \
    "first-hash stores after barrier 2, blocks without overflow arriving at barrier 2 early (psh_v8.cu)",             \
    psh_run_v9)                                                                                                       \
  X(10, "v10",                                                                                                        \
    "v9 with xyz_out's lines prefetched into the L2 by the TMA unit during phase 2 (sm_90+): faster from a "          \
    "cold, dirty L2 on short overflow lists (psh_v8.cu)",                                                             \
    psh_run_v10)

/* In-bucket pooling: X(id, name, summary, assign, reduce, unpool, pool, assign_plan) (bpool.cu; pool and
 * assign_plan may be NULL: bpool_variant). */
#define BPOOL_VARIANT_LIST(X)                                                                                         \
  X(1, "v1", "block per bucket, shared-memory three-step sub-buckets; thread per (row, channel) reduce", assign_v1,  \
    reduce_v1, unpool_v1, NULL, NULL)                                                                                 \
  X(2, "v2",                                                                                                          \
    "128-thread blocks (8 per SM), step 3 with register fill counts and one warp min-reduction per leftover; "        \
    "16-byte reduce",                                                                                                 \
    assign_v2, reduce_v2, unpool_v1, NULL, NULL)                                                                      \
  X(3, "v3", "v2 with step 1's order from warp match ranking (no block radix sort); 16-byte reduce", assign_v3,      \
    reduce_v2, unpool_v1, NULL, NULL)                                                                                 \
  X(4, "v4", "v3 with the reduction fused into the assignment (ablation: slower than v3's two kernels)", assign_v3,  \
    reduce_v2, unpool_v1, pool_v4, NULL)                                                                              \
  X(5, "v5",                                                                                                          \
    "v3 in 64-thread blocks of <= 512 rows (16 per SM, one wave at 600k) with the plan and parent fill in the "      \
    "same kernel",                                                                                                    \
    assign_v5, reduce_v2, unpool_v1, NULL, assign_plan_v5)                                                            \
  X(6, "v6",                                                                                                          \
    "v5 in two halves, the second half's assignment on a second stream beside the first half's reduction "           \
    "(ablation: slower than v5)",                                                                                     \
    assign_v5, reduce_v2, unpool_v1, pool_v6, assign_plan_v5)                                                         \
  X(7, "v7",                                                                                                          \
    "plan, assignment and reduction in one cooperative launch: assigner and reducer blocks share each SM, "          \
    "reducers follow per-bucket ready flags",                                                                         \
    assign_v5, reduce_v2, unpool_v1, pool_v7, assign_plan_v5)                                                         \
  X(8, "v8",                                                                                                          \
    "v5's assignment wave with the reduction launched behind it (programmatic dependent launch, per-bucket ready "    \
    "flags): reduction blocks take each SM slot an assignment block leaves",                                         \
    assign_v5, reduce_v2, unpool_v1, pool_v8, assign_plan_v5)                                                         \
  X(9, "v9",                                                                                                          \
    "v5 with step 3 by lanes: 32 leftovers at a time, picks ranked per sub-bucket, where a tile has <= 32 new "       \
    "sub-buckets",                                                                                                    \
    assign_v9, reduce_v2, unpool_v1, pool_v9, assign_plan_v9)

/* Bucket-swin attention: X(id, name, summary, launcher) with launcher a battn_fn (attn.cu). */
#define BATTN_VARIANT_LIST(X)                                                                                         \
  X(0, "v0", "unfused: gather + cuBLAS batched GEMMs + softmax kernel (materialised scores)", v0_fn)                 \
  X(1, "v1", "fused mma.sync FA2-style, scope-table tile redirect, cp.async double buffer, fp32 exp2",               \
    (fused_fn<v1_tiles, false, false>))                                                                               \
  X(2, "v2", "v1 with ex2.approx.f16x2 probabilities and tensor-core row sums (fp16; bf16 = v1)",                    \
    (fused_fn<v1_tiles, true, false>))                                                                                \
  X(3, "v3", "v1 with 128-key tiles (D<=64) and lazy rescale (only when a row max grows past 2^8)",                  \
    (fused_fn<v3_tiles, false, true>))                                                                                \
  X(4, "v4", "v1 with lazy rescale (64-key tiles): ablation of v3's two changes", (fused_fn<v1_tiles, false, true>)) \
  X(5, "v5", "per-head-dim best of v1/v3/v4 tiles, 8-warp CTAs at D=64/128 (lazy rescale from D=32)",               \
    (fused_fn<v5_tiles, false, false>))                                                                               \
  X(6, "v6",                                                                                                          \
    "wgmma (sm_90a) at D=64/128: 2 warpgroups x 64 rows, 128-key tiles, S and P V async around the softmax; v5's "    \
    "kernels at D=16/32",                                                                                             \
    battn_v6_fn)                                                                                                      \
  X(7, "v7", "v6's wgmma kernel without the softmax/wait fence, at every head dim (ablation)", battn_v7_fn)          \
  X(8, "v8", "v6's wgmma kernel at every head dim (ablation of v6 running v5 at D=16/32)", battn_v8_fn)              \
  X(9, "v9",                                                                                                          \
    "warp-specialised wgmma (sm_90a) at D=32/64/128: producer warpgroup (cp.async + mbarrier full/empty ring, "       \
    "setmaxnreg), 2 ping-pong consumer warpgroups, no CTA barrier in the loop; v23's kernel at D=16 (recommended "    \
    "on sm_90a)",                                                                                                     \
    battn_v9_fn)                                                                                                      \
  X(10, "v10", "v9's kernel at every head dim (ablation of v9 running v23 at D=16)", battn_v10_fn)                    \
  X(11, "v11", "v9's kernel without the ping-pong, every head dim (ablation)", battn_v11_fn)                        \
  X(16, "v16",                                                                                                        \
    "v5 with 4 CTAs per SM (128 registers) and the row sums of P on the tensor cores at D=16",                       \
    (fused_fn<v16_tiles, false, false>))                                                                              \
  X(17, "v17", "v16 without the tensor-core row sums (ablation)", (fused_fn<v17_tiles, false, false>))            \
  X(23, "v23", "v16 with lazy rescaling at D=16", battn_v23_fn)                                                     \
  X(24, "v24",                                                                                                        \
    "v23 over each scope's rows packed end to end at D=16: query and key tiles cross bucket boundaries, only a "     \
    "scope's last tiles are partial (v9 runs it at D=16); v23 at D=32/64/128",                                       \
    battn_v24_fn)

#endif /* F3D_VARIANTS_INTERNAL_H */
