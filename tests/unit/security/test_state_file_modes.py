"""``serve``'s state (queries, contexts, answers) is readable by its owner only: the directory
0700 and the database with its WAL files 0600, whatever the umask; existing open ones are
tightened (the file, ragtrace's own directory) or warned about (a directory the user chose)."""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.private_files import private_state_file
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.stores.sqlite_traces import SqliteTraceStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the usual umask, under which files were 0644 in 0755
    yield
    os.umask(previous)


def test_new_state_is_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "state.sqlite3"
    with SqliteState(path) as state:
        state.judge_cache.put("k", b"v")
        traces = SqliteTraceStore(path)
        traces.close()
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    files = sorted(p.name for p in path.parent.iterdir())
    assert "state.sqlite3" in files
    for name in files:
        assert _mode(path.parent / name) == 0o600, name


def test_existing_open_file_is_tightened_and_open_directory_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    path = shared / "state.sqlite3"
    SqliteState(path).close()
    os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING):
        SqliteState(path).close()
    assert _mode(path) == 0o600
    assert _mode(shared) == 0o755  # a directory the user chose is never changed
    text = caplog.text
    assert f"state file {path} was 0644: now 0600" in text
    assert f"state directory {shared} is 0755" in text


def test_serve_tightens_its_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("RAGTRACE_STATE", raising=False)
    own = tmp_path / "ragtrace"
    own.mkdir(mode=0o755)  # as an earlier version left it
    (own / "embedded.sqlite3").touch(mode=0o644)
    os.chmod(own / "embedded.sqlite3", 0o644)
    with caplog.at_level(logging.WARNING):
        evaluator = EmbeddedEvaluator(
            ConsumerConfig.defaults().replace(serve={"port": 0, "metrics": False})
        )
    try:
        assert _mode(own) == 0o700
        assert _mode(own / "embedded.sqlite3") == 0o600
        assert f"state directory {own} was 0755: now 0700" in caplog.text
    finally:
        evaluator.stop()


def test_an_open_state_file_keeps_its_locks(tmp_path: Path) -> None:
    """The embedded evaluator opens one state file from two stores; the second store's check
    must not open the file: closing any descriptor of it would drop every POSIX lock the
    process holds on it, the first SQLite connection's included (a serve restarted after
    kill -9 then left claimed traces unfinished)."""
    path = tmp_path / "state.sqlite3"
    private_state_file(path)
    holder = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        private_state_file(path)  # what a second store of the same file does
        probe = (
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "try:\n"
            "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
            "except OSError:\n"
            "    sys.exit(0)\n"
            "sys.exit(1)\n"
        )
        held = subprocess.run([sys.executable, "-c", probe, str(path)], check=False)
        assert held.returncode == 0, "the lock was released by private_state_file"
    finally:
        os.close(holder)
