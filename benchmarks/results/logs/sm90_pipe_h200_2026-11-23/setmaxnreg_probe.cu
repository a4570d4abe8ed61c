#include <stdint.h>
#include <cute/arch/mma_sm90_gmma.hpp>
namespace gmma = cute::SM90::GMMA;
using Op = gmma::MMA_64x256x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::MN>;
template <int N, size_t... I>
__device__ __forceinline__ void w(uint64_t a, uint64_t b, float (&d)[N], std::index_sequence<I...>) { Op::fma(a, b, d[I]..., gmma::ScaleOut::One); }
__device__ void work(float* out, uint64_t a) {
  float o[128];
  for (int i = 0; i < 128; ++i) o[i] = 0;
  for (int k = 0; k < 100; ++k) { asm volatile("wgmma.fence.sync.aligned;"); w(a + k, a, o, std::make_index_sequence<128>{}); asm volatile("wgmma.commit_group.sync.aligned;"); asm volatile("wgmma.wait_group.sync.aligned 0;"); }
  for (int i = 0; i < 128; ++i) out[threadIdx.x * 128 + i] = o[i];
}
__global__ void __launch_bounds__(NT, 1) k(float* out, uint64_t a) {
  if (threadIdx.x < 128) { asm volatile("setmaxnreg.dec.sync.aligned.u32 24;"); out[0] = 1; }
#if TWO
  else if (threadIdx.x < 256) { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(INC1)); work(out, a); }
#endif
  else { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(INC2)); work(out, a + 7); }
}
