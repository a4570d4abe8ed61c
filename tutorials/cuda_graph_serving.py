"""A serving-style CUDA-graph loop: capture run() once per batch-size bucket, then before

Needs a CUDA GPU (SM80 or newer) and nvcc or a prebuilt kernel cache (see README).
each replay call plan() for the step's real lengths (outside the graph) and replay.

    python tutorials/cuda_graph_serving.py

With use_cuda_graph=True the wrapper reads every device array from buffers fixed at
construction, so the captured kernels see the new plan after each plan().
"""
import math
import sys

import torch

if not torch.cuda.is_available():
    sys.exit(f"{__file__}: this tutorial needs a CUDA GPU (SM80 or newer); none is visible")

import mla_wrapper
from mla_wrapper.reference import mla_attention, rel_error

num_heads, page_size, max_len = 128, 64, 4096
buckets = (1, 8, 32)
device = torch.device("cuda")
sm_scale = 1.0 / math.sqrt(192)
max_pages_per_req = max_len // page_size
num_pages = max(buckets) * max_pages_per_req
cache = torch.randn(num_pages, page_size, 576, dtype=torch.bfloat16, device=device)
ckv, kpe = cache[..., :512], cache[..., 512:]


def random_step(batch, gen):
    lens = torch.randint(1, max_len, (batch,), generator=gen, dtype=torch.int32)
    pages = (lens + page_size - 1) // page_size
    kv_indptr = torch.cat([torch.zeros(1, dtype=torch.int32), pages.cumsum(0).int()])
    kv_indices = torch.randperm(num_pages, generator=gen, dtype=torch.int32)[: int(kv_indptr[-1])]
    return lens, kv_indptr, kv_indices.to(device)


graphs = {}
for bs in buckets:
    # Fixed-address buffers per bucket; their addresses are baked into the graph.
    bufs = dict(qo_indptr=torch.arange(bs + 1, dtype=torch.int32, device=device),
                kv_indptr=torch.zeros(bs + 1, dtype=torch.int32, device=device),
                kv_indices=torch.zeros(bs * max_pages_per_req, dtype=torch.int32, device=device),
                kv_len_arr=torch.zeros(bs, dtype=torch.int32, device=device))
    wrapper = mla_wrapper.BatchMLAPagedAttentionWrapper(
        torch.empty(128 << 20, dtype=torch.uint8, device=device), use_cuda_graph=True, **bufs)
    q = torch.randn(bs, num_heads, 576, dtype=torch.bfloat16, device=device)
    out = torch.empty(bs, num_heads, 512, dtype=torch.bfloat16, device=device)
    gen = torch.Generator().manual_seed(bs)
    lens, kv_indptr, kv_indices = random_step(bs, gen)
    qo_host = torch.arange(bs + 1, dtype=torch.int32)
    wrapper.plan(qo_host, kv_indptr, kv_indices, lens, num_heads, 512, 64, page_size, False,
                 sm_scale, torch.bfloat16, torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        wrapper.run(q[..., :512], q[..., 512:], ckv, kpe, out=out)   # warm up outside capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wrapper.run(q[..., :512], q[..., 512:], ckv, kpe, out=out)
    graphs[bs] = (graph, wrapper, q, out, qo_host, gen)

for step in range(3):
    for bs, (graph, wrapper, q, out, qo_host, gen) in graphs.items():
        lens, kv_indptr, kv_indices = random_step(bs, gen)
        wrapper.plan(qo_host, kv_indptr, kv_indices, lens, num_heads, 512, 64, page_size, False,
                     sm_scale, torch.bfloat16, torch.bfloat16)          # outside the graph
        q.normal_()
        graph.replay()
        ref, _ = mla_attention(q[..., :512], q[..., 512:], ckv, kpe, qo_host, kv_indptr,
                               kv_indices, lens, page_size, False, sm_scale)
        print(f"step {step} bucket {bs:3d}: rel error vs reference {rel_error(out, ref):.2e}")
