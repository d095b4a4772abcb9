"""Models that repeat a block: each block traced once as a function, or kept inline when the
blocks are not proven to compute the same. Lines the tests look for end with a marker comment."""

import torch
import torch.nn.functional as F
from torch import nn

D = 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.up = nn.Linear(D, 2 * D)
        self.down = nn.Linear(2 * D, D)

    def forward(self, x):
        h = F.gelu(self.up(self.norm(x)))  # block: up
        return x + self.down(h)  # block: down


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class Stack(nn.Module):
    def __init__(self, depth=4):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(depth)])
        self.head = nn.Linear(D, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)  # parent: call
        return self.head(x) * 2.0  # parent: head


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class DeepStack(Stack):
    def __init__(self):
        super().__init__(depth=12)


class WindowedBlock(nn.Module):
    """Every other layer attends only to its neighbours: its layer index picks the mask."""

    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.qkv = nn.Linear(D, 3 * D)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)
        if self.layer_idx % 2 == 1:
            t = x.shape[1]
            near = torch.ones(t, t, dtype=torch.bool).triu(-1).tril(1)
            scores = scores.masked_fill(~near, float("-inf"))  # windowed
        return x + scores.softmax(-1) @ v


# torch-mlir-lens: inputs=(torch.randn(2, 5, 8),)
class Alternating(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([WindowedBlock(i) for i in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class MlpBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, 3 * D)
        self.fc2 = nn.Linear(3 * D, D)

    def forward(self, x):
        return x + self.fc2(torch.tanh(self.fc1(x)) * 0.5)


# torch-mlir-lens: inputs=(torch.randn(2, 5, 8),)
class TwoKinds(nn.Module):
    """Attention-like and MLP blocks interleaved in one list."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([WindowedBlock(0), MlpBlock(), WindowedBlock(2), MlpBlock()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class InPlaceBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, D)

    def forward(self, x):
        y = torch.relu(self.fc(x)) * 0.5 + 1.0
        x.add_(y.sin())  # writes to its input
        return x.cos()


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(InPlaceBlock(), InPlaceBlock(), InPlaceBlock())

    def forward(self, x):
        return self.layers(x.clone())


class UpsampleBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        y = F.interpolate(self.conv(x), scale_factor=2.0, mode="nearest")  # block: culprit
        return torch.tanh(F.avg_pool2d(y, 2)).relu() * 0.5 + x


# torch-mlir-lens: inputs=(torch.randn(1, 2, 6, 6),)
class Upsampling(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(UpsampleBlock(), UpsampleBlock(), UpsampleBlock())

    def forward(self, x):
        return self.blocks(x)


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class Collecting(Stack):
    """Reads every block's result: the blocks are called one by one, not as one chain."""

    def forward(self, x):
        total = torch.zeros_like(x)
        for block in self.blocks:
            x = block(x)
            total = total + x
        return self.head(total)


SCALE = [1.0]


class DriftingBlock(Block):
    """Reads a global its module attributes do not show, and changes it at each call."""

    def forward(self, x):
        SCALE[0] = SCALE[0] * 2.0
        return super().forward(x) * SCALE[0]


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class Drifting(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([DriftingBlock() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class StackWithExtra(Stack):
    """One more Block outside the list: its forward runs in the parent's own export."""

    def __init__(self):
        super().__init__()
        self.extra = Block()

    def forward(self, x):
        return self.extra(super().forward(x)[..., :1].expand(-1, -1, 8))


class CachingBlock(nn.Module):
    """Keeps the bias it gathers in a dict, and its last input's length in an attribute it
    adds, as LeViT's attention does in eval mode: a run on fake tensors writes to them."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(3, 8))
        self.register_buffer("index", torch.tensor([2, 0, 1]), persistent=False)
        self.bias_cache = {}
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        if "cpu" not in self.bias_cache:
            self.bias_cache["cpu"] = self.table[self.index]
        self.last_length = x.shape[-1]
        y = torch.tanh(self.proj(x) + self.bias_cache["cpu"])
        return F.layer_norm(y * torch.sigmoid(y), (8,)) + x


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class Caching(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([CachingBlock() for _ in range(3)])
        self.eval()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
