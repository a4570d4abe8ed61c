#!/usr/bin/env bash
# Session 57, device call 3 (two H200s, nvidia-h200-x2): the landed tree (dee88ce) through the
# 2-GPU tests and the 2-process context-parallel worker, then compute-sanitizer memcheck and
# racecheck on small 16-bit and fp8 cases.
B=benchmarks
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PYT="python -m pytest -q -rs -p no:cacheprovider"
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-10} bash $B/device_run.sh \
  "nvidia-smi -L" \
  "timeout 200 $PYT -m gpu tests/test_distributed.py tests/test_multi_gpu.py -k 'two_gpus or second_gpu'" \
  "timeout 100 python -m torch.distributed.run --standalone --nproc-per-node 2 tests/cp_worker.py" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
