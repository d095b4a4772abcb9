"""Imported by sentinel_importer.py: importing it at all leaves a sentinel."""

import pathlib

_ = (pathlib.Path(__file__).resolve().parent / "sentinel_sibling_import").write_text("imported")
