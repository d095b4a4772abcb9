"""Process facts from /proc: a worker's family and the memory it holds, as the guards read them."""

from __future__ import annotations

import subprocess
import sys
import time

from torch_mlir_lens.system.procs import family, family_rss_bytes

# A child that starts a grandchild in a session of its own (as user code may), which touches
# 150 MB and says so; both then wait for their stdin to close.
FAMILY = r"""
import subprocess, sys
grandchild = subprocess.Popen(
    [sys.executable, "-c",
     "import sys; b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096]); "
     "print('touched', flush=True); sys.stdin.read()"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
print(grandchild.stdout.readline().decode().strip(), flush=True)
sys.stdin.read()
grandchild.stdin.close()
grandchild.wait()
"""


def test_family_memory_counts_a_descendant_that_left_the_process_group() -> None:
    child = subprocess.Popen([sys.executable, "-c", FAMILY], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"touched"
        members = {p.pid for p in family(child.pid)}
        assert len(members) == 2, members  # the child and the grandchild, found by a full scan
        deadline = time.monotonic() + 10
        while family_rss_bytes(child.pid) < 150 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert family_rss_bytes(child.pid) >= 150 << 20
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)
