"""Server-side batching: TF Serving's scheduling semantics, and each request gets its own rows.

Scheduling is checked with a scripted runner (a batch run that waits until the
test releases it, so which requests share a batch is decided by the test, not
by timing); correctness end to end over real gRPC with the stand-in export,
against the NumPy reference of `helpers.stand_in_export`.
"""

import random
import threading
import time

import grpc
import numpy as np
import pytest
from helpers.serving import add_version
from helpers.stand_in_export import reference_outputs
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server import config_files
from keras_attention.serving.server.batching import Batcher, BatchingOptions
from keras_attention_client import ServingError
from keras_attention_client.wire.tensors import ndarray_to_tensor_proto, tensor_proto_to_ndarray

FEED = "text"
FETCHES = ["echo", "padded"]


class ScriptedRun:
    """A batch "Session run": echoes its input, and a padded [batch, width] output.

    `padded` row i holds `len(text_i)` copies of the text, padded with b"" to the
    batch's longest text, like the translator's `tokens`. Each run records its
    batch and, when `hold` is set, waits until `release()`.
    """

    def __init__(self, hold: bool = False):
        self.batches: list[list[bytes]] = []
        self.started = threading.Semaphore(0)
        self._gate = threading.Event()
        if not hold:
            self._gate.set()

    def release(self) -> None:
        self._gate.set()

    def __call__(self, session, signature_name, feeds, fetches, timeout_in_ms):
        texts = list(feeds[FEED])
        self.batches.append(texts)
        self.started.release()
        assert self._gate.wait(60), "the test never released the batch"
        width = max(len(t) for t in texts)
        padded = np.full((len(texts), width), b"", dtype=object)
        for i, text in enumerate(texts):
            padded[i, : len(text)] = text
        return {"echo": np.array(texts, dtype=object), "padded": padded}


def _submit(batcher, texts, results, key, timeout_in_ms=None):
    def call():
        try:
            results[key] = batcher.run(
                "session", "sig", {FEED: np.array(texts, dtype=object)}, FETCHES, timeout_in_ms
            )
        except ServingError as error:
            results[key] = error

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def _wait_until(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _queued(batcher) -> int:
    with batcher._cond:
        return sum(len(b) for batches in batcher._queues.values() for b in batches)


def test_requests_arriving_while_the_thread_is_busy_share_one_run():
    run = ScriptedRun(hold=True)
    batcher = Batcher(BatchingOptions(num_batch_threads=1), run)
    results = {}
    try:
        first = _submit(batcher, [b"a"], results, "first")
        assert run.started.acquire(timeout=30)  # the first runs alone, and is held
        others = [_submit(batcher, [b"b" * i] * i, results, i) for i in (1, 2, 3)]
        _wait_until(lambda: _queued(batcher) == 3)
        run.release()
        for thread in [first, *others]:
            thread.join(30)
    finally:
        batcher.stop()
    assert [len(b) for b in run.batches] == [1, 6]
    assert sorted(run.batches[1]) == sorted([b"b", b"bb", b"bb", b"bbb", b"bbb", b"bbb"])
    assert list(batcher.batch_sizes) == [1, 6]
    for i in (1, 2, 3):
        echo, padded = results[i]["echo"], results[i]["padded"]
        assert echo.tolist() == [b"b" * i] * i  # its own rows, none of the others'
        # padded to the batch's widest text (3), then cut back to this request's own width
        assert padded.shape == (i, i)
        assert padded.tolist() == [[b"b" * i] * i] * i


def test_stop_fails_queued_requests_and_lets_the_running_batch_finish():
    run = ScriptedRun(hold=True)
    batcher = Batcher(BatchingOptions(num_batch_threads=1), run)
    results = {}
    threads = [_submit(batcher, [b"a"], results, "running")]
    assert run.started.acquire(timeout=30)
    threads.append(_submit(batcher, [b"b"], results, "queued"))
    _wait_until(lambda: _queued(batcher) == 1)
    stopping = threading.Thread(target=batcher.stop)
    stopping.start()
    _wait_until(lambda: "queued" in results)
    assert (results["queued"].code, results["queued"].message) == (
        "UNAVAILABLE",
        "The model server is stopping",
    )
    run.release()
    for thread in [*threads, stopping]:
        thread.join(30)
    assert results["running"]["echo"].tolist() == [b"a"]
    with pytest.raises(ServingError, match="stopping"):
        batcher.run("session", "sig", {FEED: np.array([b"c"], dtype=object)}, FETCHES)


def test_max_batch_size_splits_and_a_full_queue_is_unavailable():
    run = ScriptedRun(hold=True)
    options = BatchingOptions(max_batch_size=2, max_enqueued_batches=2, num_batch_threads=1)
    batcher = Batcher(options, run)
    results = {}
    try:
        threads = [_submit(batcher, [b"x"], results, "running")]
        assert run.started.acquire(timeout=30)
        threads += [_submit(batcher, [bytes([65 + i])], results, i) for i in range(4)]
        _wait_until(lambda: _queued(batcher) == 4)  # two batches of two: the queue is full
        with pytest.raises(ServingError) as caught:
            batcher.run("session", "sig", {FEED: np.array([b"z"], dtype=object)}, FETCHES)
        assert caught.value.code == "UNAVAILABLE"
        assert "batch scheduling queue to which this task was submitted is full" in str(
            caught.value
        )
        with pytest.raises(ServingError, match="Task size 3 is larger than maximum input batch"):
            batcher.run("session", "sig", {FEED: np.array([b"a"] * 3, dtype=object)}, FETCHES)
        run.release()
        for thread in threads:
            thread.join(30)
    finally:
        batcher.stop()
    assert [len(b) for b in run.batches] == [1, 2, 2]
    assert {results[i]["echo"].tolist()[0] for i in range(4)} == {b"A", b"B", b"C", b"D"}


def test_allowed_batch_sizes_pad_with_the_first_row_and_answer_only_real_rows():
    run = ScriptedRun()
    batcher = Batcher(BatchingOptions(max_batch_size=4, allowed_batch_sizes=(2, 4)), run)
    try:
        outputs = batcher.run(
            "session", "sig", {FEED: np.array([b"p", b"q", b"r"], object)}, FETCHES
        )
        echo, padded = outputs["echo"], outputs["padded"]
    finally:
        batcher.stop()
    assert run.batches == [[b"p", b"q", b"r", b"p"]]
    assert echo.tolist() == [b"p", b"q", b"r"]
    assert padded.tolist() == [[b"p"], [b"q"], [b"r"]]


def test_batch_timeout_lets_a_lone_request_wait_but_not_a_full_batch():
    timeout = 0.3
    run = ScriptedRun()
    batcher = Batcher(
        BatchingOptions(max_batch_size=2, batch_timeout_micros=int(timeout * 1e6)), run
    )
    try:
        began = time.monotonic()
        batcher.run("session", "sig", {FEED: np.array([b"a"], object)}, FETCHES)
        assert time.monotonic() - began >= timeout  # waited for company that never came
        results = {}
        long = BatchingOptions(max_batch_size=2, batch_timeout_micros=60_000_000)
        batcher2 = Batcher(long, run)
        began = time.monotonic()
        threads = [_submit(batcher2, [b"b"], results, i) for i in range(2)]
        for thread in threads:
            thread.join(60)
        batcher2.stop()
        assert time.monotonic() - began < 50  # a full batch does not wait the 60 s
    finally:
        batcher.stop()
    assert [len(b) for b in run.batches] == [1, 2]


def test_an_expired_request_is_answered_and_left_out_of_its_batch():
    run = ScriptedRun(hold=True)
    batcher = Batcher(BatchingOptions(num_batch_threads=1), run)
    results = {}
    try:
        first = _submit(batcher, [b"a"], results, "first")
        assert run.started.acquire(timeout=30)
        late = _submit(batcher, [b"late"], results, "late", timeout_in_ms=1)
        kept = _submit(batcher, [b"kept"], results, "kept")
        _wait_until(lambda: _queued(batcher) == 2)
        time.sleep(0.01)  # past the 1 ms deadline
        run.release()
        for thread in (first, late, kept):
            thread.join(30)
    finally:
        batcher.stop()
    assert results["late"].code == "DEADLINE_EXCEEDED"
    assert run.batches[1] == [b"kept"]


def test_errors_reach_every_request_of_the_batch():
    def failing(session, signature_name, feeds, fetches, timeout_in_ms):
        raise ServingError("INVALID_ARGUMENT", "bad batch")

    def wrong_rows(session, signature_name, feeds, fetches, timeout_in_ms):
        return {"echo": np.zeros(1, np.float32), "padded": np.zeros((1, 1), np.float32)}

    for run, code in [(failing, "INVALID_ARGUMENT"), (wrong_rows, "INTERNAL")]:
        batcher = Batcher(BatchingOptions(), run)
        try:
            with pytest.raises(ServingError) as caught:
                batcher.run("session", "sig", {FEED: np.array([b"a", b"b"], object)}, FETCHES)
            assert caught.value.code == code
        finally:
            batcher.stop()
    batcher = Batcher(BatchingOptions(), ScriptedRun())
    try:
        with pytest.raises(ServingError, match="equal 0th-dimension size"):
            batcher.run(
                "session", "sig", {FEED: np.array([b"a"], object), "n": np.zeros(2)}, FETCHES
            )
    finally:
        batcher.stop()


def test_options_validation_and_tf_servings_defaults(tmp_path):
    defaults = BatchingOptions.from_proto(config_files.batching_parameters_class()())
    assert (defaults.max_batch_size, defaults.batch_timeout_micros) == (1000, 0)
    assert defaults.max_enqueued_batches == 10 and defaults.num_batch_threads >= 1
    path = tmp_path / "batching.txt"
    path.write_text(
        "max_batch_size { value: 8 } batch_timeout_micros { value: 500 }\n"
        "num_batch_threads { value: 3 } allowed_batch_sizes: [2, 4, 8]\n"
    )
    options = BatchingOptions.from_proto(config_files.read_batching_parameters(path))
    assert options == BatchingOptions(
        max_batch_size=8,
        batch_timeout_micros=500,
        max_enqueued_batches=10,
        num_batch_threads=3,
        allowed_batch_sizes=(2, 4, 8),
    )
    assert [options.padded_size(n) for n in (1, 2, 3, 8)] == [2, 2, 4, 8]
    with pytest.raises(ValueError, match="Last entry in allowed_batch_sizes must match"):
        BatchingOptions(max_batch_size=8, allowed_batch_sizes=(2, 4))
    with pytest.raises(ValueError, match="monotonically increasing"):
        BatchingOptions(max_batch_size=8, allowed_batch_sizes=(4, 2, 8))
    with pytest.raises(ValueError, match="num_batch_threads must be >= 1"):
        BatchingOptions(num_batch_threads=0)


# End to end over gRPC -------------------------------------------------------------------------

WORDS = ["the", "cat", "a", "dog", "sat", "on", "mat", "Hello", "x"]


@pytest.fixture()
def batching_server(exports, tmp_path):
    base = tmp_path / "translator"
    add_version(base, 1, exports["upper"])
    parameters = tmp_path / "batching_parameters.txt"
    # A small max_batch_size and a timeout long next to a request (1 s): batches
    # mostly close when full, so concurrent requests share runs even on a busy machine.
    parameters.write_text(
        "max_batch_size { value: 4 } batch_timeout_micros { value: 1000000 }\n"
        "max_enqueued_batches { value: 100 } num_batch_threads { value: 2 }\n"
    )
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(base),
        file_system_poll_wait_seconds=0.2,
        enable_batching=True,
        batching_parameters_file=str(parameters),
        grpc_max_threads=32,
    )
    with ModelServer(options) as server:
        yield server, base


def _predict(stub, texts, signature, output_filter=()):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "translator"
    request.model_spec.signature_name = signature
    request.output_filter.extend(output_filter)
    ndarray_to_tensor_proto(np.array(texts, dtype=object), out=request.inputs["text"])
    response = stub.Predict(request, timeout=60)
    outputs = {k: tensor_proto_to_ndarray(v) for k, v in response.outputs.items()}
    return response.model_spec.version.value, outputs


def _check(outputs, texts, signature, variant):
    expected = reference_outputs(texts, variant=variant, signature=signature)
    for name, value in outputs.items():
        if expected[name].dtype == np.float32:
            np.testing.assert_allclose(value, expected[name], rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(value, expected[name])


def test_concurrent_requests_with_mixed_signatures_each_get_their_own_rows(batching_server):
    server, _ = batching_server
    channel = grpc.insecure_channel(server.address)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    failures, rows, start = [], [], threading.Barrier(16)

    def client(index: int) -> None:
        rng = random.Random(index)
        start.wait()
        for step in range(6):
            texts = [
                " ".join(rng.choices(WORDS, k=rng.randint(0, 6))) for _ in range(rng.randint(1, 2))
            ]
            signature = ("serving_default", "beam_search")[(index + step) % 2]
            output_filter = ("translation", "score") if step == 5 else ()
            rows.append(len(texts))
            try:
                version, outputs = _predict(stub, texts, signature, output_filter)
                assert version == 1
                assert sorted(outputs) == sorted(output_filter or reference_outputs([]))
                _check(outputs, texts, signature, "upper")
            except Exception as error:  # noqa: BLE001 - reported below
                failures.append((index, step, texts, error))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    channel.close()
    assert not failures, failures[:3]
    sizes = list(server.batcher.batch_sizes)
    assert sum(sizes) == sum(rows)  # every row ran exactly once
    assert max(sizes) > 1  # requests were merged
    assert max(sizes) <= 4


def test_a_version_switch_under_batched_load_answers_each_version_consistently(
    batching_server, exports
):
    server, base = batching_server
    channel = grpc.insecure_channel(server.address)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    stop, seen, failures = threading.Event(), [], []

    def client(index: int) -> None:
        texts = [f"the {WORDS[index % len(WORDS)]} cat"]
        while not stop.is_set():
            try:
                version, outputs = _predict(stub, texts, "serving_default")
                _check(outputs, texts, "serving_default", {1: "upper", 2: "lower"}[version])
                seen.append(version)
            except Exception as error:  # noqa: BLE001 - reported below
                failures.append(error)
                return

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    _wait_until(lambda: len(seen) >= 8, timeout=120)
    add_version(base, 2, exports["lower"])
    _wait_until(lambda: 2 in seen[-4:] or failures, timeout=120)
    stop.set()
    for thread in threads:
        thread.join(60)
    channel.close()
    assert not failures, failures[:3]
    assert seen[0] == 1 and 2 in seen
