#!/usr/bin/env bash
# Session 72, device call 4 (one H200): the balanced plan kernel spreads a chunk's pieces over
# the CTA's threads (run 3: 15-33 us at B=1, a request's pieces on one thread) and the routed
# cutlass_mla_decode reuses its checked set-up for a call with the previous layout (run 3: 90-95
# us of host a call). Tests, racecheck and memcheck on the plan kernel, the plan kernels' GPU
# time, the calls' host cost, the grid (wrapper, both drop-in calls, fa3).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 100 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 100 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (repeat or graph or too_small or mtp)'" \
  "timeout 60 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_host.py --api" \
  "timeout 240 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 3 --tag s72-h200-cutlass-fast"
