"""Server-side batching: concurrent Predict requests merged into one Session run.

TF Serving's `--enable_batching` (a `BatchingSession` over a shared batch
scheduler), with its `--batching_parameters_file` fields and semantics:

1. A request ("task") joins the queue of its model version, signature and
   outputs (`output_filter`), and its inputs' non-batch shapes and dtypes. Its size is
   its inputs' 0th dimension, which every input must share.
2. Each queue has one open batch. A task that would take it past
   `max_batch_size` closes it and opens a new one; if the queue already holds
   `max_enqueued_batches` batches, the task is refused with `UNAVAILABLE`
   ("The batch scheduling queue to which this task was submitted is full"),
   as TF Serving does. A task larger than `max_batch_size` is refused with
   `INVALID_ARGUMENT`.
3. `num_batch_threads` threads, shared by all queues (round robin), each run
   one batch at a time: a closed batch at once, the open batch when it is full
   or when its oldest task has waited `batch_timeout_micros` (0: as soon as a
   thread is free, so batches form only from requests that arrive while the
   threads are busy).
4. The batch's inputs are concatenated along the 0th dimension (string inputs
   need no padding) and, with `allowed_batch_sizes`, padded to the next allowed
   size with copies of the first row. One Session run; every output's 0th
   dimension must equal the padded size.
5. Each task gets its own rows back. Outputs of rank >= 2 that the model pads
   to the batch's widest row (`tokens`, `source_tokens`, `attention`) are cut
   back to the task's own extent (trailing positions that are padding, `""`
   or 0, in all of its rows), so an answer does not depend on which requests
   shared its batch.

A task whose deadline passes while it waits is answered `DEADLINE_EXCEEDED`
and left out of its batch; the batch runs with the latest deadline of its
tasks.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from keras_attention_client.wire.errors import ServingError

logger = logging.getLogger(__name__)

# Runs one batch, as `ServingSession.run`:
# (session, signature_name, inputs by alias, output aliases, timeout_in_ms) -> outputs by alias.
RunFn = Callable[[Any, str, Mapping[str, np.ndarray], Sequence[str], "int | None"], dict]


@dataclasses.dataclass(frozen=True)
class BatchingOptions:
    """`BatchingParameters` with TF Serving's defaults (`BasicBatchScheduler::QueueOptions`).

    Attributes:
        max_batch_size: the most rows in one batch (default 1000).
        batch_timeout_micros: how long the oldest task of a batch that is not
            full waits for more (default 0: no wait).
        max_enqueued_batches: batches a queue holds before it refuses tasks
            (default 10).
        num_batch_threads: batches run in parallel (default: CPU count).
        allowed_batch_sizes: if set, batches are padded up to the next of
            these sizes; increasing, the last equal to `max_batch_size`.
        pad_variable_length_inputs: accepted; inputs of different non-batch
            shapes go to different queues, so they never need padding.
    """

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False

    def __post_init__(self):
        for name in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1. Received: {name}={getattr(self, name)}")
        if self.batch_timeout_micros < 0:
            raise ValueError(
                f"batch_timeout_micros must be >= 0. Received: {self.batch_timeout_micros}"
            )
        sizes = self.allowed_batch_sizes
        if sizes:
            if any(b <= a for a, b in itertools.pairwise(sizes)) or sizes[0] < 1:
                raise ValueError(
                    "allowed_batch_sizes entries must be positive and monotonically increasing. "
                    f"Received: {list(sizes)}"
                )
            if sizes[-1] != self.max_batch_size:
                raise ValueError(
                    "Last entry in allowed_batch_sizes must match max_batch_size; last entry was "
                    f"{sizes[-1]}; expected {self.max_batch_size}"
                )

    @classmethod
    def from_proto(cls, parameters: Any | None) -> BatchingOptions:
        """From a `tensorflow.serving.BatchingParameters` (unset fields keep the defaults)."""
        if parameters is None:
            return cls()
        values: dict[str, Any] = {}
        for name in (
            "max_batch_size",
            "batch_timeout_micros",
            "max_enqueued_batches",
            "num_batch_threads",
        ):
            if parameters.HasField(name):
                values[name] = int(getattr(parameters, name).value)
        values["allowed_batch_sizes"] = tuple(int(s) for s in parameters.allowed_batch_sizes)
        values["pad_variable_length_inputs"] = bool(parameters.pad_variable_length_inputs)
        return cls(**values)

    def padded_size(self, size: int) -> int:
        """The batch size a batch of `size` rows is padded to."""
        for allowed in self.allowed_batch_sizes:
            if allowed >= size:
                return allowed
        return size


class _Task:
    def __init__(self, feeds: Mapping[str, np.ndarray], size: int, deadline: float | None):
        self.feeds = feeds
        self.size = size
        self.deadline = deadline
        self.enqueued = time.monotonic()
        self.done = threading.Event()
        self.outputs: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None

    def finish(self, outputs=None, error=None) -> None:
        self.outputs, self.error = outputs, error
        self.done.set()


class _Queue:
    def __init__(self, session: Any, signature_name: str, fetches: tuple[str, ...]):
        self.session, self.signature_name, self.fetches = session, signature_name, fetches
        self.batches: list[list[_Task]] = [[]]  # the last one is open

    def rows(self, batch: list[_Task]) -> int:
        return sum(task.size for task in batch)


class Batcher:
    """Merges concurrent `run`s with the same signature into batched Session runs.

    Args:
        options: the `BatchingOptions`.
        run: runs one batch (default: `ServingSession.run`).

    Example:

    ```python
    batcher = Batcher(BatchingOptions(max_batch_size=32, num_batch_threads=2))
    outputs = batcher.run(session, "serving_default", {"text": texts}, ["translation"], 30000)
    batcher.stop()
    ```
    """

    def __init__(self, options: BatchingOptions, run: RunFn | None = None):
        self.options = options
        self._run = run or _run_session
        self._cond = threading.Condition()
        self._queues: dict[tuple, _Queue] = {}
        self._next_queue = 0
        self._stopped = False
        # Rows of the latest batches run (before padding), for metrics and tests.
        self.batch_sizes: collections.deque[int] = collections.deque(maxlen=10_000)
        self._threads = [
            threading.Thread(target=self._work, name=f"serving-batch-{i}", daemon=True)
            for i in range(options.num_batch_threads)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Fails queued tasks with `UNAVAILABLE` and stops the threads (after their batch)."""
        with self._cond:
            self._stopped = True
            queues, self._queues = self._queues, {}
            self._cond.notify_all()
        for queue in queues.values():
            for batch in queue.batches:
                for task in batch:
                    task.finish(error=ServingError("UNAVAILABLE", "The model server is stopping"))
        for thread in self._threads:
            thread.join()

    def run(
        self,
        session: Any,
        signature_name: str,
        feeds: Mapping[str, np.ndarray],
        fetches: Sequence[str],
        timeout_in_ms: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs one request's feeds through the batch queue; returns its own outputs.

        Raises:
            ServingError: `INVALID_ARGUMENT` (inputs without a common 0th
                dimension, or more rows than `max_batch_size`), `UNAVAILABLE`
                (queue full), `DEADLINE_EXCEEDED`, or the Session's error.
        """
        feeds = {name: np.asarray(value) for name, value in feeds.items()}
        sizes = {value.shape[0] if value.ndim else None for value in feeds.values()}
        if not feeds or None in sizes or len(sizes) != 1:
            raise ServingError(
                "INVALID_ARGUMENT",
                "Batching session Run() input tensors must have equal 0th-dimension size. "
                f"Received shapes: { {k: list(v.shape) for k, v in feeds.items()} }",
            )
        (size,) = sizes
        if size > self.options.max_batch_size:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Task size {size} is larger than maximum input batch size "
                f"{self.options.max_batch_size}",
            )
        if size == 0:
            return self._run(session, signature_name, feeds, list(fetches), timeout_in_ms)
        deadline = None if timeout_in_ms is None else time.monotonic() + timeout_in_ms / 1000
        task = _Task(feeds, size, deadline)
        key = (
            id(session),
            signature_name,
            tuple(fetches),
            tuple(
                (name, value.dtype.str, value.shape[1:]) for name, value in sorted(feeds.items())
            ),
        )
        with self._cond:
            if self._stopped:
                raise ServingError("UNAVAILABLE", "The model server is stopping")
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = _Queue(session, signature_name, tuple(fetches))
            open_batch = queue.batches[-1]
            if queue.rows(open_batch) + size > self.options.max_batch_size:
                if len(queue.batches) >= self.options.max_enqueued_batches:
                    raise ServingError(
                        "UNAVAILABLE",
                        "The batch scheduling queue to which this task was submitted is full",
                    )
                queue.batches.append([])
            queue.batches[-1].append(task)
            self._cond.notify()
        task.done.wait()
        if task.error is not None:
            raise task.error
        return task.outputs

    # Scheduling -------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    picked, wait = self._pick()
                    if picked is not None:
                        break
                    self._cond.wait(wait)
            queue, batch = picked
            try:
                self._process(queue, batch)
            except BaseException as error:  # noqa: BLE001 - answered to the batch's tasks
                for task in batch:
                    if not task.done.is_set():
                        task.finish(error=error)

    def _pick(self) -> tuple[tuple[_Queue, list[_Task]] | None, float | None]:
        """A batch ready to run (removed from its queue), else how long to wait for one."""
        now = time.monotonic()
        timeout = self.options.batch_timeout_micros / 1e6
        keys = list(self._queues)
        wait: float | None = None
        for offset in range(len(keys)):
            key = keys[(self._next_queue + offset) % len(keys)]
            queue = self._queues[key]
            first = queue.batches[0]
            if not first:
                continue
            closed = len(queue.batches) > 1
            full = queue.rows(first) >= self.options.max_batch_size
            due = first[0].enqueued + timeout
            if closed or full or now >= due:
                queue.batches.pop(0)
                if not queue.batches:
                    queue.batches.append([])
                if queue.batches == [[]]:
                    del self._queues[key]  # an idle queue; recreated by the next task
                self._next_queue = (self._next_queue + offset + 1) % max(len(keys), 1)
                return (queue, first), None
            wait = due - now if wait is None else min(wait, due - now)
        return None, wait

    def _process(self, queue: _Queue, batch: list[_Task]) -> None:
        now = time.monotonic()
        live = []
        for task in batch:
            if task.deadline is not None and now >= task.deadline:
                task.finish(error=ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded"))
            else:
                live.append(task)
        if not live:
            return
        rows = sum(task.size for task in live)
        padded = self.options.padded_size(rows)
        feeds = {}
        for name in live[0].feeds:
            parts = [task.feeds[name] for task in live]
            if padded > rows:
                first_row = parts[0][:1]
                parts.append(np.repeat(first_row, padded - rows, axis=0))
            feeds[name] = np.concatenate(parts, axis=0)
        deadlines = [task.deadline for task in live]
        timeout_in_ms = (
            None if None in deadlines else max(1, int((max(deadlines) - time.monotonic()) * 1000))
        )
        with self._cond:
            self.batch_sizes.append(rows)
        answer = self._run(
            queue.session, queue.signature_name, feeds, list(queue.fetches), timeout_in_ms
        )
        outputs = [np.asarray(answer[name]) for name in queue.fetches]
        for name, value in zip(queue.fetches, outputs, strict=True):
            if value.ndim == 0 or value.shape[0] != padded:
                raise ServingError(
                    "INTERNAL",
                    f"Batched output tensor {name} has 0th dimension "
                    f"{value.shape[0] if value.ndim else 'none (a scalar)'}; expected {padded}, "
                    "the batch size",
                )
        start = 0
        for task in live:
            stop = start + task.size
            task.finish(
                outputs={
                    n: _trim(v[start:stop]) for n, v in zip(queue.fetches, outputs, strict=True)
                }
            )
            start = stop


def _run_session(session, signature_name, inputs, output_keys, timeout_in_ms):
    return session.run(signature_name, inputs, output_keys, timeout_in_ms=timeout_in_ms)


def _trim(value: np.ndarray) -> np.ndarray:
    """Drops trailing positions of axes >= 1 that are padding ("" or 0) in every row."""
    if value.ndim < 2 or value.size == 0:
        return value
    if value.dtype == object:
        padding = np.vectorize(lambda item: item in (b"", ""), otypes=[bool])(value)
    else:
        padding = value == 0
    index = []
    for axis in range(1, value.ndim):
        others = tuple(a for a in range(value.ndim) if a != axis)
        content = ~np.all(padding, axis=others)
        extent = int(np.max(np.nonzero(content)[0])) + 1 if content.any() else 0
        index.append(slice(0, extent))
    return value[(slice(None), *index)]
