"""Unit tests of how published diagnostics follow edits (no server needed)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.lsp.document import DiagRecord, Document, map_lines

TEXT = "a = 1\nb = 2\nc = 3\nd = 4\n"


def record(line: int) -> DiagRecord:
    finding = Finding("tosa/aten.x", "unsupported-op", "m", "/t.py", line + 1, "/t.py", "M",
                      1, target="tosa", op="aten.x")
    return DiagRecord(finding, types.Range(start=types.Position(line=line, character=0),
                                           end=types.Position(line=line, character=5)))


def partial(
    sl: int, sc: int, el: int, ec: int, text: str
) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=sl, character=sc),
                          end=types.Position(line=el, character=ec)),
        text=text,
    )


def lines_after(doc: Document) -> list[int]:
    return sorted(r.range.start.line for r in doc.diagnostic_records())


def doc_with(lines: list[int]) -> Document:
    doc = Document(uri="file:///t.py", text=TEXT, version=1)
    assert doc.record_diagnostics(doc.stamp(), "M", [record(n) for n in lines])
    return doc


def test_whole_text_change_moves_and_drops() -> None:
    doc = doc_with([0, 1, 3])
    doc.update("# new\na = 1\nb = 20\nc = 3\nd = 4\n", 2)  # insert above, edit line b
    assert lines_after(doc) == [1, 4]


def test_incremental_changes_move_and_drop() -> None:
    doc = doc_with([0, 2, 3])
    changes = [
        partial(0, 0, 0, 0, "x = 0\ny = 0\n"),  # two whole lines above everything
        partial(4, 4, 4, 5, "30"),  # `c = 3` (now line 4) → `c = 30`
    ]
    doc.update("x = 0\ny = 0\na = 1\nb = 2\nc = 30\nd = 4\n", 2, changes)
    assert lines_after(doc) == [2, 5]


def test_newline_typed_at_end_of_line() -> None:
    doc = doc_with([1, 2])
    doc.update("a = 1\nb = 2\n\nc = 3\nd = 4\n", 2, [partial(1, 5, 1, 5, "\n")])
    assert lines_after(doc) == [1, 3]


def test_results_go_with_any_change() -> None:
    from torch_mlir_lens.protocol.results import LowerResult

    doc = doc_with([])  # no module named M in the text: any change drops its results
    doc.record_results(doc.stamp(), "M", [LowerResult(module="M", target="linalg", ok=True)])
    doc.update(TEXT + "e = 5\n", 2)
    assert doc.verdicts("M") == {} and doc.result("M", "linalg") is None
    assert doc.generation == 1


def test_huge_repetitive_text_maps_every_line() -> None:
    # 300,000 equal lines: a line-by-line diff must still pair them (speed: bench figure 3).
    old = ["x = 1  # filler"] * 300_000 + ["class T: pass"]
    new = ["import os", *old]
    mapped = map_lines(old, new)
    assert mapped(len(old) - 1) == len(new) - 1
    assert mapped(0) == 1
    assert mapped(150_000) == 150_001



# -- property: lines an edit does not touch keep following their text -------------------------

_LINES = st.lists(st.sampled_from(["a", "b", "c", "x = 1", ""]), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(old=_LINES, data=st.data())
def test_untouched_lines_map_to_their_new_place(old: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(old)))
    end = data.draw(st.integers(start, len(old)))  # old[start:end] is replaced ...
    inserted = data.draw(_LINES)  # ... by these lines
    new = old[:start] + inserted + old[end:]
    delta = len(inserted) - (end - start)
    change = partial(start, 0, end, 0, "".join(s + "\n" for s in inserted))
    ranged, diffed = map_lines(old, new, [change]), map_lines(old, new)
    for line in range(len(old)):
        for mapper in (ranged, diffed):
            got = mapper(line)
            assert got is None or new[got] == old[line]  # never onto another text
            if line < start:
                assert got == line  # above the edit: in place
        if line >= end:
            assert ranged(line) == line + delta  # below the edit: moved by its size


TWO_MODULES = (
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "class A(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x + 1\n"
    "\n"
    "class B(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x * 2\n"
)


def test_a_burst_of_edits_keeps_the_untouched_modules_results_and_compares_once(
        monkeypatch) -> None:
    from torch_mlir_lens.discovery import fingerprint
    from torch_mlir_lens.protocol.results import LowerResult

    calls: list[str] = []
    real = fingerprint.fingerprint

    def counting(text: str, module: str, *args: object, **kwargs: object) -> str:
        calls.append(module)
        return real(text, module, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fingerprint, "fingerprint", counting)
    doc = Document(uri="file:///m.py", text=TWO_MODULES, version=1, path="/m.py")
    for name in ("A", "B"):
        doc.record_results(doc.stamp(), name,
                           [LowerResult(module=name, target="linalg", ok=True)])
    calls.clear()
    for k in range(20):  # typing in B: twenty keystrokes, no fingerprint computed yet
        doc.update(TWO_MODULES.replace("x * 2", f"x * {k + 3}"), 2 + k)
    assert calls == []
    # Read: compared once, B's result (and verdict) dropped.
    assert doc.result("B", "linalg") is None and doc.verdicts("B") == {}
    assert doc.result("A", "linalg") is not None and "linalg" in doc.verdicts("A")
    assert sorted(calls) == ["A", "A", "B", "B"]
    assert doc.result("A", "linalg") is not None and len(calls) == 4  # settled: no more work


def test_a_module_that_had_an_error_loses_its_results_after_an_edit() -> None:
    from torch_mlir_lens.protocol.results import LensError, LowerResult

    doc = Document(uri="file:///m.py", text=TWO_MODULES, version=1, path="/m.py")
    stamp = doc.stamp()
    doc.record_results(stamp, "A", [LowerResult(module="A", target="linalg", ok=True)])
    doc.record_failure(stamp, "A", LensError("load-error", "boom"), ["linalg"])
    doc.update(TWO_MODULES + "# comment\n", 2)
    assert doc.error("A") is None and doc.result("A", "linalg") is None


def test_findings_of_an_older_text_or_a_closed_document_are_not_recorded() -> None:
    from torch_mlir_lens.protocol.results import LowerResult

    doc = Document(uri="file:///m.py", text=TWO_MODULES, version=1, path="/m.py")
    stamp = doc.stamp()
    doc.update(TWO_MODULES + "# comment\n", 2)
    result = LowerResult(module="A", target="linalg", ok=True)
    assert not doc.record_results(stamp, "A", [result])
    assert not doc.record_diagnostics(stamp, "A", [record(0)])
    assert doc.result("A", "linalg") is None and doc.diagnostic_records() == []
    fresh = doc.stamp()
    doc.close()
    assert not doc.record_results(fresh, "A", [result])
