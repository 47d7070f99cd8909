/* net_flash3d_gpu.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_net_flash3d_gpu_c;
