"""`model_ops`: the operators a LiteRT flatbuffer uses, read from the file itself."""

from __future__ import annotations


def model_ops(data: bytes) -> dict[str, list[str]]:
    """The op kinds of a `.tflite` model (all its subgraphs: the loops' bodies too).

    Read from the flatbuffer's operator codes with LiteRT's schema
    (`ai_edge_litert.schema_py_generated`).

    Args:
        data: the model's bytes.

    Returns:
        `{"builtin": [...], "custom": [...], "flex": [...]}`, sorted names:
        the builtin operators (`"WHILE"`, `"FULLY_CONNECTED"`, ...), the
        custom ones, and of those the Flex ones (TensorFlow kernels, custom
        codes starting with `"Flex"`), which a builtin-only runtime cannot run.
    """
    from ai_edge_litert import schema_py_generated as schema

    names = {value: name for name, value in vars(schema.BuiltinOperator).items() if name.isupper()}
    model = schema.Model.GetRootAsModel(bytearray(data), 0)
    builtin, custom = set(), set()
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if number == schema.BuiltinOperator.CUSTOM:
            custom.add(code.CustomCode().decode("utf-8"))
        else:
            builtin.add(names.get(number, str(number)))
    return {
        "builtin": sorted(builtin),
        "custom": sorted(custom),
        "flex": sorted(name for name in custom if name.startswith("Flex")),
    }
