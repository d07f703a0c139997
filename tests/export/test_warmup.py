"""Warmup files: PredictionLog records TF Serving replays."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_attention import export, saved_model_session
from keras_attention.export import predict_log, write_warmup_requests
from keras_attention.export.warmup import MAX_WARMUP_RECORDS, WARMUP_FILE

# The export's check and the local server read the files with one reader, by either name.
READERS = pytest.mark.parametrize(
    "read_warmup_requests",
    [export.read_warmup_requests, saved_model_session.read_warmup_requests],
    ids=["export", "server"],
)


@READERS
def test_round_trip(tmp_path, read_warmup_requests):
    texts = np.array([b"Hello.", "Ça va ?".encode(), b""], dtype=object)
    logs = [
        predict_log("serving_default", {"text": texts}),
        predict_log("score_translation", {"text": texts[:1], "translation": texts[1:2]}, "m"),
    ]
    path = write_warmup_requests(tmp_path, logs)
    assert (
        path == tmp_path / WARMUP_FILE == tmp_path / "assets.extra" / "tf_serving_warmup_requests"
    )
    # The file is a plain TFRecord of serialized PredictionLogs.
    records = [
        prediction_log_pb2.PredictionLog.FromString(r)
        for r in tf.data.TFRecordDataset(str(path)).as_numpy_iterator()
    ]
    assert records == logs == read_warmup_requests(tmp_path)
    request = records[0].predict_log.request
    assert request.model_spec.signature_name == "serving_default"
    assert request.model_spec.name == ""
    assert request.inputs["text"].dtype == tf.string.as_datatype_enum
    assert [d.size for d in request.inputs["text"].tensor_shape.dim] == [3]
    assert tf.make_ndarray(request.inputs["text"]).tolist() == texts.tolist()
    assert records[1].predict_log.request.model_spec.name == "m"


@READERS
def test_no_file_means_no_records(tmp_path, read_warmup_requests):
    assert read_warmup_requests(tmp_path) == []


@READERS
def test_at_most_1000_records(tmp_path, read_warmup_requests):
    log = predict_log("serving_default", {"text": np.array([b"a"], dtype=object)})
    write_warmup_requests(tmp_path, [log] * MAX_WARMUP_RECORDS)
    assert len(read_warmup_requests(tmp_path)) == 1000
    with pytest.raises(ValueError, match="at most 1000 warmup records. Received: 1001"):
        write_warmup_requests(tmp_path, [log] * 1001)
    with tf.io.TFRecordWriter(str(tmp_path / WARMUP_FILE)) as writer:
        for _ in range(1001):
            writer.write(log.SerializeToString())
    with pytest.raises(ValueError, match="more than 1000"):
        read_warmup_requests(tmp_path)


def test_the_export_and_the_server_share_one_reader():
    assert export.read_warmup_requests is saved_model_session.read_warmup_requests
