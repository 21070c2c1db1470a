#!/usr/bin/env bash
# OpenLIT in its own virtualenv, cached outside the work tree: openlit pins anthropic<1, which
# the project's .venv (anthropic 2.x) cannot hold. Prints the venv's path.
exec "$(dirname "$0")/side_venv.sh" openlit openlit==1.45.0 openai==2.54.0 \
  opentelemetry-sdk==1.45.1 opentelemetry-exporter-otlp-proto-http==1.45.1 typing-extensions
