"""`model_with_policy`: a model rebuilt to compute under another dtype policy."""

from __future__ import annotations

from keras_attention.precision import POLICIES


def model_with_policy(model, policy: str):
    """`model`, or a copy of it that computes under the dtype policy `policy`.

    The copy is built from `model.get_config()` with every layer's dtype
    policy replaced, then given `model`'s weights (all policies of
    `POLICIES` keep float32 variables, so the weights carry over unchanged).
    `model` itself is returned when it already computes under `policy`.

    Args:
        model: a built model whose class rebuilds from its config and whose
            `build()` needs no argument (as `Seq2Seq`'s).
        policy: one of `POLICIES`.
    """
    if policy not in POLICIES:
        raise ValueError(f"`policy` must be one of {POLICIES}. Received: policy={policy!r}")
    if model.dtype_policy.name == policy:
        return model
    copy = type(model).from_config(_with_policy(model.get_config(), policy))
    copy.build()
    copy.set_weights(model.get_weights())
    return copy


def _with_policy(config, policy: str):
    """`config` with every layer's `"dtype"` entry (a policy name or a serialized
    `DTypePolicy`) replaced by `policy`."""
    if isinstance(config, list):
        return [_with_policy(value, policy) for value in config]
    if not isinstance(config, dict):
        return config
    replaced = {key: _with_policy(value, policy) for key, value in config.items()}
    dtype = config.get("dtype")
    if dtype in POLICIES or (isinstance(dtype, dict) and dtype.get("class_name") == "DTypePolicy"):
        replaced["dtype"] = policy
    return replaced
