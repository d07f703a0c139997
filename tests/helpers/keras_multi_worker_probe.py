"""Runs Keras' multi-worker `model.fit` with and without our workarounds.

`python -m helpers.keras_multi_worker_probe RESULT_JSON`, in each of two
worker processes with `TF_CONFIG` set. Writes what each phase did:

- `unpatched`: plain Keras `fit` (bug 1 expected while Keras has it);
- `build_fixed`: only bug 1 worked around (bug 2 expected);
- `fixed`: `keras_fixes.fix_multi_worker_fit()` applied, fit and a
  `mixed_bfloat16` predict (float32 outputs expected);
- `clip_unpatched` / `clip_fixed`: one SGD step with a tiny `global_clipnorm`
  (bug 3: the update of plain Keras differs from global-norm clipping of the
  global-batch gradient; with `all_reduce_before_clipping` it matches).
"""

from __future__ import annotations

import json
import sys
import traceback


def main(path: str) -> int:
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    import keras
    import numpy as np

    from keras_attention.distribution import keras_fixes

    results = {"keras": keras.__version__}

    x = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]], np.float32)
    y = np.array([[1.0, -1.0], [0.5, 2.0], [-2.0, 1.0], [3.0, 0.0]], np.float32)

    def dataset():
        data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(4)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        return data.with_options(options)

    def model(optimizer="adam", dtype=None):
        with strategy.scope():
            m = keras.Sequential(
                [
                    keras.Input((2,)),
                    keras.layers.Dense(2, use_bias=False, kernel_initializer="ones", dtype=dtype),
                    keras.layers.Activation("linear", dtype="float32"),
                ]
            )
            m.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
        return m

    def phase(name, run):
        try:
            results[name] = {"ok": True, **(run() or {})}
        except Exception as error:  # the outcome is the result
            results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"[:2000]}
            traceback.print_exc()

    fit = lambda m: m.fit(dataset(), epochs=1, steps_per_epoch=2, verbose=0)  # noqa: E731
    phase("unpatched", lambda: fit(model()) and None)
    from keras.src.backend.tensorflow import trainer as tf_trainer

    original_build = tf_trainer.TensorFlowTrainer._maybe_symbolic_build
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = keras_fixes._maybe_symbolic_build
    phase("build_fixed", lambda: fit(model()) and None)
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = original_build
    keras_fixes._patched = False
    keras_fixes.fix_multi_worker_fit()

    def fixed():
        m = model(dtype="mixed_bfloat16")
        fit(m)
        out = m.predict(x, batch_size=2, verbose=0)
        return {"predict_dtype": str(out.dtype), "predict_shape": list(out.shape)}

    phase("fixed", fixed)

    clip = 1e-3
    gradient = 2 * x.T @ (x @ np.ones((2, 2), np.float32) - y) / y.size
    expected = np.ones((2, 2)) - clip * gradient / np.linalg.norm(gradient)

    def clipped_step(fix):
        def run():
            m = model(keras.optimizers.SGD(1.0, global_clipnorm=clip))
            if fix:
                keras_fixes.all_reduce_before_clipping(m.optimizer)
            m.fit(dataset(), epochs=1, steps_per_epoch=1, verbose=0)
            kernel = keras.ops.convert_to_numpy(m.layers[0].kernel)
            return {"error_vs_global_clipping": float(np.max(np.abs(kernel - expected)))}

        return run

    phase("clip_unpatched", clipped_step(False))
    phase("clip_fixed", clipped_step(True))
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
