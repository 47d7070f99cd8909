/* emu.cc - the barriers, warp exchanges, per-block shared memory and cooperative launches of emu.h (see
 * there). Barriers and warps are keyed by block, so concurrent blocks (emu_launch_coop) do not mix. */
#include "emu.h"
#include <chrono>
#include <pthread.h>
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
int emu_sms = 2;
int emu_fallbacks = 0;
unsigned long long emu_clock_ns() {
  return (unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr unsigned kEmuBlocks = 64; /* blocks resident at once in a cooperative launch, at most */
struct Bar { std::mutex m; std::condition_variable cv; unsigned arrived = 0, gen = 0; };
static Bar bars[kEmuBlocks], gbar;
static void bar_wait(Bar &b, unsigned n) {
  std::unique_lock<std::mutex> lk(b.m);
  unsigned g = b.gen;
  if (++b.arrived == n) { b.arrived = 0; b.gen++; b.cv.notify_all(); }
  else b.cv.wait(lk, [&] { return b.gen != g; });
}
void __syncthreads() { bar_wait(bars[blockIdx.x % kEmuBlocks], blockDim.x); }
/* two barriers around a per-block sum: every thread adds, reads the total after the first barrier, and the
 * last one to leave the second barrier region resets it (the next call starts after that barrier) */
static std::atomic<int> cnt_sum[kEmuBlocks], cnt_left[kEmuBlocks];
int __syncthreads_count(int pred) {
  const unsigned b = blockIdx.x % kEmuBlocks;
  if (pred) cnt_sum[b].fetch_add(1);
  __syncthreads();
  const int total = cnt_sum[b].load();
  if ((unsigned)cnt_left[b].fetch_add(1) + 1 == blockDim.x) {
    cnt_left[b].store(0);
    cnt_sum[b].store(0);
  }
  __syncthreads();
  return total;
}
void emu_grid_sync() { bar_wait(gbar, blockDim.x * gridDim.x); }
static std::mutex smm;
static std::map<unsigned, std::vector<unsigned char>> smem;
void *emu_smem_get(size_t bytes) {
  std::lock_guard<std::mutex> lk(smm);
  auto &v = smem[blockIdx.x];
  if (v.size() < bytes) v.assign(bytes, 0xEE); /* garbage, as on the device */
  return v.data();
}
/* emu_launch_dyn's buffer (blocks run in turn there, so one buffer serves the launch) */
static std::vector<unsigned char> dyn;
static size_t dyn_bytes;
constexpr size_t kCanary = 256;
void emu_dyn_begin(size_t bytes) {
  dyn_bytes = bytes;
  dyn.assign(bytes + kCanary, 0xEE);
  for (size_t i = 0; i < kCanary; i++) dyn[bytes + i] = (unsigned char)(0xA5 ^ i);
}
void emu_dyn_end_block(unsigned b) {
  for (size_t i = 0; i < kCanary; i++)
    if (dyn[dyn_bytes + i] != (unsigned char)(0xA5 ^ i)) {
      fprintf(stderr, "block %u wrote byte %zu past its %zu bytes of dynamic shared memory\n", b, i, dyn_bytes);
      abort();
    }
}
void *emu_dyn_smem() { return dyn.data(); }
struct Slot { int phase = 0; unsigned arrived = 0, departed = 0; uint64_t val[32]; };
struct Warp { std::mutex m; std::condition_variable cv; std::map<unsigned, Slot> slots; };
static Warp warps[kEmuBlocks * 32];
uint64_t emu_exchange(unsigned mask, uint64_t v, uint64_t out[32]) {
  Warp &w = warps[(blockIdx.x % kEmuBlocks) * 32 + (threadIdx.x >> 5)];
  const unsigned lane = threadIdx.x & 31, n = (unsigned)__builtin_popcount(mask);
  if (!(mask >> lane & 1)) { fprintf(stderr, "lane %u not in mask %08x\n", lane, mask); abort(); }
  std::unique_lock<std::mutex> lk(w.m);
  Slot &s = w.slots[mask];
  w.cv.wait(lk, [&] { return s.phase == 0; });
  s.val[lane] = v;
  if (++s.arrived == n) { s.phase = 1; w.cv.notify_all(); }
  else w.cv.wait(lk, [&] { return s.phase == 1; });
  memcpy(out, s.val, sizeof s.val);
  if (++s.departed == n) { s.phase = 0; s.arrived = s.departed = 0; w.cv.notify_all(); }
  return 0;
}
struct RunArg { unsigned b, t; void (*body)(void *); void *arg; };
static void *run_one(void *a) {
  RunArg *r = (RunArg *)a;
  blockIdx.x = r->b;
  threadIdx.x = r->t;
  r->body(r->arg);
  return nullptr;
}
void emu_run_all(unsigned grid, unsigned threads, void (*body)(void *), void *arg) {
  if (grid > kEmuBlocks) { fprintf(stderr, "emu: cooperative grid %u > %u\n", grid, kEmuBlocks); abort(); }
  blockDim.x = threads;
  gridDim.x = grid;
  std::vector<RunArg> ra((size_t)grid * threads);
  std::vector<pthread_t> th(ra.size());
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 256 * 1024);
  for (size_t k = 0; k < ra.size(); k++) {
    ra[k] = {(unsigned)(k / threads), (unsigned)(k % threads), body, arg};
    if (pthread_create(&th[k], &at, run_one, &ra[k])) { fprintf(stderr, "emu: pthread_create failed at %zu\n", k); abort(); }
  }
  for (auto &x : th) pthread_join(x, nullptr);
  pthread_attr_destroy(&at);
}
