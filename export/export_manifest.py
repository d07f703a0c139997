"""`ExportManifest`: what an export holds, as `assets.extra/export_manifest.json`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from keras_attention.decoding.renamed_options import with_max_steps

MANIFEST_FILE = Path("assets.extra") / "export_manifest.json"
"""Where the manifest lives, relative to the version directory.

TF Serving copies `assets.extra/` along with the version and reads nothing
in it but the warmup file, so the manifest travels with the model.
"""

FORMAT = "keras-attention-export"
FORMAT_VERSION = 1


@dataclasses.dataclass
class ExportManifest:
    """The description of one exported version, saved as JSON beside the model.

    Attributes:
        version: the integer version (the directory name).
        created: UTC time of the export, ISO 8601.
        library_versions: `keras_attention`, `tensorflow`, `tensorflow_text`
            and `keras` versions of the exporting process.
        run_dir: the training run the model came from (`None` if unknown);
            for an ensemble, its first member's.
        train_config: that run's `TrainConfig` as a dict (`{}` if unknown).
        model_config: the `Seq2Seq`'s `get_config()` (an `Ensemble`'s: its
            members' serialized under `members`).
        vocabulary: `{"tokenizer": "words" | "subwords", "source_size": int,
            "target_size": int, "replace_unknown": bool}` (`tokenizer` is
            absent from manifests written before it existed: words;
            `replace_unknown`, whether the signatures copy the most attended
            source token for each `[UNK]`, from those written before it was
            recorded).
        max_source_length: source tokens kept; longer inputs are truncated.
        max_output_length: most tokens of a translation (decoding steps,
            counting the end token).
        decoding: signature name -> the strategy's config (`beam_width`,
            `length_penalty`, `max_steps`, ...). A manifest written before
            `max_steps` was renamed holds `max_length`; `from_json` reads it as
            `max_steps`.
        signatures: signature name -> `{"inputs": {alias: {"dtype", "shape"}},
            "outputs": {...}}`, with `-1` for a dynamic dimension.
        jit_compile: whether the decoding loops are XLA-compiled.
        precision: the dtype policy the signatures compute in (`None` in
            manifests written before it was recorded).
        weights: how the variables are stored (`WeightStorage.describe()`):
            `{"weights": "float32" | "bfloat16" | "int8", "requested": "auto"
            or the storage, "value_dtype": the dtypes the model reads the
            stored values in ("float32", "bfloat16", or both joined by ", "),
            "replaced": int, "bytes": int}`; without `requested` and
            `value_dtype` in manifests written before 2026-12-03, `{"weights":
            "float32"}` in those written before it was recorded.
        shortlist: the vocabulary shortlist of the decoding signatures
            (`VocabularyShortlist.describe()`: `k`, `frequent`, `measure`,
            `pairs`, `special_ids`, `table_shape`, `table_bytes`), or `None`
            when they score the whole target vocabulary.
        ensemble: the members' training runs, in order, when the model is
            an `Ensemble` of several (`None` for one model, and in manifests
            written before ensembles existed).
        warmup_records: the number of records in the warmup file.
        saved_model_sha256: the SHA-256 of `saved_model.pb`, to tell a
            modified export.
        format, format_version: identify this file.
    """

    version: int
    created: str
    library_versions: dict[str, str]
    run_dir: str | None
    train_config: dict[str, Any]
    model_config: dict[str, Any]
    vocabulary: dict[str, Any]
    max_source_length: int | None
    max_output_length: int
    decoding: dict[str, dict[str, Any]]
    signatures: dict[str, dict[str, Any]]
    jit_compile: bool
    warmup_records: int
    saved_model_sha256: str
    precision: str | None = None
    weights: dict[str, Any] = dataclasses.field(default_factory=lambda: {"weights": "float32"})
    shortlist: dict[str, Any] | None = None
    ensemble: list[str] | None = None
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ExportManifest:
        values = json.loads(text)
        if values.get("format") != FORMAT:
            raise ValueError(
                f"Not a keras-attention export manifest. Received: format={values.get('format')!r}"
            )
        known = {field.name for field in dataclasses.fields(cls)}
        if isinstance(values.get("decoding"), dict):
            values["decoding"] = {
                name: with_max_steps(config, warn=False) if isinstance(config, dict) else config
                for name, config in values["decoding"].items()
            }
        return cls(**{key: value for key, value in values.items() if key in known})

    def save(self, version_dir: str | os.PathLike) -> Path:
        path = Path(version_dir) / MANIFEST_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, version_dir: str | os.PathLike) -> ExportManifest:
        """Reads `version_dir/assets.extra/export_manifest.json`.

        Raises:
            FileNotFoundError: there is no manifest.
            ValueError: it is not a keras-attention manifest.
        """
        path = Path(version_dir) / MANIFEST_FILE
        if not path.is_file():
            raise FileNotFoundError(f"No {MANIFEST_FILE} in {str(version_dir)!r}")
        return cls.from_json(path.read_text(encoding="utf-8"))


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def jsonable(value: Any) -> Any:
    """`value` with everything JSON cannot hold turned into strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
