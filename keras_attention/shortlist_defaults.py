"""The vocabulary shortlist's defaults, without TensorFlow (for the command line's flags)."""

from __future__ import annotations

DEFAULT_FREQUENT = 300
"""The most frequent target ids that are always candidates, unless told otherwise."""
