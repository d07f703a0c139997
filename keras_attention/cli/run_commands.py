"""The handlers of `keras-attention train`, `adapt`, `status`, `evaluate`, `average` and `plot`.

Each reads its parsed arguments and calls the library; TensorFlow is imported
inside them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from keras_attention import distribution
from keras_attention.runs.train_config import TrainConfig


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})


ADAPT_OVERRIDES = (
    "learning_rate",
    "steps_per_epoch",
    "batch_size",
    "precision",
    "label_smoothing",
    "ema",
    "ema_momentum",
    "keep_epoch_weights",
)
"""The `TrainConfig` fields `keras-attention adapt` changes when their flags are given
(else they are the original run's, or for the learning rate its share of it)."""


def run_train(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    # The strategy first: it must exist before any other TensorFlow op.
    strategy = distribution.distribution_from_args(args)
    return _train(config, strategy, "train")


def adapted_config_from_args(adaptation, args: argparse.Namespace) -> TrainConfig:
    """The adapted run's `TrainConfig`: `adaptation.adapted_config` with `adapt`'s
    arguments, each of `ADAPT_OVERRIDES` the original run's unless its flag is given."""
    changes = {name: getattr(args, name) for name in ADAPT_OVERRIDES}
    return adaptation.adapted_config(
        args.data,
        args.out,
        args.mix_original,
        args.new_words,
        time_budget_minutes=args.time_budget_minutes,
        epochs=args.epochs,
        **{name: value for name, value in changes.items() if value is not None},
    )


def run_adapt(args: argparse.Namespace) -> int:
    from keras_attention.runs.run_adaptation import RunAdaptation

    adaptation = RunAdaptation(args.run_dir)
    warn_if_partial(args.run_dir, "adapt")
    config = adapted_config_from_args(adaptation, args)
    mixed = f", with {config.mix_original:g} of its pairs from {args.run_dir}'s corpora"
    print(
        f"Adapting {args.run_dir} to {', '.join(config.data)}{mixed if config.mix_original else ''}",
        flush=True,
    )
    print(f"Vocabularies: {adaptation.describe_vocabularies(config)}", flush=True)
    status = _train(config, None, "adapt")
    if status == 0 and config.tokenizer == "words":
        print(f"Vocabularies: {adaptation.describe_vocabularies(config)}")
    return status


def _train(config: TrainConfig, strategy, command: str) -> int:
    """Trains `config` (`train`), printing the choices, an interruption or the outcome."""
    from keras_attention.training.interrupt_on_signal import TrainingInterrupted
    from keras_attention.training.trainer import train

    def print_choice(name: str, choice) -> None:
        if name == "plan" and sys.stdout.isatty():
            print()  # the plan is made while Keras' progress bar is on the line
        print(f"{name.capitalize()}: {choice.describe()}", flush=True)

    try:
        summary = train(config, distribute=strategy, on_choice=print_choice)
    except TrainingInterrupted as interrupted:
        if sys.stdout.isatty():
            print(file=sys.stdout)  # end Keras' progress bar line
        if interrupted.steps_done:
            when = f"at step {interrupted.steps_done} of epoch {interrupted.epochs_done + 1}"
        elif interrupted.epochs_done:
            when = f"after epoch {interrupted.epochs_done}"
        else:
            when = "before the first epoch ended"
        print(
            f"keras-attention {command}: interrupted {when}; run the same command to resume",
            file=sys.stderr,
        )
        return interrupted.exit_code
    if summary.get("already_completed"):
        epochs = summary["epochs_run"]
        print(
            f"keras-attention {command}: {config.out} already completed ({epochs} "
            f"epoch{'s' if epochs != 1 else ''}); nothing to do"
        )
        return 0
    best = summary["best_val_loss"]
    print(
        f"Trained {summary['epochs_run']} epochs in {summary['seconds']:.0f} s; "
        f"best val_loss {'n/a' if best is None else f'{best:.3f}'}; run directory: {config.out}"
    )
    return 0


def run_status(args: argparse.Namespace) -> int:
    from keras_attention.runs import run_state

    status = run_state.run_status(args.run_dir)
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
    else:
        print(run_state.format_status(status))
    return 0


def warn_if_partial(run_dir: str, command: str) -> None:
    """Says on stderr when RUN_DIR's training has not completed (the model is partial)."""
    from keras_attention.runs import run_state

    status = run_state.run_status(run_dir)
    if status["state"] != run_state.COMPLETED:
        resume = (
            " (run the same train command to finish it)" if status["state"] != "training" else ""
        )
        print(
            f"keras-attention {command}: warning: {run_dir} is {status['state']} after epoch "
            f"{status['epochs_done']} of {status['epochs_planned']}; using the partial "
            f"model{resume}",
            file=sys.stderr,
        )


def run_evaluate(args: argparse.Namespace) -> int:
    from keras_attention.evaluation.run_evaluation import evaluate_run
    from keras_attention_client.wire.decoding_options import DecodingOptions

    for run_dir in args.run_dir:
        warn_if_partial(run_dir, "evaluate")
    evaluation = evaluate_run(
        args.run_dir,
        DecodingOptions(beam_width=args.beam_width, length_penalty=args.length_penalty),
        batch_size=args.batch_size,
        max_sentences=args.max_sentences,
        progress=True,
        replace_unknown=args.replace_unknown,
        test_data=args.test_data,
    )
    of = f" of {args.test_data}" if args.test_data else ""
    if len(args.run_dir) > 1:
        print(f"The ensemble of {len(args.run_dir)} runs: {', '.join(args.run_dir)}")
    print(f"{evaluation['sentences']} test sentences{of} (all references of each source)")
    for name in ("greedy", "beam"):
        if name in evaluation:
            result = evaluation[name]
            print(f"{name:>6}: BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}")
            for bucket in result["bleu_by_length"]:
                print(
                    f"        source {bucket['bucket']:>6} words: BLEU {bucket['bleu']:6.2f} "
                    f"({bucket['count']} sentences)"
                )
    signatures = evaluation["greedy"]
    print(f"sacreBLEU signature: {signatures['bleu_signature']}")
    print(f"chrF signature:      {signatures['chrf_signature']}")
    return 0


def run_average(args: argparse.Namespace) -> int:
    from keras_attention.training.run_averaging import average_run

    warn_if_partial(args.run_dir, "average")
    averaged = average_run(args.run_dir, args.last, out=args.out)
    epochs = averaged.read_metrics()["averaged"]["epochs"]
    print(
        f"Averaged the weights of epochs {', '.join(map(str, epochs))} of {args.run_dir}; "
        f"run directory: {averaged.path}"
    )
    return 0


def run_plot(args: argparse.Namespace) -> int:
    from keras_attention.plotting.run_plots import plot_runs

    for path in plot_runs(args.run_dirs, sentences=args.sentence, out=args.out):
        print(path)
    return 0
