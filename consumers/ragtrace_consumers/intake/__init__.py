"""Intake: spans in. Decoding OTLP payloads, admission (the sampling decided at decode), the
OTLP/HTTP receiver of ``ragtrace serve`` and the forwarding of the app's other signals."""
