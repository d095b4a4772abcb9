"""The `dynamic=` comment's dims and the fixes torch.export suggests (source/dynamic_dims.py,
no torch).

The messages parsed here are torch.export's own wording (torch 2.13), copied from real
failures of tests/models/hf_zoo.py's BERT (unbounded sequence) and Llama (an example of batch 1).
"""

from __future__ import annotations

import pytest

from torch_mlir_lens.source.dynamic_dims import (
    DimFix,
    DimText,
    TooSmallExample,
    fix_dynamic_text,
    fix_example_size,
    parse_dim_text,
    parse_too_small,
    suggested_fixes,
    too_small_message,
)

BERT = """torch.export failed: UserError: Constraints violated (seq)!
  - Not all values of seq = L['ids'].size()[1] in the specified range satisfy the generated \
guard 2 <= L['ids'].size()[1] and L['ids'].size()[1] <= 512
Suggested fixes:
  seq = Dim('seq', max=512)
In the dynamic= comment: "seq" → "seq<=512\""""
LLAMA = """Constraints violated (batch)! For more information, run with TORCH_LOGS="+dynamic".
  - You marked batch as dynamic but your code specialized it to be a constant (1).
Suggested fixes:
  batch = 1

The error above occurred when calling torch.export.export."""
COMMENT = ('# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),); '
           'dynamic={"ids": {0: "batch", 1: "seq"}}')


@pytest.mark.parametrize("text, dim", [
    ("seq", DimText("seq")),
    ("seq<=512", DimText("seq", None, 512)),
    (" 2 <= seq <= 512 ", DimText("seq", 2, 512)),
    ("seq>=4", DimText("seq", 4, None)),
])
def test_dim_texts(text: str, dim: DimText) -> None:
    assert parse_dim_text(text) == dim
    assert parse_dim_text(dim.text()) == dim  # written back the way it reads


@pytest.mark.parametrize("text", ["batch size", "seq<", "seq<=x", "8<=seq<=4", "", "2*seq"])
def test_what_is_not_a_dim_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"seq<=512|lower bound"):
        parse_dim_text(text)


def test_suggested_fixes_of_a_bound_a_constant_and_two_equal_dims() -> None:
    assert suggested_fixes(BERT) == [DimFix("bounds", "seq", high=512)]
    assert suggested_fixes(LLAMA) == [DimFix("static", "batch", value=1)]
    block = ("Suggested fixes:\n  batch = None  # 1\n  seq = Dim('seq', min=3, max=64)\n"
             "  other = seq\n  half = 2*_half\n\nnot a fix = 3")
    assert suggested_fixes(block) == [DimFix("static", "batch", value=1),
                                      DimFix("bounds", "seq", low=3, high=64),
                                      DimFix("same", "other", other="seq")]
    assert suggested_fixes("Constraints violated (seq)!") == []


def test_a_bound_goes_into_every_occurrence_of_its_dim() -> None:
    line = '# torch-mlir-lens: dynamic={"ids": {1: "seq"}, "mask": {1: \'seq\'}}'
    assert fix_dynamic_text(line, DimFix("bounds", "seq", high=512)) == (
        '# torch-mlir-lens: dynamic={"ids": {1: "seq<=512"}, "mask": {1: \'seq<=512\'}}')
    # Applying it again changes nothing more; another dim's fix finds nothing here.
    fixed = fix_dynamic_text(line, DimFix("bounds", "seq", low=2, high=512))
    assert fixed is not None and fixed.count('2<=seq<=512') == 2
    assert fix_dynamic_text(line, DimFix("bounds", "batch", high=8)) is None


def test_a_constant_dim_leaves_the_comment() -> None:
    assert fix_dynamic_text(COMMENT, DimFix("static", "batch", value=1)) == (
        '# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),); '
        'dynamic={"ids": {1: "seq"}}')
    assert fix_dynamic_text(COMMENT, DimFix("static", "seq", value=8)) == (
        '# torch-mlir-lens: inputs=(torch.randint(0, 96, (1, 8)),); '
        'dynamic={"ids": {0: "batch"}}')
    assert fix_dynamic_text(COMMENT, DimFix("same", "seq", other="batch")) == (
        COMMENT.replace('1: "seq"', '1: "batch"'))


def test_a_size_1_example_becomes_size_2_where_its_shape_is_written() -> None:
    assert fix_example_size(COMMENT, (1, 8), 0) == COMMENT.replace("(1, 8)", "(2, 8)")
    # Calls with sizes as arguments, several inputs of that shape; other shapes untouched.
    line = "# torch-mlir-lens: inputs=(torch.randn(1, 8), torch.ones((1, 8)), torch.randn(1, 4))"
    assert fix_example_size(line, (1, 8), 0) == (
        "# torch-mlir-lens: inputs=(torch.randn(2, 8), torch.ones((2, 8)), torch.randn(1, 4))")
    assert fix_example_size(line, (3, 3), 0) is None
    assert fix_example_size("# torch-mlir-lens: dynamic={}", (1, 8), 0) is None


def test_the_size_1_message_reads_back() -> None:
    example = TooSmallExample("batch", "ids", 0, 1, (1, 8))
    message = "torch.export failed: " + too_small_message(example)
    assert "torch.export specializes sizes 0 and 1" in message
    assert parse_too_small(message) == example
    assert parse_too_small(BERT) is None


def test_berts_quick_fix_writes_its_bound_into_the_comment() -> None:
    """The editor's quick fix (lsp/features/dynamic_fixes.py) on BERT's error, as the worker
    words it (tests/test_hf_dynamic.py checks that wording on the zoo's BERT)."""
    from lsprotocol import types

    from torch_mlir_lens.discovery import find_modules
    from torch_mlir_lens.lsp.features.dynamic_fixes import export_error_fixes

    text = ("import torch\nfrom torch import nn\n\n\n"
            "# torch-mlir-lens: inputs=(torch.randint(0, 30522, (2, 128)),)\n"
            '# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq"}}\n'
            "class Encoder(nn.Module):\n    def forward(self, ids):\n        return ids\n")
    (info,) = find_modules(text, "/w/encoder.py")
    at = types.Range(start=types.Position(line=5, character=0),
                     end=types.Position(line=5, character=60))
    diag = types.Diagnostic(range=at, message=BERT, code="export-error", source="torch-mlir")
    (action,) = export_error_fixes("file:///w/encoder.py", text.splitlines(), info, diag)
    assert action.is_preferred and action.title.endswith('"seq" → "seq<=512"')
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes["file:///w/encoder.py"]
    assert edit.range.start.line == 5 and edit.new_text == (
        '# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq<=512"}}')
