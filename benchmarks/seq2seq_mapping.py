"""A `Seq2Seq` Luong decoder as TFA-style seq2seq objects: the weights, and the decoder.

`seq2seq_decoder_speed.py` and its TFA companion run the same beam search three ways:
`Seq2Seq`'s own (`keras_attention.decoding.BeamSearch`), `keras_attention.seq2seq`'s
`BeamSearchDecoder`, and TensorFlow Addons' (`tfa.seq2seq`, in a side environment).
This module holds the one mapping between them, written against a seq2seq module
and a Keras module given as arguments (`keras_attention.seq2seq` with Keras 3, or
`tfa.seq2seq` with `tf.keras` 2), so it imports neither; only NumPy at module level.

The decoder of `keras-attention train`'s default model (`LuongDecoder` without input
feeding, a GRU, the cosine score with a learned scale `g`, tied output) at step t:

1. `s_t = GRU(E[y_{t-1}], s_{t-1})`, `s_0 = tanh(W_s summary + b_s)`;
2. `a_t = softmax(g * cos(s_t, h_i))` over the source positions, `c_t = sum_i a_ti h_i`;
3. `h~_t = tanh(W_c [c_t; s_t])`, `o_t = W_r h~_t + b_r`, `logits = o_t E^T + b`.

As seq2seq objects: the GRU cell inside `AttentionWrapper` with `cell_input_fn`
returning the embedding alone (no input feeding), an attention layer
`Dense(tanh, use_bias=False)` on `[s_t; c_t]` (TFA's order: `W_c`'s two row blocks
swapped), `output_attention=True`; the mechanism is `LuongAttention(scale=True)`
whose memory layer L2-normalizes the annotations and whose query is L2-normalized
(TFA has no cosine score; the normalization is the one of our `LuongAttention`
layer, `x * rsqrt(max(sum(x^2), 1e-12))`); the output layer is the readout
`Dense` followed by a `Dense` holding `E^T` and the output bias.
"""

from __future__ import annotations

import numpy as np

NORM_EPSILON = 1e-12
"""The floor of the squared norm in the cosine score (`keras_attention.layers.luong_attention`)."""

WEIGHT_NAMES = (
    "bridge/kernel",
    "bridge/bias",
    "cell/kernel",
    "cell/recurrent_kernel",
    "cell/bias",
    "attention/scale",
    "attention_layer/kernel",
    "readout/kernel",
    "readout/bias",
    "output/kernel",
    "output/bias",
    "embedding",
)
"""The arrays `seq2seq_weights` returns, by name (the `.npz` the TFA companion reads)."""


def check_default_decoder(model) -> None:
    """Raises `ValueError` unless `model` (a `Seq2Seq`) has the decoder this mapping
    describes: Luong, no input feeding, a GRU, the scaled cosine score, tied output."""
    decoder = model.decoder
    attention = decoder.attention_layer
    found = {
        "decoder": type(decoder).__name__,
        "input_feeding": getattr(decoder, "input_feeding", None),
        "cell": decoder.cell,
        "score": getattr(attention, "score", None),
        "scale": getattr(attention, "scale", None),
        "tie_embeddings": decoder.tie_embeddings,
    }
    expected = {
        "decoder": "LuongDecoder",
        "input_feeding": False,
        "cell": "gru",
        "score": "cosine",
        "scale": True,
        "tie_embeddings": True,
    }
    if found != expected:
        raise ValueError(f"The mapping covers a decoder with {expected}. Received: {found}")


def seq2seq_weights(model) -> dict[str, np.ndarray]:
    """The decoder's weights under `WEIGHT_NAMES`, laid out for the seq2seq objects."""
    check_default_decoder(model)
    decoder = model.decoder
    combine = decoder.combine.kernel.numpy()  # rows: [c_t; s_t]
    values_depth = combine.shape[0] - decoder.units
    embedding = decoder.embedding.embeddings.numpy()
    arrays = {
        "bridge/kernel": decoder.bridge.kernel.numpy(),
        "bridge/bias": decoder.bridge.bias.numpy(),
        "cell/kernel": decoder.rnn_cell.kernel.numpy(),
        "cell/recurrent_kernel": decoder.rnn_cell.recurrent_kernel.numpy(),
        "cell/bias": decoder.rnn_cell.bias.numpy(),
        "attention/scale": np.asarray(decoder.attention_layer.score_scale.numpy()),
        # TFA's attention layer reads [cell_output; context]: the two row blocks swap.
        "attention_layer/kernel": np.concatenate([combine[values_depth:], combine[:values_depth]]),
        "readout/kernel": decoder.readout.kernel.numpy(),
        "readout/bias": decoder.readout.bias.numpy(),
        "output/kernel": np.ascontiguousarray(embedding.T),
        "output/bias": decoder.output_bias.numpy(),
        "embedding": embedding,
    }
    return {name: arrays[name] for name in WEIGHT_NAMES}


class DecoderParts:
    """The seq2seq objects of the mapped decoder, built and holding `weights`.

    Args:
        s2s: `keras_attention.seq2seq` or `tfa.seq2seq`.
        keras_module: the Keras those objects are layers of (`keras`, `tf.keras`).
        tf: TensorFlow.
        weights: `seq2seq_weights`' arrays.
        search: `{"beam_width", "length_penalty", "max_steps", "start_id", "end_id"}`.
    """

    def __init__(self, s2s, keras_module, tf, weights, search):
        self.s2s, self.tf, self.search = s2s, tf, search
        layers = keras_module.layers
        units = weights["cell/recurrent_kernel"].shape[0]
        self.bridge = layers.Dense(units, activation="tanh", name="bridge")
        self.cell = layers.GRUCell(units, name="gru_cell")
        # Built for the embedding alone: `keras_attention.seq2seq.AttentionWrapper` builds
        # an unbuilt cell for [inputs; attention] even with another `cell_input_fn`.
        self.cell.build((None, weights["embedding"].shape[1]))
        self.mechanism = _cosine_luong(s2s, keras_module, tf)(
            units, scale=True, memory_layer=_l2_normalization(keras_module, tf)()
        )
        self.wrapper = s2s.AttentionWrapper(
            self.cell,
            self.mechanism,
            attention_layer=layers.Dense(
                units, activation="tanh", use_bias=False, name="attention_layer"
            ),
            cell_input_fn=lambda inputs, attention: inputs,
            output_attention=True,
        )
        readout_units, vocabulary = weights["output/kernel"].shape
        self.output_layer = keras_module.Sequential(
            [layers.Dense(readout_units, name="readout"), layers.Dense(vocabulary, name="output")]
        )
        self.embedding = tf.Variable(weights["embedding"], trainable=False, name="embedding")
        self.decoder = s2s.BeamSearchDecoder(
            self.wrapper,
            beam_width=search["beam_width"],
            output_layer=self.output_layer,
            length_penalty_weight=search["length_penalty"],
            maximum_iterations=search["max_steps"],
        )
        self._build(weights)

    def _build(self, weights):
        """Runs one step eagerly on a dummy batch (every weight created), then sets them."""
        tf = self.tf
        summary_depth = weights["bridge/kernel"].shape[0]
        values_depth = weights["attention_layer/kernel"].shape[0] - self.cell.units
        self.mechanism.setup_memory(tf.ones([1, 2, values_depth]))
        self.bridge(tf.ones([1, summary_depth]))
        state = self.wrapper.get_initial_state(batch_size=1, dtype=tf.float32)
        output, _ = self.wrapper(tf.ones([1, weights["embedding"].shape[1]]), state)
        self.output_layer(output)
        layers = {
            "bridge": self.bridge,
            "cell": self.cell,
            "attention_layer": self.wrapper._attention_layers[0],
            "readout": self.output_layer.layers[0],
            "output": self.output_layer.layers[1],
        }
        for name, value in weights.items():
            layer, _, attribute = name.partition("/")
            if layer == "attention" and attribute == "scale":
                self.mechanism.scale_weight.assign(value)
            elif layer in layers:
                getattr(layers[layer], attribute).assign(value)

    def decode(self, annotations, source_mask, summary):
        """The best beam's ids `(batch_size, T)` (the end token repeated after it ends)
        of the beam search from the encoder's outputs: annotations `(batch_size, Ts,
        dv)`, bool `source_mask` `(batch_size, Ts)`, `summary` `(batch_size, ds)`."""
        tf, s2s, beam_width = self.tf, self.s2s, self.search["beam_width"]
        batch_size = tf.shape(annotations)[0]
        first = self.bridge(summary)
        self.mechanism.setup_memory(
            s2s.tile_batch(annotations, beam_width),
            memory_mask=s2s.tile_batch(source_mask, beam_width),
        )
        state = self.wrapper.get_initial_state(batch_size=batch_size * beam_width, dtype=tf.float32)
        tiled = s2s.tile_batch(first, beam_width)
        state = state.clone(cell_state=tf.nest.pack_sequence_as(state.cell_state, [tiled]))
        outputs, _, _ = self.decoder(
            self.embedding,
            start_tokens=tf.fill([batch_size], self.search["start_id"]),
            end_token=self.search["end_id"],
            initial_state=state,
        )
        return outputs.predicted_ids[:, :, 0]


def _l2_normalization(keras_module, tf):
    """A weightless layer of `keras_module` that L2-normalizes its input's last axis."""

    class L2Normalization(keras_module.layers.Layer):
        def call(self, inputs):
            return _l2_normalize(tf, inputs)

    return L2Normalization


def _cosine_luong(s2s, keras_module, tf):
    """`s2s.LuongAttention` scoring with the L2-normalized query (the keys come
    normalized from the memory layer): `g * cos(query, h_i)`."""

    class CosineLuongAttention(s2s.LuongAttention):
        def _calculate_attention(self, query, state):
            return super()._calculate_attention(_l2_normalize(tf, query), state)

    return CosineLuongAttention


def _l2_normalize(tf, x):
    squared = tf.reduce_sum(tf.square(x), axis=-1, keepdims=True)
    return x * tf.math.rsqrt(tf.maximum(squared, NORM_EPSILON))


def rows_before_end(ids, end_id: int) -> list[tuple[int, ...]]:
    """Each row of a decoder's `ids` `(batch_size, T)` up to its first `end_id`, excluded
    (the whole row without one): after the end, TFA's decoders repeat the end token."""
    rows = []
    for row in np.asarray(ids):
        ends = np.flatnonzero(row == end_id)
        rows.append(tuple(int(i) for i in (row[: ends[0]] if ends.size else row)))
    return rows


def rows_of_lengths(tokens, lengths) -> list[tuple[int, ...]]:
    """Each row of a `DecodeResult`'s `tokens` cut at its `lengths` (which leave the end
    token out, as `rows_before_end`)."""
    return [
        tuple(int(i) for i in row[:length])
        for row, length in zip(np.asarray(tokens), np.asarray(lengths), strict=True)
    ]


def identical_share(rows, other_rows) -> float:
    """The share of rows (`rows_before_end`, `rows_of_lengths`) that are the same."""
    pairs = list(zip(rows, other_rows, strict=True))
    return sum(x == y for x, y in pairs) / len(pairs)
