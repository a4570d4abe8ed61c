#!/usr/bin/env bash
# Session 47, device call 1 (one GPU): the fp8_ds_mla widening in 4-token units that the
# producer's warps and the consumers' (between releasing a tile and the next) claim from a
# per-stage counter (widen_ds_share). The sparse GPU tests, memcheck / racecheck on the small
# fp8_ds_mla cases, then the sparse benchmark's fp8_ds_mla rows A/B against session 46's build
# (.cache/variant/s46_ds).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="(test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)) or ds_mla_cuda_graph"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -x -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -k 'ds_mla or flash_mla'" \
  "timeout 300 python $B/bench_sparse.py --ds-mla --ds-variant='lib:.cache/variant/s46_ds/{dt}.so'" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
