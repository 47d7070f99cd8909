/* emu.cc - the barriers and warp exchanges of emu.h (see there). */
#include "emu.h"
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
int emu_sms = 2;
static std::mutex bm; static std::condition_variable bcv; static unsigned barrived = 0, bgen = 0;
void __syncthreads() {
  std::unique_lock<std::mutex> lk(bm);
  unsigned g = bgen;
  if (++barrived == blockDim.x) { barrived = 0; bgen++; bcv.notify_all(); }
  else bcv.wait(lk, [&] { return bgen != g; });
}
struct Slot { int phase = 0; unsigned arrived = 0, departed = 0; uint64_t val[32]; };
struct Warp { std::mutex m; std::condition_variable cv; std::map<unsigned, Slot> slots; };
static Warp warps[32];
uint64_t emu_exchange(unsigned mask, uint64_t v, uint64_t out[32]) {
  Warp &w = warps[threadIdx.x >> 5];
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
