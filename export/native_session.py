"""Run an export through TensorFlow's C API, the loader TF Serving uses, with no Python TensorFlow.

TF Serving loads a version with the C++ `LoadSavedModel`
(`tensorflow/cc/saved_model/loader.h`); TensorFlow's C API wraps it as
`TF_LoadSessionFromSavedModel`, exported by the `libtensorflow_cc.so.2` that
ships inside the tensorflow wheel (headers under
`tensorflow/include/tensorflow/c/`). `NativeSession` calls it with `ctypes`:

1. `ctypes.CDLL(libtensorflow_cc.so.2, RTLD_GLOBAL)` (it pulls in
   `libtensorflow_framework.so.2`); no `import tensorflow`.
2. `TF_LoadLibrary` for each tf-text op library (`_normalize_ops.so`, ...),
   as the model server links tf-text's ops.
3. `TF_LoadSessionFromSavedModel(options, NULL, dir, ["serve"], ...)`.
4. `run(feeds, fetches)`: `TF_SessionRun` on tensor names (`"op:index"`);
   DT_STRING tensors hold `TF_TString`s (`TF_StringInit` / `TF_StringCopy`).

This module imports only the standard library and NumPy, so `python -m
keras_attention.export.native_session` is a process where no Python TensorFlow graph code
runs. `keras_attention.export.native_check` starts it and compares its answers with the
Python Session path; the protocol is one JSON object on stdin (`library`,
`op_libraries`, `export_dir`, `requests`: `[{"feeds": {name: tensor},
"fetches": [name, ...]}]`) and one on stdout (`outputs` per request, or
`error`; tensors as `{"dtype", "shape", "values"}`, strings base64).
"""

from __future__ import annotations

import base64
import ctypes
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# TF_DataType values (tensorflow/c/tf_datatype.h) this module converts.
TF_FLOAT, TF_DOUBLE, TF_INT32, TF_STRING, TF_INT64, TF_BOOL = 1, 2, 3, 7, 9, 10
_NUMPY = {
    TF_FLOAT: np.dtype(np.float32),
    TF_DOUBLE: np.dtype(np.float64),
    TF_INT32: np.dtype(np.int32),
    TF_INT64: np.dtype(np.int64),
    TF_BOOL: np.dtype(np.bool_),
}
_DTYPE_NAMES = {
    TF_FLOAT: "float32",
    TF_DOUBLE: "float64",
    TF_INT32: "int32",
    TF_STRING: "string",
    TF_INT64: "int64",
    TF_BOOL: "bool",
}
_TSTRING_SIZE = 24  # sizeof(TF_TString) (tensorflow/core/platform/ctstring_internal.h)
_RTLD_GLOBAL = getattr(ctypes, "RTLD_GLOBAL", 0x100)


class _Output(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


class NativeError(RuntimeError):
    """A TF_Status that is not OK: `code` (TF_Code number) and TensorFlow's message."""

    def __init__(self, code: int, message: str):
        super().__init__(f"TF_Code {code}: {message}")
        self.code = code


class NativeSession:
    """A SavedModel version loaded by TensorFlow's C API (`TF_LoadSessionFromSavedModel`).

    Args:
        export_dir: the version directory.
        library: path of the wheel's `libtensorflow_cc.so.2`.
        op_libraries: custom op libraries to `TF_LoadLibrary` first (tf-text's).
        tags: MetaGraph tags (`["serve"]`).

    Example:

    ```python
    with NativeSession(path, library, op_libraries) as session:
        (translation,) = session.run({"serving_default_text:0": np.array([b"Hi."], object)},
                                     ["StatefulPartitionedCall:5"])
    ```
    """

    def __init__(
        self,
        export_dir: str,
        library: str,
        op_libraries: Sequence[str] = (),
        tags: Sequence[str] = ("serve",),
    ):
        self._lib = lib = ctypes.CDLL(library, mode=_RTLD_GLOBAL)
        self._declare(lib)
        self._status = lib.TF_NewStatus()
        self._session = None
        self._graph = None
        for path in op_libraries:
            lib.TF_LoadLibrary(path.encode(), self._status)
            self._check(f"TF_LoadLibrary({path})")
        options = lib.TF_NewSessionOptions()
        self._graph = lib.TF_NewGraph()
        tag_array = (ctypes.c_char_p * len(tags))(*(t.encode() for t in tags))
        try:
            self._session = lib.TF_LoadSessionFromSavedModel(
                options,
                None,
                str(export_dir).encode(),
                tag_array,
                len(tags),
                self._graph,
                None,
                self._status,
            )
            self._check(f"TF_LoadSessionFromSavedModel({export_dir})")
        finally:
            lib.TF_DeleteSessionOptions(options)

    def __enter__(self) -> NativeSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        lib = self._lib
        if self._session:
            lib.TF_CloseSession(self._session, self._status)
            lib.TF_DeleteSession(self._session, self._status)
            self._session = None
        if self._graph:
            lib.TF_DeleteGraph(self._graph)
            self._graph = None

    def run(self, feeds: Mapping[str, np.ndarray], fetches: Sequence[str]) -> list[np.ndarray]:
        """`TF_SessionRun`: feed tensor names -> arrays, fetch tensor names -> arrays."""
        lib = self._lib
        inputs = (_Output * len(feeds))()
        values = (ctypes.c_void_p * len(feeds))()
        owned = []
        try:
            for i, (name, value) in enumerate(feeds.items()):
                inputs[i] = self._output(name)
                values[i] = self._tensor(np.asarray(value))
                owned.append(values[i])
            outputs = (_Output * len(fetches))(*(self._output(name) for name in fetches))
            results = (ctypes.c_void_p * len(fetches))()
            lib.TF_SessionRun(
                self._session,
                None,
                inputs,
                values,
                len(feeds),
                outputs,
                results,
                len(fetches),
                None,
                0,
                None,
                self._status,
            )
            self._check("TF_SessionRun")
            arrays = []
            for pointer in results:
                arrays.append(self._array(pointer))
                lib.TF_DeleteTensor(pointer)
            return arrays
        finally:
            for pointer in owned:
                lib.TF_DeleteTensor(pointer)

    # ---------------------------------------------------------------------------------------

    def _check(self, what: str) -> None:
        code = self._lib.TF_GetCode(self._status)
        if code != 0:
            raise NativeError(code, f"{what}: {self._lib.TF_Message(self._status).decode()}")

    def _output(self, name: str) -> _Output:
        op_name, _, index = name.partition(":")
        operation = self._lib.TF_GraphOperationByName(self._graph, op_name.encode())
        if not operation:
            raise NativeError(5, f"No operation {op_name!r} in the loaded graph")
        return _Output(operation, int(index or 0))

    def _tensor(self, value: np.ndarray) -> int:
        lib = self._lib
        dims = (ctypes.c_int64 * value.ndim)(*value.shape)
        if value.dtype == object or value.dtype.kind in ("S", "U"):
            flat = [v.encode() if isinstance(v, str) else bytes(v) for v in value.reshape(-1)]
            tensor = lib.TF_AllocateTensor(TF_STRING, dims, value.ndim, _TSTRING_SIZE * len(flat))
            base = lib.TF_TensorData(tensor)
            for i, item in enumerate(flat):
                lib.TF_StringInit(base + i * _TSTRING_SIZE)
                lib.TF_StringCopy(base + i * _TSTRING_SIZE, item, len(item))
            return tensor
        dtype = next((k for k, v in _NUMPY.items() if v == value.dtype), None)
        if dtype is None:
            raise TypeError(f"Unsupported feed dtype. Received: {value.dtype}")
        data = np.ascontiguousarray(value)
        tensor = lib.TF_AllocateTensor(dtype, dims, value.ndim, data.nbytes)
        ctypes.memmove(lib.TF_TensorData(tensor), data.ctypes.data, data.nbytes)
        return tensor

    def _array(self, tensor: int) -> np.ndarray:
        lib = self._lib
        shape = tuple(lib.TF_Dim(tensor, i) for i in range(lib.TF_NumDims(tensor)))
        dtype = lib.TF_TensorType(tensor)
        base = lib.TF_TensorData(tensor)
        count = int(np.prod(shape, dtype=np.int64))
        if dtype == TF_STRING:
            flat = np.empty(count, dtype=object)
            for i in range(count):
                item = base + i * _TSTRING_SIZE
                flat[i] = ctypes.string_at(
                    lib.TF_StringGetDataPointer(item), lib.TF_StringGetSize(item)
                )
            return flat.reshape(shape)
        if dtype not in _NUMPY:
            raise TypeError(f"Unsupported output TF_DataType {dtype}")
        size = lib.TF_TensorByteSize(tensor)
        buffer = ctypes.string_at(base, size) if size else b""
        return np.frombuffer(buffer, dtype=_NUMPY[dtype]).reshape(shape).copy()

    @staticmethod
    def _declare(lib: ctypes.CDLL) -> None:
        p, i, i64, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
        signatures = {
            "TF_NewStatus": (p, []),
            "TF_GetCode": (i, [p]),
            "TF_Message": (ctypes.c_char_p, [p]),
            "TF_LoadLibrary": (p, [ctypes.c_char_p, p]),
            "TF_NewSessionOptions": (p, []),
            "TF_DeleteSessionOptions": (None, [p]),
            "TF_NewGraph": (p, []),
            "TF_DeleteGraph": (None, [p]),
            "TF_LoadSessionFromSavedModel": (
                p,
                [p, p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), i, p, p, p],
            ),
            "TF_GraphOperationByName": (p, [p, ctypes.c_char_p]),
            "TF_SessionRun": (
                None,
                [p, p, ctypes.POINTER(_Output), ctypes.POINTER(p), i]
                + [ctypes.POINTER(_Output), ctypes.POINTER(p), i, p, i, p, p],
            ),
            "TF_CloseSession": (None, [p, p]),
            "TF_DeleteSession": (None, [p, p]),
            "TF_AllocateTensor": (p, [i, ctypes.POINTER(i64), i, sz]),
            "TF_DeleteTensor": (None, [p]),
            "TF_TensorData": (p, [p]),
            "TF_TensorByteSize": (sz, [p]),
            "TF_TensorType": (i, [p]),
            "TF_NumDims": (i, [p]),
            "TF_Dim": (i64, [p, i]),
            "TF_StringInit": (None, [p]),
            "TF_StringCopy": (None, [p, ctypes.c_char_p, sz]),
            "TF_StringGetDataPointer": (p, [p]),
            "TF_StringGetSize": (sz, [p]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes


def encode_tensor(value: np.ndarray) -> dict[str, Any]:
    """An array as JSON: `{"dtype", "shape", "values"}`, strings base64-encoded."""
    value = np.asarray(value)
    if value.dtype == object or value.dtype.kind in ("S", "U"):
        items = [v.encode() if isinstance(v, str) else bytes(v) for v in value.reshape(-1)]
        values: list = [base64.b64encode(v).decode("ascii") for v in items]
        dtype = "string"
    else:
        dtype = value.dtype.name
        values = value.reshape(-1).tolist()
    return {"dtype": dtype, "shape": list(value.shape), "values": values}


def decode_tensor(record: Mapping[str, Any]) -> np.ndarray:
    """The inverse of `encode_tensor`."""
    shape = tuple(record["shape"])
    if record["dtype"] == "string":
        flat = np.empty(len(record["values"]), dtype=object)
        flat[:] = [base64.b64decode(v) for v in record["values"]]
        return flat.reshape(shape)
    return np.array(record["values"], dtype=record["dtype"]).reshape(shape)


def main() -> int:
    """Reads a job from stdin, runs it, writes the outputs as JSON to stdout."""
    job = json.load(sys.stdin)
    try:
        with NativeSession(job["export_dir"], job["library"], job.get("op_libraries", ())) as s:
            answers = []
            for request in job["requests"]:
                feeds = {name: decode_tensor(t) for name, t in request["feeds"].items()}
                outputs = s.run(feeds, request["fetches"])
                answers.append([encode_tensor(o) for o in outputs])
        result: dict[str, Any] = {"outputs": answers}
    except NativeError as error:
        result = {"error": str(error)}
    result["python_tensorflow_imported"] = any(
        name == "tensorflow" or name.startswith("tensorflow.") for name in sys.modules
    )
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
