"""LSP features, one module each, on top of the checks (`lsp/checks/`), the session
(`lsp/state/`) and the documents (`lsp/document/`); `server.py` registers them. A feature's
`register(server)` adds its handlers; a few modules are helpers of one feature
(`dynamic_fixes.py`, `rewrite_fixes.py`, `library_hover.py`, `inputs_explained.py`,
`project_config.py`)."""
