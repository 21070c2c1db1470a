"""Write-back: the evaluation span's content, its OTLP encoding, and the sinks that deliver it
(OTLP, Phoenix annotations, the embedded evaluator's results table)."""
