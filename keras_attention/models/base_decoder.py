"""What every RNN decoder shares: embeddings, the cell's recurrence, tied logits, the fused GRU."""

import functools
from collections.abc import Callable
from typing import NamedTuple

import keras
import tensorflow as tf

from keras_attention.layers.base_attention import BaseAttention
from keras_attention.models.arguments import check_choice, check_positive_ints, check_rate
from keras_attention.models.encoder import RNN_CELLS
from keras_attention.models.fused_gru import gru_sequence
from keras_attention.models.weight_slices import gather_slices

# The parts of the decoding state that stay the same at every step.
MEMORY_KEYS = ("values", "keys", "mask", "summary")


class CellWeights(NamedTuple):
    """The decoder cell's weights as `BaseDecoder._cell` uses them."""

    kernel: tf.Tensor  # W, or W_e when split
    extra_kernel: tf.Tensor | None  # W_x when split (and the cell has an input x)
    recurrent_kernel: tf.Tensor
    input_bias: tf.Tensor
    recurrent_bias: tf.Tensor | None  # the GRU's (reset_after)
    split: bool


class DecodingWeights(NamedTuple):
    """The weights a decoding step reads, in the decoder's compute dtype.

    `BaseDecoder.decoding_weights` reads and casts them once per decoding
    call, before its loop; a step given them casts no weight matrix (the
    embeddings stay as stored, and a lookup casts only the rows it takes). (Keras
    layers cast their float32 variables to the compute dtype at every call:
    under `mixed_bfloat16` a step cast the whole embedding matrix twice, for
    the lookup and the tied logits, and every kernel once.)
    """

    embedding_rows: Callable  # ids -> the target embeddings' rows as stored; `embed` casts them
    cells: dict  # the step's cells: name -> `CellWeights`, unsplit
    dense: dict  # the step's Dense layers: name -> (kernel, bias or None)
    output: tuple  # (matrix, bias): the tied embeddings (V, D) or `output_projection`'s (D, C)
    transposed: bool  # whether `output`'s matrix is (V, D), used as `o_t W^T`


class BaseDecoder(keras.layers.Layer):
    """An RNN decoder over encoder annotations; a subclass says where attention goes.

    One recurrence, `step`, serves both teacher-forced training (`call` runs it
    in a `tf.while_loop` over the target) and inference (samplers call it
    through `Seq2Seq.next_logits`). In training only what depends on the
    previous step runs in the loop (`recurrent_step`); the rest
    (`output_features`) and the projection over the vocabulary run once on all
    steps after it. When the recurrence is a plain GRU over the target
    embeddings (`_recurrence_is_a_gru`), training runs it as
    `fused_gru.gru_sequence`, its backward pass written out.

    At output step t, with `e = Embedding(y_{t-1})` and the subclass's output
    features `o_t`: `logits_t = W_o o_t + b`, where `W_o` is the target
    embedding matrix when `tie_embeddings=True`. The initial state is
    `s_0 = tanh(W_s summary)`.

    A subclass creates the layers between the recurrence and the logits in
    its constructor, implements `recurrent_step`, `output_features` and
    `_extra_input_dim` (the size of the cell's input besides `e`), and may
    extend `initial_state`.

    Args:
        vocabulary_size: int, number of target token ids (required).
        attention: a `BaseAttention` layer, or `None` where the subclass
            allows it. Defaults to `None`.
        embedding_dim: int, size of the target embeddings. Defaults to `256`.
        units: int, decoder RNN units. Defaults to `512`.
        cell: `"gru"` or `"lstm"`. Defaults to `"gru"`.
        tie_embeddings: bool, score outputs against the target embedding
            matrix (`o_t` is then of size `embedding_dim`). Defaults to
            `False`.
        dropout: float, dropout on embeddings and on `o_t`. Defaults to
            `0.0`.
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
    """

    def __init__(
        self,
        vocabulary_size,
        attention=None,
        embedding_dim=256,
        units=512,
        cell="gru",
        tie_embeddings=False,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice("cell", cell, RNN_CELLS)
        check_positive_ints(
            vocabulary_size=vocabulary_size, embedding_dim=embedding_dim, units=units
        )
        check_rate("dropout", dropout)
        if attention is not None and not isinstance(attention, BaseAttention):
            raise TypeError(
                f"`attention` must be a BaseAttention layer or None. "
                f"Received: attention={attention!r}"
            )
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.cell = cell
        self.tie_embeddings = tie_embeddings
        self.dropout = dropout

        policy = self.dtype_policy
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=policy, name="embedding"
        )
        self.bridge = keras.layers.Dense(units, activation="tanh", dtype=policy, name="bridge")
        cell_class = keras.layers.GRUCell if cell == "gru" else keras.layers.LSTMCell
        self.rnn_cell = cell_class(units, dtype=policy, name=f"{cell}_cell")
        # The attribute name is part of the weights' path in `.keras` files.
        self.attention_layer = attention
        if tie_embeddings:
            self.output_layer = None
        else:
            self.output_layer = keras.layers.Dense(vocabulary_size, dtype=policy, name="logits")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=policy)

    def build(self, target_in_shape, annotations_shape):
        if self.attention_layer is not None and not self.attention_layer.built:
            # Build now: some scores' key projection needs the query size.
            self.attention_layer.build((None, self.units), tuple(annotations_shape))
        if self.tie_embeddings:
            self.output_bias = self.add_weight(
                shape=(self.vocabulary_size,), initializer="zeros", name="output_bias"
            )

    # ------------------------------------------------------------------ hooks

    @property
    def output_dim(self):
        """The size of `o_t`: the embedding size when tied, else `units`."""
        return self.embedding_dim if self.tie_embeddings else self.units

    def _extra_input_dim(self, state):
        """Size of the cell's input besides the embedding."""
        raise NotImplementedError

    def recurrent_step(self, embedded, state, cell_weights, decoding_weights=None):
        """The part of `step` inside the recurrence.

        `cell_weights` is `_cell_weights(state, split)`; with split weights
        (training) `embedded` is `_input_projection`'s `e W_e + b` for this
        step, computed for all steps at once before the loop, otherwise the
        embedding `e` itself. `decoding_weights` (decoding only, or `None`):
        the cast weights of `decoding_weights`, for `_dense` and the cells.

        Returns `(recurrent_output, new_state, attention)`: what
        `output_features` needs besides the embedding, the next state, and the
        attention weights `(batch_size, Ts)`, or `None` when `output_features`
        computes them (`_attention_after_loop`).
        """
        raise NotImplementedError

    def output_features(self, recurrent_output, embedded, memory, decoding_weights=None):
        """`(o_t, attention)` from `recurrent_step`'s output, the embedding and the
        encoder memory (`initial_state`'s `values`, `keys`, `mask`), for one step
        `(batch_size, ...)` or all steps at once `(batch_size, Tt, ...)`.
        `attention` is None unless computed here (`_attention_after_loop`);
        `decoding_weights` as in `recurrent_step`."""
        raise NotImplementedError

    @property
    def _attention_after_loop(self):
        """Whether the attention depends on the current step's state alone (not on
        earlier steps), so `output_features` computes it, in training once for all
        steps after the loop."""
        return False

    # ------------------------------------------------------------------ state

    def initial_state(self, annotations, source_mask, summary):
        """The decoding state before the first step.

        Args:
            annotations: `(batch_size, Ts, dv)` encoder outputs.
            source_mask: bool `(batch_size, Ts)`, True on real tokens.
            summary: `(batch_size, ds)` encoder summary vector.

        Returns:
            A dict of tensors, each with the batch as its first dimension:
            `"rnn"` (list of cell states) and the encoder memory `"values"`,
            `"keys"` (with attention), `"mask"`, `"summary"`. The keys are
            projected here, once per sentence.
        """
        summary = keras.ops.cast(summary, self.compute_dtype)
        annotations = keras.ops.cast(annotations, self.compute_dtype)
        s0 = self.bridge(summary)
        rnn_state = [s0] if self.cell == "gru" else [s0, keras.ops.zeros_like(s0)]
        state = {"rnn": rnn_state, "values": annotations, "mask": source_mask, "summary": summary}
        if self.attention_layer is not None:
            state["keys"] = self.attention_layer.prepare_keys(annotations)
        return state

    def step(self, embedded, state, training=False, decoding_weights=None):
        """One decoder step on embedded previous tokens.

        Args:
            embedded: `(batch_size, embedding_dim)`.
            state: dict from `initial_state` or a previous `step`.
            decoding_weights: `None` (the step reads the variables), or
                `decoding_weights(state)`, read once before a decoding loop.

        Returns:
            `(output, new_state, attention)`: `(batch_size, output_dim)` features
            before the vocabulary projection, the next state, and the attention
            weights `(batch_size, Ts)` in float32.
        """
        if decoding_weights is None:
            cell_weights = self._cell_weights(state, split=False)
        else:
            cell_weights = decoding_weights.cells[self.rnn_cell.name]
        recurrent_output, new_state, weights = self.recurrent_step(
            embedded, state, cell_weights, decoding_weights
        )
        output, output_weights = self.output_features(
            recurrent_output, embedded, state, decoding_weights
        )
        weights = weights if output_weights is None else output_weights
        return output, new_state, keras.ops.cast(weights, "float32")

    def decoding_weights(self, state, projection=None, gather=None) -> DecodingWeights:
        """Every weight matrix `step` and `logits` read, cast to the compute dtype once.

        Call it once per decoding, outside the loop, and pass the result to
        each step (`Seq2Seq.step_function` does): the loop then holds the cast
        tensors as loop invariants. The values are those the step casts
        itself, so the results are the same to the bit.

        Args:
            state: the decoding state (`initial_state`), for the cell's input size.
            projection: `None` (the logits of every target id), or
                `output_projection(ids)` (the logits of `ids` only).
            gather: `gather(variable, ids, axis) -> tensor`, how a step reads
                the target embeddings' rows it looks up (see
                `output_projection`), or `None` to read them from the whole
                matrix, read here.
        """
        dtype = self.compute_dtype

        def cast(tensor):
            return None if tensor is None else keras.ops.cast(tensor, dtype)

        cells = {
            cell.name: weights._replace(
                **{k: cast(v) for k, v in weights._asdict().items() if k != "split"}
            )
            for cell, weights in self._step_cells(state)
        }
        dense = {
            layer.name: (cast(layer.kernel), cast(layer.bias) if layer.use_bias else None)
            for layer in self._step_dense_layers()
        }
        # The lookup casts only the rows it takes (`embed`): casting the whole matrix
        # cost more than a short decoding's lookups (16,000 x 256 per request).
        # With `gather` (stored weights), only those rows are read from their stored
        # form too; a tensor nothing uses (the whole matrix, then) is not computed.
        embeddings = keras.ops.convert_to_tensor(self.embedding.embeddings)
        if gather is None:
            embedding_rows = functools.partial(tf.gather, embeddings, axis=0)
        else:
            embedding_rows = functools.partial(gather, self.embedding.embeddings, axis=0)
        if projection is not None:
            output, transposed = tuple(cast(w) for w in projection), False
        elif self.tie_embeddings:
            output, transposed = (cast(embeddings), cast(self.output_bias)), True
        else:
            layer = self.output_layer
            output, transposed = (cast(layer.kernel), cast(layer.bias)), False
        return DecodingWeights(embedding_rows, cells, dense, output, transposed)

    def _step_cells(self, state):
        """`(cell, CellWeights unsplit)` of each cell a decoding step runs."""
        return [(self.rnn_cell, self._cell_weights(state, split=False))]

    def _step_dense_layers(self):
        """The Dense layers a decoding step applies with `_dense` (a subclass's)."""
        return []

    def _dense(self, layer, inputs, decoding_weights=None):
        """`layer(inputs)` for a Dense `layer`, with its cast kernel and bias from
        `decoding_weights` when given (the same operations as `Dense.call`)."""
        if decoding_weights is None or layer.name not in decoding_weights.dense:
            return layer(inputs)
        kernel, bias = decoding_weights.dense[layer.name]
        outputs = keras.ops.matmul(inputs, kernel)
        if bias is not None:
            outputs = keras.ops.add(outputs, bias)
        return outputs if layer.activation is None else layer.activation(outputs)

    def _attend(self, query, memory):
        """`(c_t, a_t)` of the attention layer; the context in this layer's compute
        dtype (a user's layer may run under another dtype policy)."""
        context, weights = self.attention_layer(
            query, memory["values"], mask=memory["mask"], keys=memory["keys"]
        )
        return keras.ops.cast(context, self.compute_dtype), weights

    # ------------------------------------------------------------ the cell
    #
    # The cell is Keras' `GRUCell` or `LSTMCell` (its weights, saved as
    # usual), stepped here so that the embedding's part of its input
    # projection, `e W_e + b`, can run once for all steps before the training
    # loop: the cell's input is `[e; x]` with `x` what the subclass feeds it
    # (a context vector, the fed-back `h~`, or nothing), so
    # `[e; x] W = e W_e + x W_x`. Decoding, one step at a time, keeps `W`
    # whole (a slice of it at every step is a copy under XLA). The same math
    # as the cell's `call` (`implementation=2`, `reset_after=True` for the
    # GRU); the weights are cast to the compute dtype inside the step, as
    # Keras' autocasting does, so the gradients of a loop's steps add up in
    # float32.

    def _cell_weights(self, state, split):
        """The cell's float32 weights: `CellWeights(kernel, extra_kernel,
        recurrent_kernel, input_bias, recurrent_bias, split)`; with `split`,
        `kernel` is `W_e` (the embeddings' rows) and `extra_kernel` `W_x`."""
        return self._weights_of(self.rnn_cell, self._extra_input_dim(state), split)

    def _weights_of(self, cell, extra, split):
        """`_cell_weights` of any cell of this decoder's type whose input is `[e; x]`,
        `x` of size `extra`."""
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

    def _projected_inputs(self, embedded, cell_weights):
        """What training's loop reads at each step, for all steps at once: the
        embeddings' part of the cell's input projection, `e W_e + b`."""
        return self._input_projection(embedded, cell_weights)

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

    def logits(self, outputs, training=False, projection=None, decoding_weights=None):
        """Projects step outputs `(..., output_dim)` to float32 vocabulary logits.

        One 2-D matmul with its bias over all leading positions (which the
        CPU runs as one fused kernel), in the compute dtype, then a single
        cast to float32 for the loss and the softmax. With `projection`, an
        `output_projection(ids)`, the logits of those ids only
        `(..., len(ids))`; with `decoding_weights`, the projection they hold
        (cast before the loop).
        """
        outputs = self.dropout_layer(outputs, training=training)
        if decoding_weights is not None:
            (matrix, bias), transposed = decoding_weights.output, decoding_weights.transposed
        elif projection is not None:
            (matrix, bias), transposed = projection, False
        elif self.tie_embeddings:
            matrix, bias, transposed = self.embedding.embeddings, self.output_bias, True
        else:
            return keras.ops.cast(self.output_layer(outputs), "float32")
        shape = keras.ops.shape(outputs)
        flat = keras.ops.reshape(outputs, (-1, shape[-1]))
        dtype = flat.dtype
        logits = tf.nn.bias_add(
            tf.matmul(flat, keras.ops.cast(matrix, dtype), transpose_b=transposed),
            keras.ops.cast(bias, dtype),
        )
        size = matrix.shape[0 if transposed else 1]  # None for a shortlist's ids
        return keras.ops.reshape(
            keras.ops.cast(logits, "float32"), (*shape[:-1], -1 if size is None else size)
        )

    def embed(self, token_ids, training=False, decoding_weights=None):
        """The target embeddings of `token_ids`, read from `decoding_weights` when given
        (the rows taken, then cast to the compute dtype: the values of `Embedding.call`)."""
        if decoding_weights is None:
            embedded = self.embedding(token_ids)
        else:
            embedded = decoding_weights.embedding_rows(token_ids)
            embedded = keras.ops.cast(embedded, self.compute_dtype)
        return self.dropout_layer(embedded, training=training)

    def output_projection(self, ids, gather=None):
        """The output projection's columns for the target ids `ids`, for `logits`.

        Args:
            ids: int32 `(C,)`, target ids.
            gather: `gather(variable, ids, axis) -> tensor`, how to read the
                slices `ids` of a weight along `axis`. Defaults to `tf.gather`
                of the variable's value (an export with stored weights reads
                its own form, e.g. int8 columns and their scales).

        Returns:
            `(kernel, bias)`: `(output_dim, C)` and `(C,)`, in the compute
            dtype (cast once here, not at every step): `W_o[:, ids]` and
            `b[ids]` (the target embeddings' rows `ids`, transposed, when
            tied).
        """
        gather = gather_slices if gather is None else gather
        if self.tie_embeddings:
            kernel = tf.transpose(gather(self.embedding.embeddings, ids, 0))
            bias = gather(self.output_bias, ids, 0)
        else:
            kernel = gather(self.output_layer.kernel, ids, 1)
            bias = gather(self.output_layer.bias, ids, 0)
        dtype = self.compute_dtype
        return keras.ops.cast(kernel, dtype), keras.ops.cast(bias, dtype)

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
        # encoder memory (values, keys, mask, summary) is captured, not
        # carried, so the backward pass does not stack a copy of it per step.
        memory = {k: v for k, v in state.items() if k in MEMORY_KEYS}
        recurrent = {k: v for k, v in state.items() if k not in MEMORY_KEYS}
        cell_weights = self._cell_weights(state, split=True)
        # The embeddings' part of the cell's input projection for all steps at once.
        projected = self._projected_inputs(embedded, cell_weights)
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
        """A GRU whose only input is the target embedding (the attention comes after
        it): training runs it as one `gru_sequence`, with no weight casts and
        gradient sums per step."""
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
        # computes them: an unwritten TensorArray in the loop would break its
        # XLA gradient.
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
                "attention": keras.saving.serialize_keras_object(self.attention_layer),
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "cell": self.cell,
                "tie_embeddings": self.tie_embeddings,
                "dropout": self.dropout,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        attention = config.get("attention")
        if isinstance(attention, dict):
            config = {**config, "attention": keras.saving.deserialize_keras_object(attention)}
        return cls(**config)
