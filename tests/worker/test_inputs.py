"""Example-input resolution on the examples, each precedence level, with real torch."""

import textwrap
from pathlib import Path

import pytest
import torch

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.inputs import instantiate, resolve_inputs
from torch_mlir_lens.worker.loading.loader import load_definitions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _resolve(path: Path, name: str, text: str | None = None, **kw):
    path = path.resolve()
    text = path.read_text() if text is None else text
    mod = load_definitions(str(path), text)
    return mod, resolve_inputs(mod, name, path=str(path), text=text, **kw)


def _shapes(values) -> list[tuple[int, ...]]:
    return [tuple(v.shape) for v in values]


def _write(tmp_path: Path, src: str, name: str = "m.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(src))
    return path


def _run(mod, name, res):
    model = instantiate(mod, name, res)
    with torch.no_grad():
        return model(*res.args, **res.kwargs)


# --- 1. given from outside -------------------------------------------------------------------


def test_cli_inputs_beat_the_comment():
    mod, res = _resolve(EXAMPLES / "mlp.py", "MLP", inputs_expr="torch.randn(5, 16)")
    assert res.source == "cli" and _shapes(res.args) == [(5, 16)]  # a single tensor is wrapped
    assert _run(mod, "MLP", res).shape == (5, 4)


def test_cli_init_beats_the_comment_init():
    mod, res = _resolve(EXAMPLES / "needs_init.py", "Classifier",
                        inputs_expr="(torch.randn(3, 6),)", init_expr="(6, 2)")
    assert res.init_args == (6, 2)
    assert _run(mod, "Classifier", res).shape == (3, 2)


def test_inputs_file_tuple_and_dict(tmp_path):
    torch.save((torch.randn(7, 16),), tmp_path / "args.pt")
    _, res = _resolve(EXAMPLES / "mlp.py", "MLP", inputs_file=str(tmp_path / "args.pt"))
    assert res.source == "inputs-file" and _shapes(res.args) == [(7, 16)]
    torch.save({"x": torch.randn(3, 5)}, tmp_path / "kw.pt")
    _, res = _resolve(EXAMPLES / "functions.py", "rms_norm", inputs_file=str(tmp_path / "kw.pt"))
    assert res.args == () and tuple(res.kwargs["x"].shape) == (3, 5)
    # Relative to the workspace when the worker runs elsewhere.
    _, res = _resolve(EXAMPLES / "mlp.py", "MLP", inputs_file="args.pt", workspace=str(tmp_path))
    assert _shapes(res.args) == [(7, 16)]
    with pytest.raises(LensError) as info:
        _resolve(EXAMPLES / "mlp.py", "MLP", inputs_file=str(tmp_path / "none.pt"))
    assert info.value.kind == "bad-inputs" and "none.pt" in info.value.message


# --- 2. the comment --------------------------------------------------------------------------


def test_comment_with_init_and_kwargs_init():
    mod, res = _resolve(EXAMPLES / "needs_init.py", "Classifier")
    assert res.source == "comment" and res.init_args == (12, 3)
    assert _run(mod, "Classifier", res).shape == (4, 3)
    mod, res = _resolve(EXAMPLES / "needs_init.py", "ScaledResidual")
    assert res.init_kwargs == {"channels": 8, "scale": 0.5}
    assert _run(mod, "ScaledResidual", res).shape == (2, 8, 10)


def test_comment_dynamic_becomes_dims(tmp_path):
    path = _write(tmp_path, """\
        import torch
        # torch-mlir-lens: inputs=(torch.randn(4, 3),)
        # torch-mlir-lens: dynamic={"x": {0: "batch"}}
        class M(torch.nn.Module):
            def forward(self, x):
                return x * 2
    """)
    mod, res = _resolve(path, "M")
    assert res.dynamic_shapes["x"][0].__name__ == "batch"
    exported = torch.export.export(instantiate(mod, "M", res), res.args,
                                   dynamic_shapes=res.dynamic_shapes)
    x = next(n for n in exported.graph.nodes if n.op == "placeholder")
    assert isinstance(x.meta["val"].shape[0], torch.SymInt)
    assert x.meta["val"].shape[1] == 3


def test_bad_dynamic_dim_name(tmp_path):
    path = _write(tmp_path, """\
        import torch
        # torch-mlir-lens: inputs=(torch.randn(4, 3),); dynamic={"x": {0: "batch size"}}
        class M(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    with pytest.raises(LensError) as info:
        _resolve(path, "M")
    assert info.value.kind == "bad-inputs" and info.value.line == 2
    assert "batch size" in info.value.message


def test_functions_are_returned_as_is():
    mod, res = _resolve(EXAMPLES / "functions.py", "attention")
    fn = instantiate(mod, "attention", res)
    assert fn is mod.attention
    assert fn(*res.args).shape == (2, 4, 16, 8)
    _, res = _resolve(EXAMPLES / "functions.py", "rms_norm")
    assert res.kwargs["eps"] == 1e-6


# --- 3. conventions --------------------------------------------------------------------------


@pytest.mark.parametrize("name,source,shapes", [
    ("LitAutoEncoder", "convention:example_input_array", [(2, 784)]),
    ("Gate", "convention:example_inputs", [(4, 16), (4, 16)]),
    ("MatmulAdd", "convention:annotate_args", [(3, 4), (4, 5)]),
    ("Pooler", "convention:module_example_inputs", [(2, 10, 32)]),
])
def test_conventions(name, source, shapes):
    mod, res = _resolve(EXAMPLES / "conventions.py", name)
    assert res.source == source
    assert _shapes(res.args) == shapes
    _run(mod, name, res)


def test_annotate_args_dtypes_and_dynamic_dims(tmp_path):
    path = _write(tmp_path, """\
        import torch
        def annotate_args(a):
            return lambda f: f
        class M(torch.nn.Module):
            @annotate_args([None, ([-1, 3], torch.int64, True), ([2], torch.bool, True)])
            def forward(self, idx, mask):
                return idx.sum() + mask.sum()
    """)
    _, res = _resolve(path, "M")
    assert res.args[0].dtype == torch.int64 and tuple(res.args[0].shape) == (4, 3)
    assert res.args[1].dtype == torch.bool


def test_comment_beats_convention(tmp_path):
    path = _write(tmp_path, """\
        import torch
        # torch-mlir-lens: inputs=(torch.randn(1, 2),)
        class M(torch.nn.Module):
            example_input_array = torch.randn(9, 9)
            def forward(self, x):
                return x
    """)
    assert _shapes(_resolve(path, "M")[1].args) == [(1, 2)]


# --- 4. settings -----------------------------------------------------------------------------


def test_settings_expression_and_file(tmp_path):
    path = _write(tmp_path, """\
        import torch
        class M(torch.nn.Module):
            def forward(self, a, b):
                return a + b
    """, name="sm.py")
    settings = {"M": "(torch.zeros(2), torch.ones(2))"}
    mod, res = _resolve(path, "M", settings_inputs=settings, workspace=str(tmp_path))
    assert res.source == "settings" and _run(mod, "M", res).tolist() == [1.0, 1.0]
    torch.save((torch.ones(3), torch.ones(3)), tmp_path / "in.pt")
    settings = {"M": "(torch.zeros(2), torch.ones(2))", "sm.py::M": "@in.pt"}
    _, res = _resolve(path, "M", settings_inputs=settings, workspace=str(tmp_path))
    assert _shapes(res.args) == [(3,), (3,)]  # the path-qualified key wins


# --- 5. derived ------------------------------------------------------------------------------


def test_derived_inputs_for_transformer_blocks():
    mod, res = _resolve(EXAMPLES / "transformer.py", "Block")
    assert res.source == "derived:TinyTransformer"
    assert _shapes(res.args) == [(2, 16, 64)]  # (batch, tokens, d_model) as seen in the model
    assert res.init_args == (64, 4)  # recorded constructor arguments
    assert _run(mod, "Block", res).shape == (2, 16, 64)
    _, res = _resolve(EXAMPLES / "transformer.py", "Attention")  # grand-child, via Block
    assert res.source == "derived:TinyTransformer" and _shapes(res.args) == [(2, 16, 64)]


def test_derived_across_files_from_a_sibling_model():
    mod, res = _resolve(EXAMPLES / "submodules" / "layers.py", "ResidualBlock")
    assert res.source == "derived:model.py::TinyResNet"
    assert _shapes(res.args) == [(1, 8, 16, 16)] and res.init_args == (8,)
    model = instantiate(mod, "ResidualBlock", res)
    assert type(model) is mod.ResidualBlock  # this file's class, not model.py's import of it
    _, res = _resolve(EXAMPLES / "submodules" / "layers.py", "ConvBNReLU")
    assert _shapes(res.args) == [(1, 3, 16, 16)] and res.init_args == (3, 8)  # the stem: first


def test_derived_records_kwargs_and_first_call(tmp_path):
    path = _write(tmp_path, """\
        import torch
        import torch.nn as nn
        class Scale(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.k = k
            def forward(self, x, *, bias):
                return x * self.k + bias
        # torch-mlir-lens: inputs=(torch.randn(3, 5),)
        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Scale(2.0)
                self.b = Scale(3.0)
            def forward(self, x):
                y = self.b(x, bias=1.0)
                return self.a(y[:1], bias=2.0)
    """)
    _, res = _resolve(path, "Scale")
    assert res.source == "derived:Top"
    assert _shapes(res.args) == [(3, 5)] and res.kwargs == {"bias": 1.0}  # first call: self.b
    assert res.init_args == (3.0,)


def test_one_recording_pass_serves_every_child(tmp_path):
    path = _write(tmp_path, """\
        import torch
        import torch.nn as nn
        RUNS = []
        class A(nn.Module):
            def forward(self, x):
                return x + 1
        class B(nn.Module):
            def forward(self, x):
                return x * 2
        # torch-mlir-lens: inputs=(torch.randn(2, 3),)
        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = A(), B()
            def forward(self, x):
                RUNS.append(1)
                return self.b(self.a(x)[:, :2])
    """)
    mod, res_a = _resolve(path, "A")
    _, res_b = _resolve(path, "B")
    assert _shapes(res_a.args) == [(2, 3)] and _shapes(res_b.args) == [(2, 2)]
    assert mod.RUNS == [1]  # the parent ran once for both children


def test_recording_is_kept_across_an_edit_outside_the_parent(tmp_path):
    src = textwrap.dedent("""\
        import torch
        import torch.nn as nn
        RUNS = []
        class A(nn.Module):
            def forward(self, x):
                return x + 1
        # torch-mlir-lens: inputs=(torch.randn(2, 3),)
        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = A()
            def forward(self, x):
                RUNS.append(1)
                return self.a(x[:, :2])
        # torch-mlir-lens: inputs=(torch.randn(4),)
        class Other(nn.Module):
            def forward(self, x):
                return x - 1
    """)
    path = _write(tmp_path, src)
    mod, res = _resolve(path, "A", text=src)
    assert mod.RUNS == [1] and _shapes(res.args) == [(2, 2)]
    # Another module edited: Top's fingerprint is the same, its recording is reused.
    other = src.replace("x - 1", "x - 2")
    mod, res = _resolve(path, "A", text=other)
    assert mod.RUNS == [] and _shapes(res.args) == [(2, 2)]
    # The parent edited: recorded again, with the new shapes.
    parent = other.replace("x[:, :2]", "x[:, :1]")
    mod, res = _resolve(path, "A", text=parent)
    assert mod.RUNS == [1] and _shapes(res.args) == [(2, 1)]


# --- 6. inferred -----------------------------------------------------------------------------


@pytest.mark.parametrize("name,shape,dtype", [
    ("LinearHead", (2, 20), torch.float32),
    ("ConvEncoder", (1, 1, 32, 32), torch.float32),
    ("BagOfWords", (2, 8), torch.int64),
])
def test_inferred(name, shape, dtype):
    mod, res = _resolve(EXAMPLES / "inferred.py", name)
    assert res.source == "inferred"
    assert tuple(res.args[0].shape) == shape and res.args[0].dtype == dtype
    _run(mod, name, res)


# --- errors ----------------------------------------------------------------------------------


def test_missing_says_which_module_why_and_the_comment():
    with pytest.raises(LensError) as info:
        _resolve(EXAMPLES / "inferred.py", "NeedsTwoInputs")
    err = info.value
    assert err.kind == "inputs-missing"
    assert "NeedsTwoInputs" in err.message and "forward takes 2 tensors" in err.message
    assert "# torch-mlir-lens: inputs=(torch.randn(2, 8), torch.randn(2, 16))" in err.message
    assert err.line == 49


def test_bad_expression_names_it():
    with pytest.raises(LensError) as info:
        _resolve(EXAMPLES / "mlp.py", "MLP", inputs_expr="torch.randn(2, nope)")
    assert info.value.kind == "bad-inputs" and "torch.randn(2, nope)" in info.value.message
    assert "NameError" in info.value.message


def test_bad_comment_expression_points_at_the_comment(tmp_path):
    path = _write(tmp_path, """\
        import torch
        # torch-mlir-lens: inputs=(torch.randn(2, -5),)
        class M(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    with pytest.raises(LensError) as info:
        _resolve(path, "M")
    assert info.value.kind == "bad-inputs" and info.value.line == 2


def test_unknown_module():
    with pytest.raises(LensError) as info:
        _resolve(EXAMPLES / "mlp.py", "Nope")
    assert info.value.kind == "unknown-module"


def test_constructor_needs_arguments(tmp_path):
    path = _write(tmp_path, """\
        import torch
        # torch-mlir-lens: inputs=(torch.randn(2, 3),)
        class M(torch.nn.Module):
            def __init__(self, width):
                super().__init__()
            def forward(self, x):
                return x
    """)
    mod, res = _resolve(path, "M")
    with pytest.raises(LensError) as info:
        instantiate(mod, "M", res)
    assert info.value.kind == "inputs-missing" and "init=" in info.value.message
    assert "width" in info.value.message


def test_instance_is_in_eval_mode():
    mod, res = _resolve(EXAMPLES / "mlp.py", "MLP")
    assert instantiate(mod, "MLP", res).training is False


def test_random_examples_and_weights_are_the_same_on_every_build(tmp_path):
    """`torch.randn` examples and a module's random weights are drawn from one seed on each
    build, so what is decided on their values (Verify, a specialised branch, an offer) does
    not change between two checks; the caller's own generator is left as it was."""
    path = _write(tmp_path, """
        import torch

        # torch-mlir-lens: inputs=(torch.randn(4, 8),)
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 2)

            def forward(self, x):
                return self.fc(x)
    """)
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    builds = []
    for _ in range(2):
        mod, res = _resolve(path, "Head")
        builds.append((res.args[0], instantiate(mod, "Head", res).fc.weight.detach()))
    assert torch.equal(builds[0][0], builds[1][0]) and torch.equal(builds[0][1], builds[1][1])
    assert torch.equal(torch.rand(3), expected_next)  # the caller's draws are untouched
