#!/usr/bin/env bash
# Session 46, device call 3 (one GPU): FlashMLA's rows loaded and widened in halves of 32 tokens
# (the first half into the rows the consumers' first P V half frees, `half_free`): the sparse
# tests (fp8_ds_mla included), memcheck and racecheck on small fp8_ds_mla cases (one split B=1
# list, 32 tokens of 4 tiles), and the sparse benchmark's quick rows with the fp8_ds_mla rows,
# A/B against run 2's build (the whole tile widened after it landed: .cache/variant/ds_whole).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 200 python $B/bench_sparse.py --quick --ds-mla --ds-variant='lib:.cache/variant/ds_whole/{dt}.so'"
