"""The captioning example (`examples/captioning.py`) with its default sizes, once per seed.

Each seed trains the example's captioner from scratch (its `main`, with the example's
defaults and `--seed S`) and records what `main` returns: held-out exact match for
greedy decoding, beam search, hard attention at inference and hard attention after
fine-tuning; the share of colour words whose attention peak is on their object's
cell (soft, hard at inference, hard); the training losses; and the seconds the seed
took (data, training and the measures).

    python benchmarks/captioning.py --seeds 0 1 --out benchmarks/results/captioning.json
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import harness

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "captioning.py"


def load_example():
    """Imports examples/captioning.py (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("captioning_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--out", help="the results file to write (JSON)")
    parser.add_argument("example_args", nargs="*", help="more arguments for the example (after --)")
    args = parser.parse_args(argv)
    info = harness.print_machine_header()
    example = load_example()
    payload = {"example_arguments": args.example_args, "seeds": {}}
    for seed in args.seeds:
        started = time.perf_counter()
        results = example.main([*args.example_args, "--seed", str(seed)])
        results.pop("plots")
        results.pop("export")  # a version directory, with --export
        results["seconds"] = time.perf_counter() - started
        payload["seeds"][str(seed)] = results
    if args.out:
        harness.write_json(args.out, payload, info)
    return payload


if __name__ == "__main__":
    main()
