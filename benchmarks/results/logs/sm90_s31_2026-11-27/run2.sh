#!/usr/bin/env bash
# Session 31, device call 2 (H200): run 1's sweep ran H=128 B=256 L=4096 (4 whole requests per
# CTA) at 594 TFLOP/s, the grid's compute rows (1-2 requests per CTA, 64-512 tiles) at 539-548.
# Same work per CTA as B=64 L=16384 (256 tiles): at the 700 W cap (--power, sustained) and in
# cycles at ncu's base clock, is it a schedule effect or the run's power state?
B=benchmarks
M=dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum
NCU="ncu --metrics $M --csv -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-only --power 128 256 4096 --tag s31-h200-power" \
  "python $B/check_sm90_dev.py --ab-only --power 128 64 16384 --tag s31-h200-power" \
  "python $B/check_sm90_dev.py --ab-only --power 128 128 4096 --tag s31-h200-power" \
  "for c in '128 256 4096' '128 64 16384' '128 128 4096' '128 64 4096'; do echo \"case \$c\"; $NCU python $B/check_sm90_dev.py --backend sm90 --profile \$c 2>&1 | grep -E '^\"[0-9]' | awk -F'\",\"' '{print \$(NF-2)\" | \"\$NF}'; done" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases compute,sweep --tag s31-h200-sweep2"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
