#!/usr/bin/env bash
# Session 62, device call 1 (one H200): sustained wgmma rates at the power cap, 16-bit forms the
# kernel runs against the e4m3 forms a native-fp8 wide instance would (benchmarks/micro/
# fp8_gemm_power.cu, built here -> .cache/bin/fp8_power), nvidia-smi sampled beside it.
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_event_reasons.active,temperature.gpu \
  --format=csv,noheader -lms 250 > $OUT/smi.csv &
SMI=$!
python3 -c "import time; print('start', time.time())"
timeout 120 .cache/bin/fp8_power 2.0 | tee $OUT/fp8_power.txt
kill $SMI
