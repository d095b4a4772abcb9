"""The lowerer a job's target uses: the program as exported, or with the rewrites asked for.

    requested(job, text)                 → [RewriteSpec]: the module's `rewrites=` comment,
                                           then the job's own (command line, project)
    Variants(lowerer)
        .for_names(names)                → (ProgramLowerer, names used): built once per set
        .for_target(specs, target, auto) → the same for what `target` is asked to lower with;
                                           `auto` proves the candidates first (offers.py)

A name no rewrite has, or a `rewrites=` the rules cannot read, is a bad-inputs error at the
comment's line (or on the module for the command line's). Pins (`pin.<tensor>`, rewrites/
pins.py) and the export specialised to the example (`export.specialize`, rewrites/
specialize.py) act at export, before any program: the lowerers here leave them out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.protocol.rewrite_results import RewriteOffer, at_export
from torch_mlir_lens.rules.rewrite_specs import AUTO, RewriteSpec, names_for, parse_specs
from torch_mlir_lens.worker.rewrites import apply
from torch_mlir_lens.worker.rewrites.candidates import by_name
from torch_mlir_lens.worker.rewrites.table import Rewrite


def written_keys(path: str, text: str, module: str) -> dict[str, str]:
    """The keys of the module's `# torch-mlir-lens:` comment as written (inputs, init, ...)."""
    from torch_mlir_lens.discovery import find_modules

    for info in find_modules(text, path):
        if info.name == module and info.annotation is not None:
            ann = info.annotation
            return {k: v for k in ("inputs", "init", "dynamic", "rewrites")
                    if (v := getattr(ann, k)) is not None}
    return {}


def _comment(path: str, text: str, module: str) -> tuple[str | None, int | None]:
    """The module's `rewrites=` value and its line, when its comment has one."""
    from torch_mlir_lens.discovery import find_modules

    for info in find_modules(text, path):
        if info.name == module and info.annotation is not None:
            return info.annotation.rewrites, info.annotation.key_lines.get("rewrites")
    return None, None


def requested(path: str, text: str, module: str, extra: list[str]) -> list[RewriteSpec]:
    """What the module asks to be lowered with: its comment's items, then `extra`."""
    if not extra and "rewrites" not in text:  # no comment can ask: no parse of the file
        return []
    value, line = _comment(path, text, module)
    try:
        specs = parse_specs(value)
        written = list(specs)
    except ValueError as exc:
        raise LensError(ErrorKind.BAD_INPUTS, f"`rewrites=` of the `# torch-mlir-lens:` "
                        f"comment: {exc}", file=path, line=line) from exc
    try:
        more = parse_specs(extra)
    except ValueError as exc:
        raise LensError(ErrorKind.BAD_REQUEST, f"--rewrites: {exc}") from exc
    for spec in more:
        if spec not in specs:
            specs.append(spec)
    for spec in specs:
        if spec.name != AUTO and not at_export(spec.name) and by_name(spec.name) is None:
            from torch_mlir_lens.worker.rewrites.library import LIBRARY

            where = (path, line) if spec in written else (None, None)
            raise LensError(ErrorKind.BAD_INPUTS,
                            f"no rewrite is named `{spec.name}` (the library has "
                            f"{', '.join(sorted(LIBRARY))}, and torch's own as "
                            "`decomp.<op>`, `refs.<op>`)", file=where[0], line=where[1])
    return specs


class Variants:
    """One exported program's lowerers with rewrites, each set of names built once."""

    def __init__(self, lowerer: Any) -> None:
        self.base = lowerer
        self._built: dict[tuple[str, ...], tuple[Any, list[str]]] = {}
        self.offers: dict[str, list[RewriteOffer]] = {}  # target → proven (rewriting.py)
        self.prover: Any = None  # proof.Prover on the base program, once one is needed

    def for_names(self, names: list[str]) -> tuple[Any, list[str]]:
        """The lowerer of the program decomposed with these rewrites, and those that made
        some op (an empty list gives the base lowerer)."""
        key = tuple(sorted(n for n in set(names) if not at_export(n)))  # at export
        if not key:
            return self.base, []
        if key not in self._built:
            from torch_mlir_lens.worker.lowering import ProgramLowerer

            rewrites: list[Rewrite] = [r for r in map(by_name, key) if r is not None]
            try:
                program, used = apply.rewritten(self.base.program, rewrites)
            except Exception as exc:  # a rewrite that cannot be traced in this program
                raise LensError(ErrorKind.EXPORT_ERROR,
                                f"the rewrites {', '.join(key)} cannot be applied: "
                                f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
            base = self.base
            lowerer = ProgramLowerer(program, module_name=base.module_name,
                                     user_files=base.users.given, module_file=base.module_file,
                                     module_line=base.module_line)
            self._built[key] = (lowerer, sorted(used))
        return self._built[key]

    def for_target(self, specs: list[RewriteSpec], target: str,
                   proven: Callable[[str], list[str]] | None = None) -> tuple[Any, list[str]]:
        """The lowerer `target` uses: with its named rewrites, and with `auto` those
        `proven(target)` offers when the program does not lower as it is."""
        names = names_for(specs, target)
        if AUTO in names:
            names.remove(AUTO)
            if proven is not None and not self.for_names(names)[0].lower(target).ok:
                names += [n for n in proven(target) if n not in names]
        return self.for_names(names)


__all__ = ["Variants", "requested", "written_keys"]
