"""The decoding option renamed `max_steps` (formerly `max_length`), and its old name.

A strategy's `max_steps` is the most decoding steps, counting the step that
emits the end token; `max_length` was its name before, and still is, elsewhere,
the name of a side's most tokens (`TrainConfig`, the vectorizers). The old name
keeps working: as a keyword or a call option it gives a `DeprecationWarning`; in
a saved config or an export manifest written before the rename it is read
silently when the new key is absent.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

MAX_STEPS = "max_steps"
OLD_MAX_STEPS = "max_length"
"""The name `max_steps` had before: a keyword and call option of the strategies, a
key of their configs and of an export manifest's `decoding` entries."""

Function = TypeVar("Function", bound=Callable[..., Any])


# Modules whose frames a warning skips, to name the user's line that passed the old name
# (through a strategy, a `Translator`, a `tf.function`'s tracing).
_LIBRARIES = {"keras_attention", "keras_attention_client", "functools", "tensorflow", "keras"}


def warn_old_name() -> None:
    """The `DeprecationWarning` of the old name, at the line of ours' caller."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _LIBRARIES:
        frame, level = frame.f_back, level + 1
    warnings.warn(
        f"`{OLD_MAX_STEPS}` is renamed `{MAX_STEPS}` (the most decoding steps); "
        f"pass `{MAX_STEPS}=` instead.",
        DeprecationWarning,
        stacklevel=level,
    )


def with_max_steps(options: Mapping[str, Any], *, warn: bool = True) -> dict[str, Any]:
    """`options` with `max_length` renamed `max_steps`.

    Args:
        options: keywords, call options or a config.
        warn: whether the old name gives a `DeprecationWarning` (a keyword or
            call option: yes; a saved config or manifest: no).

    Raises:
        TypeError: both names are given.
    """
    if OLD_MAX_STEPS not in options:
        return dict(options)
    if MAX_STEPS in options:
        raise TypeError(
            f"Pass `{MAX_STEPS}` only (`{OLD_MAX_STEPS}` is its old name). Received: "
            f"{MAX_STEPS}={options[MAX_STEPS]!r}, {OLD_MAX_STEPS}={options[OLD_MAX_STEPS]!r}"
        )
    if warn:
        warn_old_name()
    renamed = {key: value for key, value in options.items() if key != OLD_MAX_STEPS}
    renamed[MAX_STEPS] = options[OLD_MAX_STEPS]
    return renamed


def accepts_old_max_steps(function: Function) -> Function:
    """Lets `function`, which takes `max_steps`, also take it as `max_length=`
    (with a `DeprecationWarning`)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **with_max_steps(kwargs))

    return wrapper  # type: ignore[return-value]
