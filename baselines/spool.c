/*
 * spool.c - CPU reference of PTv3's SerializedPooling with stride 2 (ptv3.md section 3).
 *
 * Clusters are the distinct values of code[0] >> 3 in ascending order (torch.unique(sorted=True)); the
 * children of cluster k are the points with that value, head = the smallest child index. The pooled cloud
 * is not re-encoded: code'[r][k] = code[perm[r]][head_k] >> 3 (which equals encoding grid >> 1 at depth-1
 * with the batch bits moved down), then each row is argsorted again. Features: segment max; coordinates:
 * segment mean (accumulated in double); grid = grid[head] >> 1; batch = batch[head].
 */
#include "baselines/baselines.h"
#include "baselines/sfc_internal.h"

#include <float.h>
#include <stdlib.h>

hx_status spool_cpu(spool_out *out, const spool_in *in, hx_err *err) {
  const size_t n = in->n, C = in->C;
  if (n == 0) return hx_errf(err, HX_EINVAL, "pooling an empty cloud");
  if (in->depth < 1) return hx_errf(err, HX_EINVAL, "pooling at depth %d: nothing to pool", in->depth);
  if (in->R < 1 || in->R > SFC_MAX_ORDERS) return hx_errf(err, HX_EINVAL, "%d rows, want 1..4", in->R);
  for (int r = 0; r < in->R; r++)
    if (in->perm[r] < 0 || in->perm[r] >= in->R) return hx_errf(err, HX_EINVAL, "bad row permutation");
  sfc_key_idx *t = malloc(n * sizeof *t);
  if (!t) return hx_errf(err, HX_ENOMEM, "pooling: %zu keys", n);
  for (size_t i = 0; i < n; i++) t[i] = (sfc_key_idx){in->code[i] >> 3, (uint32_t)i};
  qsort(t, n, sizeof *t, sfc_key_idx_cmp); /* ties by index: the first child of a run is the smallest */
  size_t k = 0;
  for (size_t j = 0; j < n; j++) {
    if (j == 0 || t[j].key != t[j - 1].key) {
      out->idx_ptr[k] = (uint32_t)j;
      out->head[k] = t[j].idx;
      k++;
    }
    out->cluster[t[j].idx] = (uint32_t)(k - 1);
  }
  out->idx_ptr[k] = (uint32_t)n;
  const size_t m = k;
  out->n_out = m;
  out->depth = in->depth - 1;
  for (size_t c = 0; c < m; c++) {
    const uint32_t h = out->head[c];
    const size_t j0 = out->idx_ptr[c], j1 = out->idx_ptr[c + 1];
    for (size_t f = 0; f < C; f++) {
      float mx = -FLT_MAX;
      for (size_t j = j0; j < j1; j++) {
        const float v = in->feat[(size_t)t[j].idx * C + f];
        if (v > mx) mx = v;
      }
      out->feat[c * C + f] = mx;
    }
    for (int a = 0; a < 3; a++) {
      double s = 0.0;
      for (size_t j = j0; j < j1; j++) s += (double)in->coord[(size_t)t[j].idx * 3 + (size_t)a];
      out->coord[c * 3 + (size_t)a] = (float)(s / (double)(j1 - j0));
      out->grid[c * 3 + (size_t)a] = in->grid[(size_t)h * 3 + (size_t)a] >> 1;
    }
    out->batch[c] = in->batch[h];
    for (int r = 0; r < in->R; r++) out->code[(size_t)r * m + c] = in->code[(size_t)in->perm[r] * n + h] >> 3;
  }
  free(t);
  return sfc_sort_cpu(out->order, out->inverse, out->code, m, in->R, err);
}
