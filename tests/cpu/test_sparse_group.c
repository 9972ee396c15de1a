/* hr_gather_group and hr_sparse_axpy_group: every item's values equal, bit for bit, its own
 * hr_gather_matmul / hr_sparse_axpy_ws call, for 1-3 threads, mixed types and shapes, 1-33
 * tokens, index lists empty, sorted, unsorted and with zero coefficients; groups past the 16
 * items kept on the stack; axpy groups whose partial sums take several rounds (16-token
 * groups over 4096-wide rows); a group that reuses one input for several items; bad items
 * fail with a message and leave no crash. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sparse.h"
#include "randw.h"
#include "testutil.h"

typedef struct {
    uint32_t type;
    int64_t n_in, n_out, n_tok, n_idx;
    int order; /* 0 sorted, 1 unsorted, 2 every row */
} spec;

typedef struct {
    hr_mat W;
    float *X, *A, *Y, *R;
    int32_t *idx;
} item_data;

static void make_idx(hr_rng *r, const spec *s, int32_t *idx) {
    if (s->order == 2 || s->n_idx == s->n_out) {
        for (int64_t i = 0; i < s->n_idx; i++) idx[i] = (int32_t)i;
        return;
    }
    char *mark = calloc((size_t)s->n_out, 1);
    for (int64_t i = 0; i < s->n_idx;) {
        const int64_t row = (int64_t)(hr_rng_next(r) % (uint64_t)s->n_out);
        if (!mark[row]) mark[row] = 1, i++;
    }
    int64_t m = 0;
    for (int64_t row = 0; row < s->n_out; row++)
        if (mark[row]) idx[m++] = (int32_t)row;
    for (int64_t i = s->n_idx - 1; s->order == 1 && i > 0; i--) {
        const int64_t j = (int64_t)(hr_rng_next(r) % (uint64_t)(i + 1));
        const int32_t t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    free(mark);
}

/* An item's weights, inputs (activations for a gather, coefficients with some zeros for an
 * axpy) and index list. */
static void make_item(hr_rng *r, const spec *s, item_data *d, bool axpy) {
    const size_t rb = hr_row_bytes(s->type, (uint64_t)s->n_in);
    char *w = malloc(rb * (size_t)s->n_out);
    for (int64_t o = 0; o < s->n_out; o++) randw_row(s->type, w + o * rb, s->n_in, 1.0f, r);
    d->W = (hr_mat){.type = s->type, .n_in = s->n_in, .n_out = s->n_out, .row_bytes = rb, .data = w};
    const size_t nx = (size_t)(s->n_tok * s->n_in), ny = (size_t)(s->n_tok * (axpy ? s->n_in : s->n_idx));
    d->X = malloc(sizeof(float) * (nx ? nx : 1));
    for (size_t i = 0; i < nx; i++) d->X[i] = hr_rng_normal(r);
    const size_t na = (size_t)(s->n_tok * s->n_idx);
    d->A = malloc(sizeof(float) * (na ? na : 1));
    for (size_t i = 0; i < na; i++) d->A[i] = hr_rng_next(r) % 4 == 0 ? 0.0f : hr_rng_normal(r);
    d->Y = malloc(sizeof(float) * (ny ? ny : 1));
    d->R = malloc(sizeof(float) * (ny ? ny : 1));
    d->idx = malloc(sizeof(int32_t) * (size_t)(s->n_idx ? s->n_idx : 1));
    make_idx(r, s, d->idx);
}

static void free_item(item_data *d) {
    free((void *)d->W.data), free(d->X), free(d->A), free(d->Y), free(d->R), free(d->idx);
}

static size_t out_bytes(const spec *s, bool axpy) {
    return sizeof(float) * (size_t)(s->n_tok * (axpy ? s->n_in : s->n_idx));
}

/* The n items of specs s as one group against one call each, at 1-3 threads; with reserve, the
 * axpy workspace reserved first as a context does (hr_sparse_reserve: 16 tokens of the widest
 * item), so the group's partials fit one round; without, it holds one item's at most and the
 * group runs in several rounds. */
static void check_group(hr_rng *r, const spec *s, int n, bool axpy, bool reserve, const char *what) {
    item_data *d = malloc(sizeof(item_data) * (size_t)n);
    hr_sparse_item *gi = malloc(sizeof(hr_sparse_item) * (size_t)n);
    hr_sparse_item *ai = malloc(sizeof(hr_sparse_item) * (size_t)n);
    for (int i = 0; i < n; i++) {
        make_item(r, &s[i], &d[i], axpy);
        gi[i] = (hr_sparse_item){.W = &d[i].W, .X = d[i].X, .n_tok = s[i].n_tok, .idx = d[i].idx, .n_idx = s[i].n_idx, .Y = d[i].Y};
        ai[i] = (hr_sparse_item){.W = &d[i].W, .X = d[i].A, .n_tok = s[i].n_tok, .idx = d[i].idx, .n_idx = s[i].n_idx, .Y = d[i].Y};
    }
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_sparse_ws ws;
        hr_err e = {{0}};
        hr_sparse_ws_init(&ws);
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        int64_t wide = 1;
        for (int i = 0; i < n; i++) wide = s[i].n_in > wide ? s[i].n_in : wide;
        if (reserve) CHECK(hr_sparse_reserve(&ws, &c, 16, wide, &e) == 0);
        for (int i = 0; i < n; i++) {
            memset(d[i].Y, 0xff, out_bytes(&s[i], axpy)); /* NaN: anything not written shows */
            const int rc = axpy ? hr_sparse_axpy_ws(&c, &ws, &d[i].W, d[i].A, s[i].n_tok, d[i].idx, s[i].n_idx, d[i].R, &e)
                                : hr_gather_matmul(&c, &d[i].W, d[i].X, s[i].n_tok, d[i].idx, s[i].n_idx, d[i].R, &e);
            CHECKF(rc == 0, "%s item %d: %s", what, i, e.msg);
        }
        const int rc = axpy ? hr_sparse_axpy_group(&c, &ws, ai, n, &e) : hr_gather_group(&c, gi, n, &e);
        CHECKF(rc == 0, "%s: %s", what, e.msg);
        for (int i = 0; i < n; i++)
            CHECKF(memcmp(d[i].Y, d[i].R, out_bytes(&s[i], axpy)) == 0,
                   "%s item %d (%s, %lld x %lld, %lld tokens, %lld rows) at %d threads: differs from its own call", what, i,
                   hr_type_name(s[i].type), (long long)s[i].n_in, (long long)s[i].n_out, (long long)s[i].n_tok,
                   (long long)s[i].n_idx, nth);
        hr_sparse_ws_free(&ws);
        hr_cpu_free(&c);
    }
    for (int i = 0; i < n; i++) free_item(&d[i]);
    free(d), free(gi), free(ai);
}

static const spec mixed[] = {
    {HR_Q4_K, 256, 70, 1, 23, 0},  {HR_Q4_K, 256, 70, 1, 70, 2},   {HR_Q4_0, 96, 37, 17, 11, 0},
    {HR_F16, 64, 300, 2, 150, 1},  {HR_Q8_0, 512, 18, 33, 0, 0},   {HR_Q6_K, 768, 64, 4, 40, 0},
    {HR_F32, 33, 9, 3, 9, 2},      {HR_Q4_0, 1536, 120, 1, 57, 0}, {HR_Q4_1, 64, 41, 5, 13, 1},
};

/* Several items of one expert-like shape, 1-3 tokens: past the stack's 16. */
static void many(hr_rng *r, bool axpy) {
    enum { N = 21 };
    spec s[N];
    for (int i = 0; i < N; i++) s[i] = (spec){HR_Q4_0, 96, 37, 1 + i % 3, 5 + i, 0};
    check_group(r, s, N, axpy, true, axpy ? "axpy, 21 items" : "gather, 21 items");
}

/* 16-token groups over 4096-wide rows: at 2-3 threads the partials of two groups pass the
 * workspace's round size, so the group runs in several rounds. */
static void rounds(hr_rng *r) {
    const spec s[] = {{HR_Q4_0, 4096, 200, 33, 120, 0}, {HR_Q8_0, 4096, 256, 17, 200, 0}, {HR_Q4_0, 4096, 200, 1, 60, 0}};
    check_group(r, s, 3, true, false, "axpy, several rounds");
}

/* Several items reading one input (a decoded token's experts share its row). */
static void shared_input(hr_rng *r) {
    const spec s = {HR_Q4_K, 512, 96, 1, 40, 0};
    item_data d[4];
    hr_sparse_item gi[4];
    for (int i = 0; i < 4; i++) make_item(r, &s, &d[i], false);
    for (int i = 0; i < 4; i++) gi[i] = (hr_sparse_item){.W = &d[i].W, .X = d[0].X, .n_tok = 1, .idx = d[i].idx, .n_idx = s.n_idx, .Y = d[i].Y};
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 2, &e) == 0);
    CHECKF(hr_gather_group(&c, gi, 4, &e) == 0, "%s", e.msg);
    for (int i = 0; i < 4; i++) {
        CHECK(hr_gather_matmul(&c, &d[i].W, d[0].X, 1, d[i].idx, s.n_idx, d[i].R, &e) == 0);
        CHECKF(memcmp(d[i].Y, d[i].R, out_bytes(&s, false)) == 0, "shared input: item %d differs", i);
    }
    hr_cpu_free(&c);
    for (int i = 0; i < 4; i++) free_item(&d[i]);
}

static void bad_items(hr_rng *r) {
    const spec s = {HR_Q4_0, 64, 20, 2, 5, 0};
    item_data d;
    make_item(r, &s, &d, true);
    hr_cpu c;
    hr_sparse_ws ws;
    hr_err e = {{0}};
    hr_sparse_ws_init(&ws);
    CHECK(hr_cpu_init(&c, 2, &e) == 0);
    hr_sparse_item g[2] = {{.W = &d.W, .X = d.X, .n_tok = 2, .idx = d.idx, .n_idx = 5, .Y = d.Y},
                           {.W = &d.W, .X = d.X, .n_tok = 2, .idx = d.idx, .n_idx = 5, .Y = d.Y}};
    hr_sparse_item a[2] = {{.W = &d.W, .X = d.A, .n_tok = 2, .idx = d.idx, .n_idx = 5, .Y = d.Y},
                         {.W = &d.W, .X = d.A, .n_tok = 2, .idx = d.idx, .n_idx = 5, .Y = d.Y}};
    CHECK(hr_gather_group(&c, g, 0, &e) == 0 && hr_sparse_axpy_group(&c, &ws, a, 0, &e) == 0);
    const int32_t out_of_range[1] = {20};
    g[1].idx = a[1].idx = out_of_range, g[1].n_idx = a[1].n_idx = 1;
    e.msg[0] = 0;
    CHECKF(hr_gather_group(&c, g, 2, &e) < 0 && strstr(e.msg, "outside"), "gather: row 20 of 20: %s", e.msg);
    e.msg[0] = 0;
    CHECKF(hr_sparse_axpy_group(&c, &ws, a, 2, &e) < 0 && strstr(e.msg, "outside"), "axpy: row 20 of 20: %s", e.msg);
    g[1].idx = a[1].idx = d.idx, g[1].n_idx = a[1].n_idx = 5;
    g[1].W = NULL, a[1].W = NULL;
    e.msg[0] = 0;
    CHECK(hr_gather_group(&c, g, 2, &e) < 0 && e.msg[0]);
    e.msg[0] = 0;
    CHECK(hr_sparse_axpy_group(&c, &ws, a, 2, &e) < 0 && e.msg[0]);
    a[1].W = &d.W, a[1].X = NULL;
    e.msg[0] = 0;
    CHECK(hr_sparse_axpy_group(&c, &ws, a, 2, &e) < 0 && e.msg[0]);
    e.msg[0] = 0;
    CHECK(hr_gather_group(&c, NULL, 2, &e) < 0 && hr_sparse_axpy_group(&c, NULL, a, 1, &e) < 0 && e.msg[0]);
    hr_sparse_ws_free(&ws);
    hr_cpu_free(&c);
    free_item(&d);
}

int main(void) {
    hr_rng r = {29};
    const int n = (int)(sizeof mixed / sizeof mixed[0]);
    check_group(&r, mixed, n, false, false, "gather, mixed");
    check_group(&r, mixed, n, true, false, "axpy, mixed");
    check_group(&r, mixed, n, true, true, "axpy, mixed, reserved workspace");
    many(&r, false);
    many(&r, true);
    rounds(&r);
    shared_input(&r);
    bad_items(&r);
    return TEST_END();
}
