"""The frame table and its questions (protocol/frames.py): pure data, no torch."""

from __future__ import annotations

import json

from torch_mlir_lens.protocol.frames import (
    FrameTable,
    SourceFrame,
    entry_frame,
    library_breakdown,
    library_part,
    short_path,
)

USER = "/ws/wrapper.py"
MODELING = "/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py"
UTILS = "/venv/lib/python3.11/site-packages/transformers/pytorch_utils.py"


def lib(file: str, line: int) -> SourceFrame:
    return SourceFrame(file, line, True)


def user(line: int) -> SourceFrame:
    return SourceFrame(USER, line, False)


def test_chains_are_stored_once_and_round_trip() -> None:
    table = FrameTable()
    chain = [lib(MODELING, 254), lib(MODELING, 300), user(12)]
    for ir_line in (3, 4, 5):
        table.add(ir_line, chain)
    table.add(5, chain)  # a repeat is not a second row
    table.add(6, [lib(UTILS, 119), lib(MODELING, 164), user(12)])
    assert len(table.chains) == 2 and len(table.rows) == 4
    assert table.chains_of(4) == [chain] and table.chains_of(40) == []
    data = json.loads(json.dumps(table.to_json()))
    assert data["library"] == [0, 2]  # modeling_llama.py and pytorch_utils.py, not wrapper.py
    back = FrameTable.from_json(data)
    assert back.to_json() == data and back.chains_of(6) == table.chains_of(6)
    assert not FrameTable.from_json(None) and not FrameTable()


def test_a_deep_model_stays_small() -> None:
    # 20 layers run the same library lines: 20 × 60 ops, chains as in a real decoder stack.
    table = FrameTable()
    ir_line = 0
    for _layer in range(20):
        for op in range(60):
            ir_line += 1
            table.add(ir_line, [lib(UTILS, 119), lib(MODELING, 250 + op % 12),
                                lib(MODELING, 295), lib(MODELING, 400), user(12)])
    assert len(table.chains) == 12
    size = len(json.dumps(table.to_json()))
    assert size < 20 * 60 * 16  # about one [ir_line, chain] pair per op


def test_library_part_is_between_the_user_line_and_the_next_user_frame() -> None:
    chain = [lib(UTILS, 119), lib(MODELING, 164), user(30), lib(MODELING, 400), user(12)]
    assert library_part(chain, USER, 12) == [lib(MODELING, 400)]
    assert library_part(chain, USER, 30) == [lib(UTILS, 119), lib(MODELING, 164)]
    assert library_part(chain, USER, 99) is None
    assert library_part([user(5), user(12)], USER, 12) == []


def test_the_named_line_is_in_the_file_the_user_called_into() -> None:
    part = [lib(UTILS, 119), lib(MODELING, 164), lib(MODELING, 311), lib(MODELING, 400)]
    assert entry_frame(part) == lib(MODELING, 164)


def test_breakdown_counts_ops_per_library_line_heaviest_first() -> None:
    table = FrameTable()
    for n in range(1, 6):
        table.add(n, [lib(MODELING, 254), lib(MODELING, 400), user(12)])
    for n in range(6, 8):
        table.add(n, [lib(UTILS, 119), lib(MODELING, 164), lib(MODELING, 400), user(12)])
    table.add(8, [lib(MODELING, 65), lib(MODELING, 400), user(13)])
    rows = library_breakdown(table, USER, 12)
    assert [(r.frame.line, len(r.ir_lines)) for r in rows] == [(254, 5), (164, 2)]
    only = library_breakdown(table, USER, 12, ir_lines=[1, 6])
    assert [(r.frame.line, r.ir_lines) for r in only] == [(164, [6]), (254, [1])]
    assert library_breakdown(table, USER, 14) == []


def test_short_path() -> None:
    assert short_path(MODELING) == "transformers/models/llama/modeling_llama.py"
    assert short_path("/somewhere/lib/model.py") == "model.py"
