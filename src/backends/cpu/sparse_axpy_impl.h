/* Internal to the CPU backend: the compiled-in axpy tables (NULL where an ISA is not
 * compiled in); hr_axpy_* in sparse.c add the CPU check. */
#ifndef HR_SPARSE_AXPY_IMPL_H
#define HR_SPARSE_AXPY_IMPL_H
#include "sparse.h"

const hr_axpy_kernels *hr_axpy_table_scalar(void);
const hr_axpy_kernels *hr_axpy_table_avx2(void);
const hr_axpy_kernels *hr_axpy_table_avx512(void);
#endif
