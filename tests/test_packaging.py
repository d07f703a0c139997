"""The two distributions, built as wheels and installed the way a user installs them.

Fast: `[tool.setuptools] packages` of both pyproject files name exactly the
package folders on disk.

Slow: `python -m build` makes the sdist and, from it, the wheel of
`keras-attention-seq2seq` (the repository root) and of `keras-attention-client`
(`serving/client`), from a copy of the sources. A fresh venv, used from a
folder outside the repository and without PYTHONPATH, installs
`keras-attention-seq2seq` from a folder holding only the two wheels
(`--find-links`: the client wheel is resolved by name, as from an index;
third-party dependencies come from the index). The installed commands then
train a tiny model, export it, check the export natively, serve it and
translate. A second venv with only the client wheel (and grpcio, protobuf,
NumPy) translates against the same server. Last, a stand-in for the unrelated
`keras-attention` 1.0.0 is installed over the first venv: `--version` reports
it, and the fix it prints repairs the installation.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest
from helpers import foreign_distribution
from helpers.training_runs import spelled_digits_pairs, write_tsv

from keras_attention.installation import normalize

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "serving" / "client"
MAIN, CLIENT_DISTRIBUTION = "keras-attention-seq2seq", "keras-attention-client"
# Files in the client's folder that describe the distribution and are not installed.
NOT_INSTALLED = {CLIENT / "pyproject.toml", CLIENT / "README.md"}
# The root files the main build reads: pyproject, the readme and the license files.
BUILD_FILES = ("pyproject.toml", "README*", "NOTICE*", "LICEN[CS]E*")
BUILD_OUTPUTS = {"build", "dist"}
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
# Tiny settings of `keras-attention train` (about 10 s): words, 5 steps of 16 pairs.
TRAIN_ARGUMENTS = (
    "--attention luong --score general --embedding-dim 16 --encoder-units 16 "
    "--decoder-units 32 --tokenizer words --source-vocabulary-size 20 "
    "--target-vocabulary-size 20 --max-length 10 --max-output-length 10 --batch-size 16 "
    "--epochs 1 --steps-per-epoch 5 --precision float32 --time-budget-minutes none"
).split()
TEXTS = ["1 2 3", "4 5"]


def package_folders(pyproject: Path) -> dict[str, Path]:
    """Each package of the pyproject's `[tool.setuptools] packages` -> its source folder.

    A package's folder is its `package-dir` entry, else its parent package's
    folder / its last name (setuptools' rule), from the pyproject's folder.
    """
    config = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
    package_dir = config.get("package-dir", {})

    def folder(name: str) -> Path:
        if name in package_dir:
            return pyproject.parent / package_dir[name]
        parent, _, last = name.rpartition(".")
        if parent:
            return folder(parent) / last
        return pyproject.parent / package_dir.get("", ".") / name

    return {name: folder(name).resolve() for name in config["packages"]}


def folders_with_init(top: Path, exclude: Path | None = None) -> set[Path]:
    """The package folders under `top`, less `exclude` and build outputs (build/, dist/)."""
    return {
        path.parent.resolve()
        for path in top.rglob("__init__.py")
        if not (exclude and path.is_relative_to(exclude))
        and not BUILD_OUTPUTS & set(path.relative_to(top).parts)
    }


def test_the_main_pyproject_lists_every_package_folder_and_only_those():
    listed = package_folders(ROOT / "pyproject.toml")
    on_disk = set()
    for top in {folder.relative_to(ROOT).parts[0] for folder in listed.values()}:
        on_disk |= folders_with_init(ROOT / top, exclude=CLIENT)
    assert {"keras_attention", "export", "serving"} <= {
        p.relative_to(ROOT).parts[0] for p in on_disk
    }
    relative = sorted(str(p.relative_to(ROOT)) for p in listed.values())
    assert relative == sorted(str(p.relative_to(ROOT)) for p in on_disk)
    assert len(set(listed.values())) == len(listed)  # no folder installs under two names
    assert all(name.split(".")[0] == "keras_attention" for name in listed)


def test_the_client_pyproject_lists_every_package_under_serving_client():
    listed = package_folders(CLIENT / "pyproject.toml")
    assert set(listed.values()) == folders_with_init(CLIENT)
    assert all(name.split(".")[0] == "keras_attention_client" for name in listed)


# --- Slow: the wheels, installed ------------------------------------------------------


class Venv:
    """A virtual environment, run from `cwd` with its bin/ first on PATH and no PYTHONPATH."""

    def __init__(self, path: Path, cwd: Path):
        started = time.perf_counter()
        venv.EnvBuilder(with_pip=True, system_site_packages=False).create(path)
        _log(f"venv {path.name}", started)
        self.path, self.cwd = path, cwd
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
        }
        self.env["PATH"] = f"{path / 'bin'}{os.pathsep}{self.env.get('PATH', '')}"
        self.purelib = Path(self.python("import sysconfig; print(sysconfig.get_path('purelib'))"))

    def command(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def run(self, *args: str, timeout: float = 300, check: bool = True):
        result = subprocess.run(
            [self.command(args[0]), *args[1:]],
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=self.env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} exited with {result.returncode}:\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
            )
        return result

    def python(self, code: str, *args: str) -> str:
        return self.run("python", "-c", code, *args).stdout.strip()

    def pip_install(self, *args: str, timeout: float = 1800) -> dict[str, dict]:
        """`pip install ARGS`; returns pip's install report by distribution name."""
        report = self.cwd / f"pip-report-{self.path.name}.json"
        self.run("python", "-m", "pip", "install", "-q", "--report", str(report), *args,
                 timeout=timeout)  # fmt: skip
        items = json.loads(report.read_text())["install"]
        return {normalize(item["metadata"]["name"]): item for item in items}


# Run in the installed venv: where each module comes from, versions, site-packages.
PROBE = """
import importlib, importlib.metadata as md, json, os, sys
modules = sys.argv[1].split(",")
distributions = sys.argv[2].split(",")
import keras_attention
print(json.dumps({
    "files": {m: importlib.import_module(m).__file__ for m in modules},
    "sys_path": sys.path,
    "versions": {d: md.version(d) for d in distributions},
    "version_attribute": keras_attention.__version__,
    "records": {d: [str(f) for f in md.files(d)] for d in distributions},
}))
"""


def _log(step: str, started: float) -> None:
    print(f"[packaging] {step}: {time.perf_counter() - started:.1f} s")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _built_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("packaging")
    assert ROOT not in path.resolve().parents
    yield path
    for environment in path.glob("venv-*"):  # about 2.5 GB: not kept among pytest's last runs
        shutil.rmtree(environment, ignore_errors=True)


@pytest.fixture(scope="module")
def wheels(workdir) -> dict[str, Path]:
    """`python -m build` of both distributions from a copy of the sources: {name: wheel}."""
    source = workdir / "source"
    source.mkdir()
    for pattern in BUILD_FILES:
        for path in ROOT.glob(pattern):
            shutil.copy2(path, source / path.name)
    tops = {
        folder.relative_to(ROOT).parts[0]
        for folder in package_folders(ROOT / "pyproject.toml").values()
    }
    for top in tops:
        shutil.copytree(ROOT / top, source / top, ignore=IGNORED)
    dist, wheel_dir = workdir / "dist", workdir / "wheels"
    for folder in (source, source / CLIENT.relative_to(ROOT)):
        started = time.perf_counter()
        build = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(dist), str(folder)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
        _log(f"python -m build {folder.relative_to(workdir)}", started)
    wheel_dir.mkdir()
    built = {}
    for wheel in dist.glob("*.whl"):  # only the wheels: pip must not build from an sdist
        name = wheel.name.split("-")[0].replace("_", "-")
        built[name] = Path(shutil.copy2(wheel, wheel_dir / wheel.name))
    assert set(built) == {MAIN, CLIENT_DISTRIBUTION}
    assert sorted(p.name for p in wheel_dir.iterdir()) == sorted(p.name for p in built.values())
    return built


@pytest.fixture(scope="module")
def installed(wheels, workdir) -> Venv:
    """A fresh venv with keras-attention-seq2seq installed from the wheel folder."""
    environment = Venv(workdir / "venv-main", cwd=workdir)
    started = time.perf_counter()
    version = _built_version(wheels[MAIN])
    report = environment.pip_install("--find-links", str(wheels[MAIN].parent), f"{MAIN}=={version}")
    _log("pip install keras-attention-seq2seq (with TensorFlow and every dependency)", started)
    for name in (MAIN, CLIENT_DISTRIBUTION):
        assert report[name]["download_info"]["url"] == wheels[name].as_uri()
    return environment


@pytest.mark.slow
def test_the_wheels_install_from_the_wheel_files_with_their_built_versions(installed, wheels):
    distributions = [MAIN, CLIENT_DISTRIBUTION]
    modules = [
        "keras_attention",
        "keras_attention.export",
        "keras_attention.serving",
        "keras_attention.serving.server",
        "keras_attention.serving.ui",
        "keras_attention_client",
        "keras_attention_client.wire",
        "keras_attention_client.wire.protos",
    ]
    probe = json.loads(installed.python(PROBE, ",".join(modules), ",".join(distributions)))
    main_project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert probe["versions"] == {name: _built_version(wheels[name]) for name in distributions}
    assert probe["versions"][MAIN] == main_project["version"] == probe["version_attribute"]
    # Every module from site-packages; nothing of the repository on sys.path.
    for module, file in probe["files"].items():
        assert Path(file).is_relative_to(installed.purelib), (module, file)
    for entry in probe["sys_path"]:
        assert not Path(entry or installed.cwd).resolve().is_relative_to(ROOT), entry
    # Each distribution installs only its own top-level package; none installs a file of the other.
    top_levels = {
        name: {f.split("/")[0] for f in records if not f.startswith("..")}
        for name, records in probe["records"].items()
    }
    assert {t for t in top_levels[MAIN] if not t.endswith(".dist-info")} == {"keras_attention"}
    assert {t for t in top_levels[CLIENT_DISTRIBUTION] if not t.endswith(".dist-info")} == {
        "keras_attention_client"
    }
    assert not set(probe["records"][MAIN]) & set(probe["records"][CLIENT_DISTRIBUTION])
    site_packages = set(os.listdir(installed.purelib))
    assert not {"export", "serving", "client", "wire", "protos"} & site_packages
    assert not {name for name in site_packages if name.endswith(".pth") and "keras" in name}


@pytest.mark.slow
def test_every_source_file_and_package_data_file_is_installed(installed):
    """Modules, the bundled corpus and its attribution, the page's files, the .proto files."""
    missing, checked = [], 0
    for pyproject in (ROOT / "pyproject.toml", CLIENT / "pyproject.toml"):
        for package, folder in package_folders(pyproject).items():
            target = installed.purelib.joinpath(*package.split("."))
            for path in folder.iterdir():
                if path.is_file() and path.suffix != ".pyc" and path not in NOT_INSTALLED:
                    checked += 1
                    if not (target / path.name).is_file():
                        missing.append(f"{path.relative_to(ROOT)} -> {target / path.name}")
    assert missing == []
    data = installed.purelib / "keras_attention" / "data"
    assert (data / "fra-eng.tsv.gz").stat().st_size > 1_000_000
    assert (data / "fra-eng.ABOUT.txt").is_file()
    # The translation page of `serve --ui`: a folder of package data, not a package.
    page = installed.purelib / "keras_attention" / "serving" / "ui" / "static"
    assert sorted(p.name for p in page.iterdir()) == sorted(
        p.name for p in (ROOT / "serving" / "ui" / "static").iterdir()
    )
    protos = installed.purelib / "keras_attention_client" / "wire" / "protos"
    assert {p.name for p in protos.glob("*.proto")} == {
        p.name for p in (CLIENT / "wire" / "protos").glob("*.proto")
    }
    assert checked > 50


@pytest.mark.slow
def test_the_installed_commands_start(installed):
    help_text = installed.run("keras-attention", "--help").stdout
    for command in ("train", "export", "check-export", "serve", "translate"):
        assert command in help_text
    version = installed.run("keras-attention", "--version")
    assert version.stdout == f"{MAIN} 0.2.0 from {installed.purelib / 'keras_attention'}\n"
    assert version.stderr == ""
    assert "translate" in installed.run("keras-attention-client", "--help").stdout
    serve_help = installed.run("python", "-m", "keras_attention.serving", "--help").stdout
    assert "--model_base_path" in serve_help


@pytest.fixture(scope="module")
def served(installed, workdir):
    """train -> export -> check-export --native -> serve, with the installed commands."""
    corpus = write_tsv(workdir / "digits.tsv", spelled_digits_pairs(300))
    run, base = workdir / "run", workdir / "exports" / "digits"
    steps = [
        ("keras-attention", "train", "--data", str(corpus), "--out", str(run), *TRAIN_ARGUMENTS),
        ("keras-attention", "export", str(run), "--export-dir", str(base), "--beam-width", "2",
         "--no-check"),
        ("keras-attention", "check-export", "--native", str(base / "1")),
    ]  # fmt: skip
    for step in steps:
        started = time.perf_counter()
        result = installed.run(*step, timeout=600)
        _log(f"keras-attention {step[1]}", started)
    assert "Result: OK" in result.stdout
    assert "TF_LoadSessionFromSavedModel" in result.stdout
    port = _free_port()
    log = (workdir / "serve.log").open("w")
    server = subprocess.Popen(
        [installed.command("keras-attention"), "serve", "--port", str(port),
         "--rest_api_port", "0", "--model_name", "digits", "--model_base_path", str(base)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=installed.cwd,
        env=installed.env,
    )  # fmt: skip
    try:
        yield f"localhost:{port}", workdir / "serve.log"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def translate(environment: Venv, address: str, *options: str) -> list[dict]:
    """`keras-attention-client translate --format json` of `TEXTS` in `environment`."""
    result = environment.run(
        "keras-attention-client", "translate", "--server", address, "--model-name", "digits",
        "--format", "json", "--timeout", "180", *options, *TEXTS, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
def test_the_installed_commands_train_export_check_serve_and_translate(installed, served):
    address, log = served
    started = time.perf_counter()
    greedy = translate(installed, address)
    _log("first translation (the server starting included)", started)
    assert [r["source_tokens"] for r in greedy] == [t.split() for t in TEXTS], log.read_text()
    assert all(isinstance(r["text"], str) for r in greedy)
    beam = translate(installed, address, "--signature", "beam_search")
    assert [r["source_tokens"] for r in beam] == [t.split() for t in TEXTS]


@pytest.mark.slow
def test_a_venv_with_only_the_client_translates_without_tensorflow(
    wheels, workdir, served, installed
):
    client = Venv(workdir / "venv-client", cwd=workdir)
    started = time.perf_counter()
    version = _built_version(wheels[CLIENT_DISTRIBUTION])
    report = client.pip_install(
        "--find-links", str(wheels[CLIENT_DISTRIBUTION].parent), f"{CLIENT_DISTRIBUTION}=={version}"
    )
    _log("pip install keras-attention-client", started)
    assert (
        report[CLIENT_DISTRIBUTION]["download_info"]["url"] == wheels[CLIENT_DISTRIBUTION].as_uri()
    )
    assert set(report) <= {CLIENT_DISTRIBUTION, "grpcio", "protobuf", "numpy", "typing-extensions"}
    where = json.loads(
        client.python(
            "import importlib.util as u, json, keras_attention_client as c\n"
            "print(json.dumps([c.__file__] + [u.find_spec(n) is None for n in "
            "('tensorflow', 'keras', 'keras_attention')]))"
        )
    )
    assert Path(where[0]).is_relative_to(client.purelib)
    assert where[1:] == [True, True, True]  # not installed at all
    address, _ = served
    assert translate(client, address) == translate(installed, address)


@pytest.mark.slow
def test_another_keras_attention_is_reported_and_the_printed_fix_repairs_the_venv(
    installed, wheels, workdir
):
    """The stand-in for keras-attention 1.0.0 overwrites keras_attention/__init__.py (runs last)."""
    ours = str(wheels[MAIN])
    reinstall = ("--force-reinstall", "--no-deps", ours)
    installed.pip_install("--no-deps", str(foreign_distribution.build_wheel(workdir / "foreign")))
    version = installed.run("keras-attention", "--version")
    assert version.stdout.startswith(f"{MAIN} 0.2.0 from ")
    assert f"keras-attention 1.0.0 in {installed.purelib}" in version.stderr
    assert "cannot share an environment" in version.stderr
    assert (
        "Fix: pip uninstall keras-attention, then pip install --force-reinstall" in version.stderr
    )
    assert "__init__.py is not keras-attention-seq2seq 0.2.0's (it sets no __version__)" in (
        version.stderr
    )
    # Ours installed after it: ours runs, and importing warns.
    installed.pip_install(*reinstall)
    imported = installed.run("python", "-c", "import keras_attention")
    assert imported.stderr.count("ForeignDistributionWarning") == 1
    assert "pip uninstall keras-attention" in imported.stderr
    # The printed fix: the uninstall alone removes our __init__.py too; the reinstall restores it.
    installed.run("python", "-m", "pip", "uninstall", "-q", "-y", "keras-attention")
    version = installed.run("keras-attention", "--version")
    assert "__init__.py is not keras-attention-seq2seq 0.2.0's (it is missing)" in version.stderr
    installed.pip_install(*reinstall)
    version = installed.run("keras-attention", "--version")
    assert (version.stdout.startswith(f"{MAIN} 0.2.0 from "), version.stderr) == (True, "")
    imported = installed.run(
        "python", "-W", "error", "-c", "import keras_attention as k; print(k.__version__)"
    )
    assert imported.stdout.strip() == "0.2.0"
