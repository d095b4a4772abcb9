"""What the language server, the worker and the CLI share, typed and torch-free.

- `jobs.py`: the worker's jobs and replies (`parse_job`, `Reply`);
- `framing.py`: the worker pipe's frames, for both ends;
- `programs.py`: which exported program a module job needs (`program_key`);
- `lsp.py`: the custom LSP requests, notifications and commands (client/src/protocol.ts is its
  twin; tests/test_protocol_agreement.py compares them).
"""
