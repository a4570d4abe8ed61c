#!/usr/bin/env bash
# Session 55, device call 6 (one H200): the narrow instance over two row blocks (items of 17-32
# valid rows: 32 heads, MTP 16 x 2, causal 8 x 4 on mma.sync; narrow_tiles<TG, 2>), the
# launcher's narrow instance up to 32 heads, each narrow row's scale and kv limit computed in
# narrow_tiles (jit cache), against e62439b's libraries (`base8`: e4m3, `base16`: 16-bit; a
# speedup below 1 means the jit build is faster). The fp8 tests (new narrow cases), the fp8
# checks, A/Bs, racecheck and memcheck on the 32-row narrow tests.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance and (32-1-fp16 or 8-4 or 16-2 or 24-1)'"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 60 $C" \
  "timeout 120 $C --ab-only --page 64 --ab-cases pairs --variant=lib:$V/base8/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/base8/{dt}.so" \
  "timeout 60 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/base8/{dt}.so" \
  "timeout 120 python $B/check_sm90_dev.py --ab-only --page 64 --ab-cases grid --variant=lib:$V/base16/{dt}.so" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T"
