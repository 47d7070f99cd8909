/*
 * attn_stub.c - the bucket-swin attention variant table of a CPU-only build: attn.cu's table expanded from the
 * same list (variants_internal.h), each entry returning HX_ENODEV, so the CLI and tests can list and skip them.
 */
#include "kernels/kernels.h"
#include "kernels/variants_internal.h"

static hx_status no_gpu(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                        hx_err *err) {
  (void)p, (void)d_scratch, (void)stream;
  if (scratch_bytes) *scratch_bytes = 0;
  return hx_errf(err, HX_ENODEV, "attention: this build has no CUDA");
}

/* the CUDA build's variants (the one list, variants_internal.h), each returning HX_ENODEV here */
#define BATTN_ROW(id, name, summary, fn) {id, name, summary, no_gpu},
static const battn_variant battn_table[] = {BATTN_VARIANT_LIST(BATTN_ROW)};
#undef BATTN_ROW

const battn_variant *battn_variants(size_t *count) {
  if (count) *count = sizeof battn_table / sizeof battn_table[0];
  return battn_table;
}
