"""One training process for distributed-training tests: `python -m helpers.train_process`.

Usage: `python -m helpers.train_process CONFIG_JSON WEIGHTS_NPZ [--distribute MODE]
[--cpu-replicas N]`. Trains the `TrainConfig` in CONFIG_JSON through the Python API
(`TF_CONFIG` from the environment for multi-worker) and saves the final weights of
this process's model, in `model.weights` order, to WEIGHTS_NPZ (and the weights at the
start of training to WEIGHTS_NPZ.initial.npz), outside the run
directory, so that a worker's weights can be compared although only the chief
writes the run directory).
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("weights")
    parser.add_argument("--distribute", default="none")
    parser.add_argument("--cpu-replicas", type=int, default=None)
    args = parser.parse_args(argv)

    from keras_attention.distribution import make_distribution

    distribution = make_distribution(args.distribute, cpu_replicas=args.cpu_replicas)

    import keras
    import numpy as np

    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.training.trainer import train

    def save(model, path):
        np.savez(path, *[np.asarray(keras.ops.convert_to_numpy(w)) for w in model.weights])

    class SaveWeights(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            save(self.model, f"{args.weights}.initial.npz")

        def on_train_end(self, logs=None):
            save(self.model, args.weights)

    config = TrainConfig(**json.loads(open(args.config, encoding="utf-8").read()))
    summary = train(config, verbose=0, distribute=distribution, callbacks=[SaveWeights()])
    print(json.dumps({"summary": summary, "chief": distribution.is_chief}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
