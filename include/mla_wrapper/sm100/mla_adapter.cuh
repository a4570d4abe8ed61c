// Adapter over CUTLASS's SM100 MLA decode kernel (examples/77_blackwell_fmha in the
// nvidia-cutlass package): kernel type choice, argument building, checks with readable
// reasons, workspace arithmetic and the launch sequence. The jinja template only picks the
// types (MlaConfig) and exports extern "C" entry points that forward here.
//
// Facts this adapter is built on (read in the installed CUTLASS headers):
//   * Sm100FmhaMlaKernelTmaWarpspecialized<TileShape, Element, ElementAcc, ElementOut,
//     ElementLSE, TileScheduler, kIsCpAsync>, TileShape = (H=128, S=128, (L=512, R=64)),
//     2-SM cluster (2,1,1), 256 threads/CTA. H must be 128 (one head tile).
//   * Load paths (Kernel::can_implement): the TMA path (kIsCpAsync=false) needs
//     page_size == 128 (= TileShapeS) with a page table; the cp.async path (kIsCpAsync=true)
//     needs a power-of-two page_size <= 128. The cp.async path gathers 128/page_size
//     page-table entries per 128-token tile, so entries up to the tile boundary are read.
//   * Split-KV: MLA::set_split_kv (when split_kv < 1) picks
//         max_splits = ceil(K/128); sms_per_batch = max(1, sm_count/B);
//         split_heur = min(max_splits, sms_per_batch); k_waves = ceil(max_splits/split_heur);
//         split = ceil(max_splits/k_waves)
//     and Kernel::get_workspace_size is (4*512 + 4) * 128 * split * B bytes when split > 1
//     (fp32 partial O + fp32 partial LSE per split), else 0; the reduction kernel needs none.
//   * With split > 1 the kernel only stores the partial LSEs when epilogue.ptr_lse != null,
//     and the reduction kernel (max 256 splits) writes O and LSE as contiguous [B,128,512] /
//     [B,128] (it ignores stride_o). So split > 1 needs a contiguous O and an LSE buffer.
//   * LSE is natural-log (fast_log(row_sum) + scale * row_max).
//   * seq_len == 0: the attention kernel writes nothing for that request.
//   * Scheduler: with the persistent scheduler a CTA loops over tiles, and a tile with no KV
//     work (an empty split of a short request, or seq_len == 0) returns from compute() with
//     only an arrive() on the epilogue named barrier; if the CTA then gets another tile the
//     compute warps can arrive again before the load warp's arrive_and_wait, which can
//     deadlock (vLLM fixed this in its fork, PR #26026). The individual scheduler gives every
//     CTA exactly one tile, so that path cannot hang; it is this library's default.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/kernel_hardware_info.h"

// From examples/77_blackwell_fmha (include path set by mla_wrapper/sm100.py).
#include "device/sm100_mla.hpp"
#include "kernel/sm100_mla_tile_scheduler.hpp"

#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/sm100/finalize.cuh"

namespace mlaw::sm100 {

constexpr int kNumHeadsTile = 128;  // TileShapeH: CUTLASS's MLA computes 128 heads per tile
constexpr int kTileKV = 128;        // TileShapeS: KV tokens per tile
constexpr int kHeadDimLatent = 512;
constexpr int kHeadDimRope = 64;
constexpr int kMaxSplits = 256;     // the reduction kernel's kMaxSplits (MLA<> passes 256)

template <class Element_, class ElementOut_, bool kCpAsync_, bool kPersistent_>
struct MlaConfig {
  using Element = Element_;
  using ElementOut = ElementOut_;
  using ElementAcc = float;
  static constexpr bool kCpAsync = kCpAsync_;
  static constexpr bool kPersistent = kPersistent_;
  using TileShape = cute::Shape<cute::Int<kNumHeadsTile>, cute::Int<kTileKV>,
                                cute::Shape<cute::Int<kHeadDimLatent>, cute::Int<kHeadDimRope>>>;
  using TileScheduler = std::conditional_t<kPersistent,
                                           cutlass::fmha::kernel::Sm100MlaPersistentTileScheduler,
                                           cutlass::fmha::kernel::Sm100MlaIndividualTileScheduler>;
  using Kernel = cutlass::fmha::kernel::Sm100FmhaMlaKernelTmaWarpspecialized<
      TileShape, Element, ElementAcc, ElementOut, ElementAcc, TileScheduler, kCpAsync>;
  using Device = cutlass::fmha::device::MLA<Kernel>;
  using Arguments = typename Device::Arguments;
  using ReductionKernel = typename Device::ReductionKernel;
};

// Everything one call needs. Strides are in elements; tensors are described as
//   q_nope [B, 128, 512], q_pe [B, 128, 64]           (stride_b, stride_h, 1)
//   ckv [num_pages, page_size, 512], kpe [.., 64]      (stride_page, stride_token, 1)
//   page_table [B, page_table_cols] int32             (page_table_stride, 1)
//   o_acc [B, 128, 512] (kernel output)               (o_stride_b, o_stride_h, 1)
//   lse_acc [B, 128] float32 contiguous (natural log), null when not needed
//   out [B, num_heads, 512] (caller's; may equal o_acc) and lse_out [B, num_heads] float32.
struct RunParams {
  const void* q_nope = nullptr; int64_t q_nope_stride_b = 0, q_nope_stride_h = 0;
  const void* q_pe = nullptr;   int64_t q_pe_stride_b = 0, q_pe_stride_h = 0;
  const void* ckv = nullptr;    int64_t ckv_stride_page = 0, ckv_stride_token = 0;
  const void* kpe = nullptr;    int64_t kpe_stride_page = 0, kpe_stride_token = 0;
  int num_pages = 0;
  int page_size = 0;
  const int* seq_lens = nullptr;
  const int* page_table = nullptr;
  int page_table_cols = 0;
  int64_t page_table_stride = 0;
  int batch = 0;
  void* o_acc = nullptr;        int64_t o_stride_b = 0, o_stride_h = 0;
  float* lse_acc = nullptr;
  void* out = nullptr;          int64_t out_stride_b = 0, out_stride_h = 0;
  int num_heads = 0;
  float* lse_out = nullptr;     int64_t lse_out_stride_b = 0;
  float lse_scale = 1.0f;
  float sm_scale = 0.0f;
  int num_kv_splits = 1;        // <= 0: CUTLASS's heuristic (set_split_kv)
  int sm_count = 0;
  void* workspace = nullptr;
  uint64_t workspace_bytes = 0;
};

namespace detail {

inline bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <class Element>
inline bool stride_ok(int64_t stride_elems) {
  return (stride_elems * static_cast<int64_t>(sizeof(Element))) % 16 == 0;
}

// Split count + workspace bytes, exactly as CUTLASS computes them (MLA::set_split_kv and
// MLA::get_workspace_size). Pure host arithmetic: callable without a GPU.
template <class Cfg>
int split_and_workspace(int64_t max_seq_len, int64_t num_batches, int sm_count,
                        int num_kv_splits, int* split_out, uint64_t* bytes_out) {
  if (max_seq_len < 1 || max_seq_len > INT_MAX) {
    return mlaw::fail("sm100 MLA: max_seq_len must be in [1, %d], got %lld", INT_MAX,
                      static_cast<long long>(max_seq_len));
  }
  if (num_batches < 1 || num_batches > INT_MAX) {
    return mlaw::fail("sm100 MLA: num_batches must be >= 1, got %lld",
                      static_cast<long long>(num_batches));
  }
  if (sm_count < 1) return mlaw::fail("sm100 MLA: sm_count must be >= 1, got %d", sm_count);
  if (num_kv_splits > kMaxSplits) {
    return mlaw::fail("sm100 MLA: num_kv_splits must be <= %d (the reduction kernel's maximum), "
                      "got %d", kMaxSplits, num_kv_splits);
  }
  typename Cfg::Arguments args{};
  args.problem_shape = cute::make_shape(cute::Int<kNumHeadsTile>{}, static_cast<int>(max_seq_len),
                                        cute::Shape<cute::Int<kHeadDimLatent>, cute::Int<kHeadDimRope>>{},
                                        static_cast<int>(num_batches));
  args.hw_info.sm_count = sm_count;
  args.split_kv = num_kv_splits >= 1 ? num_kv_splits : -1;
  args.is_fused_reduction = false;
  Cfg::Device::set_split_kv(args);
  *split_out = args.split_kv;
  *bytes_out = static_cast<uint64_t>(Cfg::Device::get_workspace_size(args));
  return 0;
}

// cudaFuncAttributeMaxDynamicSharedMemorySize is per device: set it once for each device
// this process launches on (CUTLASS's MLA::initialize sets it once per process only).
template <class Kernel>
int ensure_smem_attribute() {
  static std::atomic<uint64_t> done{0};
  static std::mutex mu;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return mlaw::fail("sm100 MLA: cudaGetDevice failed: %s", cudaGetErrorString(err));
  const uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit)) return 0;
  std::lock_guard<std::mutex> lock(mu);
  err = cudaFuncSetAttribute(reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>),
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(Kernel::SharedStorageSize));
  if (err != cudaSuccess) {
    cudaGetLastError();
    return mlaw::fail("sm100 MLA: setting %d bytes of dynamic shared memory failed on device %d: %s "
                      "(is this a Blackwell SM100 GPU?)", static_cast<int>(Kernel::SharedStorageSize),
                      dev, cudaGetErrorString(err));
  }
  done.fetch_or(bit, std::memory_order_release);
  return 0;
}

}  // namespace detail

template <class Cfg>
int workspace_size(int64_t max_seq_len, int64_t num_batches, int sm_count, int num_kv_splits,
                   uint64_t* bytes_out, int* split_out) {
  if (bytes_out == nullptr || split_out == nullptr) {
    return mlaw::fail("sm100 MLA workspace_size: null output pointer");
  }
  return detail::split_and_workspace<Cfg>(max_seq_len, num_batches, sm_count, num_kv_splits,
                                          split_out, bytes_out);
}

template <class Cfg>
int run(RunParams const& p, cudaStream_t stream) {
  using Element = typename Cfg::Element;
  using ElementOut = typename Cfg::ElementOut;
  using Kernel = typename Cfg::Kernel;
  using ReductionKernel = typename Cfg::ReductionKernel;
  constexpr const char* kPath = Cfg::kCpAsync ? "cp.async" : "TMA";

  // ---- arguments that every path needs ------------------------------------------------
  if (p.batch < 1) return mlaw::fail("sm100 MLA: batch must be >= 1, got %d", p.batch);
  if (p.num_heads < 1 || p.num_heads > kNumHeadsTile) {
    return mlaw::fail("sm100 MLA: num_heads per launch must be in [1, %d], got %d", kNumHeadsTile,
                      p.num_heads);
  }
  if (p.seq_lens == nullptr) return mlaw::fail("sm100 MLA: seq_lens is null");
  if (p.out == nullptr || p.o_acc == nullptr) return mlaw::fail("sm100 MLA: out is null");
  if (!detail::aligned16(p.out) || !detail::stride_ok<ElementOut>(p.out_stride_b) ||
      !detail::stride_ok<ElementOut>(p.out_stride_h)) {
    return mlaw::fail("sm100 MLA: out must be 16-byte aligned with 16-byte multiple strides "
                      "(strides %lld, %lld elements)", static_cast<long long>(p.out_stride_b),
                      static_cast<long long>(p.out_stride_h));
  }
  if (p.lse_out != nullptr && p.lse_acc == nullptr) {
    return mlaw::fail("sm100 MLA: lse requested but no kernel LSE buffer given");
  }
  FinalizeParams fin;
  fin.seq_lens = p.seq_lens;
  fin.batch = p.batch;
  fin.num_heads = p.num_heads;
  fin.src = p.o_acc; fin.src_stride_b = p.o_stride_b; fin.src_stride_h = p.o_stride_h;
  fin.dst = p.out; fin.dst_stride_b = p.out_stride_b; fin.dst_stride_h = p.out_stride_h;
  fin.copy = (p.out != p.o_acc || p.out_stride_b != p.o_stride_b || p.out_stride_h != p.o_stride_h) ? 1 : 0;
  fin.lse_src = p.lse_acc;
  fin.lse_dst = p.lse_out;
  fin.lse_dst_stride_b = p.lse_out_stride_b;
  fin.lse_scale = p.lse_scale;

  const int64_t max_seq_len = static_cast<int64_t>(p.page_table_cols) * p.page_size;
  if (p.page_table_cols < 0 || p.page_size < 1) {
    return mlaw::fail("sm100 MLA: page_size must be >= 1 and the page table must have >= 0 "
                      "columns, got page_size=%d, columns=%d", p.page_size, p.page_table_cols);
  }
  if (max_seq_len == 0) {
    // No request can hold a token: every output row is empty.
    cudaError_t err = launch_finalize<sizeof(ElementOut), kHeadDimLatent>(fin, stream);
    if (err != cudaSuccess) return mlaw::fail("sm100 MLA finalize kernel launch failed: %s", cudaGetErrorString(err));
    return 0;
  }
  if (max_seq_len > INT_MAX) {
    return mlaw::fail("sm100 MLA: page_table columns * page_size = %lld exceeds %d",
                      static_cast<long long>(max_seq_len), INT_MAX);
  }

  // ---- load path (CUTLASS's Kernel::can_implement, with reasons) --------------------
  if (Cfg::kCpAsync) {
    if (!detail::is_pow2(p.page_size) || p.page_size > kTileKV) {
      return mlaw::fail("sm100 MLA (cp.async path): page_size must be a power of two <= %d, got %d",
                        kTileKV, p.page_size);
    }
  } else if (p.page_size != kTileKV) {
    return mlaw::fail("sm100 MLA (TMA path): page_size must be %d, got %d (use the cp.async "
                      "kernel for smaller pages)", kTileKV, p.page_size);
  }
  if (p.q_nope == nullptr || p.q_pe == nullptr || p.ckv == nullptr || p.kpe == nullptr ||
      p.page_table == nullptr) {
    return mlaw::fail("sm100 MLA: null q / cache / page_table pointer");
  }
  if (p.num_pages < 1) return mlaw::fail("sm100 MLA: the cache has no pages (num_pages=%d)", p.num_pages);
  if (p.page_table_stride < p.page_table_cols) {
    return mlaw::fail("sm100 MLA: page_table row stride %lld is smaller than its %d columns",
                      static_cast<long long>(p.page_table_stride), p.page_table_cols);
  }
  if (p.page_table_stride > INT_MAX) return mlaw::fail("sm100 MLA: page_table row stride too large");
  const void* ptrs[4] = {p.q_nope, p.q_pe, p.ckv, p.kpe};
  const char* names[4] = {"q_nope", "q_pe", "ckv", "kpe"};
  const int64_t strides[4][2] = {{p.q_nope_stride_b, p.q_nope_stride_h}, {p.q_pe_stride_b, p.q_pe_stride_h},
                                 {p.ckv_stride_page, p.ckv_stride_token}, {p.kpe_stride_page, p.kpe_stride_token}};
  for (int i = 0; i < 4; ++i) {
    if (!detail::aligned16(ptrs[i]) || !detail::stride_ok<Element>(strides[i][0]) ||
        !detail::stride_ok<Element>(strides[i][1])) {
      return mlaw::fail("sm100 MLA: %s must be 16-byte aligned with strides that are multiples of "
                        "16 bytes (got strides %lld, %lld elements of %d bytes)", names[i],
                        static_cast<long long>(strides[i][0]), static_cast<long long>(strides[i][1]),
                        static_cast<int>(sizeof(Element)));
    }
  }
  if (!detail::aligned16(p.o_acc) || !detail::stride_ok<ElementOut>(p.o_stride_b) ||
      !detail::stride_ok<ElementOut>(p.o_stride_h)) {
    return mlaw::fail("sm100 MLA: the kernel output buffer must be 16-byte aligned with 16-byte "
                      "multiple strides");
  }

  // ---- CUTLASS arguments ----------------------------------------------------------------
  typename Cfg::Arguments args{};
  args.problem_shape = cute::make_shape(cute::Int<kNumHeadsTile>{}, static_cast<int>(max_seq_len),
                                        cute::Shape<cute::Int<kHeadDimLatent>, cute::Int<kHeadDimRope>>{},
                                        p.batch);
  auto& ml = args.mainloop;
  ml.softmax_scale = p.sm_scale;
  ml.ptr_q_latent = static_cast<Element*>(const_cast<void*>(p.q_nope));
  ml.stride_q_latent = cute::make_stride(p.q_nope_stride_h, cute::_1{}, p.q_nope_stride_b);
  ml.ptr_q_rope = static_cast<Element*>(const_cast<void*>(p.q_pe));
  ml.stride_q_rope = cute::make_stride(p.q_pe_stride_h, cute::_1{}, p.q_pe_stride_b);
  ml.ptr_c_latent = static_cast<Element*>(const_cast<void*>(p.ckv));
  ml.stride_c_latent = cute::make_stride(p.ckv_stride_token, cute::_1{}, p.ckv_stride_page);
  ml.ptr_k_rope = static_cast<Element*>(const_cast<void*>(p.kpe));
  ml.stride_k_rope = cute::make_stride(p.kpe_stride_token, cute::_1{}, p.kpe_stride_page);
  ml.ptr_seq = const_cast<int*>(p.seq_lens);
  ml.ptr_page_table = const_cast<int*>(p.page_table);
  ml.stride_page_table = cute::make_stride(cute::_1{}, static_cast<int>(p.page_table_stride));
  ml.page_count = p.num_pages;
  ml.page_size = p.page_size;
  args.epilogue.ptr_o = static_cast<ElementOut*>(p.o_acc);
  args.epilogue.stride_o = cute::make_stride(p.o_stride_h, cute::_1{}, p.o_stride_b);
  args.epilogue.ptr_lse = p.lse_acc;
  args.epilogue.stride_lse = cute::make_stride(cute::_1{}, kNumHeadsTile);
  args.epilogue.output_scale = 1.0f;
  args.hw_info.device_id = 0;  // set just before the launch: everything above is host-only
  args.hw_info.sm_count = p.sm_count;
  args.split_kv = p.num_kv_splits >= 1 ? p.num_kv_splits : -1;
  args.ptr_split_kv = nullptr;
  args.is_fused_reduction = false;

  if (p.sm_count < 2 || (p.sm_count % 2) != 0) {
    return mlaw::fail("sm100 MLA: sm_count must be an even number >= 2 (2-SM clusters), got %d",
                      p.sm_count);
  }
  if (p.num_kv_splits > kMaxSplits) {
    return mlaw::fail("sm100 MLA: num_kv_splits must be <= %d, got %d", kMaxSplits, p.num_kv_splits);
  }
  Cfg::Device::set_split_kv(args);
  const int split = args.split_kv;
  if (split < 1 || split > kMaxSplits) {
    return mlaw::fail("sm100 MLA: split count %d outside [1, %d]", split, kMaxSplits);
  }
  if (p.batch > 65535 || split > 65535) {
    return mlaw::fail("sm100 MLA: batch %d exceeds the grid limit 65535", p.batch);
  }
  if (split > 1) {
    if (p.lse_acc == nullptr) {
      return mlaw::fail("sm100 MLA: num_kv_splits=%d > 1 needs an LSE buffer (the kernel stores "
                        "partial LSEs only when epilogue.ptr_lse is set)", split);
    }
    if (p.o_stride_h != kHeadDimLatent || p.o_stride_b != int64_t{kNumHeadsTile} * kHeadDimLatent) {
      return mlaw::fail("sm100 MLA: with %d KV splits the kernel output must be a contiguous "
                        "[B, 128, 512] buffer (the reduction kernel ignores strides)", split);
    }
  }
  const uint64_t needed = static_cast<uint64_t>(Cfg::Device::get_workspace_size(args));
  if (needed > 0) {
    if (p.workspace == nullptr || p.workspace_bytes < needed) {
      return mlaw::fail("sm100 MLA: workspace too small: %llu bytes needed for batch=%d, "
                        "max_seq_len=%lld, num_kv_splits=%d, sm_count=%d; got %llu bytes",
                        static_cast<unsigned long long>(needed), p.batch,
                        static_cast<long long>(max_seq_len), split, p.sm_count,
                        static_cast<unsigned long long>(p.workspace_bytes));
    }
    if (!detail::aligned16(p.workspace)) return mlaw::fail("sm100 MLA: workspace must be 16-byte aligned");
  }
  if (Cfg::Device::can_implement(args) != cutlass::Status::kSuccess) {
    return mlaw::fail("sm100 MLA: CUTLASS can_implement rejected the problem (%s path, batch=%d, "
                      "max_seq_len=%lld, page_size=%d, splits=%d)", kPath, p.batch,
                      static_cast<long long>(max_seq_len), p.page_size, split);
  }

  // ---- launch ---------------------------------------------------------------------------
  if (int st = detail::ensure_smem_attribute<Kernel>()) return st;
  cudaGetDevice(&args.hw_info.device_id);
  typename Cfg::Device op;
  cutlass::Status st = op.update(args, p.workspace);  // builds both kernels' params (TMA descriptors)
  if (st != cutlass::Status::kSuccess) {
    return mlaw::fail("sm100 MLA: building kernel parameters failed: %s", cutlassGetStatusString(st));
  }
  auto params = op.params();

  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cute::size<0>(typename Kernel::ClusterShape{});
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = Kernel::get_grid_shape(params.fmha_params);
  cfg.blockDim = Kernel::get_block_shape();
  cfg.dynamicSmemBytes = Kernel::SharedStorageSize;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  void* kernel_args[] = {&params.fmha_params};
  cudaError_t err = cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>),
                                        kernel_args);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return mlaw::fail("sm100 MLA attention kernel (%s path) launch failed: %s", kPath, cudaGetErrorString(err));
  }
  if (params.reduction_params.split_kv > 1) {
    cutlass::device_kernel<ReductionKernel><<<ReductionKernel::get_grid_shape(params.reduction_params),
                                              ReductionKernel::get_block_shape(), 0, stream>>>(
        params.reduction_params);
    err = cudaGetLastError();
    if (err != cudaSuccess) {
      return mlaw::fail("sm100 MLA split-KV reduction kernel launch failed: %s", cudaGetErrorString(err));
    }
  }
  err = launch_finalize<sizeof(ElementOut), kHeadDimLatent>(fin, stream);
  if (err != cudaSuccess) return mlaw::fail("sm100 MLA finalize kernel launch failed: %s", cudaGetErrorString(err));
  return 0;
}

// Static facts about one instantiation (for `info`, the planner and the report):
// [0] dynamic smem bytes, [1] threads per CTA, [2] heads per tile, [3] KV tokens per tile,
// [4] cluster size, [5] cp.async path, [6] persistent scheduler, [7] max splits.
template <class Cfg>
int kernel_info(int* out8) {
  if (out8 == nullptr) return mlaw::fail("sm100 MLA kernel_info: null output pointer");
  using Kernel = typename Cfg::Kernel;
  out8[0] = static_cast<int>(Kernel::SharedStorageSize);
  out8[1] = static_cast<int>(Kernel::MaxThreadsPerBlock);
  out8[2] = kNumHeadsTile;
  out8[3] = kTileKV;
  out8[4] = static_cast<int>(cute::size<0>(typename Kernel::ClusterShape{}));
  out8[5] = Cfg::kCpAsync ? 1 : 0;
  out8[6] = Cfg::kPersistent ? 1 : 0;
  out8[7] = kMaxSplits;
  return 0;
}

}  // namespace mlaw::sm100
