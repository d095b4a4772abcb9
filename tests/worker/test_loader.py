"""The loader runs only definitions, under the file's real path, cached by content hash."""

import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.loading import loader
from torch_mlir_lens.worker.loading.loader import load_definitions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _write(path: Path, src: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(src))
    return path


def test_training_script_loop_and_main_never_run(tmp_path, monkeypatch):
    sentinels = tmp_path / "sentinels"
    sentinels.mkdir()
    monkeypatch.setenv("TORCH_MLIR_LENS_SENTINEL_DIR", str(sentinels))
    script = shutil.copy(EXAMPLES / "training_script.py", tmp_path / "training_script.py")
    mod = load_definitions(str(script))
    assert hasattr(mod, "Regressor") and hasattr(mod, "model")  # definitions + assignments ran
    assert mod.__name__ != "__main__"
    assert not hasattr(mod, "loss")  # assigned only inside the loop
    assert list(sentinels.iterdir()) == []
    # The same file really does write them when run as a script (the test can fail).
    subprocess.run([sys.executable, str(script)], check=True, capture_output=True, timeout=120,
                   env={**os.environ, "TORCH_MLIR_LENS_SENTINEL_DIR": str(sentinels)})
    assert {p.name for p in sentinels.iterdir()} >= {"training_loop_ran.txt", "main_block_ran.txt"}


def test_filtered_statements(tmp_path, capsys):
    path = _write(tmp_path / "f.py", """\
        '''Docstring.'''
        import os
        X = 1
        X += 1
        Y: int = 3
        print("top-level call")
        for i in range(3):
            X = 100
        with open(__file__) as fh:
            X = 200
        try:
            import does_not_exist_anywhere
            HAVE = True
        except ImportError:
            HAVE = False
            print("in except")
        if X == 2:
            Z = "kept"
            print("in if")
        else:
            Z = "other"
        if "__main__" == __name__:
            Z = "main"
        if __name__ == "__main__":
            Z = "main"
        else:
            IMPORTED = True
        if __name__ != "__main__":
            NOT_MAIN = True
        def f():
            return X
    """)
    mod = load_definitions(str(path))
    assert (mod.X, mod.Y, mod.HAVE, mod.Z, mod.f()) == (2, 3, False, "kept", 2)
    assert mod.IMPORTED and mod.NOT_MAIN  # the branches an import takes
    assert mod.__doc__ == "Docstring."
    assert capsys.readouterr().out == ""


def test_future_annotations_apply_to_the_whole_file(tmp_path):
    path = _write(tmp_path / "fut.py", """\
        from __future__ import annotations

        def f(x: NotDefinedAnywhere) -> AlsoUndefined:
            return x
    """)
    mod = load_definitions(str(path))
    assert mod.f.__annotations__ == {"x": "NotDefinedAnywhere", "return": "AlsoUndefined"}


def test_frames_name_the_real_path(tmp_path):
    src = "def f():\n    return 1\nclass C:\n    def m(self):\n        pass\n"
    path = _write(tmp_path / "model.py", src)
    mod = load_definitions(str(path))
    assert mod.f.__code__.co_filename == str(path.resolve())
    assert mod.C.m.__code__.co_filename == str(path.resolve())
    assert mod.__file__ == str(path.resolve())


def test_unsaved_text_is_what_runs_and_cache_by_content(tmp_path):
    path = _write(tmp_path / "buf.py", "VALUE = 'disk'\n")
    first = load_definitions(str(path))
    assert first.VALUE == "disk"
    buffer = load_definitions(str(path), "VALUE = 'buffer'\n")
    assert buffer.VALUE == "buffer" and buffer is not first
    again = load_definitions(str(path), "VALUE = 'disk'\n")
    assert again is first  # same content hash: not executed again
    assert load_definitions(str(path), "VALUE = 'buffer'\n") is buffer


def test_sibling_imports_and_changed_sibling_is_reloaded(tmp_path):
    _write(tmp_path / "pkg" / "helpers.py", "SCALE = 2\n")
    _write(tmp_path / "pkg" / "relhelpers.py", "OFFSET = 5\n")
    src = "from helpers import SCALE\nfrom .relhelpers import OFFSET\nRESULT = SCALE + OFFSET\n"
    main = _write(tmp_path / "pkg" / "main.py", src)
    assert load_definitions(str(main)).RESULT == 7
    time.sleep(0.01)
    _write(tmp_path / "pkg" / "helpers.py", "SCALE = 40\n")
    os.utime(tmp_path / "pkg" / "helpers.py", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert load_definitions(str(main)).RESULT == 45  # same text, but the sibling changed


def test_same_sibling_name_in_two_folders(tmp_path):
    for project, value in (("a", 1), ("b", 2)):
        _write(tmp_path / project / "shared_helpers.py", f"VALUE = {value}\n")
        _write(tmp_path / project / "main.py", "from shared_helpers import VALUE\n")
    assert load_definitions(str(tmp_path / "a" / "main.py")).VALUE == 1
    assert load_definitions(str(tmp_path / "b" / "main.py")).VALUE == 2
    assert load_definitions(str(tmp_path / "a" / "main.py")).VALUE == 1


def test_examples_submodules_load():
    mod = load_definitions(str(EXAMPLES / "submodules" / "model.py"))
    assert mod.TinyResNet.__module__ == mod.__name__
    assert mod.ConvBNReLU.__module__ == "layers"


def test_pickling_and_dataclasses_work(tmp_path):
    path = _write(tmp_path / "dc.py", """\
        from dataclasses import dataclass

        @dataclass
        class Config:
            width: int = 4
    """)
    mod = load_definitions(str(path))
    cfg = pickle.loads(pickle.dumps(mod.Config(7)))
    assert cfg.width == 7


def test_syntax_error(tmp_path):
    path = _write(tmp_path / "bad.py", "import torch\n\ndef f(:\n    pass\n")
    with pytest.raises(LensError) as info:
        load_definitions(str(path))
    assert info.value.kind == "syntax-error"
    assert info.value.line == 3 and info.value.file == str(path.resolve())
    assert "\n" not in info.value.message


def test_load_error_names_the_user_line(tmp_path):
    path = _write(tmp_path / "boom.py", "import os\n\nA = 1\n\nclass C(Undefined):\n    pass\n")
    with pytest.raises(LensError) as info:
        load_definitions(str(path))
    err = info.value
    assert err.kind == "load-error" and err.line == 5
    assert "NameError" in err.message and "Undefined" in err.message
    assert "\n" not in err.message
    assert loader.module_name_for(str(path.resolve())) not in sys.modules


def test_failing_assignment_is_skipped_not_fatal(tmp_path):
    path = _write(tmp_path / "script.py", """\
        import torch
        for step in range(3):
            loss = torch.tensor(float(step))
        final = loss.item()  # `loss` only exists if the loop ran
        class M(torch.nn.Module):
            pass
    """)
    mod = load_definitions(str(path))
    assert hasattr(mod, "M") and not hasattr(mod, "final")
    assert mod.__torch_mlir_lens_skipped__ == [(4, "NameError: name 'loss' is not defined")]


def test_load_error_in_a_sibling_names_the_sibling(tmp_path):
    _write(tmp_path / "sib_broken.py", "X = 1\nraise RuntimeError('sibling exploded')\n")
    path = _write(tmp_path / "uses.py", "import sib_broken\n")
    with pytest.raises(LensError) as info:
        load_definitions(str(path))
    assert info.value.file == str((tmp_path / "sib_broken.py").resolve())
    assert info.value.line == 2
    assert "sibling exploded" in info.value.message


def test_missing_file():
    with pytest.raises(LensError) as info:
        load_definitions("/nonexistent/dir/model.py")
    assert info.value.kind == "load-error"


def test_modules_loaded_before_any_user_file_are_skipped_by_the_scans(tmp_path, monkeypatch):
    # The worker marks everything imported before the first job (torch: thousands of modules)
    # as never the user's; a sibling the user's file imports afterwards is still found.
    state = loader._state()
    monkeypatch.setattr(state, "preloaded", state.preloaded)
    loader.mark_preloaded()
    assert "torch" not in dict(loader.modules_loaded_since_start())
    _write(tmp_path / "proj" / "late_sibling.py", "FACTOR = 3\n")
    main = _write(tmp_path / "proj" / "main.py", "from late_sibling import FACTOR\n")
    assert load_definitions(str(main)).FACTOR == 3
    loaded = dict(loader.modules_loaded_since_start())
    assert loaded["late_sibling"].__file__ == str(tmp_path / "proj" / "late_sibling.py")
    from torch_mlir_lens.worker.loading.loader import user_files_for

    assert str(tmp_path / "proj" / "late_sibling.py") in user_files_for(str(main))
