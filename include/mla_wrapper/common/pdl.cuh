// Programmatic dependent launch (SM90+), shared by the planned families' kernels: the attention
// kernels and the split-KV combine let the stream's next kernel launch as they start, and the
// kernels launched programmatically wait for the grid before them before reading what it wrote.
// Both are no-ops below SM90 and after an ordinary launch.
#pragma once

namespace mlaw {

// Lets a kernel launched after this one with programmatic stream serialization start now (it
// waits for this grid's completion before reading what this grid writes).
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// Waits until the grids this one depends on (the stream's previous kernel, where this one was
// launched with programmatic stream serialization) have completed and their writes are
// visible; returns at once after an ordinary launch.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace mlaw
