// Launcher status convention shared by every kernel library.
//
// Each extern "C" launcher returns an int: 0 = success, > 0 = a cudaError_t, < 0 = a library
// error (bad arguments, a CUTLASS can_implement failure) whose text was recorded with
// mlaw::fail(). Python calls mlaw_status_string(status) to build the exception message.
// Include this header in exactly one translation unit per library (each JIT library is one).
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>

#define MLAW_EXPORT extern "C" __attribute__((visibility("default")))

namespace mlaw {

inline char* status_buffer() {
  static thread_local char buffer[1024] = {0};
  return buffer;
}

// Records a library error message and returns the status for it (negative).
inline int fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(status_buffer(), 1024, fmt, ap);
  va_end(ap);
  return -1;
}

// Returns the launch status of the kernel(s) just issued on this thread.
inline int launch_status() {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? 0 : static_cast<int>(err);
}

}  // namespace mlaw

#define MLAW_CUDA_TRY(expr)                                   \
  do {                                                        \
    cudaError_t mlaw_err_ = (expr);                           \
    if (mlaw_err_ != cudaSuccess) return (int)mlaw_err_;      \
  } while (0)

MLAW_EXPORT const char* mlaw_status_string(int status) {
  if (status == 0) return "success";
  if (status > 0) return cudaGetErrorString(static_cast<cudaError_t>(status));
  return mlaw::status_buffer();
}
