"""Notebooks as one program (torch-free): cells in order, IPython syntax blanked line for line,
the line maps both ways, what a module is lowered from, and locations as CELL:LINE."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from torch_mlir_lens import discovery
from torch_mlir_lens.source import notebook_program
from torch_mlir_lens.source.notebook_program import Cell, NotebookError, read_cells, synthesize

FIXTURE = Path(__file__).parents[1] / "notebooks" / "spread_model.ipynb"


def test_ipython_syntax_is_blanked_line_for_line() -> None:
    cell = Cell(
        "import torch\n"
        "%matplotlib inline\n"
        "!pip install nothing\n"
        "files = !ls\n"
        "torch.randn?\n"
        "??torch\n"
        "text = '''\n"
        "%not a magic inside a string\n"
        "'''\n"
        "if True:\n"
        "    %time y = 1\n"
        "x = (1 +\n"
        "     2)  # why?\n"
    )
    program = synthesize([cell])
    lines = program.text.splitlines()
    assert len(lines) == 13  # one program line per cell line
    assert lines[0] == "import torch"
    assert lines[1:6] == ["", "", "", "", ""]
    assert lines[7] == "%not a magic inside a string"  # a string's content is kept
    assert lines[10] == "    pass"  # a block keeps a body
    assert lines[12] == "     2)  # why?"
    ast.parse(program.text)
    assert program.problems == []


def test_cell_magics_and_cells_that_do_not_parse() -> None:
    program = synthesize([
        Cell("%%bash\necho hi\nls -l"),          # not Python: all blank
        Cell("%%time\ndef f():\n    return 1"),  # Python body: only the magic line goes
        Cell("def broken(:\n    pass"),          # a typo: left out, reported
        Cell("await asyncio.sleep(1)\nz = 2"),   # top-level await: that statement goes
        Cell("# a note", kind="markdown"),
        Cell("y = 3"),
    ])
    text = program.text.splitlines()
    assert text[:3] == ["", "", ""]
    assert text[3:6] == ["", "def f():", "    return 1"]
    assert text[6:8] == ["", ""]
    assert text[8:10] == ["", "z = 2"]
    assert text[10] == "y = 3"
    [problem] = program.problems
    assert (problem.index, problem.line) == (2, 1)
    # The markdown cell (index 4) has no lines; the last code cell is cell 6.
    assert program.label(11) == "6:1"
    assert program.label(4) == "2:1"


def test_line_maps_both_ways() -> None:
    program = synthesize([Cell("a = 1\nb = 2", uri="cell-a"), Cell("text", kind="markdown"),
                          Cell("c = 3\n\nd = 4\n", uri="cell-c")])
    span, line = program.to_cell(4) or (None, None)
    assert span is not None and (span.uri, span.number, line) == ("cell-c", 3, 2)
    assert program.to_program(span, 3) == 5
    assert program.span_of("cell-a") is not None
    assert program.to_cell(99) is None


def test_fixture_program_and_what_each_module_runs() -> None:
    program = notebook_program.read_program(str(FIXTURE))
    modules = discovery.find_modules(program.text, str(FIXTURE))
    names = {m.name: m for m in modules}
    assert set(names) >= {"Block", "Model", "Pair"}
    assert program.label(names["Block"].line) == "3:1"
    assert program.label(names["Model"].line) == "5:2"

    model_text = notebook_program.module_text(program, modules, "Model")
    assert "class Model" in model_text and "class Block" in model_text
    assert "training-ran" not in model_text and "optim" not in model_text  # training cell
    assert "def example_inputs" in model_text  # the convention from a later cell is kept
    assert len(model_text.splitlines()) == len(program.text.splitlines())
    # Block's inputs are derived from Model's forward pass: Model's cell comes along.
    assert "class Model" in notebook_program.module_text(program, modules, "Block")
    # An unknown name runs nothing at all.
    assert notebook_program.module_text(program, modules, "Nope").strip() == ""


def test_relocating_results_and_messages() -> None:
    program = notebook_program.read_program(str(FIXTURE))
    path = "/x/spread_model.ipynb"
    value = {"map": [{"file": path, "line": 22}, {"file": "/x/other.py", "line": 22}],
             "modules": [{"line": 24, "error_line": 40}],
             "message": "loading spread_model.ipynb failed at spread_model.ipynb:14: NameError"}
    out = notebook_program.relocate_json(value, path, program)
    assert isinstance(out, dict)
    assert out["map"] == [{"file": path, "line": 10, "cell": 3},
                          {"file": "/x/other.py", "line": 22}]
    assert out["modules"] == [{"line": 2, "cell": 5, "error_line": 3, "error_cell": 7}]
    assert out["message"].endswith("spread_model.ipynb:3:2: NameError")
    assert notebook_program.location("nb.ipynb", program, 24) == "nb.ipynb:5:2"


@pytest.mark.parametrize(("text", "needle"), [
    ('{"cells": [', "invalid JSON"),
    ('{"worksheets": []}', "nbformat 3"),
    ('{"cells": [], "metadata": {"kernelspec": {"language": "julia"}}}', "not a Python"),
    ('[1, 2]', "no 'cells'"),
])
def test_bad_notebooks_say_why(text: str, needle: str) -> None:
    with pytest.raises(NotebookError, match=needle):
        read_cells(text)


def test_list_and_string_sources() -> None:
    cells = read_cells(json.dumps({"cells": [
        {"cell_type": "code", "source": ["a = 1\n", "b = 2"]},
        {"cell_type": "raw", "source": "not python"},
        {"cell_type": "code", "source": "c = 3"},
    ]}))
    assert synthesize(cells).text == "a = 1\nb = 2\nc = 3\n"
