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

void hx_str_printable(char *dst, size_t cap, const char *src) {
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
    const int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
    if (*p < 0x20 || *p == 0x7f || c1) {
      const unsigned ch = c1 ? p[1] : *p;
      if (k + 4 >= cap) break;
      snprintf(dst + k, 5, "\\x%02x", ch);
      k += 4;
      p += c1;
    } else {
      if (k + 1 >= cap) break;
      dst[k++] = (char)*p;
    }
  }
  size_t j = k; /* a last character cut short (here or by the caller's buffer) goes whole */
  while (j > 0 && ((unsigned char)dst[j - 1] & 0xc0) == 0x80) j--;
  if (j > 0) {
    const unsigned char lead = (unsigned char)dst[j - 1];
    const size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (k - (j - 1) < need) k = j - 1;
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
