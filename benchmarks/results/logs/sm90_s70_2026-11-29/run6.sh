#!/usr/bin/env bash
# Session 70, device call 6 (one H200): cluster pairs in the balanced plan (sm90: a request of
# one row tile on CTAs 2k, 2k + 1, halves merged on chip, where the batch nearly fills the
# pairs; run 5: H=16/32/64 B=64 rows 0.88-0.93x the wrapper with pieces and the combine):
# dense tests (invariants per family, the pairs test), racecheck, memcheck, grid, sparse tests.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-30} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 120 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90'" \
  "timeout 150 compute-sanitizer --tool memcheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (cluster_pairs or graph)'" \
  "timeout 300 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s70-h200-fmla-pairs --budget-s 270" \
  "timeout 120 python -m pytest tests/test_sparse.py -m gpu -q -rfs -p no:cacheprovider"
