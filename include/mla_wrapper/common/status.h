// The status convention shared by every library, host part (no CUDA headers, so the host-only
// planner library can use it too; status.cuh adds the CUDA side).
//
// Each extern "C" function returns an int: 0 = success, > 0 = a cudaError_t, < 0 = a library
// error (bad arguments, a CUTLASS can_implement failure) whose text was recorded with
// mlaw::fail(). Python calls mlaw_status_string(status) to build the exception message.
#pragma once

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

}  // namespace mlaw
