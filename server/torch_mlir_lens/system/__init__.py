"""The operating system's side, torch-free: the process table (`procs.py`), shared by the
engine, which ends workers, and the worker, which ends what user code started."""
