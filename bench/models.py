"""Model files the benchmark lowers.

The benchmark needs a model "like those users lower": a 20-layer, d_model 256 transformer
language model (~16M parameters, vocab 8000). It is written as a real Python file in the bench
work directory, so the product executes it under its real path exactly as it would a user's file.
The small models (MLP, CNN, transformer block) come from `examples/` when they are there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
WORK = Path(__file__).resolve().parent / ".work"  # git-ignored

# A self-contained LM so the benchmark does not depend on an example's defaults. Attention is
# written out (no nn.MultiheadAttention) so it lowers on every backend.
LM_SOURCE = '''\
"""A 20-layer, d_model 256 transformer language model (~16M parameters)."""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 8000
D_MODEL = 256
N_LAYERS = 20


class Attention(nn.Module):
    def __init__(self, d_model: int = D_MODEL, n_heads: int = 4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.n_heads)
        weights = F.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out)


class Block(nn.Module):
    def __init__(self, d_model: int = D_MODEL, n_heads: int = 4, d_ff: int = 4 * D_MODEL):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        h = F.gelu(self.fc1(self.ln2(x)))
        x = x + self.fc2(h)
        return x


# torch-mlir-lens: inputs=(torch.randint(0, 8000, (1, 64)),)
class TransformerLM(nn.Module):
    def __init__(self, vocab: int = VOCAB, d_model: int = D_MODEL, n_layers: int = N_LAYERS,
                 n_heads: int = 4, max_len: int = 128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d_model))
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:, :t]
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.embed.weight.t()
'''


@dataclass(frozen=True)
class BenchModel:
    """A module in a file, with the Python expressions that build it and its inputs."""

    name: str  # short name for tables: "mlp", "lm20", ...
    path: Path
    module: str  # class name in `path`
    inputs: str  # expression → tuple of example inputs
    init: str = "()"  # expression → tuple of constructor arguments


def lm_source(vocab: int = 8000, d_model: int = 256, n_layers: int = 20) -> str:
    """The LM's source with the given sizes (the defaults are the benchmark's model)."""
    return (
        LM_SOURCE.replace("VOCAB = 8000", f"VOCAB = {vocab}")
        .replace("D_MODEL = 256", f"D_MODEL = {d_model}")
        .replace("N_LAYERS = 20", f"N_LAYERS = {n_layers}")
        .replace("torch.randint(0, 8000, (1, 64))", f"torch.randint(0, {vocab}, (1, 64))")
    )


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _example_lm_source() -> str | None:
    """examples/transformer.py at full size: its `init=` comment above TransformerLM removed.

    The example's defaults are the benchmark's model (20 layers, d_model 256, vocab 8192); only
    its comment shrinks it so that hovering the example stays quick.
    """
    path = EXAMPLES / "transformer.py"
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    try:
        at = next(i for i, ln in enumerate(lines) if ln.startswith("class TransformerLM("))
    except StopIteration:
        return None
    i = at - 1
    while i >= 0 and lines[i].startswith("#"):
        if lines[i].replace(" ", "").startswith("#torch-mlir-lens:init="):
            del lines[i]
            at -= 1
        i -= 1
    text = "\n".join(lines) + "\n"
    if "class Block(" not in text or "inputs=" not in lines[at - 1]:
        return None
    return only_classes_of(text, "TransformerLM")


def only_classes_of(text: str, root: str) -> str:
    """Remove every top-level class that is neither `root` nor used by it (transitively).

    The example also holds a small `TinyTransformer` built from the same `Block`; left in, the
    product may derive Block's inputs from it (d_model 64) instead of from the 20-layer model.
    """
    tree = ast.parse(text)
    lines = text.splitlines()
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    keep, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name in keep or name not in classes:
            continue
        keep.add(name)
        todo += [n.id for n in ast.walk(classes[name]) if isinstance(n, ast.Name)]
    drop = set()
    for name, node in classes.items():
        if name not in keep:
            first = node.lineno - 1
            while first > 0 and lines[first - 1].startswith("#"):
                first -= 1
            drop.update(range(first, node.end_lineno or node.lineno))
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop) + "\n"


def lm_file(work: Path = WORK, tiny: bool = False) -> Path:
    """Write the 20-layer LM (or a 2-layer d_model 32 one for smoke runs); return its path."""
    if tiny:
        return _write(work / "lm_tiny.py", lm_source(vocab=100, d_model=32, n_layers=2))
    return _write(work / "lm20.py", _example_lm_source() or lm_source())


def lm20(work: Path = WORK, tiny: bool = False) -> BenchModel:
    """The 20-layer d_model 256 transformer LM (~16M parameters), or a tiny one for smoke runs.

    Its `Block` class has no inputs comment: lowering it alone uses derived inputs.
    """
    path = lm_file(work, tiny)
    inputs = annotation_of(path, "TransformerLM", "inputs") or "()"
    return BenchModel("lm_tiny" if tiny else "lm20", path, "TransformerLM", inputs)


def annotation_of(path: Path, cls: str, key: str) -> str | None:
    """The `# torch-mlir-lens: KEY=EXPR` comment right above class `cls` in `path`, if any."""
    lines = path.read_text().splitlines()
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            i = first - 2  # 0-based index of the line above
            while i >= 0 and lines[i].lstrip().startswith("#"):
                text = lines[i].lstrip()[1:].strip()
                if text.startswith("torch-mlir-lens:"):
                    for part in _split_fields(text[len("torch-mlir-lens:"):]):
                        k, _, v = part.partition("=")
                        if k.strip() == key:
                            return v.strip()
                i -= 1
    return None


def _split_fields(text: str) -> list[str]:
    """Split `inputs=(...) init=(...)` at top-level spaces (brackets may hold spaces)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if (ch.isspace() or ch == ";") and depth == 0:
            if cur:
                parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts


# Candidate example files and classes; the first one found with an inputs comment is used.
_EXAMPLE_CANDIDATES: dict[str, list[tuple[str, str]]] = {
    "mlp": [("mlp.py", "MLP")],
    "cnn": [("cnn.py", "CNN"), ("cnn.py", "SmallCNN"), ("cnn.py", "ConvNet")],
    "block": [("transformer.py", "Block"), ("transformer.py", "TransformerBlock")],
}

# Used when an example is missing (the examples are being written in parallel).
_FALLBACK_SOURCE = '''\
import torch
from torch import nn
import torch.nn.functional as F


# torch-mlir-lens: inputs=(torch.randn(8, 64),)
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x)


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),)
class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))
'''


def block_file(work: Path = WORK) -> Path:
    """`Block` and what it uses, with explicit inputs/init comments (figure 1 lowers it alone).

    Without the LM in the file, opening it checks `Block` only (default settings check every
    module with known inputs), so nothing else competes with the measured lowering.
    """
    full = lm_file(work).read_text()
    d_model, heads = ("256", "8") if "n_heads: int = 8" in full else ("256", "4")
    text = only_classes_of(full, "Block")
    comment = (
        f"# torch-mlir-lens: inputs=(torch.randn(1, 32, {d_model}),)\n"
        + (f"# torch-mlir-lens: init=({d_model}, {heads})\n"
           if "def __init__(self, d_model: int, n_heads: int)" in text else "")
    )
    text = text.replace("\nclass Block(", "\n" + comment + "class Block(", 1)
    return _write(work / "block.py", text)


def example(name: str, work: Path = WORK) -> BenchModel:
    """A small model from `examples/` ("mlp", "cnn", "block"), else a built-in stand-in.

    Only example classes with an explicit inputs comment are used, so the product and the
    baseline build exactly the same module and inputs.
    """
    for file, cls in _EXAMPLE_CANDIDATES.get(name, []):
        if not (EXAMPLES / file).exists():
            continue
        # A copy in the work folder: the servers trust their workspace folder (the work
        # folder), not the repository's examples/.
        path = _write(work / "examples" / file, (EXAMPLES / file).read_text())
        if path.exists():
            inputs = annotation_of(path, cls, "inputs")
            if inputs:
                return BenchModel(name, path, cls, inputs, annotation_of(path, cls, "init") or "()")
    if name == "block":
        path = block_file(work)
        return BenchModel(name, path, "Block", annotation_of(path, "Block", "inputs") or "()",
                          annotation_of(path, "Block", "init") or "()")
    path = _write(work / "small_models.py", _FALLBACK_SOURCE)
    cls = {"mlp": "MLP", "cnn": "CNN"}[name]
    return BenchModel(name, path, cls, annotation_of(path, cls, "inputs") or "()")


def all_models(work: Path = WORK) -> list[BenchModel]:
    """The models figure 1 compares: the examples and the 20-layer LM."""
    return [example("mlp", work), example("cnn", work), example("block", work), lm20(work)]
