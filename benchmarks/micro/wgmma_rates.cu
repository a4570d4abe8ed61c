// Clocks per wgmma of the shapes the sm90 family uses or could use, A from shared memory (SS)
// or from registers (RS), f16 with f32 accumulation: one CTA per SM, one or two warpgroups
// each issuing kIters groups of 8 wgmmas (k-steps over one 64-column block, commit, wait for
// all but the last group) into one accumulator; clock64 around the loop. Development probe
// for the e4m3 path's register-widened operands (sm90/tall.cuh: an RS m64n32k16 took ~36
// clocks in the tall loop where the SS one took ~28; session 60): whether an RS m64n64k16, the
// wide instance's S^T = K Q^T or O^T = V^T P^T block, costs what an SS one does.
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I include \
//     -I <cutlass>/include benchmarks/micro/wgmma_rates.cu -o rates
// (<cutlass>: python -c "import cutlass_library, os; print(os.path.dirname(
//  cutlass_library.__file__) + '/source')")
#include <cstdio>
#include <cuda_runtime.h>
#include "mla_wrapper/sm90/traits.cuh"
#include "wgmma_loop.cuh"

using namespace mlaw::sm90;
constexpr int kIters = 2048, kGroup = kWgmmaGroup;

template <int N, bool kRS>
struct Atom;
template <>
struct Atom<32, false> {
  using Op = gmma::MMA_64x32x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>;
};
template <>
struct Atom<64, false> {
  using Op = gmma::MMA_64x64x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>;
};
template <>
struct Atom<256, false> {
  using Op = gmma::MMA_64x256x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>;
};
template <>
struct Atom<32, true> {
  using Op = gmma::MMA_64x32x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>;
};
template <>
struct Atom<64, true> {
  using Op = gmma::MMA_64x64x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>;
};

// A: [64 rows][64 columns] f16 (8 KB), B: [N rows][64 columns] (K-major, 128-byte swizzle).
template <int N, bool kRS>
__global__ void __launch_bounds__(256, 1) rates(long long* clocks, float* sink) {
  using Op = typename Atom<N, kRS>::Op;
  __shared__ alignas(1024) char smem[8192 + N * 128];
  for (int i = threadIdx.x; i < (8192 + N * 128) / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u * ((i % 7) == 0);  // (1.0 pairs, sparse)
  fence_proxy_async();
  __syncthreads();
  uint32_t a[4] = {0x3c003c00u, 0x3c003c00u, 0u, threadIdx.x};
  const long long cl = wgmma_loop<Op, N, kRS>(smem, a, kIters, sink, [](uint32_t (&)[4], int) {});
  if (threadIdx.x % 128 == 0) clocks[blockIdx.x * 2 + threadIdx.x / 128] = cl;
}

template <int N, bool kRS>
void run(int sms, long long* clocks, float* sink) {
  for (int wgs = 1; wgs <= 2; ++wgs) {
    rates<N, kRS><<<sms, 128 * wgs>>>(clocks, sink);  // (warm-up)
    rates<N, kRS><<<sms, 128 * wgs>>>(clocks, sink);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      printf("m64n%dk16 %s: %s\n", N, kRS ? "RS" : "SS", cudaGetErrorString(e));
      return;
    }
    static long long h[2 * 1024];
    cudaMemcpy(h, clocks, sizeof(long long) * 2 * sms, cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int b = 0; b < sms; ++b)
      for (int w = 0; w < wgs; ++w) sum += double(h[2 * b + w]);
    const double per = sum / (sms * wgs) / (double(kIters) * kGroup);
    printf("m64n%-3dk16 %s, %d warpgroup(s) an SM: %6.1f clocks a wgmma a warpgroup, %6.1f an SM\n",
           N, kRS ? "RS" : "SS", wgs, per, per / wgs);
  }
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs\n", prop.name, sms);
  long long* clocks;
  float* sink;
  cudaMalloc(&clocks, sizeof(long long) * 2 * sms);
  cudaMalloc(&sink, sizeof(float) * 256);
  run<32, false>(sms, clocks, sink);
  run<32, true>(sms, clocks, sink);
  run<64, false>(sms, clocks, sink);
  run<64, true>(sms, clocks, sink);
  run<256, false>(sms, clocks, sink);  // (RS at N = 256: ptxas serialized it here, C7512)
  return 0;
}
