"""``ragtrace serve`` as the soak benchmarks run it: a subprocess on a free loopback port with
the lexical judge and no metrics endpoint, and its resident memory."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

__all__ = ["RAGTRACE", "free_port", "rss_kib", "start_serve"]

RAGTRACE = str(Path(sys.executable).with_name("ragtrace"))


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int:
    """Resident memory (``VmRSS``) of process ``pid`` in KiB; 0 once it is gone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def start_serve(
    port: int,
    options: list[str],
    *,
    env: dict[str, str],
    log: Path,
    stdout: int | IO[bytes] | None = None,
    cwd: Path | None = None,
    timeout_s: float = 60.0,
) -> subprocess.Popen[bytes]:
    """Start ``ragtrace serve --port port --no-metrics --judge lexical *options`` and return it
    once it accepts connections. Its stderr goes to ``log`` (appended), its stdout to
    ``stdout`` (default: ``log`` too). Raises ``RuntimeError`` with the log's tail when it
    exits or does not listen within ``timeout_s``."""
    cmd = [RAGTRACE, "serve", "--port", str(port), "--no-metrics", "--judge", "lexical", *options]
    with log.open("ab") as err:
        out = err if stdout is None else stdout
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"serve did not start:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.1)
