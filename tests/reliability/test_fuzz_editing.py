"""Hypothesis-driven editing sessions against the real server.

Random sequences of didOpen, didChange (insertions, deletions, half-typed code, junk, emptied
files), didSave, hover / code lens / module list at random positions (out-of-range ones too)
and didClose. After every step: the server is alive, never logged a traceback, every response
is valid LSP inside the current document, every diagnostic lies inside the text it was
published for; every few steps: no process appeared that should not be there.

Default: >= 1,000 steps in an untrusted session (static features, fast) plus a smaller trusted
run with diagnostics on every keystroke (real lowerings). More: TORCH_MLIR_LENS_FUZZ_STEPS=N.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from lsprotocol import types

from . import lspcheck, procs
from .checks import assert_healthy, cleanup, finish
from .session import LensSession

STEPS = int(os.environ.get("TORCH_MLIR_LENS_FUZZ_STEPS", "1000"))
TRUSTED_STEPS = max(60, STEPS // 15)
REPO = Path(__file__).resolve().parents[2]
PROCESS_CHECK_EVERY = 40

# What people type half-way: fragments that leave the file unparsable most of the time.
SNIPPETS = [
    "def ", "class ", "class Broken(nn.Module):\n    def forward(self, x):\n        return x",
    "(", ")", "[", "]", ":", "\n", "    ", "\t", "torch.", "self.fc(", "nn.Linear(8, ",
    "# torch-mlir-lens: inputs=(torch.randn(2, 8),)\n", "# torch-mlir-lens: inputs=(",
    "# torch-mlir-lens: init=(", "import ", "from torch import nn\n", '"""', "'", "\\",
    "lambda x: ", "@torch.no_grad()\n", "if __name__ == '__main__':\n    main()\n",
    "return ", "yield ", "async def forward(self, x):\n", "😀", "汉字", "é", "\u200b",
]
# Never the line breaks LSP does not count as such (\r, \v, \f, \x1c-\x1e, \x85, \u2028/9):
# client and server would disagree about line numbers, and that is not what is tested here.
JUNK = st.text(
    alphabet=st.characters(
        exclude_categories=("Cs",),
        exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=60,
)
INSERTS = st.one_of(st.sampled_from(SNIPPETS), JUNK)


def sources() -> list[Path]:
    """The examples (as users have them) plus the healthy reliability models."""
    files = sorted((REPO / "examples").glob("**/*.py"))
    return [*files, Path(__file__).parent / "models" / "healthy.py"]


class EditingMachine(RuleBasedStateMachine):
    """One editing session on a shared server; each example opens its own documents."""

    session: ClassVar[LensSession]
    workspace: ClassVar[Path]
    baseline: ClassVar[int]  # the server's descendant count when idle
    steps: ClassVar[int] = 0
    names: ClassVar[Iterator[int]] = itertools.count()
    checked: ClassVar[int] = 0  # published diagnostics already validated
    seen_tracebacks: ClassVar[int] = 0
    hovers_with_ir: ClassVar[int] = 0  # proof that the trusted run really lowered
    seen_messages: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        self.open_uris: list[str] = []

    # -- rules ----------------------------------------------------------------------------

    @initialize(source=st.sampled_from(sources()))
    def first_document(self, source: Path) -> None:
        self._open(source)

    @precondition(lambda self: len(self.open_uris) < 3)
    @rule(source=st.sampled_from(sources()))
    def open_document(self, source: Path) -> None:
        self._open(source)

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data(), new=INSERTS)
    def insert(self, data: st.DataObject, new: str) -> None:
        uri, text = self._pick(data)
        at = data.draw(st.integers(0, len(text)), label="at")
        pos = lspcheck.position_of(text, at)
        self._edit(uri, text[:at] + new + text[at:], types.Range(pos, pos), new)

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        uri, text = self._pick(data)
        a = data.draw(st.integers(0, len(text)), label="from")
        b = data.draw(st.integers(a, min(len(text), a + 200)), label="to")
        rng = types.Range(lspcheck.position_of(text, a), lspcheck.position_of(text, b))
        self._edit(uri, text[:a] + text[b:], rng, "")

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data(), how=st.sampled_from(["empty", "junk", "truncate", "blank lines"]))
    def replace_all(self, data: st.DataObject, how: str) -> None:
        uri, text = self._pick(data)
        if how == "empty":
            new = ""
        elif how == "junk":
            new = data.draw(JUNK, label="junk")
        elif how == "truncate":
            new = text[: data.draw(st.integers(0, len(text)), label="cut")]
        else:
            new = "\n" * 300
        self.session.change(uri, new)
        self._step()

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def save(self, data: st.DataObject) -> None:
        uri, _ = self._pick(data)
        self.session.save(uri)
        self._step()

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def hover(self, data: st.DataObject) -> None:
        uri, text = self._pick(data)
        lines = text.split("\n")
        line = data.draw(st.integers(0, len(lines) + 5), label="line")  # some out of range
        width = lspcheck.utf16_len(lines[line]) if line < len(lines) else 0
        char = data.draw(st.integers(0, width + 10), label="char")
        hover = self.session.hover(uri, line, char, timeout=self.request_timeout)
        self._expect(lspcheck.hover_problem(hover, text), "hover", uri, line, char)
        EditingMachine.hovers_with_ir += hover is not None
        self._step()

    @precondition(lambda self: len(self.open_uris) < 3)
    @rule(source=st.sampled_from(sources()), data=st.data())
    def open_and_hover(self, source: Path, data: st.DataObject) -> None:
        """Open a document and hover its forward before any edit: a lowering that can work."""
        self._open(source)
        self._hover_forward(self.open_uris[-1], data)

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def hover_in_forward(self, data: st.DataObject) -> None:
        """Hover a line inside some module's forward: in a trusted session this lowers."""
        uri, _ = self._pick(data)
        self._hover_forward(uri, data)

    def _hover_forward(self, uri: str, data: st.DataObject) -> None:
        text = self.session.texts[uri]
        modules = self.session.modules(uri, timeout=self.request_timeout)["modules"]
        ranges = [m["forwardRange"] for m in modules if m.get("forwardRange")]
        if not ranges:
            return
        rng = data.draw(st.sampled_from(ranges), label="forward")
        line = data.draw(st.integers(rng["start"]["line"], rng["end"]["line"]), label="line")
        hover = self.session.hover(uri, line, 8, timeout=self.request_timeout)
        self._expect(lspcheck.hover_problem(hover, text), "hover", uri, line, 8)
        EditingMachine.hovers_with_ir += hover is not None
        self._step()

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def code_lens(self, data: st.DataObject) -> None:
        uri, text = self._pick(data)
        lenses = self.session.code_lens(uri, timeout=self.request_timeout)
        self._expect(lspcheck.lens_problem(lenses, text), "codeLens", uri)
        self._step()

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def module_list(self, data: st.DataObject) -> None:
        uri, text = self._pick(data)
        result = self.session.modules(uri, timeout=self.request_timeout)
        self._expect(lspcheck.modules_problem(result, text), "modules", uri)
        self._step()

    @precondition(lambda self: self.open_uris)
    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        uri, _ = self._pick(data)
        self.open_uris.remove(uri)
        self.session.close_doc(uri)
        self._step()

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def server_is_healthy(self) -> None:
        """Alive, protocol intact, and nothing new went wrong since the last step. Only new
        tracebacks and messages count: the server outlives examples, and a replayed example
        must fail for its own reasons, not for an old one."""
        session = self.session
        assert session.alive(), f"server died\n{session.health_report()}"
        assert session.client.error is None, f"protocol broken\n{session.health_report()}"
        tracebacks = session.client.stderr_log.tracebacks[EditingMachine.seen_tracebacks :]
        EditingMachine.seen_tracebacks += len(tracebacks)
        assert not tracebacks, f"traceback on server stderr:\n{tracebacks[0]}"
        shown = session.client.messages[EditingMachine.seen_messages :]
        EditingMachine.seen_messages += len(shown)
        errors = [m.message for m in shown if m.type == types.MessageType.Error]
        assert not errors, f"error shown to the user: {errors[0][:500]}"

    @invariant()
    def diagnostics_inside_their_text(self) -> None:
        published = self.session.published
        for pub in published[EditingMachine.checked :]:
            problem = self._diagnostics_problem(pub.uri, pub.version, pub.diagnostics,
                                                pub.text_then)
            assert problem is None, problem
        EditingMachine.checked = len(published)

    @invariant()
    def no_process_leaks(self) -> None:
        if EditingMachine.steps % PROCESS_CHECK_EVERY:
            return
        procs.wait_until(
            lambda: len(self.session.sample_processes()) <= EditingMachine.baseline,
            30, f"at most {EditingMachine.baseline} processes under the server",
        )

    def teardown(self) -> None:
        for uri in self.open_uris:
            self.session.close_doc(uri)
        self.session.barrier(self.request_timeout)

    # -- helpers --------------------------------------------------------------------------

    request_timeout: ClassVar[float] = 30

    def _open(self, source: Path) -> None:
        path = self.workspace / f"fuzz_{next(self.names)}_{source.name}"
        path.write_text(source.read_text())
        self.open_uris.append(self.session.open(path))
        self._step()

    def _pick(self, data: st.DataObject) -> tuple[str, str]:
        uri = data.draw(st.sampled_from(self.open_uris), label="doc")
        return uri, self.session.texts[uri]

    def _edit(self, uri: str, new_text: str, rng: types.Range, new: str) -> None:
        self.session.change(uri, new_text, rng, new)
        self._step()

    def _step(self) -> None:
        EditingMachine.steps += 1

    def _expect(self, problem: str | None, what: str, *where: Any) -> None:
        assert problem is None, f"{what} at {where}: {problem}"

    def _diagnostics_problem(
        self, uri: str, version: int | None, diags: list[types.Diagnostic], text: str | None
    ) -> str | None:
        """Diagnostics must fit the text they were published for. Without a version, a
        notification may race a later edit: any of the last few versions is accepted."""
        if version is not None:
            candidates = [self.session.history.get((uri, version))]
        else:
            latest = self.session.versions.get(uri, 1)
            candidates = [text] + [self.session.history.get((uri, v))
                                   for v in range(latest, max(0, latest - 5), -1)]
        texts = [t for t in candidates if t is not None]
        if not texts:
            return None  # a document this machine never saw (not ours to judge)
        for d in diags:
            problems = [lspcheck.range_problem(d.range, t) for t in texts]
            if all(problems):
                return f"diagnostic {d.code!r} {d.message[:80]!r} on {uri} v{version}: " + str(
                    problems[0]
                )
        return None


def run_machine(
    session: LensSession, workspace: Path, steps: int, per_example: int, workers: int
) -> int:
    """Run the machine on `session` until at least `steps` steps were taken; return the count.

    `workers`: how many processes the server may have under it (untrusted: none at all).
    """
    EditingMachine.session = session
    EditingMachine.workspace = workspace
    EditingMachine.steps = 0
    EditingMachine.checked = len(session.published)
    EditingMachine.hovers_with_ir = 0
    EditingMachine.seen_tracebacks = len(session.client.stderr_log.tracebacks)
    EditingMachine.seen_messages = len(session.client.messages)
    EditingMachine.baseline = workers
    shrink = os.environ.get("TORCH_MLIR_LENS_FUZZ_SHRINK") == "1"
    phases = (Phase.explicit, Phase.generate, Phase.shrink) if shrink else (
        Phase.explicit, Phase.generate)
    for _round in range(10):
        left = steps - EditingMachine.steps
        if left <= 0:
            break
        run_state_machine_as_test(
            EditingMachine,
            settings=settings(
                max_examples=max(2, left // (per_example // 2)),
                stateful_step_count=per_example,
                deadline=None,
                database=None,
                phases=phases,
                suppress_health_check=list(HealthCheck),
                print_blob=True,
            ),
        )
    return EditingMachine.steps


@pytest.fixture
def fuzz_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "fuzz"
    ws.mkdir()
    return ws.resolve()


def test_fuzzed_editing_untrusted(fuzz_ws: Path, server_tmp: Path) -> None:
    """The bulk: static features only (no user code), >= STEPS steps."""
    session = LensSession(fuzz_ws, trusted=False, tmpdir=server_tmp)
    try:
        session.start()
        taken = run_machine(session, fuzz_ws, STEPS, per_example=40, workers=0)
        assert taken >= STEPS
        assert_healthy(session)
        finish(session)
    finally:
        cleanup(session, marker=str(fuzz_ws))
    print(f"untrusted fuzz: {taken} steps")


def test_fuzzed_editing_trusted(fuzz_ws: Path, server_tmp: Path) -> None:
    """Fewer steps, but with real lowerings: diagnostics on every keystroke, hovers that lower."""
    session = LensSession(
        fuzz_ws, trusted=True, tmpdir=server_tmp,
        settings={"diagnostics": "onType", "timeoutSeconds": 20, "memoryLimitMb": 3000},
    )
    try:
        session.start()
        EditingMachine.request_timeout = 90
        taken = run_machine(session, fuzz_ws, TRUSTED_STEPS, per_example=20, workers=1)
        assert taken >= TRUSTED_STEPS
        assert_healthy(session)
        assert not procs.marked(str(fuzz_ws))
        diagnosed = sum(bool(p.diagnostics) for p in session.published)
        finish(session)
    finally:
        EditingMachine.request_timeout = 30
        cleanup(session, marker=str(fuzz_ws))
    print(f"trusted fuzz: {taken} steps, {EditingMachine.hovers_with_ir} hovers with IR, "
          f"{diagnosed} non-empty diagnostics notifications")
