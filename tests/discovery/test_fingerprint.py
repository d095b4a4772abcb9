"""Per-module fingerprints: which edits change which module's fingerprint."""

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_mlir_lens.discovery.fingerprint import fingerprint

SRC = textwrap.dedent('''\
    import torch
    from torch import nn

    SCALE = 2


    def helper(x):
        return x * SCALE


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class A(nn.Module):
        def forward(self, x):
            return helper(x) + 1


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class B(nn.Module):
        def forward(self, x):
            return x - 1


    class Child(nn.Module):
        def forward(self, x):
            return x * 3


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = Child()
            self.b = B()

        @torch.no_grad()
        def forward(self, x):
            return self.b(self.child(x))
''')
MODULES = ["A", "B", "Child", "Top"]
PATH = "/nonexistent/fingerprint_case.py"


def _changed(new: str) -> list[str]:
    """The modules whose fingerprint differs between SRC and `new`."""
    assert new != SRC, "the edit did not apply"
    return sorted(m for m in MODULES if fingerprint(SRC, m, PATH) != fingerprint(new, m, PATH))


def test_independent_modules_have_distinct_fingerprints() -> None:
    # (Child and Top may share one: each depends on all the other does; keys add the name.)
    assert len({fingerprint(SRC, m, PATH) for m in ["A", "B", "Top"]}) == 3


def test_edit_in_a_module_used_by_nobody_changes_only_it() -> None:
    assert _changed(SRC.replace("helper(x) + 1", "helper(x) + 2")) == ["A"]


def test_edit_in_a_used_module_changes_its_users() -> None:
    # Top uses B; Child derives its inputs from Top, whose forward calls B.
    assert _changed(SRC.replace("x - 1", "x - 5")) == ["B", "Child", "Top"]


def test_edit_in_a_parent_changes_the_derived_child() -> None:
    # Child has no inputs of its own: Top's forward decides them.
    assert _changed(SRC.replace("self.b(self.child(x))", "self.b(self.child(x + 1))")) == [
        "Child", "Top"]


def test_annotation_comment_changes_only_its_module_and_derived_ones() -> None:
    b_comment = "# torch-mlir-lens: inputs=(torch.randn(2, 4),)\nclass B"
    assert _changed(SRC.replace(b_comment, b_comment.replace("2, 4", "3, 4"))) == ["B"]
    top_comment = "# torch-mlir-lens: inputs=(torch.randn(2, 4),)\nclass Top"
    assert _changed(SRC.replace(top_comment, top_comment.replace("2, 4", "3, 4"))) == [
        "Child", "Top"]


def test_decorator_belongs_to_its_module() -> None:
    assert _changed(SRC.replace("@torch.no_grad()", "@torch.inference_mode()")) == [
        "Child", "Top"]


def test_top_level_code_counts_for_every_module() -> None:
    assert _changed(SRC.replace("SCALE = 2", "SCALE = 3")) == MODULES
    assert _changed(SRC.replace("import torch\n", "import torch\nimport math\n")) == MODULES


def test_added_line_moves_only_the_modules_below() -> None:
    # Lines before A and B are unchanged, but Child and Top start one line later.
    assert _changed(SRC.replace("class Child", "\nclass Child")) == ["Child", "Top"]


def test_a_module_appended_at_the_end_changes_no_other() -> None:
    appended = SRC + "\n\n# torch-mlir-lens: inputs=(torch.randn(2, 4),)\nclass C(nn.Module):\n" \
        "    def forward(self, x):\n        return x\n"
    assert _changed(appended) == []
    # Top-level code appended still counts for every module.
    assert _changed(SRC + "\nOFFSET = 1\n") == MODULES


def test_same_text_same_fingerprint_and_unknown_module_hashes_the_text() -> None:
    assert fingerprint(SRC, "A", PATH) == fingerprint(str(SRC), "A", PATH)
    edited = SRC.replace("x - 1", "x - 5")
    assert fingerprint(SRC, "Nope", PATH) != fingerprint(edited, "Nope", PATH)


def test_syntax_error_anywhere_changes_every_module() -> None:
    broken = SRC.replace("return x - 1", "return x -")
    assert _changed(broken) == MODULES
    # The fix of that error elsewhere changes them back: no stale result survives it.
    fixed = broken.replace("return x -", "return x - 1")
    assert fingerprint(fixed, "A", PATH) == fingerprint(SRC, "A", PATH)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.sampled_from(MODULES))
def test_never_raises(text: str, module: str) -> None:
    assert isinstance(fingerprint(text, module, PATH), str)
    assert isinstance(fingerprint(SRC[: len(text) % len(SRC)] + text, module, PATH), str)


@pytest.mark.parametrize("cut", [40, 200, 400])
def test_truncated_files_never_raise(cut: int) -> None:
    assert len(fingerprint(SRC[:cut], "Top", PATH)) == 64


def test_worker_keys_programs_by_the_fingerprint_the_engine_sent(tmp_path):
    from torch_mlir_lens.discovery.fingerprint import job_fingerprint
    from torch_mlir_lens.protocol.programs import program_key

    path = tmp_path / "m.py"
    path.write_text(SRC)
    job = {"path": str(path), "module": "A", "text": SRC}
    computed = job_fingerprint(job, SRC)
    # Sent or computed, the same fingerprint is the same program; a different one is not.
    assert program_key({**job, "fingerprint": computed}, SRC) == program_key(job, SRC)
    assert program_key({**job, "fingerprint": "other"}, SRC) != program_key(job, SRC)
