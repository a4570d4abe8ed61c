#!/usr/bin/env bash
# Session 39, device call 8 (the same H100 as run 7, warm): the tree with the Q prefetch on
# items of >= 32 tiles: the instance / merge tests and the grid against fa3 (tag
# s39-h100-prefetch). (Given as one command line; kept here as a script.)
B=benchmarks
TAIL=24 bash $B/device_run.sh \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch or many_merge'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency,compute,memory --tag s39-h100-prefetch"
