"""The argument types of `keras-attention export` and `check-export`: each parses a flag's
text or raises `argparse.ArgumentTypeError` naming what it needs."""

from __future__ import annotations

import argparse

from keras_attention.auto import AUTO


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1. Received: {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0. Received: {text}")
    return value


def shortlist_size(text: str) -> int | str | None:
    """`--shortlist`: `auto`, `none`, or an integer >= 1."""
    if text.lower() in (AUTO, "none"):
        return None if text.lower() == "none" else AUTO
    try:
        return positive_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'auto', 'none' or an integer >= 1. Received: {text}"
        ) from None


def beam_width_of_beam_search(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 2 (greedy search is serving_default). Received: {text}"
        )
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0. Received: {text}")
    return value
