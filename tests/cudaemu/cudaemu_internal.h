/* Internal to the emulator: what the stream workers (cudaemu_runtime.cpp) hand to the
 * kernel executor (cudaemu_exec.cpp). */
#ifndef HR_CUDAEMU_INTERNAL_H
#define HR_CUDAEMU_INTERNAL_H
#include "cudaemu.h"

/* Runs the threads of one host thread's kernels; one per stream worker. */
struct hr_emu_exec;
struct hr_emu_exec *hr_emu_exec_new(void);
void hr_emu_exec_free(struct hr_emu_exec *x);

/* Runs every block of a launch on the calling thread. 0, or -1 with a message in
 * msg (a misuse the hardware would not forgive: the kernel stopped there). */
int hr_emu_exec_kernel(struct hr_emu_exec *x, dim3 grid, dim3 block, size_t shm, hr_emu_invoke_fn fn, const void *call,
                       char *msg, size_t msg_n);
#endif
