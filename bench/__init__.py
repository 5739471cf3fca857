"""Benchmarks: `python -m bench` runs them all (see bench/run.py)."""
