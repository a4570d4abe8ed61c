#!/usr/bin/env bash
# Session 71, device call 2 (one H200): the kernels write lse in FlashMLA's [b, h_q, s_q] layout
# (MlaRunArgs.lse_seq_tokens, common/: every library rebuilt); the balanced plan keeps uniform
# batches of more requests than groups uncut (boundaries at request ends) and runs on 256
# threads. Dense + sparse tests, racecheck on the plan kernel, memcheck on MTP / pairs / graphs,
# the dense call against the wrapper and FlashMLA (grid and sweep).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_flashmla_dense.py tests/test_sparse.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 170 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 100 compute-sanitizer --tool memcheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (mtp or cluster_pairs or graph)'" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s71-h200-fmla --budget-s 50" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_fmla --cases sweep --tag s71-h200-fmla-sweep2 --budget-s 50"
