#!/usr/bin/env bash
# Session 47, device call 3 (one GPU): runs 1-2's claimed units are reverted (the consumers'
# chain, not the producer, bounds the fp8_ds_mla tile: run 2's traces). Now each producer warp
# widens its own 16 tokens (units w, w + 4, w + 8, w + 12, two at a time), with 128-byte raw
# reads and no barrier across warps (the scales in each token's own row of block 3). The fp8_ds_mla
# tests, then the sparse benchmark's fp8_ds_mla rows A/B against session 46's build and one unit
# at a time (MLAW_SM90_DS_PAIR=1), per-tile traces of session 46's build and of this one, then
# memcheck / racecheck on the small fp8_ds_mla cases.
B=benchmarks
V=".cache/variant"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="(test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)) or ds_mla_cuda_graph"
TAIL=${TAIL:-400} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -x -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -k 'ds_mla or flash_mla'" \
  "timeout 400 python $B/bench_sparse.py --ds-mla --ds-variant='lib:$V/s46_ds/{dt}.so;lib:$V/pair1/{dt}.so' --ds-trace='lib:$V/trace_s46/{dt}.so;lib:$V/trace_st/{dt}.so'" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
