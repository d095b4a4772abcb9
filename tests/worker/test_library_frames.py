"""Source maps into library code: a user's wrapper around `transformers`' Idefics3 vision
embeddings (real torch-mlir, real `transformers` code, random weights, nothing downloaded).

The user map still points every op at the wrapper's call line; the frame table keeps the whole
chain through `modeling_idefics3.py` (torch's own frames dropped) and survives the trip to the
engine; annotate shows library lines with `frames="all"`; the op StableHLO rejects inside that
code is on the user's line and names the library lines. (GPT-2's attention, MLP and norm lines
are checked through the language server: tests/lsp/test_library_frames.py.)
"""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from typing import Any

import pytest
import torch

from torch_mlir_lens.cli.annotated_ir import annotate
from torch_mlir_lens.protocol.frames import library_breakdown
from torch_mlir_lens.protocol.results import ErrorKind, LowerResult
from torch_mlir_lens.worker.lowering import lower_module

WRAPPERS = str(Path(__file__).resolve().parents[1] / "models" / "library_wrappers.py")
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def modeling_file(name: str) -> str:
    """The installed `transformers` source file of a model (e.g. `gpt2` → modeling_gpt2.py)."""
    import importlib

    module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    return os.path.realpath(str(module.__file__))


def line_with(path: str, needle: str) -> int:
    """The 1-based line of the only line of `path` containing `needle`."""
    with open(path, encoding="utf-8") as f:
        hits = [i for i, text in enumerate(f, start=1) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


@pytest.fixture(scope="module")
def results() -> dict[str, LowerResult]:
    ns = runpy.run_path(WRAPPERS)
    torch.manual_seed(0)
    args = (torch.randn(1, 3, 32, 32), torch.ones(1, 4, 4, dtype=torch.bool))
    out = lower_module(ns["PatchEmbed"]().eval(), args, {}, module_name="PatchEmbed",
                       user_files={WRAPPERS}, targets=["linalg", "fx", "stablehlo"])
    return {r.target: r for r in out}


@pytest.mark.parametrize("target", ["linalg", "fx"])
def test_chains_reach_the_library_lines(results: dict[str, LowerResult], target: str) -> None:
    res = results[target]
    assert res.ok, res.diagnostics
    call = line_with(WRAPPERS, "return self.embed(pixels, mask)")
    modeling = modeling_file("idefics3")
    # The user map is as before: every op of the library at the wrapper's one call line.
    assert {m.line for m in res.map if m.depth == 0} == {call}
    wanted = {line_with(modeling, "patch_embeds = self.patch_embedding(pixel_values)"),
              line_with(modeling, "step_h = 1.0 / nb_patches_h"),
              line_with(modeling, "self.position_embedding(position_ids)")}
    # torch's own frames are dropped (nn.Conv2d, nn.Embedding); every chain ends at the
    # user's line and starts in the library.
    assert not any(os.path.realpath(f).startswith(TORCH_DIR) for f in res.frames.files)
    for cid in range(len(res.frames.chains)):
        chain = res.frames.chain(cid)
        assert chain[0].library and not chain[-1].library and chain[-1].line == call
    rows = library_breakdown(res.frames, WRAPPERS, call)
    named = {(os.path.realpath(r.frame.file), r.frame.line) for r in rows}
    assert {(modeling, n) for n in wanted} <= named
    counts = [len(r.ir_lines) for r in rows]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    assert res.frames.ir_lines() == sorted({m.ir_line for m in res.map})
    if target == "linalg":
        assert 0 < res.stats["library_ops"] <= res.stats["ops"]


def test_the_table_survives_the_trip_to_the_engine(results: dict[str, LowerResult]) -> None:
    res = results["linalg"]
    sent = json.loads(json.dumps(res.to_json(compact_map=True)))
    assert len(res.frames.chains) < len(res.frames.rows)  # each chain stored once
    back = LowerResult.from_json(sent)
    assert back.frames.to_json() == res.frames.to_json()
    assert back.map == res.map
    # The CLI's --json: each depth-0 entry of a library-made op carries its whole chain.
    plain = back.to_json()
    chained = [m for m in plain["map"] if "chain" in m]
    assert len(chained) == len({m.ir_line for m in res.map})
    assert all(m["chain"][-1] == {"file": m["file"], "line": m["line"], "library": False}
               and m["chain"][0]["library"] for m in chained)
    assert LowerResult.from_json(plain).frames.ir_lines() == res.frames.ir_lines()


def test_annotate_shows_library_lines_only_when_asked(results: dict[str, LowerResult]) -> None:
    res = results["linalg"]
    with open(WRAPPERS, encoding="utf-8") as f:
        source = f.read()
    user = annotate(source, res, path=WRAPPERS)
    every = annotate(source, res, path=WRAPPERS, frames="all")
    assert "modeling_idefics3.py:" not in user
    made = line_with(modeling_file("idefics3"), "step_h = 1.0 / nb_patches_h")
    call = line_with(WRAPPERS, "return self.embed(pixels, mask)")
    headers = [ln for ln in every.splitlines() if "│" in ln]
    assert any(ln.split("│")[0].strip() == f"modeling_idefics3.py:{made}"
               and "1.0 / nb_patches_h" in ln and ln.endswith(f"← line {call}")
               for ln in headers), headers[:5]
    # The same IR, in the same order.
    ir = [ln.strip() for ln in res.ir.splitlines() if ln.strip()]
    assert [ln.strip() for ln in every.splitlines() if ln.strip() and "│" not in ln][1:] == ir


def test_unsupported_op_in_library_code_names_the_library_line(
        results: dict[str, LowerResult]) -> None:
    res = results["stablehlo"]
    modeling = modeling_file("idefics3")
    made = line_with(modeling, "step_h = 1.0 / nb_patches_h")
    [diag] = [d for d in res.diagnostics if d.kind == ErrorKind.UNSUPPORTED_OP
              and d.op == "torch.aten.reciprocal"]
    # On the user's line that reaches it, naming the library line.
    assert (diag.file, diag.line) == (WRAPPERS, line_with(WRAPPERS, "return self.embed("))
    assert f"modeling_idefics3.py:{made}" in diag.message
    related = [(os.path.realpath(r.file), r.line) for r in diag.related]
    assert related[0] == (modeling, made)
    assert "reciprocal" in diag.related[0].message
    # Both reciprocals (height and width) reach the backend through the same user line.
    assert (modeling, line_with(modeling, "step_w = 1.0 / nb_patches_w")) in related
    back = LowerResult.from_json(json.loads(json.dumps(res.to_json(compact_map=True))))
    assert [d.related for d in back.diagnostics if d.op == diag.op] == [diag.related]


HELPER_LIBRARY = '''\
import torch
from torch import nn


def rotate(q):
    n = q.shape[-1]
    return q[..., n:]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def _attn(self, x):
        y = self.fc(x)
        return y[..., 8:].sum(-1) + rotate(y).sum(-1)

    def forward(self, x):
        return self._attn(x)
'''


class _HelperUser(torch.nn.Module):
    def __init__(self, attention: torch.nn.Module) -> None:
        super().__init__()
        self.a = attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x)  # the user's call


def test_a_culprit_in_a_library_helper_is_at_the_line_inside_it(tmp_path: Path) -> None:
    """Non-strict export records only `forward` frames; the library's helper method and
    function are registered too, so the zero-sized slices TOSA rejects are named at the
    lines inside `_attn` and `rotate`, not at `return self._attn(x)`."""
    import importlib
    import sys

    package = tmp_path / "lens_helper_library"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(HELPER_LIBRARY)
    sys.path.insert(0, str(tmp_path))
    try:
        layers = importlib.import_module("lens_helper_library.layers")
        [res] = lower_module(_HelperUser(layers.Attention()), (torch.randn(2, 8),), {},
                             module_name="_HelperUser", user_files={__file__},
                             targets=["tosa"])
    finally:
        sys.path.remove(str(tmp_path))
    library = os.path.realpath(str(layers.__file__))
    [diag] = [d for d in res.diagnostics if d.kind == ErrorKind.UNSUPPORTED_OP]
    import inspect

    lines, start = inspect.getsourcelines(_HelperUser.forward)
    assert diag.line == start + next(i for i, text in enumerate(lines) if "return" in text)
    named = {(os.path.realpath(r.file), r.line) for r in diag.related or []
             if "comes from here" in r.message}
    assert (library, line_with(library, "return y[..., 8:]")) in named
    assert (library, line_with(library, "return q[..., n:]")) in named
    assert (library, line_with(library, "return self._attn(x)")) not in named


RESAMPLE_FILE = '''\
import torch
import torch.nn.functional as F


def resample(x, size):
    y = x * 2
    return F.interpolate(y, size=size, mode="bicubic", antialias=True, align_corners=False)


def shift(x):
    return torch.roll(_twice(x), 1, 2)


def _twice(x):
    return x * 2
'''

POS_EMBED_FILE = '''\
from torch import nn

from lens_resample_library.resample import resample


class PosEmbed(nn.Module):
    def _pos_embed(self, x):
        return resample(x, (8, 8))

    def forward(self, x):
        return self._pos_embed(x) + 1
'''


class _CallsLibraryFunctions(torch.nn.Module):
    def __init__(self, embed: torch.nn.Module, shift: Any) -> None:
        super().__init__()
        self.embed, self.shift = embed, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.embed(x).sum() + self.shift(x).sum()  # the user's call


def test_library_functions_from_other_files_keep_their_lines(tmp_path: Path) -> None:
    """An op torch-mlir has no conversion of (bicubic antialias) made in a library function
    that a library class's helper calls from another of its files (timm's ViT `_pos_embed` →
    `resample_abs_pos_embed`) keeps a library line, the helper's call, in `related` and in
    its words; a library function the user's forward calls by name (`shift(x)`, through
    `_twice`) is named at the line inside it."""
    import importlib
    import sys

    package = tmp_path / "lens_resample_library"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "resample.py").write_text(RESAMPLE_FILE)
    (package / "layers.py").write_text(POS_EMBED_FILE)
    user = tmp_path / "user.py"  # the user's forward calls the library function by name
    user.write_text("import torch\nfrom lens_resample_library.resample import shift\n\n\n"
                    "class Shifted(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return shift(x) + 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        layers = importlib.import_module("lens_resample_library.layers")
        functions = importlib.import_module("lens_resample_library.resample")
        [res] = lower_module(_CallsLibraryFunctions(layers.PosEmbed(), functions.shift),
                             (torch.randn(1, 3, 16, 16),), {},
                             module_name="_CallsLibraryFunctions", user_files={__file__},
                             targets=["tosa"])
        [direct] = lower_module(runpy.run_path(str(user))["Shifted"](),
                                (torch.randn(1, 3, 16, 16),), {}, module_name="Shifted",
                                user_files={str(user)}, targets=["tosa"])
    finally:
        sys.path.remove(str(tmp_path))
    resample_file = os.path.realpath(str(functions.__file__))
    layers_file = os.path.realpath(str(layers.__file__))
    by_op = {d.op: d for d in res.diagnostics if d.kind == ErrorKind.UNSUPPORTED_OP}
    bicubic = by_op["torch.aten._upsample_bicubic2d_aa"]
    made = line_with(layers_file, "return resample(x, (8, 8))")
    assert (os.path.realpath(bicubic.related[0].file), bicubic.related[0].line) == \
        (layers_file, made)
    assert bicubic.message.endswith(f"(in layers.py:{made})"), bicubic.message
    rolled = [d for d in direct.diagnostics if d.cause and "torch.roll" in d.cause]
    assert rolled, direct.diagnostics
    named = {(os.path.realpath(r.file), r.line) for r in rolled[0].related}
    assert (resample_file, line_with(resample_file, "return torch.roll(")) in named
