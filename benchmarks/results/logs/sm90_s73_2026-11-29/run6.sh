#!/usr/bin/env bash
# Session 73, device call 6 (one H200): the checksum per region again, eight loads a thread in
# flight (run 5's one index space cost more in its selects than it saved at B >= 64), and the
# balanced plan kernel bounded at one CTA an SM (82 registers; the default bound held it at 64
# and spilled). The dense and cutlass tests, racecheck on one memo test, the plan kernels' time
# twice (the spread between passes), the routed call on the grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 80 compute-sanitizer --tool racecheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and kept and 128'" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,fi_fa3 --heat-s 2 --tag s73-h200-checksum2 --budget-s 50"
