"""Fixtures of the judge tests: ``backend`` (every model-judge backend in turn) and ``aws_env``
(see :mod:`tests.unit.judges.backends`)."""

from tests.unit.judges.backends import aws_env, backend

__all__ = ["aws_env", "backend"]
