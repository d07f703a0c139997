"""`plot_runs`: every plot says which decoding made it; stale evaluations are flagged."""

import shutil

from keras_attention.plotting import run_plots
from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory

ROWS = [{"bucket": "1-5", "min_length": 1, "bleu": 40.0, "count": 3}]


def test_titles_name_the_decoding_and_flag_stale_evaluations(trained_digits_run, tmp_path,
                                                              monkeypatch):  # fmt: skip
    current, stale = RunDirectory(tmp_path / "current"), RunDirectory(tmp_path / "stale")
    for run in (current, stale):
        shutil.copytree(trained_digits_run, run.path)
        run.update_metrics(evaluation={
            "sentences": 3, "epochs": 3, "training_state": "completed",
            "model_sha256": run_state.model_fingerprint(run),
            "greedy": {"bleu": 40.0, "beam_width": 1, "bleu_by_length": ROWS},
            "beam": {"bleu": 41.0, "beam_width": 3, "bleu_by_length": ROWS},
        })  # fmt: skip
    stale.model.write_bytes(stale.model.read_bytes() + b"\0")  # the model changed since

    calls = []

    def recorder(name):
        def record(*args, title=None, decoding=None, **kwargs):
            calls.append((name, args, f"{title} ({decoding})" if decoding else title))
            return tmp_path / f"{name}-{len(calls)}.png"

        return record

    for name in ("plot_attention", "plot_bleu_by_length", "plot_training_curves"):
        monkeypatch.setattr(run_plots, name, recorder(name))
    run_plots.plot_runs([current.path, stale.path], sentences=["1 2 3"], out=tmp_path / "p")

    titles = {name: [t for n, _, t in calls if n == name] for name, _, _ in calls}
    (attention_title,) = titles["plot_attention"]
    assert attention_title.startswith("1 2 3 → ") and attention_title.endswith("(greedy decoding)")
    assert titles["plot_bleu_by_length"] == [
        "BLEU by source length (greedy decoding)",
        "BLEU by source length (beam search, width 3)",
    ]
    assert all("no decoding" in t for t in titles["plot_training_curves"])
    labels = [list(args[0]) for n, args, _ in calls if n == "plot_bleu_by_length"]
    assert labels == [["current", "stale (stale evaluation)"]] * 2
