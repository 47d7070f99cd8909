/*
 * baselines.h - the one public header of the baselines folder: faithful C/CUDA reimplementations of
 * PTv3's serialization (sfc_), global shuffle around attention (shuf_) and serialized pooling (spool_).
 */
#ifndef F3D_BASELINES_H
#define F3D_BASELINES_H

#include "harness/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* F3D_BASELINES_H */
