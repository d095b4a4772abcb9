"""The bound on worker output forwarded to the client's log."""

from __future__ import annotations

from torch_mlir_lens.lsp.checks.output_budget import OutputBudget


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_forwards_within_budget_then_one_notice_then_a_summary() -> None:
    lines: list[str] = []
    clock = FakeClock()
    budget = OutputBudget(lines.append, budget=100, window=10, clock=clock)
    budget.feed("stdout", "hello\n")
    assert lines == ["[worker stdout] hello"]
    budget.feed("stdout", ("x" * 30 + "\n") * 10)  # 310 bytes: 3 lines fit (6 + 93 ≤ 100)
    assert lines[1:4] == ["[worker stdout] " + "x" * 30] * 3
    assert len(lines) == 5 and "not forwarded" in lines[4]
    budget.feed("stderr", "more\n" * 1000)
    assert len(lines) == 5  # nothing more within the window
    clock.now = 11
    budget.feed("stderr", "again\n")
    assert "bytes of output were not forwarded" in lines[5]
    assert lines[6] == "[worker stderr] again"


def test_a_flood_stays_bounded() -> None:
    lines: list[str] = []
    budget = OutputBudget(lines.append, budget=64 * 1024, window=10, clock=FakeClock())
    for _ in range(1000):
        budget.feed("stdout", "y" * 1000 + "\n")
    assert sum(len(line) for line in lines) < 2 * 64 * 1024
