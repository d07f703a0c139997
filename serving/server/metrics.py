"""Request metrics in Prometheus' text format, named like TF Serving's."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping

# TF Serving's samplers use Buckets::Exponential(10, 1.8, 33) (microseconds, ~20 minutes).
LATENCY_BUCKETS_US: tuple[float, ...] = tuple(10 * 1.8**i for i in range(33))

REQUEST_COUNT = ":tensorflow:serving:request_count"
REQUEST_LATENCY = ":tensorflow:serving:request_latency"
RUNTIME_LATENCY = ":tensorflow:serving:runtime_latency"
MODEL_LOAD_COUNT = ":tensorflow:serving:model_load_count"

_HELP = {
    REQUEST_COUNT: ("counter", "The total number of requests."),
    REQUEST_LATENCY: (
        "histogram",
        "Distribution of wall time (in microseconds) for Tensorflow Serving request.",
    ),
    RUNTIME_LATENCY: (
        "histogram",
        "Distribution of wall time (in microseconds) for Tensorflow runtime.",
    ),
    MODEL_LOAD_COUNT: ("counter", "The number of model version loads, by outcome."),
}


class Metrics:
    """A small thread-safe registry of counters and latency histograms.

    Metric names follow TF Serving's exporter (`/tensorflow/serving/request_count`
    becomes `:tensorflow:serving:request_count`), so dashboards built for the
    real server read the local one:

    - `:tensorflow:serving:request_count{model_name, status}`
    - `:tensorflow:serving:request_latency{model_name, API, entrypoint, status}`
      (microseconds)
    - `:tensorflow:serving:runtime_latency{model_name, API, runtime}`
      (microseconds in `Session.run`)

    Example:

    >>> metrics = Metrics()
    >>> metrics.increment(REQUEST_COUNT, {"model_name": "m", "status": "OK"})
    >>> 'status="OK"} 1' in metrics.render()
    True
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._counters: dict[str, dict[tuple, float]] = {}
        self._histograms: dict[str, dict[tuple, list]] = {}

    def increment(self, name: str, labels: Mapping[str, str], amount: float = 1.0) -> None:
        """Adds `amount` to the counter `name{labels}`."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._counters.setdefault(name, {})
            series[key] = series.get(key, 0.0) + amount

    def observe(self, name: str, labels: Mapping[str, str], value: float) -> None:
        """Records `value` in the histogram `name{labels}`."""
        key = tuple(sorted(labels.items()))
        index = bisect.bisect_left(LATENCY_BUCKETS_US, value)
        with self._lock:
            series = self._histograms.setdefault(name, {})
            entry = series.get(key)
            if entry is None:
                entry = series[key] = [[0] * (len(LATENCY_BUCKETS_US) + 1), 0.0, 0]
            entry[0][index] += 1
            entry[1] += value
            entry[2] += 1

    def counter_value(self, name: str, labels: Mapping[str, str]) -> float:
        """The current value of a counter (0 if never incremented)."""
        with self._lock:
            return self._counters.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def render(self) -> str:
        """The Prometheus text exposition of every metric."""
        lines: list[str] = []
        with self._lock:
            for name in sorted(self._counters):
                kind, help_text = _HELP.get(name, ("counter", name))
                lines.append(f"# TYPE {name} {kind}")
                for key, value in sorted(self._counters[name].items()):
                    lines.append(f"{name}{_labels(key)} {_number(value)}")
            for name in sorted(self._histograms):
                lines.append(f"# TYPE {name} histogram")
                for key, (buckets, total, count) in sorted(self._histograms[name].items()):
                    cumulative = 0
                    for bound, bucket in zip(LATENCY_BUCKETS_US, buckets, strict=False):
                        cumulative += bucket
                        lines.append(
                            f"{name}_bucket{_labels(key + (('le', _number(bound)),))} {cumulative}"
                        )
                    lines.append(f"{name}_bucket{_labels(key + (('le', '+Inf'),))} {count}")
                    lines.append(f"{name}_sum{_labels(key)} {_number(total)}")
                    lines.append(f"{name}_count{_labels(key)} {count}")
        return "\n".join(lines) + "\n"


def _labels(key: tuple) -> str:
    if not key:
        return ""
    escaped = (
        f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in key
    )
    return "{" + ",".join(escaped) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
