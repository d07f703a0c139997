"""Toy next-step functions and brute-force NumPy decoders the decoding tests share.

`PrefixModel` is a small random model whose next-token distribution depends on
the *whole* prefix (and on the sentence), not just the previous token. The
prefix is kept in the decoder state as an integer code, so a strategy that
forgets to reorder the state with its hypotheses gets different answers. Its
NumPy twin enumerates every possible output to find the exact best one.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import tensorflow as tf

PAD, START, END = 0, 1, 3


def scripted_next_fn(script: np.ndarray, vocab_size: int, tv: int = 1):
    """`next_fn` whose step-`t` logits are `one_hot(script[:, t]) * 1e9`.

    Row `r` of the (possibly beam-tiled) batch follows row
    `r // (rows // len(script))` of `script`. Attention is `one_hot(t, tv)`.
    """
    script = tf.constant(script, tf.int32)

    def next_fn(step, token_ids, state):
        rows = tf.shape(token_ids)[0]
        repeat = rows // tf.shape(script)[0]
        ids = tf.repeat(script[:, step], repeat)
        logits = tf.one_hot(ids, vocab_size) * 1e9
        attention = tf.tile(tf.one_hot(step, tv)[tf.newaxis], [rows, 1])
        return logits, state, attention

    return next_fn


def table_next_fn(log_probs: np.ndarray, tv: int = 1):
    """`next_fn` with logits `log_probs[step, previous_token]` (shape (L, V, V))."""
    table = tf.constant(log_probs, tf.float32)

    def next_fn(step, token_ids, state):
        logits = tf.gather(table[step], token_ids)
        attention = tf.one_hot(token_ids, tv)
        return logits, state, attention

    return next_fn


def normalized(score: float, length: int, alpha: float) -> float:
    """GNMT-normalized score; `length` counts the end token when there is one."""
    return score / ((5.0 + length) / 6.0) ** alpha


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


class PrefixModel:
    """A random model whose distribution depends on the whole prefix.

    Vocabulary: 0 = pad, 1 = start, 3 = end, and content tokens 2 and 4 (pad
    and start have logit -inf, so they are never emitted).

    State: `{"sentence": (B,), "code": (B,)}`; `code` encodes the tokens fed so
    far in base `vocab_size + 1`.
    """

    vocab_size = 5
    content = (2, 4)

    def __init__(self, batch_size: int, max_steps: int, tv: int = 3, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.batch_size = batch_size
        self.max_steps = max_steps
        self.tv = tv
        # Step t sees a code of t + 1 base-(V + 1) digits, t < max_steps.
        num_codes = (self.vocab_size + 1) ** max_steps
        logits = rng.normal(scale=2.0, size=(batch_size, num_codes, self.vocab_size))
        # Make the end token likelier as the prefix grows (a code of t + 1
        # digits is seen at step t) so the best outputs have varied lengths.
        codes = np.arange(num_codes)
        digits = sum((codes >= (self.vocab_size + 1) ** k).astype(int) for k in range(max_steps))
        logits[..., END] += 1.5 * (digits - 3.0)
        logits[..., PAD] = -np.inf
        logits[..., START] = -np.inf
        self.logits = logits.astype(np.float32)
        self.attention_logits = rng.normal(size=(batch_size, num_codes, tv)).astype(np.float32)
        self._logits = tf.constant(self.logits)
        self._attention = tf.nn.softmax(tf.constant(self.attention_logits), axis=-1)

    def initial_state(self):
        return {
            "sentence": tf.range(self.batch_size, dtype=tf.int32),
            "code": tf.zeros([self.batch_size], tf.int32),
        }

    def start_ids(self):
        return tf.fill([self.batch_size], START)

    def next_fn(self, step, token_ids, state):
        code = state["code"] * (self.vocab_size + 1) + token_ids + 1
        index = tf.stack([state["sentence"], code], axis=1)
        logits = tf.gather_nd(self._logits, index)
        attention = tf.gather_nd(self._attention, index)
        return logits, {"sentence": state["sentence"], "code": code}, attention

    # NumPy side ---------------------------------------------------------

    def _row(self, sentence: int, prefix: tuple[int, ...]):
        code = 0
        for token in (START,) + prefix:
            code = code * (self.vocab_size + 1) + token + 1
        log_probs = log_softmax(self.logits[sentence, code])
        attention = self.attention_logits[sentence, code].astype(np.float64)
        attention = np.exp(attention - attention.max())
        return log_probs, attention / attention.sum()

    def score(self, sentence: int, tokens: tuple[int, ...], ended: bool):
        """Log-probability of `tokens` (+ end if `ended`) and the attention rows."""
        total, rows = 0.0, []
        for t, token in enumerate(tokens):
            log_probs, attention = self._row(sentence, tokens[:t])
            total += log_probs[token]
            rows.append(attention)
        if ended:
            total += self._row(sentence, tokens)[0][END]
        return total, np.array(rows).reshape(len(tokens), self.tv)

    def greedy(self, sentence: int):
        tokens: tuple[int, ...] = ()
        for _ in range(self.max_steps):
            log_probs, _ = self._row(sentence, tokens)
            token = int(np.argmax(log_probs))
            if token == END:
                return tokens, True
            tokens += (token,)
        return tokens, False

    def exhaustive_best(self, sentence: int, alpha: float):
        """The best (tokens, ended) under the GNMT-normalized score, by enumeration."""
        best, best_value = None, -math.inf
        for n in range(self.max_steps + 1):
            # Fewer than max_steps tokens: the end token took a step. Exactly
            # max_steps tokens: no step was left for it.
            ended = n < self.max_steps
            for tokens in itertools.product(self.content, repeat=n):
                score, _ = self.score(sentence, tokens, ended)
                value = normalized(score, n + 1 if ended else n, alpha)
                if value > best_value:
                    best, best_value = (tokens, ended), value
        return best

    def expected(self, sentence: int, tokens: tuple[int, ...], ended: bool, steps: int):
        """(padded tokens, score, length, padded attention) as a strategy returns them."""
        score, rows = self.score(sentence, tokens, ended)
        padded = np.full([steps], PAD, np.int32)
        padded[: len(tokens)] = tokens
        attention = np.zeros([steps, self.tv])
        attention[: len(tokens)] = rows
        return padded, score, len(tokens), attention

    def assert_result_row(self, result, sentence: int, tokens: tuple[int, ...], ended: bool):
        """Asserts that row `sentence` of a `DecodeResult` is `tokens` (+ end if `ended`).

        Tokens, length, score (the model's log-probability) and attention rows
        are compared with this NumPy twin's.
        """
        steps = int(result.tokens.shape[1])
        want_tokens, want_score, want_length, want_attention = self.expected(
            sentence, tokens, ended, steps
        )
        np.testing.assert_array_equal(result.tokens[sentence].numpy(), want_tokens)
        assert int(result.lengths[sentence]) == want_length
        np.testing.assert_allclose(float(result.scores[sentence]), want_score, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result.attention[sentence].numpy(), want_attention, atol=1e-6)
        if result.token_scores is not None:
            np.testing.assert_allclose(
                result.token_scores[sentence].numpy(),
                self.token_scores(sentence, tokens, ended, steps),
                rtol=1e-5,
                atol=1e-5,
            )

    def token_scores(self, sentence: int, tokens: tuple[int, ...], ended: bool, steps: int):
        """Each token's log-probability, the end token's after them, then zeros: `(steps,)`."""
        scores = np.zeros([steps])
        for t, token in enumerate(tokens):
            scores[t] = self._row(sentence, tokens[:t])[0][token]
        if ended:
            scores[len(tokens)] = self._row(sentence, tokens)[0][END]
        return scores
