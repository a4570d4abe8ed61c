// Sustained rates of the GEMM forms an e4m3 cache could run on, at the board's power cap: every
// SM runs two warpgroups issuing one wgmma form back to back on random operands for ~2 s (after
// a 1 s warm-up at the cap), and the program prints wgmmas a second per SM and clocks a wgmma.
// Development probe for a wide e4m3 instance on native fp8 wgmma (no widening in shared memory):
// its score GEMM S = Q K^T as m64n64k32 e4m3 with Q split in two e4m3 terms (hi + lo: exact for
// a bf16 query) does a 16-bit m64n64k16's useful work per wgmma, and its O^T = V^T P^T as
// m64n64k32 e4m3 RS with P split likewise does a quarter of a 16-bit m64n256k16's. Whether that
// pays at the cap is a question of energy a wgmma, which only a sustained run answers; sample
// nvidia-smi beside it for the clocks and the power.
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I include \
//     -I <cutlass>/include benchmarks/micro/fp8_gemm_power.cu -o fp8_power
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include "mla_wrapper/sm90/traits.cuh"
#include "wgmma_loop.cuh"

using namespace mlaw::sm90;
constexpr int kGroup = kWgmmaGroup;

struct F16x64SS {
  using Op = gmma::MMA_64x64x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>;
  static constexpr int N = 64;
  static constexpr bool kRS = false, kFp8 = false;
  static constexpr const char* name = "f16 m64n64k16 SS ";
};
struct F16x256SS {
  using Op = gmma::MMA_64x256x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>;
  static constexpr int N = 256;
  static constexpr bool kRS = false, kFp8 = false;
  static constexpr const char* name = "f16 m64n256k16 SS";
};
struct F16x64RS {
  using Op = gmma::MMA_64x64x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>;
  static constexpr int N = 64;
  static constexpr bool kRS = true, kFp8 = false;
  static constexpr const char* name = "f16 m64n64k16 RS ";
};
struct E4x64SS {
  using Op = gmma::MMA_64x64x32_F32E4M3E4M3_SS_TN<>;
  static constexpr int N = 64;
  static constexpr bool kRS = false, kFp8 = true;
  static constexpr const char* name = "e4m3 m64n64k32 SS";
};
struct E4x64RS {
  using Op = gmma::MMA_64x64x32_F32E4M3E4M3_RS_TN<>;
  static constexpr int N = 64;
  static constexpr bool kRS = true, kFp8 = true;
  static constexpr const char* name = "e4m3 m64n64k32 RS";
};

__device__ __forceinline__ uint32_t hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}
// Random finite values of magnitude ~0.25-8: f16 pairs (exponent 13-18) or e4m3 quads (5-9).
__device__ __forceinline__ uint32_t random_word(uint32_t x, bool fp8) {
  const uint32_t h = hash(x), g = hash(x + 0x9e3779b9U);
  if (fp8) {
    uint32_t w = 0;
    for (int b = 0; b < 4; ++b) {
      const uint32_t r = (h >> (8 * b)) & 0xff;
      const uint32_t e = 5 + ((g >> (4 * b)) % 5);
      w |= ((r & 0x87) | (e << 3)) << (8 * b);
    }
    return w;
  }
  uint32_t w = 0;
  for (int b = 0; b < 2; ++b) {
    const uint32_t r = (h >> (16 * b)) & 0xffff;
    const uint32_t e = 13 + ((g >> (4 * b)) % 6);
    w |= ((r & 0x83ff) | (e << 10)) << (16 * b);
  }
  return w;
}

// A: [64 rows][128 bytes], B: [N rows][128 bytes] (K-major, 128-byte swizzle); k-steps of 32 bytes.
template <typename F>
__global__ void __launch_bounds__(256, 1) sustain(int iters, long long* clocks, float* sink) {
  constexpr int N = F::N;
  __shared__ alignas(1024) char smem[8192 + N * 128];
  for (int i = threadIdx.x; i < (8192 + N * 128) / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = random_word(i * 131 + blockIdx.x, F::kFp8);
  fence_proxy_async();
  __syncthreads();
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = random_word(threadIdx.x * 4 + i, F::kFp8);
  // (RS: a new A operand a group, as a loop's widened fragments)
  const long long cl = wgmma_loop<typename F::Op, N, F::kRS>(
      smem, a, iters, sink, [](uint32_t (&x)[4], int it) {
        if constexpr (F::kRS) {
#pragma unroll
          for (int i = 0; i < 4; ++i) x[i] = x[i] ^ ((it & 7) * 0x01010101u & 0x07070707u);
        }
      });
  if (threadIdx.x == 0) clocks[blockIdx.x] = cl;
}

template <typename F>
void run(int sms, long long* clocks, float* sink, double warm_s, double run_s) {
  const int iters = 4096;
  auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  double t = now();
  while (now() - t < warm_s) {
    sustain<F><<<sms, 256>>>(iters, clocks, sink);
    cudaDeviceSynchronize();
  }
  const double wall0 = std::chrono::duration<double>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  t = now();
  long long launches = 0;
  while (now() - t < run_s) {
    for (int i = 0; i < 8; ++i) sustain<F><<<sms, 256>>>(iters, clocks, sink);
    cudaDeviceSynchronize();
    launches += 8;
  }
  const double el = now() - t;
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    printf("%s: %s\n", F::name, cudaGetErrorString(e));
    return;
  }
  static long long h[1024];
  cudaMemcpy(h, clocks, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
  double cl = 0;
  for (int b = 0; b < sms; ++b) cl += double(h[b]);
  cl /= sms;
  const double per_sm_wg = double(iters) * kGroup;  // wgmmas a warpgroup a launch
  const double rate = launches * per_sm_wg * 2 / el;  // wgmmas a second an SM (two warpgroups)
  printf("%s: %.4g wgmmas/s an SM, %.1f clocks a wgmma a warpgroup (last launch), "
         "~%.0f MHz; wall %.3f-%.3f\n",
         F::name, rate, cl / per_sm_wg, rate / 2 * cl / per_sm_wg / 1e6, wall0, wall0 + el);
  fflush(stdout);
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs; two warpgroups an SM, each one form back to back\n", prop.name, sms);
  const double run_s = argc > 1 ? atof(argv[1]) : 2.0;
  long long* clocks;
  float* sink;
  cudaMalloc(&clocks, sizeof(long long) * sms);
  cudaMalloc(&sink, sizeof(float) * 256);
  for (int rep = 0; rep < 2; ++rep) {
    run<F16x64SS>(sms, clocks, sink, 1.0, run_s);
    run<E4x64SS>(sms, clocks, sink, 1.0, run_s);
    run<F16x256SS>(sms, clocks, sink, 1.0, run_s);
    run<E4x64RS>(sms, clocks, sink, 1.0, run_s);
    run<F16x64RS>(sms, clocks, sink, 1.0, run_s);
  }
  return 0;
}
