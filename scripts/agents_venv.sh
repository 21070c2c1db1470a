#!/usr/bin/env bash
# The agent frameworks the agent dialect tests drive (Pydantic AI, the OpenAI Agents SDK with
# OpenInference's instrumentor, LangGraph with OpenInference's LangChain instrumentor, MLflow
# Tracing), in one virtualenv of their own, cached outside the work tree: they need openai 3.x and
# langchain-core 1.x, which the project's .venv does not hold beside its other dialects. Prints
# the venv's path.
exec "$(dirname "$0")/side_venv.sh" agents \
  "pydantic-ai-slim[openai]==2.68.0" openai==3.60.0 \
  openai-agents==0.24.0 openinference-instrumentation-openai-agents==2.6.0 \
  langgraph==1.2.24 langchain-core==1.8.3 langchain-openai==1.8.1 \
  openinference-instrumentation-langchain==0.1.80 \
  mlflow-tracing==3.17.2 \
  opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2 typing-extensions
