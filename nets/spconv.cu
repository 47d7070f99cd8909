/*
 * spconv.cu - submanifold sparse 3D convolution on the GPU (the spc_ part of nets.h): the kernel map and its
 * rulebook, and the convolution variants. The CPU references are in spconv.c.
 *
 * Map (spc_map_gpu), five steps on the stream, no host synchronisation unless the counts are asked for. The
 * table holds 2^3-voxel blocks, not voxels: a row's 5^3 (3^3) window lies in exactly 3^3 (2^3) blocks, so a row
 * costs 27 (8) probes and as many 32-byte reads instead of 125 (27) probes of a voxel table, whose random
 * 16-byte slots made the stem's k = 5 map the forward's largest kernel after the convolutions and attention
 * (750 us for 75M probes at 600k on an H200, ~10x the bytes of the map it writes; docs/spconv.md);
 *  1. insert: an open-addressing hash table in scratch, capacity the power of two >= 2n (load <= 1/2),
 *     16-byte slots {packed block key, block index}, home slot hx_mix64(key) & (cap - 1), linear probing. The
 *     first row of a block claims a slot by atomicCAS of the key into the key word (EMPTY = ~0: a block key
 *     has x, y, z < 2^17, so it is never EMPTY) and numbers the block by an atomic counter (one atomicAdd a
 *     warp for its new blocks); the block's other rows find their key there and stop;
 *  2. place: each valid row finds its block and CASes its row into brows[8 block + (x&1)<<2 | (y&1)<<1 |
 *     (z&1)] (brows preset to -1); a row that finds its cell taken shares its voxel with that row: a
 *     duplicate (a flag word on the device, read back with the counts);
 *  3. lookup: G lanes per row (32 at k = 5, 8 at k = 3): lane l < 27 (8) probes the window's l-th block and
 *     copies its 8 cells to shared memory; at k = 5 the same cells also give the k = 3 map of the same voxels
 *     when asked (spc_map_pair_gpu: PTv3's stem and level-0 xCPE share their voxels). The lanes
 *     write nbr[i*K + o] for o = l, l + G, ... (the writes coalesce) from the cells. Blocks outside [0, 2^17) per
 *     axis are not sought (the key's fields never wrap). Counts without a rulebook: per-CTA counters in shared
 *     memory, one atomicAdd per offset and CTA;
 *  4. rulebook (when d_rule is given): the lookup also writes flag[o*n + i] = (nbr != -1); one CUB exclusive
 *     scan of the offset-major flags gives every pair its place p = scan[o*n + i] - scan[o*n] within its offset,
 *     in increasing output row; one thread per (offset, point) writes rule_in[o*n + p] = j and
 *     rule_out[o*n + p] = i (spconv's indice_pairs [2, K, n]), and K threads the counts from the scan;
 *  5. counts: copied to the host only with count_pairs, with the device's report on the input.
 *  Without d_rule the flags and the scan are neither run nor in the scratch (8 n K bytes: 600 MB for the stem's
 *  map at 600k rows).
 * Invariant: for valid input without duplicates nbr equals spc_map_cpu's bit for bit (tests), whatever the
 * thread order: each block key is in the table once, each voxel's row in its cell once, and the block
 * numbering (which does depend on the order) never reaches nbr.
 *
 * Convolution variants (the table is spconv.c's, from spconv_internal.h's list):
 *   v0  gather-GEMM-scatter per offset through cuBLAS, spconv's "native" algorithm. The centre offset needs no
 *       gather (it maps i to i): acc[n, out] fp32 = x W_c^T, one GEMM straight from x. Then for each other
 *       offset o with pairs_o > 0: gather the pairs' input rows into G [pairs_o, in] (dtype); P [pairs_o, out]
 *       fp32 = G W_o^T (cublasGemmEx, fp16/bf16 inputs, CUBLAS_COMPUTE_32F); acc[rule_out[p]] += P[p]. An
 *       output has at most one pair per offset, so each offset's scatter-add is race-free and the offsets run
 *       one after another on the stream (deterministic, no atomics). Finally y = dtype(acc + b), the only
 *       rounding of the sum. GEMM sizes come from the host counts (m->opairs, found by an untimed map with
 *       count_pairs); the kernels also bound themselves by the device counts, so stale host counts can give a
 *       wrong result but never an out-of-bounds access. Launches: 2 + 3 (K - 1) at most (80 for k = 3).
 *   v1  fused implicit GEMM on the tensor cores, one launch: in and out multiples of 16 (else HX_EUNSUPPORTED;
 *       spc_variant_best gives v0), reading only the map nbr (no rulebook, no counts, no scratch). A CTA owns
 *       BM output rows (256, 16 warps, for maps of >= 16384 rows at k = 3 where its shared memory fits the
 *       device; else 128, 8 warps) x BN output
 *       channels (the widest of 128, 64, 32, 16 dividing out) and walks the steps (offset o at which some row
 *       of the tile has a neighbour, chunk of BK = 64, 32 or 16 input channels). A 3-stage cp.async pipeline
 *       gathers A[r] = x[nbr[r, o]][chunk] (16-byte copies, zero-filled for -1, kept in L1 since a row is
 *       gathered at several offsets of a tile) and B = W_o[slice][chunk] into XOR-swizzled shared memory;
 *       ldmatrix + mma.sync m16n8k16 (fp16 or bf16, fp32 accumulators), each warp multiplying only its 16-row
 *       groups that have a neighbour at o (per-group offset masks built from the map in the prologue). Then
 *       + bias in fp32, one rounding to the dtype, one store per value. v0's weight layout [K][out][in] is
 *       already the mma's column-major B (W_o[n][k], k contiguous), so both variants read the same upload.
 *       Each output is summed over increasing o in fp32, like the CPU reference; the result does not depend on
 *       the schedule (no atomics), so runs agree bit for bit.
 *   v2  small inputs (in <= 8, any out: PTv3's stem 4 -> 32 at k = 5), one launch, reading only the map nbr: the
 *       convolution as an implicit GEMM y[16 rows, out] = A[16, K * CI] B[K * CI, out] per 16-row tile and warp,
 *       A[r][o * CI + ci] = x[nbr[r, o]][ci] with in padded to CI = 4 or 8 channels, so one m16n8k16 step
 *       covers 4 or 2 offsets. Each lane gathers its A fragment straight into registers (two channels of one
 *       neighbour row, 32-bit loads when in == CI and x is 4-byte aligned): no shared-memory staging, no
 *       rulebook; the B fragments of the CTA's 32-channel output slice are built once per CTA (a persistent grid
 *       of SMs x resident CTAs) in shared memory in register order (K = 125: 32 KB at CI = 4). Every step is
 *       multiplied (zeros add exactly), in one fixed order: runs agree bit for bit.
 *   v3  v1's kernel over the rows sorted by their neighbour mask (k = 3: a 27-bit mask per row, mask_kernel, then
 *       a stable CUB radix sort of (mask, row) in the call's scratch): tile row t is output row perm[t], its map
 *       row nbr[perm[t]] and its store y[perm[t]]. Rows of one 16-row group then share their masks, so the groups
 *       step at fewer offsets: on the network's level maps (a CPU count, 600k lidar points) the padded tensor
 *       work drops from 4.31x the real pairs to ~1.35x at level 0 and from 2.0x to ~1.26x over the levels, and a
 *       tile's active offsets from 22-27 to 11-19. The price: a tile's rows come from all over the cloud, so
 *       its gathers share fewer rows, and the order costs one read of the map and a radix sort of n keys: once
 *       per map when the map carries it (spc_map.order: the PTv3 forward builds it with each level's map), else
 *       in every call. Each output's sum is the same as v1's (over increasing o, in fp32). The main path's
 *       k = 3 variant where v6 does not run: faster than v1 at every level of PTv3's forward (H200, 600k: xCPE
 *       17.1 -> 14.1 ms).
 *   v4  v3 with the deepest cp.async pipeline each 256-row tile fits in sm_90's shared memory (v1::Deep: 4 to 8
 *       stages; 128-row tiles and devices where the deep one does not fit keep 3). At BM = 256 one CTA runs per SM and a step's
 *       gathers are its only work between barriers, so more steps in flight may hide more gather latency (the
 *       C = 32 and C = 64 convolutions of PTv3's forward take ~400 us each against floors of 54-86 us). The
 *       same sums as v3, bit for bit. Measured no faster than v3 (H200): an ablation.
 *   v5  v1's 128-row tiles in the map's own row order, each tile's input halo (the distinct rows its map rows
 *       name; 1.3-2.9 n over PTv3's levels, against the 11-19 n rows v3 gathers per input chunk) copied into
 *       shared memory once per chunk and read at every offset by ldmatrix from the rows' addresses: a hash table
 *       in shared memory dedupes the rows and ballots and a warp scan rank them by first appearance; a tile naming
 *       more rows than the shared memory holds runs in pages. Three weight stages per offset. Two CTAs an SM at
 *       output slices of <= 64 channels. k = 3 maps at v1's widths. Sums over pages, chunks, then increasing o
 *       (not v1's order: checked against the CPU within the tolerance, runs bit for bit). Measured slower than v3
 *       (H200, 600k: xCPE 13.4 -> 16.7 ms): both are latency-bound at 8-16 warps an SM, not bound by the copies
 *       v5 removes (docs/spconv.md, "What the counters say"): an ablation.
 *   v6  v3's rows on a warp-specialised sm_90a kernel (nets/spconv_wgmma.cu: a producer warpgroup gathering by
 *       cp.async into an mbarrier ring, two consumer warpgroups issuing wgmma from shared memory), widths
 *       multiples of 32. The main path's k = 3 variant where it runs (spc_variant_main): faster than v3 at every
 *       level of PTv3's forward (H200, 600k: xCPE 13.4 -> 11.1 ms). Its tiles run most active offsets first
 *       (spc_mask_tiles_gpu: the map's tile order, or one built in the call with the row order), so the lightest
 *       make the last wave: PTv3's 600k forward -0.40 ms against last-first (H200, docs/spconv.md).
 *   v7  narrow k = 3 convolutions (in = 32 or 64, out a multiple of 32): v2's scheme at k = 3, an implicit GEMM per
 *       16-row tile and warp on mma.sync with the A fragments gathered straight into registers (16-byte loads, the
 *       input channels permuted inside each offset to make them whole), every offset multiplied, in the map's own
 *       row order: no sort, no shared-memory staging of rows, no rulebook. Measured against v6 in PTv3's forward
 *       (H200, 600k): faster at 32 channels (enc0's two xCPE 0.414 against 0.702 ms, with level 0's mask sort
 *       skipped), slower at 64 (enc1 0.800 against 0.598, dec0 1.256 against 0.762): an ablation (--spconv v7).
 *   v8  v7's kernel over the rows in mask order (v3's; the map's, else sorted in the call), multiplying only the
 *       offsets where one of a 16-row tile's rows has a neighbour (~7 of 27 at PTv3's level 0): v7's bits. The main
 *       path at 32 input channels (H200, 600k: enc0's xCPE 0.447 against 0.649 ms on v6 and 0.480 on v7); slower
 *       than v6 at 64 (dec0 0.937 against 0.671 ms).
 *
 * Napkin math (a conv of n rows, `pairs` real pairs, in -> out channels, 2-byte dtype):
 *   FLOPs = 2 * pairs * in * out (spc_map.pairs; the centre's n pairs included).
 *   Floor: time >= max(FLOPs / tensor rate, bytes / copy bandwidth), bytes = every input row read once and
 *   every output row written once, n * (in + out) * 2, plus the map, n * K * 4 (a fused implicit GEMM that
 *   keeps its tile's input rows on chip reaches it; re-reads of rows shared between output tiles hit L2).
 *   v0 moves per non-centre pair 6 * in + 16 * out bytes (gather read + write, GEMM read G and write P fp32,
 *   scatter read P and read-modify-write acc): PTv3 level 0 at n = 100k, C = 32, pairs ~ 10 n gives
 *   2 * 1e6 * 32 * 32 = 2 GFLOP (~3 us at ~700 TFLOP/s) against ~0.7 GB (~0.23 ms at 3 TB/s), while the floor's
 *   bytes are 100k * 64 * 2 + 100k * 27 * 4 = 24 MB (~8 us): v0 is bandwidth-bound, ~30x above the floor.
 *   The issue's floor for v1 (#36): the larger of pairs FLOPs at the measured tensor rate (~780 TFLOP/s dense
 *   fp16 on an H100) and the bytes of a fused kernel at the measured copy bandwidth (~3.0 TB/s): each input
 *   row once per tile it is a neighbour of (n * in * 2 * h, halo factor h ~ 1.5 for spatially coherent rows),
 *   each output row once (n * out * 2), the map (n * 27 * 4: at C = 32 it is 40% of the bytes) and the weights
 *   (27 * in * out * 2). PTv3-m1 at 600k lidar points, C -> C, pairs ~ 12 n (level sizes after level 0 are
 *   estimates; the forward knows them):
 *       n      C    GFLOP   FLOP time   floor bytes   byte time   floor    v1 L2->SM bytes (BM = 256 / 128)
 *     600k    32    14.7      19 us       161 MB        54 us      54 us    0.59 GB / 0.72 GB
 *     600k    64    59.0      76 us       257 MB        86 us      86 us    1.44 GB / 1.96 GB
 *     200k    64    19.7      25 us        86 MB        29 us      29 us    0.48 GB / 0.65 GB
 *      60k   128    23.6      30 us        46 MB        15 us      30 us    0.39 GB / 0.60 GB
 *      18k   256    28.3      36 us        29 MB        10 us      36 us    0.47 GB / 0.72 GB
 *       5k   512    31.5      40 us        27 MB         9 us      40 us      -    / 0.80 GB
 *   v1 moves more than the floor through L2: the gathers read pairs * in * 2 * (out / BN) (each pair's row
 *   once per output slice, less what L1 keeps between offsets) and every tile reads all 27 W_o slices,
 *   27 * in * out * 2 * n / BM, as large as the gathers' at C = 64 and larger above. Its tensor work is 2 * 16-row groups * 16 *
 *   in * out per active (group, offset): between the pairs' FLOPs and 27/12 of them. At an L2 rate of
 *   ~6-8 TB/s (not yet measured here) the last column takes 50-240 us: if L2 is the limit, v1 lands at
 *   ~35-70% of the floor (C = 32 best; C = 64 at 600k, the largest xCPE time, 36-48%). The next step is
 *   named by what the timing shows: a larger BM or weights kept on chip across tiles (weights-bound), or the
 *   tile's neighbour rows staged once in shared memory and addressed per offset by ldmatrix (gather-bound).
 *   v2 at PTv3's stem (600k rows, k = 5, 4 -> 32): the bytes are the map, n * 125 * 4 = 300 MB, against
 *   x (4.8 MB, read through L2 where it stays) and y (n * 32 * 2 = 38 MB): ~343 MB, ~0.11 ms at 3.0 TB/s. The
 *   padded tensor work, 2 * n * 128 * 4 * 32 = 19.7 GFLOP (the real pairs' FLOPs are ~1/6 of it at ~20 pairs a
 *   row), is ~30 us at mma.sync's dense rate, and each k16 step costs a warp ~16 instructions (4 map loads, 4
 *   gathers, 4 shared loads, 4 mma) for 16 rows: the kernel's floor is the map read. v0 moves 6 * 4 + 16 * 32 =
 *   536 bytes per non-centre pair (~6 GB at ~20 pairs a row) in up to 2 + 3 * 124 = 374 launches, and its map
 *   needs the rulebook (flags, scan and pair lists: > 1 GB of traffic at 600k); v2 needs neither.
 */
#include "nets/nets.h"
#include "nets/spconv_internal.h"
#include "nets/spconv_device.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <stdint.h>
#include <stdlib.h>

namespace {

constexpr uint32_t kCoordLimit = 1u << 18, kBatchLimit = 1u << 10;
constexpr unsigned long long kEmpty = ~0ull;
constexpr unsigned kThreads = 256;
/* The device's report on the input: st[0] flags, st[1] first row with a coordinate >= 2^18, st[2] first row
 * with batch >= 2^10, st[3] (hi << 32 | lo) of two rows lo < hi sharing a voxel, the least word reported (a
 * voxel held by three or more rows reports its pairs with the row that won its cell, which may vary by run). */
constexpr unsigned long long kBadCoord = 1, kBadBatch = 2, kDuplicate = 4;
/* v0's cuBLAS workspace (cublasSetWorkspace, so no allocation happens in a call and a call can be captured
 * in a graph). Our GEMMs have k = in <= 512: split-K, the workspace's main user, is rarely worth it. */
constexpr size_t kBlasWorkspace = (size_t)4 << 20;

struct __align__(16) Slot { /* a block: its packed key and its index in brows */
  unsigned long long key, row;
};

struct Carve {
  char *base;
  size_t used;
};
void *take(Carve &c, size_t bytes) {
  void *p = c.base ? c.base + c.used : nullptr;
  c.used += hx_align256(bytes);
  return p;
}

unsigned blocks_for(size_t threads) { return (unsigned)((threads + kThreads - 1) / kThreads); }

/* The current device's opt-in shared memory per CTA and its SM count (what the persistent grids are sized by). */
hx_status device_limits(int *smem_optin, int *sms, hx_err *err) {
  int dev = 0;
  HX_CUDA(err, cudaGetDevice(&dev));
  HX_CUDA(err, cudaDeviceGetAttribute(smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  HX_CUDA(err, cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  return HX_OK;
}

/* A persistent grid's CTAs: kern granted smem bytes of dynamic shared memory, then as many CTAs of `threads` as the
 * device holds at once (sms times the kernel's occupancy), at most `want`. */
template <typename K>
hx_status persistent_ctas(unsigned *ctas, K kern, int threads, size_t smem, int sms, size_t want, hx_err *err) {
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int occ = 0;
  HX_CUDA(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, threads, smem));
  const size_t most = (size_t)(sms > 0 ? sms : 1) * (size_t)(occ > 0 ? occ : 1);
  *ctas = (unsigned)(want < most ? want : most);
  return HX_OK;
}

__device__ inline bool row_valid(uint32_t x, uint32_t y, uint32_t z, uint32_t b) {
  return x < kCoordLimit && y < kCoordLimit && z < kCoordLimit && b < kBatchLimit;
}

/* Whole warps reach the ballot (no early return): the new blocks of a warp are numbered by one atomicAdd, as
 * one atomicAdd a block (~240k on one address at 600k) serialised the kernel: 92 us against 24 us for the
 * voxel table's insert (H200). */
__global__ void __launch_bounds__(kThreads) insert_kernel(Slot *__restrict__ table, uint32_t mask,
                                                          uint32_t *__restrict__ nblk,
                                                          const uint32_t *__restrict__ grid,
                                                          const uint32_t *__restrict__ batch, uint32_t n,
                                                          unsigned long long *__restrict__ st) {
  hx_pdl_wait();
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  bool won = false;
  uint32_t slot = 0;
  if (i < n) {
    const uint32_t x = grid[3u * i], y = grid[3u * i + 1u], z = grid[3u * i + 2u], b = batch ? batch[i] : 0u;
    if (!row_valid(x, y, z, b)) {
      const bool coord = x >= kCoordLimit || y >= kCoordLimit || z >= kCoordLimit;
      atomicOr(&st[0], coord ? kBadCoord : kBadBatch);
      atomicMin(&st[coord ? 1 : 2], (unsigned long long)i);
    } else {
      const unsigned long long key = spc_pack_key(b, x >> 1, y >> 1, z >> 1);
      for (uint32_t s = (uint32_t)hx_mix64(key) & mask;; s = (s + 1u) & mask) {
        const unsigned long long old = atomicCAS(&table[s].key, kEmpty, key);
        if (old == kEmpty) {
          won = true, slot = s;
          break;
        }
        if (old == key) break;
      }
    }
  }
  const unsigned m = __ballot_sync(0xFFFFFFFFu, won);
  if (!m) return;
  const int lane = (int)(threadIdx.x & 31u), leader = __ffs((int)m) - 1;
  uint32_t base = 0;
  if (lane == leader) base = atomicAdd(nblk, (uint32_t)__popc(m));
  base = __shfl_sync(0xFFFFFFFFu, base, leader);
  if (won) table[slot].row = base + (uint32_t)__popc(m & ((1u << lane) - 1u));
}

/* The index of the block with this key, or -1 (the table was filled by an earlier launch). */
__device__ inline int32_t find_block(const Slot *__restrict__ table, uint32_t mask, unsigned long long key) {
  for (uint32_t s = (uint32_t)hx_mix64(key) & mask;; s = (s + 1u) & mask) {
    const Slot e = table[s];
    if (e.key == key) return (int32_t)e.row;
    if (e.key == kEmpty) return -1;
  }
}

/* The 8 cells of block (b, bx, by, bz) into d[0], d[1]: -1 where the row is not ok, the block lies outside the grid or
 * is not occupied. */
__device__ __forceinline__ void block_cells(int4 *d, const Slot *__restrict__ table, uint32_t mask,
                                            const int32_t *__restrict__ brows, bool ok, uint32_t b, int bx, int by,
                                            int bz) {
  constexpr int top = (int)(kCoordLimit >> 1);
  int32_t blk = -1;
  if (ok && bx >= 0 && by >= 0 && bz >= 0 && bx < top && by < top && bz < top)
    blk = find_block(table, mask, spc_pack_key(b, (uint32_t)bx, (uint32_t)by, (uint32_t)bz));
  int4 lo = make_int4(-1, -1, -1, -1), hi = lo;
  if (blk >= 0) {
    const int4 *s = reinterpret_cast<const int4 *>(brows + 8u * (size_t)blk);
    lo = s[0], hi = s[1];
  }
  d[0] = lo, d[1] = hi;
}

__device__ inline uint32_t cell_of(int x, int y, int z) { return (uint32_t)((x & 1) << 2 | (y & 1) << 1 | (z & 1)); }

__global__ void __launch_bounds__(kThreads) place_kernel(int32_t *__restrict__ brows, const Slot *__restrict__ table,
                                                         uint32_t mask, const uint32_t *__restrict__ grid,
                                                         const uint32_t *__restrict__ batch, uint32_t n,
                                                         unsigned long long *__restrict__ st) {
  hx_pdl_wait();
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t x = grid[3u * i], y = grid[3u * i + 1u], z = grid[3u * i + 2u], b = batch ? batch[i] : 0u;
  if (!row_valid(x, y, z, b)) return;
  const int32_t blk = find_block(table, mask, spc_pack_key(b, x >> 1, y >> 1, z >> 1)); /* inserted: >= 0 */
  const int32_t old = atomicCAS(&brows[8u * (size_t)blk + cell_of((int)x, (int)y, (int)z)], -1, (int32_t)i);
  if (old != -1) {
    const uint32_t lo = (uint32_t)old < i ? (uint32_t)old : i, hi = (uint32_t)old < i ? i : (uint32_t)old;
    atomicOr(&st[0], kDuplicate);
    atomicMin(&st[3], ((unsigned long long)hi << 32) | lo);
  }
}

/* Per-offset pair counts without the flags and their scan: a CTA counts its entries in shared memory and adds
 * its K counts to cnt (zeroed before the launch) with one atomicAdd each. */
template <uint32_t K> struct Counts {
  uint32_t c[K];
  __device__ void zero() {
    for (uint32_t o = threadIdx.x; o < K; o += blockDim.x) c[o] = 0u;
  }
  __device__ void flush(uint32_t *cnt) {
    for (uint32_t o = threadIdx.x; o < K; o += blockDim.x)
      if (c[o]) atomicAdd(&cnt[o], c[o]);
  }
};

/* G lanes per row (a group never spans warps); NB = nb^3 blocks hold a row's window, nb per axis (a window of
 * k cells starting at x - r covers floor((x - r) / 2) .. floor((x + r) / 2): 3 blocks for k = 5, 2 for k = 3,
 * whatever x's parity), one lane each. At k = 5, nbr3 (NULL or [n * 27]) gets the k = 3 map of the same voxels,
 * the inner 3^3 of each window, from the same cells (spc_map_pair_gpu: PTv3's level 0 needs both). By blocks
 * instead (a warp an occupied block, its 27 surrounding blocks probed once for all its rows) the stem's lookups
 * took 447-504 us against 303 at 600k lidar points (H200): the probes do not set the time. */
template <int k>
__global__ void __launch_bounds__(kThreads) lookup_kernel(int32_t *__restrict__ nbr, uint32_t *__restrict__ flag,
                                                          uint32_t *__restrict__ cnt, int32_t *__restrict__ nbr3,
                                                          const Slot *__restrict__ table, uint32_t mask,
                                                          const int32_t *__restrict__ brows,
                                                          const uint32_t *__restrict__ grid,
                                                          const uint32_t *__restrict__ batch, uint32_t n) {
  hx_pdl_wait();
  constexpr uint32_t K = (uint32_t)(k * k * k);
  constexpr int r = k / 2, nb = k == 5 ? 3 : 2, NB = nb * nb * nb, G = k == 5 ? 32 : 8, GPB = (int)kThreads / G;
  static_assert(NB <= G && 32 % G == 0, "one lane a block, groups inside warps");
  __shared__ __align__(16) int32_t cells[GPB][NB * 8];
  __shared__ Counts<K> counts;
  if (cnt) counts.zero();
  const int g = (int)threadIdx.x / G, l = (int)threadIdx.x % G;
  const uint32_t i = blockIdx.x * (uint32_t)GPB + (uint32_t)g;
  uint32_t x = 0, y = 0, z = 0, b = 0;
  bool ok = false;
  if (i < n) {
    x = grid[3u * i], y = grid[3u * i + 1u], z = grid[3u * i + 2u], b = batch ? batch[i] : 0u;
    ok = row_valid(x, y, z, b);
  }
  /* floor by arithmetic shifts; x, y, z < 2^18 once ok, so no overflow */
  const int lx = ok ? ((int)x - r) >> 1 : 0, ly = ok ? ((int)y - r) >> 1 : 0, lz = ok ? ((int)z - r) >> 1 : 0;
  if (l < NB)
    block_cells(reinterpret_cast<int4 *>(&cells[g][l * 8]), table, mask, brows, ok, b, lx + l / (nb * nb),
                ly + (l / nb) % nb, lz + l % nb);
  __syncthreads(); /* the cells (a group's) and the counts' zeros (the CTA's) */
  if (i < n) {
    auto at = [&](int nx, int ny, int nz) {
      return cells[g][(((nx >> 1) - lx) * nb * nb + ((ny >> 1) - ly) * nb + ((nz >> 1) - lz)) * 8 +
                      (int)cell_of(nx, ny, nz)];
    };
    for (uint32_t o = (uint32_t)l; o < K; o += (uint32_t)G) {
      const int32_t j = ok ? at((int)x + (int)(o / (uint32_t)(k * k)) - r,
                                (int)y + (int)((o / (uint32_t)k) % (uint32_t)k) - r,
                                (int)z + (int)(o % (uint32_t)k) - r)
                           : -1;
      nbr[(size_t)i * K + o] = j;
      if (flag) flag[(size_t)o * n + i] = j >= 0 ? 1u : 0u;
      if (cnt && j >= 0) atomicAdd(&counts.c[o], 1u);
    }
    if (k == 5 && nbr3 && l < 27)
      nbr3[(size_t)i * 27u + (uint32_t)l] = ok ? at((int)x + l / 9 - 1, (int)y + (l / 3) % 3 - 1, (int)z + l % 3 - 1) : -1;
  }
  if (!cnt) return;
  __syncthreads();
  counts.flush(cnt);
}

__global__ void __launch_bounds__(kThreads) rule_kernel(int32_t *__restrict__ rule, const int32_t *__restrict__ nbr,
                                                        const uint32_t *__restrict__ flag,
                                                        const uint32_t *__restrict__ scan, uint32_t n, uint32_t K) {
  hx_pdl_wait();
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n * K || !flag[t]) return;
  const uint32_t o = t / n, i = t - o * n;
  const uint32_t p = scan[t] - scan[(size_t)o * n];
  rule[(size_t)o * n + p] = nbr[(size_t)i * K + o];
  rule[(size_t)K * n + (size_t)o * n + p] = (int32_t)i;
}

__global__ void count_kernel(uint32_t *__restrict__ cnt, const uint32_t *__restrict__ flag,
                             const uint32_t *__restrict__ scan, uint32_t n, uint32_t K) {
  hx_pdl_wait();
  const uint32_t o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= K) return;
  const size_t first = (size_t)o * n, last = first + n - 1u;
  cnt[o] = scan[last] + flag[last] - scan[first];
}

/* ---- v0 kernels ----------------------------------------------------------------------------------- */
/* G[p] = x[rule_in[p]] for p < rows (V: 1, 2, 4 or 8 dtype values); rows at or past the device count are
 * zero (they only arise from stale host counts). */
template <typename V>
__global__ void __launch_bounds__(kThreads) gather_kernel(V *__restrict__ G, const V *__restrict__ x,
                                                          const int32_t *__restrict__ rin,
                                                          const uint32_t *__restrict__ dcnt, uint32_t rows,
                                                          uint32_t vpr) {
  hx_pdl_wait();
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)rows * vpr) return;
  const uint32_t p = (uint32_t)(t / vpr), v = (uint32_t)(t - (size_t)p * vpr);
  V val{};
  if (p < *dcnt) val = x[(size_t)rin[p] * vpr + v];
  G[t] = val;
}

__device__ inline void add_into(float *a, float q) { *a += q; }
__device__ inline void add_into(float4 *a, float4 q) {
  float4 s = *a;
  s.x += q.x, s.y += q.y, s.z += q.z, s.w += q.w;
  *a = s;
}

/* acc[rule_out[p]] += P[p] for p < min(rows, device count). */
template <typename V>
__global__ void __launch_bounds__(kThreads) scatter_add_kernel(float *__restrict__ acc, const float *__restrict__ P,
                                                               const int32_t *__restrict__ rout,
                                                               const uint32_t *__restrict__ dcnt, uint32_t rows,
                                                               uint32_t vpr) {
  hx_pdl_wait();
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t)rows * vpr) return;
  const uint32_t p = (uint32_t)(t / vpr), v = (uint32_t)(t - (size_t)p * vpr);
  if (p >= *dcnt) return;
  add_into(reinterpret_cast<V *>(acc) + (size_t)rout[p] * vpr + v, reinterpret_cast<const V *>(P)[t]);
}

__device__ inline __half to_dtype(float v, __half) { return __float2half_rn(v); }
__device__ inline __nv_bfloat16 to_dtype(float v, __nv_bfloat16) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void __launch_bounds__(kThreads) finalize_kernel(T *__restrict__ y, const float *__restrict__ acc,
                                                            const float *__restrict__ b, size_t total, uint32_t out) {
  hx_pdl_wait();
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  y[t] = to_dtype(acc[t] + (b ? b[t % out] : 0.0f), T{});
}

template <typename V>
hx_status launch_gather(void *G, const void *x, const int32_t *rin, const uint32_t *dcnt, uint32_t rows, size_t in,
                        cudaStream_t stream, hx_err *err) {
  const uint32_t vpr = (uint32_t)(in * 2u / sizeof(V));
  hx_launch(gather_kernel<V>, blocks_for((size_t)rows * vpr), kThreads, 0, stream, static_cast<V *>(G),
            static_cast<const V *>(x), rin, dcnt, rows, vpr);
  HX_LAUNCHED(err, "spc v0 gather_kernel");
  return HX_OK;
}

hx_status gather(void *G, const void *x, const int32_t *rin, const uint32_t *dcnt, uint32_t rows, size_t in,
                 cudaStream_t stream, hx_err *err) {
  const uintptr_t a = (uintptr_t)x;
  if (in % 8u == 0 && a % 16u == 0) return launch_gather<uint4>(G, x, rin, dcnt, rows, in, stream, err);
  if (in % 4u == 0 && a % 8u == 0) return launch_gather<uint2>(G, x, rin, dcnt, rows, in, stream, err);
  if (in % 2u == 0 && a % 4u == 0) return launch_gather<uint32_t>(G, x, rin, dcnt, rows, in, stream, err);
  return launch_gather<uint16_t>(G, x, rin, dcnt, rows, in, stream, err);
}

hx_status scatter_add(float *acc, const float *P, const int32_t *rout, const uint32_t *dcnt, uint32_t rows,
                      size_t out, cudaStream_t stream, hx_err *err) {
  if (out % 4u == 0) {
    const uint32_t vpr = (uint32_t)(out / 4u);
    hx_launch(scatter_add_kernel<float4>, blocks_for((size_t)rows * vpr), kThreads, 0, stream, acc, P, rout, dcnt, rows,
              vpr);
  } else {
    hx_launch(scatter_add_kernel<float>, blocks_for((size_t)rows * out), kThreads, 0, stream, acc, P, rout, dcnt, rows,
              (uint32_t)out);
  }
  HX_LAUNCHED(err, "spc v0 scatter_add_kernel");
  return HX_OK;
}

/* C[rows, out] fp32 = X[rows, in] W^T, W [out, in]; row-major, so in cuBLAS's column-major terms
 * C^T (out x rows) = op_T(W^T as in x out) * X^T (in x rows). */
hx_status gemm(cublasHandle_t h, float *C, const void *X, const void *W, uint32_t rows, size_t in, size_t out,
               cudaDataType_t ct, hx_err *err) {
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t s =
      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)rows, (int)in, &one, W, ct, (int)in, X, ct, (int)in,
                   &zero, C, CUDA_R_32F, (int)out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    return hx_errf(err, HX_ECUDA, "spc v0: cublasGemmEx (%u rows, %zu -> %zu): %s", rows, in, out,
                   cublasGetStatusString(s));
  return HX_OK;
}

/* ---- v1: fused implicit GEMM ----------------------------------------------------------------------- */
namespace v1 {

/* Everything the kernel reads, validated once by conv_implicit for v1 and v3 (flash-attention's params struct):
 * the kernel trusts it. Rows are dense (row stride = channels); x, w and y are 16-byte aligned, in and out multiples of 16. */
struct Params {
  void *y;             /* [n, out] dtype */
  const void *x;       /* [n, in] dtype */
  const void *w;       /* [K][out][in] dtype: W_o row-major [out, in], the mma's column-major B operand */
  const float *b;      /* [out] fp32 or NULL */
  const int32_t *nbr;  /* [n, K]: input row or -1; entries outside [0, n) are read as -1 */
  uint32_t n, K, in, out;
  uint32_t slices;     /* out / BN: CTA c owns row tile c / slices and output channels BN * (c % slices) .. */
  const uint32_t *perm; /* NULL (v1): tile row t is output row t; else (v3) output row perm[t], a permutation */
  uint32_t deep;        /* v4: the deep pipeline (Deep) where it fits the device; else 3 stages */
  int *plan;            /* non-NULL: launch nothing, store {tile rows, pipeline stages} the launch would use */
};

/* Tile sizes per row tile BM, output-slice width BN and input-channel chunk BK (the compiled specialisations:
 * BM 128 or 256, BN 16, 32, 64 or 128 by out, BK 16, 32 or 64 by in, fp16 and bf16). A warp owns 32 x BN/2
 * (BN >= 64) or 16 x BN accumulators, so BM = 128 is 8 warps (2 CTAs per SM) and BM = 256 is 16 warps (1). */
template <int BM_, int BN_, int BK_, int STAGES_ = 3> struct Traits {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  static constexpr int WARPS_N = BN >= 64 ? 2 : 1, WM = BN >= 64 ? 32 : 16, WARPS_M = BM / WM;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N, MIN_CTAS = THREADS <= 256 ? 2 : 1;
  static constexpr int WN = BN / WARPS_N;                     /* one warp's accumulator tile: WM x WN */
  static constexpr int MI = WM / 16, NI = WN / 8;             /* its m16 and n8 mma tiles */
  static constexpr int CPR = BK / 8;                          /* 16-byte chunks per smem row */
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int GROUPS = BM / 16, MASKW = 4;           /* 16-row groups; mask words (K <= 128) */
  static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0 && WM % 16 == 0, "warp tile: m16 rows, pairs of n8 tiles");
  static_assert((BM * CPR) % THREADS == 0, "A chunks split evenly over the threads");
  static_assert(STAGE_BYTES % 128 == 0, "stages stay 128-byte aligned");
  /* Dynamic shared memory: the stages, then the tile's map rows, group masks and active-offset list. */
  static constexpr size_t smem_bytes(uint32_t K) {
    return (size_t)STAGES * STAGE_BYTES + (size_t)BM * K * 4u + GROUPS * MASKW * 4u + 128u + 16u;
  }
};

/* v4's pipeline at 256-row tiles (k = 3 maps of >= 16384 rows): the deepest (3 to 8 stages) the tile fits in
 * sm_90's 227 KB of shared memory per CTA with its k = 3 map rows. There one CTA runs per SM (the registers of
 * its 512 threads), and a step's gathered rows are its only work between barriers, so the kernel may wait on
 * gather latency with STAGES - 1 steps in flight: 3 stages keep 2 x 16 KB in flight at C = 32 (600k rows: 400
 * us against a 54 us floor on an H200), 8 keep 7. 128-row tiles keep 3: two or three of their CTAs share an SM,
 * and deeper stages would leave one. Where the deep one does not fit the device (sm_80's 163 KB), launch uses 3. */
constexpr int kDeepSmem = 227 * 1024;
template <int BM, int BN, int BK> struct Deep {
  using S = Traits<BM, BN, BK>;
  static constexpr size_t MAP = S::smem_bytes(27) - (size_t)S::STAGES * S::STAGE_BYTES; /* map rows, masks, offsets */
  static constexpr int FIT = (int)((kDeepSmem - MAP) / S::STAGE_BYTES);
  static constexpr int STAGES = BM != 256 ? 3 : FIT > 8 ? 8 : FIT < 3 ? 3 : FIT;
};

using spc_dev::cp_async_ca;
using spc_dev::cp_async_cg;
using spc_dev::cp_async_commit;
using spc_dev::cp_async_wait;
using spc_dev::pack2;
using spc_dev::smem_addr;
using spc_dev::swz;

using spc_dev::ldsm_x4;
using spc_dev::mma;

/* One k16 step's B fragments of a warp's WN columns from a [BN][BK] swizzled weight stage at aB. ldmatrix.x4
 * matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) of each n16 pair. */
template <typename Tr>
__device__ __forceinline__ void b_frags(uint32_t (&bf)[Tr::NI][2], uint32_t aB, int kk, int wn, int lane) {
#pragma unroll
  for (int q = 0; q < Tr::NI / 2; ++q) {
    const int nn = wn * Tr::WN + q * 16 + (lane & 7) + ((lane >> 4) << 3), c = kk * 2 + ((lane >> 3) & 1);
    ldsm_x4(bf[2 * q][0], bf[2 * q][1], bf[2 * q + 1][0], bf[2 * q + 1][1], aB + swz<Tr::CPR>(nn, c));
  }
}

/* The epilogue: + bias (fp32), one rounding to T, one store per value; tile row t of [r0, r0 + BM) is output row
 * t, or perm[t] when perm is given. A thread holds (row g, cols 2t, 2t+1) and (row g + 8, the same cols) of every
 * m16n8 tile. */
template <typename T, typename Tr>
__device__ __forceinline__ void store_acc(void *yv, const float (&acc)[Tr::MI][Tr::NI][4], const float *bias,
                                          const uint32_t *perm, uint32_t n, uint32_t out, uint32_t r0, uint32_t c0,
                                          int wm, int wn, int lane) {
  uint32_t *y = static_cast<uint32_t *>(yv);
#pragma unroll
  for (int ni = 0; ni < Tr::NI; ++ni) {
    const uint32_t col = c0 + (uint32_t)(wn * Tr::WN + ni * 8 + (lane & 3) * 2);
    const float b0 = bias ? bias[col] : 0.0f, b1 = bias ? bias[col + 1u] : 0.0f;
#pragma unroll
    for (int mi = 0; mi < Tr::MI; ++mi) {
      const uint32_t r = r0 + (uint32_t)(wm * Tr::WM + mi * 16 + (lane >> 2));
      if (r < n) {
        const uint32_t o = perm ? __ldg(perm + r) : r;
        y[((size_t)o * out + col) / 2u] = pack2(acc[mi][ni][0] + b0, acc[mi][ni][1] + b1, T{});
      }
      if (r + 8u < n) {
        const uint32_t o = perm ? __ldg(perm + r + 8u) : r + 8u;
        y[((size_t)o * out + col) / 2u] = pack2(acc[mi][ni][2] + b0, acc[mi][ni][3] + b1, T{});
      }
    }
  }
}

/*
 * One CTA: tile rows [r0, r0 + BM) x channels [c0, c0 + BN); tile row t is output row t, or perm[t] when a
 * row order is given (v3). Prologue: the tile's map rows into shared memory (rows past n and entries outside
 * [0, n) as -1), a mask of the offsets each 16-row group has a neighbour at, and the list of offsets the whole
 * tile has one at (in increasing o). Main loop over steps s = (active offset, input chunk) with a STAGES-deep
 * cp.async pipeline: step s gathers A[r][:] = x[nbr_s[r, o]][chunk] (zeros for -1) and B = W_o[c0 .. c0 + BN)[chunk], and each warp multiplies only its
 * 16-row groups that have a neighbour at o. Epilogue: + bias, one rounding to the dtype, one store per value.
 * Invariant of the pipeline: when step s is computed, cp.async groups 0..s are complete (wait_group STAGES-2
 * after STAGES-1+s commits) and the buffer refilled in iteration s, (s-1) % STAGES, was last read in
 * iteration s-1, before every warp passed this iteration's barrier.
 */
template <typename T, int BM, int BN, int BK, int ST>
__global__ void __launch_bounds__(Traits<BM, BN, BK, ST>::THREADS, Traits<BM, BN, BK, ST>::MIN_CTAS)
    conv_kernel(const Params p) {
  hx_pdl_wait();
  using Tr = Traits<BM, BN, BK, ST>;
  constexpr int STAGES = Tr::STAGES, THREADS = Tr::THREADS, CPR = Tr::CPR, MI = Tr::MI, NI = Tr::NI;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char *stage = smem;
  int32_t *nbr_s = reinterpret_cast<int32_t *>(smem + STAGES * Tr::STAGE_BYTES);
  uint32_t *gmask = reinterpret_cast<uint32_t *>(nbr_s + BM * p.K);
  uint8_t *act = reinterpret_cast<uint8_t *>(gmask + Tr::GROUPS * Tr::MASKW);
  int *nact = reinterpret_cast<int *>(act + 128);

  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Tr::WARPS_N, wn = warp % Tr::WARPS_N;
  const uint32_t tile = blockIdx.x / p.slices, slice = blockIdx.x - tile * p.slices;
  const uint32_t r0 = tile * (uint32_t)BM, c0 = slice * (uint32_t)BN, K = p.K;

  /* prologue: the tile's map rows, then per 16-row group the mask of offsets with a neighbour (one lane per
   * (group, offset), a ballot per 32 offsets: no shared atomics), then the tile's active offsets */
  const uint32_t rows = p.n - r0 < (uint32_t)BM ? p.n - r0 : (uint32_t)BM;
  for (uint32_t t = (uint32_t)tid; t < (uint32_t)BM * K; t += THREADS) {
    int32_t j = -1;
    if (t / K < rows) {
      const size_t e = p.perm ? (size_t)__ldg(p.perm + r0 + t / K) * K + t % K : (size_t)r0 * K + t;
      j = p.nbr[e];
      if ((uint32_t)j >= p.n) j = -1;
    }
    nbr_s[t] = j;
  }
  __syncthreads();
  const uint32_t words = (K + 31u) / 32u; /* <= MASKW; words past it are never read */
  for (uint32_t t = (uint32_t)tid; t < (uint32_t)Tr::GROUPS * words * 32u; t += THREADS) {
    /* the bound is a multiple of 32 and so is THREADS: every warp's lanes iterate together */
    const uint32_t g = t / (words * 32u), o = t - g * words * 32u;
    bool on = false;
    if (o < K)
#pragma unroll
      for (uint32_t rr = 0; rr < 16u; ++rr) on |= nbr_s[(g * 16u + rr) * K + o] >= 0;
    const uint32_t bal = __ballot_sync(0xFFFFFFFFu, on);
    if (lane == 0) gmask[g * Tr::MASKW + o / 32u] = bal; /* lane 0 holds o = a multiple of 32 */
  }
  __syncthreads();
  if (warp == 0) {
    int count = 0;
    for (uint32_t wd = 0; wd < words; ++wd) {
      uint32_t any = 0;
      for (int g = 0; g < Tr::GROUPS; ++g) any |= gmask[g * Tr::MASKW + (int)wd];
      const bool on = (any >> lane) & 1u; /* bits at o >= K are never set */
      const uint32_t bal = __ballot_sync(0xFFFFFFFFu, on);
      if (on) act[count + __popc(bal & ((1u << lane) - 1u))] = (uint8_t)(wd * 32u + (uint32_t)lane);
      count += __popc(bal);
    }
    if (lane == 0) *nact = count;
  }
  __syncthreads();

  const int KC = (int)(p.in / (uint32_t)BK), S = *nact * KC;
  const unsigned char *xb = static_cast<const unsigned char *>(p.x), *wb = static_cast<const unsigned char *>(p.w);

  auto load = [&](int s, int buf) {
    const int oi = s / KC, kc = s - oi * KC, o = act[oi];
    unsigned char *sA = stage + buf * Tr::STAGE_BYTES, *sB = sA + Tr::A_BYTES;
    const uint32_t aA = smem_addr(sA), aB = smem_addr(sB);
#pragma unroll
    for (int i = 0; i < BM * CPR / THREADS; ++i) {
      const int t = tid + i * THREADS, r = t / CPR, c = t % CPR;
      const int32_t j = nbr_s[r * (int)K + o];
      const void *src = j >= 0 ? xb + ((size_t)j * p.in + (size_t)kc * BK + (size_t)c * 8u) * 2u : xb;
      cp_async_ca(aA + swz<CPR>(r, c), src, j >= 0 ? 16u : 0u);
    }
#pragma unroll
    for (int t = tid; t < BN * CPR; t += THREADS) {
      const int nn = t / CPR, c = t % CPR;
      const size_t e = ((size_t)o * p.out + c0 + (size_t)nn) * p.in + (size_t)kc * BK + (size_t)c * 8u;
      cp_async_cg(aB + swz<CPR>(nn, c), wb + e * 2u);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < S) load(s, s);
    cp_async_commit();
  }
  for (int s = 0; s < S; ++s) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (s + STAGES - 1 < S) load(s + STAGES - 1, (s + STAGES - 1) % STAGES);
    cp_async_commit();

    const int o = act[s / KC];
    bool on[MI];
    bool any = false;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int g = (wm * Tr::WM) / 16 + mi;
      on[mi] = (gmask[g * Tr::MASKW + (o >> 5)] >> (o & 31)) & 1u;
      any |= on[mi];
    }
    if (!any) continue; /* warp-uniform: none of this warp's rows has a neighbour at o */
    const unsigned char *sA = stage + (s % STAGES) * Tr::STAGE_BYTES;
    const uint32_t aA = smem_addr(sA), aB = aA + (uint32_t)Tr::A_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t bf[NI][2];
      b_frags<Tr>(bf, aB, kk, wn, lane);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        if (!on[mi]) continue;
        /* matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) */
        const int r = wm * Tr::WM + mi * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), c = kk * 2 + (lane >> 4);
        uint32_t af[4];
        ldsm_x4(af[0], af[1], af[2], af[3], aA + swz<CPR>(r, c));
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) mma(acc[mi][ni], af, bf[ni][0], bf[ni][1], T{});
      }
    }
  }
  cp_async_wait<0>();
  store_acc<T, Tr>(p.y, acc, p.b, p.perm, p.n, p.out, r0, c0, wm, wn, lane);
}

template <typename T, int BM, int BN, int BK, int ST>
hx_status launch_st(const Params &p, int smem_optin, cudaStream_t stream, hx_err *err) {
  using Tr = Traits<BM, BN, BK, ST>;
  const size_t smem = Tr::smem_bytes(p.K);
  if (smem > (size_t)smem_optin)
    return hx_errf(err, HX_EUNSUPPORTED, "spc v1: %zu bytes of shared memory per CTA (K = %u, tile %d x %d, chunk %d, "
                   "%d stages), the device allows %d", smem, p.K, BM, BN, BK, ST, smem_optin);
  const size_t ctas = ((size_t)p.n + Tr::BM - 1u) / Tr::BM * p.slices;
  auto kern = conv_kernel<T, BM, BN, BK, ST>;
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  hx_launch(kern, (unsigned)ctas, Tr::THREADS, smem, stream, p);
  HX_LAUNCHED(err, "spc v1 conv_kernel");
  return HX_OK;
}

/* 3 stages; with p.deep (v4) the deep pipeline where it fits the device's shared memory. A 256-row tile whose 3
 * stages do not fit (sm_80's 163 KB against 171 KB at 128 output channels) runs as 128-row tiles: the same sums,
 * since each output sums over increasing o whatever the tile. */
template <typename T, int BM, int BN, int BK>
hx_status launch(const Params &p, int smem_optin, cudaStream_t stream, hx_err *err) {
  if constexpr (BM == 256) {
    if (Traits<BM, BN, BK>::smem_bytes(p.K) > (size_t)smem_optin) return launch<T, 128, BN, BK>(p, smem_optin, stream, err);
  }
  constexpr int DS = Deep<BM, BN, BK>::STAGES;
  const int deep = DS > 3 && p.deep && Traits<BM, BN, BK, DS>::smem_bytes(p.K) <= (size_t)smem_optin;
  if (p.plan) {
    p.plan[0] = BM, p.plan[1] = deep ? DS : 3;
    return HX_OK;
  }
  if constexpr (DS > 3) {
    if (deep) return launch_st<T, BM, BN, BK, DS>(p, smem_optin, stream, err);
  }
  return launch_st<T, BM, BN, BK, 3>(p, smem_optin, stream, err);
}

/* The specialisation for (dtype, BM, BN, BK): BM 256 for maps of kBigRows rows or more at K = 27, else 128; BN
 * the widest of 128, 64, 32, 16 dividing out (slice_width); BK the widest of 64, 32, 16 dividing in
 * (chunk_width; v5 takes both rules too). */
constexpr uint32_t kBigRows = 16384;
inline uint32_t tile_rows(uint32_t n, uint32_t K) { return n >= kBigRows && K == 27u ? 256u : 128u; }
inline uint32_t slice_width(uint32_t out) {
  return out % 128u == 0 ? 128u : out % 64u == 0 ? 64u : out % 32u == 0 ? 32u : 16u;
}
inline uint32_t chunk_width(uint32_t in) { return in % 64u == 0 ? 64u : in % 32u == 0 ? 32u : 16u; }
template <typename T, int BM, int BN>
hx_status by_bk(const Params &p, int smem_optin, cudaStream_t stream, hx_err *err) {
  switch (chunk_width(p.in)) {
  case 64: return launch<T, BM, BN, 64>(p, smem_optin, stream, err);
  case 32: return launch<T, BM, BN, 32>(p, smem_optin, stream, err);
  default: return launch<T, BM, BN, 16>(p, smem_optin, stream, err);
  }
}
template <typename T, int BM> hx_status by_bn(const Params &p, int smem_optin, cudaStream_t stream, hx_err *err) {
  switch (slice_width(p.out)) {
  case 128: return by_bk<T, BM, 128>(p, smem_optin, stream, err);
  case 64: return by_bk<T, BM, 64>(p, smem_optin, stream, err);
  case 32: return by_bk<T, BM, 32>(p, smem_optin, stream, err);
  default: return by_bk<T, BM, 16>(p, smem_optin, stream, err);
  }
}
template <typename T> hx_status by_bm(Params p, int smem_optin, cudaStream_t stream, hx_err *err) {
  p.slices = p.out / slice_width(p.out);
  return tile_rows(p.n, p.K) == 256u ? by_bn<T, 256>(p, smem_optin, stream, err)
                                     : by_bn<T, 128>(p, smem_optin, stream, err);
}

/* v3's sort keys: key[i] = the offsets at which row i has a neighbour (bit o, K <= 32), val[i] = i. */
__global__ void __launch_bounds__(kThreads) mask_kernel(uint32_t *__restrict__ key, uint32_t *__restrict__ val,
                                                        const int32_t *__restrict__ nbr, uint32_t n, uint32_t K) {
  hx_pdl_wait();
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;
  uint32_t m = 0;
  for (uint32_t o = 0; o < K; ++o) {
    const int32_t j = __ldg(nbr + (size_t)i * K + o);
    m |= (j >= 0 && (uint32_t)j < n ? 1u : 0u) << o;
  }
  key[i] = m;
  val[i] = i;
}

} // namespace v1

/* ---- v5: the tile's input halo in shared memory ----------------------------------------------------- */
namespace v5 {
using v1::cp_async_cg;
using v1::cp_async_commit;
using v1::cp_async_wait;
using v1::ldsm_x4;
using v1::mma;
using v1::pack2;
using v1::smem_addr;
using v1::swz;

constexpr int BM = 128, K = 27, ENTRIES = BM * K; /* 3456 map entries a tile */
constexpr int THREADS = 256, STRIPES = (ENTRIES + THREADS - 1) / THREADS; /* entry t = 256 q + tid: 14 stripes */
constexpr int WORDS = STRIPES * (THREADS / 32);   /* first-appearance flags, 32 consecutive entries a word */
constexpr int HT = 4096;                          /* dedupe hash slots: > ENTRIES, so it never fills */
constexpr int WSTAGES = 3;                        /* weight slices in flight: the next two offsets' */
static_assert(HT > ENTRIES && WORDS <= 128, "one table holds every entry of a tile; one warp scans the words");
/* Entry codes in the tile's map rows (nbr_s) while the pages run: j >= 0 an input row not yet multiplied, -1 no
 * neighbour (or multiplied in an earlier page), -2 - h the row held in halo slot h of the current page. */
constexpr int32_t kNone = -1;
__host__ __device__ constexpr int32_t slot_code(int32_t h) { return -2 - h; }

/* Everything the kernel reads, validated once by spc_conv_v5: the kernel trusts it. */
struct Params {
  void *y;            /* [n, out] dtype */
  const void *x;      /* [n, in] dtype */
  const void *w;      /* [27][out][in] dtype */
  const float *b;     /* [out] fp32 or NULL */
  const int32_t *nbr; /* [n, 27]: input row or -1; entries outside [0, n) are read as -1 */
  uint32_t n, in, out, slices;
  uint32_t hcap;      /* halo rows a page holds; slot hcap is the zero row */
};

/* The dedupe's storage, in the halo's space before the halo is loaded: a hash table of the page's input rows
 * (key, the first entry naming it, its halo slot), the first-appearance flags in entry order (a ballot per 32
 * entries) and each word's rank base. */
struct Temp {
  int32_t key[HT], first[HT], slot[HT];
  uint32_t flags[128], base[128];
};
__device__ __forceinline__ uint32_t home(int32_t j) { return ((uint32_t)j * 2654435761u) >> 20; } /* 12 bits */

/* Shared memory, in this order: the tile's map rows (ENTRIES int32), the 16-row groups' offset masks, the active
 * offsets, 4 counters, the halo's input rows (hcap int32); then, 128-byte aligned, WSTAGES weight stages (BN x BK)
 * and the halo (hcap + 1 rows of BK channels, XOR-swizzled as v1's stages), whose space the dedupe's table and
 * scan use before the halo is loaded. */
struct Layout {
  uint32_t gmask, act, misc, hrow, w, halo, total;
};
__host__ __device__ inline uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1u) / a * a; }
__host__ __device__ inline Layout layout(uint32_t hcap, uint32_t bn, uint32_t bk) {
  Layout l;
  l.gmask = ENTRIES * 4u;
  l.act = l.gmask + (BM / 16) * 4u * 4u;
  l.misc = l.act + 128u;
  l.hrow = l.misc + 16u;
  l.w = align_up(l.hrow + hcap * 4u, 128u);
  l.halo = l.w + (uint32_t)WSTAGES * bn * bk * 2u;
  const uint32_t hb = (hcap + 1u) * bk * 2u, tb = (uint32_t)sizeof(Temp);
  l.total = l.halo + align_up(hb > tb ? hb : tb, 128u);
  return l;
}
/* The most halo rows that fit smem_optin bytes (at most ENTRIES: a tile names no more), 0 if not even 16 do. */
inline uint32_t halo_capacity(uint32_t bn, uint32_t bk, int smem_optin) {
  uint32_t lo = 0, hi = ENTRIES;
  while (lo < hi) { /* the largest hcap whose layout fits */
    const uint32_t mid = (lo + hi + 1u) / 2u;
    if (layout(mid, bn, bk).total <= (uint32_t)smem_optin) lo = mid;
    else hi = mid - 1u;
  }
  return lo >= 16u ? lo : 0u;
}

/*
 * One CTA: tile rows [r0, r0 + 128) in the map's own order x output channels [c0, c0 + BN). The tile's map rows
 * name at most 3456 input rows, its halo; a page is the part of it that fits hcap slots. Per page: the pending
 * entries' input rows go into a hash table in shared memory (atomicCAS), each keeping the first entry that names
 * it (atomicMin); ballots and one warp's scan over the entries in order rank the rows by that first entry
 * (entries striped over the threads: no bank conflicts), and ranks < hcap get halo
 * slots, the rest stay pending for the next page (the ranks do not depend on the schedule: the pages and every
 * sum are the same in every run). Then the 16-row
 * groups' offset masks over this page's entries, and for each input chunk of BK channels: the chunk of every
 * halo row copied once (cp.async, 16 bytes), then for every active offset o the weight slice W_o[slice][chunk]
 * (WSTAGES stages: the next two offsets' loads while this one multiplies) and each warp's 16-row groups with an entry at
 * o multiplied, the A fragments loaded by ldmatrix straight from the halo rows the entries name (the zero row
 * for none). Accumulators stay in registers across pages; epilogue as v1's. Each output sums over pages, then
 * chunks, then increasing o: a fixed order for a given map, so runs agree bit for bit.
 */
template <typename T, int BN, int BK>
__global__ void __launch_bounds__(THREADS, BN <= 64 ? 2 : 1) conv_kernel(const Params p) {
  hx_pdl_wait();
  using Tr = v1::Traits<BM, BN, BK>;
  static_assert(Tr::THREADS == THREADS, "v1's warp layout at 128-row tiles is 8 warps");
  constexpr int CPR = Tr::CPR, MI = Tr::MI, NI = Tr::NI, GROUPS = BM / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  const Layout L = layout(p.hcap, BN, BK);
  int32_t *nbr_s = reinterpret_cast<int32_t *>(smem);
  uint32_t *gmask = reinterpret_cast<uint32_t *>(smem + L.gmask);
  uint8_t *act = smem + L.act;
  int *misc = reinterpret_cast<int *>(smem + L.misc); /* [0] active offsets, [1] halo rows, [2] pending */
  int32_t *hrow = reinterpret_cast<int32_t *>(smem + L.hrow);
  unsigned char *wst = smem + L.w, *halo = smem + L.halo;
  Temp &tmp = *reinterpret_cast<Temp *>(halo);

  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Tr::WARPS_N, wn = warp % Tr::WARPS_N;
  const uint32_t tile = blockIdx.x / p.slices, slice = blockIdx.x - tile * p.slices;
  const uint32_t r0 = tile * (uint32_t)BM, c0 = slice * (uint32_t)BN;
  const uint32_t rows = p.n - r0 < (uint32_t)BM ? p.n - r0 : (uint32_t)BM;
  const uint32_t hcap = p.hcap;
  const unsigned char *xb = static_cast<const unsigned char *>(p.x), *wb = static_cast<const unsigned char *>(p.w);
  const uint32_t ha = smem_addr(halo), wa = smem_addr(wst);
  const int KC = (int)(p.in / (uint32_t)BK);

  for (int t = tid; t < ENTRIES; t += THREADS) {
    int32_t j = kNone;
    if ((uint32_t)t / K < rows) {
      j = p.nbr[(size_t)r0 * K + (size_t)t];
      if ((uint32_t)j >= p.n) j = kNone;
    }
    nbr_s[t] = j;
  }
  if (tid == 0) misc[2] = 1;

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.0f;

  for (;;) { /* pages */
    __syncthreads(); /* map rows and the pending flag written; the last page's reads of everything done */
    if (misc[2] == 0) break;
    __syncthreads(); /* every thread read the flag before it is cleared below */
    /* 1. dedupe: the pending entries' rows into the table, each with the first entry that names it */
    for (int h = tid; h < HT; h += THREADS) tmp.key[h] = kNone, tmp.first[h] = ENTRIES;
    if (tid == 0) misc[2] = 0;
    __syncthreads();
    for (int t = tid; t < ENTRIES; t += THREADS) {
      const int32_t j = nbr_s[t];
      if (j < 0) continue;
      uint32_t h = home(j);
      for (;;) {
        const int32_t old = atomicCAS(&tmp.key[h], kNone, j);
        if (old == kNone || old == j) break;
        h = (h + 1u) & (HT - 1u);
      }
      atomicMin(&tmp.first[h], t);
    }
    __syncthreads();
    /* 2. ranks by first entry: entry t = 256 q + tid; a ballot per warp and stripe holds 32 consecutive entries'
     * first-appearance flags, one warp scans the words' counts, and a row's rank is its word's base plus the
     * flags before it in the word */
    uint32_t hs_of[STRIPES];
    const uint32_t below = (1u << lane) - 1u;
#pragma unroll
    for (int q = 0; q < STRIPES; ++q) {
      const int t = q * THREADS + tid;
      const int32_t j = t < ENTRIES ? nbr_s[t] : kNone;
      bool first = false;
      hs_of[q] = 0;
      if (j >= 0) {
        uint32_t h = home(j);
        while (tmp.key[h] != j) h = (h + 1u) & (HT - 1u);
        hs_of[q] = h;
        first = tmp.first[h] == t;
      }
      const uint32_t bal = __ballot_sync(0xFFFFFFFFu, first);
      if (lane == 0) tmp.flags[q * (THREADS / 32) + warp] = bal;
    }
    __syncthreads();
    if (warp == 0) { /* words 4 lane .. 4 lane + 3: counts, an exclusive scan over the lanes, the bases */
      uint32_t c[4], sum = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int wd = 4 * lane + i;
        c[i] = wd < WORDS ? (uint32_t)__popc(tmp.flags[wd]) : 0u;
        sum += c[i];
      }
      uint32_t incl = sum;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const uint32_t v = __shfl_up_sync(0xFFFFFFFFu, incl, d);
        if (lane >= d) incl += v;
      }
      uint32_t base = incl - sum;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (4 * lane + i < WORDS) tmp.base[4 * lane + i] = base;
        base += c[i];
      }
      if (lane == 31) misc[1] = incl < hcap ? (int)incl : (int)hcap; /* incl at lane 31: the distinct rows */
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < STRIPES; ++q) {
      const int t = q * THREADS + tid;
      const uint32_t word = tmp.flags[q * (THREADS / 32) + warp];
      if (t < ENTRIES && ((word >> lane) & 1u)) {
        const uint32_t rank = tmp.base[q * (THREADS / 32) + warp] + (uint32_t)__popc(word & below);
        tmp.slot[hs_of[q]] = rank < hcap ? (int32_t)rank : -1;
        if (rank < hcap) hrow[rank] = nbr_s[t];
      }
    }
    __syncthreads();
    /* the entries of rows with a slot take it; the others stay pending */
#pragma unroll
    for (int q = 0; q < STRIPES; ++q) {
      const int t = q * THREADS + tid;
      if (t >= ENTRIES || nbr_s[t] < 0) continue;
      const int32_t h = tmp.slot[hs_of[q]];
      if (h >= 0) nbr_s[t] = slot_code(h);
      else misc[2] = 1; /* any thread may set it: one value */
    }
    __syncthreads();
    /* 3. per 16-row group the mask of offsets with an entry in this page, then the active offsets (as v1) */
    for (int t = tid; t < GROUPS * 32; t += THREADS) {
      const int g = t / 32, o = t % 32;
      bool on = false;
      if (o < K)
#pragma unroll
        for (int rr = 0; rr < 16; ++rr) on |= nbr_s[(g * 16 + rr) * K + o] <= slot_code(0);
      const uint32_t bal = __ballot_sync(0xFFFFFFFFu, on);
      if (lane == 0) gmask[g] = bal;
    }
    __syncthreads();
    if (warp == 0) {
      uint32_t any = 0;
      for (int g = 0; g < GROUPS; ++g) any |= gmask[g];
      const bool on = (any >> lane) & 1u;
      const uint32_t bal = __ballot_sync(0xFFFFFFFFu, on);
      if (on) act[__popc(bal & ((1u << lane) - 1u))] = (uint8_t)lane;
      if (lane == 0) misc[0] = __popc(bal);
    }
    __syncthreads();
    const int nact = misc[0], hn = misc[1];

    /* 4. per chunk: the halo rows once, then the active offsets with WSTAGES weight stages in flight */
    auto load_w = [&](int o, int kc, int buf) {
      const uint32_t aB = wa + (uint32_t)(buf * Tr::B_BYTES);
      for (int t = tid; t < BN * CPR; t += THREADS) {
        const int nn = t / CPR, c = t % CPR;
        const size_t e = ((size_t)o * p.out + c0 + (size_t)nn) * p.in + (size_t)kc * BK + (size_t)c * 8u;
        cp_async_cg(aB + swz<CPR>(nn, c), wb + e * 2u);
      }
    };
    for (int kc = 0; kc < KC; ++kc) {
      __syncthreads(); /* the previous chunk's halo and weight reads are done (and the dedupe's storage free) */
      for (int t = tid; t < hn * CPR; t += THREADS) {
        const int h = t / CPR, c = t % CPR;
        cp_async_cg(ha + swz<CPR>(h, c), xb + ((size_t)hrow[h] * p.in + (size_t)kc * BK + (size_t)c * 8u) * 2u);
      }
      if (tid < CPR) *reinterpret_cast<uint4 *>(halo + swz<CPR>((int)hcap, tid)) = make_uint4(0u, 0u, 0u, 0u);
      cp_async_commit();
#pragma unroll
      for (int i = 0; i < WSTAGES - 1; ++i) {
        if (i < nact) load_w(act[i], kc, i);
        cp_async_commit();
      }
      for (int i = 0; i < nact; ++i) {
        /* groups committed: the halo's, then one per weight slice; all but the newest WSTAGES - 2 are done, so
         * the halo chunk and W(act[i]) landed; buffer (i + WSTAGES - 1) % WSTAGES was last read at i - 1 */
        cp_async_wait<WSTAGES - 2>();
        __syncthreads();
        if (i + WSTAGES - 1 < nact) load_w(act[i + WSTAGES - 1], kc, (i + WSTAGES - 1) % WSTAGES);
        cp_async_commit();
        const int o = act[i];
        bool on[MI];
        bool any = false;
        int hs[MI]; /* the halo slot of this lane's ldmatrix row, per 16-row group */
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          const int g = (wm * Tr::WM) / 16 + mi;
          on[mi] = (gmask[g] >> o) & 1u;
          any |= on[mi];
          const int r = wm * Tr::WM + mi * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
          const int32_t e = nbr_s[r * K + o];
          hs[mi] = e <= slot_code(0) ? slot_code(0) - e : (int)hcap; /* -2 - h -> h; else the zero row */
        }
        if (!any) continue; /* warp-uniform */
        const uint32_t aB = wa + (uint32_t)((i % WSTAGES) * Tr::B_BYTES);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          uint32_t bf[NI][2];
          v1::b_frags<Tr>(bf, aB, kk, wn, lane);
#pragma unroll
          for (int mi = 0; mi < MI; ++mi) {
            if (!on[mi]) continue;
            uint32_t af[4];
            ldsm_x4(af[0], af[1], af[2], af[3], ha + swz<CPR>(hs[mi], kk * 2 + (lane >> 4)));
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) mma(acc[mi][ni], af, bf[ni][0], bf[ni][1], T{});
          }
        }
      }
      cp_async_wait<0>();
    }
    /* 5. this page's entries are done */
    __syncthreads();
    for (int t = tid; t < ENTRIES; t += THREADS)
      if (nbr_s[t] <= slot_code(0)) nbr_s[t] = kNone;
  }

  v1::store_acc<T, Tr>(p.y, acc, p.b, nullptr, p.n, p.out, r0, c0, wm, wn, lane);
}

/* BN <= 64 (at most 128 registers a thread): two CTAs an SM where half the SM's shared memory still holds a halo
 * of 512 rows (p99 of PTv3's 128-row tiles: 589 rows at level 0, under 300 above; docs/spconv.md), so one CTA's
 * dedupe and halo loads overlap the other's multiplies; else one CTA with all it may take. */
constexpr uint32_t kHaloTwoCtas = 512;
inline uint32_t capacity(uint32_t bn, uint32_t bk, int smem_optin, int smem_sm) {
  const uint32_t half = bn <= 64u && smem_sm > 2048 ? halo_capacity(bn, bk, smem_sm / 2 - 1024) : 0u;
  return half >= kHaloTwoCtas ? half : halo_capacity(bn, bk, smem_optin);
}
template <typename T, int BN, int BK>
hx_status launch(Params p, int smem_optin, int smem_sm, cudaStream_t stream, hx_err *err) {
  p.hcap = capacity(BN, BK, smem_optin, smem_sm);
  if (!p.hcap)
    return hx_errf(err, HX_EUNSUPPORTED, "spc v5: %d bytes of shared memory per CTA hold no halo at %d x %d", smem_optin,
                   BN, BK);
  const uint32_t smem = layout(p.hcap, BN, BK).total;
  const size_t ctas = ((size_t)p.n + BM - 1u) / BM * p.slices;
  auto kern = conv_kernel<T, BN, BK>;
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  hx_launch(kern, (unsigned)ctas, THREADS, smem, stream, p);
  HX_LAUNCHED(err, "spc v5 conv_kernel");
  return HX_OK;
}
template <typename T, int BN>
hx_status by_bk(const Params &p, int smem_optin, int smem_sm, cudaStream_t stream, hx_err *err) {
  switch (v1::chunk_width(p.in)) {
  case 64: return launch<T, BN, 64>(p, smem_optin, smem_sm, stream, err);
  case 32: return launch<T, BN, 32>(p, smem_optin, smem_sm, stream, err);
  default: return launch<T, BN, 16>(p, smem_optin, smem_sm, stream, err);
  }
}
template <typename T> hx_status by_bn(Params p, int smem_optin, int smem_sm, cudaStream_t stream, hx_err *err) {
  const uint32_t bn = v1::slice_width(p.out);
  p.slices = p.out / bn;
  switch (bn) {
  case 128: return by_bk<T, 128>(p, smem_optin, smem_sm, stream, err);
  case 64: return by_bk<T, 64>(p, smem_optin, smem_sm, stream, err);
  case 32: return by_bk<T, 32>(p, smem_optin, smem_sm, stream, err);
  default: return by_bk<T, 16>(p, smem_optin, smem_sm, stream, err);
  }
}

} // namespace v5

/* ---- v2: small input widths (the stem) -------------------------------------------------------------- */
namespace v2 {

/* A CTA of kWarps warps owns one 32-channel output slice (blockIdx.y) and loops over 16-row tiles, one per warp
 * at a time (a persistent grid: the slice's weight fragments are built once per CTA, not once per tile). */
constexpr int kWarps = 8, kThreads = 32 * kWarps, kBN = 32, kNT = kBN / 8, kRows = 16;

/* Everything the kernel reads, validated once by spc_conv_v2: the kernel trusts it. */
struct Params {
  void *y;             /* [n, out] dtype */
  const uint16_t *x;   /* [n, in] dtype bits; 4-byte aligned when the kernel is instantiated EXACT */
  const uint16_t *w;   /* [K][out][in] dtype bits (the upload shared with v0 and v1) */
  const float *b;      /* [out] fp32 or NULL */
  const int32_t *nbr;  /* [n, K]: input row or -1; entries outside [0, n) are read as -1 */
  uint32_t n, K, in, out;
  uint32_t ksteps;     /* ceil(K * CI / 16): k16 steps of the padded reduction dimension */
  int pair_store;      /* out even and y 4-byte aligned: one 32-bit store per pair of outputs */
};

/* Entry (k, c) of the GEMM's B [K * CI, out]: k = o * CI + ci; zero in the padding (o >= K, ci >= in,
 * c >= out), so the padded products are exact zeros whatever the activations hold. */
template <int CI> __device__ __forceinline__ uint32_t wval(const Params &p, uint32_t k, uint32_t c) {
  const uint32_t o = k / (uint32_t)CI, ci = k % (uint32_t)CI;
  return o < p.K && ci < p.in && c < p.out ? (uint32_t)p.w[((size_t)o * p.out + c) * p.in + ci] : 0u;
}

/* The map entry of output row r at offset o, -1 past the rows, past the offsets or outside [0, n). */
__device__ __forceinline__ int32_t nbr_at(const Params &p, uint32_t r, uint32_t o) {
  if (r >= p.n || o >= p.K) return -1;
  const int32_t j = __ldg(p.nbr + (size_t)r * p.K + o);
  return (uint32_t)j < p.n ? j : -1;
}

/* Channels ci, ci + 1 of input row j as one A-fragment register (low half ci), zeros for j = -1 or past in.
 * EXACT: in == CI and x 4-byte aligned, one 32-bit load; else two 16-bit loads. */
template <int CI, bool EXACT> __device__ __forceinline__ uint32_t gather2(const Params &p, int32_t j, uint32_t ci) {
  if (j < 0) return 0u;
  if (EXACT) return __ldg(reinterpret_cast<const unsigned int *>(p.x + (size_t)j * (uint32_t)CI + ci));
  const unsigned short *xr = p.x + (size_t)j * p.in;
  const uint32_t lo = ci < p.in ? (uint32_t)__ldg(xr + ci) : 0u, hi = ci + 1u < p.in ? (uint32_t)__ldg(xr + ci + 1u) : 0u;
  return lo | hi << 16;
}

/* acc = A B over ks k16 steps for one 16-row tile: fetch(s, j) gives step s's four A entries of this lane (input rows,
 * -1 for none), gather(j, a) their A registers; step s + 1's loads and step s + 2's entries are in flight while step
 * s multiplies (nothing is loaded past the last step: j = -1). B: wf[(s kNT + nt) 32 + lane] in the mma's register
 * order. */
template <typename T, typename Fetch, typename Gather>
__device__ __forceinline__ void k16_steps(float (&acc)[kNT][4], uint32_t ks, const uint2 *wf, uint32_t lane,
                                          Fetch &fetch, Gather &gather) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
  int32_t j[4];
  uint32_t a[4];
  fetch(0u, j);
  gather(j, a);
  if (ks > 1u) fetch(1u, j);
  else j[0] = j[1] = j[2] = j[3] = -1;
  for (uint32_t s = 0; s < ks; ++s) {
    uint32_t an[4];
    gather(j, an); /* step s + 1 */
    if (s + 2u < ks) fetch(s + 2u, j);
    else j[0] = j[1] = j[2] = j[3] = -1;
    const uint2 *bf = wf + (size_t)s * kNT * 32u + lane;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint2 bb = bf[nt * 32];
      spc_dev::mma(acc[nt], a, bb.x, bb.y, T{});
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = an[i];
  }
}

/*
 * The convolution as one implicit GEMM per 16-row tile: y[16, out] = A[16, K * CI] B[K * CI, out] with
 * A[r][o * CI + ci] = x[nbr[r, o]][ci] (CI = in padded to 4 or 8; one k16 step covers 16 / CI offsets) and B the
 * weights, on mma.sync m16n8k16 with fp32 accumulators. A fragments are gathered straight from global memory
 * into registers (each lane's two channels of one neighbour row: no shared memory, no rulebook); B fragments
 * are laid out once per CTA in shared memory in the mma's register order, wf[s][nt][lane] = {b0, b1}, so each
 * k16 step reads one conflict-free 8-byte word per lane and n8 tile. Software pipeline: the map entries of step
 * s + 2 and the gathers of step s + 1 are in flight while step s multiplies. Every step is multiplied, even
 * where no row of the tile has a neighbour (zeros add exactly): the tensor work, 2 * 16 * K * CI * 32 per
 * tile, is ~20x below the map's bytes at the tensor rate, so skipping would save nothing measurable. Each
 * output is summed in one fixed order, so runs agree bit for bit.
 */
template <typename T, int CI, bool EXACT> __global__ void __launch_bounds__(kThreads) conv_kernel(const Params p) {
  hx_pdl_wait();
  constexpr uint32_t OPK = 16u / (uint32_t)CI, OHI = 8u / (uint32_t)CI; /* offsets per step; a2/a3's offset shift */
  extern __shared__ uint2 wf[];
  const uint32_t c0 = blockIdx.y * (uint32_t)kBN, entries = p.ksteps * (uint32_t)kNT * 32u;
  for (uint32_t e = threadIdx.x; e < entries; e += kThreads) {
    const uint32_t s = e / (kNT * 32u), nt = (e / 32u) % kNT, l = e % 32u;
    const uint32_t c = c0 + nt * 8u + l / 4u, k = s * 16u + (l % 4u) * 2u;
    wf[e] = make_uint2(wval<CI>(p, k, c) | wval<CI>(p, k + 1u, c) << 16,
                       wval<CI>(p, k + 8u, c) | wval<CI>(p, k + 9u, c) << 16);
  }
  __syncthreads();

  /* lane (g, t) holds A rows g and g + 8 at k = 2t, 2t + 1 (offset ol, channels ci, ci + 1) and at k + 8
   * (offset ol + OHI), and D rows g, g + 8 at columns 2t, 2t + 1 of each n8 tile */
  const uint32_t lane = threadIdx.x & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t ol = 2u * t / (uint32_t)CI, ci = 2u * t % (uint32_t)CI;
  const uint32_t tiles = (p.n + (uint32_t)kRows - 1u) / (uint32_t)kRows, ks = p.ksteps;
  for (uint32_t tile = blockIdx.x * (uint32_t)kWarps + threadIdx.x / 32u; tile < tiles;
       tile += gridDim.x * (uint32_t)kWarps) {
    const uint32_t ra = tile * (uint32_t)kRows + g, rb = ra + 8u;
    auto fetch = [&](uint32_t s, int32_t(&j)[4]) {
      const uint32_t o = s * OPK + ol;
      j[0] = nbr_at(p, ra, o), j[1] = nbr_at(p, rb, o), j[2] = nbr_at(p, ra, o + OHI), j[3] = nbr_at(p, rb, o + OHI);
    };
    auto gather = [&](const int32_t(&j)[4], uint32_t(&a)[4]) {
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = gather2<CI, EXACT>(p, j[i], ci);
    };
    float acc[kNT][4];
    k16_steps<T>(acc, ks, wf, lane, fetch, gather);

    T *y = static_cast<T *>(p.y);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint32_t col = c0 + (uint32_t)nt * 8u + 2u * t;
      if (col >= p.out) continue;
      const bool two = col + 1u < p.out;
      const float b0 = p.b ? p.b[col] : 0.0f, b1 = p.b && two ? p.b[col + 1u] : 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t r = h ? rb : ra;
        if (r >= p.n) continue;
        const float lo = acc[nt][2 * h] + b0, hi = acc[nt][2 * h + 1] + b1;
        const size_t e = (size_t)r * p.out + col;
        if (p.pair_store) { /* out even: col even, so col + 1 < out and e is even */
          reinterpret_cast<uint32_t *>(y)[e / 2u] = v1::pack2(lo, hi, T{});
        } else {
          y[e] = to_dtype(lo, T{});
          if (two) y[e + 1u] = to_dtype(hi, T{});
        }
      }
    }
  }
}

template <typename T, int CI, bool EXACT>
hx_status launch(const Params &p, int smem_optin, int sms, cudaStream_t stream, hx_err *err) {
  const size_t smem = (size_t)p.ksteps * kNT * 32u * sizeof(uint2);
  if (smem > (size_t)smem_optin)
    return hx_errf(err, HX_EUNSUPPORTED, "spc v2: %zu bytes of shared memory per CTA (K = %u, %d channels a step), "
                   "the device allows %d", smem, p.K, CI, smem_optin);
  auto kern = conv_kernel<T, CI, EXACT>;
  const size_t tiles = ((size_t)p.n + kRows - 1u) / kRows;
  unsigned ctas = 0;
  HX_TRY(persistent_ctas(&ctas, kern, kThreads, smem, sms, (tiles + kWarps - 1u) / kWarps, err));
  hx_launch(kern, dim3(ctas, (p.out + (uint32_t)kBN - 1u) / (uint32_t)kBN), kThreads, smem, stream, p);
  HX_LAUNCHED(err, "spc v2 conv_kernel");
  return HX_OK;
}

template <typename T> hx_status by_ci(const Params &p, bool exact, int smem_optin, int sms, cudaStream_t stream,
                                      hx_err *err) {
  if (p.in > 4u) return exact ? launch<T, 8, true>(p, smem_optin, sms, stream, err)
                              : launch<T, 8, false>(p, smem_optin, sms, stream, err);
  return exact ? launch<T, 4, true>(p, smem_optin, sms, stream, err)
               : launch<T, 4, false>(p, smem_optin, sms, stream, err);
}

} // namespace v2

/* ---- v7 and v8: narrow k = 3 convolutions, A fragments gathered straight into registers --------------- */
namespace v7 {

/* A CTA of kWarps warps owns one 32-channel output slice (blockIdx.y) and loops over 16-row tiles, one per warp at a
 * time (a persistent grid: the slice's 27 weight slices are laid out in shared memory once per CTA, 55 KB at 32 input
 * channels, 110 KB at 64). */
constexpr int kWarps = 8, kThreads = 32 * kWarps, kBN = 32, kNT = kBN / 8, kRows = 16, kK = 27, kDepth = 2;

struct Params {
  void *y;              /* [n, out] dtype */
  const uint16_t *x;    /* [n, CI] dtype bits, 16-byte aligned */
  const uint16_t *w;    /* [27][out][CI] dtype bits (the upload shared with v0 and v1) */
  const float *b;       /* [out] fp32 or NULL */
  const int32_t *nbr;   /* [n, 27]: input row or -1; entries outside [0, n) are read as -1 */
  const uint32_t *perm; /* v8: [n] the rows in mask order (tile row t is row perm[t]); v7: NULL, the map's order */
  uint32_t n, out;
};

/* v[i] for a warp-uniform i in [0, 7): selects, so the array stays in registers when i is not a constant */
__device__ __forceinline__ int32_t pick7(const int32_t (&v)[7], int i) {
  int32_t r = v[0];
#pragma unroll
  for (int k = 1; k < 7; ++k) r = i == k ? v[k] : r;
  return r;
}

/*
 * The convolution as one implicit GEMM per 16-row tile, y[16, 32] = sum over offsets o of A_o[16, CI] W_o^T,
 * A_o[r] = x[nbr[r, o]], on mma.sync m16n8k16 with fp32 accumulators (a row without a neighbour at o contributes zeros,
 * and its gather is skipped). The input channels are permuted inside each offset so that a lane's A fragments are
 * whole 16-byte loads: in k16 step s, lane (g, t)'s k = 2t, 2t + 1 are channels c, c + 1 and k = 2t + 8, 2t + 9 are
 * c + 2, c + 3, c = 32 (s / 2) + 8 t + 4 (s % 2); the weights in shared memory carry the same permutation
 * (wf[((o S + s) kNT + nt) 32 + lane] = {b0, b1}), so the products are W_o x whatever the order. Each lane loads the
 * map entries of its two rows for the offsets o = t mod 4 at the tile's start (7 words a row, all in flight at once)
 * and takes the others from lanes (g, o mod 4) by shuffles; the gathers of the next two offsets are in flight while
 * one multiplies.
 * v7 (SORTED false): the map's own rows, every offset multiplied (a fully unrolled loop of 27).
 * v8 (SORTED true): tile row t is row perm[t] of the mask order, so a tile's 16 rows mostly share one neighbour mask,
 * and only the offsets where one of them has a neighbour are multiplied (the tile's OR of its masks, a warp
 * reduction; ~7 of 27 at PTv3's level 0 against 24 in the map's order), in a loop of three register buffers.
 * Either way each output is summed over increasing o in one fixed order, and an offset skipped adds only exact zeros
 * where it is multiplied: v7 and v8 give the same bits, and runs agree bit for bit.
 */
template <typename T, int CI, bool SORTED> __global__ void __launch_bounds__(kThreads) conv_kernel(const Params p) {
  hx_pdl_wait();
  constexpr int S = CI / 16, Q = CI / 32; /* k16 steps and 16-byte loads a row, per offset */
  extern __shared__ uint2 wf[];
  const uint32_t c0 = blockIdx.y * (uint32_t)kBN;
  constexpr uint32_t entries = (uint32_t)(kK * S * kNT * 32);
  for (uint32_t e = threadIdx.x; e < entries; e += kThreads) {
    const uint32_t l = e % 32u, nt = (e / 32u) % kNT, st = (e / (32u * kNT)) % (uint32_t)S,
                   o = e / (32u * kNT * (uint32_t)S);
    const uint32_t c = c0 + nt * 8u + l / 4u, ch = 32u * (st / 2u) + 8u * (l % 4u) + 4u * (st % 2u);
    const uint16_t *wr = p.w + ((size_t)o * p.out + c) * (uint32_t)CI + ch;
    wf[e] = make_uint2((uint32_t)wr[0] | (uint32_t)wr[1] << 16, (uint32_t)wr[2] | (uint32_t)wr[3] << 16);
  }
  __syncthreads();

  const uint32_t lane = threadIdx.x & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t tiles = (p.n + (uint32_t)kRows - 1u) / (uint32_t)kRows;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (uint32_t tile = blockIdx.x * (uint32_t)kWarps + threadIdx.x / 32u; tile < tiles;
       tile += gridDim.x * (uint32_t)kWarps) {
    /* rows ra and rb (p.n: none) */
    uint32_t ra = tile * (uint32_t)kRows + g, rb = ra + 8u;
    if constexpr (SORTED) {
      ra = ra < p.n ? __ldg(p.perm + ra) : p.n;
      rb = rb < p.n ? __ldg(p.perm + rb) : p.n;
    }
    int32_t jr[2][7]; /* rows ra, rb at offsets t + 4 i */
    uint32_t bits = 0; /* the offsets where this lane's entries have a neighbour */
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      const uint32_t o = t + 4u * (uint32_t)i;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t r = h ? rb : ra;
        int32_t j = -1;
        if (r < p.n && o < (uint32_t)kK) j = __ldg(p.nbr + (size_t)r * kK + o);
        jr[h][i] = (uint32_t)j < p.n ? j : -1;
        bits |= (uint32_t)(jr[h][i] >= 0) << o;
      }
    }
    using Buf = uint4[2][Q];
    auto gather = [&](int o, Buf &buf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int32_t j = __shfl_sync(0xFFFFFFFFu, pick7(jr[h], o / 4), (int)((lane & ~3u) | (uint32_t)(o & 3)));
#pragma unroll
        for (int q = 0; q < Q; ++q)
          buf[h][q] = j >= 0 ? __ldg(reinterpret_cast<const uint4 *>(p.x + (size_t)j * CI + 32u * (uint32_t)q + 8u * t))
                             : zero;
      }
    };
    float acc[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
    auto multiply = [&](int o, const Buf &cur) {
#pragma unroll
      for (int st = 0; st < S; ++st) {
        const int q = st / 2;
        const uint32_t fr[4] = {st % 2 ? cur[0][q].z : cur[0][q].x, st % 2 ? cur[1][q].z : cur[1][q].x,
                                st % 2 ? cur[0][q].w : cur[0][q].y, st % 2 ? cur[1][q].w : cur[1][q].y};
        const uint2 *bf = wf + ((size_t)(o * S + st) * kNT) * 32u + lane;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const uint2 bb = bf[nt * 32];
          v1::mma(acc[nt], fr, bb.x, bb.y, T{});
        }
      }
    };
    if constexpr (SORTED) {
      uint32_t act = __reduce_or_sync(0xFFFFFFFFu, bits); /* the tile's active offsets, ascending */
      auto next = [&]() -> int {
        if (!act) return -1;
        const int o = __ffs((int)act) - 1;
        act &= act - 1u;
        return o;
      };
      Buf a0, a1, a2; /* offsets o0, o1, o2 in turn: two gathered ahead of the one multiplied */
      int o0 = next(), o1 = next(), o2 = -1;
      if (o0 >= 0) gather(o0, a0);
      if (o1 >= 0) gather(o1, a1);
      while (o0 >= 0) {
        o2 = next();
        if (o2 >= 0) gather(o2, a2);
        multiply(o0, a0);
        if (o1 < 0) break;
        o0 = next();
        if (o0 >= 0) gather(o0, a0);
        multiply(o1, a1);
        if (o2 < 0) break;
        o1 = next();
        if (o1 >= 0) gather(o1, a1);
        multiply(o2, a2);
      }
    } else {
      (void)bits;
      Buf a[kDepth + 1];
#pragma unroll
      for (int o = 0; o < kDepth; ++o) gather(o, a[o]);
#pragma unroll
      for (int o = 0; o < kK; ++o) {
        if (o + kDepth < kK) gather(o + kDepth, a[(o + kDepth) % (kDepth + 1)]);
        multiply(o, a[o % (kDepth + 1)]);
      }
    }

    T *y = static_cast<T *>(p.y);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint32_t col = c0 + (uint32_t)nt * 8u + 2u * t; /* out is a multiple of 32: col + 1 < out */
      const float b0 = p.b ? p.b[col] : 0.0f, b1 = p.b ? p.b[col + 1u] : 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t r = h ? rb : ra;
        if (r < p.n)
          reinterpret_cast<uint32_t *>(y)[((size_t)r * p.out + col) / 2u] =
              v1::pack2(acc[nt][2 * h] + b0, acc[nt][2 * h + 1] + b1, T{});
      }
    }
  }
}

template <typename T, int CI, bool SORTED>
hx_status launch_ci(const Params &p, int smem_optin, int sms, cudaStream_t stream, hx_err *err) {
  const size_t smem = (size_t)kK * (CI / 16) * kNT * 32u * sizeof(uint2);
  if (smem > (size_t)smem_optin)
    return hx_errf(err, HX_EUNSUPPORTED, "spc %s: %zu bytes of shared memory per CTA (%d input channels), the device "
                   "allows %d", SORTED ? "v8" : "v7", smem, CI, smem_optin);
  auto kern = conv_kernel<T, CI, SORTED>;
  const size_t tiles = ((size_t)p.n + kRows - 1u) / kRows;
  unsigned ctas = 0;
  HX_TRY(persistent_ctas(&ctas, kern, kThreads, smem, sms, (tiles + kWarps - 1u) / kWarps, err));
  hx_launch(kern, dim3(ctas, p.out / (uint32_t)kBN), kThreads, smem, stream, p);
  HX_LAUNCHED(err, SORTED ? "spc v8 conv_kernel" : "spc v7 conv_kernel");
  return HX_OK;
}

/* v7 (p.perm NULL) or v8 at in = 32 or 64 */
template <typename T> hx_status launch_t(const Params &p, uint32_t in, cudaStream_t stream, hx_err *err) {
  int smem_optin = 0, sms = 0;
  HX_TRY(device_limits(&smem_optin, &sms, err));
  if (p.perm)
    return in == 32u ? launch_ci<T, 32, true>(p, smem_optin, sms, stream, err)
                     : launch_ci<T, 64, true>(p, smem_optin, sms, stream, err);
  return in == 32u ? launch_ci<T, 32, false>(p, smem_optin, sms, stream, err)
                   : launch_ci<T, 64, false>(p, smem_optin, sms, stream, err);
}

/* y = conv(x) on v7's kernel: over the rows in perm's order, active offsets only (v8), or in the map's (perm NULL) */
hx_status launch(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, const uint32_t *perm, net_dtype dt,
                 cudaStream_t stream, hx_err *err) {
  const Params p{d_y, static_cast<const uint16_t *>(d_x), static_cast<const uint16_t *>(w->d_w), w->d_b, m->nbr, perm,
                 m->n, (uint32_t)w->out};
  return dt == NET_BF16 ? launch_t<__nv_bfloat16>(p, (uint32_t)w->in, stream, err)
                        : launch_t<__half>(p, (uint32_t)w->in, stream, err);
}

} // namespace v7

} // namespace

struct spc_ctx {
  cublasHandle_t blas;
};

/* ---- Map ------------------------------------------------------------------------------------------ */
namespace {
/* The voxel table of n rows (the occupied 2^3 blocks, their cells) and the device's report on the input, carved
 * from scratch by map_build and spc_stem_gpu alike; cnt: K per-offset pair counters. */
struct VoxTable {
  Slot *table;
  int32_t *brows;
  uint32_t *nblk, *cnt;
  unsigned long long *st;
  uint32_t mask;
  size_t cap;
};
VoxTable table_carve(Carve &c, uint32_t n, uint32_t K) {
  VoxTable t{};
  t.cap = 16;
  while (t.cap < 2u * (size_t)n) t.cap *= 2u;
  t.mask = (uint32_t)(t.cap - 1u);
  t.table = static_cast<Slot *>(take(c, t.cap * sizeof(Slot)));
  t.brows = static_cast<int32_t *>(take(c, (size_t)n * 8u * sizeof(int32_t))); /* <= n blocks */
  t.nblk = static_cast<uint32_t *>(take(c, sizeof(uint32_t)));
  t.cnt = static_cast<uint32_t *>(take(c, K * sizeof(uint32_t)));
  t.st = static_cast<unsigned long long *>(take(c, 4 * sizeof(unsigned long long)));
  return t;
}
/* The table built (insert, place) and the report cleared; the first K counters zeroed. */
hx_status table_fill(const VoxTable &t, uint32_t n, uint32_t K, const uint32_t *d_grid, const uint32_t *d_batch,
                     cudaStream_t stream, hx_err *err) {
  HX_CUDA(err, cudaMemsetAsync(t.table, 0xFF, t.cap * sizeof(Slot), stream));
  HX_CUDA(err, cudaMemsetAsync(t.brows, 0xFF, (size_t)n * 8u * sizeof(int32_t), stream));
  HX_CUDA(err, cudaMemsetAsync(t.nblk, 0, sizeof(uint32_t), stream));
  if (K) HX_CUDA(err, cudaMemsetAsync(t.cnt, 0, K * sizeof(uint32_t), stream));
  HX_CUDA(err, cudaMemsetAsync(t.st, 0xFF, 4 * sizeof(unsigned long long), stream));
  HX_CUDA(err, cudaMemsetAsync(t.st, 0, sizeof(unsigned long long), stream));
  hx_launch(insert_kernel, blocks_for(n), kThreads, 0, stream, t.table, t.mask, t.nblk, d_grid, d_batch, n, t.st);
  HX_LAUNCHED(err, "spc insert_kernel");
  hx_launch(place_kernel, blocks_for(n), kThreads, 0, stream, t.brows, t.table, t.mask, d_grid, d_batch, n, t.st);
  HX_LAUNCHED(err, "spc place_kernel");
  return HX_OK;
}
/* The device's report and the K counts read back (one synchronisation): an invalid input is HX_EINVAL naming a
 * row; else m's pairs and opairs. */
hx_status table_report(const char *who, spc_map *m, const unsigned long long *d_st, const uint32_t *d_cnt, uint32_t K,
                       cudaStream_t stream, hx_err *err) {
  uint32_t h_cnt[SPC_KMAX];
  unsigned long long h_st[4];
  HX_CUDA(err, cudaMemcpyAsync(h_cnt, d_cnt, K * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  HX_CUDA(err, cudaMemcpyAsync(h_st, d_st, sizeof h_st, cudaMemcpyDeviceToHost, stream));
  HX_CUDA(err, cudaStreamSynchronize(stream));
  if (h_st[0] & kBadCoord)
    return hx_errf(err, HX_EINVAL, "%s: row %llu: voxel outside [0, 2^18) per axis", who, h_st[1]);
  if (h_st[0] & kBadBatch) return hx_errf(err, HX_EINVAL, "%s: row %llu: batch >= 2^10", who, h_st[2]);
  if (h_st[0] & kDuplicate) {
    const unsigned long long a = h_st[3] >> 32, b = h_st[3] & 0xFFFFFFFFull;
    return hx_errf(err, HX_EINVAL, "%s: rows %llu and %llu are the same voxel of one cloud", who, a < b ? a : b,
                   a < b ? b : a);
  }
  m->pairs = 0;
  memset(m->opairs, 0, sizeof m->opairs);
  for (uint32_t o = 0; o < K; ++o) m->opairs[o] = h_cnt[o], m->pairs += h_cnt[o];
  return HX_OK;
}

/* spc_map_gpu and spc_map_pair_gpu: the map of side k (nbr, rulebook and counts as spc_map_gpu says) and, where
 * m3 is given (k = 5 only), the k = 3 map of the same voxels into d_nbr3, its counts left alone. */
hx_status map_build(const char *who, spc_map *m, int32_t *d_nbr, int32_t *d_rule, spc_map *m3, int32_t *d_nbr3,
                    void *d_scratch, size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch,
                    uint32_t n, uint32_t k, int count_pairs, cudaStream_t stream, hx_err *err) {
  if (!m || !scratch_bytes) return hx_errf(err, HX_EINVAL, "%s: NULL map or scratch size", who);
  if (k != 3u && k != 5u) return hx_errf(err, HX_EINVAL, "%s: kernel side %u (3 or 5 only)", who, k);
  const uint32_t K = k * k * k;
  if ((uint64_t)n * K > (uint64_t)INT32_MAX)
    return hx_errf(err, HX_EINVAL, "%s: %u rows x %u offsets exceed 2^31 map entries", who, n, K);
  if (!n) { /* nothing to build: the map of an empty cloud, whether or not this is a size query */
    if (!d_scratch) *scratch_bytes = 0;
    m->n = 0, m->k = k, m->K = K, m->nbr = d_nbr, m->rule = d_rule, m->order = NULL, m->tiles = NULL, m->tile_rows = 0;
    if (count_pairs) m->pairs = 0, memset(m->opairs, 0, sizeof m->opairs);
    if (m3)
      m3->n = 0, m3->k = 3, m3->K = 27, m3->nbr = d_nbr3, m3->rule = NULL, m3->order = NULL, m3->tiles = NULL,
      m3->tile_rows = 0;
    return HX_OK;
  }
  const size_t nK = (size_t)n * K;
  Carve c{static_cast<char *>(d_scratch), 0};
  VoxTable t = table_carve(c, n, K);
  /* the flags and their scan serve the rulebook alone (8 n K bytes of scratch: 600 MB for the stem's map at 600k
   * rows); counts without it come from the lookup's per-CTA counters */
  uint32_t *flag = nullptr, *scan = nullptr;
  void *scan_tmp = nullptr;
  size_t scan_bytes = 0;
  if (d_rule) {
    HX_CUDA(err, cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                               (int)nK));
    flag = static_cast<uint32_t *>(take(c, nK * sizeof(uint32_t)));
    scan = static_cast<uint32_t *>(take(c, nK * sizeof(uint32_t)));
    scan_tmp = take(c, scan_bytes);
  }
  if (!d_scratch) {
    *scratch_bytes = c.used;
    return HX_OK;
  }
  if (*scratch_bytes < c.used)
    return hx_errf(err, HX_EINVAL, "%s: scratch of %zu bytes, %zu needed", who, *scratch_bytes, c.used);
  if (!d_nbr || !d_grid || (m3 && !d_nbr3))
    return hx_errf(err, HX_EINVAL, "%s: NULL d_nbr%s or d_grid for %u rows", who, m3 ? ", d_nbr3" : "", n);

  const bool counted = count_pairs && !d_rule;
  HX_TRY(table_fill(t, n, counted ? K : 0u, d_grid, d_batch, stream, err));
  uint32_t *cnt = t.cnt;
  if (k == 5u)
    hx_launch(lookup_kernel<5>, (n + 7u) / 8u, kThreads, 0, stream, d_nbr, flag, counted ? cnt : nullptr,
              m3 ? d_nbr3 : nullptr, t.table, t.mask, t.brows, d_grid, d_batch, n);
  else
    hx_launch(lookup_kernel<3>, (n + 31u) / 32u, kThreads, 0, stream, d_nbr, flag, counted ? cnt : nullptr, nullptr,
              t.table, t.mask, t.brows, d_grid, d_batch, n);
  HX_LAUNCHED(err, "spc lookup kernel");
  m->n = n, m->k = k, m->K = K, m->nbr = d_nbr, m->rule = d_rule, m->order = NULL, m->tiles = NULL, m->tile_rows = 0;
  if (m3)
    m3->n = n, m3->k = 3, m3->K = 27, m3->nbr = d_nbr3, m3->rule = NULL, m3->order = NULL, m3->tiles = NULL,
    m3->tile_rows = 0;
  if (d_rule) {
    HX_CUDA(err, cub::DeviceScan::ExclusiveSum(scan_tmp, scan_bytes, (const uint32_t *)flag, scan, (int)nK, stream));
    hx_launch(rule_kernel, blocks_for(nK), kThreads, 0, stream, d_rule, d_nbr, flag, scan, n, K);
    HX_LAUNCHED(err, "spc rule_kernel");
    cnt = reinterpret_cast<uint32_t *>(d_rule + 2u * nK); /* the rulebook's own count row */
    hx_launch(count_kernel, 1, 128, 0, stream, cnt, flag, scan, n, K);
    HX_LAUNCHED(err, "spc count_kernel");
  }
  if (!count_pairs) return HX_OK;
  return table_report(who, m, t.st, cnt, K, stream, err);
}
} // namespace

hx_status spc_map_gpu(spc_map *m, int32_t *d_nbr, int32_t *d_rule, void *d_scratch, size_t *scratch_bytes,
                      const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, uint32_t k, int count_pairs,
                      cudaStream_t stream, hx_err *err) {
  return map_build("spc_map_gpu", m, d_nbr, d_rule, nullptr, nullptr, d_scratch, scratch_bytes, d_grid, d_batch, n, k,
                   count_pairs, stream, err);
}

hx_status spc_map_pair_gpu(spc_map *m5, int32_t *d_nbr5, spc_map *m3, int32_t *d_nbr3, void *d_scratch,
                           size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n,
                           cudaStream_t stream, hx_err *err) {
  if (!m3) return hx_errf(err, HX_EINVAL, "spc_map_pair_gpu: NULL k = 3 map");
  return map_build("spc_map_pair_gpu", m5, d_nbr5, nullptr, m3, d_nbr3, d_scratch, scratch_bytes, d_grid, d_batch, n,
                   5u, 0, stream, err);
}

/* ---- The stem in one pass: k = 5 convolution from the voxel table, BatchNorm and GELU ------------------- */
namespace {
namespace stem {

/* A CTA of kWarps warps, persistent; a warp takes kR rows at a time: 32 / kR lanes a row probe its 27 blocks (a
 * lane up to ceil(27 / (32 / kR)) of them, independent loads), so kR rows' probe chains are in flight at once,
 * then the warp convolves the rows one after another, lane c holding output channels c, c + 32. */
constexpr int kWarps = 16, kThreads = 32 * kWarps, kR = 2, kNB = 27;
constexpr uint32_t kK = 125;

struct Params {
  void *y;                         /* [n, out] dtype */
  const uint16_t *x;               /* [n, in] dtype bits */
  const uint16_t *w;               /* [125][out][in] dtype bits (spc_weights_upload's layout) */
  const float *b, *scale, *shift;  /* [out] fp32, each NULL or given (scale and shift together) */
  int32_t *nbr3;                   /* NULL or [n, 27]: level 0's k = 3 map */
  uint32_t *cnt;                   /* NULL or [125] per-offset pair counts, zeroed before */
  const Slot *table;
  uint32_t mask;
  const int32_t *brows;
  const uint32_t *grid, *batch;
  uint32_t n, in, out;
  int gelu;
};

/* The CI / 2 words (two channels each, low half first) of input row j; past `in` zeros. EXACT: in == CI and x
 * aligned to a row's 2 CI bytes, one vector load. */
template <int CI, bool EXACT>
__device__ __forceinline__ void load_row(const Params &p, int32_t j, uint32_t (&v)[CI / 2]) {
  if constexpr (EXACT && CI == 4) {
    const uint2 u = __ldg(reinterpret_cast<const uint2 *>(p.x) + j);
    v[0] = u.x, v[1] = u.y;
    return;
  } else if constexpr (EXACT) {
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p.x) + j);
    v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
    return;
  }
  const unsigned short *r = p.x + (size_t)j * p.in;
#pragma unroll
  for (int h = 0; h < CI / 2; ++h) {
    const uint32_t c = 2u * (uint32_t)h;
    v[h] = (c < p.in ? (uint32_t)__ldg(r + c) : 0u) | (c + 1u < p.in ? (uint32_t)__ldg(r + c + 1u) : 0u) << 16;
  }
}

/* tab[par * 128 + o], filled by the CTA's threads: where offset o of a row's 5^3 window lies among its 27 blocks' 216
 * cells (block * 8 + cell), for the row's parity par = (x & 1) << 2 | (y & 1) << 1 | (z & 1) (o >= 125: the centre).
 * A row at x = 2a + px has lx = a - 1, so x + dx lies in block (px + dx) / 2 + 1 (floor), cell bit (px + dx) & 1. */
__device__ void fill_parity_table(uint8_t *tab) {
  for (uint32_t e = threadIdx.x; e < 8u * 128u; e += blockDim.x) {
    const int par = (int)(e / 128u), o = (int)(e % 128u) < (int)kK ? (int)(e % 128u) : 62;
    const int ux = (par >> 2) + o / 25 - 2, uy = ((par >> 1) & 1) + (o / 5) % 5 - 2, uz = (par & 1) + o % 5 - 2;
    tab[e] = (uint8_t)((((ux >> 1) + 1) * 9 + ((uy >> 1) + 1) * 3 + ((uz >> 1) + 1)) * 8 + (ux & 1) * 4 + (uy & 1) * 2 +
                       (uz & 1));
  }
}
/* The offset of the 5^3 window that is offset l of the 3^3 one, (dx, dy, dz) = (l / 9, l / 3 % 3, l % 3) - 1. */
__device__ __forceinline__ uint32_t o5_of_o3(uint32_t l) {
  return (l / 9u + 1u) * 25u + (l / 3u % 3u + 1u) * 5u + l % 3u + 1u;
}

/*
 * y[i] = act(scale (b + sum_o sum_ci W[:, o, ci] x[nbr(i, o), ci]) + shift) for the rows of a warp, the map never
 * stored: the 125 neighbours of a row come from its 27 blocks' cells in shared memory (lookup_kernel's probes),
 * lane l owning offsets l, l + 32, l + 64, l + 96 and loading those rows' inputs; a ballot per owned slot lists the
 * present neighbours, and each is broadcast (shuffles) to the lanes, which multiply it with their channels'
 * weights (fp32 in shared memory, [o][c][ci]: one 16-byte read a lane and 4 input channels) into fp32 sums: ~13
 * real neighbours of 125 on lidar surfaces at 0.05 m, so only those are loaded and multiplied. Where offset o of a
 * row lies among its 27 blocks' 216 cells depends only on the row's parity (x, y, z mod 2): a table of 8 x 128
 * cell indices, built once per CTA, replaces the arithmetic. Each output sums its terms in increasing (o, ci): runs
 * agree bit for bit. The BatchNorm and GELU apply to the fp32 sum, which is rounded to the dtype once.
 */
template <typename T, int CI, int OPL, bool EXACT>
__global__ void __launch_bounds__(kThreads) stem_kernel(const Params p) {
  hx_pdl_wait();
  constexpr int NO = 32 * OPL, G = 32 / kR, PB = (kNB + G - 1) / G, CELLS = kNB * 8;
  extern __shared__ __align__(16) float smem[];
  float *wsm = smem;
  uint8_t *tab = reinterpret_cast<uint8_t *>(smem + kK * CI * NO); /* [parity][128]: the cell of offset o */
  int32_t *cells = reinterpret_cast<int32_t *>(tab + 8 * 128) + (threadIdx.x / 32u) * (kR * CELLS);
  for (uint32_t e = threadIdx.x; e < kK * (uint32_t)(CI * NO); e += kThreads) {
    const uint32_t o = e / (uint32_t)(CI * NO), c = e / (uint32_t)CI % (uint32_t)NO, ci = e % (uint32_t)CI;
    wsm[e] = ci < p.in && c < p.out ? spc_dev::unpack2<T>(p.w[((size_t)o * p.out + c) * p.in + ci]).x : 0.0f;
  }
  fill_parity_table(tab);
  const uint32_t lane = threadIdx.x & 31u, grp = lane / (uint32_t)G, gl = lane % (uint32_t)G;
  const uint32_t o3 = lane < 27u ? o5_of_o3(lane) : 62u; /* lane l < 27 writes level 0's k = 3 map at offset l */
  float bias[OPL], sc[OPL], sh[OPL];
#pragma unroll
  for (int q = 0; q < OPL; ++q) {
    const uint32_t c = (uint32_t)q * 32u + lane;
    bias[q] = p.b && c < p.out ? p.b[c] : 0.0f;
    sc[q] = p.scale && c < p.out ? p.scale[c] : 1.0f;
    sh[q] = p.shift && c < p.out ? p.shift[c] : 0.0f;
  }
  uint32_t cnt[4] = {0u, 0u, 0u, 0u};
  __syncthreads(); /* the weights and the table */

  const uint32_t step = gridDim.x * (uint32_t)kWarps * (uint32_t)kR;
  for (uint32_t i0 = (blockIdx.x * (uint32_t)kWarps + threadIdx.x / 32u) * (uint32_t)kR; i0 < p.n; i0 += step) {
    /* probes: row i0 + grp, its 27 blocks' cells into cells[grp] */
    const uint32_t i = i0 + grp;
    uint32_t x = 0, y = 0, z = 0, b = 0;
    bool ok = false;
    if (i < p.n) {
      x = p.grid[3u * i], y = p.grid[3u * i + 1u], z = p.grid[3u * i + 2u], b = p.batch ? p.batch[i] : 0u;
      ok = row_valid(x, y, z, b);
    }
    {
      const int lx = ok ? ((int)x - 2) >> 1 : 0, ly = ok ? ((int)y - 2) >> 1 : 0, lz = ok ? ((int)z - 2) >> 1 : 0;
#pragma unroll
      for (int q = 0; q < PB; ++q) {
        const int l = (int)gl + q * G;
        if (l >= kNB) break;
        block_cells(reinterpret_cast<int4 *>(cells + grp * (uint32_t)CELLS + (uint32_t)l * 8u), p.table, p.mask,
                    p.brows, ok, b, lx + l / 9, ly + (l / 3) % 3, lz + l % 3);
      }
    }
    /* a row's parity selects its table row; an invalid row (or one past n) has no neighbours */
    const uint32_t pm = ok ? (x & 1u) << 2 | (y & 1u) << 1 | (z & 1u) : 8u;
    __syncwarp();
#pragma unroll 1
    for (int r = 0; r < kR; ++r) {
      const uint32_t ir = i0 + (uint32_t)r;
      if (ir >= p.n) break; /* warp-uniform */
      const uint32_t par = __shfl_sync(~0u, pm, r * G);
      const int32_t *cr = cells + (uint32_t)r * (uint32_t)CELLS;
      const uint8_t *tr = tab + (par & 7u) * 128u;
      int32_t j[4];
      uint32_t v[4][CI / 2];
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint32_t o = lane + 32u * (uint32_t)s;
        j[s] = par < 8u && o < kK ? cr[tr[o]] : -1;
        if ((uint32_t)j[s] >= p.n) j[s] = -1; /* a map entry is a row of this input, or none */
        if (j[s] >= 0) load_row<CI, EXACT>(p, j[s], v[s]);
        if (p.cnt && j[s] >= 0) cnt[s]++;
      }
      if (p.nbr3 && lane < 27u) p.nbr3[(size_t)ir * 27u + lane] = par < 8u ? cr[tr[o3]] : -1;
      float acc[OPL];
#pragma unroll
      for (int q = 0; q < OPL; ++q) acc[q] = 0.0f;
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        unsigned m = __ballot_sync(~0u, j[s] >= 0);
        while (m) {
          const int src = __ffs((int)m) - 1;
          m &= m - 1u;
          const float *wr = wsm + ((uint32_t)(32 * s + src) * (uint32_t)NO + lane) * (uint32_t)CI;
          float f[CI];
#pragma unroll
          for (int h = 0; h < CI / 2; ++h) {
            const float2 u = spc_dev::unpack2<T>(__shfl_sync(~0u, v[s][h], src));
            f[2 * h] = u.x, f[2 * h + 1] = u.y;
          }
#pragma unroll
          for (int q = 0; q < OPL; ++q)
#pragma unroll
            for (int c4 = 0; c4 < CI / 4; ++c4) {
              const float4 w4 = reinterpret_cast<const float4 *>(wr + 32 * q * CI)[c4];
              acc[q] = fmaf(w4.x, f[4 * c4], acc[q]);
              acc[q] = fmaf(w4.y, f[4 * c4 + 1], acc[q]);
              acc[q] = fmaf(w4.z, f[4 * c4 + 2], acc[q]);
              acc[q] = fmaf(w4.w, f[4 * c4 + 3], acc[q]);
            }
        }
      }
      T *yr = static_cast<T *>(p.y) + (size_t)ir * p.out;
#pragma unroll
      for (int q = 0; q < OPL; ++q) {
        const uint32_t c = (uint32_t)q * 32u + lane;
        float a = (acc[q] + bias[q]) * sc[q] + sh[q];
        if (p.gelu) a = spc_dev::gelu_erf(a);
        if (c < p.out) yr[c] = to_dtype(a, T{});
      }
    }
    __syncwarp(); /* the cells are the next rows' */
  }
  if (!p.cnt) return;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const uint32_t o = lane + 32u * (uint32_t)s;
    if (o < kK && cnt[s]) atomicAdd(&p.cnt[o], cnt[s]);
  }
}

template <int CI, int OPL> constexpr size_t smem_bytes() {
  return (size_t)kK * CI * 32 * OPL * sizeof(float) + 8 * 128 + (size_t)kWarps * kR * kNB * 8 * sizeof(int32_t);
}

template <typename T, int CI, int OPL, bool EXACT>
hx_status launch(const Params &p, int smem_optin, int sms, cudaStream_t stream, hx_err *err) {
  const size_t smem = smem_bytes<CI, OPL>();
  if (smem > (size_t)smem_optin)
    return hx_errf(err, HX_EUNSUPPORTED, "spc_stem_gpu: %zu bytes of shared memory per CTA (%u -> %u channels), the "
                   "device allows %d", smem, p.in, p.out, smem_optin);
  auto kern = stem_kernel<T, CI, OPL, EXACT>;
  unsigned ctas = 0;
  HX_TRY(persistent_ctas(&ctas, kern, kThreads, smem, sms,
                         ((size_t)p.n + (size_t)kWarps * kR - 1u) / ((size_t)kWarps * kR), err));
  hx_launch(kern, ctas, kThreads, smem, stream, p);
  HX_LAUNCHED(err, "spc stem_kernel");
  return HX_OK;
}

template <typename T> hx_status by_width(const Params &p, bool exact, int smem_optin, int sms, cudaStream_t stream,
                                         hx_err *err) {
  if (p.in > 4u) return exact ? launch<T, 8, 1, true>(p, smem_optin, sms, stream, err)
                              : launch<T, 8, 1, false>(p, smem_optin, sms, stream, err);
  if (p.out > 32u) return exact ? launch<T, 4, 2, true>(p, smem_optin, sms, stream, err)
                                : launch<T, 4, 2, false>(p, smem_optin, sms, stream, err);
  return exact ? launch<T, 4, 1, true>(p, smem_optin, sms, stream, err)
               : launch<T, 4, 1, false>(p, smem_optin, sms, stream, err);
}

} // namespace stem
} // namespace

hx_status spc_stem_gpu(void *d_y, const void *d_x, const spc_weights *w, const float *d_scale, const float *d_shift,
                       nl_act act, spc_map *m5, spc_map *m3, int32_t *d_nbr3, void *d_scratch, size_t *scratch_bytes,
                       const uint32_t *d_grid, const uint32_t *d_batch, uint32_t n, int count_pairs, net_dtype dt,
                       cudaStream_t stream, hx_err *err) {
  const char *who = "spc_stem_gpu";
  if (!m5 || !scratch_bytes || !w) return hx_errf(err, HX_EINVAL, "%s: NULL map, scratch size or weights", who);
  if (w->K != stem::kK) return hx_errf(err, HX_EINVAL, "%s: weights of %u offsets (the stem's k = 5: 125)", who, w->K);
  if (!spc_stem_takes(w->in, w->out))
    return hx_errf(err, HX_EUNSUPPORTED, "%s: %zu -> %zu channels (in <= %u, out <= 32, or <= 64 at in <= 4)", who,
                   w->in, w->out, SPC_STEM_MAX_IN);
  if (act != NL_ACT_NONE && act != NL_ACT_GELU)
    return hx_errf(err, HX_EINVAL, "%s: unknown activation %d", who, (int)act);
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "%s: dtype %d", who, (int)dt);
  if (!d_scale != !d_shift) return hx_errf(err, HX_EINVAL, "%s: scale and shift go together", who);
  if ((uint64_t)n * 27u > (uint64_t)INT32_MAX)
    return hx_errf(err, HX_EINVAL, "%s: %u rows x 27 offsets exceed 2^31 map entries", who, n);
  Carve c{static_cast<char *>(d_scratch), 0};
  const VoxTable t = table_carve(c, n ? n : 1u, stem::kK);
  if (!d_scratch) {
    *scratch_bytes = n ? c.used : 0;
    return HX_OK;
  }
  m5->n = n, m5->k = 5, m5->K = stem::kK, m5->nbr = NULL, m5->rule = NULL, m5->order = NULL, m5->tiles = NULL,
  m5->tile_rows = 0;
  if (m3)
    m3->n = n, m3->k = 3, m3->K = 27, m3->nbr = d_nbr3, m3->rule = NULL, m3->order = NULL, m3->tiles = NULL,
    m3->tile_rows = 0;
  if (!n) {
    if (count_pairs) m5->pairs = 0, memset(m5->opairs, 0, sizeof m5->opairs);
    return HX_OK;
  }
  if (*scratch_bytes < c.used)
    return hx_errf(err, HX_EINVAL, "%s: scratch of %zu bytes, %zu needed", who, *scratch_bytes, c.used);
  if (!d_y || !d_x || !d_grid || !w->d_w || (m3 && !d_nbr3))
    return hx_errf(err, HX_EINVAL, "%s: NULL d_y, d_x, d_grid, weights%s for %u rows", who, m3 ? " or d_nbr3" : "", n);
  int smem_optin = 0, sms = 0;
  HX_TRY(device_limits(&smem_optin, &sms, err));
  HX_TRY(table_fill(t, n, count_pairs ? stem::kK : 0u, d_grid, d_batch, stream, err));
  const uint32_t ci = w->in > 4u ? 8u : 4u;
  stem::Params p{d_y, static_cast<const uint16_t *>(d_x), static_cast<const uint16_t *>(w->d_w), w->d_b, d_scale,
                 d_shift, m3 ? d_nbr3 : nullptr, count_pairs ? t.cnt : nullptr, t.table, t.mask, t.brows, d_grid,
                 d_batch, n, (uint32_t)w->in, (uint32_t)w->out, act == NL_ACT_GELU};
  /* a row's CI channels in one vector load: in == CI and x aligned to 2 CI bytes */
  const bool exact = w->in == ci && (uintptr_t)d_x % (2u * ci) == 0;
  HX_TRY(dt == NET_BF16 ? stem::by_width<__nv_bfloat16>(p, exact, smem_optin, sms, stream, err)
                        : stem::by_width<__half>(p, exact, smem_optin, sms, stream, err));
  if (!count_pairs) return HX_OK;
  return table_report(who, m5, t.st, t.cnt, stem::kK, stream, err);
}

/* ---- Weights and context -------------------------------------------------------------------------- */
/* One device buffer from w->alloc (cudaMalloc when it has no alloc function). */
static hx_status wt_alloc(spc_weights *w, void **p, size_t bytes, const char *label, hx_err *err) {
  if (w->alloc.alloc) return w->alloc.alloc(w->alloc.ctx, p, bytes, label, err);
  const cudaError_t e = cudaMalloc(p, bytes);
  return e == cudaSuccess ? HX_OK : hx_errf(err, HX_ECUDA, "spc_weights_upload: cudaMalloc %zu (%s): %s", bytes, label,
                                           cudaGetErrorString(e));
}
static void wt_release(const spc_weights *w, void *p) {
  if (!p) return;
  if (w->alloc.release) w->alloc.release(w->alloc.ctx, p);
  else cudaFree(p);
}

hx_status spc_weights_upload(spc_weights *w, const float *h_w, const float *h_b, size_t in, size_t out, uint32_t K,
                             net_dtype dt, const net_alloc *alloc, hx_err *err) {
  if (!w) return hx_errf(err, HX_EINVAL, "spc_weights_upload: NULL weights");
  memset(w, 0, sizeof *w);
  if (!h_w) return hx_errf(err, HX_EINVAL, "spc_weights_upload: NULL host weights");
  if (!in || !out || in > (size_t)INT32_MAX || out > (size_t)INT32_MAX)
    return hx_errf(err, HX_EINVAL, "spc_weights_upload: %zu -> %zu channels", in, out);
  if (K != 27u && K != 125u) return hx_errf(err, HX_EINVAL, "spc_weights_upload: %u offsets (27 or 125)", K);
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "spc_weights_upload: dtype %d", (int)dt);
  /* v0's layout: [K][out][in], W_o row-major [out, in] as cuBLAS's op_T operand */
  const size_t elems = (size_t)K * out * in;
  uint16_t *h = static_cast<uint16_t *>(malloc(elems * sizeof(uint16_t)));
  if (!h) return hx_errf(err, HX_ENOMEM, "spc_weights_upload: %zu values: out of host memory", elems);
  for (size_t co = 0; co < out; ++co)
    for (size_t o = 0; o < K; ++o)
      for (size_t ci = 0; ci < in; ++ci)
        h[(o * out + co) * in + ci] = net_from_float(dt, h_w[(co * K + o) * in + ci]);
  if (alloc) w->alloc = *alloc;
  hx_status st = wt_alloc(w, &w->d_w, elems * sizeof(uint16_t), "spconv weights", err);
  cudaError_t e = cudaSuccess;
  if (st == HX_OK) e = cudaMemcpy(w->d_w, h, elems * sizeof(uint16_t), cudaMemcpyHostToDevice);
  if (st == HX_OK && e == cudaSuccess && h_b) st = wt_alloc(w, (void **)&w->d_b, out * sizeof(float), "spconv bias", err);
  if (st == HX_OK && e == cudaSuccess && h_b) e = cudaMemcpy(w->d_b, h_b, out * sizeof(float), cudaMemcpyHostToDevice);
  free(h);
  if (st != HX_OK || e != cudaSuccess) {
    spc_weights_free(w);
    return st != HX_OK ? st
                       : hx_errf(err, HX_ECUDA, "spc_weights_upload: %zu -> %zu x %u: %s", in, out, K, cudaGetErrorString(e));
  }
  w->in = in, w->out = out, w->K = K;
  return HX_OK;
}

void spc_weights_free(spc_weights *w) {
  if (!w) return;
  wt_release(w, w->d_w);
  wt_release(w, w->d_b);
  memset(w, 0, sizeof *w);
}

hx_status spc_ctx_create(spc_ctx **out, hx_err *err) {
  if (!out) return hx_errf(err, HX_EINVAL, "spc_ctx_create: NULL out");
  *out = nullptr;
  spc_ctx *c = static_cast<spc_ctx *>(calloc(1, sizeof *c));
  if (!c) return hx_errf(err, HX_ENOMEM, "spc_ctx_create: out of host memory");
  const cublasStatus_t s = cublasCreate(&c->blas);
  if (s != CUBLAS_STATUS_SUCCESS) {
    free(c);
    return hx_errf(err, HX_ECUDA, "spc_ctx_create: cublasCreate: %s", cublasGetStatusString(s));
  }
  *out = c;
  return HX_OK;
}

void spc_ctx_destroy(spc_ctx *c) {
  if (!c) return;
  cublasDestroy(c->blas);
  free(c);
}

/* ---- v0: gather-GEMM-scatter per offset ------------------------------------------------------------ */
hx_status spc_conv_v0(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  if (!w || !m || !scratch_bytes) return hx_errf(err, HX_EINVAL, "spc v0: NULL weights, map or scratch size");
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "spc v0: dtype %d", (int)dt);
  const size_t in = w->in, out = w->out, n = m->n;
  const uint32_t K = m->K;
  if (!in || !out || (K != 27u && K != 125u) || w->K != K)
    return hx_errf(err, HX_EINVAL, "spc v0: weights %zu -> %zu over %u offsets on a map of %u offsets", in, out,
                   w->K, K);
  if (n * (in > out ? in : out) >= ((size_t)1 << 38))
    return hx_errf(err, HX_EINVAL, "spc v0: %zu rows x %zu channels exceed one launch", n, in > out ? in : out);
  Carve c{static_cast<char *>(d_scratch), 0};
  void *G = take(c, n * in * sizeof(uint16_t));
  float *P = static_cast<float *>(take(c, n * out * sizeof(float)));
  float *acc = static_cast<float *>(take(c, n * out * sizeof(float)));
  void *ws = take(c, kBlasWorkspace);
  if (!d_scratch) {
    *scratch_bytes = c.used;
    return HX_OK;
  }
  if (*scratch_bytes < c.used)
    return hx_errf(err, HX_EINVAL, "spc v0: scratch of %zu bytes, %zu needed", *scratch_bytes, c.used);
  if (!n) return HX_OK;
  if (!d_y || !d_x || !w->d_w || !ctx) return hx_errf(err, HX_EINVAL, "spc v0: NULL y, x, weights or context");
  if (d_y == d_x) return hx_errf(err, HX_EINVAL, "spc v0: y must not alias x");
  if (!m->rule) return hx_errf(err, HX_EINVAL, "spc v0: the map has no rulebook (spc_map_gpu with d_rule)");
  if (m->opairs[K / 2u] != n)
    return hx_errf(err, HX_EINVAL, "spc v0: the map's per-offset counts are missing (spc_map_gpu with count_pairs)");
  for (uint32_t o = 0; o < K; ++o)
    if (m->opairs[o] > n) return hx_errf(err, HX_EINVAL, "spc v0: offset %u has %u pairs > %zu rows", o, m->opairs[o], n);

  cublasHandle_t h = ctx->blas;
  cublasStatus_t bs = cublasSetStream(h, stream);
  if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetWorkspace(h, ws, kBlasWorkspace);
  if (bs != CUBLAS_STATUS_SUCCESS)
    return hx_errf(err, HX_ECUDA, "spc v0: cublasSetStream/Workspace: %s", cublasGetStatusString(bs));
  const cudaDataType_t ct = dt == NET_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const uint16_t *W = static_cast<const uint16_t *>(w->d_w);
  const uint32_t *dcnt = reinterpret_cast<const uint32_t *>(m->rule + 2u * n * K);
  const uint32_t centre = K / 2u;

  HX_TRY(gemm(h, acc, d_x, W + (size_t)centre * out * in, (uint32_t)n, in, out, ct, err));
  for (uint32_t o = 0; o < K; ++o) {
    const uint32_t rows = m->opairs[o];
    if (o == centre || !rows) continue;
    HX_TRY(gather(G, d_x, m->rule + (size_t)o * n, dcnt + o, rows, in, stream, err));
    HX_TRY(gemm(h, P, G, W + (size_t)o * out * in, rows, in, out, ct, err));
    HX_TRY(scatter_add(acc, P, m->rule + (size_t)K * n + (size_t)o * n, dcnt + o, rows, out, stream, err));
  }
  const size_t total = n * out;
  if (dt == NET_BF16)
    hx_launch(finalize_kernel<__nv_bfloat16>, blocks_for(total), kThreads, 0, stream, static_cast<__nv_bfloat16 *>(d_y),
              acc, w->d_b, total, (uint32_t)out);
  else
    hx_launch(finalize_kernel<__half>, blocks_for(total), kThreads, 0, stream, static_cast<__half *>(d_y), acc, w->d_b,
              total, (uint32_t)out);
  HX_LAUNCHED(err, "spc v0 finalize_kernel");
  return HX_OK;
}

/* ---- v1: fused implicit GEMM ----------------------------------------------------------------------- */
/* Needs no scratch (the size query answers 0 bytes; by the protocol a NULL d_scratch is still a query), no
 * rulebook and no counts: only m->nbr. Refuses widths that are not multiples of 16 with HX_EUNSUPPORTED
 * (spc_variant_best then gives v0). */
/* What a fused variant's kernel takes beyond the checks every one shares (conv_implicit): its width rule
 * (HX_EUNSUPPORTED, naming what takes the widths instead), the alignments its loads need (bytes), and whether v1's
 * grid (128-row tiles x 16-channel slices) must fit one launch. */
struct ConvRule {
  hx_status (*widths)(const char *who, size_t in, size_t out, uint32_t K, hx_err *err);
  uint32_t x_align, yw_align;
  bool v1_grid;
};
static hx_status v1_widths(const char *who, size_t in, size_t out, uint32_t K, hx_err *err) {
  (void)K;
  if (!spc_v1_takes(in, out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc %s: %zu -> %zu channels: both must be multiples of %u (v0 takes any)",
                   who, in, out, SPC_V1_CHANNELS);
  return HX_OK;
}
constexpr ConvRule kV1Rule{v1_widths, 16u, 16u, true};

/* The checks of the fused variants (v1-v7; each passes its ConvRule, v1's by default); v3 passes the scratch it needs
 * (extra bytes, asked for by the size query). HX_OK for a size query and for an empty map, which launch nothing. v1
 * and v3 share the launch too (v3 passes its row order, perm, in its scratch). */
static hx_status conv_implicit(const char *who, void *d_y, const void *d_x, const spc_weights *w, const spc_map *m,
                               void *d_scratch, size_t *scratch_bytes, size_t extra, net_dtype dt, hx_err *err,
                               const ConvRule &rule = kV1Rule) {
  if (!w || !m || !scratch_bytes) return hx_errf(err, HX_EINVAL, "spc %s: NULL weights, map or scratch size", who);
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "spc %s: dtype %d", who, (int)dt);
  const size_t in = w->in, out = w->out, n = m->n;
  const uint32_t K = m->K;
  if (!in || !out || (K != 27u && K != 125u) || w->K != K)
    return hx_errf(err, HX_EINVAL, "spc %s: weights %zu -> %zu over %u offsets on a map of %u offsets", who, in, out,
                   w->K, K);
  HX_TRY(rule.widths(who, in, out, K, err));
  if (in > 65536u || out > 65536u)
    return hx_errf(err, HX_EINVAL, "spc %s: %zu -> %zu channels exceed 65536", who, in, out);
  if (!d_scratch) {
    *scratch_bytes = extra;
    return HX_OK;
  }
  if (*scratch_bytes < extra)
    return hx_errf(err, HX_EINVAL, "spc %s: scratch of %zu bytes, %zu needed", who, *scratch_bytes, extra);
  if (!n) return HX_OK;
  if (!d_y || !d_x || !w->d_w || !m->nbr) return hx_errf(err, HX_EINVAL, "spc %s: NULL y, x, weights or map", who);
  const uintptr_t ya = (uintptr_t)d_y, xa = (uintptr_t)d_x, wa = (uintptr_t)w->d_w;
  if (ya < xa + n * in * 2u && xa < ya + n * out * 2u) return hx_errf(err, HX_EINVAL, "spc %s: y overlaps x", who);
  if (xa % rule.x_align || (ya | wa) % rule.yw_align) {
    if (rule.x_align == rule.yw_align)
      return hx_errf(err, HX_EINVAL, "spc %s: y, x and the weights must be %u-byte aligned (%p, %p, %p)", who,
                     rule.x_align, d_y, d_x, w->d_w);
    return hx_errf(err, HX_EINVAL, "spc %s: x must be %u-byte aligned, y and the weights %u-byte (%p, %p, %p)", who,
                   rule.x_align, rule.yw_align, d_x, d_y, w->d_w);
  }
  if ((uintptr_t)w->d_b % 4u) return hx_errf(err, HX_EINVAL, "spc %s: bias not 4-byte aligned", who);
  if (rule.v1_grid && (n + 127u) / 128u * (out / SPC_V1_CHANNELS) > (size_t)INT32_MAX)
    return hx_errf(err, HX_EINVAL, "spc %s: %zu rows x %zu channels exceed one launch", who, n, out);
  return HX_OK;
}

/* plan non-NULL: nothing launched, {tile rows, stages} stored, for a device with smem_optin bytes of shared
 * memory per CTA (0: the current device's). */
static hx_status conv_launch(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, const uint32_t *perm,
                             int deep, net_dtype dt, cudaStream_t stream, hx_err *err, int *plan = nullptr,
                             int smem_optin = 0) {
  if (smem_optin <= 0) {
    int dev = 0;
    HX_CUDA(err, cudaGetDevice(&dev));
    HX_CUDA(err, cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  }
  v1::Params p{d_y,  d_x,  w->d_w, w->d_b, m->nbr, m->n, m->K, (uint32_t)w->in, (uint32_t)w->out, 1u,
               perm, deep ? 1u : 0u, plan};
  return dt == NET_BF16 ? v1::by_bm<__nv_bfloat16>(p, smem_optin, stream, err)
                        : v1::by_bm<__half>(p, smem_optin, stream, err);
}

hx_status spc_conv_v1(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  HX_TRY(conv_implicit("v1", d_y, d_x, w, m, d_scratch, scratch_bytes, 0, dt, err));
  if (!d_scratch || !m->n) return HX_OK;
  return conv_launch(d_y, d_x, w, m, NULL, 0, dt, stream, err);
}

/* ---- v3: v1 over rows sorted by their neighbour mask --------------------------------------------- */
namespace tile_order {
/* steps[t] = the active offsets of tile t: a warp ORs the tile's sorted masks (contiguous: keys in mask order) */
__global__ void __launch_bounds__(kThreads) steps_kernel(unsigned char *__restrict__ steps,
                                                         const uint32_t *__restrict__ key, uint32_t n,
                                                         uint32_t tile_rows, uint32_t tiles) {
  hx_pdl_wait();
  const uint32_t t = blockIdx.x * (kThreads / 32u) + threadIdx.x / 32u, lane = threadIdx.x & 31u;
  if (t >= tiles) return;
  const uint32_t r0 = t * tile_rows, r1 = n - r0 < tile_rows ? n : r0 + tile_rows;
  uint32_t any = 0;
  for (uint32_t i = r0 + lane; i < r1; i += 32u) any |= __ldg(key + i);
  any = __reduce_or_sync(0xFFFFFFFFu, any);
  if (lane == 0) steps[t] = (unsigned char)__popc(any);
}

/* One CTA: a stable counting sort of the tiles by steps, descending (spc_tile_order_cpu's order). Tiles go
 * through in chunks of kSortThreads, one a thread: a tile's place is its bin's start, plus the tiles of its
 * bin in the earlier warps of the chunk, plus its rank among its warp's peers (__match_any_sync). */
constexpr int kSortThreads = 1024, kBins = 33, kWarps = kSortThreads / 32;
__global__ void __launch_bounds__(kSortThreads) sort_kernel(uint32_t *__restrict__ tiles,
                                                            const unsigned char *__restrict__ steps, uint32_t nt) {
  hx_pdl_wait();
  __shared__ uint32_t start[kBins];
  __shared__ uint32_t wcount[kWarps][kBins];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid / 32u;
  if (tid < kBins) start[tid] = 0;
  __syncthreads();
  for (uint32_t t = tid; t < nt; t += kSortThreads) atomicAdd(&start[32u - steps[t]], 1u);
  __syncthreads();
  if (tid == 0) {
    uint32_t sum = 0;
    for (int b = 0; b < kBins; ++b) {
      const uint32_t c = start[b];
      start[b] = sum, sum += c;
    }
  }
  for (uint32_t base = 0; base < nt; base += kSortThreads) {
    __syncthreads(); /* start's scan (first chunk) or the last chunk's advance, which read wcount */
    for (uint32_t i = tid; i < (uint32_t)(kWarps * kBins); i += kSortThreads) (&wcount[0][0])[i] = 0;
    __syncthreads();
    const uint32_t t = base + tid;
    const uint32_t b = t < nt ? 32u - steps[t] : kBins; /* kBins: no tile */
    const uint32_t peers = __match_any_sync(0xFFFFFFFFu, b);
    const uint32_t rank = __popc(peers & ((1u << lane) - 1u));
    if (b < kBins && rank == 0) wcount[warp][b] = __popc(peers);
    __syncthreads();
    if (b < kBins) {
      uint32_t at = start[b] + rank;
      for (uint32_t w = 0; w < warp; ++w) at += wcount[w][b];
      tiles[at] = t;
    }
    __syncthreads(); /* every place read start before it advances */
    if (tid < kBins)
      for (int w = 0; w < kWarps; ++w) start[tid] += wcount[w][tid];
  }
}
} // namespace tile_order

/* The order (spc_mask_order_cpu is its reference): keys and rows in, keys sorted (3 x n uint32) and CUB's radix
 * sort storage in scratch; the sorted rows in d_order. The sort is stable: rows of one mask keep their order.
 * With d_tiles, the tiles' steps (one byte a tile) then go where the unsorted keys were, and sort_kernel orders
 * the tiles (spc_tile_order_cpu is its reference). */
hx_status spc_mask_order_gpu(uint32_t *d_order, const spc_map *m, void *d_scratch, size_t *scratch_bytes,
                             cudaStream_t stream, hx_err *err) {
  return spc_mask_tiles_gpu(d_order, NULL, 0, m, d_scratch, scratch_bytes, stream, err);
}

hx_status spc_mask_tiles_gpu(uint32_t *d_order, uint32_t *d_tiles, uint32_t tile_rows, const spc_map *m,
                             void *d_scratch, size_t *scratch_bytes, cudaStream_t stream, hx_err *err) {
  const char *who = d_tiles ? "spc_mask_tiles_gpu" : "spc_mask_order_gpu";
  if (!m || !scratch_bytes) return hx_errf(err, HX_EINVAL, "%s: NULL map or scratch size", who);
  if (m->K > 32u || m->K == 0u) return hx_errf(err, HX_EINVAL, "%s: %u offsets do not fit a 32-bit mask", who, m->K);
  if (d_tiles && !tile_rows) return hx_errf(err, HX_EINVAL, "%s: tile_rows 0", who);
  const size_t n = m->n;
  size_t sort_bytes = 0;
  if (n) HX_CUDA(err, cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (const uint32_t *)nullptr,
                                                      (uint32_t *)nullptr, (const uint32_t *)nullptr,
                                                      (uint32_t *)nullptr, (int)n, 0, (int)m->K));
  Carve c{static_cast<char *>(d_scratch), 0};
  uint32_t *key_in = static_cast<uint32_t *>(take(c, n * 4u)), *key_out = static_cast<uint32_t *>(take(c, n * 4u));
  uint32_t *row_in = static_cast<uint32_t *>(take(c, n * 4u));
  void *sort_tmp = take(c, sort_bytes);
  if (!d_scratch) {
    *scratch_bytes = c.used;
    return HX_OK;
  }
  if (*scratch_bytes < c.used)
    return hx_errf(err, HX_EINVAL, "%s: scratch of %zu bytes, %zu needed", who, *scratch_bytes, c.used);
  if (!n) return HX_OK;
  if (!d_order || !m->nbr) return hx_errf(err, HX_EINVAL, "%s: NULL order or map entries", who);
  hx_launch(v1::mask_kernel, blocks_for(n), kThreads, 0, stream, key_in, row_in, m->nbr, (uint32_t)n, m->K);
  HX_LAUNCHED(err, "spc mask_kernel");
  HX_CUDA(err, cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, key_in, key_out, row_in, d_order, (int)n, 0,
                                               (int)m->K, stream));
  if (!d_tiles) return HX_OK;
  const size_t nt = (n + tile_rows - 1u) / tile_rows; /* <= n: the steps fit where the n keys were */
  unsigned char *steps = reinterpret_cast<unsigned char *>(key_in);
  hx_launch(tile_order::steps_kernel, (unsigned)((nt + kThreads / 32u - 1u) / (kThreads / 32u)), kThreads, 0, stream,
            steps, key_out, (uint32_t)n, tile_rows, (uint32_t)nt);
  HX_LAUNCHED(err, "spc tile steps_kernel");
  hx_launch(tile_order::sort_kernel, 1, tile_order::kSortThreads, 0, stream, d_tiles, steps, (uint32_t)nt);
  HX_LAUNCHED(err, "spc tile sort_kernel");
  return HX_OK;
}

/* v7's and v8's widths */
static hx_status v7_widths(const char *who, size_t in, size_t out, uint32_t K, hx_err *err) {
  if (K != 27u || !spc_v7_takes(in, out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc %s: %zu -> %zu channels over %u offsets: k = 3, 32 or 64 input "
                   "channels and a multiple of 32 output channels only", who, in, out, K);
  return HX_OK;
}
/* x by 16-byte loads, y and the weights by 32-bit ones */
constexpr ConvRule kV7Rule{v7_widths, 16u, 4u, false};

/* conv_sorted's kernel: v1's with 3 stages (v3), v1's deep pipeline (v4), v6's wgmma kernel, or v7's register
 * gathers over the order (v8). */
enum { kStages3 = 0, kDeep = 1, kWgmma = 2, kRegs = 3 };

/* The map's order when it has one (m->order); else scratch holds the order (n uint32), then spc_mask_order_gpu's.
 * k = 5 maps are HX_EUNSUPPORTED (a 125-bit mask; v1 takes them); other K are refused by the checks v1 shares. */
static hx_status conv_sorted(const char *who, int kern, void *d_y, const void *d_x, const spc_weights *w,
                             const spc_map *m, void *d_scratch, size_t *scratch_bytes, net_dtype dt, cudaStream_t stream,
                             hx_err *err) {
  if (m && m->K == 125u)
    return hx_errf(err, HX_EUNSUPPORTED, "spc %s: sorts the rows of k = 3 maps only (a 27-bit mask; v1 takes k = 5)",
                   who);
  if (kern == kWgmma && w) HX_TRY(spc_v6_check(w->in, w->out, err));
  const int own = m && !m->order; /* no order with the map: sort here (v6: and order its tiles, as a map's are) */
  const size_t n = m && own ? m->n : 0;
  const uint32_t trows = kern == kWgmma && w && w->out ? spc_v6_tile_rows(w->out) : 0u;
  size_t order_bytes = 0;
  if (own && m->K == 27u) HX_TRY(spc_mask_order_gpu(NULL, m, NULL, &order_bytes, stream, err));
  Carve c{static_cast<char *>(d_scratch), 0};
  uint32_t *order = static_cast<uint32_t *>(take(c, n * 4u));
  uint32_t *tiles = static_cast<uint32_t *>(take(c, trows ? (n + trows - 1u) / trows * 4u : 0u));
  void *order_scratch = take(c, order_bytes);
  HX_TRY(conv_implicit(who, d_y, d_x, w, m, d_scratch, scratch_bytes, c.used, dt, err,
                       kern == kRegs ? kV7Rule : kV1Rule));
  if (!d_scratch || !m->n) return HX_OK;
  const uint32_t *perm = own ? order : m->order;
  if (own) HX_TRY(spc_mask_tiles_gpu(order, trows ? tiles : NULL, trows, m, order_scratch, &order_bytes, stream, err));
  if (kern == kRegs) return v7::launch(d_y, d_x, w, m, perm, dt, stream, err);
  if (kern == kWgmma)
    return spc_v6_launch(d_y, d_x, w->d_w, w->d_b, m->nbr, perm, own ? tiles : m->tiles, own ? trows : m->tile_rows,
                         m->n, (uint32_t)w->in, (uint32_t)w->out, dt, stream, err);
  return conv_launch(d_y, d_x, w, m, perm, kern == kDeep, dt, stream, err);
}

hx_status spc_conv_v3(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  return conv_sorted("v3", kStages3, d_y, d_x, w, m, d_scratch, scratch_bytes, dt, stream, err);
}

/* ---- v4: v3 with the deep pipeline (v1::Deep) ------------------------------------------------------ */
hx_status spc_launch_plan(int *tile_rows, int *stages, const spc_map *m, const spc_weights *w, int deep,
                          int smem_optin, hx_err *err) {
  if (!tile_rows || !stages || !m || !w) return hx_errf(err, HX_EINVAL, "spc_launch_plan: NULL argument");
  if (!spc_v1_takes(w->in, w->out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc_launch_plan: %zu -> %zu channels are not v1's", w->in, w->out);
  if (m->K != 27u && m->K != 125u) return hx_errf(err, HX_EINVAL, "spc_launch_plan: a map of %u offsets", m->K);
  int plan[2] = {0, 0};
  HX_TRY(conv_launch(NULL, NULL, w, m, NULL, deep, NET_F16, NULL, err, plan, smem_optin));
  *tile_rows = plan[0], *stages = plan[1];
  return HX_OK;
}

hx_status spc_conv_v4(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  return conv_sorted("v4", kDeep, d_y, d_x, w, m, d_scratch, scratch_bytes, dt, stream, err);
}

/* ---- v6: v3's rows on the warp-specialised wgmma kernel (spconv_wgmma.cu) ------------------------- */
hx_status spc_conv_v6(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  return conv_sorted("v6", kWgmma, d_y, d_x, w, m, d_scratch, scratch_bytes, dt, stream, err);
}

/* ---- v7: narrow k = 3 convolutions on register gathers -------------------------------------------------- */
/* Needs no scratch, no rulebook and no order (only m->nbr, in the map's own row order). Takes k = 3 maps with
 * in = 32 or 64 and out a multiple of 32 (spc_v7_takes; HX_EUNSUPPORTED otherwise). */
hx_status spc_conv_v7(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  HX_TRY(conv_implicit("v7", d_y, d_x, w, m, d_scratch, scratch_bytes, 0, dt, err, kV7Rule));
  if (!d_scratch || !m->n) return HX_OK;
  return v7::launch(d_y, d_x, w, m, nullptr, dt, stream, err);
}

/* ---- v8: v7 over the rows in mask order, active offsets only ---------------------------------------------- */
/* v7's widths and kernel over the map's mask order (m->order; else sorted in the call, in scratch, as v3 does). */
hx_status spc_conv_v8(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  return conv_sorted("v8", kRegs, d_y, d_x, w, m, d_scratch, scratch_bytes, dt, stream, err);
}

/* ---- v5: the tile's input halo in shared memory ----------------------------------------------------- */
/* Needs no scratch and no rulebook (only m->nbr), in the map's own row order. Takes k = 3 maps at v1's widths
 * (HX_EUNSUPPORTED otherwise: v1 takes k = 5, v0 other widths). */
hx_status spc_conv_v5(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  if (m && m->K == 125u)
    return hx_errf(err, HX_EUNSUPPORTED, "spc v5: k = 3 maps only (a tile's 128 x 27 entries; v1 takes k = 5)");
  HX_TRY(conv_implicit("v5", d_y, d_x, w, m, d_scratch, scratch_bytes, 0, dt, err));
  if (!d_scratch || !m->n) return HX_OK;
  int dev = 0, smem_optin = 0, smem_sm = 0;
  HX_CUDA(err, cudaGetDevice(&dev));
  HX_CUDA(err, cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  HX_CUDA(err, cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  v5::Params p{d_y, d_x, w->d_w, w->d_b, m->nbr, m->n, (uint32_t)w->in, (uint32_t)w->out, 1u, 0u};
  return dt == NET_BF16 ? v5::by_bn<__nv_bfloat16>(p, smem_optin, smem_sm, stream, err)
                        : v5::by_bn<__half>(p, smem_optin, smem_sm, stream, err);
}

hx_status spc_v5_halo_rows(uint32_t *rows, const spc_weights *w, int smem_optin, int smem_sm, hx_err *err) {
  if (!rows || !w) return hx_errf(err, HX_EINVAL, "spc_v5_halo_rows: NULL argument");
  *rows = 0;
  if (!spc_v1_takes(w->in, w->out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc_v5_halo_rows: %zu -> %zu channels are not v5's", w->in, w->out);
  if (smem_optin <= 0 || smem_sm <= 0) {
    int dev = 0;
    HX_CUDA(err, cudaGetDevice(&dev));
    HX_CUDA(err, cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    HX_CUDA(err, cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  }
  *rows = v5::capacity(v1::slice_width((uint32_t)w->out), v1::chunk_width((uint32_t)w->in), smem_optin, smem_sm);
  return HX_OK;
}

/* ---- v2: small input widths (the stem) -------------------------------------------------------------- */
static hx_status v2_widths(const char *who, size_t in, size_t out, uint32_t K, hx_err *err) {
  (void)K;
  if (!spc_v2_takes(in, out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc %s: %zu input channels: at most %u (v1 and v0 take wider inputs)", who,
                   in, SPC_V2_MAX_IN);
  return HX_OK;
}
/* 16-bit gathers and stores at the least (wider where the addresses and widths allow: exact and Params' flag) */
constexpr ConvRule kV2Rule{v2_widths, 2u, 2u, false};

/* Needs no scratch (the size query answers 0 bytes), no rulebook, no counts and no context: only m->nbr.
 * Refuses in > SPC_V2_MAX_IN with HX_EUNSUPPORTED (v1 or v0 take those); any out. */
hx_status spc_conv_v2(void *d_y, const void *d_x, const spc_weights *w, const spc_map *m, void *d_scratch,
                      size_t *scratch_bytes, spc_ctx *ctx, net_dtype dt, cudaStream_t stream, hx_err *err) {
  (void)ctx;
  HX_TRY(conv_implicit("v2", d_y, d_x, w, m, d_scratch, scratch_bytes, 0, dt, err, kV2Rule));
  if (!d_scratch || !m->n) return HX_OK;
  const size_t in = w->in, out = w->out, n = m->n;
  const uint32_t K = m->K;
  const uintptr_t ya = (uintptr_t)d_y, xa = (uintptr_t)d_x;
  int smem_optin = 0, sms = 0;
  HX_TRY(device_limits(&smem_optin, &sms, err));
  const uint32_t ci = in > 4u ? 8u : 4u;
  v2::Params p{d_y, static_cast<const uint16_t *>(d_x), static_cast<const uint16_t *>(w->d_w), w->d_b, m->nbr,
               (uint32_t)n, K, (uint32_t)in, (uint32_t)out, (K * ci + 15u) / 16u, out % 2u == 0 && ya % 4u == 0};
  const bool exact = in == ci && xa % 4u == 0;
  return dt == NET_BF16 ? v2::by_ci<__nv_bfloat16>(p, exact, smem_optin, sms, stream, err)
                        : v2::by_ci<__half>(p, exact, smem_optin, sms, stream, err);
}
