#!/usr/bin/env bash
# Session 67, device call 3 (one H200): an e4m3 cache's P rounded to 8 significant bits
# (`p8`: -DMLAW_SM90_P_BITS8=1, traits.cuh e4m3_p_bits; bf16 queries) against the default
# e4m3 kernels: the fp8 checks of the variant and the A/B grid (do_bench), then time per call
# sustained at the 700 W cap (`--power --fp8`: where these rows run, run 2) on the compute row,
# the narrow-plans memory row and TP4's tall row, and an A/A (`lib:self`) at the cap.
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
V="--variant=lib:.cache/variant/p8/{dt}.so"
P="timeout 150 python $B/check_sm90_dev.py --fp8 --tag s67-h200-p8 --power"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --fp8 $V" \
  "$P 128 64 4096 $V" "$P 16 128 16384 $V" "$P 32 64 4096 $V" \
  "timeout 150 python $B/check_sm90_dev.py --fp8 --tag s67-h200-aa --power 128 64 4096 --variant=lib:self"
