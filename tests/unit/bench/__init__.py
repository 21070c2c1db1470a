"""Tests of the benchmark scripts' own logic (converters, held-out splitting, statistics)."""
