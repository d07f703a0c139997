"""`grow_vocabulary_weights` against a NumPy reference: kept rows exact, new rows the mean."""

import numpy as np
import pytest

from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.models.vocabulary_growth import grow_vocabulary_weights

SIZES = {"source": (9, 12), "target": (11, 15)}  # (trained, grown) vocabulary sizes


def built(source_size, target_size, tie_embeddings, embedding_dim=8):
    model = Seq2Seq(
        source_size,
        target_size,
        embedding_dim=embedding_dim,
        encoder_units=8,
        decoder_units=16,
        tie_embeddings=tie_embeddings,
    )
    model.build()
    return model


def by_path(model) -> dict[str, np.ndarray]:
    return {w.path.split("/", 1)[1]: np.array(w.numpy()) for w in model.weights}


def paired(trained, model) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`{path: (trained value, model value)}`, the weights paired in order."""
    return {
        old.path.split("/", 1)[1]: (np.array(old.numpy()), np.array(new.numpy()))
        for old, new in zip(trained.weights, model.weights, strict=True)
    }


def vocabulary_axes(tie_embeddings):
    """Each vocabulary-sized weight: (side, axis), read off the architecture by hand."""
    axes = {
        "encoder/embedding/embeddings": ("source", 0),
        "decoder/embedding/embeddings": ("target", 0),
    }
    if tie_embeddings:
        axes["decoder/output_bias"] = ("target", 0)
    else:
        axes |= {"decoder/logits/kernel": ("target", 1), "decoder/logits/bias": ("target", 0)}
    return axes


@pytest.mark.parametrize("tie_embeddings", [True, False])
def test_shared_rows_are_copied_and_new_rows_are_the_mean_of_the_old_words(tie_embeddings):
    trained = built(SIZES["source"][0], SIZES["target"][0], tie_embeddings)
    model = built(SIZES["source"][1], SIZES["target"][1], tie_embeddings)
    grown = grow_vocabulary_weights(trained, model)

    axes = vocabulary_axes(tie_embeddings)
    assert sorted(grown) == sorted(axes)
    for path, (value, started) in paired(trained, model).items():
        if path not in axes:
            assert np.array_equal(started, value), path
            continue
        side, axis = axes[path]
        old_size, new_size = SIZES[side]
        assert started.shape[axis] == new_size
        kept = np.take(started, np.arange(old_size), axis=axis)
        assert np.array_equal(kept, value), path  # id i of the old vocabulary is id i
        words_mean = np.take(value, np.arange(4, old_size), axis=axis).mean(axis=axis)
        for index in range(old_size, new_size):
            row = np.take(started, index, axis=axis)
            np.testing.assert_allclose(row, words_mean, rtol=1e-6, atol=1e-7, err_msg=path)


def test_same_sizes_copy_every_weight_exactly():
    trained, model = built(9, 11, True), built(9, 11, True)
    assert grow_vocabulary_weights(trained, model) == []
    assert all(np.array_equal(new, old) for old, new in paired(trained, model).values())


@pytest.mark.parametrize(
    ("model_sizes", "embedding_dim", "message"),
    [((7, 11), 8, "must hold the trained model's vocabularies"), ((9, 11), 16, "embedding_dim")],
)
def test_other_architectures_or_smaller_vocabularies_are_refused(
    model_sizes, embedding_dim, message
):
    trained = built(9, 11, True)
    model = built(*model_sizes, True, embedding_dim=embedding_dim)
    before = by_path(model)
    with pytest.raises(ValueError, match=message):
        grow_vocabulary_weights(trained, model)
    after = by_path(model)
    assert all(np.array_equal(after[path], value) for path, value in before.items())
