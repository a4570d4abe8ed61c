// Launcher status convention, CUDA side (see status.h for the convention itself).
//
// Include this header in exactly one translation unit per library (each JIT library is one):
// it defines the library's mlaw_status_string().
#pragma once

#include <cuda_runtime.h>

#include "mla_wrapper/common/status.h"

namespace mlaw {

// Returns the launch status of the kernel(s) just issued on this thread.
inline int launch_status() {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? 0 : static_cast<int>(err);
}

// A cudaLaunchKernelEx configuration with the first `num_attrs` launch attributes of `attrs`
// (a bool passes one or none): the planned families' cluster, cooperative and programmatic
// launches.
inline cudaLaunchConfig_t launch_config(dim3 grid, dim3 block, size_t smem_bytes,
                                        cudaStream_t stream, cudaLaunchAttribute* attrs,
                                        unsigned num_attrs) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = num_attrs;
  return cfg;
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
