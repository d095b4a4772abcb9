"""Source-annotated IR: layout on a hand-made result, then on a real lowering of the MLP."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from torch_mlir_lens.cli.annotated_ir import annotate, line_sources
from torch_mlir_lens.protocol.results import IrLineMapping, LowerResult

SOURCE = """class M(nn.Module):
    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y)
"""

IR = """func.func @main(%arg0: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %0 = linalg.matmul ins(%arg0, %w) outs(%e)
  %1 = linalg.generic {a} ins(%0) {
  ^bb0(%in: f32):
    linalg.yield %in : f32
  }
  %2 = linalg.generic {b} ins(%1)
  return %2 : tensor<2x3xf32>
}"""


def _result(path: str) -> LowerResult:
    return LowerResult(
        module="M", target="linalg", ok=True, ir=IR,
        map=[
            IrLineMapping(2, path, 3, 0),
            IrLineMapping(3, path, 3, 0),
            IrLineMapping(7, path, 4, 0),
            IrLineMapping(7, "/elsewhere/caller.py", 9, 1),  # a caller frame: not used
        ],
    )


def test_each_source_line_heads_its_ir(tmp_path: Path) -> None:
    path = str(tmp_path / "m.py")
    text = annotate(SOURCE, _result(path), path=path)
    lines = text.splitlines()
    assert lines[0] == "// M → linalg"
    assert lines[1] == IR.splitlines()[0]  # unmapped header stays unindented, in place
    head3 = lines.index("      3 │         y = self.fc(x)")
    head4 = lines.index("      4 │         return torch.relu(y)")
    assert head3 < head4
    between = lines[head3 + 1:head4]
    assert any("linalg.matmul" in ln for ln in between)
    assert any("linalg.yield" in ln for ln in between)  # a region body stays with its op
    assert all(ln.startswith(" " * 10) for ln in between)
    assert "linalg.generic {b}" in lines[head4 + 1]
    # Every IR line is printed exactly once, in order.
    ir_out = [ln.strip() for ln in lines[1:] if "│" not in ln]
    assert ir_out == [ln.strip() for ln in IR.splitlines()]


def test_frames_in_another_file_name_it(tmp_path: Path) -> None:
    path = str(tmp_path / "m.py")
    other = tmp_path / "blocks.py"
    other.write_text("a = 1\nb = 2\nreturn_line = 3\n")
    res = _result(path)
    res.map = [IrLineMapping(2, str(other), 3, 0), IrLineMapping(2, path, 3, 1)]
    text = annotate(SOURCE, res, path=path)
    assert "blocks.py:3 │ return_line = 3    (called from line 3)" in text


def test_depth_zero_in_main_file_wins() -> None:
    m = [IrLineMapping(5, "/x/other.py", 1, 0), IrLineMapping(5, "/x/main.py", 7, 0)]
    assert line_sources(m, "/x/main.py") == {5: ("/x/main.py", 7)}


def test_real_mlp_annotation(examples_dir: Path) -> None:
    """`lower --annotate` on the MLP: each line of forward, then the Linalg ops it became."""
    mlp = examples_dir / "mlp.py"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "lower", str(mlp), "--module", "MLP",
         "--target", "linalg", "--annotate"],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    source = mlp.read_text().splitlines()
    heads = {i: int(m[1]) for i, ln in enumerate(lines) if (m := re.match(r"\s+(\d+) │", ln))}
    assert heads, proc.stdout[:2000]
    for i, number in heads.items():
        assert lines[i].split("│", 1)[1].strip() == source[number - 1].strip()
    fc1 = next(i for i, ln in enumerate(lines) if "x = F.relu(self.fc1(x))" in ln)
    after = lines[fc1 + 1:]
    block = after[: next((k for k, ln in enumerate(after) if "│" in ln), len(after))]
    assert any("linalg." in ln for ln in block), "\n".join(lines[fc1:fc1 + 20])
    # All three lines of forward show up.
    shown = {source[n - 1].strip() for n in heads.values()}
    assert {"x = F.relu(self.fc1(x))", "x = torch.relu(self.fc2(x))",
            "return self.head(x)"} <= shown
