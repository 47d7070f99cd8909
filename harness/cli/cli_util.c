/*
 * cli_util.c - helpers shared by the subcommands (see cli.h): error lines, number parsing, and the
 * build/host/device/git keys every run records in context.csv.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "f3d_config.h"
#include "harness/cli/cli.h"

#ifndef F3D_SOURCE_ROOT
#define F3D_SOURCE_ROOT "."
#endif

void f3d_fail(const char *what, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "f3dbench: %s: ", what);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int f3d_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end) return -1;
  *out = (uint64_t)v;
  return 0;
}

int f3d_parse_count(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s) return -1;
  double scale = 1.0;
  if (*end == 'k' || *end == 'K') scale = 1e3, end++;
  else if (*end == 'M' || *end == 'm') scale = 1e6, end++;
  if (*end) return -1;
  v *= scale;
  /* Only whole counts: "1.5k" is 1500, "1.2345k" is refused rather than silently rounded. */
  if (!isfinite(v) || v < 0.0 || v > 1e15 || v != floor(v)) return -1;
  *out = (uint64_t)v;
  return 0;
}

int f3d_parse_pos_double(const char *s, double *out) {
  if (!s || !*s) return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v) || v <= 0.0) return -1;
  *out = v;
  return 0;
}

/* Run a git command in the source tree and return its first output line ("" on any failure). */
static void git_line(const char *args, char *out, size_t cap) {
  char cmd[4096];
  out[0] = '\0';
  snprintf(cmd, sizeof cmd, "git -C '%s' %s 2>/dev/null", F3D_SOURCE_ROOT, args);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  if (!fgets(out, (int)cap, p)) out[0] = '\0';
  int c;
  while ((c = fgetc(p)) != EOF) /* drain so git is not killed by SIGPIPE */
    ;
  int rc = pclose(p);
  out[strcspn(out, "\r\n")] = '\0';
  if (rc != 0) out[0] = '\0';
}

/* F3D_GIT_COMMIT (and F3D_GIT_DIRTY=yes|no) from the environment: the commit where the source tree
 * has no .git (a copy sent to another machine); ./f3d sets them when git works. A value that is not a
 * plain name (letters, digits, '.', '_', '-', at most 40) is ignored. */
static void git_from_env(char *hash, size_t cap, int *dirty) {
  const char *v = getenv("F3D_GIT_COMMIT");
  size_t len = v ? strlen(v) : 0;
  if (len == 0 || len > 40 || len >= cap || strspn(v, "0123456789abcdefABCDEF"
                                                      "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ._-") != len)
    return;
  memcpy(hash, v, len + 1);
  const char *d = getenv("F3D_GIT_DIRTY");
  *dirty = d && strcmp(d, "yes") == 0 ? 1 : d && strcmp(d, "no") == 0 ? 0 : -1;
}

void f3d_git_state(char *hash, size_t cap, int *dirty) {
  git_line("rev-parse --short=7 HEAD", hash, cap);
  *dirty = -1;
  if (!hash[0]) {
    git_from_env(hash, cap, dirty);
    return;
  }
  /* One line of porcelain output is enough to know the tree is dirty; untracked files do not count
   * (build directories, results) since they do not change what was compiled. */
  char line[512];
  char check[64];
  git_line("rev-parse --is-inside-work-tree", check, sizeof check);
  if (strcmp(check, "true") != 0) return;
  git_line("status --porcelain --untracked-files=no", line, sizeof line);
  *dirty = line[0] ? 1 : 0;
}

hx_status f3d_context_build(hx_results *r, hx_err *err) {
  char hash[64];
  int dirty;
  f3d_git_state(hash, sizeof hash, &dirty);
  HX_TRY(hx_results_context(r, "f3d_version", F3D_VERSION, err));
  HX_TRY(hx_results_context(r, "git_commit", hash[0] ? hash : "unknown", err));
  HX_TRY(hx_results_context(r, "git_dirty", dirty < 0 ? "unknown" : dirty ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "build_type", F3D_BUILD_TYPE, err));
  HX_TRY(hx_results_context(r, "c_compiler", F3D_C_COMPILER, err));
  HX_TRY(hx_results_context(r, "cuda_compiler", F3D_CUDA_COMPILER, err));
  HX_TRY(hx_results_context(r, "gpu_arch", F3D_HAVE_CUDA ? F3D_CUDA_ARCH : "none", err));
  HX_TRY(hx_results_context(r, "have_cuda", F3D_HAVE_CUDA ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "have_lzf", F3D_HAVE_LZF ? "yes" : "no", err));
  HX_TRY(hx_results_context(r, "have_cupti", F3D_HAVE_CUPTI ? "yes" : "no", err));
  return HX_OK;
}

/* The CPU model from /proc/cpuinfo (Linux), or "unknown". */
static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *v = strchr(line, ':');
    if (v) {
      v++;
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\r\n")] = '\0';
      snprintf(out, cap, "%s", v);
    }
    break;
  }
  fclose(f);
}

hx_status f3d_context_device(hx_results *r, const hx_device_info *dev, hx_err *err) {
  char host[256] = "unknown", cpu[256];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  cpu_model(cpu, sizeof cpu);
  HX_TRY(hx_results_context(r, "hostname", host, err));
  HX_TRY(hx_results_context(r, "cpu_model", cpu, err));
  HX_TRY(hx_results_contextf(r, err, "cpu_count", "%ld", sysconf(_SC_NPROCESSORS_ONLN)));
  if (!dev) {
    HX_TRY(hx_results_context(r, "device", "none", err));
    return HX_OK;
  }
  char drv[32], rt[32];
  hx_cuda_version_str(drv, sizeof drv, dev->driver_version);
  hx_cuda_version_str(rt, sizeof rt, dev->runtime_version);
  HX_TRY(hx_results_context(r, "device", dev->name, err));
  HX_TRY(hx_results_contextf(r, err, "device_index", "%d", dev->index));
  HX_TRY(hx_results_contextf(r, err, "device_cc", "%d.%d", dev->cc_major, dev->cc_minor));
  HX_TRY(hx_results_contextf(r, err, "device_sm_count", "%d", dev->sm_count));
  HX_TRY(hx_results_contextf(r, err, "device_l2_bytes", "%d", dev->l2_bytes));
  HX_TRY(hx_results_contextf(r, err, "device_mem_bytes", "%zu", dev->mem_bytes));
  HX_TRY(hx_results_contextf(r, err, "device_sm_clock_khz", "%d", dev->sm_clock_khz));
  HX_TRY(hx_results_contextf(r, err, "device_mem_clock_khz", "%d", dev->mem_clock_khz));
  HX_TRY(hx_results_contextf(r, err, "device_mem_bus_bits", "%d", dev->mem_bus_bits));
  HX_TRY(hx_results_context(r, "device_pci_bus_id", dev->pci_bus_id, err));
  HX_TRY(hx_results_context(r, "cuda_driver_version", drv, err));
  HX_TRY(hx_results_context(r, "cuda_runtime_version", rt, err));
  return HX_OK;
}
