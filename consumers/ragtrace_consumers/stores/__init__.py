"""The stores behind the seams of :mod:`ragtrace_consumers.model`: in process memory, Redis
(shared by replicas) and SQLite (the embedded evaluator), with one span encoding."""
