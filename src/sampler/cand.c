#include "cand.h"

static void swap(hr_cand *a, hr_cand *b) {
    hr_cand t = *a;
    *a = *b;
    *b = t;
}

/* Heap whose root is the worst of its candidates. */
static void sift_down(hr_cand *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && hr_cand_before(h[w], h[l])) w = l;
        if (r < n && hr_cand_before(h[w], h[r])) w = r;
        if (w == i) return;
        swap(&h[i], &h[w]);
        i = w;
    }
}

static void heap_sort(hr_cand *c, int32_t n) {
    for (int32_t i = n / 2 - 1; i >= 0; i--) sift_down(c, n, i);
    for (int32_t end = n - 1; end > 0; end--) {
        swap(&c[0], &c[end]);
        sift_down(c, end, 0);
    }
}

static void insertion_sort(hr_cand *c, int32_t n) {
    for (int32_t i = 1; i < n; i++) {
        hr_cand v = c[i];
        int32_t j = i;
        while (j > 0 && hr_cand_before(v, c[j - 1])) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = v;
    }
}

/* Median-of-three pivot; returns its final index j: c[lo..j-1] before it, c[j+1..hi] after.
 * Ids make every candidate distinct, so there are no equal keys to balance. */
static int32_t partition(hr_cand *c, int32_t lo, int32_t hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (hr_cand_before(c[mid], c[lo])) swap(&c[mid], &c[lo]);
    if (hr_cand_before(c[hi], c[lo])) swap(&c[hi], &c[lo]);
    if (hr_cand_before(c[hi], c[mid])) swap(&c[hi], &c[mid]);
    swap(&c[lo], &c[mid]);
    hr_cand p = c[lo];
    int32_t i = lo + 1, j = hi;
    for (;;) {
        while (i <= j && hr_cand_before(c[i], p)) i++;
        while (i <= j && hr_cand_before(p, c[j])) j--;
        if (i >= j) break;
        swap(&c[i++], &c[j--]);
    }
    swap(&c[lo], &c[j]);
    return j;
}

/* Partial quicksort: sorts only the parts that overlap [0, m). The depth budget hands
 * adversarial inputs to heap sort, so the worst case stays O(n log n). */
static void psort(hr_cand *c, int32_t lo, int32_t hi, int32_t m, int depth) {
    while (hi - lo > 16) {
        if (depth-- <= 0) {
            heap_sort(c + lo, hi - lo + 1);
            return;
        }
        int32_t j = partition(c, lo, hi);
        if (j + 1 < m) {
            /* both sides matter: recurse into the smaller, loop on the larger */
            if (j - lo < hi - j) {
                psort(c, lo, j - 1, m, depth);
                lo = j + 1;
            } else {
                psort(c, j + 1, hi, m, depth);
                hi = j - 1;
            }
        } else {
            hi = j - 1;
        }
    }
    if (hi > lo) insertion_sort(c + lo, hi - lo + 1);
}

void hr_cand_partial_sort(hr_cand *c, int32_t n, int32_t m) {
    if (m <= 0 || n <= 1) return;
    if (m > n) m = n;
    int depth = 2;
    for (int32_t x = n; x > 1; x >>= 1) depth += 2;
    psort(c, 0, n - 1, m, depth);
}

void hr_cand_top_k(const float *logits, int32_t n, int32_t k, hr_cand *out) {
    if (k <= 0) return;
    for (int32_t i = 0; i < k; i++) out[i] = (hr_cand){logits[i], i};
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(out, k, i);
    for (int32_t i = k; i < n; i++) {
        /* ids rise, so an equal logit never displaces a kept one: a plain > suffices. */
        if (logits[i] > out[0].logit) {
            out[0] = (hr_cand){logits[i], i};
            sift_down(out, k, 0);
        }
    }
    heap_sort(out, k);
}
