"""What a lowering found, editor-neutral (as rust-analyzer's `ide` crate is to its LSP): one
`Finding` type (`finding.py`), made in one place (`make.py`) and worded once (`wording.py`),
with the proven way past it (`proven.py`) and the merge of one cause failing several backends
into one (`merge.py`). The language server (`lsp/checks/finding_records.py`, `publish.py`) and
`check` (`repo_check/`) only render findings. No torch, no LSP types.
"""

from torch_mlir_lens.findings.finding import (
    MODULE_KINDS,
    NODE_KEY,
    WORKER_KINDS,
    Finding,
    Related,
)

__all__ = ["MODULE_KINDS", "NODE_KEY", "WORKER_KINDS", "Finding", "Related"]
