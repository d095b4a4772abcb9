"""Modules that misbehave in every way a worker must survive (tests/test_engine.py).

Each misbehaves only when instantiated or run, never at import: the file as a whole loads.
Allocations are bounded so a broken memory limit fails a test instead of the machine.
"""

import ctypes
import os
import subprocess
import sys

import torch
from torch import nn

MB = 2**20


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Healthy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Segfault(nn.Module):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return x


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HardExit(nn.Module):
    def forward(self, x):
        os._exit(3)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HangInit(nn.Module):
    def __init__(self):
        super().__init__()
        while True:
            pass


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HangForward(nn.Module):
    def forward(self, x):
        while True:
            x = x + 0
        return x


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class MemoryHog(nn.Module):
    def __init__(self, limit_mb=6144):
        super().__init__()
        hoard = []
        while len(hoard) * 64 < limit_mb:
            hoard.append(b"x" * (64 * MB))  # written, so resident
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Loud(nn.Module):
    """Prints 100 MB to stdout and 100 MB to stderr, half through Python, half to the raw fds."""

    def __init__(self):
        super().__init__()
        line = "x" * (MB - 1) + "\n"
        for _ in range(50):
            sys.stdout.write(line)
            sys.stderr.write(line)
        raw = line.encode()
        for _ in range(50):
            os.write(1, raw)
            os.write(2, raw)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Spawner(nn.Module):
    """Starts two sleepers that outlive the call: one in the worker's group, one setsid'd."""

    def __init__(self):
        super().__init__()
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        self.child_pids = [
            subprocess.Popen(sleeper).pid,
            subprocess.Popen(sleeper, start_new_session=True).pid,
        ]
        pidfile = os.environ.get("FAULTY_PIDFILE")
        if pidfile:
            with open(pidfile, "w") as f:
                f.write(" ".join(map(str, self.child_pids)))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


def _beat(path):
    import time

    n = 0
    while True:
        n += 1
        with open(path, "w") as f:
            f.write(str(n))
        time.sleep(0.05)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Threads(nn.Module):
    """Starts a non-daemon thread that never ends (writes a heartbeat to FAULTY_BEAT)."""

    def __init__(self):
        super().__init__()
        import threading

        beat = os.environ.get("FAULTY_BEAT", os.devnull)
        threading.Thread(target=_beat, args=(beat,), daemon=False).start()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class LibraryThread(nn.Module):
    """Keeps a tqdm progress bar, whose monitor thread lives on after the job (as the bars of
    torch.export do); writes the names of the live threads to FAULTY_THREADS."""

    def __init__(self):
        super().__init__()
        import io
        import threading

        from tqdm import tqdm

        self.bar = tqdm(total=1, file=io.StringIO())
        names = [t.name for t in threading.enumerate()]
        with open(os.environ.get("FAULTY_THREADS", os.devnull), "w") as f:
            f.write("\n".join(names))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


def _sabotaged(*args, **kwargs):
    raise RuntimeError("sabotaged by faulty.py")


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Patcher(nn.Module):
    """Changes the worker's global state: cwd, sys.path, and torch itself."""

    def __init__(self):
        super().__init__()
        import tempfile

        os.chdir(tempfile.gettempdir())
        sys.path[:] = ["/nonexistent"]
        torch.export.export = _sabotaged
        torch.nn.Linear.forward = _sabotaged
        torch.relu = _sabotaged
        torch.nn.functional.relu = _sabotaged

    def forward(self, x):
        return x * 2
