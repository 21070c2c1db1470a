"""Running one service process: free ports, logs in its own directory, readiness, teardown.

A :class:`ServiceProcess` starts its command in a new process group (so teardown reaches every
child, e.g. a JVM's helpers), sends stdout and stderr to ``<workdir>/<name>.log``, waits until a
readiness check passes (or fails with the log's tail in the message if the process exits or the
timeout runs out), and on :meth:`stop` sends SIGTERM to the group, then SIGKILL after a grace
period.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

__all__ = [
    "ServiceError",
    "ServiceProcess",
    "free_port",
    "group_alive",
    "http_ok",
    "stop_group",
    "tcp_open",
    "wait_until",
]


class ServiceError(RuntimeError):
    """A service failed to start or to become ready; the message carries its log's tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True if GET url answers 2xx."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    """Poll ``check`` until it is true; raise TimeoutError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def group_alive(pgid: int) -> bool:
    """True if a process of group ``pgid`` is still running (zombies, which an init that does
    not reap may leave behind, count as gone)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: ask the kernel, zombies included
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def stop_group(pgid: int, grace_s: float = 10.0) -> bool:
    """Stop a process group started earlier (e.g. by another invocation of the dev stack):
    SIGTERM, then SIGKILL after ``grace_s``. Returns False if it was not running."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return True


class ServiceProcess:
    """One long-running service process with its log file and workdir.

    By default the service dies with the process that started it (``die_with_parent``, via
    ``setpriv --pdeathsig``; start services from the main thread); the dev stack, whose services
    outlive the command that starts them, turns that off."""

    die_with_parent: ClassVar[bool] = True

    def __init__(
        self,
        name: str,
        argv: Sequence[str | os.PathLike[str]],
        workdir: Path,
        env: Mapping[str, str] | None = None,
        stop_grace_s: float = 10.0,
    ) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self.env = dict(os.environ if env is None else env)
        self.stop_grace_s = stop_grace_s
        self.started_at: float | None = None
        self.ready_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> ServiceProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = self.argv
        setpriv = shutil.which("setpriv")
        if self.die_with_parent and setpriv:
            # SIGTERM when the starting thread's process dies, even by SIGKILL: a test session
            # killed outright leaves no broker behind (util-linux; Linux only).
            argv = [setpriv, "--pdeathsig", "TERM", "--", *argv]
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                argv,
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() kills the whole tree
            )
        self.started_at = time.monotonic()
        return self

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait_ready(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait for ``check``; on exit or timeout stop the process and raise ServiceError."""

        def ready_or_dead() -> bool:
            if not self.running():
                raise ServiceError(self._failure(f"exited with code {self._returncode()}"))
            return check()

        try:
            wait_until(ready_or_dead, timeout, f"{self.name} ({what})")
        except TimeoutError as exc:
            self.stop()
            raise ServiceError(self._failure(str(exc))) from None
        except ServiceError:
            self.stop()
            raise
        assert self.started_at is not None
        self.ready_s = time.monotonic() - self.started_at

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it after the grace period. Idempotent."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(self.stop_grace_s)
            except subprocess.TimeoutExpired:
                self._signal_group(proc.pid, signal.SIGKILL)
                proc.wait(5)
        # Children that outlived their leader still share the group id.
        self._signal_group(proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the process group at once (a crash: nothing is flushed). Idempotent."""
        proc = self._proc
        if proc is not None:
            self._signal_group(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    def _failure(self, why: str) -> str:
        cmd = " ".join(self.argv)
        return (
            f"{self.name} failed: {why}\n  command: {cmd}\n  log: {self.log_path}\n"
            f"--- last lines of {self.log_path.name} ---\n{self.log_tail()}"
        )

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)

    def __repr__(self) -> str:
        return f"ServiceProcess({self.name!r}, pid={self.pid}, log={str(self.log_path)!r})"
