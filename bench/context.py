"""What every figure gets: the run's configuration and a shared warm server."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.lsp_client import LensClient
from bench.models import WORK

# Settings for figures that must keep the worker idle (static features) or that isolate one
# target's lowering: without "off" the server checks every module of an opened file and a
# lowering covers the diagnosed backends too.
QUIET_SETTINGS: dict[str, Any] = {"diagnostics": "off"}
DEFAULT_SETTINGS: dict[str, Any] = {}  # the product as shipped


@dataclass
class Config:
    """Repeat counts and scope of one benchmark run."""

    quick: bool = False  # fewer repeats, same models
    smoke: bool = False  # MLP / tiny LM only, minimal repeats: proves the harness works
    work: Path = WORK
    python: str = sys.executable
    fig1_repeats: int = 5  # the 20-layer LM
    fig1_small_repeats: int = 25  # the small models: cheap, and their ratios are the noisiest
    hovers: int = 200
    lens_repeats: int = 60
    fig4_repeats: int = 5
    fig5_repeats: int = 9
    fig6_runs: int = 1
    fig7_repeats: int = 5
    models: tuple[str, ...] = ()  # figure 1's models by name; () = all

    @classmethod
    def make(cls, quick: bool = False, smoke: bool = False, work: Path = WORK) -> Config:
        """The full run, a --quick run (repeats cut) or a --smoke run (tiny models, 1-2 repeats)."""
        if smoke:
            return cls(quick=True, smoke=True, work=work, fig1_repeats=2,
                       fig1_small_repeats=2, hovers=20,
                       lens_repeats=10, fig4_repeats=1, fig5_repeats=1, fig6_runs=1,
                       fig7_repeats=1)
        if quick:
            return cls(quick=True, work=work, fig1_repeats=2, fig1_small_repeats=3, hovers=50,
                       lens_repeats=20,
                       fig4_repeats=1, fig5_repeats=2, fig6_runs=1, fig7_repeats=2)
        return cls(work=work)


@dataclass
class Context:
    """Shared state of a run: the config, a warm quiet server, the servers to clean up."""

    config: Config
    _warm: dict[str, LensClient] = field(default_factory=dict)
    _clients: list[LensClient] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return self.config.work

    def log_path(self, name: str) -> Path:
        """A log file in the work directory."""
        self.work.mkdir(parents=True, exist_ok=True)
        return self.work / f"{name}.log"

    async def new_server(
        self, name: str, settings: dict[str, Any] | None = None, trusted: bool = True,
        env: dict[str, str] | None = None, workspace: Path | None = None,
    ) -> LensClient:
        """Start a fresh server (initialized); it is stopped at the end of the run.

        `env`: on top of the harness's (e.g. a persistent cache folder); `workspace`: its
        root (default: the run's work folder)."""
        client = LensClient(workspace or self.work, settings, trusted, self.config.python,
                            self.log_path(name), env)
        self._clients.append(client)
        await client.start()
        return client

    async def warm_server(self, quiet: bool = False) -> LensClient:
        """A server shared by the figures that time single requests.

        Default settings (what users get: a check lowers the default target and the diagnosed
        backends in one export), or with `quiet` diagnostics off (one target per lowering).
        """
        key = "quiet" if quiet else "default"
        if key not in self._warm:
            self._warm[key] = await self.new_server(
                f"server-warm-{key}", QUIET_SETTINGS if quiet else DEFAULT_SETTINGS
            )
        return self._warm[key]

    async def fresh_server(self, name: str, quiet: bool = False) -> LensClient:
        """A fresh server for a figure that measures a process; a shared one in smoke runs.

        Waits until the worker is up (serverInfo answers after it), so its start-up does not
        compete with what the figure measures.
        """
        if self.config.smoke:
            client = await self.warm_server(quiet)
        else:
            client = await self.new_server(name, QUIET_SETTINGS if quiet else DEFAULT_SETTINGS)
        with contextlib.suppress(Exception):
            await client.server_info()
        return client

    async def release(self, client: LensClient) -> None:
        """Stop a server from `fresh_server` / `new_server` (shared warm ones stay)."""
        if client not in self._warm.values():
            await self.stop_server(client)

    async def stop_server(self, client: LensClient) -> None:
        """Stop one server and any of its children left behind (by pid, ours only)."""
        children: list[psutil.Process] = []
        with contextlib.suppress(Exception):
            children = psutil.Process(client.pid).children(recursive=True)
        await client.stop()
        deadline = time.perf_counter() + 5
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.wait(max(0.1, deadline - time.perf_counter()))
            with contextlib.suppress(psutil.Error):
                if child.is_running():
                    child.kill()
        if client in self._clients:
            self._clients.remove(client)
        self._warm = {k: c for k, c in self._warm.items() if c is not client}

    async def close(self) -> None:
        """Stop every server this run started."""
        for client in list(self._clients):
            await self.stop_server(client)


def bump(text: str, k: int) -> str:
    """`text` with a trailing comment that differs per k: a cache miss, same line numbers."""
    return text.rstrip("\n") + f"\n# bench edit {k} {time.time_ns()}\n"


def worker_pid(client: LensClient, info: dict[str, Any] | None = None) -> int | None:
    """The worker's pid: from serverInfo's engine stats, else the server's largest child."""
    engine = (info or {}).get("engine") or {}
    if engine.get("pid"):
        return int(engine["pid"])
    try:
        kids = psutil.Process(client.pid).children(recursive=True)
        return max(kids, key=lambda p: p.memory_info().rss).pid if kids else None
    except psutil.Error:
        return None


async def restarts_of(client: LensClient) -> int:
    """How many times the server's worker has been replaced so far (serverInfo's engine)."""
    info = await client.server_info()
    return int((info.get("engine") or {}).get("restarts", 0))


class BenchError(RuntimeError):
    """The product did not do what the figure needs (so the figure has no number)."""


def check_lower(res: Any, what: str) -> dict[str, Any]:
    """The `torchMlirLens/lower` result as a dict; raise unless it has IR and is ok."""
    if not isinstance(res, dict):
        raise BenchError(f"{what}: unexpected lower result {type(res).__name__}: {res!r:.300}")
    if not res.get("ok") or not res.get("ir"):
        diags = res.get("diagnostics") or []
        msg = "; ".join(str(d.get("message", d))[:200] for d in diags[:3])
        raise BenchError(f"{what}: lowering not ok ({msg or 'no diagnostics'})")
    return res
