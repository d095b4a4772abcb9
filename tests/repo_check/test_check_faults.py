"""`check`, `merge` and the baseline as a hostile first user meets them: every reproduction
gets one clear message and the documented exit code, and no baseline entry is lost.

Most runs need no worker: a module without example inputs is skipped, and with
`--require-inputs` it is a finding (`inputs-missing`), which is all that reports, baselines
and merges need; commands refused before any worker starts run the CLI's `main` in this
process. One run lowers real modules: lines of files with non-ASCII paths, and of files in
another encoding. Signals are the reliability suite's (test_check_signals.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from torch_mlir_lens.cli import main
from torch_mlir_lens.project.config import ConfigError, load_config
from torch_mlir_lens.project.limits import usable_cpus

TIMEOUT = 600
NO_INPUTS = '''import torch


class {name}(torch.nn.Module):
    def forward(self, x):
        return x + 1
'''
# Writes a file when built: proves the run never started.
SENTINEL = '''import pathlib

import torch


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Sentinel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        (pathlib.Path(__file__).parent / "ran").write_text("ran")

    def forward(self, x):
        return x + 1
'''
ERFINV = '''{coding}import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class {name}(nn.Module):
    def forward(self, x):
        y = x * 2  # {comment}
        return torch.erfinv(y)
'''
ERFINV_LINE = ERFINV.splitlines().index("        return torch.erfinv(y)") + 1


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch_mlir_lens", *args]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args), cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)


def run_here(*args: str, cwd: Path, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch) -> subprocess.CompletedProcess[str]:
    """The CLI's `main` in this process (for runs that end before any worker starts)."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def error_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one `torch-mlir-lens: error: ...` line of a failed command (no traceback)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("torch-mlir-lens: error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0].removeprefix("torch-mlir-lens: error: ")


def write_modules(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name.lower()}.py").write_text(NO_INPUTS.format(name=name))


# --- numbers, outputs, --config ---------------------------------------------------------------


@pytest.mark.parametrize(("option", "key", "text", "toml"), [
    ("--timeout", "timeoutSeconds", "nan", "nan"),
    ("--timeout", "timeoutSeconds", "-1", "-1"),
    ("--timeout", "timeoutSeconds", "0", "0"),
    ("--memory-limit", "memoryLimitMb", "99999999999999999999999999",
     "99999999999999999999999999"),
    ("--memory-limit", "memoryLimitMb", "0", "0"),
    ("-j", "jobs", "0", "0"),
])
def test_numbers_are_refused_alike_on_the_command_line_and_in_pyproject(
        tmp_path: Path, option: str, key: str, text: str, toml: str,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    write_modules(tmp_path, "M")
    line = error_line(run_here("check", "m.py", option, text, "--list", cwd=tmp_path,
                               capsys=capsys, monkeypatch=monkeypatch))
    prefix = f"argument {'-j/--jobs' if option == '-j' else option}: "
    assert line.startswith(prefix) and line.endswith(f", got '{text}'"), line
    expected = line.removeprefix(prefix).rsplit(", got ", 1)[0]
    (tmp_path / "pyproject.toml").write_text(f"[tool.torch-mlir-lens]\n{key} = {toml}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "pyproject.toml")
    assert err.value.message == f"[tool.torch-mlir-lens] {key}: {expected}, got {toml}"


def test_jobs_beyond_the_cpus_are_capped_with_a_note(tmp_path: Path) -> None:
    write_modules(tmp_path, "A", "B", "C")
    proc = run("check", ".", "-j", "1000", cwd=tmp_path)  # skipped modules: no worker
    assert proc.returncode == 0, proc.stderr
    cpus = usable_cpus()
    assert f"note: 1000 workers capped at {cpus}, the CPUs this run may use" in proc.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (["-o", "."], ".: cannot write the report there: is a folder (give a file name)"),
    (["-o", "sentinel.py"], "sentinel.py: cannot write the report there: is a source file "
                            "name: a report never replaces source code"),
    (["-o", "gone/report.json"], "gone/report.json: cannot write the report there: no such "
                                 "folder: "),
    (["--write-baseline", "--baseline", "gone/base.json"],
     "gone/base.json: cannot write the baseline there: no such folder: "),
    (["--write-baseline", "--baseline", "sub"],
     "sub: cannot write the baseline there: is a folder (give a file name)"),
    (["--config", "."], ".: is a folder: --config takes a pyproject.toml file (such as "
                        "./pyproject.toml)"),
])
def test_outputs_and_config_are_checked_before_the_run(
        tmp_path: Path, args: list[str], needle: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sentinel.py").write_text(SENTINEL)
    (tmp_path / "sub").mkdir()
    line = error_line(run_here("check", "sentinel.py", *args, cwd=tmp_path, capsys=capsys,
                               monkeypatch=monkeypatch))
    assert line.startswith(needle), line
    assert not (tmp_path / "ran").exists(), "the module ran before the output was checked"


# --- baselines --------------------------------------------------------------------------------


def baseline_entries(path: Path) -> list[tuple[str, str, str]]:
    return [(e["file"], e["module"], e["rule"])
            for e in json.loads(path.read_text())["entries"]]


def test_the_baseline_keeps_what_a_run_did_not_check(tmp_path: Path) -> None:
    write_modules(tmp_path, "A", "B")
    base = tmp_path / "base.json"
    write = ("--require-inputs", "--baseline", "base.json", "--write-baseline")
    first = run("check", ".", *write, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert baseline_entries(base) == [("a.py", "A", "inputs-missing"),
                                      ("b.py", "B", "inputs-missing")]

    # (a) a run that cannot read a file writes nothing: its entries would come back as new.
    (tmp_path / "c.py").write_text("class C(:\n")
    before = base.read_bytes()
    broken = run("check", ".", *write, cwd=tmp_path)
    assert error_line(broken) == ("baseline not written: 1 files could not be read or "
                                  "parsed (their entries would be lost)")
    assert base.read_bytes() == before
    (tmp_path / "c.py").unlink()

    # (b) a run over one file replaces that file's entries and keeps the others, and says so.
    (tmp_path / "a.py").write_text(NO_INPUTS.format(name="A") + NO_INPUTS.format(name="A2"))
    part = run("check", "a.py", *write, cwd=tmp_path)
    assert part.returncode == 0, part.stderr
    assert "wrote base.json (2 entries of the modules checked; kept 1 entry of 1 file this " \
           "run did not check)" in part.stderr
    assert baseline_entries(base) == [("a.py", "A", "inputs-missing"),
                                      ("a.py", "A2", "inputs-missing"),
                                      ("b.py", "B", "inputs-missing")]
    # --module: only that module's entries are replaced (A2's stay though A2 is not run).
    (tmp_path / "a.py").write_text(NO_INPUTS.format(name="A2").replace(
        "class A2", "# torch-mlir-lens: inputs=(torch.randn(1),)\nclass A2") +
        NO_INPUTS.format(name="A"))
    one = run("check", "a.py", "--module", "A", *write, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert ("a.py", "A2", "inputs-missing") in baseline_entries(base)
    # A file that is gone takes its entries along.
    (tmp_path / "b.py").unlink()
    gone = run("check", "a.py", "--module", "A", *write, cwd=tmp_path)
    assert "dropped 1 entry of 1 file gone from the repository" in gone.stderr, gone.stderr
    assert [k[0] for k in baseline_entries(base)] == ["a.py", "a.py"]

    # Not a baseline: refused before the run, with the way out.
    base.write_text("{}")
    line = error_line(run("check", "a.py", *write, cwd=tmp_path))
    assert line == ("base.json: not a torch-mlir-lens baseline (version 1) (delete it to "
                    "write a new one)")


# --- paths and sources ------------------------------------------------------------------------


def test_symlinked_folders_are_followed_once_and_loops_skipped(tmp_path: Path) -> None:
    write_modules(tmp_path / "pkg", "A")
    write_modules(tmp_path / "real", "R")
    (tmp_path / "pkg" / "self").symlink_to(".")
    (tmp_path / "pkg" / "up").symlink_to("..")
    (tmp_path / "pkg" / "linked").symlink_to("../real")
    (tmp_path / "pkg" / "twin").symlink_to("../real")
    (tmp_path / "pkg" / "knot").symlink_to("knot")
    loops = {"pkg/self: warning: a symbolic link to a folder that contains it (a loop): "
             "skipped",
             "pkg/up: warning: a symbolic link to a folder that contains it (a loop): skipped",
             "pkg/knot: warning: cannot be read (Too many levels of symbolic links): skipped"}
    for paths in (["pkg"], ["pkg/**/*.py"]):
        proc = run("check", *paths, "--list", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["pkg/a.py::A", "pkg/linked/r.py::R"]
        assert set(proc.stderr.splitlines()) == loops  # and nothing else: --list runs no worker
    # A folder reached with and without a link: by its own name.
    whole = run("check", ".", "--list", cwd=tmp_path)
    assert whole.stdout.split() == ["pkg/a.py::A", "real/r.py::R"], whole.stderr


def test_sources_are_decoded_as_python_decodes_them(tmp_path: Path) -> None:
    latin = ERFINV.format(coding="# -*- coding: latin-1 -*-\n", name="Latin", comment="é")
    (tmp_path / "latin.py").write_bytes(latin.encode("latin-1"))
    bom = ERFINV.format(coding="", name="Bom", comment="ü")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + bom.encode())
    (tmp_path / "bad.py").write_bytes(b"import torch\n\nx = '\xe9'\n")
    proc = run("check", ".", "--list", cwd=tmp_path)
    assert proc.stdout.split() == ["bom.py::Bom", "latin.py::Latin"]
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "bad.py:3: error: cannot read the file: not valid utf-8 text (byte 0xe9): declare its "
        "encoding with a '# -*- coding: NAME -*-' line (PEP 263)"]


def test_a_malformed_notebook_cell_is_a_clear_file_problem(tmp_path: Path) -> None:
    cells = [{"cell_type": "code", "source": "import torch\n", "metadata": {}, "outputs": [],
              "execution_count": None},
             {"cell_type": "code", "source": 5, "metadata": {}, "outputs": [],
              "execution_count": None}]
    (tmp_path / "nb.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    proc = run("check", ".", "--list", cwd=tmp_path)
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr.splitlines() == [
        "nb.ipynb: error: not a notebook: the source of cell 2 is 5, not text (a string or a "
        "list of strings)"]


# --- merge ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Reports of shards of skipped modules (no worker), one per way a shard can differ."""
    root = tmp_path_factory.mktemp("shards")
    write_modules(root, "A", "B", "C")
    everything, json_out, sarif_out = ["."], ["--format", "json"], ["--format", "sarif"]
    made: dict[str, tuple[list[str], list[str]]] = {
        "s1.json": (everything, ["--shard", "1/2", *json_out]),
        "s2.json": (everything, ["--shard", "2/2", *json_out]),
        "s1.sarif": (everything, ["--shard", "1/2", *sarif_out]),
        "s2.sarif": (everything, ["--shard", "2/2", *sarif_out]),
        "tosa2.sarif": (everything, ["--shard", "2/2", *sarif_out, "--targets", "linalg,tosa"]),
        "tosa2.json": (everything, ["--shard", "2/2", *json_out, "--targets", "linalg,tosa"]),
        "fewer2.json": (["a.py", "b.py"], ["--shard", "2/2", *json_out]),
        "slow2.json": (everything, ["--shard", "2/2", *json_out, "--timeout", "30"]),
        "whole.json": (everything, json_out),
    }
    procs = [subprocess.Popen(
        cli("check", *paths, "--targets", "linalg", "--require-inputs", *options, "-o", name),
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (paths, options) in made.items()]
    for p in procs:
        _, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 1, err  # the inputs-missing findings
    data = json.loads((root / "s2.json").read_text())
    data["tool"]["version"] = "0.0.1"
    (root / "old2.json").write_text(json.dumps(data))
    return root


def test_shards_of_one_run_merge(shards: Path) -> None:
    merged = run("merge", "s1.json", "s2.json", "-o", "m.json", cwd=shards)
    assert merged.returncode == 1, merged.stderr  # the findings, as the whole run
    report = json.loads((shards / "m.json").read_text())
    whole = json.loads((shards / "whole.json").read_text())
    assert [m["name"] for m in report["modules"]] == ["A", "B", "C"]
    assert (report["config"], report["plan"]) == (whole["config"], whole["plan"])
    assert run("merge", "s1.sarif", "s2.sarif", cwd=shards).returncode == 1


@pytest.mark.parametrize(("reports", "message"), [
    (["s1.json", "tosa2.json"], "the reports come from different targets (s1.json: linalg; "
                                "tosa2.json: linalg, tosa)"),
    (["s1.sarif", "tosa2.sarif"], "the reports come from different targets (s1.sarif: "
                                  "linalg; tosa2.sarif: linalg, tosa)"),
    (["s1.json", "fewer2.json"], "the reports come from different module lists (s1.json: 3 "
                                 "modules ["),
    (["s1.json", "slow2.json"], "the reports come from different settings (timeoutSeconds) "
                                "(s1.json: 60.0; slow2.json: 30.0)"),
    (["s1.json", "old2.json"], "the reports come from different torch-mlir-lens versions "
                               "(s1.json: "),
    (["whole.json", "s2.json"], "whole.json: not a shard (--shard I/N); merge combines the "
                                "shards of one run"),
    (["s2.json"], "incomplete merge: missing shards [1] of 2"),
    (["s1.json", "s2.json", "s2.json"], "incomplete merge: repeated shards [1, 2, 2] of 2"),
])
def test_merge_refuses_reports_that_are_not_the_shards_of_one_run(
        shards: Path, reports: list[str], message: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    line = error_line(run_here("merge", *reports, "-o", "m.out", cwd=shards, capsys=capsys,
                               monkeypatch=monkeypatch))
    assert line.startswith(message), line
    assert not (shards / "m.out").exists()


# --- lowering: non-ASCII paths, other encodings -----------------------------------------------


def test_non_ascii_paths_and_encodings_keep_their_lines(tmp_path: Path) -> None:
    files = {"ü/érf 2.py": ("Erf", "utf-8", ""), "ü/模型/m 1.py": ("Model", "utf-8", ""),
             "latin.py": ("Latin", "latin-1", "# -*- coding: latin-1 -*-\n")}
    for rel, (name, encoding, coding) in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = ERFINV.format(coding=coding, name=name, comment="é")
        path.write_bytes(text.encode(encoding))
    proc = run("check", "ü", "latin.py", "--targets", "tosa", "-j", "1", "--format", "json",
               "-o", "r.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    got = {(f["file"], f["rule"], f["line"]) for m in report["modules"] for f in m["findings"]}
    line_of = {rel: ERFINV_LINE + bool(coding) for rel, (_, _, coding) in files.items()}
    assert got == {(rel, "tosa/aten.erfinv", line) for rel, line in line_of.items()}

    text = run("merge", "r.json", "--format", "text", cwd=tmp_path).stdout
    assert "at no line" not in text
    assert f"tosa: `aten.erfinv` at line {line_of['ü/érf 2.py']}" in text
    sarif: dict[str, Any] = json.loads(run("merge", "r.json", "--format", "sarif",
                                           cwd=tmp_path).stdout)
    results = sarif["runs"][0]["results"]
    uris = {}
    for r in results:
        physical = r["locations"][0]["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert re.fullmatch(r"(?:[A-Za-z0-9\-._~/]|%[0-9A-F]{2})+", uri), uri  # RFC 3986
        assert "Ã" not in r["message"]["text"]
        uris[unquote(uri)] = (uri, physical["region"]["startLine"])
    assert uris == {
        "ü/érf 2.py": ("%C3%BC/%C3%A9rf%202.py", line_of["ü/érf 2.py"]),
        "ü/模型/m 1.py": ("%C3%BC/%E6%A8%A1%E5%9E%8B/m%201.py", line_of["ü/模型/m 1.py"]),
        "latin.py": ("latin.py", line_of["latin.py"]),
    }
