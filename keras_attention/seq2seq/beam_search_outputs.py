"""The structures of `BeamSearchDecoder` (TFA's names): its state, each step's output
and the search's final output."""

import collections


class BeamSearchDecoderState(
    collections.namedtuple(
        "BeamSearchDecoderState",
        ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"),
    )
):
    """The state of a `BeamSearchDecoder`.

    Attributes:
        cell_state: The cell's state, `batch_size * beam_width` rows.
        log_probs: `(batch_size, beam_width)` each beam's summed log-probability.
        finished: `(batch_size, beam_width)` whether each beam has ended.
        lengths: int64 `(batch_size, beam_width)` each beam's length (the end token
            counted).
        accumulated_attention_probs: With a coverage penalty, `(batch_size,
            beam_width, memory_time)` each beam's summed attention, else `()`.
    """


class BeamSearchDecoderOutput(
    collections.namedtuple("BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))
):
    """Each step's beams, in that step's beam order.

    Attributes:
        scores: The kept beams' ranking scores (with the penalties), or with
            `output_all_scores` every candidate's, `(..., beam_width, vocab_size)`.
        predicted_ids: The kept beams' ids.
        parent_ids: The beam each kept beam continues.
    """


class FinalBeamSearchDecoderOutput(
    collections.namedtuple(
        "FinalBeamDecoderOutput", ("predicted_ids", "beam_search_decoder_output")
    )
):
    """The search's result.

    Attributes:
        predicted_ids: `(batch_size, T, beam_width)` (time major: `(T, batch_size,
            beam_width)`) every final beam's ids, best first, the end token repeated
            after a beam ends.
        beam_search_decoder_output: The `BeamSearchDecoderOutput` of every step.
    """
