#!/usr/bin/env bash
# The GPU verification still owed by issues 7-11, as named phases of one device call each (every
# phase goes through benchmarks/device_run.sh: carried wheels, logs under $OUT). Build the JIT
# cache on the CPU machine first and carry it with the wheels:
#   MLA_WRAPPER_CACHE_DIR=$PWD/.cache/jit python -m mla_wrapper warmup --arch sm_90a
#   ../shared/tools/device_wheels.sh --with-flashinfer     # .whl/ (cutlass, flashinfer)
#   device: bash benchmarks/device_verify.sh sm90 [more phases]      carry: .cache/jit .whl
#
# Phases (each fits one 10-minute call on an H200 with a warm cache; combine small ones):
#   sm90      issue 7: the quick sm90 check, the sm90 half of the wrapper / routed grid, and a
#             quick sm80-vs-sm90 timing (no peers: nothing to JIT on the device)
#   profile   issue 7: ncu of the sm90 kernel, compute-bound (H=128) and memory-bound (H=16),
#             with per-SASS-instruction stall samples exported as CSV (where warps wait)
#   decode    issue 7: bench_decode's full grid, sm80 + sm90 + FlashInfer fa2/fa3 (its JIT
#             compiles on first use), results in $OUT/decode.jsonl
#   tests     every GPU test (all backends, sparse, torch ops, distributed on one GPU, bounds)
#   sanitize  compute-sanitizer memcheck + racecheck on small sm90 / sparse / adversarial cases
#   sparse    issue 8: bench_sparse --quick
#   compile   issue 9: torch.compile tests, tutorials/deepseek_mini.py, run() host cost via op
#   cp        issue 10: context-parallel tests + bench_cp (adds the 2-GPU runs when 2 GPUs exist)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
TR="python -m torch.distributed.run --standalone"
PYT="python -m pytest -q -rs -p no:cacheprovider"
steps=()
for phase in "${@:-sm90}"; do
  case $phase in
    sm90)
      steps+=("timeout 120 python benchmarks/check_sm90_dev.py --backend sm90"
              "timeout 360 $PYT -m gpu tests/test_wrapper.py tests/test_cutlass_mla_api.py -k sm90"
              "timeout 100 python benchmarks/bench_decode.py --quick --backends sm80,sm90 --budget-s 80") ;;
    profile)
      for shape in "128 64 4096" "16 64 16384"; do
        steps+=("timeout 240 ncu --set full --import-source yes -k regex:mla_sm90_kernel --launch-skip 1 --launch-count 1 -f -o \$OUT/sm90_${shape// /_} python benchmarks/check_sm90_dev.py --backend sm90 --profile $shape && ncu -i \$OUT/sm90_${shape// /_}.ncu-rep --page source --csv --print-source sass > \$OUT/sm90_${shape// /_}_source.csv")
      done ;;
    decode)
      steps+=("timeout 560 python benchmarks/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3 --budget-s 480") ;;
    tests)
      steps+=("timeout 580 $PYT -m gpu tests") ;;
    sanitize)
      steps+=("PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python benchmarks/check_sm90_dev.py --backend sm90 --small"
              "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python benchmarks/check_sm90_dev.py --backend sm90 --small"
              "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 $PYT -m gpu tests/test_sparse.py tests/test_input_bounds.py -k '(topk_length or adversarial) and not compute_sanitizer'") ;;
    sparse)
      steps+=("timeout 400 python benchmarks/bench_sparse.py --quick") ;;
    compile)
      steps+=("timeout 300 $PYT tests/test_torch_ops.py tests/test_deepseek_mini.py"
              "timeout 200 python tutorials/deepseek_mini.py"
              "timeout 120 python benchmarks/bench_host.py --torch-op") ;;
    cp)
      steps+=("timeout 300 $PYT -m gpu tests/test_distributed.py -k 'not two_gpus'"
              "timeout 120 $TR --nproc-per-node 1 tests/cp_worker.py"
              "timeout 300 python benchmarks/bench_cp.py --tag issue10")
      if (( ngpu >= 2 )); then
        steps+=("timeout 300 $PYT -m gpu tests/test_distributed.py tests/test_multi_gpu.py -k 'two_gpus or second_gpu'"
                "timeout 120 $TR --nproc-per-node 2 tests/cp_worker.py"
                "timeout 300 $TR --nproc-per-node 2 benchmarks/bench_cp.py --tag issue10"
                "timeout 300 $TR --nproc-per-node 2 benchmarks/bench_cp.py --interleave 1 --tag issue10-interleave1")
      fi ;;
    *) echo "device_verify: unknown phase $phase" >&2; exit 2 ;;
  esac
done
TAIL=${TAIL:-30} exec bash benchmarks/device_run.sh "${steps[@]}"
