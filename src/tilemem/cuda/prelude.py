"""The fixed top of every generated source: integer types, float storage types, conversions.

Generated kernels include no CUDA headers (pip's NVRTC ships none), so 16-bit
and 8-bit floats are storage structs-free typedefs converted with PTX ``cvt``. Device
helpers that belong to one instruction are declared with it (``ir/intrinsics``) and
included only by kernels that use it.
"""

PRELUDE = r"""// NVRTC has no C library headers; nvcc includes the host's <stdint.h>, whose int64_t
// (long on LP64 Linux) must not be redeclared as long long.
#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

// 16- and 8-bit floats are stored as raw bits; arithmetic happens in float.
typedef unsigned short tm_bf16;
typedef unsigned short tm_f16;
typedef unsigned char tm_fp8_e4m3;
typedef unsigned char tm_fp8_e5m2;
typedef unsigned char tm_fp8_e8m0;
typedef unsigned char tm_fp4x2_e2m1;
typedef unsigned char tm_fp6x4_e2m3;
typedef unsigned char tm_fp6x4_e3m2;

// A TMA descriptor (CUtensorMap): 128 opaque bytes, 64-byte aligned.
struct __align__(64) tm_tensormap { unsigned long long opaque[16]; };

__device__ __forceinline__ float tm_bf16_to_f32(tm_bf16 x) {
  return __uint_as_float(((uint32_t)x) << 16);
}
__device__ __forceinline__ tm_bf16 tm_f32_to_bf16(float x) {
  tm_bf16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r;
}
__device__ __forceinline__ float tm_f16_to_f32(tm_f16 x) {
  float r; asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x)); return r;
}
__device__ __forceinline__ tm_f16 tm_f32_to_f16(float x) {
  tm_f16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r;
}
__device__ __forceinline__ uint32_t tm_smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
"""
