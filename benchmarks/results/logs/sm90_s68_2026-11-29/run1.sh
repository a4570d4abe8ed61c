#!/usr/bin/env bash
# Session 68, device call 1 (one H200): the new large-pool tests (pages past 4 GiB and 2^31
# elements, every kernel family), then `--power --power-flush` (new): sm90 and FlashInfer fa3
# each call after do_bench's zeroing flush for 4 s while nvidia-smi samples clock, power and
# throttle reasons: the clock the grid's compute and memory rows run at.
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
P="timeout 120 python $B/check_sm90_dev.py --tag s68-h200-power-flush --power-flush --power"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 300 python -m pytest tests/test_large_cache.py -m gpu -q -rs -x" \
  "$P 128 64 4096" "$P 128 128 16384" "$P 16 64 4096"
