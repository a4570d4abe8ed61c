"""vLLM's cache-gather ops (mla_wrapper.cache_ops): cp_gather_cache,
gather_and_maybe_dequant_cache (copy and fp8 dequant) and cp_gather_and_upconvert_fp8_kv_cache
(FlashMLA's 656-byte fp8 rows).

CPU: argument errors name the argument and the fix. GPU (marked `gpu`): each op against torch
indexing and torch's own fp8 conversion, bit for bit, into NaN-poisoned outputs (rows the op
must not write stay NaN), with seq_starts, empty sequences, padded output rows, page sizes 1 /
16 / 64, and capture in a CUDA graph replayed on new values.
"""
from __future__ import annotations

import pytest
import torch

from mla_wrapper import cache_ops
from mla_wrapper.reference import ds_mla_pack, ds_mla_unpack

from test_wrapper import capture_graph

FP8 = {"fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn,
       "fp8_e5m2": torch.float8_e5m2}


def positions(seq_lens, starts, block_table, block_size):
    """(dst row, block, row in block) of every gathered token, in dst order."""
    out, row = [], 0
    for b, n in enumerate(seq_lens):
        for i in range(n):
            p = i + (int(starts[b]) if starts is not None else 0)
            out.append((row, int(block_table[b, p // block_size]), p % block_size))
            row += 1
    return out


def make_batch(g, num_blocks, block_size, seq_lens, use_starts):
    batch = len(seq_lens)
    starts = torch.tensor([block_size + 1, 0, 3][:batch], dtype=torch.int32) if use_starts \
        else None
    block_table = torch.randint(0, num_blocks, (batch, 10), generator=g, dtype=torch.int32)
    cu = torch.zeros(batch + 1, dtype=torch.int32)
    cu[1:] = torch.cumsum(torch.tensor(seq_lens, dtype=torch.int32), 0)
    token_to_seq = torch.repeat_interleave(torch.arange(batch, dtype=torch.int32),
                                           torch.tensor(seq_lens))
    return starts, block_table, cu, token_to_seq


def pack_ds_mla(latent: torch.Tensor, rope: torch.Tensor):
    """FlashMLA's fp8 rows from latent [..., 512] (fp32) and rope [..., 64] (bf16)
    (reference.ds_mla_pack), and what they decode to as bf16 (576 values a row)."""
    rows = ds_mla_pack(latent, rope)
    assert rows.shape[-1] == 656
    lat, _ = ds_mla_unpack(rows)
    return rows, torch.cat([lat.to(torch.bfloat16), rope], -1)


# ------------------------------------------------------------------------------------- CPU

def test_argument_errors_name_the_argument():
    src = torch.zeros(4, 16, 576, dtype=torch.uint8)
    dst = torch.zeros(10, 576, dtype=torch.bfloat16)
    bt = torch.zeros(2, 4, dtype=torch.int32)
    cu = torch.tensor([0, 5, 10], dtype=torch.int32)
    t2s = torch.zeros(10, dtype=torch.int32)
    scale = torch.ones(1)
    gather = cache_ops.gather_and_maybe_dequant_cache
    with pytest.raises(ValueError, match="kv_cache_dtype: expected 'auto', 'fp8'"):
        gather(src, dst, bt, cu, t2s, 10, "int8", scale)
    with pytest.raises(ValueError, match="cp_gather_and_upconvert_fp8_kv_cache"):
        gather(src, dst, bt, cu, t2s, 10, "fp8_ds_mla", scale)
    with pytest.raises(ValueError, match="scale: an fp8 cache needs its scale"):
        gather(src, dst, bt, cu, t2s, 10, "fp8", None)
    with pytest.raises(ValueError, match="scale: expected dtype float32"):
        gather(src, dst, bt, cu, t2s, 10, "fp8", scale.half())
    with pytest.raises(ValueError, match="src_cache: expected dtype uint8 or float8_e5m2"):
        gather(src.view(torch.float8_e4m3fn), dst, bt, cu, t2s, 10, "fp8_e5m2", scale)
    with pytest.raises(ValueError, match="dst: expected dtype bfloat16 or float16 or float32"):
        gather(src, dst.to(torch.int32), bt, cu, t2s, 10, "fp8", scale)
    with pytest.raises(ValueError, match=r"dst: expected \[tokens, 576\]"):
        gather(src, dst[:, :512], bt, cu, t2s, 10, "fp8", scale)
    with pytest.raises(ValueError, match="token_to_seq: expected a contiguous int32"):
        gather(src, dst, bt, cu, t2s[:4], 10, "fp8", scale)
    with pytest.raises(ValueError, match="token_to_seq: expected an int32 CUDA tensor, got None"):
        gather(src, dst, bt, cu, None, 10, "fp8", scale)
    with pytest.raises(ValueError, match="block_table: expected dtype int32"):
        gather(src, dst, bt.long(), cu, t2s, 10, "fp8", scale)
    with pytest.raises(ValueError, match="seq_starts: expected a contiguous int32"):
        gather(src, dst, bt, cu, t2s, 10, "fp8", scale, torch.zeros(1, dtype=torch.int32))
    with pytest.raises(ValueError, match="src_cache: fp8 rows need 8-byte aligned rows"):
        gather(torch.zeros(4, 16, 580, dtype=torch.uint8)[..., :576], dst, bt, cu, t2s, 10,
               "fp8", scale)
    with pytest.raises(ValueError, match="dst: dequantized rows need 16-byte aligned rows"):
        gather(src, torch.zeros(10, 580, dtype=torch.bfloat16)[:, :576], bt, cu, t2s, 10,
               "fp8", scale)
    with pytest.raises(ValueError, match="src_cache: fp8 entries must be whole groups of 8"):
        gather(src[..., :572], dst[:, :572], bt, cu, t2s, 10, "fp8", scale)
    with pytest.raises(ValueError, match="src_cache: expected a CUDA tensor"):
        gather(src, dst, bt, cu, t2s, 10, "fp8", scale)     # (every other argument fine)
    with pytest.raises(ValueError, match="src_cache: expected a CUDA tensor"):
        gather(src.bfloat16(), dst, bt, cu, t2s, 10, "auto", scale)
    with pytest.raises(ValueError, match="dst: expected dtype uint8"):   # auto: a copy
        cache_ops.cp_gather_cache(src, dst, bt, cu, 2)
    with pytest.raises(ValueError, match="cu_seq_lens: expected a contiguous int32"):
        cache_ops.cp_gather_cache(src, dst.view(torch.uint8)[:, :576], bt, cu, 3)

    up = cache_ops.cp_gather_and_upconvert_fp8_kv_cache
    rows = torch.zeros(4, 16, 656, dtype=torch.uint8)
    ws = torch.tensor([0, 5], dtype=torch.int32)
    with pytest.raises(ValueError, match=r"src_cache: expected \[num_blocks, block_size, 656\]"):
        up(src, dst, bt, ws, 2)
    with pytest.raises(ValueError, match="src_cache: expected dtype uint8"):
        up(rows.bfloat16(), dst, bt, ws, 2)
    with pytest.raises(ValueError, match="dst: expected dtype bfloat16"):
        up(rows, dst.half(), bt, ws, 2)
    with pytest.raises(ValueError, match="workspace_starts: expected a contiguous int32"):
        up(rows, dst, bt, ws, 3)
    with pytest.raises(ValueError, match="batch_size"):
        up(rows, dst, bt, ws, -1)
    with pytest.raises(ValueError, match="src_cache: FlashMLA's fp8 rows need 16-byte aligned"):
        up(torch.zeros(4, 16, 664, dtype=torch.uint8)[..., 8:], dst, bt, ws, 2)
    with pytest.raises(ValueError, match="src_cache: expected a CUDA tensor"):
        up(rows, dst, bt, ws, 2)


def test_pack_ds_mla_round_trip():
    g = torch.Generator().manual_seed(3)
    latent = torch.randn(5, 512, generator=g) * torch.logspace(-3, 3, 5)[:, None]
    rope = torch.randn(5, 64, generator=g).bfloat16()
    rows, decoded = pack_ds_mla(latent, rope)
    assert torch.equal(decoded[:, 512:], rope)
    err = (decoded[:, :512].float() - latent).abs() / latent.abs().amax(-1, keepdim=True)
    assert err.max() < 0.07          # e4m3 keeps 3 mantissa bits; each row relative to its max


# ------------------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("use_starts", [False, True])
@pytest.mark.parametrize("block_size,width", [(64, 576), (16, 656), (1, 7)])
def test_copy_ops(use_starts, block_size, width):
    g = torch.Generator().manual_seed(block_size + width)
    dev = "cuda"
    seq_lens = [5 * block_size + 3, 0, 2 * block_size]
    starts, block_table, cu, token_to_seq = make_batch(g, 40, block_size, seq_lens, use_starts)
    dtype = torch.bfloat16 if width % 2 == 0 else torch.float32
    src = torch.randn(40, block_size, width, generator=g).to(dtype).to(dev)
    total = int(cu[-1])
    want = torch.empty(total, width, dtype=dtype, device=dev)
    for row, blk, off in positions(seq_lens, starts, block_table, block_size):
        want[row] = src[blk, off]
    d_starts = None if starts is None else starts.to(dev)
    dst = torch.full((total + 2, width), float("nan"), dtype=dtype, device=dev)
    cache_ops.cp_gather_cache(src, dst, block_table.to(dev), cu.to(dev), len(seq_lens), d_starts)
    assert torch.equal(dst[:total], want)
    assert torch.isnan(dst[total:]).all()   # rows past cu_seq_lens[batch]: untouched
    dst2 = torch.full((total, width), float("nan"), dtype=dtype, device=dev)
    cache_ops.gather_and_maybe_dequant_cache(src, dst2, block_table.to(dev), cu.to(dev),
                                             token_to_seq.to(dev), total, "auto",
                                             torch.ones(1, device=dev), d_starts)
    assert torch.equal(dst2, want)


@pytest.mark.gpu
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("block_size,use_starts,typed", [(64, False, False), (16, True, True),
                                                         (1, True, False)])
def test_gather_dequant_fp8(kv_cache_dtype, out_dtype, block_size, use_starts, typed):
    g = torch.Generator().manual_seed(block_size + len(kv_cache_dtype))
    dev = "cuda"
    seq_lens = [3 * block_size + 5, 0, block_size + 2]
    starts, block_table, cu, token_to_seq = make_batch(g, 30, block_size, seq_lens, use_starts)
    # values over the format's range, every row's own magnitude (2^-6 .. 2^6)
    vals = torch.randn(30, block_size, 576, generator=g) * \
        torch.exp2(torch.randint(-6, 7, (30, block_size, 1), generator=g).float())
    fp8 = vals.to(FP8[kv_cache_dtype])
    src = (fp8 if typed else fp8.view(torch.uint8)).to(dev)
    scale = torch.tensor([0.0371], device=dev)      # not a power of two: rounds after the product
    total = int(cu[-1])
    want = torch.empty(total, 576, dtype=out_dtype)
    for row, blk, off in positions(seq_lens, starts, block_table, block_size):
        want[row] = (fp8[blk, off].float() * scale.cpu()).to(out_dtype)
    # a padded output (row stride 640) with NaN in every element the op must not write
    buf = torch.full((total + 3, 640), float("nan"), dtype=out_dtype, device=dev)
    dst = buf[:, :576]
    num_tokens = total - 1                           # the last token is not asked for
    cache_ops.gather_and_maybe_dequant_cache(
        src, dst, block_table.to(dev), cu.to(dev), token_to_seq.to(dev), num_tokens,
        kv_cache_dtype, scale, None if starts is None else starts.to(dev))
    got = dst[:num_tokens].cpu()
    assert not torch.isnan(got).any()
    assert torch.equal(got, want[:num_tokens])
    assert torch.isnan(dst[num_tokens:]).all() and torch.isnan(buf[:, 576:]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("block_size,use_starts,typed", [(64, False, False), (64, True, True),
                                                         (1, False, False), (16, True, False)])
def test_upconvert_ds_mla(block_size, use_starts, typed):
    g = torch.Generator().manual_seed(block_size * 7 + use_starts)
    dev = "cuda"
    num_blocks = 24
    seq_lens = [2 * block_size + 3, 0, block_size + 1]
    starts, block_table, cu, _ = make_batch(g, num_blocks, block_size, seq_lens, use_starts)
    # each 128-value group of a token its own magnitude (2^-8 .. 2^8)
    mags = torch.exp2(torch.randint(-8, 9, (num_blocks, block_size, 4, 1), generator=g).float())
    latent = (torch.randn(num_blocks, block_size, 4, 128, generator=g) * mags).flatten(-2)
    rope = torch.randn(num_blocks, block_size, 64, generator=g).bfloat16()
    rows, decoded = pack_ds_mla(latent, rope)
    src = (rows.view(torch.float8_e4m3fn) if typed else rows).to(dev)
    total = int(cu[-1])
    want = torch.empty(total, 576, dtype=torch.bfloat16)
    for row, blk, off in positions(seq_lens, starts, block_table, block_size):
        want[row] = decoded[blk, off]
    dst = torch.full((total, 576), float("nan"), dtype=torch.bfloat16, device=dev)
    ws = cu[:-1].contiguous().to(dev)            # vLLM's workspace_starts: [batch] starts only
    cache_ops.cp_gather_and_upconvert_fp8_kv_cache(
        src, dst, block_table.to(dev), ws, len(seq_lens),
        None if starts is None else starts.to(dev))
    assert torch.equal(dst.cpu(), want)


@pytest.mark.gpu
def test_dequant_replays_from_cuda_graph():
    """Captured once, replayed after the cache, the scale and the block table change in place:
    the op reads all three on the device (nothing baked in at capture)."""
    g = torch.Generator().manual_seed(11)
    dev = "cuda"
    seq_lens = [70, 33]
    _, block_table, cu, token_to_seq = make_batch(g, 12, 16, seq_lens, False)
    fp8 = torch.randn(12, 16, 576, generator=g).to(torch.float8_e4m3fn)
    src = fp8.view(torch.uint8).to(dev)
    scale = torch.tensor([0.5], device=dev)
    d_bt = block_table.to(dev)
    total = int(cu[-1])
    dst = torch.full((total, 576), float("nan"), dtype=torch.bfloat16, device=dev)
    args = (src, dst, d_bt, cu.to(dev), token_to_seq.to(dev), total, "fp8", scale)
    graph, _ = capture_graph(lambda: cache_ops.gather_and_maybe_dequant_cache(*args))
    fp8_2 = torch.randn(12, 16, 576, generator=g).to(torch.float8_e4m3fn)
    src.copy_(fp8_2.view(torch.uint8))
    scale.fill_(3.25)
    block_table = block_table.flip(1).contiguous()
    d_bt.copy_(block_table)
    dst.fill_(float("nan"))
    graph.replay()
    want = torch.empty(total, 576, dtype=torch.bfloat16)
    for row, blk, off in positions(seq_lens, None, block_table, 16):
        want[row] = (fp8_2[blk, off].float() * 3.25).bfloat16()
    assert torch.equal(dst.cpu(), want)
