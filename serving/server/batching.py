"""Server-side batching (`--enable_batching`): TF Serving's `BatchingSession` and batch scheduler.

1. A request joins the queue of its version, signature, outputs and input specs.
   A queue's last batch is open: a request that would take it past
   `max_batch_size` opens a new one, refused `UNAVAILABLE` at `max_enqueued_batches`.
2. A batch runs on the thread of its first request, at most `num_batch_threads`
   batches at a time: a closed batch as soon as it may, the open one when full or
   when its first request has waited `batch_timeout_micros`.
3. One Session run on the concatenated inputs (padded up to the next of
   `allowed_batch_sizes`); each request gets its rows, trailing padding ("" or 0)
   cut from axes >= 1, so its answer does not depend on its batch. A request past
   its deadline is answered `DEADLINE_EXCEEDED` and left out.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

import numpy as np

from keras_attention_client.wire.errors import ServingError


@dataclasses.dataclass(frozen=True)
class BatchingOptions:
    """`BatchingParameters`, with TF Serving's defaults (`BasicBatchScheduler::QueueOptions`)."""

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)
    allowed_batch_sizes: tuple[int, ...] = ()

    def __post_init__(self):
        for name, value in dataclasses.asdict(self).items():
            low = 0 if name == "batch_timeout_micros" else 1
            if name != "allowed_batch_sizes" and value < low:
                raise ValueError(f"{name} must be >= {low}. Received: {name}={value}")
        sizes = self.allowed_batch_sizes
        if sizes and (sizes[0] < 1 or any(b <= a for a, b in itertools.pairwise(sizes))):
            raise ValueError(
                "allowed_batch_sizes entries must be positive and monotonically increasing. "
                f"Received: {list(sizes)}"
            )
        if sizes and sizes[-1] != self.max_batch_size:
            raise ValueError(
                "Last entry in allowed_batch_sizes must match max_batch_size; last entry was "
                f"{sizes[-1]}; expected {self.max_batch_size}"
            )

    @classmethod
    def from_proto(cls, parameters: Any | None) -> BatchingOptions:
        """From a `tensorflow.serving.BatchingParameters` (unset fields keep the defaults).

        `thread_pool_name` and `pad_variable_length_inputs` are read and ignored: inputs
        of other non-batch shapes go to other queues, so they never need padding.
        """
        if parameters is None:
            return cls()
        values = {
            field.name: value.value
            for field, value in parameters.ListFields()
            if field.message_type and field.name != "thread_pool_name"
        }
        return cls(**values, allowed_batch_sizes=tuple(parameters.allowed_batch_sizes))

    def padded_size(self, size: int) -> int:
        """The batch size a batch of `size` rows is padded to."""
        return next((allowed for allowed in self.allowed_batch_sizes if allowed >= size), size)


class _Task(NamedTuple):
    feeds: Mapping[str, np.ndarray]
    size: int
    deadline: float | None
    enqueued: float
    answer: Future


class Batcher:
    """Merges concurrent `run`s with the same signature into batched Session runs.

    `run` runs one batch, as `SavedModelSession.run` (its default).
    """

    def __init__(self, options: BatchingOptions, run=None):
        self.options = options
        self._run = run or (lambda session, *args: session.run(*args[:3], timeout_in_ms=args[3]))
        self._cond = threading.Condition()
        # (session, signature, fetches, feed specs) -> batches waiting (the last one open).
        self._queues: dict[tuple, list[list[_Task]]] = {}
        self._running, self._stopped = 0, False
        self.batch_sizes: collections.deque[int] = collections.deque(maxlen=10_000)
        """Rows of the latest batches run (before padding)."""

    def stop(self) -> None:
        """Fails queued tasks with `UNAVAILABLE`; running batches finish."""
        with self._cond:
            self._stopped = True
            queues, self._queues = self._queues, {}
            self._cond.notify_all()
        for task in itertools.chain.from_iterable(itertools.chain(*queues.values())):
            task.answer.set_exception(ServingError("UNAVAILABLE", "The model server is stopping"))

    def run(
        self,
        session: Any,
        signature_name: str,
        feeds: Mapping[str, np.ndarray],
        fetches: Sequence[str],
        timeout_in_ms: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs one request's feeds through its batch queue; returns its own outputs."""
        feeds = {name: np.asarray(value) for name, value in feeds.items()}
        sizes = {value.shape[0] if value.ndim else None for value in feeds.values()}
        if len(sizes) != 1 or None in sizes:
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
        now = time.monotonic()
        deadline = None if timeout_in_ms is None else now + timeout_in_ms / 1000
        task = _Task(feeds, size, deadline, now, Future())
        specs = tuple((k, v.dtype.str, v.shape[1:]) for k, v in sorted(feeds.items()))
        key = (session, signature_name, tuple(fetches), specs)
        with self._cond:
            if self._stopped:
                raise ServingError("UNAVAILABLE", "The model server is stopping")
            batches = self._queues.setdefault(key, [[]])
            if sum(t.size for t in batches[-1]) + size > self.options.max_batch_size:
                if len(batches) >= self.options.max_enqueued_batches:
                    raise ServingError(
                        "UNAVAILABLE",
                        "The batch scheduling queue to which this task was submitted is full",
                    )
                batches.append([])
            batch = batches[-1]
            batch.append(task)
            self._cond.notify_all()
            leads = batch[0] is task and self._lead(key, batch)
        if leads:
            try:
                self._process(key, batch)
            except BaseException as error:  # noqa: BLE001 - answered to the batch's tasks
                for other in batch:
                    if not other.answer.done():
                        other.answer.set_exception(error)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()
        return task.answer.result()

    def _lead(self, key: tuple, batch: list[_Task]) -> bool:
        """Waits (holding `_cond`) until `batch` may run, and takes it; False if stopped."""
        due = batch[0].enqueued + self.options.batch_timeout_micros / 1e6
        while not self._stopped:
            batches, now = self._queues[key], time.monotonic()
            full = sum(t.size for t in batch) >= self.options.max_batch_size
            ready = batches[0] is batch and (len(batches) > 1 or full or now >= due)
            if ready and self._running < self.options.num_batch_threads:
                del batches[0]
                if not batches:
                    del self._queues[key]
                self._running += 1
                self._cond.notify_all()  # the next batch of the queue may be ready
                return True
            self._cond.wait(due - now if now < due else None)
        return False

    def _process(self, key: tuple, batch: list[_Task]) -> None:
        session, signature_name, fetches, _ = key
        now, live = time.monotonic(), []
        for task in batch:
            if task.deadline is None or now < task.deadline:
                live.append(task)
            else:
                task.answer.set_exception(ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded"))
        if not live:
            return
        rows = sum(task.size for task in live)
        padded = self.options.padded_size(rows)
        feeds = {
            name: np.concatenate(
                [task.feeds[name] for task in live]
                + [np.repeat(live[0].feeds[name][:1], padded - rows, axis=0)]
            )
            for name in live[0].feeds
        }
        deadlines = [task.deadline for task in live]
        timeout_in_ms = (
            None if None in deadlines else max(1, int((max(deadlines) - time.monotonic()) * 1000))
        )
        self.batch_sizes.append(rows)  # deque.append is thread-safe
        answer = self._run(session, signature_name, feeds, list(fetches), timeout_in_ms)
        outputs = {name: np.asarray(answer[name]) for name in fetches}
        for name, value in outputs.items():
            if value.ndim == 0 or value.shape[0] != padded:
                raise ServingError(
                    "INTERNAL",
                    f"Batched output tensor {name} has shape {list(value.shape)}; expected "
                    f"{padded} rows, the batch size",
                )
        start = 0
        for task in live:
            task.answer.set_result(
                {n: _trim(v[start : start + task.size]) for n, v in outputs.items()}
            )
            start += task.size


def _trim(value: np.ndarray) -> np.ndarray:
    """Drops trailing positions of axes >= 1 that are padding ("" or 0) in every row."""
    if value.ndim < 2 or value.size == 0:
        return value
    if value.dtype == object:
        content = np.vectorize(lambda item: item not in (b"", ""), otypes=[bool])(value)
    else:
        content = value != 0
    index = [slice(None)]
    for axis in range(1, value.ndim):
        found = np.nonzero(np.any(content, axis=tuple(a for a in range(value.ndim) if a != axis)))
        index.append(slice(0, int(found[0][-1]) + 1 if found[0].size else 0))
    return value[tuple(index)]
