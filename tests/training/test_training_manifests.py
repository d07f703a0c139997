"""deploy/training: the manifests' commands parse and their TF_CONFIG is valid."""

import re
import subprocess
from pathlib import Path

from keras_attention import cli
from keras_attention.distribution.cluster import parse_tf_config

TRAINING = Path(__file__).resolve().parents[2] / "deploy" / "training"


def parse_train_args(args):
    return cli.build_parser().parse_args(["train", *args])


def test_indexed_job_builds_a_valid_tf_config_from_the_pod_index():
    text = (TRAINING / "indexed-job.yaml").read_text()
    export = next(line.strip() for line in text.splitlines() if "export TF_CONFIG=" in line)
    job = re.search(r"kind: Job\nmetadata:\n  name: (\S+)", text).group(1)
    service = re.search(r"kind: Service\nmetadata:\n  name: (\S+)", text).group(1)
    assert f"subdomain: {service}" in text and f"job-name: {job}" in text
    for index in range(2):
        printed = subprocess.run(
            ["bash", "-c", f'{export}\necho "$TF_CONFIG"'],
            env={"JOB_COMPLETION_INDEX": str(index)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        config = parse_tf_config(printed)
        assert config["task"] == {"type": "worker", "index": index}
        assert config["cluster"]["worker"] == [f"{job}-{i}.{service}:2222" for i in range(2)]
    command = re.search(r"exec keras-attention train (.*?)\n\s*ports:", text, re.S).group(1)
    args = parse_train_args(command.replace("\\\n", " ").split())
    assert args.distribute == "multi-worker" and args.out.startswith("/runs/")
    assert "completions: 2" in text and "parallelism: 2" in text


def test_tfjob_runs_multi_worker_training_on_the_shared_volume():
    text = (TRAINING / "tfjob.yaml").read_text()
    args = re.findall(r"^\s+- (--\S+)(?:\s+#.*)?$", text, re.M)
    parsed = parse_train_args(args)
    assert parsed.batch_size == 128
    assert parsed.distribute == "multi-worker" and parsed.out.startswith("/runs/")
    assert "replicas: 2" in text and "mountPath: /runs" in text
    assert "claimName: keras-attention-runs" in text
    storage = (TRAINING / "storage.yaml").read_text()
    assert "name: keras-attention-runs" in storage and "ReadWriteMany" in storage
