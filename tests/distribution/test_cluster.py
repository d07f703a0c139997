"""The cluster: TF_CONFIG, --worker-hosts/--task-index, clear errors."""

import json

import pytest

from keras_attention.distribution.cluster import parse_tf_config, resolve_cluster


def tf_config(cluster, task_type="worker", index=0):
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


TWO = {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}


def test_tf_config_is_parsed():
    config = parse_tf_config(tf_config(TWO, index=1))
    assert config["cluster"] == TWO and config["task"] == {"type": "worker", "index": 1}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ('{"task": {"type": "worker", "index": 0}}', 'needs a "cluster"'),
        (tf_config({"worker": ["a:1"], "ps": ["b:1"]}), "task types \\['ps'\\]"),
        (tf_config({"worker": "a:1,b:2"}), "must be a list"),
        (tf_config({"worker": ["a:1", "nohostport"]}), "HOST:PORT"),
        (tf_config({"worker": ["a:1", "a:1"]}), "address twice"),
        (json.dumps({"cluster": TWO}), 'needs a "task"'),
        (tf_config(TWO, "chief", 0), "'chief' is not in the cluster"),
        (tf_config(TWO, index=2), "task index 2 is out of range for the 2 'worker'"),
        (tf_config(TWO, index=-1), "out of range"),
        (tf_config(TWO, index="0"), "must be an int"),
        (tf_config({"worker": []}), 'cluster\\["worker"\\] is empty'),
        (tf_config({"chief": ["a:1", "b:1"]}, "chief"), "more than one chief"),
    ],
)
def test_malformed_tf_config_is_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_tf_config(text)


def test_cluster_from_flags_and_its_errors():
    config = resolve_cluster("h0:1000, h1:1001", 1, environ={})
    assert config == {
        "cluster": {"worker": ["h0:1000", "h1:1001"]},
        "task": {"type": "worker", "index": 1},
    }
    with pytest.raises(ValueError, match="needs a cluster: set TF_CONFIG"):
        resolve_cluster(None, None, environ={})
    with pytest.raises(ValueError, match="needs --task-index"):
        resolve_cluster("h0:1000,h1:1001", None, environ={})
    with pytest.raises(ValueError, match="--task-index 2 is out of range for 2 worker hosts"):
        resolve_cluster("h0:1000,h1:1001", 2, environ={})
    with pytest.raises(ValueError, match="not both"):
        resolve_cluster("h0:1000", 0, environ={"TF_CONFIG": tf_config(TWO)})
    assert resolve_cluster(environ={"TF_CONFIG": tf_config(TWO)})["cluster"] == TWO
