#!/usr/bin/env bash
# Session 68, device call 3 (one H200): test_large_cache with its free-memory guard (skips
# where the GPU lacks the pool's bytes + 2 GB), then `--power --power-flush` on the grid's other
# two compute rows and, with --fp8, on two e4m3 memory rows (the narrow plans): which of the
# grid's rows do_bench's method runs at the 700 W cap.
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
P="timeout 120 python $B/check_sm90_dev.py --tag s68-h200-power-flush --power-flush --power"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 300 python -m pytest tests/test_large_cache.py -m gpu -q -rs" \
  "$P 128 128 4096" "$P 128 64 16384" "$P 16 64 4096 --fp8" "$P 16 128 16384 --fp8"
