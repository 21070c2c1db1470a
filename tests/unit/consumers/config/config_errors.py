"""What loading a bad configuration says: the config tests' one way to provoke a ConfigError."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from ragtrace_consumers.config import ConfigError, load_config

__all__ = ["config_error"]


def config_error(
    tmp_path: Path, body: str, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """The config file written with ``body`` under ``tmp_path``, and the message of the
    :class:`ConfigError` that loading it with ``env`` (default: none) must raise."""
    f = tmp_path / "c.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_config(f, env=dict(env or {}))
    return f, str(err.value)
