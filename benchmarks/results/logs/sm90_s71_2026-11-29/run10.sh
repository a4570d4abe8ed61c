#!/usr/bin/env bash
# Session 71, device call 10 (one H200), after the review: the GPU plans write their records
# through shared writers (common/device_plan.cuh) and the ops layouts share one routine; every
# library key changed (common/). The dense and cutlass tests, racecheck on the balanced plan,
# memcheck on the routed and dense paths.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-10} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 90 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 120 compute-sanitizer --tool memcheck python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (mtp or graph)'"
