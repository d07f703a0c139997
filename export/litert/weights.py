"""`int8_weight_only`: a float32 LiteRT model with its weight matrices stored in int8.

The SavedModel's `int8` weights (`weight_storage.WeightStorage`) are
weight-only: each weight matrix is stored as int8 values `q` and a float32
scale `s` per output channel, and the graph computes in float32 with `q * s`.
LiteRT's own dynamic-range quantization is not that: its FULLY_CONNECTED
kernels also quantize their float inputs to int8 on the fly, row by row, and
multiply integers, so a translation drifts further from the float32 model's
(measured in benchmarks/results/litert_export.json).

`int8_weight_only` gives a LiteRT model the SavedModel's scheme. It rewrites
the float32 flatbuffer that `tf.lite.TFLiteConverter` wrote: every float32
constant matrix (rank 2) that is the weights
of a FULLY_CONNECTED or the table of a GATHER is replaced by

- an int8 constant with the same shape, quantized per row with
  `weight_storage.quantize_per_channel` (a FULLY_CONNECTED's weights are
  `(outputs, inputs)`: a row is an output channel, as the SavedModel's
  column of a Keras kernel; an embedding's row is a token), with LiteRT's
  per-channel quantization parameters (`scale` per row, zero point 0,
  quantized dimension 0);
- a DEQUANTIZE op, first in the subgraph, writing the float32 values `q * s`
  into the tensor the consumers read. LiteRT's DEQUANTIZE of a constant runs
  once and keeps its output (a persistent tensor), in a loop's body too, so
  the kernels then compute in float32 as in the float32 model.

The stored values are then the SavedModel's `int8` ones, bit for bit, and
the computation is the float32 model's: the LiteRT model translates as the
`int8` SavedModel does (up to float32 kernel differences). The file holds a
quarter of the float32 bytes of those matrices; the memory a loaded model
uses is the float32 model's.
"""

from __future__ import annotations

import numpy as np

MIN_ELEMENTS = 1
"""The fewest values a matrix needs to be stored in int8: every one, as the SavedModel's
`int8` storage quantizes every weight matrix (LiteRT's quantizer leaves those under 1024
values in float32)."""
_DEQUANTIZE_VERSION = 5  # int8 input quantized per channel


def int8_weight_only(data: bytes, min_elements: int = MIN_ELEMENTS) -> bytes:
    """The flatbuffer `data` with its weight matrices stored in int8 (see the module).

    Args:
        data: a float32 `.tflite` model's bytes.
        min_elements: the fewest values a matrix has to be stored in int8.

    Returns:
        The new model's bytes.
    """
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    from keras_attention.export.weight_storage import quantize_per_channel

    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    codes = [max(code.builtinCode, code.deprecatedBuiltinCode) for code in model.operatorCodes]
    fully_connected = schema.BuiltinOperator.FULLY_CONNECTED
    gather = schema.BuiltinOperator.GATHER
    dequantize_code = _operator_code(model, schema)
    empty_buffer = _empty_buffer(model, schema)
    int8_buffers = {}  # float buffer index -> (int8 buffer index, scales)
    for subgraph in model.subgraphs:
        weights = set()
        for op in subgraph.operators:
            code = codes[op.opcodeIndex] if op.opcodeIndex < len(codes) else None
            if code == fully_connected and len(op.inputs) > 1:
                weights.add(int(op.inputs[1]))
            elif code == gather and _gather_axis(op, schema) == 0:
                weights.add(int(op.inputs[0]))
        new_ops = []
        for index in sorted(weights):
            tensor = subgraph.tensors[index]
            buffer = model.buffers[tensor.buffer]
            shape = list(tensor.shape) if tensor.shape is not None else []
            if (
                tensor.type != schema.TensorType.FLOAT32
                or buffer.data is None
                or len(shape) != 2
                or shape[0] * shape[1] < min_elements
            ):
                continue
            if tensor.buffer not in int8_buffers:
                values = np.frombuffer(bytes(buffer.data), dtype="<f4").reshape(shape)
                quantized, scale = quantize_per_channel(values, axis=0)
                model.buffers.append(
                    schema.BufferT(data=np.frombuffer(quantized.numpy().tobytes(), np.uint8))
                )
                int8_buffers[tensor.buffer] = (len(model.buffers) - 1, scale.numpy()[:, 0])
            int8_index, scales = int8_buffers[tensor.buffer]
            quantization = schema.QuantizationParametersT()
            quantization.scale = [float(s) for s in scales]
            quantization.zeroPoint = [0] * len(scales)
            quantization.quantizedDimension = 0
            stored = schema.TensorT()
            stored.shape = shape
            stored.type = schema.TensorType.INT8
            stored.buffer = int8_index
            stored.name = (tensor.name or b"weights") + b"/int8"
            stored.quantization = quantization
            subgraph.tensors.append(stored)
            tensor.buffer = empty_buffer  # now DEQUANTIZE's output
            op = schema.OperatorT()
            op.opcodeIndex = dequantize_code
            op.inputs = [len(subgraph.tensors) - 1]
            op.outputs = [index]
            new_ops.append(op)
        subgraph.operators = new_ops + list(subgraph.operators)
    for subgraph in model.subgraphs:
        read = {
            int(i)
            for op in subgraph.operators
            for i in (op.inputs if op.inputs is not None else [])
        }
        for index, tensor in enumerate(subgraph.tensors):
            if tensor.buffer in int8_buffers and index not in read:
                tensor.buffer = empty_buffer  # a constant nothing reads (e.g. a tied copy)
    used = {t.buffer for s in model.subgraphs for t in s.tensors}
    for index in int8_buffers:
        if index not in used:
            model.buffers[index].data = None  # the float32 values are no longer stored
    builder = flatbuffers.Builder(len(data))
    _pack_aligned_buffers(model, schema, builder)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _operator_code(model, schema) -> int:
    """The index of the DEQUANTIZE operator code in `model` (added if missing)."""
    dequantize = schema.BuiltinOperator.DEQUANTIZE
    for index, code in enumerate(model.operatorCodes):
        if max(code.builtinCode, code.deprecatedBuiltinCode) == dequantize:
            code.version = max(code.version, _DEQUANTIZE_VERSION)
            return index
    code = schema.OperatorCodeT()
    code.builtinCode = dequantize
    code.deprecatedBuiltinCode = dequantize
    code.version = _DEQUANTIZE_VERSION
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _empty_buffer(model, schema) -> int:
    """The index of a buffer with no data (LiteRT's convention: buffer 0)."""
    for index, buffer in enumerate(model.buffers):
        if buffer.data is None and not buffer.offset:
            return index
    model.buffers.append(schema.BufferT())
    return len(model.buffers) - 1


def _gather_axis(op, schema) -> int:
    options = op.builtinOptions
    return getattr(options, "axis", 0) if options is not None else 0


def _pack_aligned_buffers(model, schema, builder) -> None:
    """Makes `BufferT.Pack` write its data 16-byte aligned, as LiteRT's converter does."""

    def pack(buffer, builder):
        data = None
        if buffer.data is not None:
            raw = np.asarray(buffer.data, dtype=np.uint8).tobytes()
            builder.StartVector(1, len(raw), 16)
            builder.head = builder.head - len(raw)
            builder.Bytes[builder.head : builder.head + len(raw)] = raw
            data = builder.EndVector()
        schema.BufferStart(builder)
        if data is not None:
            schema.BufferAddData(builder, data)
        schema.BufferAddOffset(builder, buffer.offset)
        schema.BufferAddSize(builder, buffer.size)
        return schema.BufferEnd(builder)

    for buffer in model.buffers:
        buffer.Pack = pack.__get__(buffer)
