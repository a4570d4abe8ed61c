#!/usr/bin/env bash
# Session 46, device call 6 (one GPU): run()'s empty-row lse fix-up in place (nan_to_num_, no
# temporary: run 5's sanitizer steps could not capture the fp8_ds_mla CUDA-graph test, a
# cudaMalloc during capture with PYTORCH_NO_CUDA_MEMORY_CACHING=1). The sparse GPU tests,
# memcheck and racecheck on the small fp8_ds_mla / e4m3 cases and the fp8_ds_mla CUDA-graph test,
# and the sparse benchmark's full grid with the e4m3 and fp8_ds_mla rows (run 5's kernels).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="(test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)) or ds_mla_cuda_graph or (test_wrapper_fp8_cache and bf16-64-32-256)"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 300 python $B/bench_sparse.py --fp8 --ds-mla"
