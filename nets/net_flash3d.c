/* net_flash3d.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_net_flash3d_c;
