"""Rules every part applies alike, torch-free: the targets and their pipelines
(`targets.py`), a backend's verdict (`verdict.py`) and how a rejected op is worded
(`culprits.py`)."""
