"""A self-attentive sentence encoder: every token attends over the whole sequence.

Self-attention is the attention layer called with `query = values`: each token's
feature vector queries all the others (Luong's `"general"` score `s . W_a h` can learn
to match one token to another; divided by `sqrt(d)`, as self-attention usually is,
with `scale_by_dimension=True`), and the contexts are max-pooled into one sentence
vector. The synthetic task needs tokens to find each other: the vocabulary comes in
partner pairs (`k` and `k + half`), and the label is 1 when some token and its partner
both occur. A bag of embeddings cannot see pairs; self-attention learns to put each
token's weight on its partner.

    python examples/self_attention_encoder.py --epochs 10 --samples 3000
"""

import argparse

import keras
import numpy as np

from keras_attention.layers import LuongAttention

PAD = 0


def make_dataset(
    samples: int, pairs: int, length: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token sequences (ids `1..2*pairs`, padded with 0) and balanced labels.

    Token `k` (1 <= k <= pairs) has the partner `k + pairs`. A negative sequence has
    no token together with its partner; a positive one has exactly one such pair.
    Returns `(tokens, labels, pair_positions)`, the last `(samples, 2)` with the
    positions of the pair (or -1).
    """
    rng = np.random.default_rng(seed)
    tokens = np.full((samples, length), PAD, "int32")
    labels = rng.integers(0, 2, size=samples).astype("int32")
    positions = np.full((samples, 2), -1)
    for i in range(samples):
        size = int(rng.integers(length // 2, length + 1))
        # One token of each chosen partner pair: no pair complete.
        bases = rng.choice(pairs, size=size, replace=size > pairs) + 1
        flip = rng.integers(0, 2, size=size).astype(bool)
        sequence = np.where(flip, bases + pairs, bases)
        # Repeats of a base must keep one side, or they would form a pair.
        for base in np.unique(bases):
            sequence[bases == base] = sequence[bases == base][0]
        if labels[i]:
            a, b = rng.choice(size, size=2, replace=False)
            sequence[b] = sequence[a] + pairs if sequence[a] <= pairs else sequence[a] - pairs
            # Keep exactly one complete pair: other copies of the two tokens go.
            pair = {sequence[a], sequence[b]}
            for j in range(size):
                if j not in (a, b) and sequence[j] in pair:
                    sequence[j] = PAD
            positions[i] = (a, b)
        tokens[i, :size] = sequence
    return tokens, labels, positions


def build_models(pairs: int, embedding_dim: int) -> tuple[keras.Model, keras.Model]:
    """Returns the classifier and a model sharing its layers that outputs the
    self-attention weights `(batch, T, T)`."""
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(2 * pairs + 1, embedding_dim, mask_zero=True)(tokens)
    # Self-attention: the same masked sequence is the query and the values.
    attention = LuongAttention(score="general", scale_by_dimension=True, name="self_attention")
    context, weights = attention(embedded, embedded)
    features = keras.layers.Concatenate()([embedded, context])
    hidden = keras.layers.Dense(2 * embedding_dim, activation="relu")(features)
    pooled = keras.layers.GlobalMaxPooling1D()(hidden)
    probability = keras.layers.Dense(1, activation="sigmoid", name="probability")(pooled)
    classifier = keras.Model(tokens, probability, name="pair_detector")
    return classifier, keras.Model(tokens, weights, name="self_attention_weights")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3000, help="training sequences")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--length", type=int, default=12, help="longest sequence")
    parser.add_argument("--pairs", type=int, default=20, help="partner pairs in the vocabulary")
    parser.add_argument("--embedding-dim", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains on synthetic data; returns held-out `accuracy` and `partner_attention`
    (share of positive sequences where the first token of the pair puts its largest
    weight on its partner)."""
    args = parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    train_tokens, train_labels, _ = make_dataset(args.samples, args.pairs, args.length, args.seed)
    tokens, labels, positions = make_dataset(
        max(400, args.samples // 4), args.pairs, args.length, args.seed + 1
    )
    classifier, attention_model = build_models(args.pairs, args.embedding_dim)
    classifier.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    classifier.fit(
        train_tokens, train_labels, epochs=args.epochs, batch_size=args.batch_size, verbose=2
    )
    _, accuracy = classifier.evaluate(tokens, labels, verbose=0)
    weights = keras.ops.convert_to_numpy(attention_model.predict(tokens, verbose=0))
    positive = np.flatnonzero(labels == 1)
    first, second = positions[positive, 0], positions[positive, 1]
    partner_attention = float(np.mean(weights[positive, first].argmax(-1) == second))
    padded_weight = float(
        np.abs(weights[:, :, :][np.broadcast_to((tokens == PAD)[:, None, :], weights.shape)]).max(
            initial=0.0
        )
    )
    results = {
        "accuracy": float(accuracy),
        "partner_attention": partner_attention,
        "max_weight_on_padding": padded_weight,
    }
    print(
        f"test accuracy {accuracy:.3f} (chance 0.5); a paired token attends most to its "
        f"partner in {partner_attention:.1%} of positive sequences; largest weight on "
        f"padding {padded_weight:g}"
    )
    return results


if __name__ == "__main__":
    main()
