"""Real `transformers` architectures (tests/models/hf_zoo.py): tiny configs, nothing downloaded.

They exercise what hand-written modules do not: non-persistent buffers (RoPE's `inv_freq`,
BERT's `position_ids`), library code several frames below the user's line, cumsum and concat in
the compiled code that Verify runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob

ZOO = Path(__file__).resolve().parents[1] / "models" / "hf_zoo.py"
BACKENDS = {"linalg": "linalg.", "tosa": "tosa.", "stablehlo": "stablehlo."}
# Llama, Qwen2 and BERT own non-persistent buffers; GPT-2 and ViT do not.
MODELS = ("TinyGPT2", "TinyLlama", "TinyQwen2", "TinyBert", "TinyViT")


def _main_arity(ir_text: str) -> int:
    """The number of arguments of `func.func @main` in printed IR."""
    match = re.search(r"func\.func @main\((.*?)\)\s*(->|\{)", ir_text)
    assert match, ir_text[:300]
    return len(re.findall(r"%arg\d+\s*:", match.group(1)))


async def test_zoo_lowers_to_every_backend_with_buffers_frozen_in() -> None:
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=240, memory_limit_mb=4000))
    await engine.start()
    failures: list[str] = []
    try:
        for module in MODELS:
            results = await engine.lower(ModuleJob(path=str(ZOO), module=module),
                                         targets=list(BACKENDS))
            for res in results:
                where = f"{module} → {res.target}"
                if not res.ok:
                    failures.append(f"{where}: {[d.message for d in res.diagnostics]}")
                    continue
                if BACKENDS[res.target] not in res.ir or "torch.aten." in res.ir:
                    failures.append(f"{where}: not lowered:\n{res.ir[:300]}")
                # Weights and buffers are literals: `main` takes the one user input only.
                if _main_arity(res.ir) != 1:
                    failures.append(f"{where}: main has dangling arguments")
        # One export per module, every backend from it; the worker kept throughout.
        assert engine.restarts == 0
    finally:
        await engine.stop()
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("module", ["TinyLlama", "TinyBert"])
def test_verify_matches_eager(module: str) -> None:
    """The compiled code (RoPE's concat, the cumsum of position ids) runs and matches eager."""
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "verify", str(ZOO), "--module", module,
         "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    reply = json.loads(proc.stdout)
    assert reply["ok"] and reply["outputs"], reply
    assert all(out["ok"] and out["max_abs_err"] < 1e-4 for out in reply["outputs"]), reply


def test_missing_buffer_is_named_with_its_owner_and_the_users_line() -> None:
    """An import that cannot find a lifted value names it, its class and where it was
    registered, at the user's line that reaches it (here: forced by dropping its value)."""
    import runpy

    import torch

    from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program

    ns = runpy.run_path(str(ZOO))
    program = export_program(ns["TinyLlama"](), (torch.randint(0, 96, (1, 8)),),
                             user_files={str(ZOO)})
    assert "lm.rotary_emb.inv_freq" in program.constants  # non-persistent: not in state_dict
    del program.constants["lm.rotary_emb.inv_freq"]

    res = ProgramLowerer(program, module_name="TinyLlama", user_files={str(ZOO)}).lower("linalg")
    assert not res.ok
    (diag,) = res.diagnostics
    assert diag.kind == "export-error"
    assert "no value for buffer 'lm.rotary_emb.inv_freq' of LlamaRotaryEmbedding" in diag.message
    registered = re.search(r"registered at (.+):(\d+)\)", diag.message)
    assert registered, diag.message
    source = Path(registered.group(1)).read_text().splitlines()[int(registered.group(2)) - 1]
    registration = r"register_buffer\(\s*.inv_freq|self\.inv_freq\s*=\s*nn\.Buffer"
    assert re.search(registration, source), source
    forward_line = next(i for i, text in enumerate(ZOO.read_text().splitlines(), start=1)
                        if "self.lm(input_ids=ids)" in text and i > _class_line("TinyLlama"))
    assert (diag.file, diag.line) == (str(ZOO), forward_line)


def _class_line(name: str) -> int:
    return next(i for i, text in enumerate(ZOO.read_text().splitlines(), start=1)
                if text.startswith(f"class {name}("))


def test_exported_llama_parses_back(tmp_path: Path) -> None:
    """The exported Linalg file (weights included, TMTensor's cumsum in it) parses again."""
    from torch_mlir import ir

    from torch_mlir_lens.worker.lowering import parsing_context

    out = tmp_path / "llama.mlir"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "export", str(ZOO), "--module", "TinyLlama",
         "--target", "linalg", "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = out.read_text()
    assert "tm_tensor." in text and "dense_resource" in text
    module = ir.Module.parse(text, parsing_context())
    assert "linalg.matmul" in str(module) or "linalg.batch_matmul" in str(module)
