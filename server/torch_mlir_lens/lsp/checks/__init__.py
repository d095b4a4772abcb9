"""The check every feature shares: a module lowered through the engine host, recorded on its
document, turned into diagnostics and published.

- `engine_host.py`: the engine behind the trust gate (the one door to user code);
- `session.py`: the session, a plain object: the state plus the engine host and the pending
  checks (every handler is a function of it);
- `staging.py`: a module's check in two stages (hover, lenses, requests and diagnostics share it);
- `check_triggers.py` → `pending.py` → `document_check.py`: when a document is checked (one
  check under way per document, debounced), and what its check does;
- `finding_records.py`: findings → diagnostic records; `publish.py`: records → LSP diagnostics
  (`library_related.py`: library lines; `cell_positions.py`: notebook cells);
- `state_changes.py`: what follows a change of settings or trust (checks again, lenses);
- `requested_module.py`: the document, module and engine job a request names;
- `rewrite_offers.py`: proven rewrites of culprits; `verify_run.py` runs Verify,
  `verify_view.py` shows its lens and diagnostics; `output_budget.py`: the worker's printed
  output, bounded.
"""
