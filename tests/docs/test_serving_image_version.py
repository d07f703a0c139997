"""deploy/ and the pages that describe it name one `tensorflow/serving` image version.

The compose file and the Kubernetes Deployment pin the image; deploy/README.md and
docs/serving.md say which version that is and what was checked about it. A tag changed
in one place and not the others fails here.
"""

import re

import pytest
from helpers.docs_site import REPOSITORY

DEPLOY = REPOSITORY / "deploy"
# `image: tensorflow/serving:2.20.0` or the compose file's `${TF_SERVING_VERSION:-2.20.0}`.
TAG = re.compile(r"tensorflow/serving:(?:\$\{\w+:-)?(\d+\.\d+\.\d+)")
PINNING_FILES = [DEPLOY / "docker-compose.yml", DEPLOY / "k8s" / "deployment.yaml"]
DESCRIBING_PAGES = [DEPLOY / "README.md", REPOSITORY / "docs" / "serving.md"]


def tags(text: str) -> set[str]:
    return set(TAG.findall(text))


@pytest.mark.parametrize(
    "text, found",
    [
        ("image: tensorflow/serving:2.20.0", {"2.20.0"}),
        ("image: tensorflow/serving:${TF_SERVING_VERSION:-2.21.0}", {"2.21.0"}),
        ("`tensorflow/serving:2.20.0` and tensorflow/serving:2.19.1", {"2.20.0", "2.19.1"}),
        ("method_name: tensorflow/serving/predict", set()),
    ],
)
def test_the_tag_pattern_finds_what_it_should(text, found):
    assert tags(text) == found


def test_deploy_files_and_pages_name_one_image_version():
    pinned = {str(path.relative_to(REPOSITORY)): tags(path.read_text()) for path in PINNING_FILES}
    assert all(len(found) == 1 for found in pinned.values()), pinned
    versions = set().union(*pinned.values())
    assert len(versions) == 1, f"the deploy files pin different images: {pinned}"
    (version,) = versions
    for page in [*DESCRIBING_PAGES, *REPOSITORY.joinpath("docs").rglob("*.md")]:
        named = tags(page.read_text(encoding="utf-8"))
        assert named <= versions, f"{page.relative_to(REPOSITORY)} names {named}, deploy/ {version}"
    for page in DESCRIBING_PAGES:
        assert version in tags(page.read_text(encoding="utf-8")), page
