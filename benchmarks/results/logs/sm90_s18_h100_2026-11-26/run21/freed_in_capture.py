# A wrapper freed inside another wrapper's CUDA-graph capture: does the capture survive?
# usage: python freed_in_capture.py <dir holding the mla_wrapper package to test> <backend>
import gc
import sys

sys.path.insert(0, sys.argv[1])
sys.path.insert(1, "tests")
import torch  # noqa: E402

import mla_wrapper  # noqa: E402
from test_wrapper import _GraphRun, make_batch, new_wrapper, plan  # noqa: E402

print("mla_wrapper from", mla_wrapper.__file__)
ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
b = make_batch([300, 77], 1, 16, 64, torch.bfloat16, seed=5)
holder = [new_wrapper(torch.empty_like(ws), backend=sys.argv[2])]
plan(holder[0], b, False)
gr = _GraphRun(ws, sys.argv[2], 2, 1, 16, 64, b["ckv"].shape[0], b["kv_indices"].numel())
plan(gr.w, b, False)
gr.load(b)
try:
    gr.capture(during=lambda: (holder.clear(), gc.collect()))
    gr.replay_check(b, False)
    print("capture ok")
except Exception as e:  # noqa: BLE001
    print("capture FAILED:", type(e).__name__, str(e)[:300])
