"""The run directory under a strategy: who writes it, and what a lost peer means for it.

The only module of this package that uses the run's own modules (`RunDirectory`,
the backups).
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile

from keras_attention.distribution.errors import DistributedTrainingError
from keras_attention.distribution.strategy import Distribution
from keras_attention.runs.backup_files import backed_up_epoch
from keras_attention.runs.run_directory import RunDirectory


def writable_run_directory(distribution: Distribution, run):
    """The run directory for the chief; a private temporary one for other workers.

    The other workers run the same callbacks (checkpoints, logs) as the
    chief, so that all run the same collectives, but into a directory that
    is removed when the process exits.
    """
    if distribution.is_chief:
        return run
    private = tempfile.mkdtemp(prefix=f"keras_attention_worker{distribution.task_index}_")
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    return RunDirectory(private)


@contextlib.contextmanager
def peer_failures(distribution: Distribution, run):
    """Turns the errors a lost peer causes into one clear `DistributedTrainingError`."""
    if not distribution.is_multi_worker:
        yield
        return
    import tensorflow as tf

    lost = (
        tf.errors.UnavailableError,
        tf.errors.AbortedError,
        tf.errors.CancelledError,
        tf.errors.DeadlineExceededError,
        tf.errors.InternalError,
    )
    try:
        yield
    except lost as error:
        detail = str(error).strip().splitlines()[0][:400] if str(error).strip() else ""
        raise DistributedTrainingError(
            f"{distribution.task_name} lost the cluster: another worker stopped or cannot be "
            f"reached ({type(error).__name__}: {detail}). Relaunch every worker with the same "
            f"command to resume from epoch {backed_up_epoch(run.backup) + 1} "
            f"(the last backup in {str(run.backup)!r})."
        ) from None
