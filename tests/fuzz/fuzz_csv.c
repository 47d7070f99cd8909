/*
 * fuzz_csv.c - libFuzzer target for hx_csv_read (harness/results.c), the RFC 4180 record splitter under every
 * results reader (hx_run_load for compare, plot and merge; the sweep's resume).
 *
 * Input: byte 0 picks the record buffer size (bit 7 set: the 64 KiB readers use, else 1..128 bytes, so the
 * "record too long" paths are reached), byte 1 the field capacity (1..16); the rest is the CSV stream, read
 * record by record until end of file or the first error. Checked on every record besides the sanitizers:
 * 1 <= count <= cap, the fields are NUL-terminated strings inside the buffer in order (field i + 1 starts
 * after field i's terminator), and a failure carries a message.
 */
#include "fuzz_util.h"
#include "harness/harness.h"

#define FZ_BIG_LINE 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0; /* fmemopen wants at least one byte of stream */
  const size_t buf_size = (data[0] & 0x80) ? FZ_BIG_LINE : 1u + (size_t)(data[0] % 128u);
  const size_t cap = 1u + (size_t)(data[1] % 16u);
  char *copy = malloc(size - 2);
  char *buf = malloc(buf_size);
  if (!copy || !buf) abort();
  memcpy(copy, data + 2, size - 2);
  FILE *f = fmemopen(copy, size - 2, "rb");
  if (!f) abort();
  char *fields[16];
  for (size_t rec = 0;; rec++) {
    FZ_CHECK(rec <= size); /* every successful call consumes at least one byte */
    size_t count = 99;
    hx_err err = {HX_OK, ""};
    hx_status st = hx_csv_read(f, buf, buf_size, fields, cap, &count, &err);
    fz_check_status(st, &err);
    if (st != HX_OK) {
      FZ_CHECK(st == HX_EIO || st == HX_EFORMAT);
      break;
    }
    FZ_CHECK(count >= 1 && count <= cap);
    FZ_CHECK(fields[0] == buf);
    for (size_t i = 0; i < count; i++) {
      FZ_CHECK(fields[i] >= buf && fields[i] < buf + buf_size);
      const char *nul = memchr(fields[i], '\0', buf_size - (size_t)(fields[i] - buf));
      FZ_CHECK(nul != NULL);
      if (i + 1 < count) FZ_CHECK(fields[i + 1] > nul); /* == nul + 1 unless the field held a NUL byte */
    }
  }
  fclose(f);
  free(buf);
  free(copy);
  return 0;
}
