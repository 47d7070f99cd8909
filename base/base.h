/*
 * base.h - the one public header of the base layer (prefix hx_): what every folder may rely on and the
 * only header a leaf folder (kernels/, baselines/, workloads/, nets/) includes from outside itself.
 *
 * Status codes and error reports (library code returns a status and never exits), HX_TRY, one CUDA error
 * check, the programmatic kernel launch (hx_launch, hx_pdl_wait), one alignment helper, name lists, and a
 * counter-based random generator that gives the same bits on host and device. Plain C11; also compiles as CUDA
 * C++ (device code uses hx_rng_* and HX_HD).
 */
#ifndef F3D_BASE_H
#define F3D_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define HX_HD __host__ __device__
#else
#define HX_HD
#endif

/* ---- Status codes ------------------------------------------------------------------------------ */
typedef enum hx_status {
  HX_OK = 0,
  HX_EINVAL,       /* bad argument or impossible configuration */
  HX_EIO,          /* file could not be opened, read or written */
  HX_EFORMAT,      /* malformed or truncated input file */
  HX_ENOMEM,       /* host allocation failed */
  HX_ECUDA,        /* a CUDA call failed (including device out-of-memory) */
  HX_ENODEV,       /* no CUDA device, or built without CUDA */
  HX_EUNSUPPORTED, /* valid request this build or device cannot do */
  HX_ECHECK        /* a result failed its check against the reference */
} hx_status;

const char *hx_status_str(hx_status s);

/* An error report: the status plus one human sentence naming the problem ("file.pcd: truncated after
 * 1200 of 460400 points"). Functions that can fail take an optional `hx_err *` (NULL allowed) and fill it
 * when they return non-HX_OK. No global errno-like state. */
typedef struct hx_err {
  hx_status status;
  char msg[512];
} hx_err;

/* Fill `err` (if not NULL) with status and a printf-style message; returns `status` so callers can write
 * `return hx_errf(err, HX_EFORMAT, "%s: bad header", path);`. */
hx_status hx_errf(hx_err *err, hx_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* s as a decimal count into *out: digits only (no blank, sign or 0x, which strtoull would take: " -1" wraps to
 * 2^64 - 1), at most max. 0 when it is one, -1 otherwise (*out untouched). */
int hx_parse_dec_u64(const char *s, uint64_t max, uint64_t *out);

/* src copied into dst (cap >= 1, always NUL-terminated, cut at a whole character) for a terminal: well-formed UTF-8
 * as it is, but a control byte (below 0x20, 0x7f), a UTF-8 C1 control (0xc2 0x80..0x9f, by its code point) and any
 * byte that is not part of a well-formed character (a raw 0x9b too) as \xNN. hx_errf passes its messages through it,
 * so no escape sequence from a file's values reaches the terminal through an error message. */
void hx_str_printable(char *dst, size_t cap, const char *src);

/* Return the status unchanged (for HX_TRY); with F3D_TRACE=1 in the environment also log
 * "file:line: expr: status" on stderr, so a developer sees the path an error took. */
hx_status hx_trace(hx_status s, const char *file, int line, const char *expr);

/* Propagate a failing status, logging where it came from. */
#define HX_TRY(expr)                                                                                     \
  do {                                                                                                   \
    hx_status hx_try_s_ = (expr);                                                                        \
    if (hx_try_s_ != HX_OK) return hx_trace(hx_try_s_, __FILE__, __LINE__, #expr);                       \
  } while (0)

/* ---- Name lists ----------------------------------------------------------------------------------- */
/* 1 when name is one of the comma-separated entries of list ("v5,v8"), else 0 (environment filters of the
 * test and bench programs). */
static inline int hx_name_listed(const char *list, const char *name) {
  const size_t len = strlen(name);
  for (const char *q = list; *q;) {
    const char *e = strchr(q, ',');
    const size_t l = e ? (size_t)(e - q) : strlen(q);
    if (l == len && strncmp(q, name, len) == 0) return 1;
    q += l + (e ? 1 : 0);
  }
  return 0;
}

/* ---- Counter-based randomness -------------------------------------------------------------------- */
/* A pure function of (seed, stream, counter): the same value on CPU and GPU, in any order, with no
 * state to carry. SplitMix64's finaliser over a combined key; good enough for sampling and hashing
 * probes, not for cryptography. */
static inline HX_HD uint64_t hx_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* The part of hx_rng_u64 that depends on (seed, stream) only: a caller drawing many counters of one stream
 * (a point's probes) computes it once and pays one mix per draw. */
static inline HX_HD uint64_t hx_rng_base(uint64_t seed, uint64_t stream) {
  return hx_mix64(seed ^ hx_mix64(stream + 0x632BE59BD9B4E019ull));
}
static inline HX_HD uint64_t hx_rng_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
  return hx_mix64(hx_rng_base(seed, stream) + counter);
}
/* Uniform double in [0, 1) with 53 random bits. */
static inline HX_HD double hx_rng_unit(uint64_t seed, uint64_t stream, uint64_t counter) {
  return (double)(hx_rng_u64(seed, stream, counter) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- Alignment --------------------------------------------------------------------------------- */
/* Bytes rounded up to a multiple of 256: cudaMalloc's alignment, and the unit scratch blocks are carved in
 * (every piece of a carved scratch block starts 256-byte aligned, so vector loads of any width are legal). */
#define HX_ALIGN 256u
static inline HX_HD size_t hx_align256(size_t bytes) { return (bytes + (HX_ALIGN - 1u)) & ~(size_t)(HX_ALIGN - 1u); }

/* ---- Output paths (out.c) ----------------------------------------------------------------------- */
/* The file a writer replaces for an output path, into dest (cap bytes): path itself when it is absent or a regular
 * file; for a symbolic link, or a chain of them, ending at a regular file or at nothing, the path of that end (write
 * the temporary beside dest and rename it over dest: the link stays a link, and a failed write leaves the old
 * target whole). *in_place 1, dest = path, for what is not replaced: a FIFO, a device or a socket (named directly
 * or through links) and a link in /proc (/dev/stdout, /dev/fd/N: a stream of the process). HX_EIO naming the path
 * for a directory (or a link to one), a chain of more than 40 links, or a link another user owns in a sticky
 * world-writable folder (the kernel's protected_symlinks rule, which following by hand would skip); HX_EINVAL when
 * a path does not fit in cap. */
hx_status hx_out_resolve(const char *path, char *dest, size_t cap, int *in_place, hx_err *err);
/* The temporary a write of dest goes through before its rename into place, "<dest>.tmp.<pid>": the one name every
 * writer of this project uses, so a program that removes its temporaries on a signal can name them before they
 * exist. snprintf's count: >= cap when it did not fit. */
int hx_tmp_path(char *buf, size_t cap, const char *dest);

/* ---- Input paths (in.c) -------------------------------------------------------------------------- */
/* Open path for reading only if it is a regular file: *fd (and *size, when given: its bytes), or HX_EIO naming the
 * path, "not a regular file" for a FIFO, socket, device or directory (never waited on or read), HX_ENOMEM for a
 * size past SIZE_MAX. hx_fopen_regular gives the same file as a FILE * ("rb"). */
hx_status hx_open_regular(const char *path, int *fd, size_t *size, hx_err *err);
hx_status hx_fopen_regular(const char *path, FILE **f, size_t *size, hx_err *err);

/* ---- One parallel loop (par.c) ------------------------------------------------------------------ */
/* body(ctx, begin, end) over [0, n) split into contiguous chunks of at least `grain`, one pthread per chunk
 * (at most one per online CPU, 64), the caller running the first; returns when all are done. Bodies must write
 * disjoint data: the result is then the serial one whatever the thread count. */
void hx_par_for(size_t n, size_t grain, void (*body)(void *ctx, size_t begin, size_t end), void *ctx);

#ifdef __cplusplus
}
#endif

/* ---- The one CUDA error check (.cu files; cuda_runtime.h included before use) -------------------- */
/* HX_CUDA(err, call): a failing runtime call returns HX_ECUDA from the enclosing function, with err (an
 * hx_err *, may be NULL) naming the call, the CUDA error and the place. HX_LAUNCHED(err, what) does the same
 * for the launch just made (cudaGetLastError), so every launch is followed by a check. */
#define HX_CUDA(err, call)                                                                               \
  do {                                                                                                   \
    cudaError_t hx_cuda_e_ = (call);                                                                     \
    if (hx_cuda_e_ != cudaSuccess)                                                                       \
      return hx_trace(hx_errf((err), HX_ECUDA, "%s: %s (%s:%d)", #call, cudaGetErrorString(hx_cuda_e_),  \
                              __FILE__, __LINE__),                                                       \
                      __FILE__, __LINE__, #call);                                                        \
  } while (0)
#define HX_LAUNCHED(err, what)                                                                           \
  do {                                                                                                   \
    cudaError_t hx_cuda_e_ = cudaGetLastError();                                                         \
    if (hx_cuda_e_ != cudaSuccess)                                                                       \
      return hx_trace(hx_errf((err), HX_ECUDA, "launch of %s: %s (%s:%d)", (what),                      \
                              cudaGetErrorString(hx_cuda_e_), __FILE__, __LINE__),                       \
                      __FILE__, __LINE__, what);                                                         \
  } while (0)

/* ---- Programmatic dependent launch (.cu files) ----------------------------------------------------- */
/* hx_launch(kernel, grid, block, smem, stream, args...) launches as kernel<<<grid, block, smem, stream>>>(args...)
 * does, made programmatic where the device has it (compute capability 9.0 and up): the grid may be placed on the
 * SMs while the previous kernel in the stream drains, so the launch gap between dependent kernels hides under
 * its tail (event waits and copies stay full dependencies). Invariant: every kernel launched through hx_launch
 * calls hx_pdl_wait() before its first global memory access, read or write; hx_pdl_wait returns once the
 * previous grid in the stream has completed and its writes are visible (a no-op in a plain launch, and below
 * sm_90). A kernel launched through hx_launch may itself be launched plainly. Errors are returned and also reach
 * cudaGetLastError, so HX_LAUNCHED after the call checks it as it checks <<<>>>. The attribute follows the current
 * device's compute capability, the wait the architecture the kernel was compiled for: sound because the build emits
 * SASS only (meson.build's gencode, no PTX to JIT from an older architecture). Measured per dependent launch
 * (lab/kernels/probe_pdl.cu, H200, 2026-11-30): 1.6 us off the eager launch of a 70 us kernel, 0.3-0.7 us off
 * kernels of 1-5 us (docs/nets.md, "Launch gaps"). */
#if defined(__CUDACC__) && defined(__cplusplus)
static __device__ __forceinline__ void hx_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
/* The launch configuration hx_launch uses, for callers that launch by hand (cudaLaunchKernelExC, or kernels that
 * wait later than their first statement by design, as the in-bucket pooling's): attr is the programmatic attribute,
 * set on the config only where the current device is compute capability 9.0 or later. */
static inline cudaError_t hx_pdl_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *attr, dim3 grid, dim3 block,
                                        size_t smem, cudaStream_t stream) {
  int dev = 0, major = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e != cudaSuccess) return e;
  *attr = cudaLaunchAttribute{};
  attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr->val.programmaticStreamSerializationAllowed = 1;
  *cfg = cudaLaunchConfig_t{};
  cfg->gridDim = grid;
  cfg->blockDim = block;
  cfg->dynamicSmemBytes = smem;
  cfg->stream = stream;
  cfg->attrs = attr;
  cfg->numAttrs = major >= 9 ? 1u : 0u;
  return cudaSuccess;
}
template <typename... P, typename... A>
static inline cudaError_t hx_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                    A &&...args) {
  cudaLaunchConfig_t cfg;
  cudaLaunchAttribute attr;
  const cudaError_t e = hx_pdl_config(&cfg, &attr, grid, block, smem, stream);
  if (e != cudaSuccess) return e;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<A &&>(args)...);
}
#endif

#endif /* F3D_BASE_H */
