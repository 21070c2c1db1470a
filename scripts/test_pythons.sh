#!/usr/bin/env bash
# The unit tests on every supported Python besides the main virtualenv's (3.11): 3.10, 3.12, 3.13.
#
# Each version gets its own virtualenv (.venv-py3.X, made with uv from the same constraints.txt,
# whose environment markers pin what differs per Python) and runs RAGTRACE_PY_TESTS, a subset of
# tests/unit chosen to fit CI's time (488 tests): the SDK (decorators on sync, async and
# generator functions), the metrics and offline evaluation, the CLI, the layering test and the
# error-root test (which imports every module of both packages). Left out: the judges (their CLI
# tests included) and the service, tests/unit/consumers (the bulk of the time), and the chart, dashboard and Dockerfile checks (they drive
# helm, promtool and hadolint, not Python features; the Grafana SDK has no 3.10 release). Set
# RAGTRACE_PY_TESTS=tests/unit RAGTRACE_PY_IGNORE=--ignore=tests/unit/dashboards for everything.
# The versions run side by side (one pytest process each, so both cores work), their output in
# .venv-py3.X.log. Cost on 2 cores (489 tests a version): 2m02s wall (2m41s CPU) with the
# virtualenvs made, 3m33s on a machine busy with other work; installs take 8-15 s each with a
# warm uv cache, about a minute cold.
#
# Usage: scripts/test_pythons.sh [3.10 3.12 ...]   (default: $RAGTRACE_PYTHONS or 3.10 3.12 3.13)
# A version that cannot be found fails the run; install it with pyenv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
read -r -a versions <<<"${*:-${RAGTRACE_PYTHONS:-3.10 3.12 3.13}}"
read -r -a tests <<<"${RAGTRACE_PY_TESTS:-tests/unit/sdk tests/unit/evaluation tests/unit/cli tests/unit/architecture tests/unit/test_error_root.py}"
# detect-eval's CLI tests kill and resume subprocesses for a minute: the 3.11 suite has them.
# The judges' tests (their CLIs included) are left out as the header says.
judges="tests/unit/evaluation/judges tests/unit/evaluation/test_attribution.py
tests/unit/evaluation/test_calibration.py tests/unit/cli/test_answer.py
tests/unit/cli/test_calibrate_concurrent.py tests/unit/cli/test_groundedness.py
tests/unit/cli/test_groundedness_batch.py tests/unit/cli/test_judge_args.py"
read -r -a ignore <<<"${RAGTRACE_PY_IGNORE:---ignore=tests/unit/cli/test_detect_eval.py $(printf -- ' --ignore=%s' $judges)}"
UV_VERSION="0.13.9"

log() { printf 'test-pythons: %s\n' "$*" >&2; }
die() { printf '\ntest-pythons: ERROR: %s\n\n' "$*" >&2; exit 1; }

find_python() {   # find_python 3.X: the newest pyenv 3.X.y, else python3.X on PATH
    local v=$1 root found=""
    if command -v pyenv >/dev/null; then
        root="$(pyenv root)"
        found="$(ls -d "$root"/versions/"$v".*/bin/python 2>/dev/null | sort -V | tail -1 || true)"
    fi
    [ -n "$found" ] || found="$(command -v "python$v" || true)"
    [ -n "$found" ] || die "Python $v not found (pyenv install $v, or put python$v on PATH)"
    printf '%s\n' "$found"
}

uv_bin() {   # uv from PATH, else installed from PyPI into the main virtualenv
    if command -v uv >/dev/null; then command -v uv; return; fi
    [ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q "uv==$UV_VERSION" >&2
    printf '%s\n' "$ROOT/.venv/bin/uv"
}

run_one() {   # run_one 3.X: install and test one version; its output goes to .venv-py3.X.log
    local v=$1 py venv start
    py="$(find_python "$v")"
    venv="$ROOT/.venv-py$v"
    start=$SECONDS
    [ -x "$venv/bin/python" ] || "$UV" venv -q -p "$py" "$venv"
    "$UV" pip install -q -p "$venv/bin/python" -c constraints.txt -e '.[dev]' -e './consumers[dialects]'
    log "Python $("$venv/bin/python" -V 2>&1 | cut -d' ' -f2): installed in $((SECONDS - start)) s"
    start=$SECONDS
    local rc=0
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "${ignore[@]}" "${tests[@]}" || rc=$?
    log "Python $v: tests took $((SECONDS - start)) s (exit $rc)"
    return $rc
}

UV="$(uv_bin)"
# Each pytest is one process: running the versions side by side uses both cores.
pids=()
for v in "${versions[@]}"; do
    run_one "$v" >"$ROOT/.venv-py$v.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!versions[@]}"; do
    v=${versions[$i]}
    if wait "${pids[$i]}"; then rc=0; else rc=$?; status=1; fi
    printf '\n=== Python %s (exit %s) ===\n' "$v" "$rc"
    tail -n 15 "$ROOT/.venv-py$v.log"
done
exit $status
