"""`check_values`: the range and combination checks of a `TrainConfig`'s options."""

from __future__ import annotations

from keras_attention.auto import AUTO


def check_values(config) -> None:
    """Raises `ValueError` naming the first option of `config` (a `TrainConfig`, whose
    `__post_init__` calls this after resolving its `None`s) whose value is out of range
    or does not go with another option's."""
    if config.conditional and (config.attention != "bahdanau" or config.cell != "gru"):
        raise ValueError(
            "`conditional` (the conditional GRU's query) is an option of the Bahdanau "
            "decoder with GRU cells. Received: conditional=True, "
            f"attention={config.attention!r}, cell={config.cell!r}"
        )
    if (
        config.attention == "luong"
        and config.scale_by_dimension
        and config.score not in ("dot", "general")
    ):
        raise ValueError(
            "`scale_by_dimension` divides the 'dot' and 'general' scores by sqrt(d). "
            f"Received: scale_by_dimension=True, score={config.score!r}"
        )
    if config.epochs != AUTO and (
        isinstance(config.epochs, bool) or not isinstance(config.epochs, int) or config.epochs < 1
    ):
        raise ValueError(
            f"`epochs` must be 'auto' or a positive int. Received: epochs={config.epochs!r}"
        )
    for name in (
        "batch_size",
        "max_length",
        "max_output_length",
        "sample_pairs",
        "shuffle_buffer",
    ):
        value = getattr(config, name)
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be a positive int. Received: {name}={value!r}")
    for name in ("label_smoothing", "ema_momentum"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ValueError(f"`{name}` must be in [0, 1). Received: {name}={value!r}")
    init_seed = config.init_seed
    if init_seed is not None and (
        isinstance(init_seed, bool) or not isinstance(init_seed, int) or init_seed < 0
    ):
        raise ValueError(f"`init_seed` must be None or an int >= 0. Received: {init_seed!r}")
    keep = config.keep_epoch_weights
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError(f"`keep_epoch_weights` must be an int >= 0. Received: {keep!r}")
    if (
        config.attention == "luong"
        and config.score in ("dot", "scaled_dot", "cosine")
        and config.decoder_units != 2 * config.encoder_units
    ):
        raise ValueError(
            f"score={config.score!r} compares decoder states with the bidirectional "
            "encoder's annotations directly, so `decoder_units` must be twice "
            f"`encoder_units`. Received: encoder_units={config.encoder_units}, "
            f"decoder_units={config.decoder_units} (or use --score general)"
        )
    if config.tokenizer != "words" and config.french_spacing is not None:
        raise ValueError(
            "`french_spacing` applies to tokenizer='words' (give it explicitly); subword "
            "pieces keep the spacing of the training text. Received: "
            f"french_spacing={config.french_spacing!r}, tokenizer={config.tokenizer!r}"
        )
    mix = config.mix_original
    if (
        isinstance(mix, bool)
        or not isinstance(mix, (int, float))
        or not 0 <= mix < 1
        or (mix and not config.adapt_from)
    ):
        raise ValueError(
            "`mix_original` (the share of the `adapt_from` run's corpora) must be in "
            f"[0, 1), 0 without `adapt_from`. Received: mix_original={config.mix_original!r}"
        )
    if config.steps_per_epoch is not None and config.steps_per_epoch < 1:
        raise ValueError(
            f"`steps_per_epoch` must be >= 1 or None. Received: steps_per_epoch={config.steps_per_epoch}"
        )
