/* Data-movement kernels of the cpu_c backend (declarations cffi reads: plain C, no macros). */
