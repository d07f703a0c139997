"""What every RNN decoder shares: embeddings, the cell's recurrence, tied logits, the fused GRU."""

import keras
import tensorflow as tf

from keras_attention.layers.base_attention import BaseAttention
from keras_attention.models.arguments import check_choice, check_positive_ints, check_rate
from keras_attention.models.cell_step import cell_step, cell_weights, input_projection
from keras_attention.models.decoding_weights import DecodingWeights, decoding_weights
from keras_attention.models.encoder import RNN_CELLS
from keras_attention.models.teacher_forcing import TeacherForcing
from keras_attention.models.weight_slices import read_slices


class BaseDecoder(TeacherForcing, keras.layers.Layer):
    """An RNN decoder over encoder annotations; a subclass says where attention goes.

    One recurrence, `step`, serves both teacher-forced training (`call` runs it
    in a `tf.while_loop` over the target) and inference (samplers call it
    through `Seq2Seq.next_logits`). In training only what depends on the
    previous step runs in the loop (`recurrent_step`); the rest
    (`output_features`) and the projection over the vocabulary run once on all
    steps after it. When the recurrence is a plain GRU over the target
    embeddings (`_recurrence_is_a_gru`), training runs it as
    `fused_gru.gru_sequence`, its backward pass written out. The training
    pass is `TeacherForcing.call` (`keras_attention.models.teacher_forcing`), inherited.

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

    def recurrent_step(self, embedded, state, cell_weights):
        """The part of `step` inside the recurrence.

        `cell_weights` is `_cell_weights(state, split)`, or their cast copy in
        a `DecodingWeights` scope (which `apply_dense` reads too); with split
        weights (training) `embedded` is `_input_projection`'s `e W_e + b` for
        this step, computed for all steps at once before the loop, otherwise
        the embedding `e` itself.

        Returns `(recurrent_output, new_state, attention)`: what
        `output_features` needs besides the embedding, the next state, and the
        attention weights `(batch_size, Ts)`, or `None` when `output_features`
        computes them (`_attention_after_loop`).
        """
        raise NotImplementedError

    def output_features(self, recurrent_output, embedded, memory):
        """`(o_t, attention)` from `recurrent_step`'s output, the embedding and the
        encoder memory (`initial_state`'s `values`, `keys`, `mask`), for one step
        `(batch_size, ...)` or all steps at once `(batch_size, Tt, ...)`.
        `attention` is None unless computed here (`_attention_after_loop`);
        Dense layers as in `recurrent_step`."""
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

    def step(self, embedded, state, training=False):
        """One decoder step on embedded previous tokens.

        It reads its weights from the open `DecodingWeights` scope (cast once
        before a decoding loop), or, outside any, from the variables.

        Args:
            embedded: `(batch_size, embedding_dim)`.
            state: dict from `initial_state` or a previous `step`.

        Returns:
            `(output, new_state, attention)`: `(batch_size, output_dim)` features
            before the vocabulary projection, the next state, and the attention
            weights `(batch_size, Ts)` in float32.
        """
        cast = DecodingWeights.current()
        if cast is None:
            cell_weights = self._cell_weights(state, split=False)
        else:
            cell_weights = cast.cells[self.rnn_cell.name]
        recurrent_output, new_state, weights = self.recurrent_step(embedded, state, cell_weights)
        output, output_weights = self.output_features(recurrent_output, embedded, state)
        weights = weights if output_weights is None else output_weights
        return output, new_state, keras.ops.cast(weights, "float32")

    def decoding_weights(self, state, projection=None) -> DecodingWeights:
        """Every weight matrix `step` and `logits` read, cast to the compute dtype once
        (`decoding_weights.decoding_weights`); open them as a scope around each step.

        Args:
            state: the decoding state (`initial_state`), for the cell's input size.
            projection: `None` (the logits of every target id), or
                `output_projection(ids)` (the logits of `ids` only).

        Returns:
            A `DecodingWeights`.
        """
        return decoding_weights(self, state, projection)

    def _step_cells(self, state):
        """`(cell, CellWeights unsplit)` of each cell a decoding step runs."""
        return [(self.rnn_cell, self._cell_weights(state, split=False))]

    def _step_dense_layers(self):
        """The Dense layers a decoding step applies with `apply_dense` (a subclass's)."""
        return []

    def _attend(self, query, memory):
        """`(c_t, a_t)` of the attention layer; the context in this layer's compute
        dtype (a user's layer may run under another dtype policy)."""
        context, weights = self.attention_layer(
            query, memory["values"], mask=memory["mask"], keys=memory["keys"]
        )
        return keras.ops.cast(context, self.compute_dtype), weights

    # ------------------------------------------------------------ the cell
    # Keras' `GRUCell` or `LSTMCell`, stepped by hand (`cell_step`).

    def _cell_weights(self, state, split):
        """The cell's float32 `CellWeights`, split or whole (`cell_step.cell_weights`)."""
        return self._weights_of(self.rnn_cell, self._extra_input_dim(state), split)

    def _weights_of(self, cell, extra, split):
        """`_cell_weights` of a cell of this decoder's type with input `[e; x]`, `|x| = extra`."""
        return cell_weights(cell, self.embedding_dim, extra, split)

    def _projected_inputs(self, embedded, cell_weights):
        """What training's loop reads at each step, for all steps at once: `e W_e + b`."""
        return self._input_projection(embedded, cell_weights)

    def _input_projection(self, inputs, cell_weights):
        """`inputs @ kernel + b` in the compute dtype (`cell_step.input_projection`)."""
        return input_projection(inputs, cell_weights, self.compute_dtype)

    def _cell(self, embedded, extra_input, rnn_state, cell_weights):
        """One cell step, `(output, [new states])` (`cell_step.cell_step`)."""
        return cell_step(
            self.rnn_cell, embedded, extra_input, rnn_state, cell_weights, self.compute_dtype
        )

    def logits(self, outputs, training=False, projection=None):
        """Projects step outputs `(..., output_dim)` to float32 vocabulary logits.

        One 2-D matmul with its bias over all leading positions (which the
        CPU runs as one fused kernel), in the compute dtype, then a single
        cast to float32 for the loss and the softmax. With `projection`, an
        `output_projection(ids)`, the logits of those ids only
        `(..., len(ids))`; in a `DecodingWeights` scope, the projection it
        holds (cast before the loop).
        """
        outputs = self.dropout_layer(outputs, training=training)
        cast = DecodingWeights.current()
        if cast is not None:
            (matrix, bias), transposed = cast.output, cast.transposed
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

    def embed(self, token_ids, training=False):
        """The target embeddings of `token_ids`, read from the open `DecodingWeights`
        scope, if any (the rows taken, then cast to the compute dtype: the values
        of `Embedding.call`)."""
        cast = DecodingWeights.current()
        if cast is None:
            embedded = self.embedding(token_ids)
        else:
            embedded = keras.ops.cast(cast.embedding_rows(token_ids), self.compute_dtype)
        return self.dropout_layer(embedded, training=training)

    def output_projection(self, ids):
        """The output projection's columns for the target ids `ids`, for `logits`.

        The columns are read with `weight_slices.read_slices`: the current
        `WeightSlices` scope's `gather` (an export with stored weights reads
        its own form, e.g. int8 columns and their scales), or `tf.gather` of
        the variables' values outside any.

        Args:
            ids: int32 `(C,)`, target ids.

        Returns:
            `(kernel, bias)`: `(output_dim, C)` and `(C,)`, in the compute
            dtype (cast once here, not at every step): `W_o[:, ids]` and
            `b[ids]` (the target embeddings' rows `ids`, transposed, when
            tied).
        """
        if self.tie_embeddings:
            kernel = tf.transpose(read_slices(self.embedding.embeddings, ids, 0))
            bias = read_slices(self.output_bias, ids, 0)
        else:
            kernel = read_slices(self.output_layer.kernel, ids, 1)
            bias = read_slices(self.output_layer.bias, ids, 0)
        dtype = self.compute_dtype
        return keras.ops.cast(kernel, dtype), keras.ops.cast(bias, dtype)

    # ------------------------------------------------------------- training

    @property
    def _recurrence_is_a_gru(self):
        """A GRU whose only input is the target embedding (the attention comes after
        it): training runs it as one `gru_sequence`, with no weight casts and
        gradient sums per step."""
        return self.cell == "gru" and self._attention_after_loop

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
