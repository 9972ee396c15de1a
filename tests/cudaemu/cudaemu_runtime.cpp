/* The emulated driver and runtime: one device whose memory is host memory with a fixed
 * capacity, per-thread last errors, sticky kernel failures, and streams that are queues
 * worked by their own host thread. A driver is process-wide state by nature (the real
 * runtime's is too); it lives in `g` below and nowhere else. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cudaemu_internal.h"

#define EMU_ALIGN 256
#define EMU_SHM_LIMIT (48u << 10) /* dynamic shared memory without an opt-in */

typedef struct emu_alloc {
    char *p;
    size_t n;
    int host;
} emu_alloc;

static struct {
    pthread_mutex_t mu;
    pthread_once_t once;
    int present, cc;
    size_t total, context, used, stack_limit;
    emu_alloc *allocs;
    size_t n_allocs, cap_allocs;
    cudaError_t sticky;
} g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, 0, 90, 0, 0, 0, 1024, NULL, 0, 0, cudaSuccess};

static thread_local cudaError_t t_last = cudaSuccess;

/* "2G", "512M", "64K" or bytes; 0 when absent or malformed. */
static size_t env_size(const char *name, size_t fallback) {
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    char *end = NULL;
    const double v = strtod(s, &end);
    const double k = *end == 'G' || *end == 'g' ? 1073741824.0 : *end == 'M' || *end == 'm' ? 1048576.0
                     : *end == 'K' || *end == 'k' ? 1024.0 : 1.0;
    return v > 0 ? (size_t)(v * k) : 0;
}

static void emu_init(void) {
    g.total = env_size("HEARTH_CUDAEMU_VRAM", 0);
    g.present = g.total > 0;
    g.context = env_size("HEARTH_CUDAEMU_CONTEXT", 300u << 20);
    if (g.context > g.total) g.context = g.total;
    const char *cc = getenv("HEARTH_CUDAEMU_CC"); /* e.g. "70": an old GPU, for the refusal path */
    if (cc && atoi(cc) > 0) g.cc = atoi(cc);
}

static cudaError_t err(cudaError_t e) {
    if (e != cudaSuccess) t_last = e;
    return e;
}

/* The state every call starts from: no device, or a sticky failure, end it. */
static cudaError_t enter(void) {
    pthread_once(&g.once, emu_init);
    if (!g.present) return err(cudaErrorNoDevice);
    pthread_mutex_lock(&g.mu);
    const cudaError_t s = g.sticky;
    pthread_mutex_unlock(&g.mu);
    return s == cudaSuccess ? cudaSuccess : err(s);
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotReady: return "device not ready";
    }
    return "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
    pthread_mutex_lock(&g.mu);
    const cudaError_t s = g.sticky;
    pthread_mutex_unlock(&g.mu);
    if (s != cudaSuccess) return s; /* sticky: stays */
    const cudaError_t e = t_last;
    t_last = cudaSuccess;
    return e;
}

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 0;
    const cudaError_t e = enter();
    if (e == cudaSuccess) *n = 1;
    return e;
}

cudaError_t cudaSetDevice(int index) {
    const cudaError_t e = enter();
    return e != cudaSuccess ? e : index == 0 ? cudaSuccess : err(cudaErrorInvalidDevice);
}

cudaError_t cudaDriverGetVersion(int *v) {
    pthread_once(&g.once, emu_init);
    *v = g.present ? CUDART_VERSION : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int index) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    if (index != 0) return err(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMultiProcessorCount: *v = 8; break;
    case cudaDevAttrComputeCapabilityMajor: *v = g.cc / 10; break;
    case cudaDevAttrComputeCapabilityMinor: *v = g.cc % 10; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    default: return err(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int index) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    if (index != 0) return err(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "Hearth CUDA emulator");
    prop->totalGlobalMem = g.total;
    prop->major = g.cc / 10, prop->minor = g.cc % 10, prop->multiProcessorCount = 8;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t *v, cudaLimit limit) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    *v = limit == cudaLimitStackSize ? g.stack_limit : 64u << 10;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t v) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    if (limit == cudaLimitStackSize) g.stack_limit = v;
    return cudaSuccess;
}

cudaError_t hr_emu_func_attributes(cudaFuncAttributes *fa) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    memset(fa, 0, sizeof *fa);
    fa->maxThreadsPerBlock = 1024;
    fa->ptxVersion = 75;
    fa->binaryVersion = g.cc;
    return cudaSuccess;
}

/* ---- memory ---- */

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    pthread_mutex_lock(&g.mu);
    *free_b = g.total - g.context - g.used;
    *total_b = g.total;
    pthread_mutex_unlock(&g.mu);
    return cudaSuccess;
}

static cudaError_t track(char *p, size_t n, int host) {
    if (g.n_allocs == g.cap_allocs) {
        const size_t cap = g.cap_allocs ? 2 * g.cap_allocs : 16;
        emu_alloc *a = (emu_alloc *)realloc(g.allocs, cap * sizeof *a);
        if (!a) return cudaErrorMemoryAllocation;
        g.allocs = a, g.cap_allocs = cap;
    }
    g.allocs[g.n_allocs++] = emu_alloc{p, n, host};
    return cudaSuccess;
}

/* The allocation of kind `host` holding [p, p + n), or -1; caller holds g.mu. */
static long find(const void *p, size_t n, int host) {
    const char *c = (const char *)p;
    for (size_t i = 0; i < g.n_allocs; i++)
        if (g.allocs[i].host == host && c >= g.allocs[i].p && n <= g.allocs[i].n && (size_t)(c - g.allocs[i].p) <= g.allocs[i].n - n)
            return (long)i;
    return -1;
}

static cudaError_t emu_alloc_mem(void **p, size_t bytes, int host) {
    *p = NULL;
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    const size_t n = (bytes + EMU_ALIGN - 1) / EMU_ALIGN * EMU_ALIGN;
    if (n == 0) return err(cudaErrorInvalidValue);
    pthread_mutex_lock(&g.mu);
    cudaError_t st = cudaSuccess;
    if (!host && n > g.total - g.context - g.used) st = cudaErrorMemoryAllocation;
    void *m = NULL;
    if (st == cudaSuccess && posix_memalign(&m, EMU_ALIGN, n)) st = cudaErrorMemoryAllocation;
    if (st == cudaSuccess && (st = track((char *)m, n, host)) != cudaSuccess) free(m);
    if (st == cudaSuccess && !host) g.used += n;
    pthread_mutex_unlock(&g.mu);
    if (st != cudaSuccess) return err(st);
    if (!host) memset(m, 0xff, n); /* device memory starts as garbage: NaN as floats */
    *p = m;
    return cudaSuccess;
}

static cudaError_t emu_free_mem(void *p, int host) {
    if (!p) return cudaSuccess;
    pthread_once(&g.once, emu_init);
    pthread_mutex_lock(&g.mu);
    long i = -1;
    for (size_t k = 0; k < g.n_allocs && i < 0; k++)
        if (g.allocs[k].p == (char *)p && g.allocs[k].host == host) i = (long)k;
    const bool ok = i >= 0;
    if (ok) {
        if (!host) g.used -= g.allocs[i].n;
        g.allocs[i] = g.allocs[--g.n_allocs];
    }
    pthread_mutex_unlock(&g.mu);
    if (!ok) return err(host ? cudaErrorInvalidValue : cudaErrorInvalidDevicePointer);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) { return emu_alloc_mem(p, bytes, 0); }
cudaError_t cudaFree(void *p) { return emu_free_mem(p, 0); }
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags) {
    return flags == cudaHostAllocDefault ? emu_alloc_mem(p, bytes, 1) : err(cudaErrorInvalidValue);
}
cudaError_t cudaFreeHost(void *p) { return emu_free_mem(p, 1); }

void *hr_emu_call_alloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "cudaemu: out of host memory for a launch\n");
        abort();
    }
    return p;
}

/* ---- streams ---- */

struct hr_emu_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long long recorded, reached; /* records made; of which the stream has run */
    hr_emu_stream *s;                     /* the stream of the last record */
};

typedef struct emu_op {
    int kernel; /* 0: a copy, 1: a kernel, 2: an event marker */
    hr_emu_event *ev;
    unsigned long long ev_seq;
    void *dst;
    const void *src;
    size_t n;
    dim3 grid, block;
    size_t shm;
    hr_emu_invoke_fn fn;
    void *call;
    struct emu_op *next;
} emu_op;

struct hr_emu_stream {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    emu_op *head, *tail;
    int busy, quit;
    /* HEARTH_CUDAEMU_LAZY=1: work starts only when someone waits for it (a legal, if slow,
     * GPU), so every read of a result before its sync sees stale data, every time. */
    int lazy, waiting;
    hr_emu_exec *ex;
};

static void run_op(hr_emu_stream *s, emu_op *o) {
    pthread_mutex_lock(&g.mu);
    const bool dead = g.sticky != cudaSuccess; /* after a failure nothing more runs */
    pthread_mutex_unlock(&g.mu);
    if (o->kernel == 2) { /* markers complete even after a failure: waiting on them must end */
        pthread_mutex_lock(&o->ev->mu);
        if (o->ev_seq > o->ev->reached) o->ev->reached = o->ev_seq;
        pthread_cond_broadcast(&o->ev->cv);
        pthread_mutex_unlock(&o->ev->mu);
        return;
    }
    if (dead) return;
    if (!o->kernel) {
        memcpy(o->dst, o->src, o->n);
        return;
    }
    char msg[300];
    if (hr_emu_exec_kernel(s->ex, o->grid, o->block, o->shm, o->fn, o->call, msg, sizeof msg)) {
        fprintf(stderr, "cudaemu: kernel stopped: %s\n", msg);
        pthread_mutex_lock(&g.mu);
        g.sticky = cudaErrorLaunchFailure;
        pthread_mutex_unlock(&g.mu);
    }
}

static void *worker(void *arg) {
    hr_emu_stream *s = (hr_emu_stream *)arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->quit && (!s->head || (s->lazy && !s->waiting))) pthread_cond_wait(&s->work, &s->mu);
        if (!s->head) break;
        emu_op *o = s->head;
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        s->busy = 1;
        pthread_mutex_unlock(&s->mu);
        run_op(s, o);
        free(o->call);
        free(o);
        pthread_mutex_lock(&s->mu);
        s->busy = 0;
        if (!s->head) pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned flags) {
    (void)flags;
    *out = NULL;
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    hr_emu_stream *s = (hr_emu_stream *)calloc(1, sizeof *s);
    if (!s || !(s->ex = hr_emu_exec_new())) {
        free(s);
        return err(cudaErrorMemoryAllocation);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    const char *lazy = getenv("HEARTH_CUDAEMU_LAZY");
    s->lazy = lazy && strcmp(lazy, "1") == 0;
    if (pthread_create(&s->th, NULL, worker, s)) {
        hr_emu_exec_free(s->ex);
        free(s);
        return err(cudaErrorMemoryAllocation);
    }
    *out = s;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *out) { return cudaStreamCreateWithFlags(out, cudaStreamDefault); }

static void stream_drain(hr_emu_stream *s) {
    pthread_mutex_lock(&s->mu);
    s->waiting++;
    pthread_cond_signal(&s->work);
    while (s->head || s->busy) pthread_cond_wait(&s->idle, &s->mu);
    s->waiting--;
    pthread_mutex_unlock(&s->mu);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (!s) return err(cudaErrorInvalidResourceHandle); /* the backend always names its stream */
    stream_drain(s);
    return enter();
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return err(cudaErrorInvalidResourceHandle);
    stream_drain(s);
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    hr_emu_exec_free(s->ex);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return cudaSuccess;
}

static void push(hr_emu_stream *s, emu_op *o) {
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->next = o;
    else s->head = o;
    s->tail = o;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    if (!s) return err(cudaErrorInvalidResourceHandle);
    if (bytes == 0) return cudaSuccess;
    /* The direction must match where the pointers live: device memory is what cudaMalloc gave. */
    pthread_mutex_lock(&g.mu);
    const bool dd = find(dst, bytes, 0) >= 0, sd = find(src, bytes, 0) >= 0;
    pthread_mutex_unlock(&g.mu);
    const bool ok = kind == cudaMemcpyHostToDevice ? dd && !sd : kind == cudaMemcpyDeviceToHost ? sd && !dd
                    : kind == cudaMemcpyDeviceToDevice ? sd && dd : false;
    if (!ok) return err(cudaErrorInvalidValue);
    emu_op *o = (emu_op *)calloc(1, sizeof *o);
    if (!o) return err(cudaErrorMemoryAllocation);
    o->dst = dst, o->src = src, o->n = bytes;
    push(s, o);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned flags) {
    (void)flags;
    *out = NULL;
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    hr_emu_event *ev = (hr_emu_event *)calloc(1, sizeof *ev);
    if (!ev) return err(cudaErrorMemoryAllocation);
    pthread_mutex_init(&ev->mu, NULL);
    pthread_cond_init(&ev->cv, NULL);
    *out = ev;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
    const cudaError_t e = enter();
    if (e != cudaSuccess) return e;
    if (!ev || !s) return err(cudaErrorInvalidResourceHandle);
    emu_op *o = (emu_op *)calloc(1, sizeof *o);
    if (!o) return err(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&ev->mu);
    o->kernel = 2, o->ev = ev, o->ev_seq = ++ev->recorded;
    ev->s = s;
    pthread_mutex_unlock(&ev->mu);
    push(s, o);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t ev) {
    if (!ev) return err(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&ev->mu);
    const bool done = ev->reached >= ev->recorded;
    pthread_mutex_unlock(&ev->mu);
    if (!done) return cudaErrorNotReady; /* not an error: nothing sticks */
    return enter();
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
    if (!ev) return err(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&ev->mu);
    hr_emu_stream *s = ev->reached < ev->recorded ? ev->s : NULL;
    pthread_mutex_unlock(&ev->mu);
    if (s) stream_drain(s); /* a lazy stream runs only when waited for */
    return enter();
}

cudaError_t cudaEventDestroy(cudaEvent_t ev) {
    if (!ev) return err(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&ev->mu);
    hr_emu_stream *s = ev->reached < ev->recorded ? ev->s : NULL;
    pthread_mutex_unlock(&ev->mu);
    if (s) stream_drain(s); /* a marker still queued points at the event */
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    free(ev);
    return cudaSuccess;
}

void hr_emu_enqueue(dim3 grid, dim3 block, size_t shm, cudaStream_t s, hr_emu_invoke_fn invoke, void *call) {
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    cudaError_t e = enter();
    if (e == cudaSuccess && !s) e = err(cudaErrorInvalidResourceHandle);
    if (e == cudaSuccess && (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
                             grid.x == 0 || grid.x > 0x7fffffffu || grid.y == 0 || grid.y > 65535 || grid.z == 0 ||
                             grid.z > 65535))
        e = err(cudaErrorInvalidConfiguration);
    if (e == cudaSuccess && shm > EMU_SHM_LIMIT) e = err(cudaErrorInvalidValue);
    emu_op *o = e == cudaSuccess ? (emu_op *)calloc(1, sizeof *o) : NULL;
    if (!o) {
        if (e == cudaSuccess) err(cudaErrorMemoryAllocation);
        free(call);
        return;
    }
    o->kernel = 1, o->grid = grid, o->block = block, o->shm = shm, o->fn = invoke, o->call = call;
    push(s, o);
}
