"""Repository checks without a worker: paths, .gitignore, exclude, config, shards, baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.project.config import ConfigError, discover_config, load_config
from torch_mlir_lens.repo_check.baseline import BaselineError, read_baseline, write_baseline
from torch_mlir_lens.repo_check.paths import PathError, collect
from torch_mlir_lens.repo_check.plan import ModuleTask, parse_shard, plan_modules, shard
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.repo_check.text_formats import render_github

MODULE = "import torch\n\n\n# torch-mlir-lens: inputs=(torch.randn(2, 4),)\nclass {name}(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n"  # noqa: E501


def write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rels(files: list[str], root: Path) -> list[str]:
    return [str(Path(f).relative_to(root)) for f in files]


def test_folders_respect_gitignore_hidden_and_venvs(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "build/\n*_generated.py\n!keep_generated.py\n/top_only.py\n")
    for rel in ["a.py", "pkg/b.py", "pkg/deep/c.py", "build/x.py", "pkg/y_generated.py",
                "pkg/keep_generated.py", "top_only.py", "pkg/top_only.py", ".hidden/d.py",
                "pkg/__pycache__/e.py", "venv/lib/f.py", "notes.txt"]:
        write(tmp_path, rel)
    write(tmp_path, "venv/pyvenv.cfg")
    write(tmp_path, "pkg/deep/.gitignore", "c.py\n")
    got = rels(collect([str(tmp_path)], [], str(tmp_path)).files, tmp_path)
    assert got == ["a.py", "pkg/b.py", "pkg/keep_generated.py", "pkg/top_only.py"]


def test_parent_gitignore_applies_to_a_subfolder_argument(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "skip_*.py\n")
    write(tmp_path, "sub/skip_me.py")
    write(tmp_path, "sub/take.py")
    assert rels(collect([str(tmp_path / "sub")], [], str(tmp_path)).files, tmp_path) == [
        "sub/take.py"]


def test_exclude_applies_to_named_files_and_globs_expand(tmp_path: Path) -> None:
    for rel in ["m/a.py", "m/legacy/b.py", "m/legacy/c.py", "other/d.py"]:
        write(tmp_path, rel)
    out = collect([str(tmp_path / "m"), str(tmp_path / "m/legacy/b.py")], ["m/legacy/**"],
                  str(tmp_path))
    assert rels(out.files, tmp_path) == ["m/a.py"]
    assert [(Path(n).name, p) for n, p in out.excluded] == [("b.py", "m/legacy/**")]
    globbed = collect([str(tmp_path / "**" / "[bd].py")], [], str(tmp_path))
    assert rels(globbed.files, tmp_path) == ["m/legacy/b.py", "other/d.py"]


def test_paths_that_name_nothing_are_errors(tmp_path: Path) -> None:
    with pytest.raises(PathError, match="no such file"):
        collect([str(tmp_path / "nope")], [], str(tmp_path))
    with pytest.raises(PathError, match="no file matches"):
        collect([str(tmp_path / "*.nothing")], [], str(tmp_path))


def test_config_is_found_upwards_and_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the repository: the search goes up to it
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")  # no table: passed over
    write(tmp_path, "proj/pyproject.toml", """
[tool.torch-mlir-lens]
paths = ["models"]
targets = ["linalg", "tosa"]
timeoutSeconds = 30
memoryLimitMb = 2048
strictExport = true
baseline = "base.json"
exclude = ["models/old/**"]
jobs = 3
[tool.torch-mlir-lens.exampleInputs]
"M" = "(torch.randn(1),)"
""")
    (tmp_path / "proj" / "models" / "x").mkdir(parents=True)
    cfg = discover_config(tmp_path / "proj" / "models" / "x")
    assert cfg.root == str(tmp_path / "proj")
    assert cfg.paths == (str(tmp_path / "proj" / "models"),)
    assert cfg.baseline == str(tmp_path / "proj" / "base.json")
    assert (cfg.targets, cfg.timeout_seconds, cfg.memory_limit_mb, cfg.jobs) == (
        ("linalg", "tosa"), 30.0, 2048, 3)
    assert cfg.editor_settings() == {
        "diagnosticTargets": ["linalg", "tosa"], "exampleInputs": {"M": "(torch.randn(1),)"},
        "timeoutSeconds": 30.0, "memoryLimitMb": 2048, "strictExport": True}
    assert discover_config(tmp_path).path is None


def test_config_names_rewrites_every_module_lowers_through(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml",
                 "[tool.torch-mlir-lens]\nrewrites = ['erfinv@tosa', 'histc', 'auto']\n")
    cfg = load_config(path)
    assert cfg.rewrites == ("erfinv@tosa", "histc", "auto")
    assert cfg.editor_settings() == {"rewrites": ["erfinv@tosa", "histc", "auto"]}


def test_config_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.torch-mlir-lens]\njobs = 1\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert discover_config(tmp_path / "repo").path is None


@pytest.mark.parametrize(("body", "needle"), [
    ("targets = ['spirv']", "unknown target 'spirv'"),
    ("timeoutSeconds = -1", "timeoutSeconds: expected a number of seconds > 0, got -1"),
    ("colour = 1", "unknown key 'colour'"),
    ("defaultTarget = 'tosa'", "editor-only"),
    ("exampleInputs = ['x']", "exampleInputs"),
    ("targets = ['linalg']\ndiagnosticTargets = ['tosa']", "differ"),
    ("jobs = 0", "jobs"),
    ("rewrites = ['erfinv@tpu']", "rewrites: `erfinv@tpu`: unknown backend `tpu`"),
    ("= broken", "invalid TOML"),
])
def test_bad_config_says_what_is_wrong(tmp_path: Path, body: str, needle: str) -> None:
    path = write(tmp_path, "pyproject.toml", f"[tool.torch-mlir-lens]\n{body}\n")
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[")):
        load_config(path)


def tasks(n: int) -> list[ModuleTask]:
    return [ModuleTask(f"/r/f{i // 3}.py", f"f{i // 3}.py", f"M{i}", i + 1, "comment")
            for i in range(n)]


@pytest.mark.parametrize("n", [0, 1, 5, 7, 200])
@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_shards_cover_every_module_once_in_near_equal_contiguous_slices(n: int,
                                                                        count: int) -> None:
    all_tasks = tasks(n)
    parts = [shard(all_tasks, i, count) for i in range(1, count + 1)]
    assert [t for p in parts for t in p] == all_tasks  # contiguous, in order, each once
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1", "1/2/3"])
def test_bad_shard_specs(text: str) -> None:
    with pytest.raises(ValueError, match="shard"):
        parse_shard(text)


def test_plan_uses_editor_discovery_with_project_inputs(tmp_path: Path) -> None:
    write(tmp_path, "a.py", MODULE.format(name="A") + "\n\nclass B(torch.nn.Module):\n"
          "    def forward(self, x, y):\n        return x + y\n")
    write(tmp_path, "bad.py", "class (:\n")
    files = [str(tmp_path / "a.py"), str(tmp_path / "bad.py")]
    plan = plan_modules(files, str(tmp_path), {"a.py::B": "(torch.ones(1), torch.ones(1))"})
    assert [(t.key, t.inputs) for t in plan.tasks] == [("a.py::A", "comment"),
                                                       ("a.py::B", "settings")]
    (problem,) = plan.problems
    assert (problem.rel, problem.line, problem.kind) == ("bad.py", 1, "syntax-error")


def finding(module: str, rule: str, line: int) -> Finding:
    return Finding(rule, "unsupported-op", f"{rule} fails", "m.py", line, "m.py", module, 1,
                   rule.split("/")[0], rule.split("/")[1])


def test_baseline_is_keyed_by_module_and_rule_not_line(tmp_path: Path) -> None:
    path = str(tmp_path / "base.json")
    assert write_baseline(path, [finding("A", "tosa/aten.roll", 5),
                                 finding("A", "tosa/aten.roll", 9),
                                 finding("B", "linalg/aten.erfinv", 20)]) == 2
    base = read_baseline(path)
    later = [finding("A", "tosa/aten.roll", 12),  # moved: still known
             finding("A", "linalg/aten.roll", 12),  # another backend: new
             finding("C", "tosa/aten.roll", 30)]  # another module: new
    fixed = base.apply(later)
    assert [f.baselined for f in later] == [True, False, False]
    assert fixed == [("m.py", "B", "linalg/aten.erfinv")]


def test_unreadable_baselines_are_errors(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="no such baseline"):
        read_baseline(str(tmp_path / "none.json"))
    write(tmp_path, "x.json", json.dumps({"version": 99, "entries": []}))
    with pytest.raises(BaselineError, match="not a torch-mlir-lens baseline"):
        read_baseline(str(tmp_path / "x.json"))


def test_github_annotations_escape_their_fields() -> None:
    f = Finding("tosa/aten.roll", "unsupported-op", "50% of it:\nfails", "dir,x/m.py", 7,
                "dir,x/m.py", "A", 1, "tosa", "aten.roll")
    report = Report(targets=["tosa"], modules=[{"file": "dir,x/m.py", "name": "A", "line": 1,
                                                "targets": {}, "findings": [f.to_json()]}])
    first = render_github(report, "/").splitlines()[0]
    assert first == ("::error file=dir%2Cx/m.py,line=7,title=torch-mlir-lens tosa/aten.roll "
                     "in A::50% of it:%0Afails".replace("50%", "50%25"))


def test_default_jobs_are_bounded_by_memory() -> None:
    from torch_mlir_lens.repo_check.runner import default_jobs, memory_available_mb

    available = memory_available_mb()
    assert available is not None  # Linux
    jobs, why = default_jobs(available * 4)  # a limit 4× what is free: one worker only
    assert jobs == 1 and "per worker" in why
    jobs, _ = default_jobs(1)
    assert jobs >= 1


def test_progress_bar_draws_in_place_and_erases_itself() -> None:
    import io

    from torch_mlir_lens.repo_check.progress import Progress

    stream = io.StringIO()
    bar = Progress(4, stream, enabled=True)
    for name in ("a.py::A", "a.py::B", "b.py::C", "b.py::D"):
        bar.step(name)
    bar.close()
    frames = stream.getvalue().split("\r")
    assert "[##########          ] 2/4 a.py::B" in frames[2]
    assert frames[-1] == "" and frames[-2].strip() == ""  # erased
    quiet = io.StringIO()
    Progress(4, quiet).step("x")  # not a terminal: nothing drawn
    assert quiet.getvalue() == ""


def test_editor_settings_take_the_project_table_last(tmp_path: Path) -> None:
    from torch_mlir_lens.lsp.state.settings import effective_settings

    editor = {"diagnosticTargets": ["linalg", "tosa", "stablehlo"], "timeoutSeconds": 60,
              "exampleInputs": {"A": "(1,)", "B": "(2,)"}, "defaultTarget": "tosa"}
    plain, problems = effective_settings({}, editor, str(tmp_path))
    assert plain.timeout_seconds == 60 and not problems  # no pyproject: the editor's
    write(tmp_path, "pyproject.toml", "[tool.torch-mlir-lens]\ntargets = ['stablehlo']\n"
          "timeoutSeconds = 5\n[tool.torch-mlir-lens.exampleInputs]\nB = '(3,)'\n")
    merged, problems = effective_settings({}, editor, str(tmp_path))
    assert not problems
    assert merged.diagnostic_targets == ("stablehlo",) and merged.timeout_seconds == 5
    assert dict(merged.example_inputs) == {"A": "(1,)", "B": "(3,)"}
    assert merged.default_target == "tosa"  # editor-only keys stay the editor's
    write(tmp_path, "pyproject.toml", "[tool.torch-mlir-lens]\ntargets = 'nope'\n")
    broken, problems = effective_settings({}, editor, str(tmp_path))
    assert broken.timeout_seconds == 60 and len(problems) == 1 and "targets" in problems[0]
