"""Data-parallel training: the cluster, the strategy, agreement between workers, flags.

Names are imported lazily (through `lazy_loader`), so importing the package
or its flags does not load TensorFlow.

```python
from keras_attention.distribution import make_distribution

distribution = make_distribution("mirrored", cpu_replicas=2)
```
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "agreement": [
            "any_worker",
            "check_workers_agree",
            "comparable_config",
            "fingerprint",
            "mean_over_workers",
        ],
        "cluster": ["cluster_hosts", "parse_tf_config", "parse_worker_hosts", "resolve_cluster"],
        "datasets": ["pad_to_replicas", "per_worker", "shard_by_data"],
        "errors": ["DistributedTrainingError"],
        "flags": ["add_distribute_arguments", "distribution_from_args"],
        "keras_fixes": ["apply_keras_fixes"],
        "run_coordination": ["peer_failures", "writable_run_directory"],
        "strategy": ["Distribution", "as_distribution", "make_distribution"],
        "worker_start": ["wait_for_workers", "worker_start_error"],
    },
)
