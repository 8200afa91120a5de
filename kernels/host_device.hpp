// Marks the small inline rule functions that the CPU and CUDA backends share, so that both
// compile the very same expressions (same constants, same order of float operations).
#pragma once

#if defined(__CUDACC__)
#define HAZEFREE_HD __host__ __device__
#else
#define HAZEFREE_HD
#endif
