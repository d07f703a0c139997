"""The walk a reader makes following one corpus line from `keras-attention train` to the
first training step, measured at one or more commits.

Each commit is read from git (`git archive`) into a temporary folder laid out as the
installed packages are (`keras_attention`, with `export/` and `serving/` as
`keras_attention.export` / `keras_attention.serving`, and `serving/client` as
`keras_attention_client`), and a child process runs

    keras-attention train --data <200 spelled-digit pairs> --out <tmp> <a tiny model>

from that folder under `sys.setprofile`, from the command's handler (`run_train`, after
the arguments are parsed) until Keras first calls a `train_step`. The walk of *the
whole command* is the project's functions in the order each is first called (a reader
reads a function once; what a module runs while it is imported is left out), as the
files they live in. The walk of *a corpus line* leaves out building the model
(`keras_attention/models/`, `keras_attention/layers/`): the line reaches the model at
the first step, where the walk ends. A *stay* is a run of consecutive functions in one
file; a *return* is a stay in a file the walk had already left, *entered from another
file* when a function in another file called into it (rather than the file's own
function calling on after a call elsewhere came back).

    python docs/gen_code_walk.py --revisions BEFORE AFTER [--out benchmarks/results]

writes `code_walk.json` (the figures, the walk of each commit, the command, commits and
date) and `code_walk.md` (the table the architecture page includes) into `--out`, and
prints the table.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# `keras-attention train` flags of a model that builds and steps in seconds; every flag
# exists at the commits this script is run on (a flag a commit lacks fails its run).
TRAIN_FLAGS = [
    "--embedding-dim", "8", "--encoder-units", "8", "--decoder-units", "16",
    "--source-vocabulary-size", "20", "--target-vocabulary-size", "20",
    "--max-length", "10", "--batch-size", "8", "--epochs", "1", "--steps-per-epoch", "1",
    "--precision", "float32", "--tokenizer", "words",
    "--validation-fraction", "0.2", "--test-fraction", "0.2",
]  # fmt: skip

# Building the model is not on a corpus line's way: the line reaches the model at the
# first step, where the walk ends.
MODEL_CONSTRUCTION = ("keras_attention/models/", "keras_attention/layers/")

# The child: runs the command under a profiler recording first calls into the archive.
WALKER = r"""
import json, sys
from pathlib import Path

source, data, out, flags = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
prefix = str(Path(source).resolve()) + "/"


class FirstStep(Exception):
    pass


seen, walk = set(), []
started = False


def importing(frame):
    # Whether a module body of ours is on the stack: a call made while importing it.
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.startswith(prefix):
            return True
        frame = frame.f_back
    return False


def caller_file(frame):
    # The file of the nearest function of ours the call came from (through Keras,
    # TensorFlow or the standard library, as tf.data calls a mapped function), or "".
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("/") and str(Path(name).resolve()).startswith(prefix):
            return str(Path(name).resolve())[len(prefix):]
        frame = frame.f_back
    return ""


def profile(frame, event, arg):
    global started
    if event != "call":
        return
    code = frame.f_code
    if code.co_name in ("train_step", "tf__train_step"):
        raise FirstStep
    if code.co_name == "run_train":
        started = True
    path = str(Path(code.co_filename).resolve()) if code.co_filename.startswith("/") else ""
    key = (code.co_filename, code.co_firstlineno)
    # Module bodies, comprehensions and lambdas are not functions a reader follows, and
    # neither is what a module runs while it is imported.
    if (started and path.startswith(prefix) and key not in seen
            and not code.co_name.startswith("<") and not importing(frame.f_back)):
        seen.add(key)
        walk.append([path[len(prefix):], code.co_qualname, caller_file(frame.f_back)])


import keras  # noqa: F401  (TensorFlow and Keras load before the walk starts)
import tensorflow  # noqa: F401
from keras_attention.cli import main

sys.setprofile(profile)
try:
    main(["train", "--data", data, "--out", out, *flags])
    reached = False
except FirstStep:
    reached = True
finally:
    sys.setprofile(None)
print("WALK" + json.dumps({"reached_train_step": reached, "walk": walk}))
"""


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def package_tree(source: Path, packages: Path) -> None:
    """`packages` laid out as the install lays the archive at `source` out, with links.

    `keras_attention` holds links to the package's own entries plus `export/` and
    `serving/`; `keras_attention_client` links to `serving/client`. Every module resolves
    to its file in `source`.
    """
    package = packages / "keras_attention"
    package.mkdir(parents=True)
    for entry in (source / "keras_attention").iterdir():
        (package / entry.name).symlink_to(entry)
    for name in ("export", "serving"):
        (package / name).symlink_to(source / name, target_is_directory=True)
    (packages / "keras_attention_client").symlink_to(source / "serving" / "client")


def corpus(path: Path) -> Path:
    digits = ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"]
    lines = []
    for i in range(200):
        numbers = [(i * 7 + k * 3) % 10 for k in range(3 + i % 4)]
        source = " ".join(map(str, numbers))
        lines.append(f"{source}\t{' '.join(digits[n] for n in numbers)}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def measure(revision: str) -> dict:
    archive = subprocess.run(
        ["git", "archive", revision], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "source"
        source.mkdir()
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(source, filter="data")
        packages = Path(folder) / "packages"
        package_tree(source, packages)
        data = corpus(Path(folder) / "pairs.tsv")
        result = subprocess.run(
            [sys.executable, "-c", WALKER, str(source), str(data), str(Path(folder) / "run"),
             json.dumps(TRAIN_FLAGS)],
            cwd=folder, capture_output=True, text=True,
            env={"PYTHONPATH": str(packages), "TF_CPP_MIN_LOG_LEVEL": "3",
                 "KERAS_BACKEND": "tensorflow", "PATH": "/usr/bin:/bin",
                 "PYTHONNOUSERSITE": "1", "HOME": folder},
        )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("WALK")]
    if result.returncode or not lines:
        raise RuntimeError(f"the walk at {revision} failed:\n{result.stderr[-3000:]}")
    recorded = json.loads(lines[-1][len("WALK") :])
    if not recorded["reached_train_step"]:
        raise RuntimeError(
            f"the run at {revision} ended without calling train_step:\n{result.stderr[-3000:]}"
        )
    walk = recorded["walk"]
    line = [step for step in walk if not step[0].startswith(MODEL_CONSTRUCTION)]
    return {"revision": revision, "commit": git("rev-parse", "--short", revision),
            "command": summary(walk), "corpus_line": summary(line)}  # fmt: skip


def summary(walk: list[list[str]]) -> dict:
    """Stays, files and returns of a walk of `[file, function, caller's file]` first calls.

    A return *from another file* enters the file it returns to through a call made in a
    different file; the other returns are the file's own functions calling each other
    again after a call elsewhere has come back (a reader reading on in the caller).
    """
    stays: list[list[str]] = []
    for path, _, caller in walk:
        if not stays or stays[-1][0] != path:
            stays.append([path, caller])
    left: set[str] = set()
    returns = entered = 0
    for index, (path, caller) in enumerate(stays):
        if path in left:
            returns += 1
            entered += caller != path
        if index:
            left.add(stays[index - 1][0])
    return {
        "functions": len(walk),
        "stays": len(stays),
        "files": len(set(path for path, _ in stays)),
        "returns": returns,
        "returns_from_another_file": entered,
        "walk": [path for path, _ in stays],
    }


def table(results: list[dict]) -> str:
    header = "| walk | at commit | " + " | ".join(f"`{r['commit']}`" for r in results) + " |"
    rows = [header, "| --- | --- |" + " ---: |" * len(results)]
    for walk, name in (("corpus_line", "a corpus line"), ("command", "the whole command")):
        for label, key in (
            ("functions of ours first called", "functions"),
            ("files", "files"),
            ("stays (runs of functions in one file)", "stays"),
            ("returns to a file already left", "returns"),
            ("of them, entered from another file", "returns_from_another_file"),
        ):
            figures = " | ".join(str(r[walk][key]) for r in results)
            rows.append(f"| {name} | {label} | {figures} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", nargs="+", default=["HEAD"], help="git revisions")
    parser.add_argument("--out", type=Path, help="folder for the results files")
    args = parser.parse_args(argv)
    results = [measure(revision) for revision in args.revisions]
    command = "python docs/gen_code_walk.py --revisions " + " ".join(args.revisions)
    date = datetime.date.today().isoformat()
    text = table(results) + f"\n`{command}`, {date}.\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "code_walk.json").write_text(
            json.dumps({"command": command, "date": date, "results": results}, indent=1) + "\n"
        )
        (args.out / "code_walk.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
