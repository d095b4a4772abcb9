"""Rules every part applies alike, torch-free: the targets and their pipelines
(`targets.py`), a backend's verdict (`verdict.py`), how a rejected op is worded
(`culprits.py`) and the command's exit codes (`exit_codes.py`)."""
