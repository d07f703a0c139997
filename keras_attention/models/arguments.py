"""Constructor-argument checks shared by the encoder and the decoder."""


def check_choice(name, value, choices):
    """Raises `ValueError` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}. Received: {name}={value!r}")


def check_positive_ints(**values):
    """Raises `ValueError` naming the first argument that is not an int > 0."""
    for name, value in values.items():
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"`{name}` must be a positive int. Received: {name}={value!r}")


def check_rate(name, value):
    """Raises `ValueError` unless `0 <= value < 1` (a dropout rate)."""
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`{name}` must be in [0, 1). Received: {name}={value!r}")
