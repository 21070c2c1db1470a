"""The seed documents' audit-log example: the answer citing c-9930 and the three claims a judge
splits it into, each entailed with its verbatim quote."""

from __future__ import annotations

__all__ = ["AUDIT_ANSWER", "AUDIT_CLAIMS"]

AUDIT_ANSWER = (
    "Audit logs are retained for 90 days, after which they are deleted nightly and "
    "cannot be restored. [c-9930]"
)
AUDIT_CLAIMS = [
    (
        "Audit logs are retained for 90 days.",
        True,
        "Audit log retention on the Enterprise plan is 90 days.",
    ),
    (
        "Logs are deleted nightly after the retention period.",
        True,
        "Logs older than the retention window are deleted nightly",
    ),
    ("Deleted logs cannot be restored.", True, "are deleted nightly and cannot be restored."),
]
