"""The language server: `torch-mlir-lens serve` (stdio; `--tcp` optional), built on pygls 2.

This process never imports torch: user code runs only in the engine's worker, started in
the background at `initialized` when the workspace is trusted.

Protocol surface (camelCase payloads; lines in results are 1-based, LSP positions 0-based):

Standard LSP
    textDocument/codeLens      per module: "Show <Target> IR" (client command
                               `torchMlirLens.showIr` [uri, module, target]) per `lensTargets`,
                               "Export…", "Verify" (then its verdict), and once checked a
                               verdict lens ("Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓"); without
                               example inputs: "Set example inputs"
                               (`torchMlirLens.explainInputs`).
    textDocument/hover         the line's IR at `defaultTarget` + one verdict line per backend
                               ("tosa …": still being checked, after the default target);
                               a line calling into library code also gets a table of the
                               library lines its ops come from (file:line link, code, op
                               count, heaviest first); null for lines that produced no ops.
    textDocument/publishDiagnostics
                               source "torch-mlir"; relatedInformation = the library lines
                               behind an op made in library code; code = aten op, or the error kind
                               ("export-error", "worker-crash", "timeout", "memory-limit",
                               "inputs-missing", ...); data = {module, kind, targets}.
    textDocument/codeAction    quick fix for "inputs-missing": insert the inputs comment.
    workspace/executeCommand   torchMlirLens.exportModule [{uri, module, target?, output?,
                               bytecode?, overwrite?}] → {path, uri, bytes};
                               torchMlirLens.exportRepro [{uri, module, target?, outputDir?}]
                               → {mlirPath, mlirUri, command}; torchMlirLens.explainInputs
                               [{uri, module}] → {message, template}; torchMlirLens.verify
                               [{uri, module, rtol?, atol?}] (verdict → lens + diagnostics).
    workspace/codeLens/refresh sent (when supported) after checks and settings changes.
    notebookDocument/*         didOpen, didChange, didSave, didClose (LSP 3.17, every cell):
                               a notebook is one program of its Python cells; lenses, hover,
                               diagnostics and quick fixes are asked and answered per cell
                               (`vscode-notebook-cell:` URIs); lens arguments name the notebook.
    window/workDoneProgress    "Lowering <Module>" while a request waits for a lowering.
    window/logMessage          all logs (levels kept); window/showMessage for user news.

Custom
    torchMlirLens/lower        request {uri, module? | position?, target? | pipeline?,
                               printAfterAll?} → {module, target, ok, ir, map, frames?,
                               diagnostics, stats, timings, inputsSource, partial, passes?,
                               error?}; frames: the call chains of ops made in library code
                               (docs/contracts.md); partial: ok is false but ir is the target
                               IR with each rejected op kept as a call. Diagnostics: one per
                               cause, with cause, ops, knockOn, and related [{uri, line,
                               message}] (library lines). For a notebook, map/diagnostic
                               entries in its cells carry the cell's URI, the line in the cell
                               and `cell` (1-based number).
    torchMlirLens/modules      request {uri} → {modules: [{name, kind, range, selectionRange,
                               forwardRange, inputs, parents}]}.
    torchMlirLens/verify       request {uri, module} → the worker's verify result.
    torchMlirLens/serverInfo   request {waitForWorker?} → {pid, version, torchImported,
                               torchMlirImported, trusted, status, settings, engine}.
    torchMlirLens/setTrusted   notification client→server {trusted}.
    torchMlirLens/status       notification server→client {state: starting | ready |
                               lowering | error | untrusted, detail?}.

Settings: `initializationOptions` = {trusted, settings: {...}}; `workspace/configuration`
section `torchMlirLens` (pulled at start and on every `workspace/didChangeConfiguration`,
which may also carry `{"trusted": bool}`); see `settings.py`. The workspace's pyproject.toml
`[tool.torch-mlir-lens]` is a last layer over them (`settings.effective_settings`); the
server registers `workspace/didChangeWatchedFiles` for `**/pyproject.toml` (dynamic
registration, when the client supports it) and re-applies settings when one changes.
"""
