/*
 * test_net_util.h - what the model tests (test_net_ptv3.c, test_net_flash3d.c) share: a state_dict written as
 * PyTorch would hold it, the model's parameters plus the entries no forward reads (BatchNorm's
 * num_batches_tracked beside every running_mean; with te, TransformerEngine's _extra_state for every module of a
 * block), and the check that loading it ignores exactly those entries and gives the forward of the saved
 * parameters. Include after <cmocka.h> and nets/nets_internal.h.
 */
#ifndef F3D_TEST_NET_UTIL_H
#define F3D_TEST_NET_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nets/nets_internal.h"

/* Write p and its state_dict's unread entries to path through stf_write; returns how many unread entries. */
static inline size_t tnet_save_state_dict(const net_params *p, const char *path, int te) {
  stf_tensor *t = calloc(2 * p->n + 1, sizeof *t);
  assert_non_null(t);
  float extra[4] = {1000.0f, 2.0f, 3.0f, 4.0f};
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++) {
    snprintf(t[k].name, sizeof t[k].name, "%s", p->t[i].name);
    t[k].ndim = p->t[i].ndim;
    for (int d = 0; d < p->t[i].ndim; d++) t[k].shape[d] = p->t[i].shape[d];
    t[k++].data = p->t[i].data;
  }
  size_t extras = 0;
  for (size_t i = 0; i < p->n; i++) {
    const char *name = p->t[i].name, *dot = strrchr(name, '.');
    assert_non_null(dot);
    const int mod = (int)(dot - name);
    const char *leaf = dot + 1;
    const char *suffix = NULL;
    if (strcmp(leaf, "running_mean") == 0) suffix = "num_batches_tracked"; /* an I64 scalar in PyTorch */
    else if (te && strstr(name, "_blocks.") && (strcmp(leaf, "weight") == 0 || strcmp(leaf, "layer_norm_weight") == 0))
      suffix = "_extra_state"; /* a U8 blob in TransformerEngine */
    if (!suffix) continue;
    assert_true(snprintf(t[k].name, sizeof t[k].name, "%.*s.%s", mod, name, suffix) < (int)sizeof t[k].name);
    t[k].ndim = suffix[0] == '_' ? 1 : 0, t[k].shape[0] = 4;
    t[k++].data = extra;
    extras++;
  }
  hx_err err = {HX_OK, ""};
  const hx_status st = stf_write(path, t, k, &err);
  if (st != HX_OK) fail_msg("%s", err.msg);
  free(t);
  return extras;
}

/* p saved as a state_dict (tnet_save_state_dict) and loaded into a parameter set of other values (seed 99):
 * exactly the unread entries are ignored, at least min_extras of them, and the forward on in equals p's bit for
 * bit (where the other values' forward differs). */
static inline void tnet_state_dict_roundtrip(const net_config *cfg, const net_params *p, const net_input *in, int te,
                                             size_t min_extras) {
  char dir[] = "/tmp/net-test-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/w.safetensors", dir);
  const size_t extras = tnet_save_state_dict(p, path, te);
  assert_true(extras >= min_extras);
  net_params q = {0};
  hx_err err = {HX_OK, ""};
  assert_int_equal(net_params_init(&q, cfg, 99, &err), HX_OK);
  net_output a, b;
  assert_int_equal(net_forward_cpu(&a, cfg, p, in, 0, &err), HX_OK);
  assert_int_equal(net_forward_cpu(&b, cfg, &q, in, 0, &err), HX_OK);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&b);
  size_t ignored = 0;
  const hx_status st = net_params_load(&q, path, &ignored, &err);
  if (st != HX_OK) fail_msg("%s", err.msg);
  printf("%s: state_dict of %zu parameter tensors + %zu unread entries: %zu ignored\n", cfg->name, q.n, extras,
         ignored);
  assert_int_equal(ignored, extras);
  assert_int_equal(net_forward_cpu(&b, cfg, &q, in, 0, &err), HX_OK);
  assert_memory_equal(a.logits, b.logits, a.n * a.classes * sizeof(float));
  net_output_free(&a), net_output_free(&b);
  net_params_free(&q);
  unlink(path);
  rmdir(dir);
}

#endif /* F3D_TEST_NET_UTIL_H */
