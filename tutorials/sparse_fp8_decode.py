"""DeepSeek V3.2 sparse (top-k) decode over FlashMLA's fp8 rows ("fp8_ds_mla"), two ways:
the serving-loop wrapper (plan once per step, run once per layer) and FlashMLA's own call
(flash_mla_with_kvcache), each checked against the reference.

Needs a Hopper GPU (the sm90 kernel reads the fp8 rows) and nvcc or a prebuilt kernel cache.

    python tutorials/sparse_fp8_decode.py

The cache: per token 656 bytes (512 e4m3 latent values, 4 float32 scales, one per 128 values,
and 64 bf16 rope values), pages of 64 tokens; reference.ds_mla_pack writes it as vLLM's and
SGLang's cache kernels do. indices hold global slot ids (page * 64 + offset), -1 = skip.
"""
import math
import sys

import torch

if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    sys.exit(f"{__file__}: this tutorial needs a Hopper GPU (sm90); none is visible")

import mla_wrapper
from mla_wrapper.reference import ds_mla_pack, ds_mla_unpack, rel_error, sparse_mla_attention

batch, num_heads, topk, num_pages = 32, 16, 2048, 2048    # TP8 of DeepSeek V3.2: 16 heads
device = torch.device("cuda")
sm_scale = 1.0 / math.sqrt(576)
gen = torch.Generator().manual_seed(0)

latent = torch.randn(num_pages * 64, 512, generator=gen)
rope = torch.randn(num_pages * 64, 64, generator=gen).to(torch.bfloat16)
rows = ds_mla_pack(latent, rope).to(device)                     # [slots, 656] uint8
cache = rows.view(num_pages, 64, 656)                           # the paged cache
values = [t.to(device) for t in ds_mla_unpack(rows)]            # what the rows hold (fp32)

# 1) The serving loop: plan() on the host once per decode step, run() once per layer.
wrapper = mla_wrapper.BatchSparseMLAWrapper(
    torch.empty(128 << 20, dtype=torch.uint8, device=device))
wrapper.plan(batch, topk, num_heads, sm_scale, torch.bfloat16, kv_data_type="fp8_ds_mla")
for layer in range(2):
    q = torch.randn(batch, num_heads, 576, dtype=torch.bfloat16, device=device)
    indices = torch.randint(0, num_pages * 64, (batch, topk), dtype=torch.int32, device=device)
    out = wrapper.run(q[..., :512], q[..., 512:], cache, None, indices)
    ref = sparse_mla_attention(q[..., :512], q[..., 512:], *values, indices, sm_scale)[0]
    print(f"wrapper, layer {layer}: rel error vs reference {rel_error(out, ref):.2e}")

# 2) FlashMLA's call, as vLLM's FlashMLA-sparse backend makes it (q [b, s_q, h, 576], the cache
#    [pages, 64, 1, 656], indices [b, s_q, topk]); block_table / cache_seqlens are not read.
sched, _ = mla_wrapper.get_mla_metadata()
q4 = q.view(batch, 1, num_heads, 576)
out4, lse = mla_wrapper.flash_mla_with_kvcache(
    q4, cache.unsqueeze(2), None, None, 512, sched, softmax_scale=sm_scale,
    is_fp8_kvcache=True, indices=indices.view(batch, 1, topk))
print(f"flash_mla_with_kvcache: out {list(out4.shape)}, lse {list(lse.shape)}, rel error vs "
      f"reference {rel_error(out4.view(batch, num_heads, 512), ref):.2e}")
