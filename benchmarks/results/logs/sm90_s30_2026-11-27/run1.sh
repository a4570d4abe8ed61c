#!/usr/bin/env bash
# Session 30, device call 1 (H200): checks of the build (KvTensorMaps records its promotion);
# the compute rows with three input distributions (--data); the power cap with fp8-grid KV;
# A/Bs of the L2 promotion / policy variants. Run from the repository root on the device.
P128="-DMLAW_SM90_L2_PROMOTION=CU_TENSOR_MAP_L2_PROMOTION_L2_128B"
NORMAL="-DMLAW_SM90_KV_NORMAL_MAX_HEADS=128 -DMLAW_SM90_PACED_ROWS8_MAX_BYTES=20 -DMLAW_SM90_PACED_ROWS=16"
NONE64="-DMLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS=64"
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k kv_maps" \
  "python $B/bench_decode.py --cases compute --backends sm90,fi_fa3,flashmla --data randn --tag s30-h200-data-randn" \
  "python $B/bench_decode.py --cases compute --backends sm90,fi_fa3,flashmla --data fp8kv --tag s30-h200-data-fp8kv" \
  "python $B/bench_decode.py --cases compute --backends sm90,fi_fa3,flashmla --data uniform --tag s30-h200-data-uniform" \
  "python $B/check_sm90_dev.py --power 128 128 16384 --data fp8kv --tag s30-h200-power-fp8kv" \
  "python $B/check_sm90_dev.py --power 128 128 16384 --variant='$P128' --tag s30-h200-power-p128" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases compute --variant='$P128'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases compute --variant='$NORMAL'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases boxes --variant='$NONE64'"
