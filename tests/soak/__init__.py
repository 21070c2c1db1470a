"""A randomized fault soak of the whole online pipeline (issue 23).

The short variant runs in ``make test`` (tests/soak/test_soak.py, fixed seed); the long one on
demand: ``python -m tests.soak --minutes 20 --rate 50 --seed N`` (see ``--help``). A run prints
its seed and schedule first, so a failing run is replayed with the same arguments.
"""
