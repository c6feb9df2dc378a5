/* Data-movement kernels of the cpu_c backend: copies and casts, fills, cat, flip, gather/scatter, indexing. */
#include "movement.h"
