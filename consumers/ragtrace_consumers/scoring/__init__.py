"""Scoring: assembly of traces, sampling, matching labelled questions, retrieval scores, the
judging stages (groundedness, answer metrics, batch mode) and the one scoring pipeline."""
