/*
 * attn_plans.c - scope plans over a PSH result, for the flash3d pipeline's attention stage.
 *
 * Layout choice: the packed layout psh_out already holds (bucket_start = exclusive scan of the counts,
 * so the rows are exactly the n points, no padding). The kernel masks keys and skips queries by each
 * bucket's count, so partial and empty buckets need no padding rows; the padded layout (psh_pad_cpu)
 * would only add nclouds * nb * S - n dead rows to allocate and to skip.
 * Invariant: cloud c owns buckets [c * nb, (c + 1) * nb), so the plans' scopes never mix clouds.
 */
#include <stdlib.h>

#include "app/pipe_attn.h"

const char *f3d_attn_plan_kernel(int which) {
  static const char *const names[F3D_ATTN_NPLANS] = {"attn.plain", "attn.swin4", "attn.stride2"};
  return which >= 0 && which < F3D_ATTN_NPLANS ? names[which] : "attn.?";
}

hx_status f3d_attn_psh_plans(battn_plan plans[F3D_ATTN_NPLANS], const uint32_t *bucket_start,
                             const uint32_t *bucket_count, uint32_t nclouds, uint32_t nb, hx_err *err) {
  for (int i = 0; i < F3D_ATTN_NPLANS; i++) plans[i] = (battn_plan){0, 0, 0, NULL, NULL, NULL, 0, 0};
  if (nb == 0 || (uint64_t)nclouds * nb > UINT32_MAX / 2)
    return hx_errf(err, HX_EINVAL, "attention plans: %u clouds x %u buckets", nclouds, nb);
  uint32_t *cloud_buckets = malloc(((size_t)nclouds + 1) * sizeof *cloud_buckets);
  if (!cloud_buckets) return hx_errf(err, HX_ENOMEM, "attention plans: no memory");
  for (uint32_t c = 0; c <= nclouds; c++) cloud_buckets[c] = c * nb;
  static const battn_plan_kind kinds[F3D_ATTN_NPLANS] = {BATTN_PLAN_PLAIN, BATTN_PLAN_SWIN, BATTN_PLAN_STRIDE};
  static const uint32_t arg[F3D_ATTN_NPLANS] = {0, F3D_ATTN_SWIN_SHIFT, F3D_ATTN_STRIDE};
  hx_status st = HX_OK;
  for (int i = 0; i < F3D_ATTN_NPLANS && st == HX_OK; i++)
    st = battn_plan_build(&plans[i], kinds[i], arg[i], F3D_ATTN_SCOPE_BUCKETS, bucket_start, bucket_count,
                          cloud_buckets, nclouds, err);
  free(cloud_buckets);
  if (st != HX_OK)
    for (int i = 0; i < F3D_ATTN_NPLANS; i++) battn_plan_free(&plans[i]);
  return st;
}
