#!/usr/bin/env bash
# Issue 9 on one GPU: the torch.compile / custom-op GPU tests, the DeepSeek-shaped tutorial and
# run()'s host cost through the op. Logs and JSON lines go under $OUT; exits non-zero if any step
# failed. Run from the repository root on the device machine:
#     OUT=/some/dir bash benchmarks/device_issue9.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then        # same convention as benchmarks/device_run.sh
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export MLA_WRAPPER_CACHE_DIR=${MLA_WRAPPER_CACHE_DIR:-$PWD/.cache/jit}
export MLA_WRAPPER_RESULTS_DIR=$OUT PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/issue9_gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/issue9_gpu.txt"

failed=0
step() {   # step NAME COMMAND...: run, log to $OUT/NAME.log, record rc and time
  local name=$1; shift
  local start=$(date +%s)
  echo "=== $name: $*" | tee -a "$OUT/issue9_summary.txt"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "=== $name rc=$rc in $(( $(date +%s) - start ))s" | tee -a "$OUT/issue9_summary.txt"
  tail -n 12 "$OUT/$name.log"
  [ $rc -eq 0 ] || failed=1
}

# 1. the issue's tests, CPU and GPU parts (compile fullgraph, reduce-overhead after re-plan,
#    the ops vs the direct API, the small tutorial run)
step issue9_tests python -m pytest tests/test_torch_ops.py tests/test_deepseek_mini.py -v -rs
# 2. the tutorial at full size: 4 layers, 5 prompts, 64 decode steps, logits checked every step
step deepseek_mini python tutorials/deepseek_mini.py
# 3. run() host cost directly vs through torch.ops.mla_wrapper.run (JSON lines in $OUT/host.jsonl)
step host_torch_op python benchmarks/bench_host.py --torch-op
# 4. (FULL_GPU_SUITE=1) the whole GPU suite with the wrapper.run compile hook in place
if [ "${FULL_GPU_SUITE:-0}" = 1 ]; then
  step gpu_tests python -m pytest tests -m gpu -q -rs -x
fi

echo "=== issue 9 device run: $([ $failed -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$OUT/issue9_summary.txt"
exit $failed
