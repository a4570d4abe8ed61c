#!/usr/bin/env bash
# Session 45, device call 6 (one GPU): what bounds an e4m3 tile loaded by cp.async: traces of
# the dense e4m3 kernel (a -DMLAW_SM90_TRACE=1 build of the final tree) at page 1 (cp.async, as
# the sparse gather mode) and page 64 (TMA boxes prefetched into L2), H=128 and H=16; the
# cache-op tests after their Python alignment checks.
B=benchmarks
T="--variant=lib:.cache/variant/trace/{dt}.so"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 60 python -m pytest -q -p no:cacheprovider -m gpu tests/test_cache_ops.py" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 128 64 4096 --page 1 $T" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 16 64 4096 --page 1 $T" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 128 64 4096 --page 64 $T"
