#!/usr/bin/env bash
# Issue 10 (context-parallel decode) on the device machine; logs and cp.jsonl land under $OUT
# (through benchmarks/device_run.sh: step<i>.log, summary.txt, gpu.txt).
#
#   bash benchmarks/device_issue10.sh [tests|bench|all]     (default: all)
#
# One GPU: the GPU tests of tests/test_distributed.py (W ranks simulated one after another on
# one GPU and merged with the kernel, a 1-rank NCCL group), cp_worker.py under a 1-rank
# torchrun, and bench_cp.py at world_size 1. With >= 2 GPUs also: the 2-GPU pytest (it spawns
# torchrun), cp_worker.py and bench_cp.py under `torchrun --nproc-per-node 2`.
# Each phase stays well under 10 minutes once the kernels are in the JIT cache.
set -uo pipefail
# NVLink multicast stays off (the device machines' rule: it can take shared GPUs down)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
phase=${1:-all}
here=$(cd "$(dirname "$0")" && pwd)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
TR="python -m torch.distributed.run --standalone"
steps=()
if [[ $phase == tests || $phase == all ]]; then
  steps+=("python -m mla_wrapper warmup --family merge,planner,sm80 --dtype bf16")
  steps+=("python -m pytest tests/test_distributed.py -m gpu -q -rs -k 'not two_gpus'")
  steps+=("$TR --nproc-per-node 1 tests/cp_worker.py")
  if (( ngpu >= 2 )); then
    steps+=("python -m pytest tests/test_distributed.py tests/test_multi_gpu.py -m gpu -q -rs -k 'two_gpus or second_gpu'")
    steps+=("$TR --nproc-per-node 2 tests/cp_worker.py")
  fi
fi
if [[ $phase == bench || $phase == all ]]; then
  steps+=("python benchmarks/bench_cp.py --tag issue10")
  if (( ngpu >= 2 )); then
    steps+=("$TR --nproc-per-node 2 benchmarks/bench_cp.py --tag issue10")
    steps+=("$TR --nproc-per-node 2 benchmarks/bench_cp.py --interleave 1 --tag issue10-interleave1")
  fi
fi
TAIL=${TAIL:-40} exec bash "$here/device_run.sh" "${steps[@]}"
