"""The worker's own check where it writes: a job that reaches it without the server's or the
CLI's check (another client of the engine, a bug in either) still cannot replace a source.

Export jobs go straight to the engine: onto the module's own file, onto it through a symlink
with an IR name, onto another Python file and a new notebook name. Each is a `write-error`
naming the path, and every file keeps its bytes and its modification time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torch_mlir_lens.engine import Engine, ModuleJob
from torch_mlir_lens.protocol.results import ErrorKind, LensError


def stamp(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


async def test_the_worker_refuses_to_write_over_source(engine: Engine, examples_dir: Path,
                                                        tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    shutil.copy(examples_dir / "mlp.py", src)
    other = tmp_path / "other.py"
    other.write_text("VALUE = 1\n")
    link = tmp_path / "model.linalg.mlir"
    link.symlink_to(src)
    kept = {p: stamp(p) for p in (src, other)}
    job = ModuleJob(path=str(src), module="MLP")
    for output, reason in ((src, "the module's own source file"),
                           (link, "the module's own source file"),
                           (other, "Python source"),
                           (tmp_path / "new.ipynb", "Python source")):
        with pytest.raises(LensError) as caught:
            await engine.export(job, "linalg", str(output))
        err = caught.value
        assert err.kind == ErrorKind.WRITE_ERROR, (output, err.kind, err.message)
        assert str(output) in err.message and reason in err.message, err.message
    assert {p: stamp(p) for p in (src, other)} == kept
    assert link.is_symlink() and not (tmp_path / "new.ipynb").exists()
    # The same engine still writes where it may.
    written = await engine.export(job, "linalg", str(tmp_path / "model.mlir"))
    assert written.bytes and (tmp_path / "model.mlir").stat().st_size == written.bytes
