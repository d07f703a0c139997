"""TF Serving's configuration files: text protos parsed with the real schemas.

`tensorflow_model_server` reads its configuration from text-format protos:

| flag | message |
| --- | --- |
| `--model_config_file` | `tensorflow.serving.ModelServerConfig` |
| `--batching_parameters_file` | `tensorflow.serving.BatchingParameters` |
| `--monitoring_config_file` | `tensorflow.serving.MonitoringConfig` |
| `--ssl_config_file` | `tensorflow.serving.SSLConfig` |

`ModelServerConfig` ships in the `tensorflow-serving-api` wheel. The other
three do not, so their schemas are declared here, field for field as in
tensorflow/serving (`servables/tensorflow/session_bundle_config.proto`,
`config/monitoring_config.proto`, `config/ssl_config.proto`), in a private
descriptor pool, so the same files can be validated here and handed to the
real server.
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

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tensorflow.serving"


def parse_text_proto(text: str, message: M, *, source: str = "<string>") -> M:
    """Parses text-format `text` into `message` (which is returned).

    Raises:
        ValueError: with TF Serving's "Invalid protobuf file" wording and the
            parser's detail.
    """
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ValueError(f"Invalid protobuf file: '{source}': {error}") from error
    return message


def read_text_proto(path: str | os.PathLike, message: M) -> M:
    """Reads and parses a text-format proto file into `message` (which is returned)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as file:
        return parse_text_proto(file.read(), message, source=path)


def read_model_server_config(path: str | os.PathLike) -> Any:
    """Reads a `--model_config_file` (a `ModelServerConfig` text proto)."""
    return read_text_proto(path, model_server_config_pb2.ModelServerConfig())


def single_model_config(model_name: str, model_base_path: str) -> Any:
    """The config `--model_name` / `--model_base_path` stand for (one model, latest version)."""
    config = model_server_config_pb2.ModelServerConfig()
    model = config.model_config_list.config.add()
    model.name = model_name
    model.base_path = model_base_path
    model.model_platform = "tensorflow"
    return config


def read_batching_parameters(path: str | os.PathLike) -> Any:
    """Reads a `--batching_parameters_file` (a `BatchingParameters` text proto)."""
    return read_text_proto(path, batching_parameters_class()())


def read_monitoring_config(path: str | os.PathLike) -> Any:
    """Reads a `--monitoring_config_file` (a `MonitoringConfig` text proto)."""
    return read_text_proto(path, monitoring_config_class()())


def read_ssl_config(path: str | os.PathLike) -> Any:
    """Reads a `--ssl_config_file` (an `SSLConfig` text proto)."""
    return read_text_proto(path, ssl_config_class()())


def batching_parameters_class() -> type:
    """The `tensorflow.serving.BatchingParameters` message class."""
    return _message_class("BatchingParameters")


def session_bundle_config_class() -> type:
    """The `tensorflow.serving.SessionBundleConfig` message class."""
    return _message_class("SessionBundleConfig")


def monitoring_config_class() -> type:
    """The `tensorflow.serving.MonitoringConfig` message class."""
    return _message_class("MonitoringConfig")


def ssl_config_class() -> type:
    """The `tensorflow.serving.SSLConfig` message class."""
    return _message_class("SSLConfig")


@functools.cache
def _message_class(name: str) -> type:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{_PACKAGE}.{name}"))


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    from tensorflow.core.protobuf import config_pb2, named_tensor_pb2

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for module in (wrappers_pb2, config_pb2, named_tensor_pb2):
        _add_with_dependencies(pool, module.DESCRIPTOR, added)
    pool.Add(_session_bundle_config_file())
    pool.Add(_monitoring_config_file())
    pool.Add(_ssl_config_file())
    return pool


def _add_with_dependencies(pool: descriptor_pool.DescriptorPool, file, added: set[str]) -> None:
    if file.name in added:
        return
    for dependency in file.dependencies:
        _add_with_dependencies(pool, dependency, added)
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    pool.Add(proto)
    added.add(file.name)


def _file(name: str, dependencies: list[str]) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name=name, package=_PACKAGE, syntax="proto3", dependency=dependencies
    )
    return proto


def _message(file: descriptor_pb2.FileDescriptorProto, name: str, fields: list[tuple]) -> None:
    message = file.message_type.add(name=name)
    for field_name, number, field_type, *rest in fields:
        type_name = rest[0] if rest else None
        repeated = len(rest) > 1 and rest[1]
        field = message.field.add(
            name=field_name,
            number=number,
            type=field_type,
            label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
            json_name=_camel(field_name),
        )
        if type_name:
            field.type_name = type_name


def _camel(name: str) -> str:
    head, *tail = name.split("_")
    return head + "".join(part.capitalize() for part in tail)


def _session_bundle_config_file() -> descriptor_pb2.FileDescriptorProto:
    # tensorflow_serving/servables/tensorflow/session_bundle_config.proto
    file = _file(
        "tensorflow_serving/servables/tensorflow/session_bundle_config.proto",
        [
            "google/protobuf/wrappers.proto",
            "tensorflow/core/protobuf/config.proto",
            "tensorflow/core/protobuf/named_tensor.proto",
        ],
    )
    int64 = ".google.protobuf.Int64Value"
    _message(
        file,
        "SessionBundleConfig",
        [
            ("session_target", 1, _F.TYPE_STRING),
            ("session_config", 2, _F.TYPE_MESSAGE, ".tensorflow.ConfigProto"),
            ("batching_parameters", 3, _F.TYPE_MESSAGE, ".tensorflow.serving.BatchingParameters"),
            (
                "session_run_load_threadpool_index",
                4,
                _F.TYPE_MESSAGE,
                ".google.protobuf.Int32Value",
            ),
            (
                "experimental_fixed_input_tensors",
                778,
                _F.TYPE_MESSAGE,
                ".tensorflow.NamedTensorProto",
                True,
            ),
        ],
    )
    _message(
        file,
        "BatchingParameters",
        [
            ("max_batch_size", 1, _F.TYPE_MESSAGE, int64),
            ("batch_timeout_micros", 2, _F.TYPE_MESSAGE, int64),
            ("max_enqueued_batches", 3, _F.TYPE_MESSAGE, int64),
            ("num_batch_threads", 4, _F.TYPE_MESSAGE, int64),
            ("thread_pool_name", 5, _F.TYPE_MESSAGE, ".google.protobuf.StringValue"),
            ("allowed_batch_sizes", 6, _F.TYPE_INT64, None, True),
            ("pad_variable_length_inputs", 7, _F.TYPE_BOOL),
        ],
    )
    return file


def _monitoring_config_file() -> descriptor_pb2.FileDescriptorProto:
    # tensorflow_serving/config/monitoring_config.proto
    file = _file("tensorflow_serving/config/monitoring_config.proto", [])
    _message(file, "PrometheusConfig", [("enable", 1, _F.TYPE_BOOL), ("path", 2, _F.TYPE_STRING)])
    _message(
        file,
        "MonitoringConfig",
        [("prometheus_config", 1, _F.TYPE_MESSAGE, ".tensorflow.serving.PrometheusConfig")],
    )
    return file


def _ssl_config_file() -> descriptor_pb2.FileDescriptorProto:
    # tensorflow_serving/config/ssl_config.proto
    file = _file("tensorflow_serving/config/ssl_config.proto", [])
    _message(
        file,
        "SSLConfig",
        [
            ("server_key", 1, _F.TYPE_STRING),
            ("server_cert", 2, _F.TYPE_STRING),
            ("custom_ca", 3, _F.TYPE_STRING),
            ("client_verify", 4, _F.TYPE_BOOL),
        ],
    )
    return file
