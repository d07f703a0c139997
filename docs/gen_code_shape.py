"""The shape of the code at one or more commits: lines per package, the largest modules,
import circles, long signatures, how often each decoding default is written and the
names the trainer imports from a run's modules.

Each commit is read from git (`git archive`) into a temporary folder and measured there
with `tests/helpers/code_shape.py`, the functions `tests/test_architecture.py` bounds.

    python docs/gen_code_shape.py --revisions BEFORE AFTER [--out benchmarks/results]

writes `code_shape.json` (the figures, with the command, commits and date) and
`code_shape.md` (the tables the architecture page includes) into `--out`, and prints the
tables.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LARGEST = 8
"""Modules listed per commit, largest first."""


def load_code_shape():
    """`tests/helpers/code_shape.py`, loaded by path (it imports nothing of the tests)."""
    spec = importlib.util.spec_from_file_location(
        "code_shape", ROOT / "tests" / "helpers" / "code_shape.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unit(module: str) -> str:
    """The package a module belongs to, as the tables name it."""
    parts = module.split(".")
    if parts[0] == "keras_attention_client":
        return "keras_attention_client"
    if len(parts) > 2 and parts[1] in ("export", "serving"):
        return ".".join(parts[:3]) if parts[1] == "serving" else "keras_attention.export"
    if len(parts) > 2:
        return ".".join(parts[:2])
    return "keras_attention (top-level modules)"


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def measure(revision: str, shape) -> dict:
    """The figures of one commit."""
    archive = subprocess.run(
        ["git", "archive", revision], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        root = Path(folder)
        lines = shape.module_lines(root)
        packages: dict[str, int] = {}
        for module, count in lines.items():
            packages[unit(module)] = packages.get(unit(module), 0) + count
        largest = sorted(lines.items(), key=lambda item: -item[1])[:LARGEST]
        counts = shape.parameter_counts(root)
        return {
            "revision": revision,
            "commit": git("rev-parse", "--short", revision),
            "packages": dict(sorted(packages.items())),
            "total_lines": sum(lines.values()),
            "modules": len(lines),
            "largest_modules": [{"module": m, "lines": n} for m, n in largest],
            "import_circles": shape.find_cycles(shape.import_graph(root)),
            "functions_over_8_parameters": sorted(
                f"{module}:{line} {name} ({count})"
                for module, line, name, count, keras_init in counts
                if count > 8 and not keras_init
            ),
            "length_penalty_defaults": shape.literal_default_places("length_penalty", root),
            "modules_of_420_lines_or_more": sorted(m for m, n in lines.items() if n >= 420),
            "functions_with_8_parameters": sorted(
                f"{module}:{line} {name}"
                for module, line, name, count, keras_init in counts
                if count == 8 and not keras_init and (module, name) not in KEPT_SIGNATURES
            ),
            "signatures_kept_for_compatibility": sorted(
                f"{module}:{line} {name} ({count}): {KEPT_SIGNATURES[module, name]}"
                for module, line, name, count, keras_init in counts
                if count >= 8 and not keras_init and (module, name) in KEPT_SIGNATURES
            ),
            "defaults_written_more_than_once": {
                option: places
                for option, modes in DEFAULT_OPTIONS.items()
                if len(places := shape.literal_default_places(option, root, modes=modes)) > 1
            },
            "trainer_names_from_runs_and_precision": trainer_names(root),
        }


KEPT_SIGNATURES = {
    # Keras calls a layer's `call` with these keywords (`mask`, `training`,
    # `use_causal_mask`, ...), as `keras.layers.Attention.call` takes them.
    ("keras_attention.layers.base_attention", "call"): "Keras' layer call signature",
    # The public client API: users call it with these keywords.
    ("keras_attention_client.client_base", "translate"): "the client's public API",
    # TensorFlow Addons' `tfa.seq2seq.sequence_loss`, argument for argument.
    ("keras_attention.seq2seq.loss", "sequence_loss"): "TFA's signature",
    # The search signature's function: its parameters are the SavedModel
    # signature's inputs, which TF Serving clients send by name.
    ("keras_attention.export.translation_signatures", "translate"): "the export's inputs",
    # Public, and callers use every keyword (the CLI, the run plots, the
    # captioning example); grouping them would take a deprecation path for four
    # keywords that read better flat.
    ("keras_attention.plotting.attention_plots", "plot_attention"): "a public plotting API",
}
"""Signatures of 8 parameters or more kept for external compatibility, `(module,
function)` and why: counted apart from the functions the target bounds."""


DEFAULT_OPTIONS = {
    "length_penalty": (),
    "temperature": (),
    "beam_width": (1,),
    "max_output_length": (),
}
"""The decoding options whose default must be written once (`beam_width=1` asks for
greedy search: a mode, not a default), as `tests/test_architecture.py` checks them."""


def trainer_names(root: Path) -> list[str]:
    """The names `keras_attention/training/trainer.py` imports from `keras_attention.runs`
    and `keras_attention.precision` (and their modules)."""
    import ast

    path = root / "keras_attention" / "training" / "trainer.py"
    if not path.is_file():
        return []
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith(("keras_attention.runs", "keras_attention.precision")):
                names += [f"{node.module}.{alias.name}" for alias in node.names]
    return sorted(names)


def _count(result: dict, key: str) -> str:
    """How many entries a figure has ("-" in records written before it was measured)."""
    return str(len(result[key])) if key in result else "-"


def tables(results: list[dict]) -> str:
    """Markdown: lines per package, then the summary and largest modules per commit."""
    heads = [r["commit"] for r in results]
    names = sorted({name for r in results for name in r["packages"]})
    out = ["| package | " + " | ".join(f"lines at `{h}`" for h in heads) + " |"]
    out.append("| --- |" + " ---: |" * len(heads))
    for name in names:
        cells = [f"{r['packages'].get(name, 0):,}" for r in results]
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    out.append("| all | " + " | ".join(f"{r['total_lines']:,}" for r in results) + " |")
    out += ["", "| at commit | " + " | ".join(f"`{h}`" for h in heads) + " |"]
    out.append("| --- |" + " ---: |" * len(heads))
    rows = {
        "modules": lambda r: str(r["modules"]),
        "import circles": lambda r: str(len(r["import_circles"])),
        "functions with more than 8 parameters": lambda r: str(
            len(r["functions_over_8_parameters"])
        ),
        "places a length-penalty default is written": lambda r: str(
            len(r["length_penalty_defaults"])
        ),
        "modules of 420 lines or more": lambda r: _count(r, "modules_of_420_lines_or_more"),
        "functions with exactly 8 parameters": lambda r: _count(r, "functions_with_8_parameters"),
        "signatures of 8 or more parameters kept for compatibility": lambda r: _count(
            r, "signatures_kept_for_compatibility"
        ),
        "decoding defaults written more than once": lambda r: _count(
            r, "defaults_written_more_than_once"
        ),
        "names the trainer imports from `runs` and `precision`": lambda r: _count(
            r, "trainer_names_from_runs_and_precision"
        ),
        "largest module (lines)": lambda r: str(r["largest_modules"][0]["lines"]),
    }
    for label, cell in rows.items():
        out.append(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")
    for r in results:
        out += ["", f"Largest modules at `{r['commit']}`:", ""]
        out += [f"- `{m['module']}`: {m['lines']} lines" for m in r["largest_modules"]]
        if r.get("signatures_kept_for_compatibility"):
            out += ["", f"Signatures kept for compatibility at `{r['commit']}`:", ""]
            out += [f"- {entry}" for entry in r["signatures_kept_for_compatibility"]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", nargs="+", default=["HEAD"], help="git revisions")
    parser.add_argument("--out", type=Path, default=None, help="folder for the results files")
    args = parser.parse_args(argv)
    shape = load_code_shape()
    results = [measure(revision, shape) for revision in args.revisions]
    text = tables(results)
    print(text)
    if args.out is not None:
        command = "python docs/gen_code_shape.py " + " ".join(
            sys.argv[1:] if argv is None else argv
        )
        record = {
            "command": command,
            "date": datetime.date.today().isoformat(),
            "results": results,
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "code_shape.json").write_text(json.dumps(record, indent=1) + "\n")
        provenance = f"\n`{command}`, {record['date']}.\n"
        (args.out / "code_shape.md").write_text(text + provenance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
