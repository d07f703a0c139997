"""A model with larger vocabularies started from a trained one: `grow_vocabulary_weights`."""

from __future__ import annotations

import numpy as np

from keras_attention.text import RESERVED_TOKENS

SIZE_NAMES = ("source_vocabulary_size", "target_vocabulary_size")


def _path_below_model(variable) -> str:
    """A weight's path without the model's own name (`seq2seq_1/encoder/...` -> `encoder/...`)."""
    return variable.path.split("/", 1)[-1]


IGNORED_CONFIG = ("name", "dtype", "trainable", "dropout", *SIZE_NAMES)
"""`Seq2Seq.get_config` entries two models may differ in and still share every weight's
meaning (the vocabulary sizes grow; dropout and the dtype policy change no weight)."""


def _architecture(model) -> dict:
    """`model.get_config()` without `IGNORED_CONFIG`, nor its attention layer's dtype and
    build shapes (a loaded model's are lists, a built one's tuples)."""
    config = {k: v for k, v in model.get_config().items() if k not in IGNORED_CONFIG}
    attention = config.get("attention")
    if isinstance(attention, dict) and isinstance(attention.get("config"), dict):
        layer = {k: v for k, v in attention["config"].items() if k != "dtype"}
        config["attention"] = {
            **{k: v for k, v in attention.items() if k != "build_config"},
            "config": layer,
        }
    return config


def _grown_axis(old_shape: tuple, new_shape: tuple, growths: set, path: str) -> int | None:
    """The axis along which a vocabulary grows from `old_shape` to `new_shape` (`None` when
    the shapes are equal); `growths`: the `(old, new)` vocabulary sizes that differ."""
    grown = [
        axis for axis, (old, new) in enumerate(zip(old_shape, new_shape, strict=True)) if old != new
    ]
    if not grown:
        return None
    if len(grown) > 1 or (old_shape[grown[0]], new_shape[grown[0]]) not in growths:
        raise ValueError(
            f"Weight {path!r} has shape {new_shape}, the trained one {old_shape}: only a "
            "vocabulary axis may grow"
        )
    return grown[0]


def grown_weight(old: np.ndarray, size: int, axis: int) -> np.ndarray:
    """`old` with its `axis` grown to `size` entries (see `grow_vocabulary_weights`).

    Entries `0 .. n-1` (`n = old.shape[axis]`) are `old`'s, unchanged; each entry
    from `n` on is the mean of `old`'s entries `4 .. n-1` (the ids of tokens, the
    reserved tokens left out).
    """
    tokens = np.take(old, np.arange(len(RESERVED_TOKENS), old.shape[axis]), axis=axis)
    mean = np.mean(tokens.astype(np.float64), axis=axis, keepdims=True).astype(old.dtype)
    shape = list(old.shape)
    shape[axis] = size - old.shape[axis]
    return np.concatenate([old, np.broadcast_to(mean, shape)], axis=axis)


def grow_vocabulary_weights(trained, model) -> list[str]:
    """Sets `model`'s weights from `trained`'s, whose vocabularies are prefixes of `model`'s.

    Both are built models of the same architecture (the same weights, in the
    same order, of the same names), `model`'s source and
    target vocabularies being `trained`'s with tokens appended (old ids kept:
    `keras_attention.text.extend_vocabulary`). For each pair of weights:

    1. Same shape: copied exactly.
    2. One axis longer (a vocabulary axis: the rows of an embedding matrix,
       the columns of an untied output kernel, the entries of an output
       bias): the trained entries are copied exactly, id for id, and each
       new token's entry is the mean of the trained entries of the tokens
       (the four reserved tokens' entries left out: `grown_weight`).

    A tied output projection is the target embedding matrix, so it grows
    with it; its bias grows as in 2.

    Args:
        trained: the trained `keras.Model`.
        model: the `keras.Model` to set.

    Returns:
        The paths (below the model) of the weights that grew.

    Raises:
        ValueError: the models differ in more than their vocabulary sizes, dropout
            and dtype policy (`IGNORED_CONFIG`), or `model`'s vocabularies are
            smaller; nothing is set then.
    """
    trained_architecture, architecture = _architecture(trained), _architecture(model)
    differences = sorted(
        name
        for name in {**trained_architecture, **architecture}
        if trained_architecture.get(name) != architecture.get(name)
    )
    if differences:
        raise ValueError(
            f"The trained model and the model to start differ in {', '.join(differences)}: "
            "an adapted model keeps the trained one's architecture"
        )
    sizes = [(getattr(trained, name), getattr(model, name)) for name in SIZE_NAMES]
    if any(new < old for old, new in sizes) or min(old for old, _ in sizes) <= len(RESERVED_TOKENS):
        raise ValueError(
            f"The model to start must hold the trained model's vocabularies, each with a token "
            f"besides the reserved ones. Received: (trained, model) sizes {sizes}"
        )
    growths = {(old, new) for old, new in sizes if old != new}
    trained_weights, weights = list(trained.weights), list(model.weights)
    if len(trained_weights) != len(weights):
        raise ValueError(
            f"The trained model has {len(trained_weights)} weights and the model to start "
            f"{len(weights)}: they are not the same architecture"
        )
    values = []
    grown = []
    for old, new in zip(trained_weights, weights, strict=True):
        path = _path_below_model(new)
        if old.name != new.name:  # the layers' own names may carry a counter (`gru_cell_2`)
            raise ValueError(
                f"The trained model's weight {_path_below_model(old)!r} is where the model to "
                f"start has {path!r}: they are not the same architecture"
            )
        value = np.asarray(old.numpy())
        axis = _grown_axis(tuple(value.shape), tuple(new.shape), growths, path)
        if axis is not None:
            value = grown_weight(value, new.shape[axis], axis)
            grown.append(path)
        values.append(value)
    for new, value in zip(weights, values, strict=True):  # all checked first
        new.assign(value)
    return grown
