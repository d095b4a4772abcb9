"""Diagnostics over a real server: every unsupported op per backend at its line, export
failures, verdict lenses and hover verdicts, stale diagnostics following edits, settings
changes (mode and backends) taking effect without a restart.

Expected ops are what torch-mlir 20261001 reports for examples/unsupported_ops.py (see its
docstring); ops are matched by name prefix (`aten.fmod` matches `aten.fmod.Scalar`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from torch_mlir_lens.findings import Finding, merge

from .helpers import (
    CONFIG,
    change_doc,
    code_lenses,
    diagnostics,
    execute,
    hover,
    init_params,
    line_of,
    open_doc,
    server_info,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALL = ("linalg", "tosa", "stablehlo")
TITLES = {"linalg": "Linalg", "tosa": "TOSA", "stablehlo": "StableHLO"}
# source line text → [(op prefix, backends)] (examples/unsupported_ops.py)
EXPECTED = {
    "torch.erfinv(": [("aten.erfinv", ALL)],
    "torch.fmod(": [("aten.fmod", ALL)],
    # TOSA has no roll: it decomposes into slice + cat, which TOSA cannot lower either; one
    # diagnostic names the call (its code is the first rejected op).
    "torch.roll(": [("aten.slice", ("tosa",))],
    "torch.atan2(": [("aten.atan2", ("tosa",))],
    "angle.scatter_add(": [("aten.scatter_add", ("tosa",))],
    "F.interpolate(": [("aten.__interpolate", ("tosa", "stablehlo"))],
    "torch.kthvalue(": [("aten.kthvalue", ("tosa", "stablehlo"))],
    "torch.diag(gram)": [("aten.diag", ("stablehlo",))],
    "torch.lgamma(": [("aten.lgamma", ALL)],
    "torch.hypot(": [("aten.hypot", ALL)],
}


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True))
    yield
    await lsp_client.shutdown_session()


def op_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics(client, uri) if str(d.code).startswith("aten.")]


def expected_for(text: str, backends: tuple[str, ...]) -> set[tuple[int, str, tuple[str, ...]]]:
    """{(0-based line, op prefix, backends)} of the expected diagnostics in `text`."""
    lines = text.splitlines()
    out = set()
    for needle, ops in EXPECTED.items():
        numbers = [i for i, s in enumerate(lines) if needle in s]
        assert len(numbers) <= 1, needle
        for op, where in ops:
            kept = tuple(b for b in where if b in backends)
            if numbers and kept:
                out.add((numbers[0], op, kept))
    return out


def actual(diags: list[types.Diagnostic]) -> set[tuple[int, str, tuple[str, ...]]]:
    """The same shape from published diagnostics (backends read from the message)."""
    out = set()
    for d in diags:
        code = str(d.code)
        prefix = next((op for ops in EXPECTED.values() for op, _ in ops if code.startswith(op)),
                      code)
        named = tuple(b for b in ALL if TITLES[b] in d.message.split(" cannot be lowered to ")[1])
        out.add((d.range.start.line, prefix, named))
    return out


def checked(client: LanguageClient, uri: str, text: str, backends: tuple[str, ...]):
    return lambda: actual(op_diagnostics(client, uri)) == expected_for(text, backends)


async def test_every_unsupported_op_at_its_line(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "unsupported_ops.py"
    text = path.read_text()
    uri = open_doc(client, path)
    try:
        await wait_until(client, checked(client, uri, text, ALL))
    finally:
        print(actual(op_diagnostics(client, uri)) ^ expected_for(text, ALL))
    for d in op_diagnostics(client, uri):
        assert d.source == "torch-mlir" and d.severity == types.DiagnosticSeverity.Error
        line = text.splitlines()[d.range.start.line]
        assert line[d.range.start.character:d.range.end.character] == line.strip()
    # One diagnostic per op and line, naming all its backends.
    erfinv = [d for d in op_diagnostics(client, uri) if str(d.code) == "aten.erfinv"]
    assert len(erfinv) == 1
    assert erfinv[0].message == "`aten.erfinv` cannot be lowered to Linalg, TOSA, StableHLO"
    roll = [d for d in op_diagnostics(client, uri) if str(d.code) == "aten.slice.Tensor"]
    assert [d.message for d in roll] == [
        "`torch.roll` (decomposed to `aten.slice.Tensor`) cannot be lowered to TOSA"]


async def test_check_reports_the_editors_findings(client: LanguageClient,
                                                  workspace: Path) -> None:
    """One finding type, two renderings: `check` on the same file, in its own process with
    its own engine, reports each rejected op at the line the editor marks, and its findings
    said once across backends are the editor's words."""
    path = workspace / "unsupported_ops.py"
    shown = {(d.range.start.line + 1, str(d.code)): d.message
             for d in op_diagnostics(client, path.as_uri())}
    assert len(shown) >= len(EXPECTED)  # the first test waited for every one
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "torch_mlir_lens", "check", str(path),
        "--targets", ",".join(ALL), "--format", "json", "--timeout", "240",
        cwd=workspace, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=600)
    assert proc.returncode == 1, err.decode()[-2000:]  # findings: the gate fails
    report = json.loads(out)
    found = [Finding.from_json(f) for m in report["modules"] for f in m.get("findings", [])
             if f["kind"] == "unsupported-op"]
    groups: dict[tuple[int, tuple[object, ...]], list[Finding]] = {}
    for f in found:
        groups.setdefault((f.line or 0, merge.group_key(f)), []).append(f)
    reported = {}
    for (line, _key), group in groups.items():
        one = merge.merged(group)
        reported[(line, one.code)] = one.message
    assert reported == shown


async def test_verdict_lenses(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "unsupported_ops.py").as_uri()
    path = workspace / "unsupported_ops.py"
    lenses = await code_lenses(client, uri)
    by_line: dict[int, list[str]] = {}
    for lens in lenses:
        assert lens.command is not None
        by_line.setdefault(lens.range.start.line + 1, []).append(lens.command.title)
    assert "Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓" in by_line[line_of(path, "class ShiftedF")]
    assert "Linalg ✗ 2 ops · TOSA ✗ 2 ops · StableHLO ✗ 2 ops" in by_line[
        line_of(path, "class QuantileHead")]
    assert "Linalg ✓ · TOSA ✗ 2 ops · StableHLO ✗ 3 ops" in by_line[
        line_of(path, "class RobustUpsampler")]


async def test_hover_names_failing_backend(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "unsupported_ops.py"
    jobs = (await server_info(client))["engine"]["jobsRun"]
    result = await hover(client, path.as_uri(), line_of(path, "torch.atan2("))
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    text = result.contents.value
    assert "```mlir" in text and "linalg." in text
    assert ("linalg ✓ · tosa ✗ `aten.atan2` (TOSA has no `atan2` operation, and torch-mlir's "
            "TOSA conversion does not build it from others) · stablehlo ✓") in text
    assert (await server_info(client))["engine"]["jobsRun"] == jobs  # from the check's cache


async def test_export_failure_at_its_line(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "export_failure.py"
    uri = open_doc(client, path)
    found = await wait_until(
        client, lambda: [d for d in diagnostics(client, uri) if d.code == "export-error"]
    )
    assert len(found) == 1
    assert found[0].range.start.line == line_of(path, "if y.sum() > 0") - 1
    assert "torch.export failed" in found[0].message
    lenses = await code_lenses(client, uri)
    assert any(lens.command.title.startswith("✗ torch.export failed") for lens in lenses)


async def test_export_repro(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "unsupported_ops.py").as_uri()
    folder = workspace / "repro"  # inside the workspace: no dialog chose this folder
    answer = await execute(client, "torchMlirLens.exportRepro",
                           {"uri": uri, "module": "ShiftedFeatures", "target": "tosa",
                            "outputDir": str(folder)})
    mlir = Path(answer["mlirPath"])
    assert mlir.parent == folder and "torch.aten.atan2" in mlir.read_text()
    assert "torch-mlir-opt" in answer["command"] and mlir.name in answer["command"]


async def test_stale_diagnostics_follow_edits(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "unsupported_ops.py"
    uri = path.as_uri()
    jobs = (await server_info(client))["engine"]["jobsRun"]
    # Two lines more at the top, and the atan2 line rewritten: no save (mode "onSave").
    text = "# one\n# two\n" + path.read_text().replace(
        "angle = torch.atan2(x, shifted)", "angle = torch.add(x, shifted)")
    change_doc(client, uri, text, version=2)
    await wait_until(client, checked(client, uri, text, ALL), timeout=30)
    assert (await server_info(client))["engine"]["jobsRun"] == jobs  # moved, not re-lowered


async def test_settings_change_without_restart(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "unsupported_ops.py"
    uri = path.as_uri()
    text = "# one\n# two\n" + path.read_text().replace(
        "angle = torch.atan2(x, shifted)", "angle = torch.add(x, shifted)")
    # Only TOSA, and check as you type: re-checks the edited (unsaved) text at once.
    client.set_configuration({"diagnostics": "onType", "diagnosticTargets": ["tosa"]},
                             section="torchMlirLens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    await wait_until(client, checked(client, uri, text, ("tosa",)))
    assert all(d.message.endswith("cannot be lowered to TOSA") or "to TOSA:" in d.message
               or "cannot be lowered to TOSA (" in d.message  # with the reason
               for d in op_diagnostics(client, uri))
    # Typing brings atan2 back: diagnosed after the debounce, without a save.
    text2 = text.replace("angle = torch.add(x, shifted)", "angle = torch.atan2(x, shifted)")
    change_doc(client, uri, text2, version=3)
    await wait_until(client, checked(client, uri, text2, ("tosa",)))
