"""The server's state, one writer each: the session (`session.py`: the pygls server with the
settings, workspace root, trust and open documents, changed only through its methods), the
settings' layers (`settings.py`) and per-folder trust (`trust.py`). Above `lsp/document`,
below the checks."""
