"""Image captioning with `keras_attention.seq2seq`: a CNN encoder, an attentive GRU decoder.

The data is generated, no download: RGB images of two coloured shapes (red, green,
blue, yellow; circle, square, triangle) on a grid of cells, each captioned as
"a red circle left of a blue square". The caption names the object whose colour
comes first in (red, green, blue, yellow) first, then where it lies from the other:
"left of" / "right of" when their columns differ, else "above" / "below".

The model follows "Show, Attend and Tell" (Xu et al., 2015) with TFA's building
blocks, from `keras_attention.seq2seq`:

1. A small CNN turns the image into a `(grid, grid, C)` feature map, one feature cell
   per grid cell; each cell gains a one-hot of its row and column and the
   `grid * grid` cells are the attention memory (`BahdanauAttention.setup_memory`).
2. The decoder is `AttentionWrapper(GRUCell, BahdanauAttention)`, its GRU state
   starting from the mean feature cell; `BasicDecoder` with a `TrainingSampler`
   runs it with teacher forcing inside a subclassed `keras.Model`, compiled with
   `SequenceLoss` (per-token sample weights mask the padding) and trained with
   `model.fit`.
3. Captions come from greedy decoding (`GreedyEmbeddingSampler`) and from
   `BeamSearchDecoder` (beam 3) through `dynamic_decode`, over a `tile_batch`-ed
   memory and state.
4. Soft attention is the softmax over the cells. Hard attention uses a second
   mechanism built with `probability_fn="hardmax"` (`keras_attention.seq2seq.hardmax`)
   sharing the soft one's layers and GRU cell: each step reads the one cell of
   largest score. The soft model is first measured decoding with it as it is ("hard
   at inference"), then fine-tuned with it for `--hard-epochs` (the scoring weights
   frozen: hardmax passes them no gradient) and measured again ("hard"). This is
   deterministic hard attention; "Show, Attend and Tell" samples the cell and trains
   the scores with REINFORCE, which this example does not.

Measures on held-out scenes: the share of captions that match the reference exactly,
and the share of the colour words whose attention peak (the step that emits the word)
lies on the grid cell of the object of that colour. Heatmaps over the image, and the
step-by-cell alignment drawn with `keras_attention.plotting.plot_attention`, are
written as PNG files with `--out`.

    python examples/captioning.py --out runs/captioning

With `--export BASE` the trained captioner is also written as a TF Serving SavedModel
version under BASE (PNG bytes in, beam-search captions, scores and attention out; see
`examples/captioning_serving.py` and docs/captioning.md, "Export and serve").

The figures of the defaults, per seed (`python benchmarks/captioning.py --seeds 0 1`),
are in `benchmarks/results/captioning.json`, shown on the docs page "Image captioning"
(docs/captioning.md).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_attention import seq2seq

COLOURS = {"red": (1.0, 0.1, 0.1), "green": (0.1, 0.8, 0.1), "blue": (0.15, 0.3, 1.0)}
COLOURS["yellow"] = (1.0, 0.9, 0.1)
SHAPES = ("circle", "square", "triangle")
WORDS = ("a", *COLOURS, *SHAPES, "left", "right", "of", "above", "below")
VOCABULARY = ("<pad>", "<start>", "<end>", *WORDS)
PAD, START, END = 0, 1, 2
MAX_WORDS = 8  # "a red circle left of a blue square"
CELL = 8  # pixels per grid cell: the encoder's three 2x poolings map one to a feature cell
TOKEN_IDS = {word: i for i, word in enumerate(VOCABULARY)}


def _draw(image: np.ndarray, shape: str, box: tuple[int, int, int], colour) -> None:
    """Paints `shape` filling the square `box` = (top, left, side) of `image`."""
    top, left, side = box
    y, x = np.mgrid[0:side, 0:side] + 0.5
    if shape == "square":
        inside = np.ones((side, side), bool)
    elif shape == "circle":
        inside = (y - side / 2) ** 2 + (x - side / 2) ** 2 <= (side / 2) ** 2
    else:  # a triangle pointing up
        inside = np.abs(x - side / 2) <= y / 2
    image[top : top + side, left : left + side][inside] = colour


def caption_words(colours, shapes, cells, grid: int) -> list[str]:
    """The caption of two objects (colours, shapes, cell indices `row * grid + col`)."""
    first, second = sorted((0, 1), key=lambda i: list(COLOURS).index(colours[i]))
    (row1, col1), (row2, col2) = divmod(cells[first], grid), divmod(cells[second], grid)
    if col1 != col2:
        relation = ["left", "of"] if col1 < col2 else ["right", "of"]
    else:
        relation = ["above"] if row1 < row2 else ["below"]
    return ["a", colours[first], shapes[first], *relation, "a", colours[second], shapes[second]]


def make_scenes(count: int, grid: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """`count` scenes of two shapes in distinct cells of a `grid x grid` board.

    Returns a dict of `images` `(count, grid * CELL, grid * CELL, 3)` float32 in [0, 1],
    `tokens` `(count, MAX_WORDS + 1)` (the caption's ids, then `<end>`, then padding),
    `object_cells` `(count, 2)` (the cell index `row * grid + col` of the first- and
    second-named object) and `colours` `(count, 2)` (their colour words).
    """
    rng = np.random.default_rng(seed)
    cell = CELL
    size = grid * cell
    images = rng.uniform(0.0, 0.08, size=(count, size, size, 3)).astype("float32")
    tokens = np.full((count, MAX_WORDS + 1), PAD, "int32")
    object_cells = np.zeros((count, 2), "int32")
    colours_named = np.empty((count, 2), object)
    for i in range(count):
        cells = rng.choice(grid * grid, 2, replace=False)
        colours = list(rng.choice(list(COLOURS), 2, replace=False))
        shapes = list(rng.choice(SHAPES, 2))
        for c, colour, shape in zip(cells, colours, shapes, strict=True):
            side = int(rng.integers(cell - 3, cell))  # 5..7 pixels in an 8-pixel cell
            top, left = divmod(int(c), grid)
            top = top * cell + int(rng.integers(0, cell - side + 1))
            left = left * cell + int(rng.integers(0, cell - side + 1))
            _draw(images[i], shape, (top, left, side), COLOURS[colour])
        words = caption_words(colours, shapes, [int(c) for c in cells], grid)
        ids = [TOKEN_IDS[w] for w in words] + [END]
        tokens[i, : len(ids)] = ids
        named = [colours.index(words[1]), colours.index(words[-2])]
        object_cells[i] = cells[named]
        colours_named[i] = [colours[j] for j in named]
    return {
        "images": images,
        "tokens": tokens,
        "object_cells": object_cells,
        "colours": colours_named,
    }


def teacher_forcing(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(decoder_inputs, targets, weights)`: `<start>` + caption, caption + `<end>`, and
    1 on every target token up to and including `<end>`."""
    inputs = np.concatenate([np.full((len(tokens), 1), START, "int32"), tokens[:, :-1]], 1)
    inputs[inputs == END] = PAD
    return inputs, tokens, (tokens != PAD).astype("float32")


def words_of(ids) -> list[str]:
    """The words of a sequence of ids, up to the first `<end>`."""
    words = []
    for i in np.asarray(ids).tolist():
        if i == END:
            break
        words.append(VOCABULARY[i])
    return words


class Captioner(keras.Model):
    """CNN encoder, `AttentionWrapper(GRUCell, BahdanauAttention)` decoder.

    Soft attention until `use_hard_attention()`; `greedy` decodes with the attention
    in use, `beam_search` always with the soft one.

    Args:
        grid: Cells per side of the scenes (images of `grid * CELL` pixels a side).
        filters: Filters of the last two convolutions (the first has half).
        units: Depth of the GRU state, the attention and the attention layer.
        embedding_dim: Depth of the word embeddings.
        **kwargs: `keras.Model` keyword arguments.

    Call arguments:
        inputs: `(images, decoder_inputs)`: images `(batch, size, size, 3)` and the
            teacher-forced ids `(batch, time)`.

    Returns:
        The logits `(batch, time, vocabulary)`.
    """

    def __init__(self, grid=4, filters=32, units=64, embedding_dim=32, **kwargs):
        super().__init__(**kwargs)
        self.grid = grid
        self.image_size = grid * CELL  # pixels a side
        self.convolutions = [
            keras.layers.Conv2D(f, 3, padding="same", activation="relu")
            for f in (filters // 2, filters, filters)
        ]
        self.pool = keras.layers.MaxPooling2D(2)
        self.embedding = keras.layers.Embedding(len(VOCABULARY), embedding_dim)
        self.initial_state_layer = keras.layers.Dense(units, activation="tanh")
        self.mechanism = seq2seq.BahdanauAttention(units)
        # TFA's attention_layer_size=units, made here to be shared with the hard cell.
        attention_layer = keras.layers.Dense(units, use_bias=False, name="attention_layer")
        self.cell = seq2seq.AttentionWrapper(
            keras.layers.GRUCell(units),
            self.mechanism,
            attention_layer=attention_layer,
            alignment_history=True,
        )
        self.output_layer = keras.layers.Dense(len(VOCABULARY))
        self.hard = False  # train and decode greedily with hard_cell
        # Hard attention: the same GRU cell, query, memory and attention layers, with a
        # mechanism whose probability_fn is hardmax (use_hard_attention copies the soft
        # mechanism's attention_v into it).
        self.hard_mechanism = seq2seq.BahdanauAttention(
            units,
            probability_fn="hardmax",
            query_layer=self.mechanism.query_layer,
            memory_layer=self.mechanism.memory_layer,
            trainable=False,
        )
        self.hard_cell = seq2seq.AttentionWrapper(
            self.cell.cell,
            self.hard_mechanism,
            attention_layer=attention_layer,
            alignment_history=True,
        )

    def build(self, input_shape):
        """The layers build at the first call (the attention's at the memory's binding)."""

    def encode(self, images):
        """The memory `(batch, grid * grid, C + 2 * grid)`: one vector per grid cell."""
        x = images
        for convolution in self.convolutions:
            x = self.pool(convolution(x))
        # Three 2x poolings: an 8-pixel grid cell becomes one feature cell.
        cells = tf.reshape(x, (-1, self.grid * self.grid, x.shape[-1]))
        rows, cols = np.divmod(np.arange(self.grid * self.grid), self.grid)
        position = np.concatenate([np.eye(self.grid)[rows], np.eye(self.grid)[cols]], 1)
        position = tf.tile(tf.constant(position[None], cells.dtype), [tf.shape(cells)[0], 1, 1])
        return tf.concat([cells, position], -1)

    def initial_state(self, cell, memory, batch_size):
        """The wrapper's zero state with the GRU state from the mean feature cell."""
        state = cell.get_initial_state(batch_size=batch_size, dtype=memory.dtype)
        h = self.initial_state_layer(tf.reduce_mean(memory, 1))
        return state.clone(cell_state=tf.nest.pack_sequence_as(state.cell_state, [h]))

    def call(self, inputs, training=None):
        images, decoder_inputs = inputs
        memory = self.encode(images)
        cell = self.hard_cell if self.hard else self.cell
        (self.hard_mechanism if self.hard else self.mechanism).setup_memory(memory)
        state = self.initial_state(cell, memory, tf.shape(memory)[0])
        decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), self.output_layer)
        outputs, _, _ = decoder(
            self.embedding(decoder_inputs), initial_state=state, training=training
        )
        return outputs.rnn_output

    def use_hard_attention(self):
        """From now on `call` and `greedy` read one cell per step: the hard mechanism
        takes the soft one's `attention_v`, and the scoring weights stop training
        (`hardmax` passes no gradient to the scores)."""
        depth = self.convolutions[-1].filters + 2 * self.grid
        self.hard_mechanism.setup_memory(tf.zeros((1, self.grid * self.grid, depth)))  # builds it
        self.hard_mechanism.attention_v.assign(self.mechanism.attention_v)
        self.mechanism.trainable = False
        self.hard = True

    def greedy(self, images, max_steps=MAX_WORDS + 1):
        """Greedy captions: `(ids (batch, steps), alignments (batch, steps, cells))`."""
        cell = self.hard_cell if self.hard else self.cell
        memory = self.encode(images)
        (self.hard_mechanism if self.hard else self.mechanism).setup_memory(memory)
        decoder = seq2seq.BasicDecoder(
            cell,
            seq2seq.GreedyEmbeddingSampler(self.embedding),
            self.output_layer,
            maximum_iterations=max_steps,
        )
        batch = tf.shape(memory)[0]
        outputs, state, _ = decoder(
            None,
            initial_state=self.initial_state(cell, memory, batch),
            start_tokens=tf.fill([batch], START),
            end_token=END,
        )
        alignments = tf.transpose(state.alignment_history.stack(), [1, 0, 2])
        return outputs.sample_id.numpy(), alignments.numpy()

    def beam_search(self, images, beam_width=3, max_steps=MAX_WORDS + 1):
        """The best beam's ids `(batch, steps)` of `BeamSearchDecoder` via `dynamic_decode`."""
        return self.best_beam(images, beam_width, max_steps)[0].numpy()

    def best_beam(self, images, beam_width=3, max_steps=MAX_WORDS + 1):
        """The best beam of `BeamSearchDecoder` via `dynamic_decode`, as tensors (eager or in
        a `tf.function`): ids `(batch, steps)`, summed log-probability `(batch,)` and the
        alignments `(batch, steps, cells)` of that beam (the search reorders the alignment
        history along each beam's ancestry)."""
        memory = self.encode(images)
        batch = tf.shape(memory)[0]
        tiled = seq2seq.tile_batch(memory, beam_width)
        self.mechanism.setup_memory(tiled)
        decoder = seq2seq.BeamSearchDecoder(
            self.cell, beam_width, embedding_fn=self.embedding, output_layer=self.output_layer
        )
        outputs, state, _ = seq2seq.dynamic_decode(
            decoder,
            maximum_iterations=max_steps,
            decoder_init_input=None,
            decoder_init_kwargs={
                "start_tokens": tf.fill([batch], START),
                "end_token": END,
                "initial_state": self.initial_state(self.cell, tiled, batch * beam_width),
            },
        )
        history = state.cell_state.alignment_history  # (steps, batch * beam, cells)
        if isinstance(history, tf.TensorArray):  # eager; a tf.function gets the stacked tensor
            history = history.stack()
        cells = self.grid * self.grid
        history = tf.reshape(history, [tf.shape(history)[0], batch, beam_width, cells])
        alignments = tf.transpose(history[:, :, 0], [1, 0, 2])
        return outputs.predicted_ids[:, :, 0], state.log_probs[:, 0], alignments


def colour_attention(ids, alignments, scenes) -> float:
    """The share of the colour words in `ids` whose alignment peak (at the step that
    emits the word) is the cell of the object of that colour (a colour that is not in
    the scene counts as a miss)."""
    hits = total = 0
    for row, (caption, steps) in enumerate(zip(ids, alignments, strict=True)):
        named = dict(zip(scenes["colours"][row], scenes["object_cells"][row], strict=True))
        for step, token in enumerate(caption.tolist()):
            if token == END:
                break
            if VOCABULARY[token] in COLOURS:
                total += 1
                hits += int(named.get(VOCABULARY[token], -1) == int(np.argmax(steps[step])))
    return hits / max(total, 1)


def exact_match(ids, scenes) -> float:
    references = [words_of(t) for t in scenes["tokens"]]
    return float(np.mean([words_of(c) == r for c, r in zip(ids, references, strict=True)]))


def plot_heatmaps(image, ids, alignments, grid: int, path: Path) -> list[Path]:
    """Writes the caption's attention over the image (one panel per word) to `path`,
    and the step-by-cell alignment (`plot_attention`) beside it; returns both paths."""
    from matplotlib.figure import Figure

    from keras_attention.plotting import plot_attention

    words = words_of(ids)
    weights = alignments[: len(words)]
    figure = Figure(figsize=(1.6 * (len(words) + 1), 2.0), dpi=100, layout="constrained")
    axes = figure.subplots(1, len(words) + 1)
    axes[0].imshow(image)
    axes[0].set_title("image", fontsize="small")
    for ax, word, weight in zip(axes[1:], words, weights, strict=True):
        ax.imshow(image)
        heat = np.kron(weight.reshape(grid, grid), np.ones((CELL, CELL)))
        ax.imshow(heat, cmap="magma", alpha=0.6, vmin=0.0, vmax=1.0)
        ax.set_title(word, fontsize="small")
    for ax in axes:
        ax.set_axis_off()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    cells = [f"r{r}c{c}" for r, c in (divmod(k, grid) for k in range(grid * grid))]
    matrix = plot_attention(
        weights, cells, words, path.with_name(path.stem + "_matrix.png"), title=" ".join(words)
    )
    return [path, matrix]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=6000, help="training scenes")
    parser.add_argument("--held-out", type=int, default=500, help="held-out scenes")
    parser.add_argument("--epochs", type=int, default=12, help="epochs of soft attention")
    parser.add_argument(
        "--hard-epochs", type=int, default=3, help="epochs of fine-tuning with hard attention"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--grid", type=int, default=4, help="cells per side")
    parser.add_argument("--filters", type=int, default=32)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.003)
    parser.add_argument("--beam-width", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="folder for the heatmap PNG files (default: none)")
    parser.add_argument(
        "--export",
        metavar="BASE",
        help="write the trained (soft attention) captioner as a SavedModel version under BASE "
        "(TF Serving's --model_base_path): PNG bytes in, beam-search captions out",
    )
    return parser.parse_args(argv)


def _fit(model, scenes, args, epochs) -> list[float]:
    """Compiles (again: a switch to hard attention needs a new train function) and fits."""
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate, global_clipnorm=5.0),
        loss=seq2seq.SequenceLoss(),
    )
    inputs, targets, weights = teacher_forcing(scenes["tokens"])
    history = model.fit(
        (scenes["images"], inputs),
        targets,
        sample_weight=weights,
        batch_size=args.batch_size,
        epochs=epochs,
        verbose=2,
    )
    return [float(x) for x in history.history["loss"]]


def serving_module():
    """`examples/captioning_serving.py` (the export and the client call), imported by path."""
    path = Path(__file__).with_name("captioning_serving.py")
    spec = importlib.util.spec_from_file_location("captioning_serving", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export(model, base, beam_width: int = 3, warmup_images=()) -> Path:
    """Exports `model` (soft attention, beam search) as the next version under `base`.

    Args:
        model: a trained `Captioner`.
        base: the model's base directory.
        beam_width: the beam of the exported `BeamSearchDecoder`.
        warmup_images: float images `(n, size, size, 3)` for the warmup request.

    Returns:
        The version directory written (`base/<version>`).
    """
    serving = serving_module()
    settings = {
        "vocabulary": VOCABULARY,
        "end": END,
        "beam_width": beam_width,
        "max_steps": MAX_WORDS + 1,
    }
    warmup = serving.png_bytes(warmup_images) if len(warmup_images) else ()
    return serving.export_captioner(model, base, settings, warmup)


def main(argv: list[str] | None = None) -> dict:
    """Trains on generated scenes and returns the held-out measures.

    First soft attention is trained (`--epochs`) and measured: greedy and beam
    captions. Then the model switches to hard attention (`hardmax`), is measured as it
    is (`hard_at_inference`), fine-tuned `--hard-epochs` with hard attention (the
    scoring weights frozen: `hardmax` passes no gradient to them) and measured again
    (`hard`).

    Returns a dict of `exact_match` (`greedy`, `beam`, `hard_at_inference`, `hard`:
    shares of held-out captions equal to the reference), `colour_attention` (`soft`,
    `hard_at_inference`, `hard`: shares of colour words whose attention peak is on
    their object's cell), `losses` (`soft`, `hard`: per epoch), `plots` (the PNG
    files written) and `export` (the version directory `--export` wrote, or None).
    """
    args = parse_args(argv)
    if args.grid < 2:
        raise ValueError(f"The grid needs at least 2 cells per side. Received: grid={args.grid}")
    keras.utils.set_random_seed(args.seed)
    train = make_scenes(args.train, args.grid, seed=2 * args.seed)
    held_out = make_scenes(args.held_out, args.grid, seed=2 * args.seed + 1)
    images = held_out["images"]
    model = Captioner(grid=args.grid, filters=args.filters, units=args.units)
    model((train["images"][:1], teacher_forcing(train["tokens"][:1])[0]))  # builds the layers
    losses = {"soft": _fit(model, train, args, args.epochs)}
    decoded = {"soft": model.greedy(images)}
    beam_ids = model.beam_search(images, beam_width=args.beam_width)
    exported = export(model, args.export, args.beam_width, images[:2]) if args.export else None
    model.use_hard_attention()
    decoded["hard_at_inference"] = model.greedy(images)
    losses["hard"] = _fit(model, train, args, args.hard_epochs) if args.hard_epochs else []
    decoded["hard"] = model.greedy(images)
    results = {
        "exact_match": {
            "greedy": exact_match(decoded["soft"][0], held_out),
            "beam": exact_match(beam_ids, held_out),
            "hard_at_inference": exact_match(decoded["hard_at_inference"][0], held_out),
            "hard": exact_match(decoded["hard"][0], held_out),
        },
        "colour_attention": {kind: colour_attention(*decoded[kind], held_out) for kind in decoded},
        "losses": losses,
        "plots": [],
        "export": exported,
    }
    if args.out:
        for kind in ("soft", "hard"):
            ids, alignments = decoded[kind]
            path = Path(args.out) / f"attention_{kind}.png"
            results["plots"] += plot_heatmaps(images[0], ids[0], alignments[0], args.grid, path)
    for i in range(3):
        print(f"reference: {' '.join(words_of(held_out['tokens'][i]))}")
        print(f"  greedy: {' '.join(words_of(decoded['soft'][0][i]))}")
        print(f"  beam:   {' '.join(words_of(beam_ids[i]))}")
    match, attention = results["exact_match"], results["colour_attention"]
    print(
        f"held-out exact match: greedy {match['greedy']:.1%}, beam {match['beam']:.1%}, "
        f"hard at inference {match['hard_at_inference']:.1%}, hard fine-tuned "
        f"{match['hard']:.1%}; colour words attending to their object: soft "
        f"{attention['soft']:.1%}, hard at inference {attention['hard_at_inference']:.1%}, "
        f"hard fine-tuned {attention['hard']:.1%}"
    )
    if exported is not None:
        print(f"exported: {exported} (serving_default: PNG bytes in, captions out)")
    return results


if __name__ == "__main__":
    main()
