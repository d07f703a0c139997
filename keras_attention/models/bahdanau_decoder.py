"""The Bahdanau decoder: attention queried with the previous state, its context into the cell."""

import keras

from keras_attention.models.arguments import check_choice
from keras_attention.models.base_decoder import BaseDecoder
from keras_attention.models.decoding_weights import DecodingWeights, apply_dense

DEEP_OUTPUTS = ("maxout", "tanh")


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauDecoder(BaseDecoder):
    """The decoder of Bahdanau et al. (2015), with any attention layer, or none.

    At output step t, with `e = Embedding(y_{t-1})` and encoder annotations `H`:

    1. `c_t, a_t = attention(s_{t-1}, H)`: the query is the previous state.
       Without an attention layer (`attention=None`, the plain encoder-decoder
       baseline), `c_t` is the encoder's summary vector at every step and the
       attention weights are all zero.
    2. `s_t = cell([e; c_t], s_{t-1})`: the context enters the cell.
    3. `o_t = maxout(W_g [s_t; c_t; e] + b)`, the paper's deep output (A.2.2):
       a max over pairs of the `2 x output_dim` linear units.

    Then `logits_t = W_o o_t + b` (see `BaseDecoder`).

    With `conditional=True`, the conditional GRU of Sennrich et al. (2017,
    Nematus) replaces step 1's query: a first GRU transition reads the previous
    token, `s'_t = GRU_q(e, s_{t-1})`, the query is `s'_t`, and the cell
    continues from it, `s_t = cell([e; c_t], s'_t)`. The paper's query
    `s_{t-1}` has not seen `y_{t-1}` yet, which slows the start of training.

    Args:
        vocabulary_size: int, number of target token ids (required).
        attention: a `BaseAttention` layer (e.g. `BahdanauAttention(units)`,
            or any other score), or `None` for the baseline with a fixed
            context. Defaults to `None`.
        deep_output: `"maxout"` or `"tanh"`, the output layer. Defaults to
            `"maxout"`. `"tanh"` (one tanh layer) bounds `o_t` to `[-1, 1]`,
            which keeps tied logits near uniform; it remains for models saved
            before maxout was the default.
        conditional: bool, query with `s'_t = GRU_q(e, s_{t-1})` (the
            conditional GRU) instead of `s_{t-1}`; GRU cells only. Defaults
            to `False` (the paper's decoder).
        **kwargs: `BaseDecoder` arguments (`embedding_dim`, `units`, `cell`,
            `tie_embeddings`, `dropout`) and base layer keyword arguments.

    Call arguments and returns: as `BaseDecoder`.
    """

    def __init__(
        self, vocabulary_size, attention=None, deep_output="maxout", conditional=False, **kwargs
    ):
        check_choice("deep_output", deep_output, DEEP_OUTPUTS)
        if not isinstance(conditional, bool):
            raise ValueError(
                f"`conditional` must be a boolean. Received: conditional={conditional!r}"
            )
        super().__init__(vocabulary_size, attention=attention, **kwargs)
        if conditional and (attention is None or self.cell != "gru"):
            raise ValueError(
                "`conditional=True` (the conditional GRU) needs an attention layer and "
                f"cell='gru'. Received: attention={attention!r}, cell={self.cell!r}"
            )
        self.deep_output = deep_output
        self.conditional = conditional
        self.query_cell = (
            keras.layers.GRUCell(self.units, dtype=self.dtype_policy, name="query_gru_cell")
            if conditional
            else None
        )
        width = 2 * self.output_dim if deep_output == "maxout" else self.output_dim
        self.readout = keras.layers.Dense(
            width,
            activation="tanh" if self.deep_output == "tanh" else None,
            dtype=self.dtype_policy,
            name="readout",
        )

    def _extra_input_dim(self, state):
        if self.attention_layer is None:
            return state["summary"].shape[-1]
        return state["values"].shape[-1]

    def _query_weights(self, split):
        """`CellWeights` of the query cell `GRU_q`, whose input is `e` alone (cast
        already in a `DecodingWeights` scope)."""
        cast = DecodingWeights.current()
        if cast is not None:
            return cast.cells[self.query_cell.name]._replace(split=split)
        return self._weights_of(self.query_cell, 0, split)

    def _step_cells(self, state):
        cells = super()._step_cells(state)
        if self.conditional:
            cells.append((self.query_cell, self._query_weights(split=False)))
        return cells

    def _step_dense_layers(self):
        return [*super()._step_dense_layers(), self.readout]

    def _projected_inputs(self, embedded, cell_weights):
        projected = super()._projected_inputs(embedded, cell_weights)
        if not self.conditional:
            return projected
        # Both cells' embedding projections for all steps, side by side.
        query_projected = self._input_projection(embedded, self._query_weights(split=True))
        return keras.ops.concatenate([projected, query_projected], axis=-1)

    def recurrent_step(self, embedded, state, cell_weights):
        """`([s_t; c_t], new_state, a_t)`; see `BaseDecoder.recurrent_step`."""
        rnn_state = state["rnn"]
        if self.conditional:
            if cell_weights.split:  # `_projected_inputs`: the two cells' projections
                embedded, query_input = keras.ops.split(embedded, 2, axis=-1)
            else:  # the embedding itself
                query_input = self._input_projection(embedded, self._query_weights(False))
            query, rnn_state = self._cell(query_input, None, rnn_state, self._query_weights(True))
            context, weights = self._attend(query, state)
        elif self.attention_layer is None:
            context = state["summary"]
            weights = keras.ops.zeros(keras.ops.shape(state["mask"]), dtype="float32")
        else:
            context, weights = self._attend(rnn_state[0], state)
        cell_output, rnn_state = self._cell(embedded, context, rnn_state, cell_weights)
        recurrent_output = keras.ops.concatenate([cell_output, context], axis=-1)
        return recurrent_output, {**state, "rnn": rnn_state}, weights

    def output_features(self, recurrent_output, embedded, memory):
        """`(o_t, None)`: the deep output of `[s_t; c_t; e]`."""
        inputs = keras.ops.concatenate([recurrent_output, embedded], axis=-1)
        output = apply_dense(self.readout, inputs)
        if self.deep_output == "maxout":
            # (..., 2 * d) -> (..., d, 2) -> max over each pair of units.
            shape = keras.ops.shape(output)
            pairs = keras.ops.reshape(output, (*shape[:-1], -1, 2))
            output = keras.ops.max(pairs, axis=-1)
        return output, None

    def get_config(self):
        config = super().get_config()
        config["deep_output"] = self.deep_output
        config["conditional"] = self.conditional
        return config
