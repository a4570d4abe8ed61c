#!/usr/bin/env bash
# Session 36, device call 6: B=1 from CUDA graphs, where run 5 found this tree ~3% slower than
# the session's starting kernel back to back (code and plan in L2), now also with a read flush
# before each replay (as in a model, where the GEMMs between two attention launches evict
# them); then the checks, memcheck / racecheck on the small cases and the GPU suite on this
# tree. "speedup" < 1: this tree is faster.
B=benchmarks
O="--variant=lib:.cache/old_s35/{dt}.so --ab-only"
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py $O --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases short --flush clean" \
  "python $B/check_sm90_dev.py" "$MC" "$RC" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
