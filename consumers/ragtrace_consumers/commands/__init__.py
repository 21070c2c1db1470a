"""The service's ``ragtrace`` subcommands, registered through the ``ragtrace.commands`` entry
points (``consumers/pyproject.toml``); each module exposes ``register(subparsers) -> None``."""
