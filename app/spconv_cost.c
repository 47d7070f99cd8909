/*
 * spconv_cost.c - the CPU arithmetic of the sparse-convolution stage (pipe_spconv.h states the formulas): the
 * roofline's FLOPs and bytes of one convolution on a host kernel map, and the sub-problem of sampled output rows
 * that the stage checks against spc_conv_cpu.
 *
 * Distinct input rows per tile: spc_tile_halos_cpu (nets), summed over the tiles.
 */
#include "app/pipe_spconv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


hx_status f3d_spc_cost_count(f3d_spc_cost *c, const int32_t *nbr, uint32_t n, uint32_t K, size_t in, size_t out,
                             uint32_t tile, hx_err *err) {
  memset(c, 0, sizeof *c);
  if (K == 0 || tile == 0 || in == 0 || out == 0)
    return hx_errf(err, HX_EINVAL, "spconv cost: K = %u, tile = %u, %zu -> %zu channels (all must be > 0)", K, tile,
                   in, out);
  if (n > 0 && !nbr) return hx_errf(err, HX_EINVAL, "spconv cost: NULL map of %u rows", n);
  const size_t entries = (size_t)n * K;
  uint64_t pairs = 0, reads = 0;
  for (size_t e = 0; e < entries; e++) {
    if (nbr[e] < -1 || (nbr[e] >= 0 && (uint32_t)nbr[e] >= n))
      return hx_errf(err, HX_EINVAL, "spconv cost: map entry (%zu, %zu) = %d outside [-1, %u)", e / K, e % K,
                     (int)nbr[e], n);
    pairs += nbr[e] >= 0;
  }
  const size_t tiles = ((size_t)n + tile - 1) / tile;
  uint32_t *halo = malloc((tiles ? tiles : 1) * sizeof *halo);
  if (!halo) return hx_errf(err, HX_ENOMEM, "spconv cost: %zu tiles", tiles);
  const spc_map m = {.n = n, .K = K, .nbr = (int32_t *)nbr};
  const hx_status st = spc_tile_halos_cpu(halo, &m, NULL, tile, err);
  for (size_t t = 0; st == HX_OK && t < tiles; t++) reads += halo[t];
  free(halo);
  HX_TRY(st);
  const double dn = (double)n, dk = (double)K, di = (double)in, dout = (double)out;
  c->pairs = (double)pairs;
  c->flops = 2.0 * c->pairs * di * dout;
  c->x_reads = (double)reads;
  c->halo = n ? c->x_reads / dn : 0.0;
  c->map_bytes = dn * dk * 4.0;
  c->bytes = c->x_reads * di * 2.0 + dn * dout * 2.0 + c->map_bytes + dk * di * dout * 2.0 + dout * 4.0;
  c->tile = tile;
  return HX_OK;
}

double f3d_spc_roofline_ms(double flops, double bytes, double tflops, double gbs, const char **bound) {
  if (bound) *bound = "";
  if (!(isfinite(tflops) && tflops > 0.0 && isfinite(gbs) && gbs > 0.0 && isfinite(flops) && flops >= 0.0 &&
        isfinite(bytes) && bytes >= 0.0))
    return NAN;
  const double tf = flops / (tflops * 1e12) * 1e3, tb = bytes / (gbs * 1e9) * 1e3;
  if (bound) *bound = tf >= tb ? "FLOPs" : "bytes";
  return tf >= tb ? tf : tb;
}

void f3d_spc_sample_free(f3d_spc_sample *s) {
  if (!s) return;
  free(s->m.nbr);
  free(s->src);
  memset(s, 0, sizeof *s);
}

hx_status f3d_spc_sample_map(f3d_spc_sample *s, const int32_t *nbr, uint32_t n, uint32_t k, const uint32_t *sel,
                             uint32_t S, hx_err *err) {
  memset(s, 0, sizeof *s);
  if (k != 3u && k != 5u) return hx_errf(err, HX_EINVAL, "spconv sample: kernel side %u (3 or 5 only)", k);
  if (S == 0 || !sel || !nbr) return hx_errf(err, HX_EINVAL, "spconv sample: no rows sampled, or a NULL map");
  const uint32_t K = k * k * k;
  for (uint32_t i = 0; i < S; i++) {
    if (sel[i] >= n) return hx_errf(err, HX_EINVAL, "spconv sample: sampled row %u outside %u rows", sel[i], n);
    for (uint32_t o = 0; o < K; o++) {
      const int32_t j = nbr[(size_t)sel[i] * K + o];
      if (j < -1 || (j >= 0 && (uint32_t)j >= n))
        return hx_errf(err, HX_EINVAL, "spconv sample: map entry (%u, %u) = %d outside [-1, %u)", sel[i], o, (int)j, n);
    }
  }
  /* at most S outputs + min(n, S K) distinct inputs */
  const size_t cap = (size_t)S + ((size_t)S * K < n ? (size_t)S * K : n);
  if (cap > UINT32_MAX) return hx_errf(err, HX_EINVAL, "spconv sample: %u rows sampled is too many", S);
  int32_t *pos = malloc((size_t)n * sizeof *pos);
  s->m.nbr = malloc(cap * K * sizeof *s->m.nbr);
  s->src = malloc(cap * sizeof *s->src);
  if (!pos || !s->m.nbr || !s->src) {
    free(pos);
    f3d_spc_sample_free(s);
    return hx_errf(err, HX_ENOMEM, "spconv sample: %zu rows", cap);
  }
  memset(pos, 0xFF, (size_t)n * sizeof *pos); /* -1: not yet a row of the sub-problem */
  uint32_t rows = S;
  for (uint32_t i = 0; i < S; i++) {
    s->src[i] = UINT32_MAX;
    for (uint32_t o = 0; o < K; o++) {
      const int32_t j = nbr[(size_t)sel[i] * K + o];
      int32_t q = -1;
      if (j >= 0) {
        if (pos[j] < 0) pos[j] = (int32_t)rows, s->src[rows++] = (uint32_t)j;
        q = pos[j];
        s->m.opairs[o]++;
        s->m.pairs++;
      }
      s->m.nbr[(size_t)i * K + o] = q;
    }
  }
  for (size_t e = (size_t)S * K; e < (size_t)rows * K; e++) s->m.nbr[e] = -1;
  free(pos);
  s->m.n = rows, s->m.k = k, s->m.K = K, s->m.rule = NULL;
  s->S = S;
  return HX_OK;
}
