"""The ways an export may store its weights, without TensorFlow (for `--weights`)."""

from __future__ import annotations

WEIGHTS = ("float32", "bfloat16", "int8")
"""The ways to store the weights (`--weights` also takes `AUTO`)."""
