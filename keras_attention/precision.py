"""`--precision auto`: the dtype policy this machine computes fastest in.

A policy (`float32`, `mixed_bfloat16`, `mixed_float16`) is resolved from
`auto` by what the machine reports, in this order:

1. A GPU that TensorFlow sees: `mixed_bfloat16`, unless TensorFlow reports a
   compute capability below 8.0 (before Ampere GPUs had no bfloat16 units):
   then `float32`.
2. A CPU whose oneDNN is capped below bfloat16 instructions by the
   environment variable `ONEDNN_MAX_CPU_ISA` (`ONEDNN_ISAS_WITHOUT_BF16`,
   e.g. `AVX2`): `float32`, whatever the CPU has (TensorFlow 2.21's oneDNN
   then has no bfloat16 matmul: one aborts the process).
3. A CPU whose `/proc/cpuinfo` flags name a native bfloat16 instruction set
   (`NATIVE_BF16_FLAGS`: `avx512_bf16`, `amx_bf16`, or Arm's `bf16`):
   `mixed_bfloat16`; flags without one: `float32` (bfloat16 matmuls are then
   emulated, no faster than float32).
4. No `/proc/cpuinfo` (macOS, Windows): a probe of about one second times a
   bfloat16 and a float32 matmul (`matmul_probe`) and picks
   `mixed_bfloat16` when it runs at least `PROBE_MARGIN` times as fast.

The measurements behind the rule: docs/benchmarks.md ("Training throughput").

TensorFlow is imported only to look for GPUs and to run the probe, so
resolving an explicit policy costs nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from keras_attention.auto import AUTO

logger = logging.getLogger(__name__)

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
"""The dtype policies a run may compute in (`auto` resolves to one of them)."""

NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")
"""`/proc/cpuinfo` flags of CPUs with native bfloat16 arithmetic: x86 AMX and
AVX512_BF16, and Arm's BF16 extension (on the `Features` line)."""

ONEDNN_ISAS_WITHOUT_BF16 = (
    "SSE41",
    "AVX",
    "AVX2",
    "AVX2_VNNI",
    "AVX2_VNNI_2",
    "AVX512_CORE",
    "AVX512_CORE_VNNI",
)
"""Values of `ONEDNN_MAX_CPU_ISA` (oneDNN's CPU dispatcher control) that keep
oneDNN from bfloat16 dot-product instructions: every instruction set below
`AVX512_CORE_BF16`."""


def onednn_cap_without_bf16(isa: str | None) -> bool:
    """Whether an `ONEDNN_MAX_CPU_ISA` value (any case; `None` or `""`: no cap) keeps
    oneDNN from bfloat16 instructions (`ONEDNN_ISAS_WITHOUT_BF16`)."""
    return (isa or "").strip().upper() in ONEDNN_ISAS_WITHOUT_BF16


PROBE_MARGIN = 1.2
"""The probe picks bfloat16 when its matmul runs at least this many times as
fast as float32's (a margin over the probe's own noise)."""

CPUINFO = Path("/proc/cpuinfo")


@dataclasses.dataclass(frozen=True)
class PrecisionChoice:
    """A resolved precision and why.

    Attributes:
        policy: the dtype policy, one of `POLICIES`.
        requested: what was asked for (`"auto"` or the policy itself).
        reason: how `auto` was resolved, or `"given"`.
    """

    policy: str
    requested: str
    reason: str

    def describe(self) -> str:
        """One line, e.g. `mixed_bfloat16 (auto: the CPU has native bfloat16: avx512_bf16)`."""
        if self.requested != AUTO:
            return self.policy
        return f"{self.policy} (auto: {self.reason})"


def cpu_flags(path: str | os.PathLike = CPUINFO) -> frozenset[str] | None:
    """The CPU's feature flags from a `/proc/cpuinfo` file, or `None` without one.

    Reads the first `flags` (x86) or `Features` (Arm) line.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return None


def gpu_compute_capabilities() -> list[tuple[int, int] | None]:
    """One entry per GPU TensorFlow sees: its compute capability, or `None` if unreported."""
    import tensorflow as tf

    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        capabilities.append(tuple(capability) if capability else None)
    return capabilities


def matmul_probe(size: int = 512, seconds: float = 0.5) -> float:
    """How many times as fast a bfloat16 `size x size` matmul runs as a float32 one.

    Each dtype runs for about `seconds` (after one warm-up call); the best
    call of each is compared.
    """
    import tensorflow as tf

    def best_seconds(dtype) -> float:
        x = tf.cast(tf.random.normal((size, size), seed=0), dtype)
        matmul = tf.function(lambda a: tf.matmul(a, a))
        matmul(x).numpy()
        best, end = float("inf"), time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.perf_counter()
            matmul(x).numpy()
            best = min(best, time.perf_counter() - start)
        return best

    return best_seconds(tf.float32) / best_seconds(tf.bfloat16)


def detect_precision(
    cpuinfo: str | os.PathLike = CPUINFO,
    gpus: list[tuple[int, int] | None] | None = None,
    probe: Callable[[], float] = matmul_probe,
    environ: Mapping[str, str] = os.environ,
) -> PrecisionChoice:
    """Resolves `auto` on this machine (see the module docstring for the rule).

    Args:
        cpuinfo: the file to read the CPU flags from (`cpu_flags`); a
            missing file means no flags are known. Defaults to `/proc/cpuinfo`.
        gpus: the GPUs' compute capabilities (default:
            `gpu_compute_capabilities()`).
        probe: returns bfloat16's matmul speed over float32's; called only
            when there are no GPUs and no CPU flags.
        environ: the environment to read `ONEDNN_MAX_CPU_ISA` from.

    Returns:
        A `PrecisionChoice` with `requested="auto"`.
    """
    if gpus is None:
        gpus = gpu_compute_capabilities()
    if gpus:
        known = [capability for capability in gpus if capability is not None]
        if known and min(known) < (8, 0):
            return _auto(
                "float32",
                f"GPU compute capability {'.'.join(map(str, min(known)))} has no bfloat16 units",
            )
        return _auto("mixed_bfloat16", f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''}")
    isa = environ.get("ONEDNN_MAX_CPU_ISA", "")
    if onednn_cap_without_bf16(isa):
        return _auto(
            "float32",
            f"ONEDNN_MAX_CPU_ISA={isa.strip().upper()} keeps oneDNN from bfloat16 instructions",
        )
    flags = cpu_flags(cpuinfo)
    if flags is not None:
        native = sorted(set(flags) & set(NATIVE_BF16_FLAGS))
        if native:
            return _auto("mixed_bfloat16", f"the CPU has native bfloat16: {', '.join(native)}")
        return _auto("float32", "the CPU has no native bfloat16 (no avx512_bf16, amx_bf16, bf16)")
    ratio = probe()
    policy = "mixed_bfloat16" if ratio >= PROBE_MARGIN else "float32"
    return _auto(policy, f"a bfloat16 matmul ran {ratio:.2f}x float32 in a probe")


@functools.lru_cache(maxsize=1)
def _detected() -> PrecisionChoice:
    choice = detect_precision()
    logger.info("precision auto resolves to %s", choice.describe())
    return choice


def resolve_precision(requested: str) -> PrecisionChoice:
    """`requested` as a `PrecisionChoice`: a policy as given, or `auto` resolved.

    `auto` is detected once per process (`detect_precision`).

    Raises:
        ValueError: `requested` is neither `"auto"` nor one of `POLICIES`.
    """
    if requested == AUTO:
        return _detected()
    if requested not in POLICIES:
        raise ValueError(
            f"`precision` must be one of {(AUTO, *POLICIES)}. Received: precision={requested!r}"
        )
    return PrecisionChoice(policy=requested, requested=requested, reason="given")


def _auto(policy: str, reason: str) -> PrecisionChoice:
    return PrecisionChoice(policy=policy, requested=AUTO, reason=reason)
