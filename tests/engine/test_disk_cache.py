"""The persistent cache's storage (no worker): whole entries or none, bounded, shared safely."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from torch_mlir_lens.system.disk_cache import DiskCache

REPLY = {"results": [{"module": "M", "target": "linalg", "ok": True, "ir": "x" * 1000}]}


def entry_files(root: Path) -> list[Path]:
    return sorted(root.glob("v*/*/*.json.z"))


def test_a_stored_reply_comes_back_while_its_files_and_libraries_hold(tmp_path: Path) -> None:
    sibling = tmp_path / "layers.py"
    sibling.write_text("FACTOR = 2\n")
    versions = {"fakelib": "1.0"}
    cache = DiskCache(tmp_path / "c", 1 << 20, version_of=versions.get)
    from torch_mlir_lens.worker.loading.provenance import file_digest

    cache.put("k", REPLY, {"files": {str(sibling): file_digest(str(sibling))},
                           "libraries": {"fakelib": "1.0"}})
    assert cache.get("k") == REPLY
    versions["fakelib"] = "2.0"  # the library was upgraded: not true any more
    assert cache.get("k") is None
    versions["fakelib"] = "1.0"
    assert cache.get("k") == REPLY
    sibling.write_text("FACTOR = 3\n")  # a file the code executed changed
    assert cache.get("k") is None
    sibling.unlink()
    assert cache.get("k") is None
    assert cache.stats.stale == 3 and cache.stats.hits == 2


def test_a_truncated_corrupt_or_foreign_entry_is_a_miss_and_goes(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, 1 << 20)
    empty = {"files": {}, "libraries": {}}
    for key, damage in (("a", lambda b: b[: len(b) // 2]), ("b", lambda b: b"not zlib"),
                        ("c", lambda b: b"")):
        cache.put(key, REPLY, empty)
        (path,) = [p for p in entry_files(tmp_path) if p.name.startswith(key)]
        path.write_bytes(damage(path.read_bytes()))
        assert cache.get(key) is None  # never an error
        assert not path.exists()
    cache.put("d", REPLY, empty)
    (path,) = [p for p in entry_files(tmp_path) if p.name.startswith("d")]
    os.replace(path, path.with_name("e" + path.name[1:]))  # an entry under another key
    assert cache.get("e") is None


def test_the_folder_stays_bounded_least_recently_used_first(tmp_path: Path) -> None:
    empty = {"files": {}, "libraries": {}}
    probe = DiskCache(tmp_path / "probe", 1 << 20)
    probe.put("probe", REPLY, empty)
    size = probe.size()  # every entry below has this size
    cache = DiskCache(tmp_path, size * 5)  # room for five entries
    for age, key in enumerate(("old", "k0", "k1", "k2", "k3")):
        cache.put(key, REPLY, empty)
        (path,) = [p for p in entry_files(tmp_path) if p.name.startswith(key)]
        os.utime(path, (1000 + age, 1000 + age))  # "old" is the least recently written
    assert cache.get("old") is not None  # ...but used now: the most recently used
    cache.put("k4", REPLY, empty)  # six entries: over the bound, down to 80 % (four)
    kept = {p.name.split(".")[0] for p in entry_files(tmp_path)}
    assert kept == {"old", "k2", "k3", "k4"}
    assert cache.size() <= cache.max_bytes * 0.8 + size // 10  # sizes differ by a few bytes


def _writer(root: str, n: int) -> None:
    cache = DiskCache(root, 1 << 24)
    for _ in range(30):
        cache.put("shared", {"writer": n, "blob": "y" * 20000}, {"files": {}, "libraries": {}})


def test_writers_in_several_processes_never_leave_a_half_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), n)) for n in range(3)]
    for p in procs:
        p.start()
    reader = DiskCache(tmp_path, 1 << 24)
    seen = 0
    while any(p.is_alive() for p in procs):
        got = reader.get("shared")
        if got is not None:
            assert got["blob"] == "y" * 20000 and got["writer"] in (0, 1, 2)
            seen += 1
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert reader.get("shared") is not None
    assert not list(tmp_path.glob("v*/*/.*.tmp"))  # no temporary file left behind
