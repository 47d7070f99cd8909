/* status.c - status names and error reports (see base.h). */
#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *hx_status_str(hx_status s) {
  static const char *const names[] = {
      [HX_OK] = "ok",
      [HX_EINVAL] = "invalid argument",
      [HX_EIO] = "I/O error",
      [HX_EFORMAT] = "malformed input",
      [HX_ENOMEM] = "out of host memory",
      [HX_ECUDA] = "CUDA error",
      [HX_ENODEV] = "no CUDA device",
      [HX_EUNSUPPORTED] = "unsupported",
      [HX_ECHECK] = "check against reference failed",
  };
  if ((unsigned)s < sizeof names / sizeof names[0] && names[s]) return names[s];
  return "unknown status";
}

int hx_parse_dec_u64(const char *s, uint64_t max, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    const uint64_t d = (uint64_t)(*s - '0');
    if (d > max || v > (max - d) / 10) return -1; /* 10 v + d > max, without wrapping */
    v = 10 * v + d;
  }
  *out = v;
  return 0;
}

void hx_str_printable(char *dst, size_t cap, const char *src) {
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)src; *p;) {
    const unsigned c = *p;
    size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    int ok = len > 0 && (c >= 0x80 || (c >= 0x20 && c != 0x7f));
    for (size_t i = 1; ok && i < len; i++) ok = (p[i] & 0xc0) == 0x80;
    const int c1 = ok && c == 0xc2 && p[1] <= 0x9f; /* a C1 control, shown by its code point */
    if (ok && !c1) {
      if (k + len >= cap) break; /* a character goes whole or not at all */
      for (size_t i = 0; i < len; i++) dst[k++] = (char)p[i];
      p += len;
    } else {
      if (k + 4 >= cap) break;
      snprintf(dst + k, 5, "\\x%02x", c1 ? p[1] : c);
      k += 4;
      p += c1 ? 2 : 1;
    }
  }
  dst[k] = '\0';
}

hx_status hx_errf(hx_err *err, hx_status status, const char *fmt, ...) {
  if (err) {
    char raw[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    err->status = status;
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    hx_str_printable(err->msg, sizeof err->msg, raw);
  }
  return status;
}

hx_status hx_trace(hx_status s, const char *file, int line, const char *expr) {
  /* for developers only: a user's first line of stderr must be the cause (the caller's message), not
   * the path an error took through the library */
  const char *on = getenv("F3D_TRACE");
  if (on && *on && strcmp(on, "0") != 0) fprintf(stderr, "%s:%d: %s: %s\n", file, line, expr, hx_status_str(s));
  return s;
}
