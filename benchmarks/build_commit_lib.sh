#!/usr/bin/env bash
# Builds the sm90 (dense) libraries of an earlier commit for an A/B against the working tree:
#   bash benchmarks/build_commit_lib.sh 19d00c4 .cache/old_19d00c4
#   python benchmarks/check_sm90_dev.py --ab-only --ab-cases h128 --variant='lib:.cache/old_19d00c4/{dt}.so'
# (carry the output folder to the device). Valid only while plan.h and the run-argument structs
# are the same in both trees (git diff <commit> -- include/mla_wrapper/common/plan.h).
set -euo pipefail
commit=$1
out=$(realpath -m "$2")
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
