"""Defaults the clients and their command line share.

Plain Python, so the command line's `--help` does not import NumPy or gRPC.
"""

from __future__ import annotations

DEFAULT_MODEL_NAME = "default"
"""The model name TF Serving serves when its `--model_name` is not given."""

DEFAULT_BATCH_SIZE = 64
"""Sentences per request in `translate`."""

DEFAULT_TIMEOUT = 30.0
"""Seconds one request may take, waiting for the server to be ready included."""
