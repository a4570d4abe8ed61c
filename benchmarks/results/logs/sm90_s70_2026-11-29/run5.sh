#!/usr/bin/env bash
# Session 70, device call 5 (one H200): the balanced plan runs one request a group where the
# batch has no more requests than groups and each fits a share and an eighth (run 4: B=64 H=128
# cut requests, 0.93-0.95x the wrapper); _raw_stream of a device without an index (run 4's 9
# failures: the invariants test's torch.device("cuda")). Dense tests, racecheck, memcheck, grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-30} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 120 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants'" \
  "timeout 150 compute-sanitizer --tool memcheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (mtp_causal or reused or graph or matches_reference-64-128)'" \
  "timeout 300 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s70-h200-fmla --budget-s 270"
