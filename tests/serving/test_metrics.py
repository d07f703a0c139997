"""Prometheus text rendering of counters and latency histograms."""

import threading

from keras_attention.serving.server.metrics import (
    LATENCY_BUCKETS_US,
    REQUEST_COUNT,
    REQUEST_LATENCY,
    Metrics,
)


def test_counters_accumulate_across_threads():
    metrics = Metrics()
    labels = {"model_name": "m", "status": "OK"}

    def bump():
        for _ in range(1000):
            metrics.increment(REQUEST_COUNT, labels)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert metrics.counter_value(REQUEST_COUNT, labels) == 4000
    assert f'{REQUEST_COUNT}{{model_name="m",status="OK"}} 4000' in metrics.render()


def test_histogram_buckets_are_cumulative():
    metrics = Metrics()
    labels = {"model_name": "m", "API": "Predict", "entrypoint": "GRPC", "status": "OK"}
    for value in (5.0, 15.0, 15.0, 1e12):  # below the first bound, in the second, past the last
        metrics.observe(REQUEST_LATENCY, labels, value)
    lines = metrics.render().splitlines()
    assert f"# TYPE {REQUEST_LATENCY} histogram" in lines
    buckets = [line for line in lines if line.startswith(f"{REQUEST_LATENCY}_bucket")]
    assert len(buckets) == len(LATENCY_BUCKETS_US) + 1
    counts = [int(line.rsplit(" ", 1)[1]) for line in buckets]
    assert counts[0] == 1 and counts[1] == 3 and counts[-2] == 3 and counts[-1] == 4
    assert counts == sorted(counts)
    assert any(line.endswith(" 4") and "_count" in line for line in lines)
    assert LATENCY_BUCKETS_US[0] == 10 and abs(LATENCY_BUCKETS_US[1] - 18) < 1e-9


def test_label_values_are_escaped():
    metrics = Metrics()
    metrics.increment(REQUEST_COUNT, {"model_name": 'a"b\\c', "status": "OK"})
    assert 'model_name="a\\"b\\\\c"' in metrics.render()
