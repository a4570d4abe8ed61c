#!/usr/bin/env bash
# Session 71, device call 5 (one H200): does the backends' order bias the compute / memory rows?
# (run 4: sm90, the first kernel of the grid, ran the first compute row at 914.7 us against
# 1080-1089 us in runs 1-2.) The same rows with sm90 first and last, each after 10 s of matmuls
# (bench_decode.py --heat-s), the GPU's temperature, power and clock between them.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
SMI="nvidia-smi --query-gpu=temperature.gpu,power.draw,clocks.sm,clocks_throttle_reasons.active --format=csv"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "$SMI" \
  "timeout 120 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute,memory --heat-s 10 --tag s71-h200-order-sm90-first" \
  "$SMI" \
  "timeout 120 python $B/bench_decode.py --backends flashmla,fi_fa3,sm90 --cases compute,memory --heat-s 10 --tag s71-h200-order-sm90-last" \
  "$SMI" \
  "timeout 120 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute,memory --heat-s 10 --tag s71-h200-order-sm90-first-2"
