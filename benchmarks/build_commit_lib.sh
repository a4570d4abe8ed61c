#!/usr/bin/env bash
# Builds the sm90 (dense) libraries of an earlier commit for an A/B against the working tree:
#   bash benchmarks/build_commit_lib.sh 19d00c4 .cache/old_19d00c4
#   python benchmarks/check_sm90_dev.py --ab-only --ab-cases h128 --variant='lib:.cache/old_19d00c4/{dt}.so'
# (carry the output folder to the device). Valid only while plan.h and the run-argument structs
# are the same in both trees (git diff <commit> -- include/mla_wrapper/common/plan.h).
#
# Where they differ, --tree exports the commit's whole package instead, with its planner and
# sm90 bf16 kernels built into <out>/jit, to time in its own process, in turn with this tree's:
#   bash benchmarks/build_commit_lib.sh --tree 19d00c4 .cache/old       (carry .cache/old)
#   device: (cd .cache/old/tree && MLA_WRAPPER_CACHE_DIR=$PWD/../jit PYTHONPATH=/tmp/site:$PWD \
#             python benchmarks/bench_decode.py --backends sm90 --cases latency --tag old)
#           python benchmarks/bench_decode.py --backends sm90 --cases latency --tag new
# (logs/sm90_s19_h100_2026-11-26, run 4).
set -euo pipefail
tree=0
if [ "${1:-}" = "--tree" ]; then
  tree=1
  shift
fi
commit=$1
out=$(realpath -m "$2")
if [ $tree = 1 ]; then
  rm -rf "$out/tree"
  mkdir -p "$out/tree"
  git archive "$commit" mla_wrapper include jit_templates ":(glob)benchmarks/*.py" tests pyproject.toml |
    tar -x -C "$out/tree"
  (cd "$out/tree" && MLA_WRAPPER_CACHE_DIR="$out/jit" PYTHONPATH="$out/tree" python - <<'PY'
from mla_wrapper.jit import builder, registry
for spec in registry.warmup_specs(["sm_90a"]):
    name = builder.entry_dir(spec).name
    if name.startswith(("sm90_bf16", "planner")):
        builder.build(spec)
        print("built", name)
PY
  )
  exit 0
fi
wt=$(mktemp -d)/tree
git worktree add -f --detach "$wt" "$commit" >/dev/null
trap 'git worktree remove --force "$wt"' EXIT
mkdir -p "$out"
(cd "$wt" && MLA_WRAPPER_CACHE_DIR="$out/cache" PYTHONPATH="$wt" python - "$out" <<'PY'
import shutil, sys
from mla_wrapper.backends import sm90
from mla_wrapper.jit import builder
for dt in ("bf16", "fp16"):
    path = builder.build(sm90.spec(dt, "sm_90a"))
    shutil.copy(path, f"{sys.argv[1]}/{dt}.so")
    print(dt, "->", f"{sys.argv[1]}/{dt}.so")
PY
)
rm -rf "$out/cache"
