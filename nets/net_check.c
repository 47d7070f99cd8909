/*
 * net_check.c - the whole-network check: a GPU forward's logits against the fp32 CPU forward on the same
 * structure (net_gpu_check in nets.h).
 *
 * Tolerance (relative L2 of the logits). Both forwards compute the same function; the GPU rounds every
 * activation (and weight) to the dtype between layers (unit roundoff u = 2^-11 for fp16, 2^-8 for bf16), accumulates
 * in fp32 and uses cuBLASLt's tanh GELU (within 4.7e-4 of the erf form). Measured on an H100 (2026-11-28, 8292e1c):
 * ptv3-tiny / flash3d-tiny 8e-4 to 1.0e-3 in fp16 and 6.8e-3 to 7.3e-3 in bf16, the full ptv3 and flash3d-46m at 1000
 * points 1.0e-3 to 1.1e-3 in fp16. The tolerances are 1e-2 (fp16) and 5e-2 (bf16), about 10x and 7x those; one head
 * weight changed by 1 (the planted error of test_nets_gpu) gives 0.2 to 0.5.
 */
#include <math.h>
#include <stdlib.h>

#include "nets/nets_internal.h"

double net_check_tolerance(net_dtype dt) { return dt == NET_BF16 ? 5e-2 : 1e-2; }

int net_check_logits(net_check_report *rep, const float *got, const float *ref, size_t m, net_dtype dt) {
  net_check_report r = {0, 0, 0, net_check_tolerance(dt), 0, m};
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < m; i++) {
    const double a = got[i], b = ref[i];
    if (!isfinite(a) || !isfinite(b)) {
      r.nonfinite++;
      continue;
    }
    d2 += (a - b) * (a - b);
    r2 += b * b;
    if (fabs(a - b) > r.max_abs) r.max_abs = fabs(a - b);
  }
  r.rel_l2 = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
  r.ref_rms = m ? sqrt(r2 / (double)m) : 0;
  *rep = r;
  return !r.nonfinite && r.rel_l2 <= r.tol;
}

hx_status net_gpu_check(net_check_report *rep, net_gpu *g, const net_params *p, const net_input *in,
                        struct CUstream_st *stream, hx_err *err) {
  if (!rep || !g || !p || !in) return hx_errf(err, HX_EINVAL, "net check: NULL argument");
  net_check_report r = {0, 0, 0, net_check_tolerance(g->dt), 0, 0};
  net_output got = {0}, ref = {0};
  hx_status st = net_gpu_download(g, &got, 0, stream, err);
  if (st == HX_OK)
    st = g->ops->cpu_reference ? g->ops->cpu_reference(g->impl, &ref, p, in, 0, err)
                               : net_forward_cpu(&ref, &g->cfg, p, in, 0, err);
  if (st == HX_OK && (got.n != ref.n || got.classes != ref.classes))
    st = hx_errf(err, HX_ECHECK, "net check %s: GPU logits [%zu, %zu], CPU [%zu, %zu]", g->cfg.name, got.n,
                 got.classes, ref.n, ref.classes);
  if (st == HX_OK && !net_check_logits(&r, got.logits, ref.logits, ref.n * ref.classes, g->dt))
    st = hx_errf(err, HX_ECHECK,
                 "net check %s (%s): relative L2 error %.3g > tolerance %.3g (max |diff| %.3g, reference rms %.3g, "
                 "%zu non-finite of %zu)",
                 g->cfg.name, net_dtype_name(g->dt), r.rel_l2, r.tol, r.max_abs, r.ref_rms, r.nonfinite, r.n);
  *rep = r;
  net_output_free(&got);
  net_output_free(&ref);
  return st;
}
