"""The bundled demo of ``ragtrace demo``: a tiny documentation corpus (``corpus.jsonl``), its
labelled questions (``labels.jsonl``), the scripted answers (``questions.jsonl``) and a support
bot instrumented with the real decorators (:mod:`ragtrace_consumers.demo.app`)."""
