#!/usr/bin/env bash
# Pre-build the kernels before serving (e.g. in a container build step, no GPU needed):
set -e
python -m mla_wrapper info
python -m mla_wrapper warmup --arch "${ARCHS:-sm_90a}" --dtype bf16,fp16
python -m mla_wrapper list
# A second warmup compiles nothing:
time python -m mla_wrapper warmup --arch "${ARCHS:-sm_90a}"
# Package the kernels for serving machines without nvcc: a self-contained cache folder. There,
# run with MLA_WRAPPER_CACHE_DIR=<that folder> (it may be read-only).
python -m mla_wrapper warmup --arch "${ARCHS:-sm_90a}" --dtype bf16,fp16 --export "${EXPORT_DIR:-./mla_kernels}"
