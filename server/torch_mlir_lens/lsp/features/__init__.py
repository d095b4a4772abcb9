"""LSP features, one module each, on top of the checks (`lsp/checks/`), the session's state
(`lsp/state/`) and the documents (`lsp/document/`). A feature's handlers are module-level
functions `fn(session, params)`; `server.py`'s one table (`ROUTES`) maps each LSP method and
command to its handler. A few modules are helpers of one feature (`dynamic_fixes.py`,
`rewrite_fixes.py`, `library_hover.py`, `inputs_explained.py`, `project_config.py`)."""
