"""`BeamSearchDecoder`: TFA's beam search decoder on `keras_attention.decoding.BeamSearch`.

The decoder is an adapter: its next-step function embeds the previous ids, steps the
cell and applies the output layer, and the search itself is the one decoding loop of
`keras_attention.decoding` with TFA's options switched on (`BeamSearch.tiled_state`,
`tfa_scoring`, `coverage_penalty`, `record_steps`). This module also gives TFA's
`beam_search_decoder` module path its names (the structures live in
`beam_search_outputs`, the alignment histories' handling in `beam_search_alignments`).
"""

import keras
import tensorflow as tf

from keras_attention.decoding.beam_search import BeamSearch
from keras_attention.decoding.decoding_strategy import in_xla_context
from keras_attention.seq2seq.beam_search_alignments import (
    attention_probs,
    fresh_history,
    is_history,
    with_histories,
    without_history,
    wrapper_states,
)
from keras_attention.seq2seq.beam_search_ops import (
    gather_tree,
    gather_tree_from_array,
    tile_batch,
)
from keras_attention.seq2seq.beam_search_outputs import (
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
)
from keras_attention.seq2seq.decoder import BaseDecoder, transpose_batch_time
from keras_attention.seq2seq.litert_tracing import is_tracing_for_litert

__all__ = [
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "FinalBeamSearchDecoderOutput",
    "gather_tree",
    "gather_tree_from_array",
    "tile_batch",
]


TFA_PENALTY_WEIGHT = 0.0
"""TFA's default penalty weights: no length and no coverage penalty (TFA's API, not
the decoding default of our own beam search, `DEFAULT_LENGTH_PENALTY`)."""


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class BeamSearchDecoder(BaseDecoder):
    """Beam search over an RNN cell (TFA's `BeamSearchDecoder`).

    `decoder(embedding, start_tokens=..., end_token=..., initial_state=...)` (or
    `dynamic_decode(decoder, ...)`) returns `(FinalBeamSearchDecoderOutput,
    BeamSearchDecoderState, lengths)`. As in TFA, the caller tiles the memory and
    the initial state with `tile_batch` (`AttentionWrapper.get_initial_state(
    batch_size=batch_size * beam_width)`); beams are ranked by
    `log_prob / ((5 + length) / 6) ** length_penalty_weight`, the length without
    the end token, plus TFA's coverage penalty for finished beams.

    The search is `keras_attention.decoding.BeamSearch`'s one loop (no custom op,
    no `GatherTree`); `maximum_iterations` sizes its buffers and must be a Python
    integer (or a tensor with a static value).

    Variables, in order: the cell's, then the output layer's.

    Args:
        cell: An RNN cell (e.g. an `AttentionWrapper` over tiled memory).
        beam_width: Python integer, the beams per sentence.
        embedding_fn: Optional callable (e.g. a `keras.layers.Embedding`) from ids to
            the next inputs; else pass `embedding` (a matrix) to the call.
        output_layer: Optional layer applied to the cell's output (the vocabulary
            projection).
        length_penalty_weight: Float, the length penalty's weight. Defaults to 0.
        coverage_penalty_weight: Float, the coverage penalty's weight (needs an
            `AttentionWrapper`). Defaults to 0.
        reorder_tensor_arrays: Whether the final state's alignment history is
            reordered along the final beams (a tensor, as TFA's). Defaults to True.
        output_all_scores: Whether the step outputs' `scores` hold every
            candidate's score. Defaults to False.
        **kwargs: `BaseDecoder` arguments (`maximum_iterations`,
            `output_time_major`, ...) and base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> cell = keras.layers.GRUCell(8)
    >>> decoder = BeamSearchDecoder(
    ...     cell, beam_width=3, output_layer=keras.layers.Dense(6), maximum_iterations=4
    ... )
    >>> embedding = np.random.rand(6, 5).astype("float32")
    >>> state = cell.get_initial_state(batch_size=2 * 3)
    >>> outputs, state, lengths = decoder(
    ...     embedding, start_tokens=[1, 1], end_token=0, initial_state=state
    ... )
    >>> outputs.predicted_ids.shape[0], outputs.predicted_ids.shape[2], lengths.shape
    (2, 3, TensorShape([2, 3]))
    """

    def __init__(
        self,
        cell,
        beam_width,
        embedding_fn=None,
        output_layer=None,
        length_penalty_weight=TFA_PENALTY_WEIGHT,
        coverage_penalty_weight=TFA_PENALTY_WEIGHT,
        reorder_tensor_arrays=True,
        output_all_scores=False,
        **kwargs,
    ):
        if "state_size" not in dir(cell) or not callable(cell):
            raise TypeError(f"`cell` must be an RNN cell. Received: cell={cell!r}")
        if embedding_fn is not None and not callable(embedding_fn):
            raise ValueError("`embedding_fn` must be callable.")
        super().__init__(**kwargs)
        self.cell = cell
        self.beam_width = int(beam_width)
        self.embedding_fn = embedding_fn
        self.output_layer = output_layer
        self.length_penalty_weight = float(length_penalty_weight)
        self.coverage_penalty_weight = float(coverage_penalty_weight)
        self.reorder_tensor_arrays = reorder_tensor_arrays
        self.output_all_scores = output_all_scores
        self._batch_size = None
        self._cell_dtype = None

    @property
    def batch_size(self):
        return self._batch_size

    def _rnn_output_size(self):
        size = getattr(self.cell, "output_size", None)
        if size is None:
            state_size = self.cell.state_size
            size = state_size[0] if isinstance(state_size, (list, tuple)) else state_size
        size = tf.TensorShape(size)
        if self.output_layer is None:
            return size
        return tf.TensorShape(self.output_layer.compute_output_shape((None,) + tuple(size))[1:])

    @property
    def output_size(self):
        beam = tf.TensorShape([self.beam_width])
        scores = beam.concatenate(self._rnn_output_size()) if self.output_all_scores else beam
        return BeamSearchDecoderOutput(scores=scores, predicted_ids=beam, parent_ids=beam)

    @property
    def output_dtype(self):
        dtype = self._cell_dtype or tf.as_dtype(self.compute_dtype)
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=tf.int32, parent_ids=tf.int32)

    def _embed_fn(self, embedding):
        if embedding is not None and self.embedding_fn is not None:
            raise ValueError("You can only specify the embedding or the embedding_fn")
        if embedding is not None:
            embedding = tf.convert_to_tensor(embedding)
            return lambda ids: tf.nn.embedding_lookup(embedding, ids)
        if self.embedding_fn is None:
            raise ValueError("You have to specify either embedding or embedding_fn")
        return self.embedding_fn

    def initialize(self, embedding, start_tokens=None, end_token=None, initial_state=None):
        """TFA's `initialize`: `(finished, start_inputs, BeamSearchDecoderState)`."""
        embed = self._embed_fn(embedding)
        start_tokens = tf.convert_to_tensor(start_tokens, tf.int32)
        if start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        if tf.convert_to_tensor(end_token).shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(start_tokens)
        self._cell_dtype = tf.nest.flatten(initial_state)[0].dtype
        beams = tf.range(self.beam_width)[tf.newaxis] > 0
        finished = tf.tile(beams, [self._batch_size, 1])
        start_inputs = embed(tf.tile(start_tokens[:, tf.newaxis], [1, self.beam_width]))
        log_probs = tf.where(finished, float("-inf"), 0.0)
        coverage = attention_probs(initial_state) if self.coverage_penalty_weight else None
        if coverage is not None:
            coverage = tf.reshape(coverage, [self._batch_size, self.beam_width, -1])
        state = BeamSearchDecoderState(
            cell_state=initial_state,
            log_probs=log_probs,
            finished=finished,
            lengths=tf.zeros_like(finished, tf.int64),
            accumulated_attention_probs=() if coverage is None else coverage,
        )
        return finished, start_inputs, state

    def step(self, time, inputs, state, training=None):
        raise NotImplementedError(
            "BeamSearchDecoder runs the whole search in one call (keras_attention."
            "decoding.BeamSearch's loop); use dynamic_decode or call the decoder."
        )

    def _build_sublayers(self, inputs):
        if not self.cell.built:
            self.cell.build((None, inputs.shape[-1]))
        if self.output_layer is not None and not self.output_layer.built:
            size = getattr(self.cell, "output_size", None) or self._rnn_output_size()
            self.output_layer.build((None,) + tuple(tf.TensorShape(size)))

    def _strategy(self, maximum_iterations, end_token, initial_state):
        steps = tf.get_static_value(maximum_iterations)
        end = tf.get_static_value(tf.convert_to_tensor(end_token))
        if steps is None or end is None:
            raise ValueError(
                "BeamSearchDecoder needs a static maximum_iterations (it sizes the "
                "search's buffers) and a static end_token."
            )
        strategy = BeamSearch(
            beam_width=self.beam_width,
            length_penalty=self.length_penalty_weight,
            max_steps=int(steps),
            end_id=int(end),
            pad_id=int(end),
        )
        strategy.tiled_state = True
        strategy.tfa_scoring = True
        strategy.record_steps = True
        # The records as plain tensors when traced for LiteRT (its converter turns that
        # loop into builtin ops), except under XLA, which needs `TensorArray`s' fixed
        # shapes; elsewhere `TensorArray`s, which write each step once.
        strategy.tensor_arrays = in_xla_context() or not is_tracing_for_litert()
        strategy.record_all_scores = bool(self.output_all_scores)
        if self.coverage_penalty_weight:
            coverage = attention_probs(initial_state)
            if coverage is None:
                raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
            strategy.coverage_penalty = self.coverage_penalty_weight
            strategy.initial_coverage = coverage
        return strategy

    def run_search(self, maximum_iterations, output_time_major, training, embedding, init_kwargs):
        """The whole search (what `dynamic_decode` runs for this decoder): returns
        `(FinalBeamSearchDecoderOutput, BeamSearchDecoderState, lengths)`."""
        if maximum_iterations is None:
            raise ValueError("BeamSearchDecoder needs maximum_iterations.")
        embed = self._embed_fn(embedding)
        _, start_inputs, first = self.initialize(embedding, **init_kwargs)
        self._build_sublayers(start_inputs)
        initial_state = init_kwargs["initial_state"]
        strategy = self._strategy(maximum_iterations, init_kwargs["end_token"], initial_state)
        histories = wrapper_states(initial_state)

        def next_fn(step, token_ids, loop_state):
            cell_state = with_histories(loop_state, [fresh_history(w) for w in histories])
            outputs, next_state = self.cell(embed(token_ids), cell_state, training=training)
            next_state = tf.nest.pack_sequence_as(cell_state, tf.nest.flatten(next_state))
            if self.output_layer is not None:
                outputs = self.output_layer(outputs)
            return outputs, without_history(next_state), attention_probs(next_state)

        start_ids = tf.convert_to_tensor(init_kwargs["start_tokens"], tf.int32)
        token_ids, state, search = strategy.initialize(without_history(initial_state), start_ids)
        steps, state, search, records = strategy.loop(next_fn, token_ids, state, search)
        return self._results(steps, state, search, records, histories, output_time_major)

    def _results(self, steps, state, search, records, histories, output_time_major):
        lengths = search["lengths"]
        parent_ids = records["parents"][:steps]
        raw_attention = records["attention"][:steps]

        def history(wrapper):
            if not any(is_history(h) for h in tf.nest.flatten(wrapper.alignment_history)):
                return wrapper
            if len(tf.nest.flatten(wrapper.alignments)) != 1 or len(histories) != 1:
                return wrapper  # several mechanisms: the history is not rebuilt
            if self.reorder_tensor_arrays:
                rebuilt = gather_tree_from_array(raw_attention, parent_ids, lengths)
            else:
                rebuilt = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
                rebuilt = rebuilt.unstack(raw_attention)
            return wrapper._replace(alignment_history=rebuilt)

        cell_state = with_histories(state, [history(wrapper) for wrapper in histories])
        outputs = BeamSearchDecoderOutput(
            scores=records["scores"][:steps],
            predicted_ids=records["ids"][:steps],
            parent_ids=parent_ids,
        )
        predicted_ids = tf.transpose(search["tokens"][:, :, :steps], [2, 0, 1])
        final_outputs = FinalBeamSearchDecoderOutput(predicted_ids, outputs)
        if not output_time_major:
            final_outputs = tf.nest.map_structure(transpose_batch_time, final_outputs)
        final_state = BeamSearchDecoderState(
            cell_state=cell_state,
            log_probs=search["log_probs"],
            finished=search["finished"],
            lengths=tf.cast(lengths, tf.int64),
            accumulated_attention_probs=search.get("coverage", ()),
        )
        return final_outputs, final_state, lengths

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "beam_width": self.beam_width,
                "embedding_fn": keras.saving.serialize_keras_object(self.embedding_fn)
                if isinstance(self.embedding_fn, keras.layers.Layer)
                else None,
                "output_layer": keras.saving.serialize_keras_object(self.output_layer),
                "length_penalty_weight": self.length_penalty_weight,
                "coverage_penalty_weight": self.coverage_penalty_weight,
                "reorder_tensor_arrays": self.reorder_tensor_arrays,
                "output_all_scores": self.output_all_scores,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("cell", "embedding_fn", "output_layer"):
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
