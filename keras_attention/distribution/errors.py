"""The error that stops a data-parallel run: a peer failed, or the workers disagree."""


class DistributedTrainingError(RuntimeError):
    """A data-parallel run cannot go on: a peer failed, or the workers disagree."""
