/* The CUDA device: opening, memory (arena, pinned host buffers), transfers, sync, and the
 * operation table. Kernels live in the other .cu files of this folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* What the CUDA context takes on the device outside the arena, beyond the local-memory
 * reservation computed at open: the context itself, the loaded kernel image for this
 * architecture, the printf FIFO and the device malloc heap (limits set small at open).
 * Typical contexts under CUDA 12/13 with lazy module loading take 100-300 MiB; 320 MiB
 * errs on the safe side. Not yet measured on a GPU (docs/cuda.md). */
#define HR_CU_CONTEXT_BYTES (320ull << 20)

int hr_cu_fail(hr_err *e, const char *op, cudaError_t st) {
    /* Reported here: clear it, or the next launch check would report it again as its own
     * (sticky errors stay, as they should). */
    (void)cudaGetLastError();
    return hr_errf(e, "cuda %s: %s", op, cudaGetErrorString(st));
}

int hr_cu_enter(hr_cuda *c, const char *op, hr_err *e) {
    cudaError_t st = cudaSetDevice(c->index);
    return st == cudaSuccess ? 0 : hr_cu_fail(e, op, st);
}

int hr_cu_span(const hr_cuda *c, uint64_t off, uint64_t bytes, const char *op, const char *what, hr_err *e) {
    if (!c->arena) return hr_errf(e, "cuda %s: no arena reserved", op);
    if (off > c->arena_bytes || bytes > c->arena_bytes - off)
        return hr_errf(e, "cuda %s: %s [%llu, +%llu) lies outside the %llu-byte arena", op, what,
                       (unsigned long long)off, (unsigned long long)bytes, (unsigned long long)c->arena_bytes);
    return 0;
}

int hr_cu_launched(const char *op, hr_err *e) {
    cudaError_t st = cudaGetLastError();
    return st == cudaSuccess ? 0 : hr_cu_fail(e, op, st);
}

int hr_cu_check_mat(const hr_cuda *c, const hr_dmat *W, const char *op, hr_err *e) {
    if (!hr_type_is_weight(W->type))
        return hr_errf(e, "cuda %s: weight type %u is not supported", op, (unsigned)W->type);
    if (W->n_in <= 0 || W->n_out <= 0 || W->n_in > INT32_MAX || W->n_out > INT32_MAX)
        return hr_errf(e, "cuda %s: bad weight shape %lld x %lld", op, (long long)W->n_out, (long long)W->n_in);
    const uint64_t rb = hr_row_bytes(W->type, (uint64_t)W->n_in);
    if (rb == 0 || W->row_bytes < rb)
        return hr_errf(e, "cuda %s: rows of %lld %s elements need %llu bytes, got row_bytes %zu", op,
                       (long long)W->n_in, hr_type_name(W->type), (unsigned long long)rb, W->row_bytes);
    /* F16, BF16, Q8_0 and Q4_0 rows are read in 16-bit pieces, F32 in 32-bit ones; the newer
     * block types by bytes (MXFP4 rows of an odd block count have an odd length). */
    const bool by_bytes = W->type != HR_F32 && W->type != HR_F16 && W->type != HR_BF16 && W->type != HR_Q8_0 &&
                          W->type != HR_Q4_0;
    if ((!by_bytes && (W->row_bytes % 2 || W->off % 2)) || (W->type == HR_F32 && (W->row_bytes % 4 || W->off % 4)))
        return hr_errf(e, "cuda %s: weight rows are misaligned (offset %llu, row_bytes %zu)", op,
                       (unsigned long long)W->off, W->row_bytes);
    return hr_cu_span(c, W->off, (uint64_t)(W->n_out - 1) * W->row_bytes + rb, op, "weights", e);
}

static int cu_mem_info(hr_dev *d, uint64_t *free_b, uint64_t *total_b, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (hr_cu_enter(c, "mem_info", e)) return -1;
    size_t f = 0, t = 0;
    cudaError_t st = cudaMemGetInfo(&f, &t);
    if (st != cudaSuccess) return hr_cu_fail(e, "mem_info: cudaMemGetInfo", st);
    *free_b = f;
    *total_b = t;
    return 0;
}

static uint64_t cu_overhead(const hr_dev *d) { return ((const hr_cuda *)d)->overhead; }

static int cu_reserve(hr_dev *d, uint64_t bytes, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (c->arena) return hr_errf(e, "cuda reserve: the arena is already reserved (%llu bytes)",
                                 (unsigned long long)c->arena_bytes);
    if (bytes == 0) return hr_errf(e, "cuda reserve: an arena of 0 bytes");
    if (hr_cu_enter(c, "reserve", e)) return -1;
    void *p = NULL;
    cudaError_t st = cudaMalloc(&p, bytes);
    if (st != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation failure is not sticky; clear it */
        return hr_errf(e, "cuda reserve: cudaMalloc of %llu bytes: %s", (unsigned long long)bytes,
                       cudaGetErrorString(st));
    }
    c->arena = (char *)p;
    c->arena_bytes = bytes;
    return 0;
}

static void *cu_host_alloc(hr_dev *d, size_t bytes) {
    hr_cuda *c = hr_cu(d);
    void *p = NULL;
    if (cudaSetDevice(c->index) != cudaSuccess || cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

static void cu_host_free(hr_dev *d, void *p) {
    (void)d;
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError(); /* not a later launch's error */
}

static int cu_to_dev(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (bytes == 0) return 0;
    if (hr_cu_span(c, dst, bytes, "to_dev", "destination", e) || hr_cu_enter(c, "to_dev", e)) return -1;
    cudaError_t st = cudaMemcpyAsync(c->arena + dst, src, bytes, cudaMemcpyHostToDevice, c->stream);
    return st == cudaSuccess ? 0 : hr_cu_fail(e, "to_dev: cudaMemcpyAsync", st);
}

static int cu_to_host(hr_dev *d, void *dst, uint64_t src, uint64_t bytes, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (bytes == 0) return 0;
    if (hr_cu_span(c, src, bytes, "to_host", "source", e) || hr_cu_enter(c, "to_host", e)) return -1;
    cudaError_t st = cudaMemcpyAsync(dst, c->arena + src, bytes, cudaMemcpyDeviceToHost, c->stream);
    return st == cudaSuccess ? 0 : hr_cu_fail(e, "to_host: cudaMemcpyAsync", st);
}

static int cu_sync(hr_dev *d, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (hr_cu_enter(c, "sync", e)) return -1;
    cudaError_t st = cudaStreamSynchronize(c->stream);
    return st == cudaSuccess ? 0 : hr_cu_fail(e, "sync (an earlier operation failed on the device)", st);
}

/* Ticket t's event says whether its copy (and, the stream being in order, every earlier
 * one) has run; landed only moves forward. */
static int cu_copy_poll(hr_cuda *c, uint64_t ticket, bool wait, hr_err *e) {
    while (c->landed < ticket) {
        cudaEvent_t ev = c->ev[c->landed % HR_CU_COPY_RING];
        cudaError_t st = wait ? cudaEventSynchronize(ev) : cudaEventQuery(ev);
        if (st == cudaErrorNotReady) return 0;
        if (st != cudaSuccess) return hr_cu_fail(e, "copy_done: cudaEventQuery (an earlier copy failed)", st);
        c->landed++;
    }
    return 0;
}

static int cu_copy_async(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, uint64_t *ticket, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (hr_cu_span(c, dst, bytes, "copy_async", "destination", e) || hr_cu_enter(c, "copy_async", e)) return -1;
    /* every event of the ring in use: the oldest copy must have run before its event is
     * recorded again (the engine keeps fewer copies in flight, so this does not wait) */
    if (c->issued - c->landed >= HR_CU_COPY_RING && cu_copy_poll(c, c->issued - HR_CU_COPY_RING + 1, true, e)) return -1;
    cudaError_t st = bytes ? cudaMemcpyAsync(c->arena + dst, src, bytes, cudaMemcpyHostToDevice, c->copy) : cudaSuccess;
    if (st == cudaSuccess) st = cudaEventRecord(c->ev[c->issued % HR_CU_COPY_RING], c->copy);
    if (st != cudaSuccess) return hr_cu_fail(e, "copy_async: cudaMemcpyAsync", st);
    *ticket = ++c->issued;
    return 0;
}

static int cu_copy_done(hr_dev *d, uint64_t ticket, bool *done, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (ticket == 0 || ticket > c->issued)
        return hr_errf(e, "cuda copy_done: ticket %llu of %llu issued", (unsigned long long)ticket, (unsigned long long)c->issued);
    if (c->landed < ticket && (hr_cu_enter(c, "copy_done", e) || cu_copy_poll(c, ticket, false, e))) return -1;
    *done = c->landed >= ticket;
    return 0;
}

static int cu_copy_sync(hr_dev *d, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (c->landed == c->issued) return 0;
    if (hr_cu_enter(c, "copy_sync", e)) return -1;
    cudaError_t st = cudaStreamSynchronize(c->copy);
    if (st != cudaSuccess) return hr_cu_fail(e, "copy_sync (an earlier copy failed)", st);
    c->landed = c->issued;
    return 0;
}

static void cu_free(hr_dev *d) {
    hr_cuda *c = hr_cu(d);
    if (cudaSetDevice(c->index) == cudaSuccess) {
        if (c->copy) {
            (void)cudaStreamSynchronize(c->copy);
            (void)cudaStreamDestroy(c->copy);
        }
        for (int i = 0; i < HR_CU_COPY_RING; i++)
            if (c->ev[i]) (void)cudaEventDestroy(c->ev[i]);
        if (c->stream) {
            (void)cudaStreamSynchronize(c->stream);
            (void)cudaStreamDestroy(c->stream);
        }
        if (c->arena) (void)cudaFree(c->arena);
        if (c->scratch) (void)cudaFree(c->scratch);
    }
    free(c);
}

static const hr_dev_ops k_cuda_ops = {
    "cuda",
    cu_mem_info,
    cu_overhead,
    cu_reserve,
    cu_host_alloc,
    cu_host_free,
    cu_to_dev,
    cu_to_host,
    hr_cu_matmul,
    hr_cu_gather_matmul,
    hr_cu_sparse_axpy,
    hr_cu_rmsnorm,
    hr_cu_rope,
    hr_cu_attention,
    hr_cu_ffn_act,
    hr_cu_apply_mask,
    hr_cu_add,
    hr_cu_add_bias,
    cu_sync,
    cu_copy_async,
    cu_copy_done,
    cu_copy_sync,
    cu_free,
    hr_cu_thr_mask,
    hr_cu_gather_matmul_masked,
    hr_cu_swiglu_oai,
    false, /* copies_inline: a copy engine, so the expert cache stages on its own thread */
};

/* Compute capability 7.5 at least: dp4a, and the oldest architecture CUDA 13 compiles
 * for. (hr_cu_probe then checks this build has code for it.) */
static int cu_check_arch(int index, hr_err *e) {
    int major = 0, minor = 0;
    cudaError_t st = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index);
    if (st == cudaSuccess) st = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index);
    if (st != cudaSuccess) return hr_errf(e, "CUDA device %d: cudaDeviceGetAttribute: %s", index, cudaGetErrorString(st));
    if (major * 10 + minor < 75)
        return hr_errf(e, "CUDA device %d has compute capability %d.%d; Hearth needs 7.5 or newer", index, major, minor);
    return 0;
}

/* Local memory is reserved for every thread the device can hold at once, at the stack
 * limit each: part of the context that grows with the GPU's size. */
static uint64_t cu_lmem_reserve(int index) {
    int sms = 0, threads = 0;
    size_t stack = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index) != cudaSuccess ||
        cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, index) != cudaSuccess ||
        cudaDeviceGetLimit(&stack, cudaLimitStackSize) != cudaSuccess) {
        (void)cudaGetLastError();
        return 512ull << 20; /* unknown: assume a large GPU */
    }
    return (uint64_t)sms * (uint64_t)threads * (uint64_t)stack;
}

static int cu_init(hr_cuda *c, hr_err *e) {
    const int i = c->index;
    cudaError_t st = cudaSetDevice(i);
    if (st != cudaSuccess) return hr_errf(e, "CUDA device %d: cudaSetDevice: %s", i, cudaGetErrorString(st));
    if (cu_check_arch(i, e) || hr_cu_probe(i, e)) return -1;
    cudaError_t (*const load[])(void) = {hr_cu_load_attention, hr_cu_load_elementwise, hr_cu_load_matvec, hr_cu_load_mmtile,
                                         hr_cu_load_norm,      hr_cu_load_quantize,    hr_cu_load_rope,   hr_cu_load_sparse};
    for (size_t k = 0; k < sizeof load / sizeof *load; k++)
        if ((st = load[k]()) != cudaSuccess)
            return hr_errf(e, "CUDA device %d: loading the kernels: %s", i, cudaGetErrorString(st));
    /* The kernels use neither printf nor malloc: keep their reservations small. */
    (void)cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 64 << 10);
    (void)cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 10);
    (void)cudaGetLastError(); /* a refused limit (e.g. under MPS) must not fail the first launch */
    st = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (st != cudaSuccess) return hr_errf(e, "CUDA device %d: cudaStreamCreate: %s", i, cudaGetErrorString(st));
    st = cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking);
    for (int k = 0; k < HR_CU_COPY_RING && st == cudaSuccess; k++) st = cudaEventCreateWithFlags(&c->ev[k], cudaEventDisableTiming);
    if (st != cudaSuccess) return hr_errf(e, "CUDA device %d: the copy stream: %s", i, cudaGetErrorString(st));
    void *p = NULL;
    st = cudaMalloc(&p, HR_CU_SCRATCH_BYTES);
    if (st != cudaSuccess) return hr_errf(e, "CUDA device %d: cudaMalloc of the %llu-byte scratch: %s", i,
                                          (unsigned long long)HR_CU_SCRATCH_BYTES, cudaGetErrorString(st));
    c->scratch = (char *)p;
    c->overhead = HR_CU_CONTEXT_BYTES + cu_lmem_reserve(i) + HR_CU_SCRATCH_BYTES;
    return 0;
}

/* Why cudaGetDeviceCount failed, naming the driver when it is missing or too old. */
static void cu_no_device(cudaError_t st, hr_err *e) {
    int drv = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    if (drv == 0)
        hr_errf(e, "no CUDA device: no NVIDIA driver is installed (cudaGetDeviceCount: %s)", cudaGetErrorString(st));
    else if (st == cudaErrorInsufficientDriver)
        hr_errf(e, "no CUDA device: the NVIDIA driver supports CUDA %d.%d, this build needs %d.%d", drv / 1000,
                drv % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    else
        hr_errf(e, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(st));
}

extern "C" int hr_dev_cuda_count(hr_err *e) {
    int n = 0;
    const cudaError_t st = cudaGetDeviceCount(&n);
    if (st != cudaSuccess) {
        (void)cudaGetLastError();
        cu_no_device(st, e);
        return 0;
    }
    if (n <= 0) hr_errf(e, "no CUDA device: cudaGetDeviceCount found none");
    return n > 0 ? n : 0;
}

extern "C" int hr_dev_cuda_describe(int index, hr_dev_desc *out, hr_err *e) {
    cudaDeviceProp prop;
    cudaError_t st = cudaGetDeviceProperties(&prop, index);
    if (st != cudaSuccess) return hr_cu_fail(e, "cudaGetDeviceProperties", st);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%.127s", prop.name);
    out->total = prop.totalGlobalMem, out->cc_major = prop.major, out->cc_minor = prop.minor;
    size_t f = 0, t = 0;
    if ((st = cudaSetDevice(index)) != cudaSuccess) return hr_cu_fail(e, "cudaSetDevice", st);
    if ((st = cudaMemGetInfo(&f, &t)) != cudaSuccess) return hr_cu_fail(e, "cudaMemGetInfo", st);
    out->free_b = f;
    return 0;
}

extern "C" hr_dev *hr_dev_cuda_open(int index, hr_err *e) {
    int n = 0;
    cudaError_t st = cudaGetDeviceCount(&n);
    if (st != cudaSuccess) {
        (void)cudaGetLastError();
        cu_no_device(st, e);
        return NULL;
    }
    if (n <= 0) {
        hr_errf(e, "no CUDA device: cudaGetDeviceCount found none");
        return NULL;
    }
    if (index < 0 || index >= n) {
        hr_errf(e, "CUDA device %d does not exist (%d device%s)", index, n, n == 1 ? "" : "s");
        return NULL;
    }
    hr_cuda *c = (hr_cuda *)calloc(1, sizeof(hr_cuda));
    if (!c) {
        hr_errf(e, "CUDA device %d: out of host memory", index);
        return NULL;
    }
    c->dev.ops = &k_cuda_ops;
    c->dev.impl = c;
    c->index = index;
    if (cu_init(c, e)) {
        (void)cudaGetLastError();
        cu_free(&c->dev);
        return NULL;
    }
    return &c->dev;
}
