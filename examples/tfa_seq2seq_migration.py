"""A TensorFlow Addons seq2seq program, run on `keras_attention.seq2seq`.

The program is written against `tfa.seq2seq`'s API, as an NMT-with-attention model
of the TFA era: a GRU encoder over embeddings, an `AttentionWrapper(GRUCell,
LuongAttention)` decoder cell, `BasicDecoder` + `TrainingSampler` for teacher-forced
training with `SequenceLoss`, and `BeamSearchDecoder` over `tile_batch`-tiled
memory for inference, both driven by `dynamic_decode`. The toy task: reverse a
sequence of symbols.

Only the two imports below differ from the TFA version of the program: with TFA
they read `from tensorflow import keras` and `import tensorflow_addons.seq2seq as
seq2seq` (see docs/migration-from-tfa.md).

    python examples/tfa_seq2seq_migration.py --steps 300
"""

import argparse

import keras  # TFA: from tensorflow import keras
import numpy as np
import tensorflow as tf

import keras_attention.seq2seq as seq2seq  # TFA: import tensorflow_addons.seq2seq as seq2seq

PAD, START, END = 0, 1, 2


def make_batch(rng, batch_size, vocab_size, max_length):
    """Sources of 2..max_length symbols (ids 3..vocab_size-1, padded with 0); the
    targets are the sources reversed. Returns `(source, target_in, target_out,
    target_weights)`, the targets `max_length + 1` wide (`END` after the symbols)."""
    width = max_length + 1
    source = np.full((batch_size, max_length), PAD, "int32")
    target_in = np.full((batch_size, width), PAD, "int32")
    target_out = np.full((batch_size, width), PAD, "int32")
    for row in range(batch_size):
        length = int(rng.integers(2, max_length + 1))
        symbols = rng.integers(3, vocab_size, size=length)
        source[row, :length] = symbols
        target_in[row, : length + 1] = np.concatenate([[START], symbols[::-1]])
        target_out[row, : length + 1] = np.concatenate([symbols[::-1], [END]])
    weights = (target_out != PAD).astype("float32")
    weights[np.arange(batch_size), (source != PAD).sum(1)] = 1.0  # the END token counts
    return source, target_in, target_out, weights


class Translator:
    """The encoder, the attention decoder cell and the two decoders."""

    def __init__(self, vocab_size, units):
        self.source_embedding = keras.layers.Embedding(vocab_size, units)
        self.target_embedding = keras.layers.Embedding(vocab_size, units)
        self.encoder = keras.layers.GRU(units, return_sequences=True, return_state=True)
        self.attention = seq2seq.LuongAttention(units)
        self.cell = seq2seq.AttentionWrapper(
            keras.layers.GRUCell(units), self.attention, attention_layer_size=units
        )
        self.projection = keras.layers.Dense(vocab_size)
        self.decoder = seq2seq.BasicDecoder(
            self.cell, seq2seq.TrainingSampler(), output_layer=self.projection
        )
        self.loss = seq2seq.SequenceLoss()

    def encode(self, source):
        lengths = tf.reduce_sum(tf.cast(source != PAD, tf.int32), axis=1)
        memory, state = self.encoder(
            self.source_embedding(source), mask=tf.sequence_mask(lengths, tf.shape(source)[1])
        )
        return memory, state, lengths

    def initial_state(self, encoder_state, batch_size):
        state = self.cell.get_initial_state(batch_size=batch_size, dtype=tf.float32)
        cell_state = tf.nest.pack_sequence_as(state.cell_state, [encoder_state])
        return state.clone(cell_state=cell_state)

    def logits(self, source, target_in):
        """Teacher forcing: `(batch, target time, vocab)` logits."""
        memory, encoder_state, lengths = self.encode(source)
        self.attention.setup_memory(memory, memory_sequence_length=lengths)
        batch_size = tf.shape(source)[0]
        target_lengths = tf.fill([batch_size], tf.shape(target_in)[1])
        outputs, _, _ = seq2seq.dynamic_decode(
            self.decoder,
            decoder_init_input=self.target_embedding(target_in),
            decoder_init_kwargs={
                "initial_state": self.initial_state(encoder_state, batch_size),
                "sequence_length": target_lengths,
            },
        )
        return outputs.rnn_output

    def translate(self, source, beam_width, maximum_iterations):
        """Beam search: the best beam's ids `(batch, time)` and all beams' scores."""
        memory, encoder_state, lengths = self.encode(source)
        self.attention.setup_memory(
            seq2seq.tile_batch(memory, beam_width),
            memory_sequence_length=seq2seq.tile_batch(lengths, beam_width),
        )
        batch_size = int(source.shape[0])
        decoder = seq2seq.BeamSearchDecoder(
            self.cell,
            beam_width,
            embedding_fn=self.target_embedding,
            output_layer=self.projection,
            maximum_iterations=maximum_iterations,
        )
        initial_state = self.initial_state(
            seq2seq.tile_batch(encoder_state, beam_width), batch_size * beam_width
        )
        outputs, _, _ = seq2seq.dynamic_decode(
            decoder,
            maximum_iterations=maximum_iterations,
            decoder_init_input=None,
            decoder_init_kwargs={
                "start_tokens": tf.fill([batch_size], START),
                "end_token": END,
                "initial_state": initial_state,
            },
        )
        return outputs.predicted_ids[:, :, 0], outputs.beam_search_decoder_output.scores

    def variables(self):
        layers = [self.source_embedding, self.target_embedding, self.encoder]
        layers += [self.attention, self.cell, self.projection]
        unique = {}
        for layer in layers:
            for variable in layer.trainable_variables:
                unique.setdefault(id(variable), variable)
        return list(unique.values())


def strip(ids):
    """The ids before the first `END`."""
    ids = [int(i) for i in ids]
    return ids[: ids.index(END)] if END in ids else ids


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=10)
    parser.add_argument("--max-length", type=int, default=5)
    parser.add_argument("--units", type=int, default=32)
    parser.add_argument("--beam-width", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    """Trains for `--steps` steps and translates a held-out batch with beam search.

    Returns `losses` (every step's), `exact` (the share of held-out sentences whose
    best beam is the reversed source), `translations` (a few `(source, output)`
    pairs) and `predicted_shape` (the best beams' ids, `(batch, time)`).
    """
    args = parse_args(argv)
    tf.random.set_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = Translator(args.vocab_size, args.units)
    optimizer = keras.optimizers.Adam(args.learning_rate)

    source, target_in, target_out, weights = make_batch(rng, 2, args.vocab_size, args.max_length)
    model.logits(source, target_in)  # creates the variables, eagerly
    variables = model.variables()

    @tf.function
    def train_step(source, target_in, target_out, weights):
        with tf.GradientTape() as tape:
            logits = model.logits(source, target_in)
            loss = model.loss(target_out, logits, sample_weight=weights)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    losses = []
    for _ in range(args.steps):
        batch = make_batch(rng, args.batch_size, args.vocab_size, args.max_length)
        losses.append(float(train_step(*batch)))

    source, _, target_out, _ = make_batch(rng, 16, args.vocab_size, args.max_length)
    best, _ = model.translate(source, args.beam_width, args.max_length + 1)
    best = best.numpy()
    expected = [strip(row) for row in target_out]
    outputs = [strip(row) for row in best]
    exact = float(np.mean([e == o for e, o in zip(expected, outputs, strict=True)]))
    translations = [
        (strip(list(s[s != PAD])), o) for s, o in zip(source[:3], outputs[:3], strict=True)
    ]
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; exact reversals {exact:.2f}")
    for symbols, output in translations:
        print(f"  {symbols} -> {output}")
    return {
        "losses": losses,
        "exact": exact,
        "translations": translations,
        "predicted_shape": tuple(best.shape),
    }


if __name__ == "__main__":
    main()
