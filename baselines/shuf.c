/*
 * shuf.c - CPU reference of PTv3's global shuffle around attention (ptv3.md 2.1-2.2): patch padding
 * (pad, unpad, cu_seqlens), the composed slot/point index maps, and the row gather.
 *
 * Invariant of the padding: slots [offp[b], offp[b+1]) belong to cloud b, p_b = ceil(n_b/K)*K if
 * n_b > K else n_b; every slot reads a sorted position of its own cloud; slot unpad[j] reads j back
 * (pad[unpad[j]] == j), and the last K slots of a padded cloud read its last K sorted positions.
 */
#include "baselines/baselines.h"

#include <string.h>

static size_t padded_len(size_t nb, uint32_t K) { return nb > K ? (nb + K - 1) / K * K : nb; }

hx_status shuf_pad_sizes(size_t *sum_p, size_t *n_seqlens, const size_t *offset, uint32_t B, uint32_t K,
                         hx_err *err) {
  if (K == 0) return hx_errf(err, HX_EINVAL, "patch size 0");
  if (B == 0 || offset[0] != 0) return hx_errf(err, HX_EINVAL, "bad offsets (B = %u)", B);
  size_t sp = 0, ns = 0;
  for (uint32_t b = 0; b < B; b++) {
    if (offset[b + 1] < offset[b]) return hx_errf(err, HX_EINVAL, "offsets decrease at cloud %u", b);
    /* bounded before the rounding and the sum: n_b <= 2^31 - 1 and sp <= 2^31 - 1 keep n_b + K - 1 and
     * sp + p below 2^33, where a cloud near SIZE_MAX points would wrap to a tiny padded size */
    const size_t nb = offset[b + 1] - offset[b];
    if (nb > INT32_MAX)
      return hx_errf(err, HX_EINVAL, "cloud %u has %zu points: more than int32 cu_seqlens hold", b, nb);
    const size_t p = padded_len(nb, K);
    sp += p;
    ns += (p + K - 1) / K;
    if (sp > INT32_MAX)
      return hx_errf(err, HX_EINVAL, "%zu padded slots (clouds 0..%u) do not fit int32 cu_seqlens", sp, b);
  }
  *sum_p = sp;
  if (n_seqlens) *n_seqlens = ns + 1;
  return HX_OK;
}

hx_status shuf_padding_cpu(uint32_t *pad, uint32_t *unpad, int32_t *cu_seqlens, const size_t *offset,
                           uint32_t B, uint32_t K, hx_err *err) {
  size_t sum_p;
  HX_TRY(shuf_pad_sizes(&sum_p, NULL, offset, B, K, err));
  size_t offp = 0, ncu = 0;
  for (uint32_t b = 0; b < B; b++) {
    const size_t off = offset[b], nb = offset[b + 1] - offset[b], p = padded_len(nb, K);
    if (unpad)
      for (size_t j = off; j < off + nb; j++) unpad[j] = (uint32_t)(j + offp - off);
    if (pad) {
      for (size_t s = offp; s < offp + p; s++) pad[s] = (uint32_t)(s - offp + off);
      if (p != nb) { /* the last K - r slots re-read the previous patch at the same in-patch offsets */
        const size_t r = nb % K;
        for (size_t s = offp + p - K + r; s < offp + p; s++) pad[s] = (uint32_t)(s - K - offp + off);
      }
    }
    if (cu_seqlens)
      for (size_t s = offp; s < offp + p; s += K) cu_seqlens[ncu++] = (int32_t)s;
    offp += p;
  }
  if (cu_seqlens) cu_seqlens[ncu] = (int32_t)offp;
  return HX_OK;
}

hx_status shuf_compose_cpu(uint32_t *order_p, uint32_t *inverse_p, const uint32_t *order_row,
                           const uint32_t *inverse_row, const uint32_t *pad, const uint32_t *unpad, size_t n,
                           size_t sum_p) {
  if (order_p)
    for (size_t s = 0; s < sum_p; s++) order_p[s] = order_row[pad[s]];
  if (inverse_p)
    for (size_t i = 0; i < n; i++) inverse_p[i] = unpad[inverse_row[i]];
  return HX_OK;
}

const char *shuf_dtype_name(shuf_dtype t) { return t == SHUF_BF16 ? "bf16" : "fp16"; }

hx_status shuf_gather_cpu(void *out, const void *in, const uint32_t *idx, size_t rows, size_t width,
                          shuf_dtype dt) {
  (void)dt; /* both dtypes are 2-byte bit patterns here */
  const size_t rb = width * 2;
  for (size_t r = 0; r < rows; r++)
    memcpy((char *)out + r * rb, (const char *)in + (size_t)idx[r] * rb, rb);
  return HX_OK;
}
