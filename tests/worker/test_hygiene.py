"""Which threads left behind by a job count as the user's (the worker is then replaced)."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest
from tqdm import tqdm

from torch_mlir_lens.worker.loading import hygiene


@pytest.fixture
def baseline() -> Iterator[hygiene.Baseline]:
    yield hygiene.Baseline.take()


def test_library_monitor_thread_is_not_the_users(baseline: hygiene.Baseline) -> None:
    bar = tqdm(total=1, file=io.StringIO())
    try:
        assert any(t.name == "tqdm_monitor" for t in threading.enumerate())
        assert baseline.new_user_threads() == []
    finally:
        bar.close()


def test_thread_running_a_user_function_is_the_users(baseline: hygiene.Baseline) -> None:
    stop = threading.Event()

    def loop() -> None:  # defined in this (non-installed) file: the user's code
        stop.wait(30)

    thread = threading.Thread(target=loop, name="user-loop")
    thread.start()
    try:
        assert baseline.new_user_threads() == ["user-loop"]
    finally:
        stop.set()
        thread.join()


def test_library_thread_busy_in_user_code_is_the_users(baseline: hygiene.Baseline) -> None:
    """A library's pool thread (entry point in the stdlib) running a user callback."""
    from concurrent.futures import ThreadPoolExecutor

    started, stop = threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        stop.wait(30)

    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        future = pool.submit(work)
        assert started.wait(30)
        assert baseline.new_user_threads() == ["pool_0"]
        stop.set()
        future.result(30)


def test_installed_code_is_library() -> None:
    assert hygiene.is_library_file(threading.__file__)
    assert hygiene.is_library_file(tqdm.__init__.__code__.co_filename)
    assert hygiene.is_library_file("<frozen importlib._bootstrap>")
    assert not hygiene.is_library_file(__file__)
