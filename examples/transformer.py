"""A small decoder-only transformer.

Only the top model carries an inputs comment: lowering `Block`, `Attention` or `FeedForward` on
their own uses the inputs they actually receive inside `TinyTransformer` (derived inputs), which
is much faster than lowering the whole model.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Causal multi-head self-attention, written out (no fused kernel)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        # (b, t, d) -> (b, heads, t, d_head)
        q = q.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.n_heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Module):
    def __init__(self, d_model: int, expansion: int = 4) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, expansion * d_model)
        self.down = nn.Linear(expansion * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


# torch-mlir-lens: inputs=(torch.randint(0, 1000, (2, 16)),)
class TinyTransformer(nn.Module):
    """Token + position embeddings, a stack of Blocks, a language-model head."""

    def __init__(self, vocab: int = 1000, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, max_len: int = 128) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1])
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# A GPT-style language model: 20 layers of d_model=256 over an 8k vocabulary (~16M parameters)
# at full size. The comments below make the default small so hovering stays quick; benchmarks
# construct it with the full-size arguments.
# torch-mlir-lens: inputs=(torch.randint(0, 8192, (1, 32)),)
# torch-mlir-lens: init=dict(n_layers=2)
class TransformerLM(nn.Module):
    def __init__(self, vocab: int = 8192, d_model: int = 256, n_heads: int = 8,
                 n_layers: int = 20, max_len: int = 256) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying, as GPT-2 does

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1])
        x = self.tok(idx) + self.pos(positions)
        x = self.blocks(x)
        return self.head(self.ln_f(x))
