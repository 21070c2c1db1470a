#!/usr/bin/env bash
# Arize Phoenix (the real `phoenix serve`) in its own virtualenv, cached outside the work tree:
# it is heavy and its pins must not touch the project's .venv. Prints the venv's path.
exec "$(dirname "$0")/side_venv.sh" phoenix "arize-phoenix==${RAGTRACE_PHOENIX_VERSION:-20.26.1}"
