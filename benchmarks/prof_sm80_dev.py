"""Run one sm80 problem a few times (for ncu): python prof_sm80_dev.py CONFIG H B L"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_sm80_kernel import DevProblem  # noqa: E402

from mla_wrapper.backends import sm80  # noqa: E402
from mla_wrapper.jit import env, load  # noqa: E402

cfg, H, B, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
mod = load(sm80.spec("bf16", env.device_arch(torch.device("cuda")), config=cfg))
p = DevProblem([1] * B, [L] * B, H, 64, torch.bfloat16, False, "balanced",
               num_ctas=torch.cuda.get_device_properties(0).multi_processor_count, seed=1)
for _ in range(3):
    p.run(mod)
torch.cuda.synchronize()
print("done", cfg, H, B, L)
