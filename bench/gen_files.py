"""Generated source files: a 3,000-line file with 60 module classes, and a 5-module edit file."""

from __future__ import annotations

from pathlib import Path

HEADER = '''\
"""A generated model zoo: 60 module classes, ~3,000 lines (Torch-MLIR Lens benchmark)."""

import torch
import torch.nn.functional as F
from torch import nn

'''

# 50 lines per class, so 60 classes + the header make ~3,000 lines. Every class has an inputs
# comment, a docstring, an __init__ with several layers and a forward of ~25 lines.
_CLASS = '''\

# torch-mlir-lens: inputs=(torch.randn(4, {d}),)
class {name}(nn.Module):
    """Generated block {i}: a gated residual MLP, width {d}, hidden {h}."""

    def __init__(self, d: int = {d}, h: int = {h}):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, h)
        self.gate = nn.Linear(d, h)
        self.down = nn.Linear(h, d)
        self.out = nn.Linear(d, d)
        self.scale = {scale}

    def forward(self, x):
        residual = x
        x = self.norm(x)
        u = self.up(x)
        g = self.gate(x)
        g = torch.sigmoid(g)
        y = u * g
        y = F.relu(y)
        y = self.down(y)
        y = y * self.scale
        x = residual + y
        z = self.out(x)
        z = torch.tanh(z)
        z = z + x
        m = z.mean(dim=-1, keepdim=True)
        s = z.std(dim=-1, keepdim=True)
        z = (z - m) / (s + 1e-5)
        z = z.clamp(-3.0, 3.0)
        w = torch.softmax(z, dim=-1)
        z = z * w
        z = z + residual
        a = z.abs()
        b = torch.exp(-a)
        z = z * b
        z = z.flatten(1)
        c = torch.cos(z)
        d = torch.sin(z)
        z = z + c * d
        z = z - z.mean()
        e = torch.sqrt(z * z + 1.0)
        z = z / e
        f = torch.maximum(z, torch.zeros_like(z))
        z = z + f
        z = F.gelu(z)
        out = z + 0.0
        return out
'''


def zoo_source(n_classes: int = 60) -> str:
    """The text of the generated module zoo (n_classes × 50 lines + header)."""
    parts = [HEADER]
    for i in range(n_classes):
        d = 16 + 8 * (i % 8)
        parts.append(_CLASS.format(name=f"Block{i:02d}", i=i, d=d, h=2 * d, scale=1.0 + i / 100))
    return "".join(parts)


def zoo_file(work: Path) -> Path:
    """Write the 60-class, ~3,000-line file into `work`; return its path."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / "zoo60.py"
    path.write_text(zoo_source())
    return path


EDIT_HEADER = '''\
"""Five small modules for the edit loop (Torch-MLIR Lens benchmark)."""

import torch
import torch.nn.functional as F
from torch import nn
'''

_EDIT_CLASSES = {
    "Encoder": '''

# torch-mlir-lens: inputs=(torch.randn(8, 64),)
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h) + x
''',
    "Decoder": '''

# torch-mlir-lens: inputs=(torch.randn(8, 64),)
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 32)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        return self.fc2(h)
''',
    "Scorer": '''

# torch-mlir-lens: inputs=(torch.randn(8, 64),)
class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 16)

    def forward(self, x):
        h = self.fc(self.norm(x))
        h = h * 1.0
        return torch.softmax(h, dim=-1)
''',
    "ConvStem": '''

# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class ConvStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
''',
    "Gate": '''

# torch-mlir-lens: inputs=(torch.randn(8, 64),)
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)

    def forward(self, x):
        return torch.sigmoid(self.a(x)) * self.b(x)
''',
}

EDITED_MODULE = "Scorer"  # the module whose line the edit loop changes
EDIT_MARKER = "h = h * 1.0"  # the line that changes; run k makes it `h = h * (1.0 + k/1000)`


def edit_source(edit: int = 0, only: str | None = None, n_modules: int = 5) -> str:
    """The 5-module file (or just `only`), with the edited line's constant set by `edit`.

    `n_modules` < 5 keeps the edited module and the first others (smoke runs).
    """
    others = [n for n in _EDIT_CLASSES if n != EDITED_MODULE][: n_modules - 1]
    names = [only] if only else [n for n in _EDIT_CLASSES if n == EDITED_MODULE or n in others]
    body = "".join(_EDIT_CLASSES[n] for n in names)
    if edit:
        body = body.replace(EDIT_MARKER, f"h = h * {1.0 + edit / 1000:.3f}")
    return EDIT_HEADER + body


def edit_files(work: Path, n_modules: int = 5) -> tuple[Path, Path]:
    """Write the 5-module file and the edited module alone; return both paths."""
    work.mkdir(parents=True, exist_ok=True)
    five = work / "edit5.py"
    five.write_text(edit_source(n_modules=n_modules))
    alone = work / "edit1.py"
    alone.write_text(edit_source(only=EDITED_MODULE))
    return five, alone


def edited_line(text: str) -> int:
    """0-based line index of the line the edit loop changes."""
    for i, line in enumerate(text.splitlines()):
        if line.strip().startswith("h = h * "):
            return i
    raise ValueError("edit marker not found")
