/* net_ptv3_gpu.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_net_ptv3_gpu_c;
