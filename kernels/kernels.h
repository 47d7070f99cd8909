/*
 * kernels.h - the one public header of the kernels folder: Flash3D's PSH bucketing (psh_), bucket-swin
 * attention (battn_) and in-bucket pooling (bpool_). Plain C; GPU entry points take device pointers
 * (d_ prefix), return hx_status, take the stream last, and report scratch sizes when given NULL scratch.
 */
#ifndef F3D_KERNELS_H
#define F3D_KERNELS_H

#include "harness/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== bucket-swin attention (battn_) ============================================================== */

/* ==== PSH bucketing (psh_) and in-bucket pooling (bpool_) ========================================== */

#ifdef __cplusplus
}
#endif
#endif /* F3D_KERNELS_H */
