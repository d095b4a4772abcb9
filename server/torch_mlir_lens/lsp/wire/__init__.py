"""The wire: lsprotocol- and pygls-level helpers that hold no server state.

Reading frames (`transport.py`), the JSON-RPC protocol and converter (`json_rpc.py`), LSP ↔
project conversions (`convert.py`), the custom requests' answers (`answers.py`), the code
lenses as plain data (`lens_specs.py`), library source lines (`source_text.py`),
work-done progress (`work_done_progress.py`) and what commands and requests share
(`request_io.py`). The lowest layer of `lsp/`: it imports no other.
"""
