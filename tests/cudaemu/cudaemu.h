/* A CPU emulator of the part of CUDA that src/backends/cuda uses, so the backend's host
 * code and kernels run, and are tested, on machines without a GPU (docs/cuda.md).
 *
 * The .cu files are compiled as C++ against this header (through the stand-in
 * cuda_runtime.h, cuda_fp16.h and cuda_bf16.h next to it). Each kernel launch runs its
 * blocks one after another; the threads of a block are fibers that switch at
 * __syncthreads and at warp shuffles, so barriers and shuffles mean what they mean on a
 * GPU, and misuse the hardware would not forgive (a barrier that not every thread
 * reaches, a full-warp shuffle after some lanes have left, a launch configuration out of
 * range) stops the kernel with a message instead of passing by luck. A stream is a
 * queue worked by its own host thread, so copies and kernels run asynchronously with
 * the caller as on a GPU, and a caller that reads results before synchronizing can
 * see stale data. Device memory is host memory filled with 0xff bytes (NaN as floats) when
 * allocated, so reads of memory nobody wrote show up in results.
 *
 * The device exists only when HEARTH_CUDAEMU_VRAM names its memory ("2G", "512M",
 * bytes); otherwise cudaGetDeviceCount reports no device, as on a machine without a GPU.
 * HEARTH_CUDAEMU_CONTEXT is what the emulated driver's context takes from that memory
 * (default 300M). HEARTH_CUDAEMU_LAZY=1 runs a stream's work only when it is waited for:
 * a missing synchronization then reads stale data every time, not just sometimes. Not emulated: timing, memory coalescing, bank conflicts, fused
 * multiply-add contraction (products and sums round separately here), and the device's
 * own expf/sinf/cosf, which are the host's libm. */
#ifndef HR_CUDAEMU_H
#define HR_CUDAEMU_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#define CUDART_VERSION 13000

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* A block's threads are fibers on one host thread, and blocks run one at a time on it:
 * a static per host thread is exactly one copy per running block. */
#define __shared__ static thread_local

/* ---- types ---- */
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct hr_emu_u3 {
    unsigned x, y, z;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(16) int4 {
    int x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
struct __half {
    uint16_t bits;
};
struct __nv_bfloat16 {
    uint16_t bits;
};

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorLaunchFailure = 719,
} cudaError_t;

typedef struct hr_emu_stream *cudaStream_t;
typedef struct hr_emu_event *cudaEvent_t;
typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
} cudaMemcpyKind;
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39,
};
enum cudaLimit {
    cudaLimitStackSize = 0,
    cudaLimitPrintfFifoSize = 1,
    cudaLimitMallocHeapSize = 2,
};
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
};
/* The fields the backend reads; the real struct has many more. */
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor, multiProcessorCount;
};
#define cudaStreamDefault 0u
#define cudaStreamNonBlocking 1u
#define cudaHostAllocDefault 0u
#define cudaEventDisableTiming 2u

/* ---- runtime API (cudaemu.cpp) ---- */
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int index);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int index);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int index);
cudaError_t cudaDeviceGetLimit(size_t *v, cudaLimit limit);
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t v);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s);
/* Events: a marker in a stream's queue, complete once the stream's work before it has run
 * (cudaEventQuery never waits; with HEARTH_CUDAEMU_LAZY=1 it stays not ready until the
 * stream is waited for). */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t ev);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);
cudaError_t hr_emu_func_attributes(cudaFuncAttributes *fa);
template <typename F> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *fa, F) { return hr_emu_func_attributes(fa); }

/* ---- the executing thread's place in the grid (set by the scheduler) ---- */
extern thread_local hr_emu_u3 hr_emu_tid, hr_emu_bid, hr_emu_bdim, hr_emu_gdim;
#define threadIdx hr_emu_tid
#define blockIdx hr_emu_bid
#define blockDim hr_emu_bdim
#define gridDim hr_emu_gdim

void hr_emu_syncthreads(void);
void hr_emu_syncwarp(unsigned mask);
/* Lane exchange of n <= 8 bytes: mode 0 xor, 1 down, 2 up, 3 index. */
void hr_emu_shfl(unsigned mask, const void *v, void *out, size_t n, int arg, int mode, int width);
/* Dynamic shared memory of the running launch (its size as launched). */
void *hr_emu_dyn_shared(void);

#define __syncthreads() hr_emu_syncthreads()
#define __syncwarp(...) hr_emu_syncwarp(0xffffffffu)
template <typename T> inline T hr_emu_shfl_t(unsigned mask, T v, int arg, int mode, int width) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    T r;
    hr_emu_shfl(mask, &v, &r, sizeof(T), arg, mode, width);
    return r;
}
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    return hr_emu_shfl_t(mask, v, m, 0, width);
}
template <typename T> inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return hr_emu_shfl_t(mask, v, (int)d, 1, width);
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return hr_emu_shfl_t(mask, v, (int)d, 2, width);
}
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return hr_emu_shfl_t(mask, v, src, 3, width);
}

/* ---- arithmetic intrinsics: IEEE single operations rounded to nearest even (the
 * emulator is built without contraction, so these are exactly what they say) ---- */
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
template <typename To, typename From> inline To hr_emu_bits(From v) {
    static_assert(sizeof(To) == sizeof(From), "a reinterpretation keeps the size");
    To t;
    memcpy(&t, &v, sizeof t);
    return t;
}
inline float __int_as_float(int i) { return hr_emu_bits<float>(i); }
inline float __uint_as_float(unsigned u) { return hr_emu_bits<float>(u); }
inline int __float_as_int(float f) { return hr_emu_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return hr_emu_bits<unsigned>(f); }
inline int __dp4a(int a, int b, int c) {
    const unsigned ua = (unsigned)a, ub = (unsigned)b;
    for (int i = 0; i < 4; i++) c += (int)(int8_t)(uint8_t)(ua >> (8 * i)) * (int)(int8_t)(uint8_t)(ub >> (8 * i));
    return c;
}
inline unsigned __vsub4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= ((((a >> (8 * i)) & 0xffu) - ((b >> (8 * i)) & 0xffu)) & 0xffu) << (8 * i);
    return r;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

/* ---- F16 and BF16, written here from the IEEE formats (not shared with the engine, so
 * a conversion bug on either side shows up as a difference) ---- */
inline uint16_t hr_emu_f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00;  /* NaN */
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* 65520 and up round to infinity */
    if (ax < 0x38800000u) {                      /* below 2^-14: a subnormal half */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)nearbyintf(a * 16777216.0f); /* exact scaling, then ties to even */
    }
    const uint32_t r = ax - 0x38000000u; /* rebias the exponent from 127 to 15 */
    uint32_t h = r >> 13;
    const uint32_t rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

inline float hr_emu_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    uint32_t x;
    if (e == 0) {
        const float f = (float)m * 5.9604644775390625e-8f; /* m x 2^-24, exact */
        memcpy(&x, &f, 4);
        x |= sign;
    } else if (e == 31) {
        x = sign | 0x7f800000u | (m << 13);
    } else {
        x = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

inline uint16_t hr_emu_f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}
inline __half __ushort_as_half(unsigned short h) { return __half{h}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline float __half2float(__half h) { return hr_emu_h2f(h.bits); }
inline __half __float2half_rn(float f) { return __half{hr_emu_f2h(f)}; }
inline __half __float2half(float f) { return __half{hr_emu_f2h(f)}; }
inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.bits << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{hr_emu_f2bf(f)}; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16{hr_emu_f2bf(f)}; }

/* ---- launches: HR_CU_LAUNCH(k, grid, block, shm, stream)(args...) in the backend ---- */
typedef void (*hr_emu_invoke_fn)(const void *call);
/* Checks the configuration (an error for cudaGetLastError, as a failed launch) and
 * enqueues `call` (malloc'ed; freed once run) to be run by `invoke`. */
void hr_emu_enqueue(dim3 grid, dim3 block, size_t shm, cudaStream_t s, hr_emu_invoke_fn invoke, void *call);
void *hr_emu_call_alloc(size_t bytes);

template <typename... P> struct hr_emu_launcher {
    void (*k)(P...);
    dim3 grid, block;
    size_t shm;
    cudaStream_t stream;

    struct call {
        void (*k)(P...);
        std::tuple<typename std::decay<P>::type...> args;
    };
    static void invoke(const void *p) {
        const call *c = (const call *)p;
        std::apply(c->k, c->args);
    }
    template <typename... A> void operator()(A &&...a) const {
        /* Kernel arguments travel by value, copied at the launch as CUDA copies them. */
        static_assert(std::is_trivially_destructible<call>::value, "kernel arguments must be plain data");
        call *c = new (hr_emu_call_alloc(sizeof(call))) call{k, std::tuple<typename std::decay<P>::type...>(std::forward<A>(a)...)};
        hr_emu_enqueue(grid, block, shm, stream, &invoke, c);
    }
};
template <typename... P>
inline hr_emu_launcher<P...> hr_emu_launch(void (*k)(P...), dim3 grid, dim3 block, size_t shm, cudaStream_t s) {
    return hr_emu_launcher<P...>{k, grid, block, shm, s};
}
#endif
