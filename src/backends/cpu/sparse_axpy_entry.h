/* The axpy kernels' entry points, shared by the SIMD files: each defines AXPY_T1 and AXPY_TN
 * (one token / a batch, over R rows) for its ISA, then instantiates AXPY_FUNCS per type. */
#ifndef HR_SPARSE_AXPY_ENTRY_H
#define HR_SPARSE_AXPY_ENTRY_H

/* Entry point: four non-zero rows of one token in one pass; otherwise row by row. */
#define AXPY_DISPATCH(NAME)                                                                         \
    static void axpy_##NAME(int64_t n, int n_rows, const void *const *w, const void *const *next,   \
                            const float *a, int64_t n_tok, float *y, size_t ys) {                   \
        if (n_tok == 1) {                                                                           \
            if (n_rows == 4 && a[0] != 0.0f && a[1] != 0.0f && a[2] != 0.0f && a[3] != 0.0f)        \
                t1_4_##NAME(n, w, next, a, y);                                                      \
            else                                                                                    \
                for (int r = 0; r < n_rows; r++)                                                    \
                    if (a[r] != 0.0f)                                                               \
                        t1_1_##NAME(n, w + r, next ? next + r : NULL, a + r, y);                    \
        } else if (n_rows == 4) {                                                                   \
            tn_4_##NAME(n, w, next, a, n_tok, y, ys);                                               \
        } else {                                                                                    \
            for (int r = 0; r < n_rows; r++)                                                        \
                tn_1_##NAME(n, w + r, next ? next + r : NULL, a + r, n_tok, y, ys);                 \
        }                                                                                           \
    }

/* The four kernels of a type: one token / a batch, over 4 rows / 1 row, from an ISA's body
 * macros T1 and TN (called with the extra arguments, then the row count). */
#define AXPY_ENTRIES(NAME, T1, TN, ...)                                                             \
    static void t1_4_##NAME(int64_t n, const void *const *w, const void *const *nx, const float *a, \
                            float *y) {                                                             \
        T1(__VA_ARGS__, 4);                                                                         \
    }                                                                                               \
    static void t1_1_##NAME(int64_t n, const void *const *w, const void *const *nx, const float *a, \
                            float *y) {                                                             \
        T1(__VA_ARGS__, 1);                                                                         \
    }                                                                                               \
    static void tn_4_##NAME(int64_t n, const void *const *w, const void *const *nx, const float *a, \
                            int64_t n_tok, float *y, size_t ys) {                                   \
        TN(__VA_ARGS__, 4);                                                                         \
    }                                                                                               \
    static void tn_1_##NAME(int64_t n, const void *const *w, const void *const *nx, const float *a, \
                            int64_t n_tok, float *y, size_t ys) {                                   \
        TN(__VA_ARGS__, 1);                                                                         \
    }                                                                                               \
    AXPY_DISPATCH(NAME)

/* 32-element and float types: DQ decodes, SC is the per-block scale, BS the block bytes. */
#define AXPY_FUNCS(NAME, DQ, SC, BS) AXPY_ENTRIES(NAME, AXPY_T1, AXPY_TN, DQ, SC, BS)
/* 256-element types: one super-block per step. */
#define AXPY_K_FUNCS(NAME) AXPY_ENTRIES(NAME, AXPY_K_T1, AXPY_K_TN, NAME)

#endif
