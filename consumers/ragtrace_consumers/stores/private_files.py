"""The embedded evaluator's state file holds queries, contexts and answers: only its owner reads it.

:func:`private_state_file` runs before SQLite opens the file: a missing directory is created
0700, a missing file is created 0600 (SQLite gives its ``-wal`` and ``-shm`` files the database
file's mode, so they follow), and an existing file, ``-wal`` or ``-shm`` that others can read is
tightened to 0600 with a warning. An existing directory open to others is tightened to 0700
only when ``tighten_directory`` (the default state directory, which is ragtrace's own);
otherwise it may be shared (a project directory, ``/tmp``) and is warned about, never changed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from pathlib import Path

__all__ = ["DIRECTORY_MODE", "FILE_MODE", "private_state_file"]

_log = logging.getLogger(__name__)

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
_OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO
_warned: set[str] = set()
_lock = threading.Lock()


def private_state_file(path: str | Path, *, tighten_directory: bool = False) -> None:
    """Make ``path`` (a SQLite database file; ``":memory:"`` is left alone) private to its
    owner, as the module docstring says. Raises ``OSError`` when the directory or file cannot
    be created."""
    if str(path) == ":memory:":
        return
    file = Path(path)
    directory = file.parent
    missing = []
    for parent in (directory, *directory.parents):
        if parent.exists():
            break
        missing.append(parent)
    for created in reversed(missing):
        created.mkdir(mode=DIRECTORY_MODE, exist_ok=True)
        os.chmod(created, DIRECTORY_MODE)  # mkdir's mode is reduced by the umask only
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & _OPEN_TO_OTHERS and not missing:
        if tighten_directory:
            os.chmod(directory, DIRECTORY_MODE)
            _warn_once(directory, f"state directory {directory} was {mode:04o}: now 0700")
        else:
            _warn_once(
                directory,
                f"state directory {directory} is {mode:04o} (others may list it); the state "
                "file in it is kept 0600, consider chmod 700 on the directory",
            )
    # Created only when missing, never opened when present: closing any descriptor of a
    # database file drops every POSIX lock this process holds on it, including those of a
    # SQLite connection already open on it (another store of the same state file).
    with contextlib.suppress(FileExistsError):
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for one in (file, Path(f"{file}-wal"), Path(f"{file}-shm")):
        try:
            mode = stat.S_IMODE(one.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & _OPEN_TO_OTHERS:
            os.chmod(one, FILE_MODE)
            _warn_once(one, f"state file {one} was {mode:04o}: now 0600 (it holds trace content)")


def _warn_once(path: Path, message: str) -> None:
    with _lock:
        if str(path) in _warned:
            return
        _warned.add(str(path))
    _log.warning("%s", message)
