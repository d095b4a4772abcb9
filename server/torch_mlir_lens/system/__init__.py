"""The operating system's side, torch-free, shared by every process of the product:

    procs.py         the process table: the engine ends workers, the worker what user code started
    safe_path.py     `sys.path` without the working directory, before anything is imported
    atomic_write.py  a file replaced whole or not at all
    disk_cache.py    entries kept on disk, each valid while the files and libraries it names are
    environment.py   the interpreter, torch, torch-mlir and this package's build, as one key

The engine keeps lowering replies in a `DiskCache`, the worker its traced blocks.
"""
