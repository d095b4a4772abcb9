"""The start-up cache of generated code: a second process compiles (almost) nothing, and what
it builds behaves as without the cache; a damaged cache file is a cold start, not an error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, sys
from pathlib import Path
from torch_mlir_lens.lsp.code_cache import GeneratedCodeCache
cache = GeneratedCodeCache(Path(sys.argv[1]))
cache.install()
from lsprotocol import types
from pygls.protocol import default_converter
a = types.Position(line=1, character=2)
lens = types.CodeLens(range=types.Range(start=a, end=a), command=types.Command("t", "c"))
wire = default_converter().unstructure(lens)
back = default_converter().structure(wire, types.CodeLens)
cache.save()
print(json.dumps({"hits": cache.hits, "compiled": cache.compiled, "repr": repr(a),
                  "equal": back == lens, "wire": wire}))
"""


def start(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_second_start_reuses_the_generated_code(tmp_path: Path) -> None:
    path = tmp_path / "code"
    cold = start(path)
    # lsprotocol's classes, cattrs' converters (a few sources repeat within one process)
    assert cold["compiled"] > 500 and cold["hits"] < 20
    assert path.stat().st_size > 0
    warm = start(path)
    assert warm["hits"] > 500 and warm["compiled"] < 20  # only what differs per process
    assert warm["repr"] == cold["repr"]
    assert warm["equal"] and warm["wire"] == cold["wire"]


def test_a_damaged_cache_file_is_a_cold_start(tmp_path: Path) -> None:
    path = tmp_path / "code"
    path.write_bytes(b"\x00not marshal")
    first = start(path)
    assert first["compiled"] > 500 and first["equal"]
    assert start(path)["hits"] > 500  # rewritten whole


def test_a_forged_cache_file_is_never_run(tmp_path: Path) -> None:
    """Finding 2 of docs/security.md's caches: the file holds code objects the server runs at
    start, before any trust. A file whose code objects were replaced (tag dropped, or a tag
    made with another key) is a cold start: its code never runs."""
    import marshal

    from torch_mlir_lens.system.cache_key import TAG_BYTES, seal

    path = tmp_path / "code"
    start(path)  # the genuine file: this user's tag, then the marshalled code objects
    genuine = marshal.loads(path.read_bytes()[TAG_BYTES:])
    marker = tmp_path / "ran"
    evil = compile(f"open({str(marker)!r}, 'w').write('ran')", "<forged>", "exec")
    forged = marshal.dumps({k: evil for k in genuine})
    for blob in (forged, b"\0" * TAG_BYTES + forged,
                 seal(b"x" * 32, "generated-code", path.name, forged)):
        path.write_bytes(blob)
        again = start(path)
        assert not marker.exists()
        assert again["compiled"] > 500 and again["equal"]  # a cold start, then rewritten
