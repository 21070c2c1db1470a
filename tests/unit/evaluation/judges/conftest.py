"""Fixtures of the judge tests: ``api`` (the fake, answering what a test enqueues), ``backend``
(every model-judge backend in turn) and ``aws_env`` (see
:mod:`tests.unit.evaluation.judges.backends`)."""

from tests.unit.evaluation.judges.backends import api, aws_env, backend

__all__ = ["api", "aws_env", "backend"]
