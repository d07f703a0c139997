"""The client's own protos: current with their .proto files, and the same bytes as TF Serving's.

Reference: the `tensorflow-serving-api` / `tensorflow` messages. For every
message the client sends or reads, the same content built on each side
serializes to the same bytes, and each side parses the other's bytes back to
the same content (both directions).
"""

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor, text_format
from tensorflow.core.framework import tensor_pb2 as tf_tensor_pb2
from tensorflow.core.protobuf import meta_graph_pb2 as tf_meta_graph_pb2
from tensorflow_serving.apis import get_model_metadata_pb2 as tf_get_model_metadata_pb2
from tensorflow_serving.apis import get_model_status_pb2 as tf_get_model_status_pb2
from tensorflow_serving.apis import model_service_pb2 as tf_model_service_pb2
from tensorflow_serving.apis import predict_pb2 as tf_predict_pb2
from tensorflow_serving.apis import prediction_service_pb2 as tf_prediction_service_pb2

from keras_attention_client.wire import protos
from keras_attention_client.wire.protos import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    meta_graph_pb2,
    model_service_pb2,
    predict_pb2,
    prediction_service_pb2,
    tensor_pb2,
)

PROTOS = Path(protos.__file__).parent

TENSOR = """
  dtype: DT_FLOAT
  tensor_shape { dim { size: 2 name: "batch" } dim { size: -1 } unknown_rank: false }
  version_number: 3
  tensor_content: "\\001\\002"
  half_val: [1, 2] float_val: [1.5, -2.0] double_val: [3.25] int_val: [-7, 8]
  string_val: ["a", "\\377\\000"] scomplex_val: [1, 2] int64_val: [-9000000000]
  bool_val: [true, false] dcomplex_val: [0.5, 0.25] uint32_val: [4000000000]
  uint64_val: [18000000000000000000] float8_val: "\\004"
"""
SPEC = 'name: "translator" version { value: 7 } signature_name: "beam_search"'
SPEC_LABEL = 'name: "translator" version_label: "stable"'
SIGNATURE_DEF_MAP = """
  signature_def {
    key: "serving_default"
    value {
      inputs { key: "text" value { name: "serving_default_text:0" dtype: DT_STRING
                                   tensor_shape { dim { size: -1 } } } }
      outputs { key: "score" value { name: "StatefulPartitionedCall:3" dtype: DT_FLOAT
                                     tensor_shape { unknown_rank: true } } }
      method_name: "tensorflow/serving/predict"
      defaults { key: "text" value { dtype: DT_STRING string_val: "x" } }
    }
  }
"""

# (name, our class, TF Serving's class, text-format content)
MESSAGES = [
    ("TensorProto", tensor_pb2.TensorProto, tf_tensor_pb2.TensorProto, TENSOR),
    (
        "PredictRequest",
        predict_pb2.PredictRequest,
        tf_predict_pb2.PredictRequest,
        f"model_spec {{ {SPEC} }} inputs {{ key: 'text' value {{ {TENSOR} }} }}"
        " inputs { key: 'b' value { dtype: DT_INT32 int_val: 1 } }"
        " output_filter: ['translation', 'score']",
    ),
    (
        "PredictRequest (version label)",
        predict_pb2.PredictRequest,
        tf_predict_pb2.PredictRequest,
        f"model_spec {{ {SPEC_LABEL} }}",
    ),
    (
        "PredictResponse",
        predict_pb2.PredictResponse,
        tf_predict_pb2.PredictResponse,
        f"model_spec {{ {SPEC} }} outputs {{ key: 'translation' value {{ {TENSOR} }} }}",
    ),
    (
        "GetModelMetadataRequest",
        get_model_metadata_pb2.GetModelMetadataRequest,
        tf_get_model_metadata_pb2.GetModelMetadataRequest,
        f"model_spec {{ {SPEC} }} metadata_field: 'signature_def'",
    ),
    (
        "SignatureDefMap",
        get_model_metadata_pb2.SignatureDefMap,
        tf_get_model_metadata_pb2.SignatureDefMap,
        SIGNATURE_DEF_MAP,
    ),
    (
        "GetModelStatusRequest",
        get_model_status_pb2.GetModelStatusRequest,
        tf_get_model_status_pb2.GetModelStatusRequest,
        f"model_spec {{ {SPEC} }}",
    ),
    (
        "GetModelStatusResponse",
        get_model_status_pb2.GetModelStatusResponse,
        tf_get_model_status_pb2.GetModelStatusResponse,
        "model_version_status { version: 1 state: END"
        " status { error_code: NOT_FOUND error_message: 'gone' } }"
        " model_version_status { version: 2 state: AVAILABLE status { } }",
    ),
]


@pytest.mark.parametrize(
    "ours, theirs, text", [m[1:] for m in MESSAGES], ids=[m[0] for m in MESSAGES]
)
def test_same_content_same_bytes_both_directions(ours, theirs, text):
    mine = text_format.Parse(text, ours())
    reference = text_format.Parse(text, theirs())
    mine_bytes = mine.SerializeToString(deterministic=True)
    reference_bytes = reference.SerializeToString(deterministic=True)
    assert mine_bytes == reference_bytes
    # Each side reads the other's bytes back to the same message, with nothing left unknown.
    from_reference = ours.FromString(reference_bytes)
    from_mine = theirs.FromString(mine_bytes)
    assert from_reference == mine and from_mine == reference
    assert text_format.MessageToString(from_reference) == text_format.MessageToString(reference)


def test_metadata_response_with_an_any_unpacks_on_both_sides():
    mine = get_model_metadata_pb2.GetModelMetadataResponse()
    text_format.Parse(f"model_spec {{ {SPEC} }}", mine)
    mine.metadata["signature_def"].Pack(
        text_format.Parse(SIGNATURE_DEF_MAP, get_model_metadata_pb2.SignatureDefMap())
    )
    reference = tf_get_model_metadata_pb2.GetModelMetadataResponse()
    text_format.Parse(f"model_spec {{ {SPEC} }}", reference)
    reference.metadata["signature_def"].Pack(
        text_format.Parse(SIGNATURE_DEF_MAP, tf_get_model_metadata_pb2.SignatureDefMap())
    )
    assert mine.SerializeToString(deterministic=True) == reference.SerializeToString(
        deterministic=True
    )
    unpacked = get_model_metadata_pb2.SignatureDefMap()
    parsed = get_model_metadata_pb2.GetModelMetadataResponse.FromString(
        reference.SerializeToString()
    )
    assert parsed.metadata["signature_def"].Unpack(unpacked)
    assert unpacked.signature_def["serving_default"].inputs["text"].name == "serving_default_text:0"


def _fields(message: descriptor.Descriptor) -> dict:
    return {
        field.name: (
            field.number,
            field.type,
            field.is_repeated,
            field.message_type.full_name if field.message_type else None,
            field.enum_type.full_name if field.enum_type else None,
            field.containing_oneof.name if field.containing_oneof else None,
        )
        for field in message.fields
    }


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (tensor_pb2.TensorProto, tf_tensor_pb2.TensorProto),
        (meta_graph_pb2.TensorInfo, tf_meta_graph_pb2.TensorInfo),
        (meta_graph_pb2.SignatureDef, tf_meta_graph_pb2.SignatureDef),
        (predict_pb2.PredictRequest, tf_predict_pb2.PredictRequest),
        (predict_pb2.PredictResponse, tf_predict_pb2.PredictResponse),
        (
            get_model_metadata_pb2.GetModelMetadataResponse,
            tf_get_model_metadata_pb2.GetModelMetadataResponse,
        ),
        (
            get_model_status_pb2.ModelVersionStatus,
            tf_get_model_status_pb2.ModelVersionStatus,
        ),
    ],
    ids=lambda cls: cls.DESCRIPTOR.full_name,
)
def test_every_field_is_tensorflows_field(ours, theirs):
    """Full names, numbers, types and oneofs match; ours may only leave fields out."""
    assert ours.DESCRIPTOR.full_name == theirs.DESCRIPTOR.full_name
    mine, reference = _fields(ours.DESCRIPTOR), _fields(theirs.DESCRIPTOR)
    assert {name: reference.get(name) for name in mine} == mine


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (prediction_service_pb2, tf_prediction_service_pb2),
        (model_service_pb2, tf_model_service_pb2),
    ],
    ids=["PredictionService", "ModelService"],
)
def test_service_methods_have_tensorflow_servings_paths_and_types(ours, theirs):
    for service in ours.DESCRIPTOR.services_by_name.values():
        reference = theirs.DESCRIPTOR.services_by_name[service.name]
        assert service.full_name == reference.full_name
        for method in service.methods:
            other = reference.methods_by_name[method.name]
            assert method.input_type.full_name == other.input_type.full_name
            assert method.output_type.full_name == other.output_type.full_name


def test_the_enums_have_tensorflows_numbers():
    from tensorflow.core.framework import types_pb2 as tf_types_pb2
    from tensorflow.core.protobuf import error_codes_pb2 as tf_error_codes_pb2

    from keras_attention_client.wire.protos import error_codes_pb2, types_pb2

    for ours, theirs in [
        (types_pb2.DataType, tf_types_pb2.DataType),
        (error_codes_pb2.Code, tf_error_codes_pb2.Code),
        (
            get_model_status_pb2.ModelVersionStatus.State,
            tf_get_model_status_pb2.ModelVersionStatus.State,
        ),
    ]:
        assert dict(ours.items()) == dict(theirs.items())


def test_the_generated_code_is_current(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the test extra) regenerates protos")
    # In its own process: protoc's compiler and TensorFlow's protobuf do not share one.
    subprocess.run(
        [sys.executable, str(PROTOS / "generate.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    written = sorted(tmp_path.glob("*.py"))
    checked_in = sorted(p.name for p in PROTOS.glob("*_pb2*.py"))
    assert [p.name for p in written] == checked_in
    for path in written:
        assert path.read_text() == (PROTOS / path.name).read_text(), (
            f"{path.name} is stale: run python serving/client/wire/protos/generate.py"
        )
