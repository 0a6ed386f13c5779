"""ER7 escaping written independently of pipelines.hl7.escapes: the oracle for round trips."""

from __future__ import annotations


def escape(text: str) -> str:
    """A field value as a sender escapes it (the escape character first)."""
    return (
        text.replace("\\", "\\E\\")
        .replace("|", "\\F\\")
        .replace("^", "\\S\\")
        .replace("&", "\\T\\")
        .replace("~", "\\R\\")
    )
