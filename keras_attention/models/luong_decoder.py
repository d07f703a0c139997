"""The Luong decoder: attention queried with the current state, after the cell."""

import keras

from keras_attention.models.base_decoder import BaseDecoder
from keras_attention.models.decoding_weights import apply_dense


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongDecoder(BaseDecoder):
    """The global-attention decoder of Luong et al. (2015), with any attention layer.

    At output step t, with `e = Embedding(y_{t-1})` and encoder annotations `H`:

    1. `s_t = cell(e, s_{t-1})`; with input feeding
       `s_t = cell([e; h~_{t-1}], s_{t-1})`.
    2. `c_t, a_t = attention(s_t, H)`: the query is the current state.
    3. `o_t = h~_t = tanh(W_c [c_t; s_t])` (a linear map to the embedding
       size follows when the output is tied to the embeddings).

    Then `logits_t = W_o o_t + b` (see `BaseDecoder`). With an additive score
    (`BahdanauAttention`, or `LuongAttention(score="concat")`) this is the
    paper's `concat` model. Without input feeding the recurrence is a plain
    GRU over the target embeddings, which training runs as one fused sequence.

    Args:
        vocabulary_size: int, number of target token ids (required).
        attention: a `BaseAttention` layer (required).
        input_feeding: bool, feed `h~_{t-1}` into the cell. Defaults to
            `False`.
        **kwargs: `BaseDecoder` arguments (`embedding_dim`, `units`, `cell`,
            `tie_embeddings`, `dropout`) and base layer keyword arguments.

    Call arguments and returns: as `BaseDecoder`.
    """

    def __init__(self, vocabulary_size, attention=None, input_feeding=False, **kwargs):
        if attention is None:
            raise ValueError(
                "LuongDecoder queries an attention layer with each new state: pass "
                "`attention` (a BaseAttention layer), or use BahdanauDecoder(attention=None) "
                "for the plain encoder-decoder. Received: attention=None"
            )
        if not isinstance(input_feeding, bool):
            raise ValueError(
                f"`input_feeding` must be a boolean. Received: input_feeding={input_feeding!r}"
            )
        super().__init__(vocabulary_size, attention=attention, **kwargs)
        self.input_feeding = input_feeding
        policy = self.dtype_policy
        self.combine = keras.layers.Dense(
            self.units, activation="tanh", use_bias=False, dtype=policy, name="combine"
        )
        # A linear map to the embedding size when the output is tied to them.
        self.readout = (
            keras.layers.Dense(self.output_dim, dtype=policy, name="readout")
            if self.tie_embeddings
            else None
        )

    @property
    def _attention_after_loop(self):
        return not self.input_feeding

    def _extra_input_dim(self, state):
        return self.units if self.input_feeding else 0

    def initial_state(self, annotations, source_mask, summary):
        state = super().initial_state(annotations, source_mask, summary)
        if self.input_feeding:
            state["feed"] = keras.ops.zeros_like(state["rnn"][0])
        return state

    def recurrent_step(self, embedded, state, cell_weights):
        """`(h~_t, new_state, a_t)` with input feeding, else `(s_t, new_state, None)`;
        see `BaseDecoder.recurrent_step`."""
        feed = state["feed"] if self.input_feeding else None
        recurrent_output, rnn_state = self._cell(embedded, feed, state["rnn"], cell_weights)
        new_state = {**state, "rnn": rnn_state}
        weights = None
        if self.input_feeding:
            recurrent_output, weights = self._combine(recurrent_output, state)
            new_state["feed"] = recurrent_output
        return recurrent_output, new_state, weights

    def output_features(self, recurrent_output, embedded, memory):
        """`(o_t, a_t or None)`: `h~_t` (computed here without input feeding), then
        the readout when tied."""
        weights = None
        if not self.input_feeding:
            recurrent_output, weights = self._combine(recurrent_output, memory)
        if self.readout is not None:
            recurrent_output = apply_dense(self.readout, recurrent_output)
        return recurrent_output, weights

    def _combine(self, cell_output, memory):
        """`(h~_t = tanh(W_c [c_t; s_t]), a_t)` with `c_t, a_t = attention(s_t, H)`."""
        context, weights = self._attend(cell_output, memory)
        combined = keras.ops.concatenate([context, cell_output], axis=-1)
        return apply_dense(self.combine, combined), weights

    def _step_dense_layers(self):
        readout = [] if self.readout is None else [self.readout]
        return [*super()._step_dense_layers(), self.combine, *readout]

    def get_config(self):
        config = super().get_config()
        config["input_feeding"] = self.input_feeding
        return config
