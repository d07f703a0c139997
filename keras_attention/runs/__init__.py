"""A training run (`TrainingRun`): directory, config, state, data split, vocabularies, backups;
a run continued on a new corpus (`RunAdaptation`).

Names are imported lazily (through `lazy_loader`), so reading a `TrainConfig`
or a run's status does not load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "run_adaptation": ["RunAdaptation"],
        "run_data": ["sample_splits"],
        "run_directory": ["RunDirectory"],
        "run_state": ["run_status"],
        "train_config": ["TrainConfig"],
        "training_run": ["TrainingRun"],
    },
)
