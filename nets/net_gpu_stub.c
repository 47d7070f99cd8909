/* net_gpu_stub.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_net_gpu_stub_c;
