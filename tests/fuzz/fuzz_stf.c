/*
 * fuzz_stf.c - libFuzzer target for the safetensors reader (stf_read, nets/safetensors.c) that loads network
 * weights. The input is written to a file and read back. Checked besides the sanitizers: a failure leaves
 * the output empty; a success gives tensors with distinct NUL-terminated names of 1..127 bytes, 0..8
 * non-negative dimensions whose product fits the file, and data that ASan lets us read in full.
 */
#include "fuzz_util.h"
#include "nets/nets.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[1024];
  fz_put(path, sizeof path, "w.safetensors", data, size);
  stf_file f;
  hx_err err = {HX_OK, ""};
  hx_status st = stf_read(&f, path, &err);
  fz_check_status(st, &err);
  if (st != HX_OK) {
    FZ_CHECK(f.t == NULL && f.n == 0);
    return 0;
  }
  volatile float sink = 0.0f;
  for (size_t i = 0; i < f.n; i++) {
    const stf_tensor *t = &f.t[i];
    size_t nl = strnlen(t->name, sizeof t->name);
    FZ_CHECK(nl >= 1 && nl < sizeof t->name);
    FZ_CHECK(t->ndim >= 0 && t->ndim <= 8);
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
      FZ_CHECK(t->shape[d] >= 0);
      numel *= (size_t)t->shape[d]; /* bounded by the file size: stf_read checked the product */
    }
    FZ_CHECK(t->data != NULL);
    FZ_CHECK(numel <= size / 2); /* the narrowest dtype (F16, BF16) takes 2 bytes of the file per value */
    for (size_t j = 0; j < i; j++) FZ_CHECK(strcmp(f.t[j].name, t->name) != 0);
    for (size_t k = 0; k < numel; k++) sink += t->data[k];
  }
  (void)sink;
  stf_free(&f);
  return 0;
}
