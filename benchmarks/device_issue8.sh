#!/usr/bin/env bash
# Issue 8 (sparse MLA) on the device machine, one call; logs and JSON lines under $OUT
# (7 files: gpu.txt, summary.txt, step1..4.log, sparse.jsonl).
#   bash benchmarks/device_issue8.sh            # all steps
#   bash benchmarks/device_issue8.sh tests      # steps 1-2 only
# 1. pre-build the kernels in parallel (sm80 dense + sparse, merge, planner) for sm_90a
# 2. every GPU test (tests/test_sparse.py plus the dense suites: the sm80 kernel gained the
#    gather-mode template hook, so its dense instantiation must still pass)
# 3. the quick sparse benchmark (decode + prefill next to the dense kernel at equal FLOPs)
# 4. compute-sanitizer memcheck on two small sparse cases
set -uo pipefail
cd "$(dirname "$0")/.."
steps=("python -m mla_wrapper warmup --arch sm_90a --family merge,planner,sm80,sparse --jobs 16"
       "python -m pytest tests -q -rs -m gpu -p no:cacheprovider")
if [ "${1:-all}" != "tests" ]; then
  steps+=("python benchmarks/bench_sparse.py --quick"
          "compute-sanitizer --tool memcheck --error-exitcode 1 python -m pytest tests/test_sparse.py -q -m gpu -p no:cacheprovider -k 'test_wrapper_topk_length or test_flash_mla_sparse_fwd_topk_length'")
fi
TAIL=25 bash benchmarks/device_run.sh "${steps[@]}"
