"""The per-user key that authenticates the caches: created private on first use, used only
while it stays this user's own, and replaceable by a CI secret."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from torch_mlir_lens.system import cache_key


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(cache_key.KEY_ENV, raising=False)
    cache_key.cache_secret.cache_clear()
    yield tmp_path / "config"
    cache_key.cache_secret.cache_clear()


def test_the_key_is_made_once_private_and_then_reused(config_home: Path) -> None:
    secret = cache_key.cache_secret()
    path = cache_key.key_path()
    assert secret is not None and path.is_relative_to(config_home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cache_key.cache_secret.cache_clear()
    assert cache_key.cache_secret() == secret  # the next process reads the same key


@pytest.mark.parametrize("damage", ["readable by others", "a link", "too short",
                                    "a hard link", "a folder others may write in"])
def test_a_key_that_is_not_the_users_own_turns_the_cache_off(
        config_home: Path, tmp_path: Path, damage: str) -> None:
    path = cache_key.key_path()
    path.parent.mkdir(parents=True)
    if damage == "readable by others":
        path.write_bytes(os.urandom(32))
        path.chmod(0o644)
    elif damage == "a link":
        target = tmp_path / "someone-elses-key"
        target.write_bytes(os.urandom(32))
        target.chmod(0o600)
        path.symlink_to(target)
    elif damage == "a hard link":
        target = tmp_path / "another-file-of-the-user"
        target.write_bytes(os.urandom(32))
        target.chmod(0o600)
        os.link(target, path)
    elif damage == "a folder others may write in":
        path.write_bytes(os.urandom(32))
        path.chmod(0o600)
        path.parent.chmod(0o777)
    else:
        path.write_bytes(b"k")
        path.chmod(0o600)
    assert cache_key.cache_secret() is None


def test_a_secret_from_the_environment_wins_and_empty_means_none_given(
        config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_key.KEY_ENV, "a long random CI secret, 1234")
    given = cache_key.cache_secret()
    assert given is not None and not cache_key.key_path().exists()
    cache_key.cache_secret.cache_clear()
    cache_key.cache_secret.cache_clear()
    monkeypatch.setenv(cache_key.KEY_ENV, " " * 20)  # blank: refused, no cache at all
    assert cache_key.cache_secret() is None
    cache_key.cache_secret.cache_clear()
    monkeypatch.setenv(cache_key.KEY_ENV, "")  # a fork's pull request: no secret
    from_file = cache_key.cache_secret()
    assert from_file is not None and from_file != given


def test_a_tag_binds_the_bytes_to_their_name_and_purpose() -> None:
    secret = b"s" * 32
    sealed = cache_key.seal(secret, "replies", "k1", b"payload")
    assert cache_key.unseal(secret, "replies", "k1", sealed) == b"payload"
    assert cache_key.unseal(secret, "replies", "k2", sealed) is None
    assert cache_key.unseal(secret, "blocks", "k1", sealed) is None
    assert cache_key.unseal(b"t" * 32, "replies", "k1", sealed) is None
    assert cache_key.unseal(secret, "replies", "k1", sealed[:-1] + b"!") is None


def test_the_worker_never_sees_a_secret_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    """The code under check runs in the worker: a CI secret stays with the engine."""
    from torch_mlir_lens.engine.worker_client.spawn import worker_env

    monkeypatch.setenv(cache_key.KEY_ENV, "a long random CI secret, 1234")
    assert cache_key.KEY_ENV not in worker_env(None)
    assert cache_key.KEY_ENV not in worker_env({cache_key.KEY_ENV: "x" * 20, "A": "1"})
