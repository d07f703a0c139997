"""The OpenNMT-py side of the peer benchmark as plain data: configurations, plans, rows.

Pure Python (no TensorFlow, no PyTorch), so the tests check it without either
virtual environment:

- `RNN` and `TRANSFORMER`: the two OpenNMT-py models, as `onmt_train` options
  (the keys of OpenNMT-py 3.5.1's `onmt/opts.py`);
- `train_config`, `vocab_config`, `translate_options`: the YAML configurations
  of `onmt_build_vocab` and `onmt_train` and the options of its translator;
- `plan_steps` and `schedule`: how many steps fit the wall-clock budget at the
  measured step time, and the learning-rate schedule that ends with them;
- `step_seconds` and `parameter_count`: read from `onmt_train`'s log;
- `to_yaml`: the configurations written as YAML;
- `table_rows`: the rows of the results table from the results record.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence

ONMT_VERSION = "3.5.1"
"""The OpenNMT-py release the benchmark installs (`requirements.txt`)."""

SENTENCEPIECE = {"model_type": "unigram", "vocab_size": 8000, "character_coverage": 1.0}
"""One SentencePiece model for both languages (a joint vocabulary, shared embeddings)."""

THREADS = 2
"""Threads of every measured process: OpenNMT-py's and ours, training and decoding."""

BEAM_WIDTH = 4
DECODE_BATCH_SIZES = (1, 64)

# What the two models share: the data path, a joint vocabulary, no validation
# during training (our default validates once per 500 steps; OpenNMT-py's
# validation would only take time from the budget), CPU, a fixed seed.
COMMON = {
    "share_vocab": True,
    "share_embeddings": True,
    "src_vocab_size": 8192,
    "tgt_vocab_size": 8192,
    "world_size": 1,
    "gpu_ranks": [],
    "num_workers": 0,
    "seed": 1234,
    "report_every": 10,
    "keep_checkpoint": 2,
    "dropout": [0.1],
    "attention_dropout": [0.1],
    "max_grad_norm": 5.0,
    "optim": "adam",
}

RNN = {
    **COMMON,
    "model_type": "text",
    "encoder_type": "brnn",
    "decoder_type": "rnn",
    "rnn_type": "GRU",
    "global_attention": "general",
    "enc_layers": 1,
    "dec_layers": 1,
    "word_vec_size": 256,
    # brnn splits enc_hid_size over its two directions: 256 units each, as ours.
    "enc_hid_size": 512,
    "dec_hid_size": 512,
    "input_feed": 1,
    "batch_type": "sents",
    "batch_size": 64,
    "normalization": "sents",
    "learning_rate": 0.002,
    "label_smoothing": 0.0,
}
"""Bi-GRU encoder (256 per direction), GRU decoder (512), Luong `general` attention,
256-dim embeddings, batches of 64 sentences, Adam at our default's 0.002."""

TRANSFORMER = {
    **COMMON,
    "model_type": "text",
    "encoder_type": "transformer",
    "decoder_type": "transformer",
    "enc_layers": 3,
    "dec_layers": 3,
    "hidden_size": 256,
    "word_vec_size": 256,
    "heads": 4,
    "transformer_ff": 1024,
    "position_encoding": True,
    "batch_type": "tokens",
    "batch_size": 2048,
    "normalization": "tokens",
    "adam_beta2": 0.998,
    "label_smoothing": 0.1,
    "param_init": 0.0,
    "param_init_glorot": True,
}
"""3 + 3 layers, d_model 256, 4 heads, feed-forward 1,024, sinusoidal positions,
batches of 2,048 target tokens, Adam (β2 0.998) with the noam schedule, label smoothing 0.1."""

MODELS = {"rnn": RNN, "transformer": TRANSFORMER}
LABELS = {
    "ours": "keras-attention default (bi-GRU + Luong attention)",
    "rnn": f"OpenNMT-py {ONMT_VERSION} RNN (bi-GRU + general attention)",
    "transformer": f"OpenNMT-py {ONMT_VERSION} Transformer (3+3 layers, d 256)",
}

PEAK_LEARNING_RATE = 0.002
"""Both OpenNMT-py models peak at our default's learning rate."""


def plan_steps(budget_seconds: float, step_seconds: float, margin: float = 0.97) -> int:
    """The steps whose measured time fits `margin` of the budget (at least 1).

    >>> plan_steps(1200, 0.5)
    2328
    """
    if budget_seconds <= 0 or step_seconds <= 0:
        raise ValueError(
            "`budget_seconds` and `step_seconds` must be positive. "
            f"Received: budget_seconds={budget_seconds}, step_seconds={step_seconds}"
        )
    return max(1, math.floor(budget_seconds * margin / step_seconds))


def schedule(model: str, steps: int) -> dict:
    """The learning-rate options that end the schedule at `steps`.

    - `rnn`: Adam at 0.002, halved at 50%, 62.5%, 75% and 87.5% of the steps
      (OpenNMT-py's step decay, `start_decay_steps` / `decay_steps`), so the
      last eighth trains at 1/16 of the rate.
    - `transformer`: the noam schedule (linear warm-up over a tenth of the
      steps, at least 100 and at most 4,000, then decay with the inverse
      square root of the step), its `learning_rate` set so that the peak, at
      the end of the warm-up, is 0.002: noam's rate is
      `learning_rate * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)`.

    >>> schedule("rnn", 1000)["start_decay_steps"], schedule("rnn", 1000)["decay_steps"]
    (500, 125)
    >>> round(schedule("transformer", 2000)["learning_rate"], 4)
    0.4525
    """
    if steps < 1:
        raise ValueError(f"`steps` must be >= 1. Received: steps={steps}")
    if model == "rnn":
        return {
            "learning_rate": PEAK_LEARNING_RATE,
            "decay_method": "none",
            "learning_rate_decay": 0.5,
            "start_decay_steps": max(1, steps // 2),
            "decay_steps": max(1, steps // 8),
        }
    if model == "transformer":
        warmup = min(4000, max(100, steps // 10))
        d_model = TRANSFORMER["hidden_size"]
        return {
            "decay_method": "noam",
            "warmup_steps": warmup,
            "learning_rate": PEAK_LEARNING_RATE * math.sqrt(d_model) * math.sqrt(warmup),
        }
    raise ValueError(f"`model` must be one of {sorted(MODELS)}. Received: model={model!r}")


def vocab_config(work: str) -> dict:
    """`onmt_build_vocab`'s configuration: one vocabulary of the SentencePiece pieces."""
    return {
        "save_data": f"{work}/vocab",
        "src_vocab": f"{work}/vocab.shared",
        "share_vocab": True,
        "n_sample": -1,
        "overwrite": True,
        "data": data_section(work),
        **transform_options(work),
    }


def data_section(work: str) -> dict:
    return {
        "corpus_1": {
            "path_src": f"{work}/train.src",
            "path_tgt": f"{work}/train.tgt",
            "transforms": ["sentencepiece"],
        }
    }


def transform_options(work: str) -> dict:
    return {
        "src_subword_model": f"{work}/spm.model",
        "tgt_subword_model": f"{work}/spm.model",
    }


def train_config(model: str, work: str, steps: int) -> dict:
    """`onmt_train`'s configuration of `model` (`"rnn"` or `"transformer"`) for `steps`.

    The training pairs are `work/train.{src,tgt}` (raw text), cut into pieces
    on the fly by the `sentencepiece` transform with `work/spm.model`, the
    vocabulary `work/vocab.shared`. A checkpoint is saved every tenth of the
    steps and at the end (`work/<model>/model_step_N.pt`).
    """
    if model not in MODELS:
        raise ValueError(f"`model` must be one of {sorted(MODELS)}. Received: model={model!r}")
    return {
        "data": data_section(work),
        **transform_options(work),
        "src_vocab": f"{work}/vocab.shared",
        "save_model": f"{work}/{model}/model",
        "train_steps": steps,
        "save_checkpoint_steps": max(1, steps // 10),
        "valid_steps": steps + 1,
        **MODELS[model],
        **schedule(model, steps),
    }


def translate_options(model_path: str, work: str, batch_size: int, output: str) -> dict:
    """The translator's options: beam 4, OpenNMT-py's defaults otherwise (length penalty
    `avg`, `max_length_ratio` 1.25), raw text in and detokenized text out through the
    `sentencepiece` transform."""
    return {
        "model": model_path,
        "src": "-",
        "output": output,
        "beam_size": BEAM_WIDTH,
        "batch_size": batch_size,
        "batch_type": "sents",
        "gpu": -1,
        "transforms": ["sentencepiece"],
        **transform_options(work),
    }


def to_yaml(config: Mapping, indent: int = 0) -> str:
    """`config` as YAML: nested mappings indented, every other value a JSON scalar or list.

    JSON's scalars and flow lists are valid YAML, so `yaml.safe_load` reads the
    text back to `config`.

    >>> print(to_yaml({"data": {"c": {"path": "a b"}}, "steps": 3, "ranks": []}), end="")
    data:
      c:
        path: "a b"
    steps: 3
    ranks: []
    """
    lines = []
    for key, value in config.items():
        prefix = " " * indent + f"{key}:"
        if isinstance(value, Mapping):
            lines.append(prefix)
            lines.append(to_yaml(value, indent + 2).rstrip("\n"))
        else:
            lines.append(f"{prefix} {json.dumps(value)}")
    return "\n".join(lines) + "\n"


_STEP_LINE = re.compile(r"Step (\d+)(?:/\s*\d+)?;.*?;\s*(\d+) sec;")
_PARAMETERS = re.compile(r"\* number of parameters: (\d+)")


def step_times(log: str) -> list[tuple[int, float]]:
    """`(step, seconds since training started)` of every `Step N/M; ...; S sec;` line."""
    return [(int(m[1]), float(m[2])) for m in _STEP_LINE.finditer(log)]


def step_seconds(log: str, skip: int = 20) -> float:
    """Seconds per step after the first `skip` steps (data loading, first batches).

    Raises:
        ValueError: the log has no two step lines from `skip` on.
    """
    times = [(step, seconds) for step, seconds in step_times(log) if step >= skip]
    if len(times) < 2 or times[-1][0] == times[0][0]:
        raise ValueError(f"the log has fewer than two step lines from step {skip} on")
    (first_step, first), (last_step, last) = times[0], times[-1]
    return (last - first) / (last_step - first_step)


def parameter_count(log: str) -> int:
    """The `* number of parameters: N` that `onmt_train` prints.

    Raises:
        ValueError: the log has none.
    """
    match = _PARAMETERS.search(log)
    if not match:
        raise ValueError("the log has no '* number of parameters' line")
    return int(match[1])


def words(texts: Sequence[str]) -> int:
    """Target tokens, counted the same for every system: whitespace-separated words."""
    return sum(len(text.split()) for text in texts)


def decoding_speeds(translate: Callable, sample: Sequence[str]) -> dict:
    """Decoding speed at each of `DECODE_BATCH_SIZES`, the same way for every system.

    `translate(sentences, batch_size)` returns `(outputs, seconds)`; each batch size is
    warmed up on one batch, then timed over all of `sample`.
    """
    speeds = {}
    for batch_size in DECODE_BATCH_SIZES:
        translate(sample[:batch_size], batch_size)  # warm-up
        outputs, seconds = translate(sample, batch_size)
        speeds[f"batch_{batch_size}"] = {
            "sentences": len(sample),
            "seconds": seconds,
            "sentences_per_second": len(sample) / seconds,
            "target_words": words(outputs),
            "tokens_per_second": words(outputs) / seconds,
        }
    return speeds


def table_rows(results: Mapping) -> list[dict]:
    """One row per system of a `peers.json` record: name, parameters, training seconds and
    planned steps, BLEU and chrF, decoding speed at batch 1 and 64.

    Missing figures are `None`.
    """
    rows = []
    for name, system in results.get("systems", {}).items():
        speed = system.get("decoding", {})
        row = {
            "system": name,
            "label": LABELS.get(name, name),
            "parameters": system.get("parameters"),
            "training_seconds": system.get("training", {}).get("seconds"),
            "planned_steps": system.get("training", {}).get("planned_steps"),
            "bleu": system.get("evaluation", {}).get("bleu"),
            "chrf": system.get("evaluation", {}).get("chrf"),
        }
        for batch in DECODE_BATCH_SIZES:
            figures = speed.get(f"batch_{batch}", {})
            row[f"sentences_per_second_{batch}"] = figures.get("sentences_per_second")
            row[f"tokens_per_second_{batch}"] = figures.get("tokens_per_second")
        rows.append(row)
    return rows


def format_table(rows: Sequence[Mapping]) -> str:
    """The rows as a plain-text table (the script prints it at the end)."""

    def cell(value, spec):
        return "-" if value is None else format(value, spec)

    header = (
        f"{'system':<14}{'params':>12}{'train s':>9}{'planned':>8}{'BLEU':>7}{'chrF':>7}"
        f"{'tok/s b1':>10}{'tok/s b64':>11}"
    )
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['system']:<14}{cell(row['parameters'], ',d'):>12}"
            f"{cell(row['training_seconds'], '.0f'):>9}{cell(row['planned_steps'], ',d'):>8}"
            f"{cell(row['bleu'], '.2f'):>7}{cell(row['chrf'], '.2f'):>7}"
            f"{cell(row['tokens_per_second_1'], '.1f'):>10}"
            f"{cell(row['tokens_per_second_64'], '.1f'):>11}"
        )
    return "\n".join(lines)
