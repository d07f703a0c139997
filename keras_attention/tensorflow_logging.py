"""Quiet TensorFlow for the command line: only our own output unless asked.

TensorFlow writes notices a user cannot act on to stderr: at import time,
from C++ static initializers through absl (oneDNN, "Could not find cuda
drivers", "failed call to cuInit"), before `TF_CPP_MIN_LOG_LEVEL` is read;
later through its own logging (CPU instruction notices) and Python warnings.

`configure(verbose=False)` sets `TF_CPP_MIN_LOG_LEVEL=3` (unless already set)
and silences Python warnings and TensorFlow's Python logger;
`import_tensorflow(verbose=False)` imports TensorFlow with file descriptor 2
pointed at /dev/null for the duration of the import. Both must run before
anything imports TensorFlow. With `verbose=True` (`--verbose`, or the
environment variable `KERAS_ATTENTION_VERBOSE=1`), or when the user set
`TF_CPP_MIN_LOG_LEVEL` themselves, TensorFlow's logs are left alone.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

VERBOSE_ENVIRONMENT_VARIABLE = "KERAS_ATTENTION_VERBOSE"


def verbose_from_environment() -> bool:
    """Whether `KERAS_ATTENTION_VERBOSE` asks for TensorFlow's logs (1, true, yes, on)."""
    value = os.environ.get(VERBOSE_ENVIRONMENT_VARIABLE, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def configure(verbose: bool = False) -> bool:
    """Sets TensorFlow's log levels for this process; returns whether TF is kept quiet.

    Call before TensorFlow is imported (its C++ level is read from the
    environment when the library loads).
    """
    quiet = not verbose and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    if quiet:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    if not verbose:
        warnings.filterwarnings("ignore")
        for name in ("tensorflow", "absl", "h5py"):
            logging.getLogger(name).setLevel(logging.ERROR)
    return quiet


def import_tensorflow(verbose: bool = False) -> None:
    """Imports TensorFlow, hiding what its C++ initializers print unless `verbose`.

    Errors of the import itself still surface as Python exceptions.
    """
    if verbose or "tensorflow" in sys.modules or os.environ.get("TF_CPP_MIN_LOG_LEVEL") != "3":
        import tensorflow  # noqa: F401

        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
