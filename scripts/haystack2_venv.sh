#!/usr/bin/env bash
# haystack-ai 2.x with OpenInference's Haystack instrumentation in its own virtualenv, cached
# outside the work tree: the project's .venv holds haystack-ai 3.x (one major per venv; both
# install as the `haystack` package). Prints the venv's path.
exec "$(dirname "$0")/side_venv.sh" haystack2 haystack-ai==2.31.0 \
  openinference-instrumentation-haystack==0.1.46 opentelemetry-sdk==1.45.1 \
  opentelemetry-exporter-otlp-proto-http==1.45.1 typing-extensions
