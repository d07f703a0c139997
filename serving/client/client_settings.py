"""A client constructor's keyword API: keywords sorted into its options objects."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def with_settings(options: T | None, cls: type[T], settings: dict[str, Any]) -> T:
    """`options` (default: `cls()`) with the keywords of `settings` that name its fields,
    which are taken out of `settings` (a client constructor's keyword API)."""
    names = {field.name for field in dataclasses.fields(cls)}
    changes = {name: settings.pop(name) for name in list(settings) if name in names}
    options = cls() if options is None else options
    return dataclasses.replace(options, **changes) if changes else options


def check_no_settings_left(settings: dict[str, Any]) -> None:
    """`TypeError` for keywords of a client constructor that no options object took."""
    if settings:
        raise TypeError(f"Unexpected keyword arguments: {', '.join(sorted(settings))}")


def option_property(options: str, name: str) -> property:
    """`client.NAME`: field `name` of the client's frozen options value `client.OPTIONS`.

    Setting it replaces that value with `dataclasses.replace` (so the value
    checks it as a constructor argument is checked), keeping the options
    object the one place the setting is stored.
    """

    def get(self) -> Any:
        return getattr(getattr(self, options), name)

    def set_(self, value: Any) -> None:
        setattr(self, options, dataclasses.replace(getattr(self, options), **{name: value}))

    return property(
        get, set_, doc=f"`{options}.{name}`; setting it replaces `{options}` with the new value."
    )
