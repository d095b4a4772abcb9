"""The models of figure 9 (scale): plain PyTorch language models of 16 M, 124 M and 1.1 B
parameters, written as real files in the bench work directory like the other models.

- "lm20": the 20-layer d_model 256 LM of the other figures (~16 M parameters);
- "gpt2": GPT-2-small's shape (vocab 50257, d 768, 12 layers, 12 heads, 1024 positions, tied
  head; ~124 M parameters), sequence 128;
- "llama1b": a Llama-shaped model (d 2048, 22 layers, 32 heads, 4 KV heads, SwiGLU MLP 5632,
  vocab 32000, RMSNorm, rotary embeddings; ~1.1 B parameters), sequence 128. Its `Block` has
  no inputs comment: lowering it alone derives its inputs from `LlamaLM`;
- "llama7b", "llama70b": the same file at Llama-2-7B's and Llama-2-70B's shapes (d 4096 and
  8192, 32 and 80 layers), for the product alone: their weights (25 GB, 269 GB) would not fit.

`tiny=True` gives the same files at toy sizes (harness checks).
"""

from __future__ import annotations

from pathlib import Path

from bench.models import LM_SOURCE, WORK, BenchModel, _write, annotation_of, lm20

LLAMA_SOURCE = '''\
"""A Llama-shaped language model (~1.1 B parameters), plain PyTorch."""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 32000
D_MODEL = 2048
N_LAYERS = 22
N_HEADS = 32
N_KV_HEADS = 4
D_FF = 5632


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, d_model: int = D_MODEL, n_heads: int = N_HEADS,
                 n_kv_heads: int = N_KV_HEADS):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = d_model // n_heads
        self.q_proj = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, d_model, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, d_model: int = D_MODEL, d_ff: int = D_FF):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, d_model: int = D_MODEL, n_heads: int = N_HEADS,
                 n_kv_heads: int = N_KV_HEADS, d_ff: int = D_FF):
        super().__init__()
        self.attn_norm = RMSNorm(d_model)
        self.attn = Attention(d_model, n_heads, n_kv_heads)
        self.mlp_norm = RMSNorm(d_model)
        self.mlp = MLP(d_model, d_ff)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


# torch-mlir-lens: inputs=(torch.randint(0, 32000, (1, 128)),)
class LlamaLM(nn.Module):
    def __init__(self, vocab: int = VOCAB, d_model: int = D_MODEL, n_layers: int = N_LAYERS,
                 n_heads: int = N_HEADS, n_kv_heads: int = N_KV_HEADS, d_ff: int = D_FF):
        super().__init__()
        self.head_dim = d_model // n_heads
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_heads, n_kv_heads, d_ff) for _ in range(n_layers)])
        self.norm = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        inv_freq = 1.0 / (10000.0 ** (
            torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(self.norm(x))
'''


def gpt2_source(vocab: int = 50257, d_model: int = 768, n_layers: int = 12, n_heads: int = 12,
                positions: int = 1024, seq: int = 128) -> str:
    """GPT-2-small's shape, from the benchmark's LM source (same layers, other sizes)."""
    return (
        LM_SOURCE.replace('"""A 20-layer, d_model 256 transformer language model (~16M '
                          'parameters)."""', '"""A GPT-2-small-shaped language model."""')
        .replace("VOCAB = 8000", f"VOCAB = {vocab}")
        .replace("D_MODEL = 256", f"D_MODEL = {d_model}")
        .replace("N_LAYERS = 20", f"N_LAYERS = {n_layers}")
        .replace("n_heads: int = 4", f"n_heads: int = {n_heads}")
        .replace("max_len: int = 128", f"max_len: int = {positions}")
        .replace("torch.randint(0, 8000, (1, 64))", f"torch.randint(0, {vocab}, (1, {seq}))")
    )


# (d_model, layers, heads, KV heads, MLP): Llama-2-7B's and Llama-2-70B's shapes.
BIG_SHAPES = {"llama7b": (4096, 32, 32, 32, 11008), "llama70b": (8192, 80, 64, 8, 28672)}


def llama_shape_source(d_model: int, n_layers: int, n_heads: int, n_kv_heads: int,
                       d_ff: int) -> str:
    """The Llama-shaped model's file at other sizes (vocab 32000, sequence 128)."""
    return (
        LLAMA_SOURCE.replace("D_MODEL = 2048", f"D_MODEL = {d_model}")
        .replace("N_LAYERS = 22", f"N_LAYERS = {n_layers}")
        .replace("N_HEADS = 32", f"N_HEADS = {n_heads}")
        .replace("N_KV_HEADS = 4", f"N_KV_HEADS = {n_kv_heads}")
        .replace("D_FF = 5632", f"D_FF = {d_ff}")
        .replace("(~1.1 B parameters)", "(Llama-2 shape)")
    )


def big_models(work: Path = WORK) -> list[BenchModel]:
    """The 6.7 B and 70 B Llama shapes: the product only (their weights would not fit)."""
    return [_model(name, _write(work / f"{name}.py", llama_shape_source(*shape)), "LlamaLM")
            for name, shape in BIG_SHAPES.items()]


def llama_source(tiny: bool = False) -> str:
    """The Llama-shaped model's file (toy sizes with `tiny`)."""
    if not tiny:
        return LLAMA_SOURCE
    return (
        LLAMA_SOURCE.replace("VOCAB = 32000", "VOCAB = 100")
        .replace("D_MODEL = 2048", "D_MODEL = 64")
        .replace("N_LAYERS = 22", "N_LAYERS = 2")
        .replace("N_HEADS = 32", "N_HEADS = 4")
        .replace("N_KV_HEADS = 4", "N_KV_HEADS = 2")
        .replace("D_FF = 5632", "D_FF = 128")
        .replace("torch.randint(0, 32000, (1, 128))", "torch.randint(0, 100, (1, 16))")
    )


def _model(name: str, path: Path, module: str) -> BenchModel:
    return BenchModel(name, path, module, annotation_of(path, module, "inputs") or "()")


def gpt2(work: Path = WORK, tiny: bool = False) -> BenchModel:
    """GPT-2-small's shape (~124 M parameters), or a toy one."""
    if tiny:
        text = gpt2_source(vocab=100, d_model=32, n_layers=2, n_heads=4, positions=32, seq=16)
        return _model("gpt2_tiny", _write(work / "gpt2_tiny.py", text), "TransformerLM")
    return _model("gpt2", _write(work / "gpt2_small.py", gpt2_source()), "TransformerLM")


def llama1b(work: Path = WORK, tiny: bool = False) -> BenchModel:
    """The Llama-shaped ~1.1 B-parameter model, or a toy one."""
    name = "llama_tiny" if tiny else "llama1b"
    return _model(name, _write(work / f"{name}.py", llama_source(tiny)), "LlamaLM")


def scale_models(work: Path = WORK, tiny: bool = False) -> list[BenchModel]:
    """The three sizes of figure 9, smallest first."""
    return [lm20(work, tiny), gpt2(work, tiny), llama1b(work, tiny)]
