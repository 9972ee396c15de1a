/* Device lifetime and, in builds without CUDA, the CUDA entry points that say so. */
#include "backends/device.h"
#include "standin.h"

void hr_dev_close(hr_dev *d) {
    if (d && d->ops && d->ops->free) d->ops->free(d);
}

#ifndef HEARTH_HAVE_CUDA
#define NO_CUDA "this build has no CUDA backend (nvcc was not found when it was built)"
hr_dev *hr_dev_cuda_open(int index, hr_err *e) {
    (void)index;
    hr_errf(e, NO_CUDA);
    return NULL;
}

int hr_dev_cuda_count(hr_err *e) {
    hr_errf(e, NO_CUDA);
    return 0;
}

int hr_dev_cuda_describe(int index, hr_dev_desc *out, hr_err *e) {
    (void)index, (void)out;
    return hr_errf(e, NO_CUDA);
}
#endif

bool hr_dev_cuda_built(void) {
#ifdef HEARTH_HAVE_CUDA
    return true;
#else
    return false;
#endif
}
