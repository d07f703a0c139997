"""`ExportManifest`: a manifest written before `max_steps` was renamed still loads."""

import json
import tarfile
from pathlib import Path

from keras_attention.export.export_manifest import ExportManifest

GOLDEN = Path(__file__).parent / "golden" / "export_before_decoding_inputs.tar.gz"


def test_a_manifest_with_the_old_decoding_key_reads_it_as_max_steps():
    with tarfile.open(GOLDEN) as archive:
        text = archive.extractfile("base/1/assets.extra/export_manifest.json").read().decode()
    assert '"max_length": 10' in text  # written before the rename
    manifest = ExportManifest.from_json(text)
    for name in ("serving_default", "beam_search"):
        assert manifest.decoding[name]["max_steps"] == 10
        assert "max_length" not in manifest.decoding[name]
    assert manifest.decoding["beam_search"]["beam_width"] == 3
    # Written again, it holds the new key only.
    assert ExportManifest.from_json(manifest.to_json()).decoding == manifest.decoding
    written = json.loads(manifest.to_json())["decoding"]
    assert all("max_length" not in entry for entry in written.values())
