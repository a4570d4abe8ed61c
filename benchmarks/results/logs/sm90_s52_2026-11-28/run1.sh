#!/usr/bin/env bash
# Session 52, device call 1 (one H200): the narrow instance's spare raw buffer (a narrow item's
# odd tiles from tile 3 on land in rows 32-63 of the Q tile, issued before the widening of the
# tile before them). The jit cache holds the candidate's bf16 libraries (fp16 parked for the
# carry); .cache/variant/base52 the e4m3 library of 6696290 (A/B "speedup" below 1: the
# candidate is faster). This build spills 40 bytes in the producer (measuring before fixing).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k '(narrow or few_query) and not fp16'" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/base52/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/base52/{dt}.so" \
  "timeout 60 $C --page 64 --trace 16 128 16384 --variant=lib:$V/trace52/{dt}.so"
