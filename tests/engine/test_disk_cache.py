"""The persistent cache's storage (no worker): whole entries or none, bounded, shared safely,
and believed only when it is this user's own (docs/security.md, "Caches")."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
import zlib
from pathlib import Path

import pytest

from torch_mlir_lens.protocol.schemas import stored_reply_ok
from torch_mlir_lens.system import cache_key
from torch_mlir_lens.system.disk_cache import _MAGIC, FORMAT, DiskCache

SECRET = b"s" * 32
REPLY = {"results": [{"module": "M", "target": "linalg", "ok": True, "ir": "x" * 1000,
                      "diagnostics": [], "stats": {}, "timings": {}}]}
EMPTY = {"files": {}, "libraries": {}}


def key(name: str) -> str:
    """A key as the engine makes them (a sha256)."""
    return hashlib.sha256(name.encode()).hexdigest()


def cache_at(root: Path, max_bytes: int = 1 << 20, **kw: object) -> DiskCache:
    return DiskCache(root, max_bytes, secret=SECRET, validate=stored_reply_ok, **kw)  # type: ignore[arg-type]


def entry_files(root: Path) -> list[Path]:
    return sorted(root.glob("v*/*/*.json.z"))


def entry_of(root: Path, name: str) -> Path:
    (path,) = [p for p in entry_files(root) if p.name.startswith(key(name))]
    return path


def test_a_stored_reply_comes_back_while_its_files_and_libraries_hold(tmp_path: Path) -> None:
    sibling = tmp_path / "layers.py"
    sibling.write_text("FACTOR = 2\n")
    versions = {"fakelib": "1.0"}
    cache = cache_at(tmp_path / "c", version_of=versions.get)
    from torch_mlir_lens.worker.loading.provenance import file_digest

    cache.put(key("k"), REPLY, {"files": {str(sibling): file_digest(str(sibling))},
                                "libraries": {"fakelib": "1.0"}})
    assert cache.get(key("k")) == REPLY
    versions["fakelib"] = "2.0"  # the library was upgraded: not true any more
    assert cache.get(key("k")) is None
    versions["fakelib"] = "1.0"
    assert cache.get(key("k")) == REPLY
    sibling.write_text("FACTOR = 3\n")  # a file the code executed changed
    assert cache.get(key("k")) is None
    sibling.unlink()
    assert cache.get(key("k")) is None
    assert cache.stats.stale == 3 and cache.stats.hits == 2


def test_a_truncated_corrupt_or_foreign_entry_is_a_miss_and_goes(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    for name, damage in (("a", lambda b: b[: len(b) // 2]), ("b", lambda b: b"not zlib"),
                         ("c", lambda b: b"")):
        cache.put(key(name), REPLY, EMPTY)
        path = entry_of(tmp_path, name)
        path.write_bytes(damage(path.read_bytes()))
        assert cache.get(key(name)) is None  # never an error
        assert not path.exists()


def _forge(path: Path, entry_key: str, reply: object, secret: bytes | None) -> None:
    """Write an entry as an attacker would: the layout copied, tagged with `secret`."""
    entry = {"format": FORMAT, "key": entry_key, "written": time.time(), "files": {},
             "libraries": {}, "reply": reply}
    payload = zlib.compress(json.dumps(entry).encode())
    tagged = (cache_key.seal(secret, "replies", entry_key, payload) if secret is not None
              else b"\0" * cache_key.TAG_BYTES + payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_MAGIC + tagged)


def test_a_forged_entry_never_turns_a_failing_module_green(tmp_path: Path) -> None:
    """The attack of a pull request that commits cache entries (the documented CI keeps the
    cache in the checkout): an entry rewritten to `ok: true`, no diagnostics, fake IR."""
    cache = cache_at(tmp_path)
    failing = {"results": [{"module": "M", "target": "tosa", "ok": False, "ir": "",
                            "diagnostics": [{"severity": "error", "message": "aten.erfinv"}],
                            "stats": {}, "timings": {}}]}
    cache.put(key("m"), failing, EMPTY)
    path = entry_of(tmp_path, "m")
    green = {"results": [{**failing["results"][0], "ok": True, "diagnostics": [],
                          "ir": "func.func @main() { return }"}]}
    for secret in (None, b"an attacker's guess of the key!!"):
        _forge(path, key("m"), green, secret)
        assert cache.get(key("m")) is None
        assert not path.exists()  # dropped: the next answer replaces it
    assert cache.stats.rejected == 2


def test_an_entry_copied_or_swapped_under_another_key_is_a_miss(tmp_path: Path) -> None:
    """A block's or reply's bytes swapped into another's entry would show another module."""
    cache = cache_at(tmp_path)
    other = {"results": [{**REPLY["results"][0], "module": "Other", "ir": "other ops"}]}
    cache.put(key("a"), REPLY, EMPTY)
    cache.put(key("b"), other, EMPTY)
    a, b = entry_of(tmp_path, "a"), entry_of(tmp_path, "b")
    b.write_bytes(a.read_bytes())  # a's entry under b's name
    assert cache.get(key("b")) is None
    # The same bytes in a cache of another purpose (a traced block's) do not verify either.
    blocks = DiskCache(tmp_path, 1 << 20, secret=SECRET, purpose="blocks")
    assert blocks.get(key("a")) is None
    # Nor under another user's key.
    assert DiskCache(tmp_path, 1 << 20, secret=b"t" * 32).get(key("a")) is None


@pytest.mark.parametrize("field,value", [("diagnostics", "[]"), ("ir", 5), ("ok", "yes"),
                                         ("map", {"files": ["f"], "rows": [[1, 7, 1, 0]]})])
def test_an_entry_of_the_right_shape_with_the_wrong_types_is_dropped(
        tmp_path: Path, field: str, value: object) -> None:
    """Finding 5: such entries gave internal errors at every start and were never dropped."""
    cache = cache_at(tmp_path)
    bad = {"results": [{**REPLY["results"][0], field: value}]}
    _forge(tmp_path / f"v{FORMAT}" / key("t")[:2] / f"{key('t')}.json.z", key("t"), bad,
           SECRET)  # tagged with the right key: only the schema can tell
    assert cache.get(key("t")) is None
    assert not entry_files(tmp_path)
    cache.put(key("t"), REPLY, EMPTY)  # replaced by the next answer
    assert cache.get(key("t")) == REPLY


def test_without_a_key_nothing_is_kept_or_believed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(cache_key.KEY_ENV, "short")  # refused: guessable
    cache_key.cache_secret.cache_clear()
    try:
        cache = DiskCache(tmp_path, 1 << 20)
        assert not cache.enabled
        cache.put(key("k"), REPLY, EMPTY)
        assert cache.get(key("k")) is None and not entry_files(tmp_path)
    finally:
        cache_key.cache_secret.cache_clear()


def test_the_folder_stays_bounded_least_recently_used_first(tmp_path: Path) -> None:
    probe = cache_at(tmp_path / "probe")
    probe.put(key("probe"), REPLY, EMPTY)
    size = probe.size()  # every entry below has this size
    cache = cache_at(tmp_path, size * 5 + size // 2)  # room for five entries (sizes vary)
    for age, name in enumerate(("old", "k0", "k1", "k2", "k3")):
        cache.put(key(name), REPLY, EMPTY)
        os.utime(entry_of(tmp_path, name), (1000 + age, 1000 + age))  # "old" is the oldest
    assert cache.get(key("old")) is not None  # ...but used now: the most recently used
    cache.put(key("k4"), REPLY, EMPTY)  # six entries: over the bound, down to 80 % (four)
    kept = {p.name.split(".")[0] for p in entry_files(tmp_path)}
    assert kept == {key(n) for n in ("old", "k2", "k3", "k4")}
    assert cache.size() <= size * 4 + size // 10  # sizes differ by a few bytes


def test_eviction_never_follows_a_planted_link(tmp_path: Path) -> None:
    """Finding 7: a symlink planted in the cache folder made eviction delete `*.json.z`
    files outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = []
    for name in ("x", "y"):
        victim = outside / f"{key(name)}.json.z"
        victim.write_bytes(b"precious")
        victims.append(victim)
    root = tmp_path / "cache"
    folder = root / f"v{FORMAT}"
    folder.mkdir(parents=True)
    (folder / "ff").symlink_to(outside, target_is_directory=True)  # a subfolder that is a link
    (folder / "ee").mkdir()
    (folder / "ee" / f"{key('z')}.json.z").symlink_to(victims[1])  # an entry that is a link
    cache = cache_at(root, 1)  # every write evicts everything it may
    cache.put(key("w"), REPLY, EMPTY)
    cache.evict()
    assert all(v.read_bytes() == b"precious" for v in victims)
    assert cache.get(key("z")) is None  # a link is not read either
    assert (folder / "ee" / f"{key('z')}.json.z").is_symlink()  # nor removed: not ours


def test_stale_temporaries_of_killed_writers_are_counted_and_swept(tmp_path: Path) -> None:
    """Finding 8: SIGKILL during a cache write left `*.tmp` files for ever, uncounted."""
    cache = cache_at(tmp_path)
    cache.put(key("a"), REPLY, EMPTY)
    path = entry_of(tmp_path, "a")
    dead = path.parent / f".{path.name}.999999999.0.tmp"  # no process has this pid
    dead.write_bytes(b"z" * 50_000)
    os.utime(dead, (time.time() - 60, time.time() - 60))
    fresh = cache_at(tmp_path)
    assert fresh.size() < 50_000  # swept while counting, so not counted
    assert not dead.exists() and path.exists()


def test_a_fifo_entry_is_a_miss_at_once(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.put(key("a"), REPLY, EMPTY)
    path = entry_of(tmp_path, "a")
    path.unlink()
    os.mkfifo(path)
    started = time.monotonic()
    assert cache.get(key("a")) is None
    assert time.monotonic() - started < 1.0


def _writer(root: str, n: int) -> None:
    cache = DiskCache(root, 1 << 24, secret=SECRET)
    for _ in range(30):
        cache.put(key("shared"), {"writer": n, "blob": "y" * 20000},
                  {"files": {}, "libraries": {}})


def test_writers_in_several_processes_never_leave_a_half_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), n)) for n in range(3)]
    for p in procs:
        p.start()
    reader = DiskCache(tmp_path, 1 << 24, secret=SECRET)
    seen = 0
    while any(p.is_alive() for p in procs):
        got = reader.get(key("shared"))
        if got is not None:
            assert got["blob"] == "y" * 20000 and got["writer"] in (0, 1, 2)
            seen += 1
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert reader.get(key("shared")) is not None
    assert not list(tmp_path.glob("v*/*/.*.tmp"))  # no temporary file left behind


def test_a_link_anywhere_below_the_cache_folder_keeps_the_cache_out(tmp_path: Path) -> None:
    """The probe's finding: a `blocks` link planted in a cache folder (or the cache folder
    itself a link) took the block store's writes and evictions into another cache."""
    victim = tmp_path / "victim"
    (victim / f"v{FORMAT}" / "ab").mkdir(parents=True)
    precious = victim / f"v{FORMAT}" / "ab" / f"{'ab' + key('p')[2:]}.json.z"
    precious.write_bytes(b"x" * 1000)
    planted = tmp_path / "pr-cache"
    planted.mkdir()
    (planted / "blocks").symlink_to(victim, target_is_directory=True)
    blocks = DiskCache(planted / "blocks", 1, secret=SECRET, top=planted)  # evicts all it may
    assert not blocks.enabled
    blocks.put(key("w"), REPLY, EMPTY)
    blocks.evict()
    assert precious.read_bytes() == b"x" * 1000
    assert sorted(p.name for p in (victim / f"v{FORMAT}" / "ab").iterdir()) == [precious.name]
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(victim, target_is_directory=True)
    assert not cache_at(linked_root).enabled


def test_an_oversized_entry_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    """A 500 MB sparse file under an entry's name (a few KB in git) was read whole before its
    tag was checked: memory and a memory-limit failure where a clean cache passes."""
    import resource

    cache = cache_at(tmp_path)
    cache.put(key("a"), REPLY, EMPTY)
    path = entry_of(tmp_path, "a")
    with open(path, "r+b") as f:  # the test's own file
        f.truncate(500_000_000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert cache.get(key("a")) is None
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 100_000, f"{grown_kb} KB read for a refused entry"


@pytest.mark.parametrize("plant", ["pid 1 is alive", "dated in the future"])
def test_planted_temporaries_are_swept_whatever_their_names_say(
        tmp_path: Path, plant: str) -> None:
    """A temporary named for pid 1 (always alive) or dated in the future was never swept, and
    counted towards the bound: every later write was evicted at once."""
    cache = cache_at(tmp_path)
    cache.put(key("a"), REPLY, EMPTY)
    path = entry_of(tmp_path, "a")
    planted = path.parent / f".{path.name}.1.0.tmp"
    planted.write_bytes(b"z" * 50_000)
    when = time.time() + 3600 if plant == "dated in the future" else time.time() - 3600
    os.utime(planted, (when, when))
    assert cache_at(tmp_path).size() < 50_000
    assert not planted.exists()
