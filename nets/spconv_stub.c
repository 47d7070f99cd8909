/* spconv_stub.c: placeholder, filled in by its owner. */
#include "nets/nets.h"
typedef int nets_placeholder_spconv_stub_c;
