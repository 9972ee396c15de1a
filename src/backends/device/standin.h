/* The CPU stand-in device (hr_dev_standin_open in backends/device.h): its constants.
 * Its element-wise operations are the CPU backend's (backends/cpu/ops.h), the same
 * functions the engine's CPU path calls. */
#ifndef HR_STANDIN_H
#define HR_STANDIN_H
#include <stdbool.h>
#include <stdint.h>

/* Bytes the stand-in reports as its own overhead beyond the arena (a CUDA context and
 * library workspaces are of this order, scaled down so tests can use small budgets). */
#define HR_STANDIN_OVERHEAD (64u * 1024u)

/* True when this build has the CUDA backend compiled in. */
bool hr_dev_cuda_built(void);
#endif
