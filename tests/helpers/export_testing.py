"""Shared data of the export tests: a toy corpus and the parity sentences."""

from __future__ import annotations

import random
from pathlib import Path

# A toy English -> French word-for-word corpus: learnable in a few dozen
# steps, so the tiny model's outputs depend on the input.
_ENGLISH = "I you he she we they see eat like the a cat dog house apple big small red".split()
_FRENCH = "je tu il elle nous ils vois mange aime le la chat chien maison pomme grand petit rouge"
_FRENCH = _FRENCH.split()

SENTENCES = [
    "I see the cat .",
    "we like a big red apple .",
    "she eat",
    "the dog",
    "they see a small house .",
    "you like the red cat and the big dog .",
    "Hello, world!",
    "apple",
]
"""Ordinary inputs of the parity tests (some with words outside the vocabulary)."""


def write_corpus(path: Path, pairs: int = 400, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(pairs):
            words = [rng.randrange(len(_ENGLISH)) for _ in range(rng.randint(1, 8))]
            source = " ".join(_ENGLISH[w] for w in words)
            target = " ".join(_FRENCH[w] for w in words)
            f.write(f"{source} .\t{target} .\n")
    return path


def train_export_run(root: Path, **overrides) -> Path:
    """Trains the export tests' tiny run on `write_corpus` data under `root`.

    Bahdanau attention: its outputs differ between sentences after these few
    steps, which the parity tests need to mean anything. `overrides` replace
    `TrainConfig` fields (e.g. the tokenizer and vocabulary sizes).
    """
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.training.trainer import train

    options = dict(
        data=str(write_corpus(root / "corpus.tsv")),
        out=str(root / "run"),
        attention="bahdanau",
        embedding_dim=16,
        encoder_units=16,
        decoder_units=32,
        tokenizer="words",
        source_vocabulary_size=200,
        target_vocabulary_size=200,
        max_length=12,
        max_output_length=10,
        epochs=1,
        steps_per_epoch=60,
        learning_rate=0.03,
        batch_size=16,
        validation_fraction=0.1,
        test_fraction=0.1,
        precision="float32",
        time_budget_minutes=None,
    )
    options.update(overrides)
    config = TrainConfig(**options)
    train(config, verbose=0)
    return Path(config.out)
