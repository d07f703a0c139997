"""A run's data and files: reading and splitting its corpus, claiming its directory, its history.

Everything here reads or writes the run directory (`RunDirectory`) and needs
no model: the trainer calls it before and after `fit`, and the tokenizer choice
reads the training sample through `sample_splits`.
"""

from __future__ import annotations

from keras_attention.data import progress
from keras_attention.data.corpus import CorpusError, load_corpus
from keras_attention.data.corpus_files import CorpusFiles, corpus_list
from keras_attention.data.corpus_sample import CorpusSample, sample_corpora
from keras_attention.data.corpus_scan import CorpusScan, FileScan, scan_corpora
from keras_attention.data.corpus_stream import HeldOut, corpus_pairs
from keras_attention.runs import run_state
from keras_attention.runs.backup_files import (
    read_json,
    write_bytes_atomically,
    write_json_atomically,
    write_text_atomically,
)
from keras_attention.runs.run_adaptation import RunAdaptation
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import write_vocabularies
from keras_attention.runs.train_config import AUTO, TrainConfig


def held_out(config: TrainConfig, sample: CorpusSample | None = None) -> HeldOut:
    """What `config` holds out of training: the held-out shares (a split given as a file
    takes no share of the corpora) and, given the run's `sample`, the sources of the
    splits given as files (`excluded_sources`)."""
    return HeldOut(
        validation_fraction=0.0 if config.validation_data else config.validation_fraction,
        test_fraction=0.0 if config.test_data else config.test_fraction,
        seed=config.seed,
        excluded_sources=tuple(excluded_sources(config, sample)) if sample else (),
    )


def read_held_out_file(spec: str, reverse: bool) -> list[tuple[str, str]]:
    """Every pair of a user-given validation or test corpus (`--validation-data`, `--test-data`).

    Raises:
        CorpusError: the spec or its files are wrong, or it holds no pair.
    """
    pairs = []
    for scan in scan_corpora(corpus_list(spec)):
        for sources, targets, _, _ in corpus_pairs(
            scan, HeldOut(0.0, 0.0), reverse
        ).as_numpy_iterator():
            pairs += [
                (s.decode("utf-8"), t.decode("utf-8"))
                for s, t in zip(sources, targets, strict=True)
            ]
    if not pairs:
        raise CorpusError(f"{spec!r} holds no sentence pair.")
    return pairs


def sample_splits(config: TrainConfig) -> CorpusSample:
    """Checks `config.data`'s files and reads the run's bounded sample of them.

    The corpora are checked first (`scan_corpora`: readable, UTF-8, aligned
    line counts), then sampled (`sample_corpora`, `config.sample_pairs`
    pairs): its training pairs give the vocabularies and the tokenizer
    choice; its held-out pairs the validation and test splits, unless
    `config.validation_data` / `config.test_data` name files, whose pairs are
    then the split (and whose sources the training stream and the sample
    leave out). Pairs are reversed (target -> source) with `config.reverse`.
    A run adapted from another (`config.adapt_from`) with `mix_original` adds
    that run's corpora, which only the training stream reads
    (`RunAdaptation.corpora`, `CorpusSample.add_streamed_corpora`).

    Raises:
        CorpusError: a corpus cannot be used (named in the message).
        ValueError: the sample holds no training pair, no validation pair, or
            no test pair while `test_fraction` is above 0 (raised before
            anything is written).
    """
    scans = scan_corpora(corpus_list(config.data))
    sample = sample_corpora(
        scans, held_out(config), config.sample_pairs, config.reverse, config.max_pairs
    )
    given = {}
    for split in ("validation", "test"):
        spec = getattr(config, f"{split}_data")
        if spec:
            given[split] = read_held_out_file(spec, config.reverse)
            setattr(sample, split, given[split])
    if given:
        excluded = {source for pairs in given.values() for source, _ in pairs}
        parts = [[p for p in part if p[0] not in excluded] for part in sample.train_by_corpus()]
        sample.train = [pair for part in parts for pair in part]
        sample.train_counts = [len(part) for part in parts]
    names = ", ".join(repr(scan.corpus.name) for scan in scans)
    if not sample.train:
        raise ValueError(f"The sample of {names} holds no training pair: {sample.describe()}")
    for split in ("validation", "test"):
        fraction = getattr(config, f"{split}_fraction")
        if not getattr(sample, split) and (split == "validation" or fraction > 0):
            raise ValueError(
                f"The sample of {names} holds no {split} pair: the hash of its sources put "
                f"none in the --{split}-fraction share ({fraction}). Use a larger corpus, a "
                f"larger --{split}-fraction, or --{split}-data FILE."
            )
    mixed_in = mixed_in_corpora(config)
    if mixed_in:
        sample.add_streamed_corpora(scan_corpora(mixed_in))
    return sample


def mixed_in_corpora(config: TrainConfig) -> list[CorpusFiles]:
    """The corpora an adapted run mixes in from its original run (`RunAdaptation.corpora`;
    none for other runs)."""
    if not (config.adapt_from and config.mix_original):
        return []
    return RunAdaptation(config.adapt_from).corpora(config)


def run_splits(config: TrainConfig, read_sample=None) -> CorpusSample:
    """The run's sample: recorded by the run being resumed (`recorded_sample`), else read.

    A resumed run whose corpus files are unchanged starts without reading
    them, at any corpus size; otherwise `read_sample()` (default:
    `sample_splits(config)`) checks and samples them.
    """
    recorded = recorded_sample(config)
    if recorded is not None:
        progress.logger.info(
            "Resuming with the run's recorded sample (%s); the corpus files are unchanged",
            recorded.describe(),
        )
        return recorded
    return read_sample() if read_sample else sample_splits(config)


def recorded_sample(config: TrainConfig) -> CorpusSample | None:
    """The sample `config.out` recorded when it started, if it can be resumed with it.

    It can when the run wrote its data summary (`RunDirectory.data_summary`, after its
    validation and test splits) and its vocabularies, and every corpus file
    `config.data` names is the one it scanned (same files, sizes and
    modification times). The sample then holds the recorded corpora, strides,
    counts and held-out splits, and no training pair (`recorded`).
    """
    run = RunDirectory(config.out)
    record = read_json(run.data_summary)
    if record is None or "train_counts" not in record or config.tokenizer == AUTO:
        return None
    if not all(path.is_file() for path in run.tokenizer_files(config.tokenizer)):
        return None
    try:
        corpora = corpus_list(config.data) + mixed_in_corpora(config)
    except (CorpusError, FileNotFoundError):
        return None
    if len(corpora) != len(record["corpora"]):
        return None
    scans = []
    for corpus, recorded in zip(corpora, record["corpora"], strict=True):
        files = tuple(FileScan(**values) for values in recorded["files"])
        if (
            (corpus.name, corpus.weight) != (recorded["name"], recorded["weight"])
            or tuple(f.path for f in files) != corpus.files
            or not all(f.unchanged() for f in files)
        ):
            return None
        scans.append(CorpusScan(corpus=corpus, files=files, lines=recorded["lines"]))
    return CorpusSample(
        train=[],
        validation=load_corpus(run.validation_split).pairs,
        test=load_corpus(run.test_split).pairs,
        scans=scans,
        strides=record["strides"],
        sample_strides=record["sample_strides"],
        sampled=record["sampled"],
        train_counts=record["train_counts"],
        recorded=True,
    )


def excluded_sources(config: TrainConfig, sample: CorpusSample) -> list[str]:
    """The sources of user-given validation and test files: the training stream skips them."""
    return sorted(
        {
            source
            for split in ("validation", "test")
            if getattr(config, f"{split}_data")
            for source, _ in getattr(sample, split)
        }
    )


def claim_run(config: TrainConfig, saved: TrainConfig | None = None) -> RunDirectory:
    """Opens `config.out` for this training (see `run_state.claim_run_directory`).

    Saves the config, then marks the run `training` by this process. `saved`:
    the run's saved config when the caller has read it.
    """
    run = RunDirectory(config.out)
    done = run_state.claim_run_directory(run, config, saved)
    run.path.mkdir(parents=True, exist_ok=True)
    write_text_atomically(run.config, config.to_json() + "\n")  # `status` may be reading it
    run_state.write_state(
        run, run_state.TRAINING, epochs_done=done, epochs_planned=config.maximum_epochs
    )
    return run


def write_run_files(run: RunDirectory, config: TrainConfig, sample: CorpusSample) -> None:
    """Writes the validation and test splits, the data summary and the vocabularies of a new run.

    A resumed run keeps its saved vocabularies (or subword models), so it
    continues with identical token ids.
    """
    run.write_pairs(run.validation_split, sample.validation)
    run.write_pairs(run.test_split, sample.test)
    write_json_atomically(run.data_summary, sample.summary())
    write_vocabularies(run, config, sample)


def keep_history(run: RunDirectory, epochs: int) -> None:
    """Cuts history.csv back to its header and first `epochs` complete rows.

    A run killed after an epoch's row was written but before its backup was
    (or in the middle of a row) resumes at the backup's epoch, so the rows
    after it would be repeated.
    """
    if not run.history.is_file():
        return
    text = run.history.read_bytes()
    kept = b"".join(text[: text.rfind(b"\n") + 1].splitlines(keepends=True)[: epochs + 1])
    if kept != text:
        write_bytes_atomically(run.history, kept)
