"""Train a Seq2Seq translator with `model.fit`, resumably, into a run directory."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

import keras
import tensorflow as tf

from keras_attention import distribution as dist
from keras_attention.data import DatasetOptions, make_dataset
from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.runs.run_adaptation import RunAdaptation
from keras_attention.runs.train_config import TrainConfig
from keras_attention.runs.training_run import TrainingRun
from keras_attention.training.budget_plan import BudgetPlan, BudgetPlanner
from keras_attention.training.check_trainable import check_trainable
from keras_attention.training.ema_weights import EmaWeights
from keras_attention.training.fused_adam import FusedAdam
from keras_attention.training.interrupt_on_signal import InterruptOnSignal, TrainingInterrupted
from keras_attention.training.keep_epoch_weights import KeepEpochWeights
from keras_attention.training.learning_rate import learning_rate
from keras_attention.training.masked_accuracy import MaskedAccuracy
from keras_attention.training.masked_loss import MaskedSparseCategoricalCrossentropy
from keras_attention.training.shared_backup import (
    FinishResumedEpoch,
    SharedBackupAndRestore,
    build_metrics,
)
from keras_attention.training.time_budget import TimeBudget

logger = logging.getLogger(__name__)


def build_model(
    config: TrainConfig,
    source_size: int,
    target_size: int,
    total_steps: int | None = None,
    schedule=None,
) -> Seq2Seq:
    """The `Seq2Seq` described by `config`, compiled for training.

    `total_steps` is the length of the learning-rate schedule (default:
    `config.maximum_epochs * config.steps_per_epoch`); `schedule`, a learning
    rate or schedule to use instead of `learning_rate(config, total_steps)`.
    """
    model = Seq2Seq(source_size, target_size, **config.model_arguments())
    compile_model(model, config, total_steps, schedule)
    return model


def compile_model(
    model: Seq2Seq, config: TrainConfig, total_steps: int | None = None, schedule=None
) -> None:
    model.compile(
        optimizer=FusedAdam(
            learning_rate=learning_rate(config, total_steps) if schedule is None else schedule,
            global_clipnorm=config.global_clipnorm,
            use_ema=config.ema,
            ema_momentum=config.ema_momentum,
        ),
        loss=MaskedSparseCategoricalCrossentropy(label_smoothing=config.label_smoothing),
        metrics=[MaskedAccuracy()],
        jit_compile=config.jit_compile,
    )


def train(
    config: TrainConfig,
    verbose: str | int = "auto",
    distribute: str | dist.Distribution | None = None,
    callbacks: list | None = None,
    on_choice: Callable[[str, object], None] | None = None,
) -> dict:
    """Trains (or resumes) the run described by `config`.

    Args:
        config: the `TrainConfig`; `batch_size` is the global batch (each
            replica gets its share).
        verbose: Keras `fit` verbosity.
        distribute: `None` or `"none"` (one device), `"mirrored"`,
            `"multi-worker"` (cluster from `TF_CONFIG`), or a `Distribution`
            from `make_distribution` (for `cpu_replicas` or explicit worker
            hosts). Created before any other TensorFlow op. Only the chief
            records anything in the run directory; the other workers of a
            multi-worker run write nothing there.
        callbacks: extra Keras callbacks, run after the trainer's own.
        on_choice: called as `on_choice("precision", PrecisionChoice)`, then
            `on_choice("tokenizer", TokenizerChoice)` as each `auto` setting
            is resolved, before anything is trained, and
            `on_choice("plan", BudgetPlan)` once `epochs="auto"` has planned
            the steps that fit the time budget (the command line prints
            them); not called for a run that already completed.

    SIGINT (Ctrl-C) and SIGTERM stop training at the next batch boundary
    (`InterruptOnSignal`): the run is left `interrupted` with the backup of
    its last completed epoch, and `TrainingInterrupted` is raised (its
    `epochs_done` set). Any other error leaves the run `failed` and is
    re-raised. Either way, re-running resumes.

    The run is opened first (`TrainingRun.open`): `config`'s `"auto"`
    precision, then its `"auto"` tokenizer and vocabulary sizes, are resolved
    into the run's own config (a new run decides from its machine, training
    split and budget; a resumed or completed one keeps its saved choices).

    Returns the training summary that is also written to metrics.json:
    `epochs_run` counts all epochs of the run, over resumes;
    `epochs_this_session` those of this call.

    A run that already completed with the same `config` (any `out`
    spelling) is left as it is: nothing is read or written, and its recorded
    summary is returned with `already_completed: True` and
    `epochs_this_session: 0`. So the same command can run twice.

    Raises:
        ValueError: bad corpus or options, or a directory that cannot take
            this run (see `run_state.claim_run_directory`), e.g. one that
            completed with other options.
        TrainingInterrupted: a signal stopped the training.
    """
    run = TrainingRun.open(config, on_choice)
    if run.completed:
        return run.recorded_summary()
    config = run.config
    distribution = dist.as_distribution(distribute)
    if config.batch_size % distribution.num_workers:
        raise ValueError(
            f"--batch-size {config.batch_size} does not split evenly over the "
            f"{distribution.num_workers} workers, which each read their own part of the "
            f"corpus: use a multiple of {distribution.num_workers}."
        )
    interrupt = InterruptOnSignal()
    try:
        with interrupt:
            # A signal before fit stops at once; the directory then holds no
            # epoch, which never blocks a retry. Until the claim succeeds the
            # directory is not ours, so nothing is recorded in it.
            # The chief resumes from the run's recorded sample (no corpus read);
            # other workers learn the vocabularies from the sample itself.
            sample = run.sample(recorded=distribution.is_chief)
            if distribution.is_chief:
                run.claim(sample)
            summary = _fit(
                run,
                sample,
                interrupt,
                verbose,
                distribution,
                callbacks,
                on_plan=(lambda plan: on_choice("plan", plan)) if on_choice else None,
            )
    except BaseException as error:
        interrupted = error if isinstance(error, TrainingInterrupted) else None
        if interrupted is None and interrupt.signum is not None:
            # The signal's exception raised inside a TensorFlow op (learning
            # the vocabularies, say) can come out as another error.
            interrupted = TrainingInterrupted(interrupt.signum)
        if interrupted is None:
            run.record_failure(error)
            raise
        interrupted.epochs_done, interrupted.steps_done = run.record_interruption(
            interrupted.signum
        )
        if interrupted is error:
            raise
        raise interrupted from None
    if run.claimed:  # the chief
        run.record_completion(summary)
    return summary


def _fit(
    run: TrainingRun,
    sample,
    interrupt,
    verbose,
    distribution,
    extra_callbacks,
    on_plan=None,
) -> dict:
    config = run.config
    initial_epoch, resumed_steps = run.position()
    done_before = run.epochs_done()
    dist.check_workers_agree(
        distribution,
        config=dist.comparable_config(config),
        data=dist.fingerprint({"corpora": sample.summary(), "validation": sample.validation}),
        resume_epoch=initial_epoch,
    )
    vectorizers = run.vectorizers(sample)
    source_vectorizer, target_vectorizer = vectorizers
    keras.utils.set_random_seed(config.training_seed)
    evaluation = DatasetOptions(
        batch_size=config.batch_size, shuffle=False, max_length=config.max_length
    )  # one pass, in data order
    train_options = dataclasses.replace(evaluation, max_length_ratio=config.max_length_ratio)
    if not sample.recorded:  # a resumed run's corpora passed when it started
        check_trainable(sample, source_vectorizer, target_vectorizer, train_options)
    steps_per_epoch = run.steps_per_epoch(sample)
    replicas = distribution.num_replicas

    def training_batches(part: tuple[int, int]) -> tf.data.Dataset:
        # Worker i of n reads its own lines and its share of each global batch.
        options = dataclasses.replace(train_options, batch_size=config.batch_size // part[1])
        start = initial_epoch * steps_per_epoch + resumed_steps
        batches = run.training_stream(sample, vectorizers, options, part, start)
        return dist.pad_to_replicas(batches, replicas // part[1])

    if distribution.is_multi_worker:
        train_data = dist.per_worker(distribution, training_batches)
    else:  # one pipeline; tf.distribute splits each batch over the replicas
        train_data = dist.shard_by_data(training_batches((0, 1)))
    validation_data = make_dataset(
        sample.validation, source_vectorizer, target_vectorizer, evaluation
    )
    # A known size lets Keras restart the validation pass every epoch without
    # running the iterator dry (and warning about it).
    validation_batches = sum(1 for _ in validation_data)
    validation_data = dist.shard_by_data(
        dist.pad_to_replicas(
            validation_data.apply(tf.data.experimental.assert_cardinality(validation_batches)),
            replicas,
        )
    )

    with distribution.strategy.scope():
        schedule = learning_rate(config, total_steps=config.maximum_epochs * steps_per_epoch)
        model = build_model(
            config,
            source_vectorizer.vocabulary_size,
            target_vectorizer.vocabulary_size,
            schedule=schedule,
        )
        model.build()
        build_metrics(model)  # their states are part of a mid-epoch backup
    if config.adapt_from and not (initial_epoch or resumed_steps):
        # A new adapted run starts from its original's weights; a resumed one from its backup.
        grown = RunAdaptation(config.adapt_from).initialize(model)
        logger.info("started from %s's weights; grown: %s", config.adapt_from, grown)
    dist.apply_keras_fixes(distribution, model)
    logger.info("Seq2Seq with %d parameters", model.count_params())
    if distribution.is_chief:
        run.keep_history(initial_epoch)
    best_so_far = run.best_validation_loss()
    budget = TimeBudget(
        config.time_budget_minutes * 60 if config.time_budget_minutes else 1e12,
        agree=dist.any_worker(distribution) if config.time_budget_minutes else None,
    )
    planner = None
    if config.plans_to_budget:

        def save_plan(plan: BudgetPlan) -> None:
            if distribution.is_chief:
                plan.save(run.directory.plan)
            logger.info("plan: %s", plan.describe())
            if on_plan:
                on_plan(plan)

        planner = BudgetPlanner(
            config.time_budget_minutes * 60,
            maximum_steps=config.maximum_epochs * steps_per_epoch,
            steps_per_epoch=steps_per_epoch,
            validation_batches=validation_batches,
            schedule_steps=getattr(schedule, "planned_steps", None),
            plan=BudgetPlan.load(run.directory.plan),
            start_step=initial_epoch * steps_per_epoch + resumed_steps,
            on_plan=save_plan,
            agree=dist.mean_over_workers(distribution),
        )

    def stopped_for_good() -> bool:
        return budget.exhausted or (planner is not None and planner.reached)

    # The chief writes the run directory; other workers a private copy.
    writes = dist.writable_run_directory(distribution, run.directory)
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=config.patience, restore_best_weights=True
    )
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(writes.model),
        monitor="val_loss",
        save_best_only=True,
        initial_value_threshold=best_so_far,
    )
    # After the callbacks whose epoch-end state it records (early stopping's
    # patience, the best val_loss) and whose files it must not run ahead of
    # (history.csv): weights, optimizer, random-generator states, those
    # callbacks' state and the position. The data stream was positioned at the
    # same place above.
    backup = SharedBackupAndRestore(
        run.directory.backup,
        is_chief=distribution.is_chief,
        expected_position=(initial_epoch, resumed_steps),
        callbacks={"early_stopping": early_stopping, "model_checkpoint": checkpoint},
    )
    if distribution.num_workers == 1:  # a signal saves the run where it is, mid-epoch
        interrupt.on_interrupt = backup.save_position
    # With --ema, validation and the callbacks between put_in and take_out see the moving
    # average; the backup sees the training weights (and the average in the optimizer).
    ema = EmaWeights(model.optimizer) if config.ema else None
    callbacks = [
        # First: a run resumed mid-epoch ends that epoch after its remaining steps.
        *(
            [FinishResumedEpoch(steps_per_epoch - resumed_steps, stopped_for_good)]
            if resumed_steps
            else []
        ),
        *([ema.put_in] if ema else []),
        checkpoint,
        early_stopping,
        *(
            [KeepEpochWeights(writes, config.keep_epoch_weights)]
            if config.keep_epoch_weights
            else []
        ),
        *([ema.take_out] if ema else []),
        keras.callbacks.TensorBoard(str(writes.logs)),
        keras.callbacks.CSVLogger(str(writes.history), append=True),
        budget,
        *([planner] if planner else []),
        *(extra_callbacks or []),
        backup,
        interrupt,  # last: the epoch's backup and logs are written before it stops fit
    ]
    started = time.monotonic()
    with dist.peer_failures(distribution, run.directory):
        history = model.fit(
            train_data,
            validation_data=validation_data,
            epochs=config.maximum_epochs,
            steps_per_epoch=steps_per_epoch,
            callbacks=callbacks,
            shuffle=False,  # the dataset shuffles itself
            verbose=verbose,
        )
    seconds = time.monotonic() - started
    if not writes.model.is_file():
        # The budget ran out before the first epoch ended: keep what we have.
        model.save(writes.model)
    epochs_run = history.epoch[-1] + 1 if history.epoch else done_before
    stopped_by = None
    if budget.exhausted:
        stopped_by = "time budget"
    elif early_stopping.stopped_epoch > 0:
        stopped_by = "early stopping"
    return {
        "completed": True,
        "epochs_run": epochs_run,
        "epochs_this_session": len(history.epoch),
        "seconds": round(seconds, 1),
        "stopped_by": stopped_by,
        "stopped_by_time_budget": budget.exhausted,
        "parameters": model.count_params(),
        "final": {k: float(v[-1]) for k, v in history.history.items()},
        # Over all epochs, including those before a resume (history.csv).
        "best_val_loss": run.best_validation_loss(writes),
        "distribution": distribution.describe(),
        "plan": None if planner is None or planner.plan is None else planner.plan.describe(),
    }
