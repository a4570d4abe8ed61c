#!/usr/bin/env bash
# Session 50, device call 1 (one H200): q_to_f16's unscaled path. When each consumer thread's
# largest |value| of each of its valid rows lies in [2^-4, 2^15), one barrier that ANDs that
# over both warpgroups replaces the row maxima's exchange, and the values go over without a
# power of two (an f16 query's latent columns untouched). The jit cache holds the candidate;
# .cache/variant/base{,_sp,_ds} the libraries of acb0c9b (so an A/B "speedup" below 1 means the
# candidate is faster). Tests, checks, A/Bs (bf16 and fp16 queries), sparse rows,
# sanitizers on small fp8 cases.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py tests/test_sparse.py tests/test_cache_ops.py -k 'not sm80'" \
  "timeout 150 $C --page 64 --variant=lib:$V/base/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/base/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --ab-dtype fp16 --variant=lib:$V/base/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases items --variant=lib:$V/base/{dt}.so" \
  "timeout 100 $C --ab-only --page 1 --ab-cases split --variant=lib:$V/base/{dt}.so" \
  "timeout 150 python $B/bench_sparse.py --quick --fp8 --ds-mla --fp8-variant='lib:$V/base_sp/{dt}.so'" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1 --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1 --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
