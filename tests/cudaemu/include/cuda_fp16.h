/* Stand-in for the CUDA header of this name: the CPU emulator (../cudaemu.h). */
#include "../cudaemu.h"
