#!/usr/bin/env bash
# Session 46, device call 5 (one GPU): the sparse gather mode's L2 prefetch of tile it + 2's
# slots with an fp8 cache's byte strides (e4m3 and FlashMLA's rows; the earlier builds used the
# 16-bit rows' element offsets there). The sparse benchmark's quick rows with the e4m3 and
# fp8_ds_mla rows, each A/B against the build before the fix (.cache/variant/s45_e4m3: session
# 45's e4m3 library; .cache/variant/ds_whole: runs 1-2's fp8_ds_mla library); then the whole
# GPU suite, memcheck and racecheck on small fp8_ds_mla and e4m3 sparse cases and the
# fp8_ds_mla CUDA-graph test.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="(test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)) or ds_mla_cuda_graph or (test_wrapper_fp8_cache and bf16-64-32-256)"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python $B/bench_sparse.py --quick --fp8 --ds-mla --fp8-variant='lib:.cache/variant/s45_e4m3/{dt}.so' --ds-variant='lib:.cache/variant/ds_whole/{dt}.so'" \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
