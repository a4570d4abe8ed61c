#!/usr/bin/env bash
# Session 68, device call 4 (one H200), after the review: test_large_cache with its batches from
# the suite's generators; the same test against an sm80 build whose latent rows' page offset is
# cut to 32 bits (the header mutated here, on the device's copy only, built into its own cache
# folder: run 2's check again); --power --power-flush on one row through harness.event_times_ms.
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
MUT="sed -i 's/+ pg \* args.ckv_stride_page +/+ static_cast<int>(pg * args.ckv_stride_page) +/' include/mla_wrapper/sm80/mla_kernel.cuh && grep -c 'static_cast<int>(pg' include/mla_wrapper/sm80/mla_kernel.cuh && MLA_WRAPPER_CACHE_DIR=\$PWD/.cache/jit_mut timeout 200 python -m pytest tests/test_large_cache.py -m gpu -q -rs -k 'paged_cache and sm80' 2>&1 | grep -v '^  ' | tail -8"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 300 python -m pytest tests/test_large_cache.py -m gpu -q -rs" \
  "timeout 120 python $B/check_sm90_dev.py --tag s68-h200-power-flush-review --power-flush --power 16 64 4096" \
  "$MUT"
