"""`check --cache-dir`: a second run over unchanged files answers from the persistent cache
(no worker at all), gives the same report, and a changed file is checked again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def check(folder: Path, cache: Path) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "check", ".", "--targets", "linalg,tosa",
         "--format", "json", "--cache-dir", str(cache)],
        cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout), done.stderr


def verdicts(report: dict) -> list:
    return [(m["file"], m["name"], sorted((t, v.get("ok")) for t, v in m["targets"].items()))
            for m in report["modules"]]


def test_a_second_run_answers_from_the_cache_and_a_change_is_checked(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in ("mlp.py", "partial_lowering.py"):
        shutil.copy(EXAMPLES / name, folder / name)
    cache = tmp_path / "cache"
    # Two lowerings, and the proof of the rewrites of partial_lowering.py's culprit.
    first, err = check(folder, cache)
    assert "0 of 3 results answered from it" in err, err[-1000:]
    again, err = check(folder, cache)
    assert "3 of 3 results answered from it" in err, err[-1000:]
    assert verdicts(again) == verdicts(first)
    mlp = folder / "mlp.py"
    mlp.write_text(mlp.read_text().replace("F.relu(", "torch.tanh("))
    _, err = check(folder, cache)
    assert "2 of 3 results answered from it" in err, err[-1000:]


BLOCKS = Path(__file__).resolve().parents[1] / "worker" / "models" / "repeated_blocks.py"


def test_an_edited_parent_reads_its_traced_block_from_the_cache(tmp_path: Path) -> None:
    """The check gate keys repeated blocks by their proven identity: after an edit to the
    parent, a new run's worker reads the block it did not trace from the cache folder."""
    folder = tmp_path / "repo"
    folder.mkdir()
    model = folder / "stack.py"
    # Stack and its Block (the rest of the file's modules left out).
    source = BLOCKS.read_text().split("# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)\n"
                                      "class DeepStack")[0]
    model.write_text(source)
    cache = tmp_path / "cache"
    _, err = check(folder, cache)
    assert "repeated blocks: 0 read from it, 1 traced" in err, err[-1000:]
    model.write_text(source.replace("return self.head(x) * 2.0", "return self.head(x) * 3.0"))
    edited, err = check(folder, cache)
    assert "repeated blocks: 1 read from it, 0 traced" in err, err[-1000:]
    assert all(m["targets"]["linalg"]["ok"] for m in edited["modules"]), edited["modules"]
