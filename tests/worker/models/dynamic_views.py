"""Modules whose views meet torch-mlir's legacy Linalg view lowering with two dynamic dims
(llvm/torch-mlir#4743): tests/worker/test_legacy_view_shim.py and test_dynamic_verify.py."""

import torch  # noqa: F401  (the inputs comments use it)
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 5, 32),); dynamic={"x": {0: "batch", 1: "seq"}}
class TwoDynamicDimsLinear(nn.Module):
    """nn.Linear on [batch, seq, 32]: its matmul views the input as [batch * seq, 32]."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc(x)


# torch-mlir-lens: inputs=(torch.randn(2, 5, 32),); dynamic={"x": {0: "batch", 1: "seq<=16"}}
class AttentionViews(nn.Module):
    """The views attention code makes: heads split and merged back, batch and seq merged and
    split again, a flatten; only some of them narrow."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        b, s, _ = x.shape
        heads = self.proj(x).view(b, s, 4, 8).transpose(1, 2)
        merged = heads.softmax(-1).transpose(1, 2).reshape(b, s, 32)
        rows = merged.reshape(-1, 32) * 2.0
        back = rows.view(b, s, 32)
        return back + x.flatten(1).mean(-1)[:, None, None]
