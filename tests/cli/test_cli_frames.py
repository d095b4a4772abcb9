"""`lower --annotate --frames user|all` and `lower --json`'s chains, on a wrapper around real
`transformers` code (Idefics3's vision embeddings; tiny config, nothing downloaded), run as a
real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TIMEOUT = 300  # one CLI run spawns a worker that imports torch: slow on a busy machine
WRAPPERS = Path(__file__).resolve().parents[1] / "models" / "library_wrappers.py"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args],
                          capture_output=True, text=True, timeout=TIMEOUT)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), start=1) if needle in t)


def test_annotate_all_frames_prints_library_lines() -> None:
    proc = run_cli("lower", str(WRAPPERS), "--module", "PatchEmbed", "--annotate",
                   "--frames", "all")
    assert proc.returncode == 0, proc.stderr[-2000:]
    call = line_of(WRAPPERS, "return self.embed(pixels, mask)")
    headers = [ln for ln in proc.stdout.splitlines() if "│" in ln]
    library = [ln for ln in headers if ln.split("│")[0].strip().startswith("modeling_idefics3.py:")]
    assert library, headers[:5]
    assert all(ln.endswith(f"← line {call}") for ln in library)
    assert any("torch.bucketize(fractional_coords_h" in ln for ln in library)


def test_bad_frames_value_is_a_usage_error() -> None:
    proc = run_cli("lower", str(WRAPPERS), "--module", "PatchEmbed", "--annotate",
                   "--frames", "some")
    assert proc.returncode == 2 and "--frames" in proc.stderr and "Traceback" not in proc.stderr


def test_frames_without_annotate_is_a_usage_error() -> None:
    proc = run_cli("lower", str(WRAPPERS), "--module", "PatchEmbed", "--frames", "all")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--annotate" in proc.stderr


def test_json_map_gives_the_chain() -> None:
    proc = run_cli("lower", str(WRAPPERS), "--module", "PatchEmbed", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    call = line_of(WRAPPERS, "return self.embed(pixels, mask)")
    chained = [m for m in data["map"] if "chain" in m]
    assert chained and all(m["line"] == call and m["depth"] == 0 for m in chained)
    for m in chained:
        *inner, outer = m["chain"]
        assert outer == {"file": m["file"], "line": call, "library": False}
        assert inner and all(f["library"] for f in inner)
        assert {os.path.basename(f["file"]) for f in inner} == {"modeling_idefics3.py"}
