"""`CheckReport`: what `ExportChecker` found in one export."""

from __future__ import annotations

import dataclasses
from typing import Any


def outcome_lines(warnings: list[str], errors: list[str]) -> list[str]:
    """A check report's last lines: each warning, each error, then the result."""
    return [
        *(f"WARNING: {warning}" for warning in warnings),
        *(f"ERROR: {error}" for error in errors),
        "Result: OK" if not errors else f"Result: FAILED ({len(errors)} errors)",
    ]


TRANSLATOR = "translator"
"""`CheckReport.contract` of a keras-attention translator export (text in, translations out)."""
GENERIC = "generic"
"""`CheckReport.contract` of any other SavedModel (its own signatures and warmup requests)."""


def _rows(batch_size: int | None) -> str:
    return "?" if batch_size is None else str(batch_size)


@dataclasses.dataclass
class CheckReport:
    """The findings of `ExportChecker.check`.

    Attributes:
        path: the version directory checked.
        errors: problems that make the export unusable by TF Serving (or not
            what keras-attention exports); the check fails if there is any.
        warnings: things worth knowing that do not fail the check.
        signatures: name -> `{"method_name", "inputs", "outputs"}` (see
            `describe_signatures`).
        ops: op type -> origin (`"core"`, `"tf-text"` or `"NOT ALLOWED"`).
        op_source: where the allowed op set came from.
        warmup: one entry per replayed warmup request: `{"signature",
            "batch_size", "seconds"}`.
        manifest: the export manifest as a dict, if there is one.
        loaded: whether the Session load succeeded.
        native: with `--native`, the C API run: `{"requests", "seconds",
            "max_float_difference"}` (`None` if not run or if it failed).
        contract: what the signatures were checked against: `TRANSLATOR` or `GENERIC`.
    """

    path: str
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    signatures: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    ops: dict[str, str] = dataclasses.field(default_factory=dict)
    op_source: str = ""
    warmup: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    manifest: dict[str, Any] | None = None
    loaded: bool = False
    native: dict[str, Any] | None = None
    contract: str = TRANSLATOR

    @property
    def ok(self) -> bool:
        return not self.errors

    def format(self) -> str:
        """A human-readable report (what `keras-attention check-export` prints)."""
        lines = [f"Export: {self.path}"]
        if self.manifest:
            versions = self.manifest.get("library_versions", {})
            lines.append(
                f"Manifest: version {self.manifest.get('version')}, created "
                f"{self.manifest.get('created')} with keras-attention "
                f"{versions.get('keras_attention')}, tensorflow {versions.get('tensorflow')}; "
                f"max_source_length {self.manifest.get('max_source_length')}, "
                f"max_output_length {self.manifest.get('max_output_length')}"
            )
            for name, config in sorted(self.manifest.get("decoding", {}).items()):
                settings = ", ".join(f"{k}={v}" for k, v in sorted(config.items()))
                lines.append(f"  {name}: {settings}")
        if self.signatures:
            lines.append("Signatures:")
            for name, signature in self.signatures.items():
                lines.append(f"  {name} ({signature['method_name']})")
                for kind in ("inputs", "outputs"):
                    lines.append(f"    {kind}:")
                    for alias, spec in signature[kind].items():
                        shape = "?" if spec["shape"] is None else str(spec["shape"])
                        lines.append(
                            f"      {alias:<15} {spec['dtype']:<10} {shape:<14} {spec['name']}"
                        )
        if self.ops:
            by_origin: dict[str, list[str]] = {}
            for op, origin in sorted(self.ops.items()):
                by_origin.setdefault(origin, []).append(op)
            lines.append(
                f"Ops: {len(self.ops)} distinct op types in the graph and its function "
                f"library; allowed: {self.op_source}"
            )
            for origin in sorted(by_origin):
                lines.append(
                    f"  {origin} ({len(by_origin[origin])}): {', '.join(by_origin[origin])}"
                )
        if self.loaded:
            lines.append("Loaded with tag 'serve' in a tf.compat.v1.Session (TF Serving's path)")
        if self.warmup:
            lines.append(f"Warmup: {len(self.warmup)} requests replayed")
            for entry in self.warmup:
                lines.append(
                    f"  {entry['signature']:<18} batch {_rows(entry['batch_size']):>4}: "
                    f"{entry['seconds'] * 1000:.1f} ms"
                )
        if self.contract == GENERIC:
            lines.append("Checked as: a SavedModel of its own (not a keras-attention translator)")
        if self.native and self.contract == GENERIC:
            ran = self.native["requests"]
            lines.append(
                "TensorFlow's C API (TF_LoadSessionFromSavedModel, no Python TensorFlow): "
                + (
                    f"loaded, and {ran} request{'s' if ran != 1 else ''} (the warmup file's, and "
                    "one per signature with "
                    "defaults giving every input) gave the Session path's outputs (largest float "
                    f"difference {self.native['max_float_difference']:.1e}; "
                    if ran
                    else "loaded; no warmup requests to run ("
                )
                + f"{self.native['seconds']:.1f} s)"
            )
        elif self.native:
            lines.append(
                f"TensorFlow's C API (TF_LoadSessionFromSavedModel, no Python TensorFlow): "
                f"{self.native['requests']} requests (the warmup's, and each signature's "
                "decoding inputs all given) gave the Session path's outputs "
                f"(largest float difference {self.native['max_float_difference']:.1e}; "
                f"{self.native['seconds']:.1f} s)"
            )
        return "\n".join(lines + outcome_lines(self.warnings, self.errors))
