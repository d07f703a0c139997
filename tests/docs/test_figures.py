"""Measured figures come from benchmarks/results/*.json: the README's are current, every
docs page's figure calls resolve, and a stale or unreadable figure fails."""

import json
import re
import shutil

import pytest
from helpers.docs_site import REPOSITORY, load_docs_module

figures = load_docs_module("docs/hooks/figures.py")
generator = load_docs_module("docs/gen_readme_figures.py")
README = REPOSITORY / "README.md"
PAGES = sorted((REPOSITORY / "docs").rglob("*.md"))


def results(name):
    return json.loads((REPOSITORY / "benchmarks" / "results" / f"{name}.json").read_text())


def test_committed_readme_figures_are_what_the_generator_writes():
    committed = README.read_text(encoding="utf-8")
    assert figures.MARKER.search(committed), "README.md has no rendered figures"
    assert generator.render(committed) == committed, (
        f"README.md's figures differ from benchmarks/results: run `{generator.COMMAND}`"
    )


def test_readme_figures_equal_the_results_files_read_directly():
    # An independent reading of a few figures: plain indexing into the JSON.
    quickstart = results("default_run")["quickstart"]["no_native_bf16"]
    key = "quickstart.no_native_bf16"
    expected = {
        f'"{key}.evaluation.beam.bleu", ".2f"': f"{quickstart['evaluation']['beam']['bleu']:.2f}",
        f'"{key}.evaluation.greedy.bleu", ".2f"': f"{quickstart['evaluation']['greedy']['bleu']:.2f}",
        f'"{key}.evaluation_replaced.beam.bleu", ".2f"': f"{quickstart['evaluation_replaced']['beam']['bleu']:.2f}",
        f'"{key}.training.seconds", ",.0f"': f"{quickstart['training']['seconds']:,.0f}",
        f'"{key}.evaluation.sentences", ",d"': f"{quickstart['evaluation']['sentences']:,d}",
        f'"{key}.export.variables_bytes", ".1f", scale=1e-06': f"{quickstart['export']['variables_bytes'] / 1e6:.1f}",
    }
    text = README.read_text(encoding="utf-8")
    for arguments, value in expected.items():
        found = re.findall(re.escape(arguments) + r"\) -->(.*?)<!-- /figure -->", text)
        assert found, f"README.md renders no figure({arguments})"
        assert set(found) == {value}, f"figure({arguments}): {found} != {value}"


def test_a_stale_readme_figure_is_found_and_rewritten():
    committed = README.read_text(encoding="utf-8")
    marker = next(figures.MARKER.finditer(committed))
    stale = committed.replace(
        marker[0], marker[0].replace(f"-->{marker[2]}<!--", "-->999.99<!--"), 1
    )
    assert stale != committed
    assert generator.render(stale) == committed
    assert generator.main(["--check"]) == 0


def test_check_mode_fails_on_a_stale_readme(monkeypatch, tmp_path):
    committed = README.read_text(encoding="utf-8")
    marker = next(figures.MARKER.finditer(committed))
    readme = tmp_path / "README.md"
    readme.write_text(
        committed.replace(marker[0], marker[0].replace(f"-->{marker[2]}<!--", "-->0<!--"), 1)
    )
    monkeypatch.setattr(generator, "README", readme)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert readme.read_text() == committed


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPOSITORY)))
def test_every_figure_call_on_a_page_resolves(page):
    text = page.read_text(encoding="utf-8")
    shown = text.count("\\{{")  # calls shown as written
    rendered = figures.render_page(text)
    assert rendered.count("{{ figure(") + rendered.count("{{ provenance(") == shown


def test_missing_stands_for_a_cell_not_measured_ratios_divide_differences_subtract(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps({"a": {"x": 3.0}, "b": {"x": 2.0}}))
    assert figures.figure("bench", "a.y", missing="-", results=tmp_path) == "-"
    assert figures.figure("bench", "a.x", ".2f", over="b.x", results=tmp_path) == "1.50"
    assert figures.figure("bench", "a.x", "+.1f", minus="b.x", results=tmp_path) == "+1.0"
    assert figures.figure("bench", "b.x", ".1f", minus="a.x", results=tmp_path) == "-1.0"
    with pytest.raises(figures.FigureError):
        figures.figure("bench", "a.y", results=tmp_path)
    with pytest.raises(figures.FigureError):  # `missing` never hides a missing file
        figures.figure("other", "a.x", missing="-", results=tmp_path)


def test_a_backslash_shows_a_call_as_written(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps({"ms": 2}))
    page = 'x \\{{ figure("bench", "ms") }} y {{ figure("bench", "ms") }}'
    assert figures.render_page(page, results=tmp_path) == 'x {{ figure("bench", "ms") }} y 2'


def test_a_page_renders_figures_and_their_provenance(tmp_path):
    (tmp_path / "bench.json").write_text(
        json.dumps(
            {
                "rows": [{"name": "a b", "ms": 1.25}, {"name": "c", "ms": 3}],
                "machine": {
                    "date": "2000-01-01T00:00:00+00:00",
                    "commit": "abcdef0",
                    "command": "python bench.py",
                    "cpu": "CPU X",
                    "cores": 2,
                    "cpu_flags": ["AVX2", "AVX512_BF16"],
                },
            }
        )
    )
    page = '{{ figure("bench", "rows[name=a b].ms", ".1f") }} ms\n\n{{ provenance() }}'
    rendered = figures.render_page(page, results=tmp_path)
    assert rendered.startswith("1.2 ms\n\n| figures |")
    assert (
        "| `bench.json` | `python bench.py` | `abcdef0` | 2000-01-01 | CPU X, 2 cores" in rendered
    )
    assert "native bfloat16" in rendered and "no native" not in rendered
    assert figures.figure("bench", "rows.1.ms", results=tmp_path) == "3"


@pytest.mark.parametrize(
    "cap, expected",
    [
        (None, "(AVX2, AMX_BF16; native bfloat16)"),
        ("AVX2", "(AVX2, AMX_BF16, oneDNN capped at AVX2; no native bfloat16)"),
        ("AVX512_CORE_AMX", "(AVX2, AMX_BF16, oneDNN capped at AVX512_CORE_AMX; native bfloat16)"),
    ],
)
def test_a_onednn_cap_below_bfloat16_is_no_native_bfloat16(cap, expected):
    machine = {"cpu": "CPU X", "cores": 2, "cpu_flags": ["AVX2", "AMX_BF16"]}
    assert figures._cpu({**machine, "onednn_max_cpu_isa": cap}) == f"CPU X, 2 cores {expected}"


@pytest.mark.parametrize(
    "call",
    [
        'figure("bench", "rows[name=z].ms")',
        'figure("bench", "rows.nothing")',
        'figure("nofile", "x")',
        'figure("bench", "rows.0.name", ".2f")',
        "provenance()",
    ],
)
def test_a_figure_that_cannot_be_read_raises(tmp_path, call):
    (tmp_path / "bench.json").write_text(json.dumps({"rows": [{"name": "a", "ms": 1}]}))
    with pytest.raises(figures.FigureError):
        figures.evaluate(call, results=tmp_path)


def test_provenance_needs_a_machine_record(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps({"ms": 1}))
    with pytest.raises(figures.FigureError, match="no `machine` provenance"):
        figures.render_page('{{ figure("bench", "ms") }} {{ provenance() }}', results=tmp_path)


def test_every_cited_results_record_has_its_provenance():
    texts = [README.read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8") for p in PAGES]
    calls = [m[1] for text in texts for m in figures.MARKER.finditer(text)]
    calls += [m[1] for text in texts for m in figures.CALL.finditer(text)]
    records = figures.figure_records(calls)
    assert records
    for file, prefix in set(records):
        node = results(file)
        for part in figures.split_key(prefix):
            node = figures._step(node, part, prefix)
        machine = node["machine"]
        for field in ("command", "commit", "date", "cpu"):
            assert machine.get(field), f"{file}.json {prefix}: machine.{field} missing"


def test_default_run_records_what_the_docs_read(tmp_path, monkeypatch):
    """benchmarks/default_run.py writes every field the README and docs read from
    default_run.json, from a run directory's config.json, metrics.json and history.csv."""
    import sys

    monkeypatch.setitem(sys.modules, "harness", load_docs_module("benchmarks/harness.py"))
    default_run = load_docs_module("benchmarks/default_run.py")
    run = tmp_path / "run"
    run.mkdir()
    config = {"precision": "float32", "tokenizer": "words", "source_vocabulary_size": 100,
              "target_vocabulary_size": 200, "epochs": 8, "steps_per_epoch": 10,
              "batch_size": 4, "time_budget_minutes": 20.0}  # fmt: skip
    buckets = [{"bucket": b, "count": 1, "bleu": 1.0} for b in ("1-5", "6-10", "11-15", "16+")]
    scores = {"bleu": 10.0, "chrf": 20.0, "bleu_by_length": buckets}
    metrics = {
        "training": {"seconds": 120.0, "epochs_run": 8, "parameters": 1000, "best_val_loss": 1.5},
        "evaluation": {"sentences": 7, "greedy": scores, "beam": scores, "model_sha256": "x"},
    }
    (run / "config.json").write_text(json.dumps(config))
    (run / "metrics.json").write_text(json.dumps(metrics))
    losses = [round(2.0 - 0.03 * epoch, 2) for epoch in range(16)]  # the docs cite up to 16
    history = "".join(f"{epoch},3,{loss}\n" for epoch, loss in enumerate(losses))
    (run / "history.csv").write_text("epoch,loss,val_loss\n" + history)
    plan = {"budget_seconds": 1200.0, "history": [[5, 80]], "maximum_steps": 80,
            "planned_at_step": 5, "planned_steps": 80, "seconds_per_step": 1.4,
            "steps_per_epoch": 10, "validation_batches": 2}  # fmt: skip
    (run / "plan.json").write_text(json.dumps(plan))
    replaced = tmp_path / "metrics.replace.json"
    metrics["evaluation"] = {**metrics["evaluation"], "replace_unknown": True}
    replaced.write_text(json.dumps(metrics))
    out = tmp_path / "default_run.json"
    argv = ["--run-dir", str(run), "--kind", "native_bf16_8_epochs", "--out", str(out)]
    assert default_run.main([*argv, "--replaced-metrics", str(replaced)]) == 0
    written = json.loads(out.read_text())["runs"]["native_bf16_8_epochs"]
    assert written["evaluation_replaced"]["replace_unknown"] is True
    with pytest.raises(ValueError, match="did not replace unknown words"):
        default_run.main([*argv, "--replaced-metrics", str(run / "metrics.json")])
    assert written["training"]["steps"] == 80 and written["training"]["seconds_per_step"] == 1.5
    assert written["training"]["val_loss_by_epoch"] == losses
    assert written["machine"]["precision"] == "float32" and written["machine"]["commit"]
    # The Quickstart's record: the same run in a clone, with its export.
    from keras_attention.export.export_manifest import ExportManifest

    clone = tmp_path / "clone"
    shutil.copytree(run, clone / "runs" / "fra-eng")
    version = clone / "exports" / "fra-eng" / "3"
    (version / "variables").mkdir(parents=True)
    (version / "variables" / "variables.data-00000-of-00001").write_bytes(b"0" * 1234)
    ExportManifest(
        version=3, created="2026-01-01", library_versions={}, run_dir=None, train_config={},
        model_config={}, vocabulary={"target_size": 200}, max_source_length=None,
        max_output_length=10, decoding={}, signatures={}, jit_compile=False,
        warmup_records=0, saved_model_sha256="x", weights={"weights": "float32"},
    ).save(version)  # fmt: skip
    machine = {"cpu_flags": [], "date": "2026-01-01"}
    quickstart = default_run.quickstart_record(clone, machine, replaced)
    assert quickstart["machine"]["command"] == default_run.quickstart_command()
    assert default_run.quickstart_command().endswith(
        "&& keras-attention train && keras-attention evaluate runs/fra-eng"
    )
    assert quickstart["export"] == {
        "weights": "float32", "shortlist": None, "target_vocabulary_size": 200,
        "variables_bytes": 1234,
    }  # fmt: skip
    # Every runs.<name>.* and quickstart.<kind>.* figure the README and the pages cite
    # resolves in a written record.
    texts = [README.read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8") for p in PAGES]
    calls = [m[1] for t in texts for m in figures.MARKER.finditer(t)]
    calls += [m[1] for t in texts for m in figures.CALL.finditer(t)]
    keys = set()
    for call in calls:
        name, args, _ = figures._arguments(call)
        if name == "figure" and args[0] == "default_run":
            section, _, key = args[1].split(".", 2)
            keys.add((section, key))
    assert {section for section, _ in keys} == {"runs", "quickstart"}
    for section, key in keys:
        node = written if section == "runs" else quickstart
        for part in figures.split_key(key):
            node = figures._step(node, part, key)
