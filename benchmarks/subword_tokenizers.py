"""Words vs. subwords on the bundled corpus: round trip, [UNK]s, tokens per sentence, speed.

Compares, on each side of the bundled English→French corpus (trained on the
training split, measured on the validation + test splits, which share no
source sentence with it):

- `words`: the rule-based tokenizer (`keras_attention.text.tokenize`) with a
  word vocabulary of the default sizes; detokenized by `detokenize`.
- `wordpiece`: tf-text's `FastWordpieceTokenizer` over those word tokens,
  its vocabulary learned by tf-text's `bert_vocab_from_dataset`; the pieces
  go back to words with `FastWordpieceTokenizer.detokenize`, then
  `detokenize`.
- `sentencepiece-unigram` / `sentencepiece-bpe`: SentencePiece models
  trained with `sentencepiece` (byte fallback, full character coverage,
  whitespace as pieces), run in the graph by `tensorflow_text.SentencepieceTokenizer`.

Prints, per tokenizer and side: the share of held-out sentences whose
encode -> decode gives back the normalized sentence exactly, the share of
sentences with an `[UNK]`, tokens per sentence, and tokenization speed
(sentences/second, in a `tf.function`, batches of 1024). First, unigram vs
BPE on a small sample (3,000 random pairs, 2,000 pieces asked): pieces
learned and tokens per sentence.

    python benchmarks/subword_tokenizers.py [--vocabulary-size 8000] [--max-pairs N]
"""

from __future__ import annotations

import argparse
import time

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402

from keras_attention.data import load_corpus, split_corpus  # noqa: E402
from keras_attention.text import (  # noqa: E402
    UNK_ID,
    SpacingRules,
    SubwordVectorizer,
    TextVectorizer,
    build_vocabulary,
    detokenize,
    normalize,
    tokenize,
    train_subword_model,
)

BATCH = 1024


def batches(texts):
    for start in range(0, len(texts), BATCH):
        yield tf.constant(texts[start : start + BATCH])


def measure(name, side, texts, encode, decode, unk_id):
    """Round trip, [UNK] share, tokens per sentence and speed of one tokenizer."""
    encode_fn = tf.function(encode)
    decode_fn = tf.function(decode)
    for batch in batches(texts[:BATCH]):  # trace once before timing
        encode_fn(batch)
    exact = with_unk = tokens = 0
    seconds = 0.0
    for batch in batches(texts):
        started = time.perf_counter()
        ids = encode_fn(batch)
        seconds += time.perf_counter() - started
        decoded = decode_fn(ids).numpy()
        expected = normalize(batch).numpy()
        exact += int(np.sum(decoded == expected))
        with_unk += int(tf.reduce_sum(tf.cast(tf.reduce_any(ids == unk_id, axis=1), tf.int32)))
        tokens += int(tf.reduce_sum(ids.row_lengths()))
    n = len(texts)
    print(
        f"{name:<22} {side:<6} round trip {100 * exact / n:6.2f}%  "
        f"[UNK] in {100 * with_unk / n:5.2f}% of sentences  "
        f"{tokens / n:5.2f} tokens/sentence  {n / seconds:8.0f} sentences/s"
    )


def wordpiece_vocabulary(texts, size):
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab

    words = tf.data.Dataset.from_tensor_slices(texts).batch(BATCH).map(tokenize)
    return bert_vocab.bert_vocab_from_dataset(
        words,
        vocab_size=size,
        reserved_tokens=["[PAD]", "[UNK]", "[START]", "[END]"],
        bert_tokenizer_params={"lower_case": False},
        learn_params={},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--max-pairs", type=int, default=None)
    parser.add_argument("--skip-wordpiece", action="store_true")
    args = parser.parse_args()
    harness.print_machine_header()

    corpus = load_corpus(max_pairs=args.max_pairs)
    small_corpus(corpus.pairs, 3000, 2000)
    splits = split_corpus(corpus.pairs, validation_fraction=0.02, test_fraction=0.02, seed=0)
    held_out = splits.validation + splits.test
    print(
        f"{len(splits.train)} training pairs, {len(held_out)} held-out pairs; "
        f"subword vocabularies of {args.vocabulary_size}"
    )
    for side, index, word_size in (("source", 0, 12000), ("target", 1, 16000)):
        train_texts = [pair[index] for pair in splits.train]
        texts = [pair[index] for pair in held_out]
        spacing = SpacingRules.measure(train_texts)

        words = TextVectorizer(build_vocabulary(train_texts, word_size), spacing=spacing)
        measure(
            f"words ({word_size})",
            side,
            texts,
            lambda t, v=words: v.encode(t, ragged=True),
            lambda ids, v=words: v.decode(ids),
            UNK_ID,
        )

        if not args.skip_wordpiece:
            with harness.Stopwatch() as watch:
                vocabulary = wordpiece_vocabulary(train_texts, args.vocabulary_size)
            wordpiece = tf_text.FastWordpieceTokenizer(
                vocabulary,
                token_out_type=tf.int32,
                unknown_token="[UNK]",
                no_pretokenization=True,
                support_detokenization=True,
            )
            print(f"  (wordpiece vocabulary of {len(vocabulary)} learned in {watch.seconds:.0f} s)")

            def encode_wordpiece(t, w=wordpiece):
                return w.tokenize(tokenize(t)).merge_dims(-2, -1)

            def decode_wordpiece(ids, w=wordpiece, spacing=spacing):
                # `detokenize` joins the pieces into words separated by spaces;
                # the word rules then remove the spaces `tokenize` introduced.
                words = tf.strings.split(w.detokenize(ids))
                return detokenize(words, spacing=spacing)

            measure("wordpiece", side, texts, encode_wordpiece, decode_wordpiece, 1)

        for model_type in ("unigram", "bpe"):
            with harness.Stopwatch() as watch:
                vectorizer = SubwordVectorizer(
                    train_subword_model(train_texts, args.vocabulary_size, model_type=model_type)
                )
            print(f"  (sentencepiece {model_type} model trained in {watch.seconds:.0f} s)")
            measure(
                f"sentencepiece-{model_type}",
                side,
                texts,
                lambda t, v=vectorizer: v.encode(t, ragged=True),
                lambda ids, v=vectorizer: v.decode(ids),
                UNK_ID,
            )


def small_corpus(pairs, size: int, vocabulary_size: int) -> None:
    """Unigram vs BPE on a small sample: pieces per sentence."""
    import random

    sample = random.Random(0).sample(pairs, size)
    for side, index in (("source", 0), ("target", 1)):
        texts = [pair[index] for pair in sample]
        for model_type in ("unigram", "bpe"):
            vectorizer = SubwordVectorizer(
                train_subword_model(texts, vocabulary_size, model_type=model_type)
            )
            ids = vectorizer.token_ids(tf.constant(texts))
            print(
                f"small corpus ({size} pairs, {vocabulary_size} asked) {model_type:<8} {side:<6} "
                f"{vectorizer.vocabulary_size} pieces learned, "
                f"{float(np.mean(ids.row_lengths().numpy())):5.2f} tokens/sentence"
            )


if __name__ == "__main__":
    main()
