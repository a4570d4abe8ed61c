#!/usr/bin/env bash
# Session 32, device call 6 (H100): the shipped build (one KV-stream rule for every device):
# the full grid with the peers (the README's H100 table), memcheck on the small cases, the GPU
# suite; the paced rows against no paced loads (-DMLAW_SM90_PACED_MAX_TILES=0) after do_bench's
# flush and after a read flush (run 5 on the H200: 0.90-0.96x and 1.03-1.07x).
V="-DMLAW_SM90_PACED_MAX_TILES=0"
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s32-h100-final2" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases paced --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases paced --flush clean --variant='$V'" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
