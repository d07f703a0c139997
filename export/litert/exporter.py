"""`LiteRTExporter`: a trained translator as LiteRT (`.tflite`) models for phones and browsers."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import keras_attention
from keras_attention.export.export_manifest import file_sha256, jsonable
from keras_attention.export.litert.encoder import encode_with_buffers
from keras_attention.export.litert.function_converter import builtin_converter
from keras_attention.export.litert.ops import model_ops
from keras_attention.export.litert.settings import LiteRTSettings
from keras_attention.export.litert.text_files import write_text_files
from keras_attention.export.litert.weights import int8_weight_only
from keras_attention.export.warmup_pairs import DEFAULT_WARMUP_PAIRS, run_warmup_pairs
from keras_attention.inference.next_step import check_shortlist, own_candidates
from keras_attention.inference.translator import Translator
from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist
from keras_attention_client.litert_contract import (
    INPUT,
    MANIFEST_FILE,
    MODEL_FILES,
    TEXT_FILE,
)

logger = logging.getLogger(__name__)


class LiteRTExporter:
    """Writes a `Translator` as LiteRT models: token ids in, token ids out, the loop inside.

    One `.tflite` model per decoding mode (`keras_attention_client.litert_contract`):
    `greedy` (`GreedySearch`) and `beam` (`BeamSearch` with a fixed beam
    width and length penalty, returning its `n_best` hypotheses best first).
    Each takes int32 source ids `(batch_size, attention_width)` and runs the
    encoder and the whole decoding `tf.while_loop` inside, with LiteRT's
    builtin ops only (no Flex / `SELECT_TF_OPS`), for any batch size:

    1. The model's variables are frozen into constants (a
       `keras.StatelessScope` maps each to its value), so nothing is read
       from a resource variable inside the loops.
    2. The encoder runs as `encode_with_buffers` (the same cells, a loop over
       plain tensors) and the strategy records its attention with
       `tensor_arrays=False`: LiteRT's converter lowers a `TensorArray` only
       when its element shape is static, which a batch of any size is not.
    3. The source is padded to `attention_width` columns, so the attention
       rows have a static width.
    4. `tf.lite.TFLiteConverter` converts the function with
       `supported_ops=[TFLITE_BUILTINS]`; the settings' `weights` pick the
       stored weights: `float32`; `float16` (dequantized to float32 when the
       model loads); `int8`: the SavedModel's weight-only scheme
       (`litert_weights.int8_weight_only` rewrites the float32 model: each
       weight matrix stored as int8 with a float32 scale per output channel,
       the very values of a SavedModel exported with `--weights int8`,
       dequantized once when the model runs; the kernels compute in
       float32). LiteRT's own dynamic-range quantization, whose int8 kernels
       also quantize their inputs, drifts further from the float32 model
       (measured: benchmarks/results/litert_export.json).

    With a vocabulary shortlist (`vocabulary_shortlist`, or the settings'
    `shortlist` K in `from_run`), the models decode as a SavedModel exported
    with `--shortlist K` does: the batch's candidate target ids (the union of
    the table's rows of its source ids, the frequent ids and the reserved
    ids), each row kept to its own candidates, the output projection over
    the candidates' rows only. The table is a constant of the models, in
    int16 when the target ids fit.

    Text stays outside the models: `text.json` holds the vocabularies'
    files, the normalization/tokenization/detokenization rules the
    SavedModel's graph runs (`keras_attention.text.tokenization.text_rules`)
    and the reserved ids, so that `keras_attention_client.LiteRTTranslator`
    translates strings with NumPy, `regex` and (for SentencePiece) the
    `sentencepiece` package only.

    The translator's `replace_unknown` is recorded in the manifest: a
    `LiteRTTranslator` then replaces each `[UNK]` the models emit by the
    source token at its attention peak, as the SavedModel's signatures do.

    Args:
        translator: a `Translator` (computing in float32: see `from_run`).
        settings: a `LiteRTSettings` (beam width, length penalty, n-best,
            `attention_width`, weights, modes). Defaults to `LiteRTSettings()`.
        warmup_pairs: `(source, reference)` pairs that `LiteRTChecker`
            translates (recorded in the manifest). Defaults to
            `DEFAULT_WARMUP_PAIRS`.
        run_dir: the training run (recorded in the manifest).
        train_config: that run's `TrainConfig` as a dict (recorded).
        vocabulary_shortlist: a `VocabularyShortlist` to decode over, or
            `None` (the default; the settings' `shortlist` must then be
            `None`: `from_run` builds the shortlist it names).
        **changes: `LiteRTSettings` fields by name (e.g. `weights="int8"`).

    Example:

    ```python
    exporter = LiteRTExporter.from_run("runs/fra-eng", weights="int8")
    manifest = exporter.export("/models/translator-litert")
    ```
    """

    def __init__(
        self,
        translator: Translator,
        settings: LiteRTSettings | None = None,
        *,
        warmup_pairs: Sequence[tuple[str, str]] | None = None,
        run_dir: str | os.PathLike | None = None,
        train_config: dict | None = None,
        vocabulary_shortlist: VocabularyShortlist | None = None,
        **changes,
    ):
        settings = LiteRTSettings.of(settings, **changes)
        if vocabulary_shortlist is not None:
            check_shortlist(
                vocabulary_shortlist,
                translator.model,
                translator.source_vectorizer,
                translator.target_vectorizer,
            )
            settings = dataclasses.replace(
                settings,
                shortlist=vocabulary_shortlist.k,
                shortlist_frequent=int(vocabulary_shortlist.frequent_ids.size),
            )
        elif settings.shortlist is not None:
            raise ValueError(
                f"`shortlist={settings.shortlist}` needs its `vocabulary_shortlist` "
                "(`LiteRTExporter.from_run` builds it from the run)"
            )
        width = settings.attention_width or translator.source_vectorizer.max_length
        if width is None:
            raise ValueError(
                "`attention_width` is needed: the source vectorizer has no `max_length` to "
                "default to"
            )
        if not hasattr(translator.model, "encoder"):
            raise ValueError(
                f"A LiteRT export needs a Seq2Seq model. Received: {type(translator.model).__name__}"
            )
        self.translator = translator
        self.vocabulary_shortlist = vocabulary_shortlist
        self.settings = dataclasses.replace(settings, attention_width=width)
        self.attention_width = width
        self.weights = settings.weights
        pairs = list(warmup_pairs) if warmup_pairs is not None else list(DEFAULT_WARMUP_PAIRS)
        self.warmup_pairs = [(str(source), str(target)) for source, target in pairs]
        self.run_dir = str(Path(run_dir).resolve()) if run_dir is not None else None
        self.train_config = dict(train_config or {})

    @classmethod
    def from_run(
        cls,
        run_dir: str | os.PathLike,
        *,
        max_output_length: int | None = None,
        replace_unknown: bool | None = None,
        **settings,
    ) -> LiteRTExporter:
        """An exporter for the model of a trained run directory, computing in float32.

        Args:
            run_dir: a run directory written by `keras_attention.training.train`.
            max_output_length: most tokens of a translation (default: the run's).
            replace_unknown: `Translator`'s `replace_unknown` (None, the
                default: on for a word target vocabulary, off for subwords).
            **settings: the constructor's keyword arguments (`settings`,
                `LiteRTSettings` fields such as `beam_width` or `weights`,
                `warmup_pairs`: by default the first sentences of the run's
                test split).
        """
        from keras_attention.export.export_precision import with_precision
        from keras_attention.inference.trained_run import load_translator
        from keras_attention.runs.run_directory import RunDirectory
        from keras_attention.runs.train_config import TrainConfig

        translator = load_translator(
            run_dir, max_output_length=max_output_length, replace_unknown=replace_unknown
        )
        # LiteRT's CPU kernels compute in float32 (bfloat16 has none).
        translator = with_precision(translator, "float32")
        named = {k: v for k, v in settings.items() if k in _SETTINGS_FIELDS}
        resolved = LiteRTSettings.of(settings.get("settings"), **named)
        if resolved.shortlist is not None and settings.get("vocabulary_shortlist") is None:
            settings["vocabulary_shortlist"] = VocabularyShortlist.from_run(
                run_dir, resolved.shortlist, resolved.shortlist_frequent
            )
        run = RunDirectory(run_dir)
        if settings.get("warmup_pairs") is None:
            settings["warmup_pairs"] = run_warmup_pairs(run)
        config = TrainConfig.load(run.path)
        return cls(translator, run_dir=run_dir, train_config=dataclasses.asdict(config), **settings)

    # ------------------------------------------------------------- the graph

    def strategy(self, mode: str):
        """The decoding strategy of `mode`, recording attention without `TensorArray`s."""
        if mode == "greedy":
            strategy = self.translator.strategy(beam_width=1)
        else:
            settings = self.settings
            strategy = self.translator.strategy(
                beam_width=settings.beam_width,
                length_penalty=settings.length_penalty,
                n_best=settings.beam_n_best,
            )
        strategy = copy.copy(strategy)
        strategy.drop_finished = False  # the batch keeps its shape
        strategy.tensor_arrays = False
        return strategy

    def decode_function(self, mode: str) -> tf.types.experimental.ConcreteFunction:
        """The concrete function `source_ids -> {tokens, scores, lengths, attention}` of `mode`."""
        translator = self.translator
        model = translator.model
        if not model.built:
            model.build()
        strategy = self.strategy(mode)
        start_id = translator.target_vectorizer.start_id
        values = {id(variable): variable.numpy() for variable in model.variables}
        shortlist = self.vocabulary_shortlist
        if shortlist is not None:
            shortlist = _ConstantShortlist(shortlist)

        def decode(source_ids):
            # Every variable as a constant: the converter then folds them into the model.
            mapping = [(v, tf.constant(values[id(v)])) for v in model.variables]
            step_translator = translator.with_shortlist(None)
            with keras.StatelessScope(state_mapping=mapping):
                annotations, summary = encode_with_buffers(model.encoder, source_ids)
                state = model.decoder.initial_state(
                    annotations, tf.not_equal(source_ids, 0), summary
                )
                start_ids = tf.fill([tf.shape(source_ids)[0]], tf.constant(start_id, tf.int32))
                if shortlist is None:
                    result = strategy(step_translator.step_function(state), state, start_ids)
                    tokens = result.tokens
                else:
                    # As `Translator.translate` with a shortlist: candidate positions, each
                    # row kept to its own candidates, then the positions' target ids.
                    table = shortlist.in_graph()
                    candidates = table.candidates(source_ids)
                    allowed = table.allowed(source_ids, candidates)
                    next_fn = own_candidates(step_translator.step_function(state, candidates))
                    result = strategy(next_fn, (state, allowed), start_ids)
                    tokens = tf.gather(candidates, result.tokens)
            return {
                "tokens": tf.identity(tokens, name="tokens"),
                "scores": tf.identity(result.scores, name="scores"),
                "lengths": tf.identity(result.lengths, name="lengths"),
                "attention": tf.identity(result.attention, name="attention"),
            }

        function = tf.function(
            decode,
            input_signature=[tf.TensorSpec([None, self.attention_width], tf.int32, name=INPUT)],
            autograph=False,
        )
        return function.get_concrete_function()

    def convert(self, mode: str) -> bytes:
        """The `.tflite` flatbuffer of `mode`, builtin ops only, with this exporter's weights."""
        function = self.decode_function(mode)
        converter = builtin_converter(function, self.translator.model)
        if self.weights == "float16":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.target_spec.supported_types = [tf.float16]
        data = converter.convert()
        if self.weights == "int8":
            data = int8_weight_only(data)
        return data

    # ------------------------------------------------------------- the files

    def export(self, directory: str | os.PathLike) -> dict:
        """Writes the models, the text files and the manifest into `directory`.

        `directory` must be empty or not exist.

        Returns:
            The manifest written (`litert_manifest.json`), a dict.
        """
        directory = Path(directory)
        if directory.exists() and any(directory.iterdir()):
            raise FileExistsError(f"{str(directory)!r} is not empty")
        directory.mkdir(parents=True, exist_ok=True)
        models = {}
        for mode in self.settings.modes:
            data = self.convert(mode)
            path = directory / MODEL_FILES[mode]
            path.write_bytes(data)
            ops = model_ops(data)
            logger.info("%s: %d bytes, %d op kinds", path.name, len(data), len(ops["builtin"]))
            models[mode] = {
                "file": path.name,
                "bytes": len(data),
                "sha256": file_sha256(path),
                "ops": ops,
            }
        text = write_text_files(
            directory,
            self.translator.source_vectorizer,
            self.translator.target_vectorizer,
            self.attention_width,
        )
        manifest = self._manifest(models, text)
        with open(directory / MANIFEST_FILE, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2, ensure_ascii=False)
            f.write("\n")
        return manifest

    def _manifest(self, models: dict, text: dict) -> dict:
        translator = self.translator
        return {
            "format": "litert",
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "library_versions": {
                "keras_attention": keras_attention.__version__,
                "tensorflow": tf.__version__,
                "keras": keras.__version__,
            },
            "run_dir": self.run_dir,
            "train_config": self.train_config,
            "model_config": jsonable(translator.model.get_config()),
            "weights": self.weights,
            "shortlist": (
                self.vocabulary_shortlist.describe()
                if self.vocabulary_shortlist is not None
                else None
            ),
            "input": {"name": INPUT, "dtype": "int32", "shape": [-1, self.attention_width]},
            "attention_width": self.attention_width,
            "max_output_length": translator.max_output_length,
            "replace_unknown": translator.replace_unknown,
            "decoding": {
                "greedy": {"strategy": "GreedySearch"},
                "beam": {
                    "strategy": "BeamSearch",
                    "beam_width": self.settings.beam_width,
                    "length_penalty": self.settings.length_penalty,
                    "n_best": self.settings.beam_n_best,
                },
            },
            "models": models,
            "text_file": TEXT_FILE,
            "warmup_pairs": [list(pair) for pair in self.warmup_pairs],
        }


_SETTINGS_FIELDS = {field.name for field in dataclasses.fields(LiteRTSettings)}


class _ConstantShortlist:
    """A `VocabularyShortlist` whose table a traced function reads as a constant (the
    converter folds no variable), in int16 when the target ids fit (half the bytes)."""

    def __init__(self, shortlist: VocabularyShortlist):
        self.shortlist = shortlist
        small = shortlist.target_vocabulary_size <= np.iinfo(np.int16).max + 1
        self.table = shortlist.table.astype(np.int16 if small else np.int32)
        self.always = shortlist.variables[1].numpy()

    def in_graph(self) -> VocabularyShortlist:
        """A copy of the shortlist reading constants: call while tracing."""
        table = tf.constant(self.table)
        shortlist = copy.copy(self.shortlist)
        shortlist._table = table
        shortlist._always = tf.constant(self.always)
        # The rows are gathered from the stored table, then widened: the converter keeps
        # the table in its stored dtype (a cast of the whole constant would be folded).
        shortlist.rows = lambda ids: tf.cast(tf.gather(table, ids), tf.int32)
        return shortlist


def export_litert(run_dir: str | os.PathLike, directory: str | os.PathLike, **settings) -> dict:
    """Exports the model of `run_dir` as LiteRT models into `directory` (see `LiteRTExporter`).

    Returns:
        The manifest written.
    """
    return LiteRTExporter.from_run(run_dir, **settings).export(directory)
