/* status.c - status names and error reports (see base.h). */
#include "base/base.h"

#include <stdarg.h>
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

hx_status hx_errf(hx_err *err, hx_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->status = status;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
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
