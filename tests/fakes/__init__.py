"""Wire-level fakes for what cannot run on a test machine (the Anthropic API)."""
