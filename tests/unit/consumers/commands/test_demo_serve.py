"""``ragtrace demo --serve``: the demo's evaluator stays up, its web view's URL printed."""

from __future__ import annotations

import re
import signal
import subprocess
import urllib.request

from tests.unit.consumers.demo_client import CLI, clean_env


def test_demo_serve_prints_the_url_and_keeps_serving_until_sigint() -> None:
    proc = subprocess.Popen(
        [*CLI, "demo", "--serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert proc.stdout is not None
        url = None
        for line in proc.stdout:
            found = re.search(r"Open (http://127\.0\.0\.1:\d+/ui/) ", line)
            if found:
                url = found.group(1)
                break
        assert url is not None, proc.stderr.read() if proc.stderr else ""
        with urllib.request.urlopen(url + "traces?cell=generation_failed", timeout=10) as r:
            page = r.read().decode()
        assert "What does the /v1/exports endpoint return?" in page
        assert "How long are audit logs kept" not in page
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
