// Host cost of cudaLaunchKernelEx by parameter size and launch attribute (GPU kept busy).
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
template <int N> struct Blob { char b[N]; };
template <int N> __global__ void k(const __grid_constant__ Blob<N> p) { if (threadIdx.x == 9999) printf("%d", p.b[0]); }
__global__ void spin(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) {} }
template <int N>
double cost(cudaStream_t s, int cluster, int pdl, int smem) {
  Blob<N> p{};
  cudaLaunchAttribute at[2]; int na = 0;
  if (cluster) { at[na].id = cudaLaunchAttributeClusterDimension; at[na].val.clusterDim.x = 2; at[na].val.clusterDim.y = 1; at[na].val.clusterDim.z = 1; ++na; }
  if (pdl) { at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[na].val.programmaticStreamSerializationAllowed = 1; ++na; }
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(132); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem; cfg.stream = s; cfg.attrs = at; cfg.numAttrs = na;
  if (smem > 48 * 1024) cudaFuncSetAttribute(k<N>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  std::vector<double> v;
  for (int r = 0; r < 5; ++r) {
    cudaStreamSynchronize(s);
    spin<<<1, 1, 0, s>>>(200000000LL);  // ~0.1 s busy
    for (int i = 0; i < 20; ++i) cudaLaunchKernelEx(&cfg, k<N>, p);
    auto t0 = std::chrono::high_resolution_clock::now();
    const int n = 200;
    for (int i = 0; i < n; ++i) cudaLaunchKernelEx(&cfg, k<N>, p);
    auto t1 = std::chrono::high_resolution_clock::now();
    v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  cudaStreamSynchronize(s);
  std::sort(v.begin(), v.end());
  return v[2];
}
int main() {
  cudaStream_t s; cudaStreamCreate(&s);
  cudaFree(0);
  printf("launch host us (median of 5 x 200, GPU busy); err=%s\n", cudaGetErrorString(cudaGetLastError()));
  printf("params   64 B: plain %.2f  cluster %.2f  pdl %.2f  smem226K %.2f  cluster+smem %.2f\n",
         cost<64>(s,0,0,0), cost<64>(s,1,0,0), cost<64>(s,0,1,0), cost<64>(s,0,0,231424), cost<64>(s,1,0,231424));
  printf("params  256 B: plain %.2f  cluster %.2f\n", cost<256>(s,0,0,0), cost<256>(s,1,0,0));
  printf("params  640 B: plain %.2f  cluster %.2f\n", cost<640>(s,0,0,0), cost<640>(s,1,0,0));
  printf("params 1216 B: plain %.2f  cluster %.2f  cluster+smem %.2f\n", cost<1216>(s,0,0,0), cost<1216>(s,1,0,0), cost<1216>(s,1,0,231424));
  printf("params 2048 B: plain %.2f  cluster %.2f\n", cost<2048>(s,0,0,0), cost<2048>(s,1,0,0));
  printf("err=%s\n", cudaGetErrorString(cudaGetLastError()));
  int dev; double t;
  { auto t0 = std::chrono::high_resolution_clock::now(); for (int i = 0; i < 1000; ++i) cudaGetDevice(&dev); auto t1 = std::chrono::high_resolution_clock::now(); t = std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000; }
  printf("cudaGetDevice %.3f us\n", t);
  { auto t0 = std::chrono::high_resolution_clock::now(); for (int i = 0; i < 1000; ++i) (void)cudaGetLastError(); auto t1 = std::chrono::high_resolution_clock::now(); t = std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000; }
  printf("cudaGetLastError %.3f us\n", t);
  return 0;
}
