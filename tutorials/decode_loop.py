"""A decode loop: plan() once per step on the host, run() once per layer on the GPU.

Needs a CUDA GPU (SM80 or newer) and nvcc or a prebuilt kernel cache (see README).

    python tutorials/decode_loop.py

The KV cache is one [num_pages, page_size, 576] buffer per layer; ckv/kpe are views of it
(no copies). Pages are handed out in a random order, as in a fragmented serving cache.
"""
import math
import sys

import torch

if not torch.cuda.is_available():
    sys.exit(f"{__file__}: this tutorial needs a CUDA GPU (SM80 or newer); none is visible")

import mla_wrapper
from mla_wrapper.reference import mla_attention, rel_error

num_layers, num_heads, page_size = 4, 16, 64
batch, max_len = 8, 2048
device = torch.device("cuda")
torch.manual_seed(0)

kv_lens = torch.randint(1, max_len, (batch,), dtype=torch.int32)          # host int32
pages_per_req = (kv_lens + page_size - 1) // page_size
kv_indptr = torch.cat([torch.zeros(1, dtype=torch.int32), pages_per_req.cumsum(0).int()])
num_pages = int(kv_indptr[-1]) + 16                                         # room to grow
kv_indices = torch.randperm(num_pages, dtype=torch.int32)[: int(kv_indptr[-1])].to(device)
qo_indptr = torch.arange(batch + 1, dtype=torch.int32)                      # decode: 1 token each
caches = [torch.randn(num_pages, page_size, 576, dtype=torch.bfloat16, device=device)
          for _ in range(num_layers)]

workspace = torch.empty(128 << 20, dtype=torch.uint8, device=device)
wrapper = mla_wrapper.BatchMLAPagedAttentionWrapper(workspace)
sm_scale = 1.0 / math.sqrt(128 + 64)

for step in range(3):
    # Host side, once per step: lengths live on the host, so plan() never syncs the GPU.
    wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_lens, num_heads, 512, 64, page_size,
                 False, sm_scale, torch.bfloat16, torch.bfloat16)
    for layer in range(num_layers):
        q = torch.randn(batch, num_heads, 576, dtype=torch.bfloat16, device=device)
        ckv, kpe = caches[layer][..., :512], caches[layer][..., 512:]
        out, lse = wrapper.run(q[..., :512], q[..., 512:], ckv, kpe, return_lse=True)
        if layer == 0:
            ref, _ = mla_attention(q[..., :512], q[..., 512:], ckv, kpe, qo_indptr, kv_indptr,
                                   kv_indices, kv_lens, page_size, False, sm_scale)
            print(f"step {step}: out {tuple(out.shape)}, rel error vs reference "
                  f"{rel_error(out, ref):.2e}")
    # Each request produced one token: grow its length (a new page when one fills up).
    kv_lens += 1
    # (A real engine appends the new token's latent to the cache and extends kv_indices here.)
    kv_lens = torch.minimum(kv_lens, pages_per_req * page_size)
