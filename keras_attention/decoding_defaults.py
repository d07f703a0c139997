"""The decoding defaults of the library, written once, in plain Python (the command
line reads them for `--help` without importing TensorFlow).

The defaults a client also needs (`DEFAULT_LENGTH_PENALTY`, `DEFAULT_TEMPERATURE`) live
in `keras_attention_client.wire.decoding_options`.
"""

DEFAULT_BEAM_WIDTH = 4
"""The beam width of beam search where none is given: `BeamSearch`, an export's
`beam_search` signature and LiteRT beam model, `evaluate`'s beam pass."""

DEFAULT_MAX_OUTPUT_LENGTH = 50
"""Most tokens a translation may have (decoding steps, the end token's included) where
neither a run nor a request says otherwise."""
