#!/usr/bin/env bash
# Session 40, device call 8 (2 GPUs): ContextParallelMLAWrapper.run() captured in a CUDA graph
# over a use_cuda_graph wrapper, re-planned and replayed: on a 1-rank NCCL group (pytest) and on
# two ranks (tests/cp_worker.py under torchrun, via test_two_gpus_torchrun); the rest of the
# multi-GPU and context-parallel tests with them.
TAIL=${TAIL:-40} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_distributed.py tests/test_multi_gpu.py -k 'graph or two_gpus or second_gpu or one_rank'" \
  "timeout 60 python -m torch.distributed.run --standalone --nproc-per-node 2 tests/cp_worker.py 2>&1 | grep -i 'graph\|failures\|error' | head -20"
