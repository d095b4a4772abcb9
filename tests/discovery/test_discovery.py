"""Static module discovery: examples, aliases, nesting, syntax errors, speed."""

import ast
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_mlir_lens.discovery import (
    caches,
    find_modules,
    finder,
    input_template,
    layer_inputs_expr,
    module_at_line,
    parsing,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The examples written with discovery in mind (others may add files to examples/).
OWN_EXAMPLES = [
    EXAMPLES / name for name in (
        "mlp.py", "cnn.py", "transformer.py", "needs_init.py", "training_script.py",
        "conventions.py", "inferred.py", "functions.py", "submodules/model.py",
        "submodules/layers.py",
    )
]


def _mods(src: str, path: str | None = None, **kw):
    return {m.name: m for m in find_modules(textwrap.dedent(src), path, **kw)}


def _example(name: str):
    path = EXAMPLES / name
    return {m.name: m for m in find_modules(path.read_text(), str(path))}


# --- the examples ----------------------------------------------------------------------------


def test_mlp_example():
    mods = _example("mlp.py")
    assert list(mods) == ["MLP"]
    mlp = mods["MLP"]
    text = (EXAMPLES / "mlp.py").read_text().splitlines()
    assert text[mlp.line - 1].startswith("class MLP(")
    assert text[mlp.line - 1][mlp.name_col : mlp.name_end_col] == "MLP"
    assert text[mlp.forward_line - 1].strip().startswith("def forward")
    assert mlp.end_line == mlp.forward_end_line == len(text)
    assert mlp.inputs == "comment"
    assert mlp.annotation.inputs == "(torch.randn(2, 16),)"
    assert mlp.bases == ["nn.Module"]


def test_cnn_and_needs_init_examples():
    assert _example("cnn.py")["SmallCNN"].inputs == "comment"
    mods = _example("needs_init.py")
    assert mods["Classifier"].annotation.init == "(12, 3)"
    assert mods["Classifier"].init_required == ["in_features", "num_classes"]
    scaled = mods["ScaledResidual"]
    assert scaled.annotation.inputs == "(torch.randn(2, 8, 10),)"
    assert scaled.annotation.init == '{"channels": 8, "scale": 0.5}'


def test_transformer_example_derived_blocks():
    mods = _example("transformer.py")
    assert set(mods) == {"Attention", "FeedForward", "Block", "TinyTransformer", "TransformerLM"}
    assert mods["TinyTransformer"].inputs == "comment"
    assert mods["TransformerLM"].annotation.init == "dict(n_layers=2)"
    assert mods["Block"].inputs == "derived"
    assert mods["Block"].parent_candidates == ["TinyTransformer", "TransformerLM"]
    assert mods["Attention"].parent_candidates == ["Block"]
    assert mods["Attention"].inputs == "derived"  # through Block, transitively


def test_conventions_example():
    mods = _example("conventions.py")
    assert {n: m.convention for n, m in mods.items()} == {
        "LitAutoEncoder": "example_input_array",
        "Gate": "example_inputs",
        "MatmulAdd": "annotate_args",
        "Pooler": "module_example_inputs",
    }
    assert all(m.inputs == "convention" for m in mods.values())
    assert "([3, 4], torch.float32, True)" in mods["MatmulAdd"].annotate_args


def test_inferred_example():
    mods = _example("inferred.py")
    assert {n: m.inputs for n, m in mods.items()} == {
        "LinearHead": "inferred", "ConvEncoder": "inferred", "BagOfWords": "inferred",
        "NeedsTwoInputs": "missing",
    }
    assert mods["ConvEncoder"].first_layer.kind == "Conv2d"
    assert mods["ConvEncoder"].first_layer.params["in_channels"] == 1  # from the init default
    assert mods["BagOfWords"].first_layer.kind == "Embedding"  # first *called*, not first listed


def test_functions_example_lists_only_annotated_functions():
    mods = _example("functions.py")
    assert set(mods) == {"linear_gelu", "attention", "rms_norm"}
    assert all(m.kind == "function" and m.inputs == "comment" for m in mods.values())
    assert mods["attention"].annotation.inputs.count("torch.randn") == 3  # two comment lines
    assert mods["rms_norm"].forward_params == ["x", "eps"]


def test_submodules_examples_follow_sibling_imports():
    mods = _example("submodules/model.py")
    assert set(mods) == {"TinyResNet", "WideResNet"}  # WideResNet's base lives in layers.py
    layers = _example("submodules/layers.py")
    assert layers["ConvBNReLU"].parent_candidates == ["ResidualBlock"]
    # model.py imports both blocks and has an inputs comment: derived across files.
    assert layers["ResidualBlock"].sibling_parents == ["model.py::TinyResNet"]
    assert layers["ResidualBlock"].inputs == "derived"
    assert layers["ConvBNReLU"].inputs == "derived"


def test_sibling_parents_follow_the_folder(tmp_path):
    blocks = tmp_path / "blocks.py"
    blocks.write_text("import torch.nn as nn\nclass B(nn.Module):\n    pass\n")
    assert find_modules(blocks.read_text(), str(blocks))[0].inputs == "missing"
    time.sleep(0.05)  # a new folder mtime even on coarse-timestamp file systems
    (tmp_path / "net.py").write_text(
        "import torch.nn as nn\nimport blocks\n"
        "# torch-mlir-lens: inputs=(torch.randn(1, 2),)\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.b = blocks.B()\n"
    )
    # A new sibling file: the cached result for the same text must not be reused.
    info = find_modules(blocks.read_text(), str(blocks))[0]
    assert info.sibling_parents == ["net.py::Net"] and info.inputs == "derived"


def test_training_script_example():
    mods = _example("training_script.py")
    assert list(mods) == ["Regressor"]


def test_every_example_has_modules():
    for path in EXAMPLES.rglob("*.py"):
        mods = find_modules(path.read_text(), str(path))
        if path.name != "__init__.py":
            assert mods, path
    assert all(p.is_file() for p in OWN_EXAMPLES)


# --- aliases and bases -----------------------------------------------------------------------


@pytest.mark.parametrize("header,base", [
    ("import torch.nn as nn", "nn.Module"),
    ("from torch import nn", "nn.Module"),
    ("from torch.nn import Module", "Module"),
    ("from torch.nn import Module as Base", "Base"),
    ("import torch", "torch.nn.Module"),
    ("import torch as T", "T.nn.Module"),
    ("import torch.nn", "torch.nn.Module"),
    ("from torch import nn\nBase = nn.Module", "Base"),
    ("import torch.nn as nn", "nn.Sequential"),
    ("import lightning as L", "L.LightningModule"),
])
def test_base_aliases(header, base):
    mods = _mods(f"{header}\nclass M({base}):\n    def forward(self, x):\n        return x\n")
    assert list(mods) == ["M"]


def test_not_modules():
    mods = _mods("""
        import torch.nn as nn
        import other
        class P(nn.Parameter): pass
        class Q(other.Module): pass
        class R: pass
        class S(Module): pass
    """)
    assert mods == {}


def test_indirect_bases_nested_and_decorated_classes():
    src = """\
        import torch.nn as nn

        class Base(nn.Module):
            pass

        class Mid(Base):
            pass

        @register
        @other.deco(1)
        class Leaf(Mid):
            class Inner(nn.Module):
                def forward(self, x):
                    return x

            def forward(self, x):
                return x
    """
    mods = _mods(src)
    assert set(mods) == {"Base", "Mid", "Leaf", "Leaf.Inner"}
    leaf = mods["Leaf"]
    assert leaf.decorator_line == 9 and leaf.line == 11
    assert leaf.end_line == 17 and leaf.forward_line == 16
    assert module_at_line(list(mods.values()), 13).name == "Leaf.Inner"
    assert module_at_line(list(mods.values()), 16).name == "Leaf"
    assert module_at_line(list(mods.values()), 9).name == "Leaf"  # on a decorator
    assert module_at_line(list(mods.values()), 2) is None


# --- robustness ------------------------------------------------------------------------------


def test_empty_and_garbage_files():
    assert find_modules("") == []
    assert find_modules("\x00\x01") == []
    assert find_modules("(((((") == []


def test_syntax_error_mid_file_keeps_the_rest():
    src = """\
        import torch.nn as nn

        class A(nn.Module):
            def forward(self, x):
                return x +

        class B(nn.Module):
            def forward(self, x):
                return x

        def broken(:
            pass

        class C(B):
            def forward(self, x):
                return (x
    """
    mods = _mods(src)
    assert {"A", "B", "C"} <= set(mods)
    assert mods["B"].line == 7 and mods["B"].end_line == 9
    assert mods["C"].line == 14


def test_syntax_error_in_class_header():
    src = """\
        import torch.nn as nn

        class A(nn.Module)
            def forward(self, x):
                return x

        class B(nn.Module):
            pass
    """
    mods = _mods(src)
    assert "B" in mods and mods["B"].line == 7


def test_settings_status_and_function_from_settings(tmp_path):
    src = (
        "import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x, y):\n"
        "        return x\n\ndef f(x):\n    return x\n"
    )
    path = tmp_path / "pkg" / "m.py"
    path.parent.mkdir()
    path.write_text(src)
    mods = _mods(src, str(path), settings_inputs={"pkg/m.py::M": "(1, 2)", "f": "(1,)"},
                 workspace=str(tmp_path))
    assert mods["M"].inputs == "settings" and mods["M"].settings_key == "pkg/m.py::M"
    assert mods["f"].kind == "function" and mods["f"].inputs == "settings"
    assert _mods(src)["M"].inputs == "missing"


def test_module_info_is_json():
    import json

    src = textwrap.dedent("""\
        import torch.nn as nn
        class M(nn.Module):
            def __init__(self, a=b"x", b={1, 2}, c=1j, d=(2, 3), e=float("nan"), f=2 * 8):
                super().__init__()
                self.n = nn.LayerNorm(d)
            def forward(self, x):
                return self.n(x)
    """)
    info = find_modules(src)[0]
    assert info.init_defaults == {"a": None, "b": None, "c": None, "d": (2, 3), "e": None, "f": 16}
    assert json.loads(json.dumps(info.to_json(), allow_nan=False))["name"] == "M"
    assert input_template(info, src) == "# torch-mlir-lens: inputs=(torch.randn(2, 8, 2, 3),)"


def test_input_template():
    src = (
        "import torch.nn as nn\n\nclass M(nn.Module):\n    def __init__(self, n):\n"
        "        super().__init__()\n        self.c = nn.Conv2d(3, n, 3)\n"
        "    def forward(self, x):\n        return self.c(x)\n"
    )
    info = find_modules(src)[0]
    assert info.inputs == "missing"  # needs an init argument
    assert input_template(info, src) == (
        "# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32),); init=(16,)"
    )
    assert layer_inputs_expr("Linear", {"in_features": 7}) == "torch.randn(2, 7)"
    assert layer_inputs_expr("LSTM", {"input_size": 5, "batch_first": True}) == (
        "torch.randn(2, 8, 5)"
    )
    assert layer_inputs_expr("Dropout", {}) is None
    lit = _example("conventions.py")["LitAutoEncoder"]  # nn.Linear(features, 64), features=28*28
    assert lit.first_layer.kind == "Linear" and lit.first_layer.params["in_features"] == 784


def _big_file() -> tuple[str, int]:
    block = (EXAMPLES / "transformer.py").read_text().split("class Attention", 1)[1]
    parts = ["import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"]
    i = 0
    while sum(p.count("\n") for p in parts) < 3000:
        parts.append("class Attention" + block.replace("Attention", f"Attention{i}")
                     .replace("Block", f"Block{i}").replace("FeedForward", f"FeedForward{i}")
                     .replace("TinyTransformer", f"TinyTransformer{i}")
                     .replace("TransformerLM", f"TransformerLM{i}"))
        i += 1
    return "\n".join(parts), 5 * i


def test_an_edit_in_a_big_file_reparses_only_its_class(monkeypatch: pytest.MonkeyPatch):
    # What keeps discovery fast on every keystroke (how fast: bench figure 3, lenses after an
    # edit in a 3,000-line file): an edit re-parses only the chunk it touches, and unchanged
    # text is answered from the result cache without parsing at all.
    text, n_classes = _big_file()
    parsing._CHUNK_CACHE.clear()
    caches._NODE_CACHE.clear()
    assert len(find_modules(text)) == n_classes
    before = set(parsing._CHUNK_CACHE)
    assert len(before) > n_classes // 5  # one chunk per top-level class at least
    edited = text.replace("* d_model)", "* d_model + 1 - 1)", 1)
    assert edited != text and edited.count("\n") == text.count("\n")
    assert len(find_modules(edited)) == n_classes
    new = set(parsing._CHUNK_CACHE) - before
    assert len(new) == 1, [key[0] for key in new]  # the edited class's chunk, nothing else
    ((_, chunk),) = new
    assert "* d_model + 1 - 1)" in chunk

    parses: list[str] = []
    real = parsing._parse_chunked
    monkeypatch.setattr(parsing, "_parse_chunked", lambda t: parses.append(t) or real(t))
    assert len(find_modules(edited)) == n_classes
    assert parses == []  # the result cache answered


def test_chunked_parse_equals_whole_parse():
    files = [*OWN_EXAMPLES, Path(ast.__file__), Path(textwrap.__file__)]
    for path in files:
        text = path.read_text()
        parsing._CHUNK_CACHE.clear()
        chunked = parsing._parse_chunked(text)
        assert chunked is not None, path
        whole = ast.parse(text).body
        assert ast.dump(ast.Module(chunked, []), include_attributes=True) == ast.dump(
            ast.Module(whole, []), include_attributes=True
        ), path


def test_chunk_split_inside_brackets_falls_back_to_whole_parse():
    src = 'import torch.nn as nn\nX = [\n1,\n]\nS = """\nclass Fake(nn.Module):\n"""\n'
    src += "class M(nn.Module):\n    pass\n"
    mods = find_modules(src)
    assert [m.name for m in mods] == ["M"] and mods[0].line == 8


def test_edits_between_calls_are_seen():
    base = textwrap.dedent("""\
        import torch.nn as nn

        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 4)
            def forward(self, x):
                return self.fc(x)

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
            def forward(self, x):
                return self.inner(x)
    """)
    first = {m.name: m for m in find_modules(base)}
    assert first["Outer"].first_layer.params["in_features"] == 3
    assert first["Inner"].inputs == "derived" and first["Inner"].annotation is None
    # Change only Inner's first layer: Outer's cached first layer must follow.
    edited = base.replace("nn.Linear(3, 4)", "nn.Linear(7, 4)")
    # And add a comment above Inner (it lives in the chunk before the class).
    edited = edited.replace("class Inner", "# torch-mlir-lens: inputs=(torch.randn(1, 7),)\n"
                            "class Inner")
    second = {m.name: m for m in find_modules(edited)}
    assert second["Outer"].first_layer.params["in_features"] == 7
    assert second["Inner"].inputs == "comment" and second["Inner"].line == 4
    assert second["Outer"].line == 11
    # The earlier result objects were not changed behind the caller's back.
    assert first["Outer"].first_layer.params["in_features"] == 3


_EXAMPLE_TEXTS = sorted(p.read_text() for p in OWN_EXAMPLES)


@settings(max_examples=150, deadline=None)
@given(
    which=st.integers(0, len(_EXAMPLE_TEXTS) - 1),
    line=st.integers(0, 200),
    edit=st.sampled_from(["delete", "truncate", "garbage", "dedent", "open-bracket", "quote"]),
    junk=st.text(alphabet="()[]{}:'\"#\\@ \tx=.,", max_size=6),
)
def test_edited_examples_never_raise(which, line, edit, junk):
    """Half-typed code: the raw analysis (not the never-raise wrapper) must cope."""
    lines = _EXAMPLE_TEXTS[which].splitlines()
    i = line % len(lines)
    if edit == "delete":
        del lines[i]
    elif edit == "truncate":
        lines = lines[:i]
    elif edit == "garbage":
        lines[i] = lines[i][: len(lines[i]) // 2] + junk
    elif edit == "dedent":
        lines[i] = lines[i].lstrip()
    elif edit == "open-bracket":
        lines[i] += "("
    else:
        lines[i] += '"""'
    text = "\n".join(lines)
    infos = finder._find_modules(text, None, None, None)
    for info in infos:
        assert 1 <= info.line <= info.end_line <= len(lines) + 1
        assert module_at_line(infos, info.line) is not None
