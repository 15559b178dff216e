"""Root error of the streams runtime plumbing (wire format and embedded log)."""

from __future__ import annotations


class StreamsError(Exception):
    """Root of every error raised by the streams wire format and the embedded event log."""
