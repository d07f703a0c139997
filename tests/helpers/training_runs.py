"""Tiny corpora and training configurations shared by the training and CLI tests."""

from __future__ import annotations

import random
from pathlib import Path

FRENCH_DIGITS = ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"]


def spelled_digits_pairs(count: int, seed: int = 0, min_len: int = 3, max_len: int = 8):
    """A monotonic task: "3 7 1" -> "trois sept un" (one target word per source word)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        digits = [rng.randrange(10) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(map(str, digits)), " ".join(FRENCH_DIGITS[d] for d in digits)))
    return pairs


def write_tsv(path: Path, pairs) -> Path:
    """Writes `source<TAB>target` lines; returns `path`."""
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def tiny_train_config(data, out, **overrides):
    """A TrainConfig small enough for tests (float32, no time budget)."""
    from keras_attention.runs.train_config import TrainConfig

    options = dict(
        data=str(data),
        out=str(out),
        # The attention, score and input feeding this tiny setup was tuned with.
        attention="luong",
        score="general",
        input_feeding=True,
        embedding_dim=32,
        encoder_units=32,
        decoder_units=64,
        tokenizer="words",
        source_vocabulary_size=100,
        target_vocabulary_size=100,
        max_length=12,
        max_output_length=12,
        batch_size=32,
        epochs=3,
        steps_per_epoch=100,
        learning_rate=5e-3,
        dropout=0.0,
        validation_fraction=0.05,
        test_fraction=0.05,
        precision="float32",
        time_budget_minutes=None,
    )
    options.update(overrides)
    return TrainConfig(**options)


SPANISH_DIGITS = ["cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"]


def punctuated_digits_pairs(count: int, language: str, seed: int = 0):
    """Spelled digits ending in `?` or `!`, with the target language's typography.

    `"3 7 ?"` -> `"trois sept ?"` (French) or `"¿tres siete?"` (Spanish).
    """
    rng = random.Random(seed)
    words = {"french": FRENCH_DIGITS, "spanish": SPANISH_DIGITS}[language]
    pairs = []
    for _ in range(count):
        digits = [rng.randrange(10) for _ in range(rng.randint(2, 5))]
        mark = rng.choice("?!")
        spelled = " ".join(words[d] for d in digits)
        if language == "french":
            target = f"{spelled} {mark}"
        else:
            target = f"{'¿' if mark == '?' else '¡'}{spelled}{mark}"
        pairs.append((" ".join(map(str, digits)) + f" {mark}", target))
    return pairs


PROGRESS_PREFIXES = ("Checking the corpus files: ", "Sampling ", "Learning the ")
"""How `keras-attention train`'s progress lines start (`keras_attention.progress`)."""


def printed_lines(text: str) -> list[str]:
    """The lines of a command's stdout, without the train command's progress lines.

    The checking and sampling lines are timed (one every few seconds), so a
    slow machine prints some where a fast one prints none.
    """
    return [line for line in text.splitlines() if not line.startswith(PROGRESS_PREFIXES)]


def train_argv(config) -> list[str]:
    """`keras-attention train` flags that give exactly `config` (a `TrainConfig`)."""
    import dataclasses

    argv = ["train"]
    for field in dataclasses.fields(config):
        flag, value = "--" + field.name.replace("_", "-"), getattr(config, field.name)
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        elif value is not None:
            argv += [flag, str(value)]
        elif field.default is not None:  # `none` overrides a default
            argv += [flag, "none"]
    return argv
