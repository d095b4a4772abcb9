"""`torchMlirLens.explainInputs` over a real server: it tells a module that has example inputs
where they come from, and asks only a module without any to get some.

It used to say "needs example inputs" of every module, also of one with an inputs comment (the
"Set example inputs" lens, drawn before the comment was added, still runs it). The answer is
static (no user code), so an untrusted server answers it: no worker is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from .helpers import CONFIG, change_doc, execute, init_params, line_of, open_doc

pytestmark = pytest.mark.asyncio(loop_scope="module")
EXPLAIN = "torchMlirLens.explainInputs"


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=False))
    yield
    await lsp_client.shutdown_session()


async def explain(client: LanguageClient, path: Path, module: str) -> dict[str, str]:
    return dict(await execute(client, EXPLAIN, {"uri": path.as_uri(), "module": module},
                              timeout=30))


async def test_a_module_with_an_inputs_comment_is_told_so(client: LanguageClient,
                                                          workspace: Path) -> None:
    path = workspace / "mlp.py"
    answer = await explain(client, path, "MLP")
    comment = "# torch-mlir-lens: inputs=(torch.randn(2, 16),)"
    assert answer["inputs"] == "comment"
    assert "needs" not in answer["message"], answer["message"]
    assert f"line {line_of(path, comment)}" in answer["message"] and comment in answer["message"]
    assert answer["template"] == comment


async def test_the_comment_added_after_the_lens_counts(client: LanguageClient,
                                                       workspace: Path) -> None:
    """The lens "Set example inputs" is clicked after the comment was typed (not saved)."""
    path = workspace / "no_inputs.py"
    uri = open_doc(client, path)
    before = await explain(client, path, "Mixer")
    assert before["inputs"] == "missing" and "needs example inputs" in before["message"]
    assert before["template"].startswith("# torch-mlir-lens: inputs=(torch.randn(")
    comment = "# torch-mlir-lens: inputs=(torch.randn(2, 8), torch.ones(4))"
    text = path.read_text().replace("class Mixer", f"{comment}\nclass Mixer")
    change_doc(client, uri, text)
    after = await explain(client, path, "Mixer")
    assert after["inputs"] == "comment", after
    assert "needs" not in after["message"] and after["template"] == comment
    line = text.splitlines().index(comment) + 1
    assert f"the comment at line {line}" in after["message"], after["message"]


async def test_other_sources_are_named(client: LanguageClient, workspace: Path) -> None:
    conventions = workspace / "conventions.py"
    for module, words in (("LitAutoEncoder", "its `example_input_array` attribute"),
                          ("Gate", "its `example_inputs()` method"),
                          ("Pooler", "the file's `example_inputs()` function")):
        answer = await explain(client, conventions, module)
        assert answer["inputs"] == "convention", (module, answer)
        assert f"{module} has example inputs: {words}" in answer["message"], answer["message"]
    answer = await explain(client, workspace / "inferred.py", "LinearHead")
    assert answer["inputs"] == "inferred" and "first layer (`Linear`)" in answer["message"]


async def test_an_unreadable_comment_is_named_with_its_line(client: LanguageClient,
                                                            workspace: Path) -> None:
    path = workspace / "unreadable_comment.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\n"
                    "# torch-mlir-lens: inputs=(torch.randn(2, 4)\n"
                    "class Broken(nn.Module):\n    def forward(self, x):\n        return x\n")
    answer = await explain(client, path, "Broken")
    assert answer["inputs"] == "comment"
    assert "The inputs comment of Broken (line 5) cannot be read: line 5:" in answer["message"]
