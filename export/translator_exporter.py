"""`TranslatorExporter`: a trained translator as a versioned SavedModel for TF Serving."""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Sequence
from pathlib import Path

import keras
import tensorflow as tf

import keras_attention
from keras_attention.auto import AUTO
from keras_attention.export.decoding_description import describe_decoding
from keras_attention.export.export_manifest import ExportManifest, file_sha256, jsonable
from keras_attention.export.export_precision import with_precision
from keras_attention.export.export_settings import COMMAND_SETTINGS, ExportSettings
from keras_attention.export.exported_version import ExportedVersion
from keras_attention.export.saved_model_proto import (
    SAVED_MODEL_PB,
    describe_signatures,
    read_saved_model,
    serve_meta_graph,
)
from keras_attention.export.signature_options import SignatureOptions
from keras_attention.export.translation_signatures import (
    TranslationSignatures,
)
from keras_attention.export.version_directory import VersionDirectory
from keras_attention.export.warmup import write_warmup_requests
from keras_attention.export.warmup_logs import warmup_logs
from keras_attention.export.warmup_pairs import DEFAULT_WARMUP_PAIRS, run_warmup_pairs
from keras_attention.export.weight_storage import WeightStorage
from keras_attention.inference.translator import Translator
from keras_attention.models.seq2seq import require_registered
from keras_attention.shortlist.cooccurrence import check_shortlist_size
from keras_attention.shortlist.defaults import auto_shortlist_size
from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist


class TranslatorExporter:
    """Writes a `Translator` as a SavedModel that TensorFlow Serving runs.

    The export needs no Python and no op outside core TensorFlow and
    tensorflow-text: text processing, vocabulary lookups (or SentencePiece
    models, for a run trained with `--tokenizer subwords`) and the whole
    decoding loop (`tf.while_loop`) are in the graph.

    1. `keras.export.ExportArchive` tracks the model and both vectorizers
       (weights, lookup tables, SentencePiece model resources) and adds one endpoint per signature (see
       `TranslationSignatures`): `serving_default` (greedy) and
       `beam_search` (`beam_width`, `length_penalty`), both `text` only;
       `search` and `sample`, which take optional scalar decoding inputs
       (`beam_width` up to `max_beam_width`, `n_best`, `length_penalty`,
       `max_output_length`; `temperature`, `top_k`, `top_p`, `seed`,
       `max_output_length`) whose defaults the SignatureDefs hold; and,
       unless disabled, `score_translation`. `ExportArchive` rather than
       `tf.saved_model.save(tf.Module)` because only the former gives a graph
       whose variables restore on TF Serving's Session path with Keras 3.
    2. `assets.extra/tf_serving_warmup_requests`: `PredictRequest`s for every
       signature, at batch 1 and at the batch of all warmup sentences, and
       for `search` and `sample` one with every decoding input given
       (`n_best` 2, so the n-best outputs are warmed up too).
    3. `assets.extra/export_manifest.json`: an `ExportManifest`.
    4. `export()` writes all this into a staging directory inside the base
       and renames it to `BASE/<version>` in one step (`VersionDirectory`),
       so a polling server never sees a partial version; existing versions
       are never overwritten.

    Args:
        translator: a `Translator` (its model may be an `Ensemble`: one
            SavedModel decoding with the mean of the members' log-probabilities).
        signatures: a `SignatureOptions`: the `beam_search` beam width
            (default 4) and length penalty (also the default `length_penalty`
            input of `search`), `max_beam_width` (recorded in the manifest),
            `decoding_inputs` (the `search` and `sample` signatures),
            `jit_compile` (XLA; TF Serving on CPU then needs
            `--xla_cpu_compilation_enabled=true`) and `score_signature`.
            Defaults to `SignatureOptions()`.
        warmup_pairs: `(source, reference translation)` pairs for the warmup
            requests. Defaults to `DEFAULT_WARMUP_PAIRS`.
        run_dir: the training run (recorded in the manifest), or, for an
            `Ensemble`, the members' runs (the manifest's `run_dir` is the
            first, its `ensemble` lists them all).
        train_config: that (first) run's `TrainConfig` as a dict (recorded).
        weights: how the variables are stored, one of
            `weight_storage.WEIGHTS` (`float32`, `bfloat16`, `int8`; see
            `WeightStorage`), or `"auto"`: `bfloat16` when the translator's
            model computes in bfloat16 (it then reads them with no cast and
            translates as with float32 weights), else `float32`
            (`weight_storage.resolve_weights`). Defaults to `"auto"`.
        shortlist: a `VocabularyShortlist` for every decoding signature
            (`serving_default`, `beam_search`, `search`, `sample`): each
            request scores only the candidates of its batch's source ids
            (see `Translator`), and `score` is then a log-probability over
            them; `score_translation` keeps the whole vocabulary. Its table
            and ids are variables of the export, recorded in the manifest.
            Not with `jit_compile` (XLA would compile again for every
            number of candidates). Defaults to `None`: the translator's own
            (`Translator(shortlist=...)`), if any, else the whole vocabulary.
        **settings: `SignatureOptions` fields by name (e.g. `beam_width=2`),
            replacing `signatures`' values.

    Example:

    ```python
    exporter = TranslatorExporter.from_run("runs/fra-eng", beam_width=5)
    exported = exporter.export("/models/translator")  # -> /models/translator/1
    ```
    """

    def __init__(
        self,
        translator: Translator,
        signatures: SignatureOptions | None = None,
        *,
        weights: str = "auto",
        shortlist: VocabularyShortlist | None = None,
        warmup_pairs: Sequence[tuple[str, str]] | None = None,
        run_dir: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
        train_config: dict | None = None,
        **settings,
    ):
        signatures = SignatureOptions.of(signatures, **settings)
        jit_compile = signatures.jit_compile
        for model in getattr(translator.model, "members", [translator.model]):
            attention = getattr(getattr(model, "decoder", None), "attention_layer", None)
            if attention is not None:
                require_registered(attention)
        if shortlist is None:
            shortlist = getattr(translator, "shortlist", None)  # a shortlisted Translator's
        if shortlist is not None and not isinstance(shortlist, VocabularyShortlist):
            raise TypeError(
                "`shortlist` must be a VocabularyShortlist or None (TranslatorExporter.from_run "
                f"builds one from a size). Received: shortlist={shortlist!r}"
            )
        if shortlist is not None and jit_compile:
            raise ValueError(
                "A vocabulary shortlist cannot be combined with `jit_compile`: the number of "
                "candidates changes from request to request, and XLA would compile the "
                "decoding again for each. Received: jit_compile=True with a shortlist"
            )
        self.weight_storage = WeightStorage(translator.model, weights)
        self.shortlist = shortlist
        # Stored weights: the lookups and the shortlist read only the slices they use.
        gather = self.weight_storage.gather if self.weight_storage.variables else None
        if shortlist is not None or gather is not None:
            translator = translator.with_shortlist(shortlist, gather_weights=gather)
        self.translator = translator
        self.signatures = TranslationSignatures(translator, signatures)
        pairs = list(warmup_pairs) if warmup_pairs is not None else list(DEFAULT_WARMUP_PAIRS)
        if not pairs:
            raise ValueError(f"`warmup_pairs` must not be empty. Received: {warmup_pairs!r}")
        self.warmup_pairs = [(str(source), str(target)) for source, target in pairs]
        run_dirs = [] if run_dir is None else run_paths(run_dir)
        self.run_dir = run_dirs[0] if run_dirs else None
        self.ensemble = run_dirs if len(run_dirs) > 1 else None
        self.train_config = dict(train_config or {})

    @classmethod
    def from_run(
        cls,
        run_dir: str | os.PathLike | Sequence[str | os.PathLike],
        settings: ExportSettings | None = None,
        *,
        warmup_pairs: Sequence[tuple[str, str]] | None = None,
        **changes,
    ) -> TranslatorExporter:
        """An exporter for the best model of a trained run directory, or an ensemble's.

        Args:
            run_dir: a run directory written by `keras_attention.training.train`,
                or several with the same vocabularies: their best models then
                decode as one `Ensemble` (`keras_attention.inference.load_ensemble`:
                the mean of their log-probabilities at every step), the first
                run giving the vectorizers, `max_output_length` and the warmup
                pairs.
            settings: an `ExportSettings` (its defaults: the run's
                `max_output_length`, the policy the model was trained in, the
                whole vocabulary, weights `"auto"`): `max_output_length`,
                `precision` (one of `keras_attention.precision.POLICIES`,
                `"auto"` resolved on this machine, or `None`), `weights`,
                `shortlist` (`K`, an int in `[1, target vocabulary size]`, for
                a vocabulary shortlist of `K` target ids per source id built
                from the run's training split, `VocabularyShortlist.from_run`;
                `"auto"` for the `K` of `auto_shortlist_size`, 100 for a
                target vocabulary of 10,000 ids or more without `jit_compile`,
                else none; a `VocabularyShortlist`; or `None`). An ensemble
                scores the whole vocabulary: `"auto"` is none there and a size
                raises `ValueError` (a shortlist is learnt from one run's
                training split, and the members may come from different ones;
                a `VocabularyShortlist` given here applies to every member),
                `shortlist_frequent` and the `SignatureOptions`.
            warmup_pairs: the warmup pairs; default: the first sentences of
                the run's test split.
            **changes: fields of `ExportSettings` or `SignatureOptions` by
                name (e.g. `beam_width=5, precision="auto"`).
        """
        from keras_attention.inference.trained_run import load_ensemble
        from keras_attention.runs.run_directory import RunDirectory
        from keras_attention.runs.train_config import TrainConfig

        settings = ExportSettings.of(settings, **changes)
        jit_compile = settings.signatures.jit_compile
        run_dirs = run_paths(run_dir)
        shortlist, frequent = settings.shortlist, settings.shortlist_frequent
        if len(run_dirs) > 1 and not (
            isinstance(shortlist, VocabularyShortlist) or shortlist is None or shortlist == AUTO
        ):
            raise ValueError(
                "An ensemble export scores the whole target vocabulary: a vocabulary "
                "shortlist is learnt from one run's training split, and the members may "
                f"come from different ones. Received: shortlist={shortlist!r} for "
                f"{len(run_dirs)} runs"
            )
        translator = load_ensemble(
            run_dirs,
            max_output_length=settings.max_output_length,
            replace_unknown=settings.replace_unknown,
            precision=settings.precision,
        )
        if settings.precision is not None:
            translator = with_precision(translator, settings.precision)
        if isinstance(shortlist, str) and shortlist == AUTO:
            shortlist = None
            if len(run_dirs) == 1:  # an ensemble scores the whole vocabulary
                shortlist = auto_shortlist_size(
                    translator.target_vectorizer.vocabulary_size,
                    jit_compile,
                    compute_dtype=translator.model.compute_dtype,
                )
        if shortlist is None:
            shortlist = getattr(translator, "shortlist", None)  # a shortlisted Translator's
        if shortlist is not None and not isinstance(shortlist, VocabularyShortlist):
            check_shortlist_size(shortlist, frequent, translator.target_vectorizer.vocabulary_size)
            if jit_compile:
                raise ValueError(
                    "A vocabulary shortlist cannot be combined with `jit_compile` (XLA would "
                    "compile the decoding again for each number of candidates). "
                    f"Received: shortlist={shortlist!r}, jit_compile=True"
                )
            shortlist = VocabularyShortlist.from_run(run_dirs[0], shortlist, frequent)
        run = RunDirectory(run_dirs[0])
        config = TrainConfig.load(run.path)
        if warmup_pairs is None:
            warmup_pairs = run_warmup_pairs(run)
        return cls(
            translator,
            settings.signatures,
            weights=settings.weights,
            shortlist=shortlist,
            warmup_pairs=warmup_pairs,
            run_dir=run_dirs,
            train_config=dataclasses.asdict(config),
        )

    def export(self, base: str | os.PathLike, version: int | None = None) -> ExportedVersion:
        """Writes a new version under `base` atomically.

        Args:
            base: the model's base directory (created if needed).
            version: int >= 1, or `None` for the next integer (1 when empty).

        Returns:
            An `ExportedVersion`.

        Raises:
            FileExistsError: `version` exists already (checked before the
                work starts and again, under a lock, before the rename).
        """
        versions = VersionDirectory(base)
        if version is not None:
            versions.check_available(version)
        with versions.staging() as staging:
            manifest = self.write(staging, version=0)

            def record_version(staged: Path, chosen: int) -> None:
                manifest.version = chosen
                manifest.save(staged)

            chosen, path = versions.commit(staging, version, before_rename=record_version)
        return ExportedVersion(version=chosen, path=path, manifest=manifest)

    def write(self, directory: str | os.PathLike, version: int = 0) -> ExportManifest:
        """Writes the SavedModel, warmup requests and manifest into `directory`.

        Not atomic: use `export` to publish a version to a serving base
        directory. `directory` must be empty or not exist.

        Returns:
            The `ExportManifest` written (with `version`).
        """
        directory = Path(directory)
        if directory.exists() and any(directory.iterdir()):
            raise FileExistsError(f"{str(directory)!r} is not empty")
        archive = self.build_archive()
        archive.write_out(str(directory), verbose=False)
        meta_graph = serve_meta_graph(read_saved_model(directory))
        logs = self.warmup_logs()
        write_warmup_requests(directory, logs)
        manifest = self._manifest(directory, meta_graph, version, len(logs))
        manifest.save(directory)
        return manifest

    def build_archive(self) -> keras.export.ExportArchive:
        """The `ExportArchive` with the model, the vectorizers and every endpoint."""
        archive = keras.export.ExportArchive()
        self.weight_storage.track(archive)  # the model's variables, or their stored form
        if self.shortlist is not None:
            archive.add_variable_collection("vocabulary_shortlist", self.shortlist.variables)
        archive.track(self.translator.source_vectorizer)
        archive.track(self.translator.target_vectorizer)
        for name, (fn, input_signature) in self.signatures.endpoints().items():
            archive.add_endpoint(
                name, self.weight_storage.wrap(fn), input_signature=input_signature
            )
        return archive

    def warmup_logs(self) -> list:
        """The export's warmup `PredictionLog`s (`warmup_logs.warmup_logs`)."""
        translator = self.translator
        return warmup_logs(
            self.signatures,
            self.warmup_pairs,
            translator.target_vectorizer,
            translator.max_output_length,
        )

    def _manifest(self, directory: Path, meta_graph, version: int, warmup_records: int):
        import tensorflow_text

        translator = self.translator
        return ExportManifest(
            version=version,
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            library_versions={
                "keras_attention": keras_attention.__version__,
                "tensorflow": tf.__version__,
                "tensorflow_text": tensorflow_text.__version__,
                "keras": keras.__version__,
            },
            run_dir=self.run_dir,
            ensemble=self.ensemble,
            train_config=self.train_config,
            model_config=jsonable(translator.model.get_config()),
            vocabulary={
                "tokenizer": translator.target_vectorizer.tokenizer,
                "source_size": translator.source_vectorizer.vocabulary_size,
                "target_size": translator.target_vectorizer.vocabulary_size,
                "replace_unknown": translator.replace_unknown,
            },
            max_source_length=translator.source_vectorizer.max_length,
            max_output_length=translator.max_output_length,
            decoding=describe_decoding(self.signatures),
            signatures={
                name: {"inputs": spec["inputs"], "outputs": spec["outputs"]}
                for name, spec in describe_signatures(meta_graph).items()
            },
            jit_compile=self.signatures.jit_compile,
            precision=translator.model.dtype_policy.name,
            weights=self.weight_storage.describe(),
            shortlist=self.shortlist.describe() if self.shortlist is not None else None,
            warmup_records=warmup_records,
            saved_model_sha256=file_sha256(directory / SAVED_MODEL_PB),
        )


def run_paths(run_dir: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The absolute paths of one run directory or of a sequence of them."""
    run_dirs = [run_dir] if isinstance(run_dir, (str, os.PathLike)) else list(run_dir)
    if not run_dirs:
        raise ValueError(f"Expected at least one run directory. Received: run_dir={run_dir!r}")
    return [str(Path(path).resolve()) for path in run_dirs]


def export_translator(
    run_dir: str | os.PathLike | Sequence[str | os.PathLike],
    export_dir: str | os.PathLike,
    version: int | None = None,
    settings: ExportSettings | None = None,
    **changes,
) -> ExportedVersion:
    """Exports the model of `run_dir` as `export_dir/<version>/` (see `TranslatorExporter`).

    Several run directories with the same vocabularies export their ensemble
    (`TranslatorExporter.from_run`).

    `settings` (an `ExportSettings`, see `TranslatorExporter.from_run`)
    default to `COMMAND_SETTINGS`, those of `keras-attention export` (a
    given `settings` is taken as it is: `ExportSettings()` exports in the
    trained policy with the whole vocabulary; start from `COMMAND_SETTINGS`,
    or pass `changes`, to keep the command's choices):
    precision `"auto"` (resolved on this machine), shortlist `"auto"` (100
    target ids per source id for a target vocabulary of 10,000 ids or more
    without `jit_compile`), weights `"auto"` (bfloat16 when the export
    computes in bfloat16, else float32). `changes` are fields of
    `ExportSettings` or `SignatureOptions` by name.

    Raises:
        FileExistsError: `version` exists already (checked before the model is loaded).
        FileNotFoundError: `run_dir` is not a trained run directory.
        ValueError: an invalid argument.
    """
    settings = ExportSettings.of(settings or COMMAND_SETTINGS, **changes)
    if version is not None:
        VersionDirectory(export_dir).check_available(version)
    return TranslatorExporter.from_run(run_dir, settings).export(export_dir, version)
