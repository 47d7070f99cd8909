/*
 * net_check.c - the whole-network check: a GPU forward's logits against the fp32 CPU forward on the same
 * structure (net_gpu_check in nets.h).
 *
 * Tolerance (relative L2 of the logits). Both forwards compute the same function; the GPU rounds every
 * activation to the dtype between layers (unit roundoff u = 2^-11 for fp16, 2^-8 for bf16) and accumulates in
 * fp32. Over a network of L ~ 20-60 layers whose LayerNorms renormalise each block, the rounding errors add
 * roughly as a random walk: relative error ~ c * u * sqrt(L) with c of a few units, i.e. ~1e-2 for fp16 and
 * ~8e-2 for bf16. The stated tolerances are 3e-2 (fp16) and 1.5e-1 (bf16), about 3x and 2x those estimates;
 * a wrong layer (a transposed weight, a missing residual, a shifted patch) gives relative errors of order 1.
 */
#include <math.h>
#include <stdlib.h>

#include "nets/nets_internal.h"

double net_check_tolerance(net_dtype dt) { return dt == NET_BF16 ? 1.5e-1 : 3e-2; }

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
  if (st == HX_OK) {
    double d2 = 0, r2 = 0;
    const size_t m = ref.n * ref.classes;
    for (size_t i = 0; i < m; i++) {
      const double a = got.logits[i], b = ref.logits[i];
      if (!isfinite(a) || !isfinite(b)) {
        r.nonfinite++;
        continue;
      }
      d2 += (a - b) * (a - b);
      r2 += b * b;
      if (fabs(a - b) > r.max_abs) r.max_abs = fabs(a - b);
    }
    r.n = m;
    r.rel_l2 = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
    r.ref_rms = m ? sqrt(r2 / (double)m) : 0;
    if (r.nonfinite || !(r.rel_l2 <= r.tol))
      st = hx_errf(err, HX_ECHECK,
                   "net check %s (%s): relative L2 error %.3g > tolerance %.3g (max |diff| %.3g, reference rms %.3g, "
                   "%zu non-finite of %zu)",
                   g->cfg.name, net_dtype_name(g->dt), r.rel_l2, r.tol, r.max_abs, r.ref_rms, r.nonfinite, m);
  }
  *rep = r;
  net_output_free(&got);
  net_output_free(&ref);
  return st;
}
