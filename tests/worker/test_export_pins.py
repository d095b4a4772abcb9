"""A proven way past torch.export's refusal of a branch on a buffer: the buffer pinned to its
value (`pin.<name>`, worker/rewrites/pins.py), proven before it is offered
(worker/rewrite_jobs/pin_proof.py), applied by `--rewrites auto` and by the comment's
`rewrites=` like any rewrite. Real jobs through `run_job`, the real torch.export and torch-mlir.

The library is a package on `sys.path` outside the user's folder, shaped like a vector
quantizer (`if not self.initted:` on a buffer its forward never writes once initialised) and
a step counter that its forward does write.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from torch_mlir_lens.worker.job_handlers import run_job
from torch_mlir_lens.worker.rewrite_jobs.pin_proof import prove_pin

LIBRARY = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Codebook(nn.Module):
        def __init__(self, n=16, d=8):
            super().__init__()
            self.register_buffer("initted", torch.tensor(True))
            self.register_buffer("embed", torch.randn(n, d))

        def forward(self, x):
            embed = self.embed
            if not self.initted:  # a first call would initialise it from the data
                embed = x.mean(0, keepdim=True).expand_as(self.embed)
            distances = (x[:, None] - embed[None]).pow(2).sum(-1)
            return embed[distances.argmin(-1)]


    class Warmup(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.tensor(0))
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            self.steps += 1
            if self.steps > 1000:
                return self.fc(x)
            return self.fc(x) * 0.5
    """
)

USER = textwrap.dedent(
    """\
    import torch
    from torch import nn

    from lens_pin_library.quantizers import Codebook, Warmup


    # torch-mlir-lens: inputs=(torch.randn(4, 8),)
    class Quantizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.vq = Codebook()

        def forward(self, x):
            return self.vq(x)


    # torch-mlir-lens: inputs=(torch.randn(4, 8),)
    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.warm = Warmup()

        def forward(self, x):
            return self.warm(x)
    """
)


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("pins")
    library = root / "site" / "lens_pin_library"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "quantizers.py").write_text(LIBRARY)
    (root / "project").mkdir()
    path = root / "project" / "lens_pin_user.py"
    path.write_text(USER)
    sys.path.insert(0, str(root / "site"))
    try:
        yield path
    finally:
        sys.path.remove(str(root / "site"))


def _lower(path: Path, module: str, text: str | None = None,
           **extra: Any) -> dict[str, Any]:
    reply = run_job({"id": 1, "op": "lower", "path": str(path), "module": module,
                     "targets": ["linalg", "tosa"], "text": text or path.read_text(),
                     **extra})
    assert reply["ok"], reply
    return dict(reply["result"])


def test_the_refusal_offers_the_proven_pin(user_file: Path) -> None:
    results = _lower(user_file, "Quantizer")["results"]
    [diag] = results[0]["diagnostics"]
    assert diag["kind"] == "export-error"
    assert ("a proven way past it: `# torch-mlir-lens: rewrites=pin.vq.initted` pins "
            "`vq.initted` to its value (True): the exported graph is specialised to it"
            in diag["message"])


def test_rewrites_auto_lowers_through_the_pin(user_file: Path) -> None:
    results = _lower(user_file, "Quantizer", rewrites=["auto"])["results"]
    assert [r["ok"] for r in results] == [True, True], results
    assert all(r["rewrites"] == ["pin.vq.initted"] for r in results)


def test_the_comment_pins_it_and_verify_matches_eager(user_file: Path) -> None:
    text = user_file.read_text().replace(
        "class Quantizer", "# torch-mlir-lens: rewrites=pin.vq.initted\nclass Quantizer")
    results = _lower(user_file, "Quantizer", text)["results"]
    assert all(r["ok"] for r in results), results
    reply = run_job({"id": 2, "op": "verify", "path": str(user_file), "module": "Quantizer",
                     "text": text})
    assert reply["ok"] and reply["result"]["ok"], reply


def test_a_deliberately_wrong_pin_is_refused_by_verify(user_file: Path) -> None:
    layers = importlib.import_module("lens_pin_library.quantizers")
    torch.manual_seed(0)
    model = torch.nn.Sequential(layers.Codebook()).eval()
    args = (torch.randn(4, 8),)
    right = prove_pin(model, args, {}, "0.initted", user_files=[__file__],
                      module_name="Sequential")
    assert right.ok, right.why
    wrong = prove_pin(model, args, {}, "0.initted", user_files=[__file__],
                      module_name="Sequential", value=False)
    assert not wrong.ok and wrong.why.startswith("Verify on the example: differs"), wrong.why


def test_a_tensor_the_forward_writes_is_never_pinned(user_file: Path) -> None:
    layers = importlib.import_module("lens_pin_library.quantizers")
    model = torch.nn.Sequential(layers.Warmup()).eval()
    proof = prove_pin(model, (torch.randn(4, 8),), {}, "0.steps", user_files=[__file__],
                      module_name="Sequential")
    assert not proof.ok and proof.why == "the forward writes it (0, then 1)"
    assert int(model[0].steps) == 0  # the proof's runs put the counter back
    results = _lower(user_file, "Counted", rewrites=["auto"])["results"]
    assert not any(r["ok"] for r in results)
    assert not any("a proven way past it" in d["message"]
                   for r in results for d in r["diagnostics"])


def test_export_code_reproduces_the_pinned_ir_without_the_product(tmp_path: Path) -> None:
    import subprocess

    from tests.worker.test_export_code import NO_PRODUCT

    body = LIBRARY.split("class Warmup")[0]  # the quantizer in the user's own file
    model = tmp_path / "model.py"
    model.write_text(body + textwrap.dedent(
        """\


        # torch-mlir-lens: inputs=(torch.randn(4, 8),)
        # torch-mlir-lens: rewrites=pin.vq.initted
        class Quantizer(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)  # the same codebook in both processes
                self.vq = Codebook()

            def forward(self, x):
                return self.vq(x)
        """))
    job = {"id": 1, "path": str(model), "module": "Quantizer", "target": "tosa"}
    code = run_job({**job, "op": "export-code"})
    assert code["ok"], code
    assert code["result"]["rewrites"] == ["pin.vq.initted"]
    snippet = tmp_path / "export_model.py"
    snippet.write_text(code["result"]["code"])
    ours = tmp_path / "product.mlir"
    assert run_job({**job, "op": "export", "output": str(ours)})["ok"]
    theirs = tmp_path / "plain.mlir"
    run = subprocess.run([sys.executable, "-I", "-c", NO_PRODUCT, str(snippet), str(theirs)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert theirs.read_text() == ours.read_text()


def test_verify_and_export_code_with_rewrites_auto_go_past_the_refusal(
        user_file: Path) -> None:
    job = {"path": str(user_file), "module": "Quantizer", "text": user_file.read_text(),
           "rewrites": ["auto"]}
    verdict = run_job({"id": 1, "op": "verify", **job})
    assert verdict["ok"] and verdict["result"]["ok"], verdict
    code = run_job({"id": 2, "op": "export-code", "target": "linalg", **job})
    assert code["ok"] and code["result"]["rewrites"] == ["pin.vq.initted"], code
    refused = run_job({"id": 3, "op": "verify", **job, "rewrites": []})
    assert not refused["ok"] and refused["error"]["kind"] == "export-error"
