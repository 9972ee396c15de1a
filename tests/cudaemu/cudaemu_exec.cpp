/* Kernel execution: the threads of a block are fibers (ucontext for their first start,
 * _setjmp/_longjmp for every switch after it: no signal-mask system call per switch).
 * The scheduler runs every ready fiber until it waits or returns, then releases
 * whatever barrier all its threads have reached; when nothing can be released, the
 * kernel has deadlocked on real hardware too, and stops here with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "cudaemu_internal.h"

thread_local hr_emu_u3 hr_emu_tid, hr_emu_bid, hr_emu_bdim, hr_emu_gdim;

#define EMU_MAX_THREADS 1024
#define EMU_STACK (64u << 10)
#define EMU_GUARD (4u << 10)

enum { F_READY, F_BLOCK, F_WARP, F_DONE };

/* GCC's builtin setjmp/longjmp save and restore only the frame, stack pointer and
 * resume address: a fiber switch costs a few instructions, no signal mask, no unwinding. */
typedef void *emu_jmp[5];

/* What the scheduler touches on every switch, kept small so a block's fibers share
 * cache lines; the start context and the stack live apart. */
typedef struct emu_fiber {
    emu_jmp jb;
    int state, started;
    unsigned mask, gen;
    hr_emu_u3 tid;
} emu_fiber;

struct hr_emu_exec {
    emu_fiber f[EMU_MAX_THREADS];
    ucontext_t uc[EMU_MAX_THREADS];
    char *stacks; /* EMU_MAX_THREADS x (guard, stack), mapped on first use */
    unsigned n, cur;
    emu_jmp sched;
    hr_emu_invoke_fn fn;
    const void *call;
    uint64_t slot[2][EMU_MAX_THREADS]; /* shuffle exchange, double-buffered by generation */
    char *dyn;
    size_t dyn_cap, dyn_n;
    int failed;
    char msg[256];
};

/* The executor of the kernel running on this host thread (a stream worker). */
static thread_local hr_emu_exec *t_ex;

hr_emu_exec *hr_emu_exec_new(void) { return (hr_emu_exec *)calloc(1, sizeof(hr_emu_exec)); }

void hr_emu_exec_free(hr_emu_exec *x) {
    if (!x) return;
    if (x->stacks) munmap(x->stacks, (size_t)EMU_MAX_THREADS * (EMU_GUARD + EMU_STACK));
    free(x->dyn);
    free(x);
}

static void fail(hr_emu_exec *x, const char *fmt, ...) {
    if (x->failed) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    x->failed = 1;
}

/* Not in the function that set the buffer, as __builtin_longjmp requires. */
__attribute__((noinline)) static void jump(void **to) { __builtin_longjmp(to, 1); }

static void fiber_yield(hr_emu_exec *x) {
    if (!__builtin_setjmp(x->f[x->cur].jb)) jump(x->sched);
}

static void fiber_entry(void) {
    hr_emu_exec *x = t_ex;
    for (;;) { /* one pass per block: fibers live as long as their executor */
        x->fn(x->call);
        x->f[x->cur].state = F_DONE;
        fiber_yield(x);
    }
}

static int fiber_start(hr_emu_exec *x, unsigned i) {
    const size_t each = EMU_GUARD + EMU_STACK;
    if (!x->stacks) {
        /* Reserved, not committed: only the pages a fiber touches take memory. */
        void *m = mmap(NULL, EMU_MAX_THREADS * each, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) return -1;
        x->stacks = (char *)m;
        for (unsigned k = 0; k < EMU_MAX_THREADS; k++) /* an overflow faults instead of corrupting */
            mprotect(x->stacks + k * each, EMU_GUARD, PROT_NONE);
    }
    ucontext_t *uc = &x->uc[i];
    if (getcontext(uc)) return -1;
    uc->uc_stack.ss_sp = x->stacks + i * each + EMU_GUARD;
    uc->uc_stack.ss_size = EMU_STACK;
    uc->uc_link = NULL;
    makecontext(uc, fiber_entry, 0);
    x->f[i].started = 1;
    return 0;
}

static void fiber_resume(hr_emu_exec *x, unsigned i) {
    emu_fiber *f = &x->f[i];
    x->cur = i;
    hr_emu_tid = f->tid;
    if (__builtin_setjmp(x->sched)) return;
    if (!f->started) {
        if (fiber_start(x, i)) {
            fail(x, "cannot map fiber stacks of %u bytes", EMU_STACK);
            return;
        }
        setcontext(&x->uc[i]);
    }
    jump(f->jb);
}

/* Lanes of warp w that exist in a block of n threads. */
static unsigned warp_lanes(unsigned n, unsigned w) {
    const unsigned k = n - w * 32 >= 32 ? 32 : n - w * 32;
    return k == 32 ? 0xffffffffu : (1u << k) - 1;
}

/* Releases each warp whose named lanes all wait at the same warp operation; 1 if any. */
static int release_warps(hr_emu_exec *x) {
    int any = 0;
    for (unsigned w = 0; w * 32 < x->n; w++) {
        emu_fiber *f = &x->f[w * 32];
        const unsigned lanes = warp_lanes(x->n, w);
        unsigned waiting = 0, mask = 0;
        for (unsigned l = 0; l < 32; l++)
            if ((lanes >> l & 1) && f[l].state == F_WARP) waiting |= 1u << l, mask = f[l].mask;
        if (!waiting || waiting != lanes) continue;
        for (unsigned l = 0; l < 32; l++)
            if ((lanes >> l & 1) && f[l].mask != mask) {
                fail(x, "warp %u: lanes wait at warp operations with different masks (%#x, %#x)", w, mask, f[l].mask);
                return 0;
            }
        for (unsigned l = 0; l < 32; l++)
            if (lanes >> l & 1) f[l].state = F_READY;
        any = 1;
    }
    return any;
}

/* Why nothing can move: counts per state, and the first warp stuck at a warp operation. */
static void explain_deadlock(hr_emu_exec *x) {
    unsigned c[4] = {0, 0, 0, 0};
    for (unsigned i = 0; i < x->n; i++) c[x->f[i].state]++;
    fail(x,
         "deadlock in block (%u,%u,%u): %u threads wait at __syncthreads, %u at a warp shuffle or __syncwarp, %u have "
         "returned (a barrier must be reached by every thread of the block; a full-mask warp operation by all 32 lanes)",
         hr_emu_bid.x, hr_emu_bid.y, hr_emu_bid.z, c[F_BLOCK], c[F_WARP], c[F_DONE]);
}

static int run_block(hr_emu_exec *x) {
    for (unsigned i = 0; i < x->n; i++) x->f[i].state = F_READY;
    if (x->dyn_n) memset(x->dyn, 0xff, x->dyn_n); /* shared memory starts as garbage */
    for (;;) {
        for (unsigned i = 0; i < x->n && !x->failed; i++)
            if (x->f[i].state == F_READY) fiber_resume(x, i);
        if (x->failed) return -1;
        unsigned done = 0, at_barrier = 0;
        for (unsigned i = 0; i < x->n; i++) done += x->f[i].state == F_DONE, at_barrier += x->f[i].state == F_BLOCK;
        if (done == x->n) return 0;
        if (release_warps(x)) continue;
        if (x->failed) return -1;
        if (at_barrier == x->n) {
            for (unsigned i = 0; i < x->n; i++) x->f[i].state = F_READY;
            continue;
        }
        explain_deadlock(x);
        return -1;
    }
}

int hr_emu_exec_kernel(hr_emu_exec *x, dim3 grid, dim3 block, size_t shm, hr_emu_invoke_fn fn, const void *call,
                       char *msg, size_t msg_n) {
    const unsigned n = block.x * block.y * block.z;
    if (shm > x->dyn_cap) {
        free(x->dyn);
        x->dyn = (char *)malloc(shm);
        x->dyn_cap = x->dyn ? shm : 0;
        if (!x->dyn) return snprintf(msg, msg_n, "out of host memory for %zu bytes of shared memory", shm), -1;
    }
    t_ex = x;
    x->n = n, x->fn = fn, x->call = call, x->dyn_n = shm, x->failed = 0;
    hr_emu_bdim = {block.x, block.y, block.z};
    hr_emu_gdim = {grid.x, grid.y, grid.z};
    for (unsigned i = 0; i < n; i++) x->f[i].tid = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                hr_emu_bid = {bx, by, bz};
                for (unsigned i = 0; i < n; i++) x->f[i].gen = 0;
                if (run_block(x)) {
                    /* The block's fibers stopped mid-kernel: start them afresh next time. */
                    for (unsigned i = 0; i < EMU_MAX_THREADS; i++) x->f[i].started = 0;
                    snprintf(msg, msg_n, "%s", x->msg);
                    return -1;
                }
            }
    return 0;
}

/* ---- device-side operations ---- */

void hr_emu_syncthreads(void) {
    hr_emu_exec *x = t_ex;
    x->f[x->cur].state = F_BLOCK;
    fiber_yield(x);
}

static void warp_wait(hr_emu_exec *x, unsigned mask, const char *what) {
    const unsigned t = x->cur, lanes = warp_lanes(x->n, t / 32);
    if (mask != lanes) {
        fail(x, "%s with mask %#x in a warp whose lanes are %#x (only whole-warp masks are emulated)", what, mask, lanes);
        x->f[t].state = F_DONE;
    } else {
        x->f[t].state = F_WARP;
        x->f[t].mask = mask;
    }
    fiber_yield(x);
}

void hr_emu_syncwarp(unsigned mask) { warp_wait(t_ex, mask, "__syncwarp"); }

void hr_emu_shfl(unsigned mask, const void *v, void *out, size_t n, int arg, int mode, int width) {
    hr_emu_exec *x = t_ex;
    const unsigned t = x->cur, lane = t & 31, base = t - lane;
    const unsigned buf = x->f[t].gen++ & 1;
    memcpy(&x->slot[buf][t], v, n);
    if (width <= 0 || width > 32 || (width & (width - 1))) {
        fail(x, "warp shuffle with width %d (a power of two up to 32)", width);
        x->f[t].state = F_DONE;
        fiber_yield(x);
    }
    warp_wait(x, mask, "warp shuffle");
    /* Only lanes of the same width-segment can be read; others read their own value. */
    const unsigned w = (unsigned)width, seg = lane & ~(w - 1), li = lane & (w - 1);
    unsigned src = lane;
    switch (mode) {
    case 0: src = (lane ^ (unsigned)arg) < seg + w ? lane ^ (unsigned)arg : lane; break;
    case 1: src = li + (unsigned)arg < w ? lane + (unsigned)arg : lane; break;
    case 2: src = li >= (unsigned)arg ? lane - (unsigned)arg : lane; break;
    default: src = seg + ((unsigned)arg & (w - 1)); break;
    }
    memcpy(out, &x->slot[buf][base + src], n);
}

void *hr_emu_dyn_shared(void) { return t_ex->dyn; }
