"""TF Serving's configuration files, text protos parsed with the real schemas.

`--model_config_file` is a `ModelServerConfig` (in the `tensorflow-serving-api`
wheel); `--batching_parameters_file` a `BatchingParameters`, whose schema the
wheel lacks: it is declared here as in `session_bundle_config.proto`.
"""

from __future__ import annotations

import functools
import os
from typing import Any, TypeVar

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
    wrappers_pb2,
)
from tensorflow_serving.config import model_server_config_pb2

M = TypeVar("M")

# tensorflow_serving/servables/tensorflow/session_bundle_config.proto, BatchingParameters
# (the pool resolves a message field's type from its type_name).
_BATCHING_PARAMETERS = """
name: "tensorflow_serving/servables/tensorflow/session_bundle_config.proto"
package: "tensorflow.serving"
dependency: "google/protobuf/wrappers.proto"
syntax: "proto3"
message_type {
  name: "BatchingParameters"
  field { name: "max_batch_size" number: 1 type_name: "google.protobuf.Int64Value" }
  field { name: "batch_timeout_micros" number: 2 type_name: "google.protobuf.Int64Value" }
  field { name: "max_enqueued_batches" number: 3 type_name: "google.protobuf.Int64Value" }
  field { name: "num_batch_threads" number: 4 type_name: "google.protobuf.Int64Value" }
  field { name: "thread_pool_name" number: 5 type_name: "google.protobuf.StringValue" }
  field { name: "allowed_batch_sizes" number: 6 label: LABEL_REPEATED type: TYPE_INT64 }
  field { name: "pad_variable_length_inputs" number: 7 type: TYPE_BOOL }
}
"""


def parse_text_proto(text: str, message: M, *, source: str = "<string>") -> M:
    """Parses text-format `text` into `message` (returned); ValueError "Invalid protobuf file"."""
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ValueError(f"Invalid protobuf file: '{source}': {error}") from error
    return message


def read_text_proto(path: str | os.PathLike, message: M) -> M:
    """Reads and parses a text-format proto file into `message` (which is returned)."""
    with open(path, encoding="utf-8") as file:
        return parse_text_proto(file.read(), message, source=os.fspath(path))


def read_model_server_config(path: str | os.PathLike) -> Any:
    """Reads a `--model_config_file` (a `ModelServerConfig` text proto)."""
    return read_text_proto(path, model_server_config_pb2.ModelServerConfig())


def read_batching_parameters(path: str | os.PathLike) -> Any:
    """Reads a `--batching_parameters_file` (a `BatchingParameters` text proto)."""
    return read_text_proto(path, batching_parameters_class()())


@functools.cache
def batching_parameters_class() -> type:
    """The `tensorflow.serving.BatchingParameters` message class."""
    pool = descriptor_pool.DescriptorPool()
    wrappers = descriptor_pb2.FileDescriptorProto()
    wrappers_pb2.DESCRIPTOR.CopyToProto(wrappers)
    pool.Add(wrappers)
    pool.Add(text_format.Parse(_BATCHING_PARAMETERS, descriptor_pb2.FileDescriptorProto()))
    descriptor = pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters")
    return message_factory.GetMessageClass(descriptor)
