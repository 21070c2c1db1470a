"""Benchmarks: each `bench_*.py` runs by path; results go to docs/benchmarks.md."""
