"""Reading a SavedModel's protobuf without loading it: signatures and ops."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from google.protobuf import message, text_format
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

from keras_attention_client.wire.contract import SERVE_TAG

SAVED_MODEL_PB = "saved_model.pb"
SAVED_MODEL_PBTXT = "saved_model.pbtxt"


def read_saved_model(version_dir: str | os.PathLike) -> saved_model_pb2.SavedModel:
    """Parses `saved_model.pb` (or `.pbtxt`) of a version directory.

    Raises:
        FileNotFoundError: no directory, or no `saved_model.pb` in it.
        ValueError: the file is not a `SavedModel` protobuf.
    """
    version_dir = Path(version_dir)
    if not version_dir.is_dir():
        raise FileNotFoundError(f"Export directory {str(version_dir)!r} does not exist")
    binary, text = version_dir / SAVED_MODEL_PB, version_dir / SAVED_MODEL_PBTXT
    saved_model = saved_model_pb2.SavedModel()
    if binary.is_file():
        try:
            saved_model.ParseFromString(binary.read_bytes())
        except message.DecodeError as error:
            raise ValueError(f"{str(binary)!r} is not a SavedModel protobuf: {error}") from None
    elif text.is_file():
        try:
            text_format.Parse(text.read_text(encoding="utf-8"), saved_model)
        except (text_format.ParseError, UnicodeDecodeError) as error:
            raise ValueError(f"{str(text)!r} is not a SavedModel text protobuf: {error}") from None
    else:
        hint = ""
        if any(child.name.isdigit() for child in version_dir.iterdir()):
            hint = " (it looks like a base directory: pass BASE/<version>)"
        raise FileNotFoundError(f"No {SAVED_MODEL_PB} in {str(version_dir)!r}{hint}")
    if not saved_model.meta_graphs:
        raise ValueError(f"The SavedModel in {str(version_dir)!r} has no MetaGraph")
    return saved_model


def serve_meta_graph(saved_model: saved_model_pb2.SavedModel) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraph tagged exactly `{"serve"}`, the one TF Serving loads.

    Raises:
        ValueError: there is none.
    """
    for meta_graph in saved_model.meta_graphs:
        if set(meta_graph.meta_info_def.tags) == {SERVE_TAG}:
            return meta_graph
    tags = [sorted(m.meta_info_def.tags) for m in saved_model.meta_graphs]
    raise ValueError(f"No MetaGraph with tag {SERVE_TAG!r}. Received tag sets: {tags}")


def tensor_info_spec(tensor_info: meta_graph_pb2.TensorInfo) -> dict[str, Any]:
    """`{"dtype": "DT_STRING", "shape": [-1, -1] or None, "name": "x:0"}` of a TensorInfo."""
    shape = tensor_info.tensor_shape
    dims = None if shape.unknown_rank else [d.size for d in shape.dim]
    return {
        "dtype": types_pb2.DataType.Name(tensor_info.dtype),
        "shape": dims,
        "name": tensor_info.name
        or ("<composite>" if tensor_info.HasField("composite_tensor") else ""),
    }


def describe_signatures(meta_graph: meta_graph_pb2.MetaGraphDef) -> dict[str, dict[str, Any]]:
    """Signature name -> `{"method_name", "inputs", "outputs"}`, each alias -> spec.

    Internal entries (`__saved_model_init_op`) are left out.
    """
    described = {}
    for name, signature in sorted(meta_graph.signature_def.items()):
        if name.startswith("__"):
            continue
        described[name] = {
            "method_name": signature.method_name,
            "inputs": {k: tensor_info_spec(v) for k, v in sorted(signature.inputs.items())},
            "outputs": {k: tensor_info_spec(v) for k, v in sorted(signature.outputs.items())},
        }
    return described


def graph_ops(meta_graph: meta_graph_pb2.MetaGraphDef) -> dict[str, list[str]]:
    """Op type -> where it is used (`"graph:<node>"` or `"<function>/<node>"`).

    Covers the top-level graph and every function of the library (the
    `tf.function` bodies, `while` loop bodies, `cond` branches). A node
    whose op is the name of a library function (a direct function call) is
    not an op and is left out.
    """
    graph_def = meta_graph.graph_def
    functions = {f.signature.name for f in graph_def.library.function}
    used: dict[str, list[str]] = defaultdict(list)
    for node in graph_def.node:
        if node.op not in functions:
            used[node.op].append(f"graph:{node.name}")
    for function in graph_def.library.function:
        for node in function.node_def:
            if node.op not in functions:
                used[node.op].append(f"{function.signature.name}/{node.name}")
    return dict(used)


def xla_compiled_functions(meta_graph: meta_graph_pb2.MetaGraphDef) -> list[str]:
    """Names of the library functions marked `_XlaMustCompile` (jit_compile=True)."""
    graph_def = meta_graph.graph_def
    marked = []
    for function in graph_def.library.function:
        attr = function.attr.get("_XlaMustCompile")
        if attr is not None and attr.b:
            marked.append(function.signature.name)
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for node in nodes:
        attr = node.attr.get("_XlaMustCompile")
        if attr is not None and attr.b:
            marked.append(node.attr["f"].func.name if "f" in node.attr else node.name)
    return sorted(set(marked))
