"""The RNN decoder, with Bahdanau, Luong or no attention."""

from typing import NamedTuple

import keras
import tensorflow as tf

from keras_attention.layers import BahdanauAttention, LuongAttention
from keras_attention.models.arguments import check_choice, check_positive_ints, check_rate
from keras_attention.models.encoder import RNN_CELLS
from keras_attention.models.fused_gru import gru_sequence

ATTENTION_TYPES = ("bahdanau", "luong", "none")
DEEP_OUTPUTS = ("maxout", "tanh")


class CellWeights(NamedTuple):
    """The decoder cell's weights as `AttentionDecoder._cell` uses them."""

    kernel: tf.Tensor  # W, or W_e when split
    extra_kernel: tf.Tensor | None  # W_x when split (and the cell has an input x)
    recurrent_kernel: tf.Tensor
    input_bias: tf.Tensor
    recurrent_bias: tf.Tensor | None  # the GRU's (reset_after)
    split: bool


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionDecoder(keras.layers.Layer):
    """An RNN decoder that attends over the encoder's annotations.

    One recurrence, `step`, serves both teacher-forced training (`call` runs it
    in a `tf.while_loop` over the target) and inference (samplers call it
    through `Seq2Seq.next_logits`). In training only what depends on the
    previous step runs in the loop (`recurrent_step`); the rest
    (`output_features`: the deep output or readout, and Luong's attention when
    it does not feed the cell) and the projection over the vocabulary run once
    on all steps after it. Luong's decoder without input feeding is then a
    plain GRU over the target embeddings, which training runs as
    `fused_gru.gru_sequence` (its backward pass written out).

    At output step t, with `e = Embedding(y_{t-1})`, encoder annotations `H`:

    - `"bahdanau"` (query = previous state):
      1. `c_t, a_t = attention(s_{t-1}, H)`
      2. `s_t = cell([e; c_t], s_{t-1})`
      3. `o_t = maxout(W_g [s_t; c_t; e] + b)`, the paper's deep output: a max
         over pairs of the `2 x output_dim` linear units
    - `"luong"` (query = current state):
      1. `s_t = cell(e, s_{t-1})`; with input feeding
         `s_t = cell([e; h~_{t-1}], s_{t-1})`
      2. `c_t, a_t = attention(s_t, H)`
      3. `o_t = h~_t = tanh(W_c [c_t; s_t])`
    - `"none"` (the plain encoder-decoder): `c` = the encoder summary vector,
      the same at every step; `s_t = cell([e; c], s_{t-1})`,
      `o_t = maxout(W_g [s_t; c; e] + b)`; attention weights are all zero.

    Then `logits_t = W_o o_t + b`, where `W_o` is the target embedding matrix
    when `tie_embeddings=True`. The initial state is `s_0 = tanh(W_s summary)`.

    Args:
        vocabulary_size: int, number of target token ids (required).
        embedding_dim: int, size of the target embeddings. Defaults to `256`.
        units: int, decoder RNN units. Defaults to `512`.
        attention: `"luong"`, `"bahdanau"` or `"none"`. Defaults to
            `"luong"`.
        score: the Luong score function (see `LuongAttention`); ignored by
            the other attention types. Defaults to `"cosine"`.
        attention_units: int or None, units of the additive (`"bahdanau"`)
            or `"concat"` score. Defaults to `None`: `units`.
        cell: `"gru"` or `"lstm"`. Defaults to `"gru"`.
        input_feeding: bool, Luong input feeding (`s_t = cell([e; h~_{t-1}],
            s_{t-1})`). Defaults to `False`: in this project's runs it slowed
            the start of training of every Luong score.
        tie_embeddings: bool, score outputs against the target embedding
            matrix (`o_t` is then of size `embedding_dim`). Defaults to
            `False`.
        dropout: float, dropout on embeddings and on `o_t`. Defaults to
            `0.0`.
        max_source_length: int or None, the longest source; required by the
            `"location"` score. Defaults to `None`.
        deep_output: `"maxout"` or `"tanh"`, the output layer of the
            `"bahdanau"` and `"none"` decoders. Defaults to `"maxout"`.
            `"tanh"` bounds `o_t` to `[-1, 1]`, which, with tied embeddings,
            keeps the logits near uniform and stalls training; it remains for
            models saved before maxout was the default.
        normalize: bool, the weight-normalized Bahdanau score (see
            `BahdanauAttention`); ignored by the other attention types.
            Defaults to `False`.
        score_scale: bool or None, multiply the Luong scores by a learned
            scalar (`LuongAttention(scale=...)`); ignored by the other
            attention types. Defaults to `None`: the score's default, on for
            `"cosine"` and `"scaled_dot"`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        target_in: int `(batch_size, Tt)`, `[START]` followed by the target.
        annotations: `(batch_size, Ts, dv)`, the encoder outputs `H`.
        source_mask: bool `(batch_size, Ts)`, `True` on real source tokens.
        summary: `(batch_size, ds)`, the encoder's summary vector.
        training: bool, whether dropout is applied. Defaults to `False`.

    Returns:
        `(logits, attention)`: float32 `(batch_size, Tt, vocabulary_size)` and
        float32 `(batch_size, Tt, Ts)`.

    Measurements behind the defaults: docs/results.md and
    docs/research/model-notes.md.
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=256,
        units=512,
        attention="luong",
        score="cosine",
        attention_units=None,
        cell="gru",
        input_feeding=False,
        tie_embeddings=False,
        dropout=0.0,
        max_source_length=None,
        deep_output="maxout",
        normalize=False,
        score_scale=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice("attention", attention, ATTENTION_TYPES)
        check_choice("deep_output", deep_output, DEEP_OUTPUTS)
        check_choice("cell", cell, RNN_CELLS)
        check_positive_ints(
            vocabulary_size=vocabulary_size, embedding_dim=embedding_dim, units=units
        )
        check_rate("dropout", dropout)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.attention = attention
        self.score = score
        self.attention_units = attention_units
        self.cell = cell
        self.input_feeding = input_feeding
        self.tie_embeddings = tie_embeddings
        self.dropout = dropout
        self.max_source_length = max_source_length
        self.deep_output = deep_output
        self.normalize = normalize

        policy = self.dtype_policy
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=policy, name="embedding"
        )
        self.bridge = keras.layers.Dense(units, activation="tanh", dtype=policy, name="bridge")
        cell_class = keras.layers.GRUCell if cell == "gru" else keras.layers.LSTMCell
        self.rnn_cell = cell_class(units, dtype=policy, name=f"{cell}_cell")
        output_dim = embedding_dim if tie_embeddings else units
        if attention == "bahdanau":
            self.attention_layer = BahdanauAttention(
                attention_units or units, normalize=normalize, dtype=policy, name="attention"
            )
        elif attention == "luong":
            self.attention_layer = LuongAttention(
                score=score,
                units=(attention_units or units) if score == "concat" else None,
                max_length=max_source_length if score == "location" else None,
                scale=score_scale,
                dtype=policy,
                name="attention",
            )
            # As the layer resolved it, so a saved decoder keeps its weights.
            score_scale = self.attention_layer.scale
        else:
            self.attention_layer = None
        self.score_scale = score_scale
        if attention == "luong":
            # h~_t = tanh(W_c [c_t; s_t]); a linear map to the embedding size
            # follows when the output is tied to the embeddings.
            self.combine = keras.layers.Dense(
                units, activation="tanh", use_bias=False, dtype=policy, name="combine"
            )
            self.readout = (
                keras.layers.Dense(output_dim, dtype=policy, name="readout")
                if tie_embeddings
                else None
            )
        else:
            self.combine = None
            # The deep output of Bahdanau et al. (2015, A.2.2): a linear map of
            # [s_t; c_t; e] to 2 x output_dim, then a maxout over pairs of units.
            # ("tanh": one tanh layer, whose bounded output cannot scale tied
            # logits up; kept for models saved before the maxout became default.)
            width = 2 * output_dim if deep_output == "maxout" else output_dim
            self.readout = keras.layers.Dense(
                width,
                activation="tanh" if deep_output == "tanh" else None,
                dtype=policy,
                name="readout",
            )
        if tie_embeddings:
            self.output_layer = None
        else:
            self.output_layer = keras.layers.Dense(vocabulary_size, dtype=policy, name="logits")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=policy)

    def build(self, target_in_shape, annotations_shape):
        if self.attention_layer is not None:
            # Build now: some scores' key projection needs the query size.
            self.attention_layer.build((None, self.units), tuple(annotations_shape))
        if self.tie_embeddings:
            self.output_bias = self.add_weight(
                shape=(self.vocabulary_size,), initializer="zeros", name="output_bias"
            )

    # ------------------------------------------------------------------ state

    def initial_state(self, annotations, source_mask, summary):
        """The decoding state before the first step.

        Args:
            annotations: `(batch_size, Ts, dv)` encoder outputs.
            source_mask: bool `(batch_size, Ts)`, True on real tokens.
            summary: `(batch_size, ds)` encoder summary vector.

        Returns:
            A dict of tensors, each with the batch as its first dimension:
            `"rnn"` (list of cell states), `"feed"` (Luong input feeding),
            and the encoder memory `"values"`, `"keys"`, `"mask"`, `"summary"`.
            The keys are projected here, once per sentence.
        """
        summary = keras.ops.cast(summary, self.compute_dtype)
        annotations = keras.ops.cast(annotations, self.compute_dtype)
        s0 = self.bridge(summary)
        rnn_state = [s0] if self.cell == "gru" else [s0, keras.ops.zeros_like(s0)]
        state = {"rnn": rnn_state, "values": annotations, "mask": source_mask, "summary": summary}
        if self.attention_layer is not None:
            state["keys"] = self.attention_layer.prepare_keys(annotations)
        if self.attention == "luong" and self.input_feeding:
            state["feed"] = keras.ops.zeros_like(s0)
        return state

    def step(self, embedded, state, training=False):
        """One decoder step on embedded previous tokens.

        Args:
            embedded: `(batch_size, embedding_dim)`.
            state: dict from `initial_state` or a previous `step`.

        Returns:
            `(output, new_state, attention)`: `(batch_size, output_dim)` features
            before the vocabulary projection, the next state, and the attention
            weights `(batch_size, Ts)` in float32.
        """
        recurrent_output, new_state, weights = self.recurrent_step(
            embedded, state, self._cell_weights(state, split=False)
        )
        output, output_weights = self.output_features(recurrent_output, embedded, state)
        weights = weights if output_weights is None else output_weights
        return output, new_state, keras.ops.cast(weights, "float32")

    @property
    def _attention_after_loop(self):
        """Luong's attention without input feeding depends on `s_t` alone, not on
        earlier steps: `output_features` computes it, in training once for all
        steps after the loop."""
        return self.attention == "luong" and not self.input_feeding

    def recurrent_step(self, embedded, state, cell_weights):
        """The part of `step` inside the recurrence.

        `cell_weights` is `_cell_weights(state, split)`; with split weights
        (training) `embedded` is `_input_projection`'s `e W_e + b` for this
        step, computed for all steps at once before the loop, otherwise the
        embedding `e` itself.

        Returns `(recurrent_output, new_state, attention)`, where
        `recurrent_output` is what `output_features` needs besides the
        embedding: `[s_t; c_t]` for `"bahdanau"` and `"none"`, `h~_t` for
        `"luong"` with input feeding and `s_t` without it. `attention` is
        `None` for `"luong"` without input feeding: its attention depends on
        `s_t` alone, not on earlier steps, so `output_features` computes it
        (in training once for all steps). Teacher-forced training runs only
        this in its loop and `output_features` once on all steps after it.
        """
        rnn_state = state["rnn"]
        new_state = dict(state)
        if self.attention == "luong":
            feed = state["feed"] if self.input_feeding else None
            recurrent_output, rnn_state = self._cell(embedded, feed, rnn_state, cell_weights)
            weights = None
            if self.input_feeding:
                recurrent_output, weights = self._luong_output(recurrent_output, state)
                new_state["feed"] = recurrent_output
        else:
            if self.attention == "bahdanau":
                context, weights = self._attend(rnn_state[0], state)
            else:
                context = state["summary"]
                weights = keras.ops.zeros(keras.ops.shape(state["mask"]), dtype="float32")
            cell_output, rnn_state = self._cell(embedded, context, rnn_state, cell_weights)
            recurrent_output = keras.ops.concatenate([cell_output, context], axis=-1)
        new_state["rnn"] = rnn_state
        return recurrent_output, new_state, weights

    def output_features(self, recurrent_output, embedded, memory):
        """`(o_t, attention)` from `recurrent_step`'s output, the embedding and the
        encoder memory (`initial_state`'s `values`, `keys`, `mask`), for one step
        `(batch_size, ...)` or all steps at once `(batch_size, Tt, ...)`.
        `attention` is None unless computed here (Luong without input feeding)."""
        if self.attention != "luong":
            features = keras.ops.concatenate([recurrent_output, embedded], axis=-1)
            return self._deep_output(features), None
        weights = None
        if not self.input_feeding:
            recurrent_output, weights = self._luong_output(recurrent_output, memory)
        if self.readout is not None:
            recurrent_output = self.readout(recurrent_output)
        return recurrent_output, weights

    def _luong_output(self, cell_output, memory):
        """`(h~_t = tanh(W_c [c_t; s_t]), a_t)` with `c_t, a_t = attention(s_t, H)`."""
        context, weights = self._attend(cell_output, memory)
        return self.combine(keras.ops.concatenate([context, cell_output], axis=-1)), weights

    def _deep_output(self, features):
        """`o_t` of the Bahdanau and no-attention decoders from `[s_t; c_t; e]`."""
        output = self.readout(features)
        if self.deep_output == "maxout":
            # (..., 2 * d) -> (..., d, 2) -> max over each pair of units.
            shape = keras.ops.shape(output)
            pairs = keras.ops.reshape(output, (*shape[:-1], -1, 2))
            output = keras.ops.max(pairs, axis=-1)
        return output

    def _attend(self, query, state):
        return self.attention_layer(query, state["values"], mask=state["mask"], keys=state["keys"])

    # ------------------------------------------------------------ the cell
    #
    # The cell is Keras' `GRUCell` or `LSTMCell` (its weights, saved as
    # before), stepped here so that the embedding's part of its input
    # projection, `e W_e + b`, can run once for all steps before the training
    # loop: the cell's input is `[e; x]` with `x` the context (Bahdanau,
    # none), the fed-back `h~` (Luong with input feeding) or nothing, so
    # `[e; x] W = e W_e + x W_x`. Decoding, one step at a time, keeps `W`
    # whole (a slice of it at every step is a copy under XLA, which slowed
    # batch-1 decoding). The same math as the cell's `call`
    # (`implementation=2`, `reset_after=True` for the GRU); the weights are
    # cast to the compute dtype inside the step, as Keras' autocasting does,
    # so the gradients of a loop's steps add up in float32.

    def _extra_input_dim(self, state):
        """Size of the cell's input besides the embedding."""
        if self.attention == "luong":
            return self.units if self.input_feeding else 0
        if self.attention == "bahdanau":
            return state["values"].shape[-1]
        return state["summary"].shape[-1]

    def _cell_weights(self, state, split):
        """The cell's float32 weights: `CellWeights(kernel, extra_kernel,
        recurrent_kernel, input_bias, recurrent_bias, split)`; with `split`,
        `kernel` is `W_e` (the embeddings' rows) and `extra_kernel` `W_x`."""
        cell = self.rnn_cell
        extra = self._extra_input_dim(state)
        if not cell.built:
            cell.build((None, self.embedding_dim + extra))
        kernel = keras.ops.convert_to_tensor(cell.kernel)
        extra_kernel = None
        if split and extra:
            kernel, extra_kernel = kernel[: self.embedding_dim], kernel[self.embedding_dim :]
        bias = keras.ops.convert_to_tensor(cell.bias)
        # The GRU's bias is (2, 3 units): input and recurrent (reset_after).
        input_bias, recurrent_bias = (bias[0], bias[1]) if self.cell == "gru" else (bias, None)
        recurrent_kernel = keras.ops.convert_to_tensor(cell.recurrent_kernel)
        return CellWeights(
            kernel, extra_kernel, recurrent_kernel, input_bias, recurrent_bias, split
        )

    def _input_projection(self, inputs, cell_weights):
        """`inputs @ kernel + b`: with split weights the embeddings' part `e W_e + b`,
        for one step `(batch_size, E)` or all steps `(batch_size, Tt, E)`; with the
        whole kernel a step's full input `[e; x] W + b`."""
        dtype = self.compute_dtype
        return keras.ops.add(
            keras.ops.matmul(inputs, keras.ops.cast(cell_weights.kernel, dtype)),
            keras.ops.cast(cell_weights.input_bias, dtype),
        )

    def _cell(self, embedded, extra_input, rnn_state, cell_weights):
        """One cell step: `(output, [new states])`. `embedded` as in `recurrent_step`."""
        cell = self.rnn_cell
        dtype = self.compute_dtype
        if cell_weights.split:
            inputs = embedded
            if extra_input is not None:
                inputs = inputs + keras.ops.matmul(
                    extra_input, keras.ops.cast(cell_weights.extra_kernel, dtype)
                )
        else:
            if extra_input is not None:
                embedded = keras.ops.concatenate([embedded, extra_input], axis=-1)
            inputs = self._input_projection(embedded, cell_weights)
        inner = keras.ops.matmul(rnn_state[0], keras.ops.cast(cell_weights.recurrent_kernel, dtype))
        if self.cell == "gru":
            inner = inner + keras.ops.cast(cell_weights.recurrent_bias, dtype)
            x_z, x_r, x_h = keras.ops.split(inputs, 3, axis=-1)
            r_z, r_r, r_h = keras.ops.split(inner, 3, axis=-1)
            z = cell.recurrent_activation(x_z + r_z)
            r = cell.recurrent_activation(x_r + r_r)
            candidate = cell.activation(x_h + r * r_h)
            h = z * rnn_state[0] + (1 - z) * candidate
            return h, [h]
        z_i, z_f, z_c, z_o = keras.ops.split(inputs + inner, 4, axis=-1)
        gate = cell.recurrent_activation
        c = gate(z_f) * rnn_state[1] + gate(z_i) * cell.activation(z_c)
        h = gate(z_o) * cell.activation(c)
        return h, [h, c]

    def logits(self, outputs, training=False):
        """Projects step outputs `(..., output_dim)` to float32 vocabulary logits.

        One 2-D matmul with its bias over all leading positions (which the
        CPU runs as one fused kernel), in the compute dtype, then a single
        cast to float32 for the loss and the softmax.
        """
        outputs = self.dropout_layer(outputs, training=training)
        if not self.tie_embeddings:
            return keras.ops.cast(self.output_layer(outputs), "float32")
        shape = keras.ops.shape(outputs)
        flat = keras.ops.reshape(outputs, (-1, shape[-1]))
        matrix = keras.ops.cast(self.embedding.embeddings, flat.dtype)
        logits = tf.nn.bias_add(
            tf.matmul(flat, matrix, transpose_b=True),
            keras.ops.cast(self.output_bias, flat.dtype),
        )
        return keras.ops.reshape(
            keras.ops.cast(logits, "float32"), (*shape[:-1], self.vocabulary_size)
        )

    def embed(self, token_ids, training=False):
        return self.dropout_layer(self.embedding(token_ids), training=training)

    # ------------------------------------------------------------- training

    def call(self, target_in, annotations, source_mask, summary, training=False):
        """Teacher-forced decoding of a whole target sequence.

        Args:
            target_in: int `(batch_size, Tt)`, `[START]` followed by the target.
            annotations: `(batch_size, Ts, dv)` encoder outputs.
            source_mask: bool `(batch_size, Ts)`, True on real tokens.
            summary: `(batch_size, ds)` encoder summary vector.
            training: bool, whether dropout is applied.

        Returns:
            `(logits, attention)`: float32 `(batch_size, Tt, vocabulary_size)`
            and `(batch_size, Tt, Ts)`.
        """
        embedded = self.embed(target_in, training=training)
        state = self.initial_state(annotations, source_mask, summary)
        # Only the recurrent part of the state goes through the loop; the
        # encoder memory (values, keys, mask) is captured, not carried, so
        # the backward pass does not stack a copy of it per step.
        recurrent = {k: state[k] for k in ("rnn", "feed") if k in state}
        memory = {k: v for k, v in state.items() if k not in recurrent}
        cell_weights = self._cell_weights(state, split=True)
        # The embeddings' part of the cell's input projection for all steps at once.
        projected = self._input_projection(embedded, cell_weights)
        if self._recurrence_is_a_gru:
            outputs = self._gru_recurrence(projected, recurrent, cell_weights, training)
            weights = None
        else:
            outputs, weights = self._loop_recurrence(projected, recurrent, memory, cell_weights)
        # Everything after the recurrence runs once on all steps.
        outputs, attention = self.output_features(outputs, embedded, memory)
        if attention is None:
            attention = weights
        return self.logits(outputs, training=training), keras.ops.cast(attention, "float32")

    @property
    def _recurrence_is_a_gru(self):
        """Luong's decoder without input feeding is a plain GRU over the target
        embeddings (the attention comes after it), so training runs it as one
        `gru_sequence`: no weight casts and gradient sums per step."""
        return self.cell == "gru" and self._attention_after_loop

    def _gru_recurrence(self, projected, recurrent, cell_weights, training=False):
        """`recurrent_step`'s outputs `s_1..s_T` for `_recurrence_is_a_gru`:
        `(batch_size, Tt, units)`."""
        dtype = self.compute_dtype
        steps, batch_size = tf.shape(projected)[1], tf.shape(projected)[0]
        outputs, _ = gru_sequence(
            tf.transpose(projected, [1, 0, 2])[:, None],  # (Tt, 1, B, 3U)
            keras.ops.cast(cell_weights.recurrent_kernel, dtype)[None],
            keras.ops.cast(cell_weights.recurrent_bias, dtype)[None],
            tf.ones([steps, 1, batch_size], tf.bool),
            recurrent["rnn"][0][None],
            training=training,
        )
        return tf.transpose(outputs[:, 0], [1, 0, 2])

    def _loop_recurrence(self, projected, recurrent, memory, cell_weights):
        """`recurrent_step` in a `tf.while_loop` over the target: `(outputs
        (batch_size, Tt, ...), attention (batch_size, Tt, Ts) or None)`."""
        steps = tf.shape(projected)[1]
        # Read step by step from a TensorArray (not `projected[t]`: the
        # gradient of a slice is a full-size tensor per step).
        projected_by_step = tf.TensorArray(projected.dtype, size=steps).unstack(
            tf.transpose(projected, [1, 0, 2])
        )
        outputs = tf.TensorArray(self.compute_dtype, size=steps)
        # The attention weights come out of the loop unless `output_features`
        # computes them (Luong without input feeding): an unwritten TensorArray
        # in the loop would break its XLA gradient.
        weights = [] if self._attention_after_loop else [tf.TensorArray(tf.float32, size=steps)]

        def body(t, recurrent, outputs, weights):
            output, new_state, attention = self.recurrent_step(
                projected_by_step.read(t), {**memory, **recurrent}, cell_weights
            )
            recurrent = {k: new_state[k] for k in recurrent}
            weights = [w.write(t, keras.ops.cast(attention, "float32")) for w in weights]
            return t + 1, recurrent, outputs.write(t, output), weights

        _, _, outputs, weights = tf.while_loop(
            lambda t, *_: t < steps,
            body,
            (tf.constant(0), recurrent, outputs, weights),
            maximum_iterations=steps,
        )
        outputs = tf.transpose(outputs.stack(), [1, 0, 2])
        return outputs, tf.transpose(weights[0].stack(), [1, 0, 2]) if weights else None

    def compute_mask(self, *args, **kwargs):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "attention": self.attention,
                "score": self.score,
                "attention_units": self.attention_units,
                "cell": self.cell,
                "input_feeding": self.input_feeding,
                "tie_embeddings": self.tie_embeddings,
                "dropout": self.dropout,
                "max_source_length": self.max_source_length,
                "deep_output": self.deep_output,
                "normalize": self.normalize,
                "score_scale": self.score_scale,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        # Decoders saved before `deep_output` existed had the tanh readout.
        return super().from_config(
            {"deep_output": "tanh", "score_scale": saved_score_scale(config), **config}
        )


def saved_score_scale(config: dict) -> bool | None:
    """`score_scale` of a model or decoder saved before it was configurable: the
    Luong scale was then learned for `"cosine"` only."""
    if config.get("attention", "luong") != "luong":
        return None
    return config.get("score", "cosine") == "cosine"
