#!/usr/bin/env bash
# Session 33, device call 14: programmatic dependent launch of the sm90 attention kernel (the
# wrapper's runs; MlaRunArgs::enable_pdl) and the combine letting the next launch start: the
# checks; the new test (a second run() reading the first's output as q, eager and from a CUDA
# graph); the preceded A/B against -DMLAW_SM90_PDL=0 ("speedup" < 1: the shipped PDL build is
# faster); memcheck on the small cases; the GPU suite; then the same test on a mutant without
# the kernel's two grid-dependency waits (mutant_no_grid_wait.sed, libraries built on the CPU
# machine from the patched source), which must fail.
B=benchmarks
D=benchmarks/results/logs/sm90_s33_2026-11-27
T="python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k reads_what_the_previous_run_wrote"
A="python $B/check_sm90_dev.py --ab-only --preceded --variant='-DMLAW_SM90_PDL=0'"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$T" \
  "$A --ab-cases split" \
  "$A --ab-cases memory" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "sed -i -f $D/mutant_no_grid_wait.sed include/mla_wrapper/sm90/mla_kernel.cuh && grep -c 'mutant: no grid' include/mla_wrapper/sm90/mla_kernel.cuh && $T"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
