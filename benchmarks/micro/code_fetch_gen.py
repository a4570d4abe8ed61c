"""Generates the instruction-fetch micro tests of session 65 (benchmarks/results/logs/
sm90_s65_2026-11-29/micro_runs.txt): each kernel runs 32 "stations" (4 dependent FMAs, then a
taken branch over a never-run 2 KB block, so every station is a new 128-byte line reached by a
jump), timed by %globaltimer, each launch right after one of the same kernel, with or without a
256 MB cudaMemset (an L2 flush) between them.

  python code_fetch_gen.py jumps   # -> jumps.cu: the stations after a never-run lead block of
                                   #    0-96 KB (is a jump far into the function slow?)
  python code_fetch_gen.py evict   # -> evict.cu: the stations, then 0-128 KB of straight-line
                                   #    code in the same launch (does it evict the stations' lines
                                   #    from the SM's instruction caches before the next launch?)
  nvcc -arch=sm_90a -O3 -o jumps jumps.cu
"""
import sys

STATIONS, DEAD = 32, 128  # 128 FMAs: 2 KB skipped per station
MODES = {
    "jumps": {"lead0": 0, "lead32k": 32768, "lead56k": 57344, "lead64k": 65536, "lead96k": 98304},
    "evict": {"tail0": 0, "tail16k": 16384, "tail32k": 32768, "tail48k": 49152, "tail64k": 65536,
              "tail96k": 98304, "tail128k": 131072},
}
FMA = '"fma.rn.f32 %0, %0, %2, %3;"'


def kernel(name, lead, tail):
    body = ['"{ .reg .pred p;"', '"setp.ne.s32 p, %1, 0;"']
    if lead:
        body += ['"@p bra LEAD_%=;"'] + [FMA] * (lead // 16) + ['"LEAD_%=:"']
    for k in range(STATIONS):
        body += [FMA] * 4 + [f'"@p bra S{k}_%=;"']
        body += ['"fma.rn.f32 %0, %0, %3, %2;"'] * DEAD + [f'"S{k}_%=:"']
    body.append('"}"')
    out = [f"__global__ void __launch_bounds__(32, 1) k_{name}(float* o, unsigned long long* t, "
           "int f, float a, float b) {",
           "  unsigned long long t0 = gt(); float x = o[threadIdx.x];",
           "  asm volatile(" + "\n".join(body) + ' : "+f"(x) : "r"(f), "f"(a), "f"(b));',
           "  unsigned long long t1 = gt();"]
    if tail:
        out.append("  asm volatile(" + "\n".join(['"fma.rn.f32 %0, %0, %1, %2;"'] * (tail // 16)) +
                   ' : "+f"(x) : "f"(a), "f"(b));')
    out.append("  o[threadIdx.x] = x;"
               " if (threadIdx.x == 0) { t[2 * blockIdx.x] = t0; t[2 * blockIdx.x + 1] = t1; } }")
    return out


MAIN = r'''
template <typename K> void timeit(const char* name, K k, float* o, unsigned long long* t, char* flush) {
  const int ctas = 132;
  for (int mode = 0; mode < 2; ++mode) {  // 0: warm, 1: after a 256 MB memset
    std::vector<double> sp;
    for (int it = 0; it < 7; ++it) {
      k<<<ctas, 32>>>(o, t, 1, 1.0001f, 0.5f);
      if (mode) cudaMemset(flush, it, 256 << 20);
      k<<<ctas, 32>>>(o, t, 1, 1.0001f, 0.5f);
      cudaDeviceSynchronize();
      std::vector<unsigned long long> h(2 * ctas);
      cudaMemcpy(h.data(), t, ctas * 16, cudaMemcpyDeviceToHost);
      std::vector<double> d;
      for (int c = 0; c < ctas; ++c) d.push_back((h[2 * c + 1] - h[2 * c]) / 1e3);
      std::sort(d.begin(), d.end());
      sp.push_back(d[ctas / 2]);
    }
    std::sort(sp.begin(), sp.end());
    printf("%-9s %s: the stations' span, median CTA, median of 7 launches %.2f us (min %.2f max %.2f)\n",
           name, mode ? "cold" : "warm", sp[3], sp[0], sp[6]);
  }
}
int main() {
  float* o; unsigned long long* t; char* flush;
  cudaMalloc(&o, 4096); cudaMemset(o, 0, 4096); cudaMalloc(&t, 132 * 16); cudaMalloc(&flush, 256 << 20);
  for (int rep = 0; rep < 2; ++rep) {
'''


def main(mode):
    variants = MODES[mode]
    out = ["#include <cstdio>", "#include <vector>", "#include <algorithm>",
           "__device__ __forceinline__ unsigned long long gt() { unsigned long long t; "
           'asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }']
    for name, size in variants.items():
        out += kernel(name, size if mode == "jumps" else 0, size if mode == "evict" else 0)
    out.append(MAIN)
    out += [f'    timeit("{name}", k_{name}, o, t, flush);' for name in variants]
    out.append('  }\n  printf("err %s\\n", cudaGetErrorString(cudaDeviceSynchronize()));\n}')
    with open(f"{mode}.cu", "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "jumps")
