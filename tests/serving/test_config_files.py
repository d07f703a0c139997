"""The deployment's config files parse with TF Serving's real schemas, and agree with each other."""

import re
import urllib.request
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, message_factory
from tensorflow_serving.config import model_server_config_pb2

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server import config_files
from keras_attention.serving.server.model_server import free_port
from keras_attention_client import TranslationClient

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

# Field lines of the message definitions in tensorflow/serving's session_bundle_config.proto:
# the schema declared in keras_attention.serving.server.config_files must match them, and
# the other two (the deploy files hold a BatchingParameters block of a SessionBundleConfig's
# kind and a MonitoringConfig for the real server) are built here from the same lines.
PROTO_SOURCES = {
    "BatchingParameters": """
  google.protobuf.Int64Value max_batch_size = 1;
  google.protobuf.Int64Value batch_timeout_micros = 2;
  google.protobuf.Int64Value max_enqueued_batches = 3;
  google.protobuf.Int64Value num_batch_threads = 4;
  google.protobuf.StringValue thread_pool_name = 5;
  repeated int64 allowed_batch_sizes = 6;
  bool pad_variable_length_inputs = 7;
""",
    "SessionBundleConfig": """
  BatchingParameters batching_parameters = 3;
""",
    "PrometheusConfig": """
  bool enable = 1;
  string path = 2;
""",
    "MonitoringConfig": """
  PrometheusConfig prometheus_config = 1;
""",
}
_SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
}


def _message_class(name: str):
    """A message class built from PROTO_SOURCES (with BatchingParameters from the server's)."""
    batching = config_files.batching_parameters_class().DESCRIPTOR.file
    file = descriptor_pb2.FileDescriptorProto(
        name="test_configs.proto", package="tensorflow.serving", syntax="proto3"
    )
    file.dependency.append(batching.name)
    for message in ("SessionBundleConfig", "PrometheusConfig", "MonitoringConfig"):
        proto = file.message_type.add(name=message)
        for repeated, kind, field, number in re.findall(
            r"(repeated )?([\w.]+) (\w+) = (\d+);", PROTO_SOURCES[message]
        ):
            added = proto.field.add(name=field, number=int(number), label=1 + 2 * bool(repeated))
            if kind in _SCALARS:
                added.type = _SCALARS[kind]
            else:
                added.type, added.type_name = 11, f".tensorflow.serving.{kind}"
    pool = batching.pool
    if "test_configs.proto" not in _BUILT:
        pool.Add(file)
        _BUILT.add("test_configs.proto")
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.serving.{name}"))


_BUILT: set[str] = set()


def test_the_batching_parameters_schema_matches_tf_servings_proto():
    descriptor = config_files.batching_parameters_class().DESCRIPTOR
    expected = {}
    for repeated, kind, name, number in re.findall(
        r"(repeated )?([\w.]+) (\w+) = (\d+);", PROTO_SOURCES["BatchingParameters"]
    ):
        expected[name] = (int(number), bool(repeated), kind)
    assert set(descriptor.fields_by_name) == set(expected)
    for name, (number, repeated, kind) in expected.items():
        field = descriptor.fields_by_name[name]
        assert field.number == number, name
        assert field.is_repeated == repeated, name
        if kind in _SCALARS:
            assert field.type == _SCALARS[kind], name
        else:
            assert field.message_type.full_name.endswith(kind.split(".")[-1]), name


def test_models_config_parses_as_model_server_config():
    config = config_files.read_model_server_config(DEPLOY / "models.config")
    assert isinstance(config, model_server_config_pb2.ModelServerConfig)
    (model,) = config.model_config_list.config
    assert (model.name, model.base_path, model.model_platform) == (
        "translator",
        "/models/translator",
        "tensorflow",
    )
    assert model.model_version_policy.WhichOneof("policy_choice") == "latest"


def test_batching_parameters_parse_and_are_consistent():
    parameters = config_files.read_batching_parameters(DEPLOY / "batching_parameters.txt")
    assert parameters.max_batch_size.value == 32
    assert parameters.batch_timeout_micros.value > 0
    sizes = list(parameters.allowed_batch_sizes)
    # TF Serving's requirements: increasing, and the last equals max_batch_size.
    assert sizes == sorted(sizes) and sizes[-1] == parameters.max_batch_size.value
    # The same text is a valid batching_parameters block of a SessionBundleConfig.
    text = (DEPLOY / "batching_parameters.txt").read_text()
    bundle = config_files.parse_text_proto(
        f"batching_parameters {{\n{text}\n}}", _message_class("SessionBundleConfig")()
    )
    assert bundle.batching_parameters == parameters


def test_monitoring_config_parses():
    config = config_files.read_text_proto(
        DEPLOY / "monitoring_config.txt", _message_class("MonitoringConfig")()
    )
    assert config.prometheus_config.enable
    assert config.prometheus_config.path == "/monitoring/prometheus/metrics"


def test_invalid_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.config"
    bad.write_text("model_config_list { config { nam: 'x' } }")
    with pytest.raises(ValueError, match=r"Invalid protobuf file: '.*bad.config'.*nam"):
        config_files.read_model_server_config(bad)


def _configmap_files() -> dict[str, str]:
    text = (DEPLOY / "k8s" / "configmap.yaml").read_text()
    files, current = {}, None
    for line in text.splitlines():
        match = re.match(r"^  ([\w.]+): \|$", line)
        if match:
            current = match.group(1)
            files[current] = []
        elif current and (line.startswith("    ") or not line.strip()):
            files[current].append(line[4:])
        else:
            current = None
    return {name: "\n".join(lines) for name, lines in files.items()}


def test_configmap_carries_the_same_configuration():
    embedded = _configmap_files()
    assert set(embedded) == {"models.config", "batching_parameters.txt", "monitoring_config.txt"}
    pairs = [
        ("models.config", model_server_config_pb2.ModelServerConfig),
        ("batching_parameters.txt", config_files.batching_parameters_class()),
        ("monitoring_config.txt", _message_class("MonitoringConfig")),
    ]
    for name, cls in pairs:
        from_file = config_files.parse_text_proto((DEPLOY / name).read_text(), cls())
        from_configmap = config_files.parse_text_proto(embedded[name], cls())
        assert from_file == from_configmap, name


@pytest.mark.parametrize("manifest", ["docker-compose.yml", "k8s/deployment.yaml"])
def test_manifests_point_at_the_config_files_and_model(manifest):
    text = (DEPLOY / manifest).read_text()
    (model,) = config_files.read_model_server_config(
        DEPLOY / "models.config"
    ).model_config_list.config
    for flag, file in (
        ("--model_config_file", "models.config"),
        ("--batching_parameters_file", "batching_parameters.txt"),
        ("--monitoring_config_file", "monitoring_config.txt"),
    ):
        assert f"{flag}=/config/{file}" in text
    assert "--enable_batching=true" in text
    assert f"/v1/models/{model.name}" in text  # health / readiness check
    assert model.base_path in text  # the export is mounted where the config says
    assert "8500" in text and "8501" in text
    assert re.search(r"tensorflow/serving:\$?\{?[\w:-]*2\.2\d", text)


def test_service_exposes_grpc_and_rest():
    text = (DEPLOY / "k8s" / "service.yaml").read_text()
    assert re.search(r"port: 8500\s+targetPort: grpc", text)
    assert re.search(r"port: 8501\s+targetPort: http", text)


def test_our_server_runs_the_deployment_config(exports, tmp_path):
    """One config for both servers: the deploy files, with base_path pointed at a test export."""
    from helpers.serving import add_version

    base = tmp_path / "translator"
    add_version(base, 1, exports["upper"])
    config = tmp_path / "models.config"
    config.write_text(
        (DEPLOY / "models.config").read_text().replace("/models/translator", str(base))
    )
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_config_file=str(config),
        enable_batching=True,
        batching_parameters_file=str(DEPLOY / "batching_parameters.txt"),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        with TranslationClient(server.address, model_name="translator") as client:
            assert client.translate(["a b"])[0].text == "B A"
        status = urllib.request.urlopen(server.rest_url + "/v1/models/translator").read()
        assert b"AVAILABLE" in status
