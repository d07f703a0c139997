"""The evaluation's own defaults, in plain Python (the command line reads them for `--help`)."""

EVALUATION_BEAM_WIDTH = 4
"""The beam width of `evaluate`'s beam-search pass when none is given."""
