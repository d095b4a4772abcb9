"""The language server: `torch-mlir-lens serve` (stdio; `--tcp` optional), built on pygls 2.

This process never imports torch: user code runs only in the engine's worker, started in
the background at `initialized` when the workspace is trusted.

Inside, layers import only the ones before them (`tests/test_lsp_layers.py`): `wire/` (no
server state; the `Client` the session talks to the editor through) → `document/` → `state/`
(the session's state) → `checks/` (the session itself, the check every feature shares, and
the engine host) → `features/` (one LSP feature a module, its handlers functions of the
session) → `server.py`, whose one table maps each method to its handler; `front.py` answers
the start-up before pygls loads.

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
    workspace/executeCommand   torchMlirLens.exportModule, .exportRepro, .explainInputs,
                               .verify: one argument object each, typed in `protocol.lsp`
                               (`COMMANDS`); verify's verdict → lens + diagnostics.
    workspace/codeLens/refresh sent (when supported) after checks and settings changes.
    notebookDocument/*         didOpen, didChange, didSave, didClose (LSP 3.17, every cell):
                               a notebook is one program of its Python cells; lenses, hover,
                               diagnostics and quick fixes are asked and answered per cell
                               (`vscode-notebook-cell:` URIs); lens arguments name the notebook.
    window/workDoneProgress    "Lowering <Module>" while a request waits for a lowering.
    window/logMessage          all logs (levels kept); window/showMessage for user news.

Custom requests and notifications (`torchMlirLens/lower`, `/modules`, `/verify`,
`/serverInfo`; `/status` server→client, `/setTrusted` client→server): their params and results
are the typed classes of `torch_mlir_lens.protocol.lsp` (the client's twin is
client/src/protocol.ts); the converter structures them (`lsp/wire/json_rpc.py`).

Trust: untrusted until the client says otherwise (`initializationOptions.trusted`, the
`/setTrusted` notification or the `torchMlirLens.setTrusted` command); see `state/trust.py`.

Settings: `initializationOptions` = {trusted, settings: {...}}; `workspace/configuration`
section `torchMlirLens` (pulled at start and on every `workspace/didChangeConfiguration`,
which never changes trust); a client that cannot be asked gets the settings
it pushed last in `workspace/didChangeConfiguration`; see `state/settings.py`. The workspace's
pyproject.toml `[tool.torch-mlir-lens]` is a last layer over them
(`settings.effective_settings`); the server registers `workspace/didChangeWatchedFiles`
for `**/pyproject.toml` (dynamic registration, when the client supports it) and re-applies
settings when one changes.
"""
