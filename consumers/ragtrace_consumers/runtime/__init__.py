"""Runtime: the wiring root, the Kafka service and its runner, the embedded evaluator, start-up
against dependencies and the one retry owner."""
