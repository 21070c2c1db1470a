"""Telemetry of the service itself: its metrics (instruments, batched counters, bounded
labels), consumer lag, the health endpoints and the Prometheus exposition."""
