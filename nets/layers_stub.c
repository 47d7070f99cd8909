/* layers_stub.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_nets_stub_c;
