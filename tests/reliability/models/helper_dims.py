"""A sibling module imported by healthy_sibling.py (its folder must be importable)."""

WIDTH = 6
