"""Decoding strategies: greedy search, beam search and random sampling.

The model supplies `next_fn(step, token_ids, state) -> (logits, new_state,
attention)`; a strategy runs it in one `tf.while_loop` and returns a
`DecodeResult`. The loop lives once, in `DecodingStrategy`; each strategy
supplies its `initialize` / `step` / `finalize` hooks. Strategies know
nothing about the model, and the model nothing about the strategy.
"""

from keras_attention.decoding.beam_search import BeamSearch
from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.decoding_strategy import DecodingStrategy
from keras_attention.decoding.greedy_search import GreedySearch
from keras_attention.decoding.random_sampling import RandomSampling

__all__ = ["BeamSearch", "DecodeResult", "DecodingStrategy", "GreedySearch", "RandomSampling"]
