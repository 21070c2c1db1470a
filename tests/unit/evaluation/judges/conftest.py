"""Fixtures of the judge tests: ``backend`` (every model-judge backend in turn) and ``aws_env``
(see :mod:`tests.unit.evaluation.judges.backends`)."""

from tests.unit.evaluation.judges.backends import aws_env, backend

__all__ = ["aws_env", "backend"]
