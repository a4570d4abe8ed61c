#!/usr/bin/env bash
# Session 33, device call 19 (H100): the new GPU tests of the PDL switch and back-to-back runs,
# and the sparse tests (the sparse wrapper launches with PDL too: its indices are read after the
# grid-dependency wait).
B=benchmarks
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k 'pdl or previous_run'" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
