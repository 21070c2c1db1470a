"""Kafka consumers and the embedded evaluator: assemble traces, score them, write scores back."""
