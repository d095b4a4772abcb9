"""Reliability and security suite: faults, fuzzed edits, load, protocol abuse, data safety."""
