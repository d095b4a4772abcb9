"""Small realistic models for the worker's lowering and source-map tests.

Lines marked `# computes` must each be mapped by at least one op on every MLIR target.
"""

import torch
import torch.nn.functional as F
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 16),)
class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = self.fc1(x)  # computes
        h = F.gelu(h)  # computes
        h = self.fc2(h)  # computes
        return torch.softmax(h, dim=-1)  # computes


# torch-mlir-lens: inputs=(torch.randn(1, 3, 16, 16),)
class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = self.conv(x)  # computes
        y = self.bn(y)  # computes
        y = F.relu(y)  # computes
        y = F.max_pool2d(y, 2)  # computes
        y = y.mean(dim=(2, 3))  # computes
        return self.head(y)  # computes


class SelfAttention(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(x)  # computes
        q, k, v = qkv.chunk(3, dim=-1)  # computes
        q = q.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)  # computes
        k = k.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)  # computes
        v = v.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)  # computes
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5  # computes
        att = att.softmax(dim=-1)  # computes
        y = (att @ v).transpose(1, 2).reshape(b, t, d)  # computes
        return self.proj(y)  # computes


# torch-mlir-lens: inputs=(torch.randn(2, 4, 16),)
class AttentionBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(16)
        self.attn = SelfAttention()
        self.norm2 = nn.LayerNorm(16)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))  # computes
        x = x + self.mlp(self.norm2(x))  # computes
        return x


def scaled_tanh(x, y):
    return torch.tanh(x) * 2.0 + y  # computes


def _gated(x):
    return x * torch.sigmoid(x)  # computes


# torch-mlir-lens: inputs=(torch.randn(2, 16),)
class HelperUser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return _gated(self.fc(x))  # computes
