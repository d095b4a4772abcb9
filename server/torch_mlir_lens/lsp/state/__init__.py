"""The server's state, one writer each: the session's state (`session.py`: a plain object with
the settings, workspace folders, trust, open documents and the client, changed only through
its methods), the settings' layers (`settings.py`) and per-folder trust (`trust.py`). Above
`lsp/document`, below the checks."""
