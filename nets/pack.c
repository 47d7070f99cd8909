/*
 * pack.c - the dense weights of both GPU forwards in one device block (nets_internal.h's net_pack): each forward
 * walks its layers twice with the same calls, a sizing pass (host = dev = NULL) that only lays the pieces out and
 * a filling pass that writes them into a host staging copy of the block, uploaded with one copy. Invariant: both
 * passes take the same offsets (net_pack_take is the only thing that moves `used`), so the views the sizing pass
 * could not point anywhere point into the block after the filling pass. Pieces are 256-byte aligned. Linear
 * weights and biases go in the activation dtype, norm affines in fp32.
 */
#include <math.h>

#include "nets/nets_internal.h"

size_t net_pack_take(net_pack *k, size_t bytes) {
  const size_t o = k->used;
  k->used += hx_align256(bytes);
  return o;
}

void net_pack_lin(net_pack *k, net_dlin *l, const net_lin *h, size_t in, size_t in_pad, size_t out,
                  const net_norm *bn, float bn_eps) {
  const size_t ow = net_pack_take(k, in_pad * out * 2), ob = net_pack_take(k, out * 2);
  l->in = in_pad, l->out = out;
  l->w = k->dev ? k->dev + ow : NULL;
  l->b = k->dev ? k->dev + ob : NULL;
  if (!k->host || !h) return;
  uint16_t *w = (uint16_t *)(void *)(k->host + ow), *b = (uint16_t *)(void *)(k->host + ob);
  for (size_t o = 0; o < out; o++) {
    if (!bn) { /* copied as it is */
      for (size_t i = 0; i < in_pad; i++) w[o * in_pad + i] = net_from_float(k->dt, i < in ? h->w[o * in + i] : 0.0f);
      b[o] = net_from_float(k->dt, h->b[o]);
      continue;
    }
    const float s = bn->w[o] / sqrtf(bn->var[o] + bn_eps), t = bn->b[o] - bn->mean[o] * s;
    for (size_t i = 0; i < in_pad; i++) w[o * in_pad + i] = net_from_float(k->dt, i < in ? s * h->w[o * in + i] : 0.0f);
    b[o] = net_from_float(k->dt, s * h->b[o] + t);
  }
}

void net_pack_ln(net_pack *k, net_dln *l, const net_norm *h, size_t C) {
  const size_t og = net_pack_take(k, C * 4), ob = net_pack_take(k, C * 4);
  l->C = C;
  l->g = k->dev ? (float *)(void *)(k->dev + og) : NULL;
  l->b = k->dev ? (float *)(void *)(k->dev + ob) : NULL;
  if (!k->host || !h) return;
  memcpy(k->host + og, h->w, C * sizeof(float));
  memcpy(k->host + ob, h->b, C * sizeof(float));
}

void net_pack_bn(net_pack *k, net_daff *a, const net_norm *h, size_t C, float eps) {
  const size_t os = net_pack_take(k, C * 4), oh = net_pack_take(k, C * 4);
  a->C = C;
  a->scale = k->dev ? (float *)(void *)(k->dev + os) : NULL;
  a->shift = k->dev ? (float *)(void *)(k->dev + oh) : NULL;
  if (!k->host || !h) return;
  nl_bn_fold((float *)(void *)(k->host + os), (float *)(void *)(k->host + oh), h->w, h->b, h->mean, h->var, C, eps);
}
