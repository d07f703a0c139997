"""The TFA side of `seq2seq_decoder_speed.py`: TensorFlow Addons' `BeamSearchDecoder`
on the same weights and batches, timed the same way.

Runs ONLY in a side environment with the real library (never a dependency of the
package), with TFA's pure-TensorFlow ops (its compiled `GatherTree` does not load
against `tensorflow-cpu`):

    TF_ADDONS_PY_OPS=1 /path/to/venv/bin/python benchmarks/seq2seq_decoder_speed_tfa.py ARRAYS.npz

`ARRAYS.npz` is what `seq2seq_decoder_speed.py --tfa-python` writes: the mapped weights
(`w/<name>`, `seq2seq_mapping.WEIGHT_NAMES`), each batch's encoder outputs
(`annotations/<i>`, `mask/<i>`, `summary/<i>`) and the search (`search`, JSON). The
decoder is built by `seq2seq_mapping.DecoderParts` over `tfa.seq2seq` and `tf.keras`.
Prints one JSON line: the best beam's ids before the end token of every sentence
(`rows`), the seconds of each timed pass over all batches after one untimed pass
(`pass_seconds`), and the library versions.
"""

import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ADDONS_PY_OPS", "1")

import numpy as np  # noqa: E402
import seq2seq_mapping  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_addons as tfa  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arrays", help="the .npz written by seq2seq_decoder_speed.py")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes")
    args = parser.parse_args(argv)
    with np.load(args.arrays) as data:
        arrays = {key: data[key] for key in data.files}
    search = json.loads(str(arrays["search"]))
    weights = {name: arrays[f"w/{name}"] for name in seq2seq_mapping.WEIGHT_NAMES}
    inputs = [
        tuple(tf.constant(arrays[f"{part}/{i}"]) for part in ("annotations", "mask", "summary"))
        for i in range(search["batches"])
    ]
    parts = seq2seq_mapping.DecoderParts(tfa.seq2seq, tf.keras, tf, weights, search)
    signature = [
        tf.TensorSpec([None, None, inputs[0][0].shape[-1]]),
        tf.TensorSpec([None, None], tf.bool),
        tf.TensorSpec([None, inputs[0][2].shape[-1]]),
    ]
    decode = tf.function(parts.decode, input_signature=signature)
    rows = []
    for batch in inputs:  # the untimed pass
        rows += seq2seq_mapping.rows_before_end(decode(*batch).numpy(), search["end_id"])
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        for batch in inputs:
            decode(*batch).numpy()
        seconds.append(time.perf_counter() - started)
    versions = {
        "tensorflow": tf.__version__,
        "tensorflow_addons": tfa.__version__,
        "python": platform.python_version(),
    }
    print(json.dumps({"rows": rows, "pass_seconds": seconds, "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
