/*
 * net_gpu_stub.c - the GPU forwards of a CPU-only build: no model has a vtable, so net_gpu_create,
 * net_gpu_bytes and net_gpu_memory return HX_ENODEV ("built without CUDA"); everything else in nets/ works as in a
 * CUDA build.
 */
#include "nets/nets_internal.h"

const net_gpu_ops *net_ptv3_gpu_ops(void) { return NULL; }
const net_gpu_ops *net_flash3d_gpu_ops(void) { return NULL; }
