"""`strategy_for`: the decoding strategy a `DecodingOptions` asks for."""

from __future__ import annotations

from keras_attention.decoding.beam_search import BeamSearch
from keras_attention.decoding.greedy_search import GreedySearch
from keras_attention.decoding.random_sampling import RandomSampling
from keras_attention.decoding.renamed_options import accepts_old_max_steps
from keras_attention_client.wire.decoding_options import DecodingOptions


@accepts_old_max_steps
def strategy_for(options: DecodingOptions, *, max_steps: int, end_id: int, pad_id: int):
    """The strategy of `options`, decoding at most `max_steps` steps.

    Greedy search for beam width 1 (the default, and no `n_best` above 1),
    beam search otherwise (`n_best` hypotheses per sentence when given), both
    with `drop_finished=True` (only the running sentences are computed: the
    model's `next_fn` must find all of a row in its state); with
    `sample=True`, `RandomSampling(temperature, top_k, top_p, seed)`. The
    options not given take `DecodingOptions.DEFAULTS`.

    Args:
        options: a `DecodingOptions` (its `max_output_length`, when given,
            replaces `max_steps`).
        max_steps: int, the most decoding steps when `options` sets none.
        end_id: int, the end token's id.
        pad_id: int, the padding id.
    """
    common = dict(max_steps=options.max_output_length or max_steps, end_id=end_id, pad_id=pad_id)
    if options.sample:
        return RandomSampling(
            temperature=options.value("temperature"),
            top_k=options.top_k,
            top_p=options.top_p,
            seed=options.seed,
            **common,
        )
    beam_width, n_best = options.value("beam_width"), options.n_best
    if beam_width == 1 and n_best in (None, 1):
        return GreedySearch(**common, drop_finished=True)
    return BeamSearch(
        beam_width=beam_width,
        length_penalty=options.value("length_penalty"),
        n_best=n_best,
        drop_finished=True,
        **common,
    )
