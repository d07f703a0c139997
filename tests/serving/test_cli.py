"""`python -m keras_attention.serving` and `keras-attention serve` (the ready line, SIGTERM during
load), and the remote-translate entry points (waiting for the server, the errors)."""

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers.serving import add_version, arrived, gate_inputs, wait_for

from keras_attention.serving.server import cli
from keras_attention.serving.server.model_server import free_port
from keras_attention_client import ServingError, TranslationClient
from keras_attention_client import cli as client_cli


def test_sigterm_during_load_lets_in_flight_requests_finish(exports, tmp_path):
    base, gate = tmp_path / "gate-model", tmp_path / "gate"
    gate.mkdir()
    add_version(base, 1, exports["gate"])
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "keras_attention.serving",
        f"--port={port}",
        "--model_name=gate",
        f"--model_base_path={base}",
        "--file_system_poll_wait_seconds=0",
        "--shutdown_grace_seconds=120",
        # Each held request spins on an inter-op thread: enough of them for all four.
        "--tensorflow_inter_op_parallelism=8",
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
    )
    try:
        client = TranslationClient(
            f"127.0.0.1:{port}", model_name="gate", timeout=120, max_retries=0
        )
        client.wait_until_available(timeout=120)
        finished: list[tuple[str, object]] = []

        def request(tag: str) -> None:
            try:
                finished.append((tag, client.predict(gate_inputs(gate, tag))["tag"].tolist()))
            except ServingError as error:
                finished.append((tag, error))

        tags = ["a", "b", "c", "d"]
        threads = [threading.Thread(target=request, args=(tag,)) for tag in tags]
        for thread in threads:
            thread.start()
        wait_for(lambda: arrived(gate) == 4)  # all four are inside the Session run
        process.send_signal(signal.SIGTERM)
        # The server is draining: it refuses new requests but still holds the four.
        wait_for(lambda: _refuses(client))
        assert finished == [] and process.poll() is None
        (gate / "release").touch()
        for thread in threads:
            thread.join(timeout=120)
        exit_code = process.wait(timeout=120)
        output = process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert exit_code == 0, output
    assert sorted(finished) == [(tag, [tag.encode()]) for tag in tags], output
    assert "Model server stopped" in output
    ready = (
        f"python -m keras_attention.serving: serving gate (version 1) on gRPC 127.0.0.1:{port}\n"
    )
    assert output.count(ready) == 1, output
    with pytest.raises(ServingError) as caught:
        client.predict(gate_inputs(gate, "late"), timeout=2)
    assert caught.value.code == "UNAVAILABLE"
    client.close()


def _refuses(client) -> bool:
    try:
        client.model_status(timeout=5)
    except ServingError as error:
        return error.code == "UNAVAILABLE"
    return False


def test_start_up_failure_exit_status(tmp_path, caplog):
    parser = cli.build_parser()
    args = parser.parse_args([f"--model_config_file={tmp_path / 'missing.config'}", "--port=0"])
    assert cli.run_serve(args) == 1
    assert "Could not start the model server" in caplog.text


def test_serve_flags_take_both_spellings_and_booleans():
    parser = cli.build_parser()
    args = parser.parse_args(
        [
            "--model-base-path=/m",
            "--rest_api_port=8501",
            "--enable_model_warmup=false",
            "--enable_batching",
            "--file-system-poll-wait-seconds",
            "0.5",
        ]
    )
    options = cli.options_from_args(args)
    assert (options.model_base_path, options.rest_api_port) == ("/m", 8501)
    assert options.enable_model_warmup is False and options.enable_batching is True
    assert options.file_system_poll_wait_seconds == 0.5
    assert (options.port, options.model_name, options.host) == (8500, "default", "127.0.0.1")
    with pytest.raises(SystemExit):
        parser.parse_args(["--enable_batching=maybe"])


def _client_args(*argv):
    parser = argparse.ArgumentParser()
    client_cli.add_translate_arguments(parser)
    return parser.parse_args(argv)


def test_remote_translate_text_and_json(server):
    out = io.StringIO()
    args = _client_args("--server", server.address, "--model-name", "translator")
    assert client_cli.run_remote_translate(args, ["the cat", "a dog"], stdout=out) == 0
    assert out.getvalue().splitlines() == ["CAT THE", "DOG A"]

    out = io.StringIO()
    args = _client_args(
        "--server",
        server.rest_url,
        "--model-name",
        "translator",
        "--signature-name",
        "beam_search",
        "--format",
        "json",
    )
    assert client_cli.run_remote_translate(args, ["a b"], stdout=out) == 0
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert (record["source"], record["text"], record["tokens"]) == ("a b", "B A", ["B", "A"])
    assert record["score"] == -1.375
    assert np.array(record["attention"]).shape == (2, 2)


def test_remote_translate_reports_server_errors(server):
    err = io.StringIO()
    args = _client_args("--server", server.address, "--model-name", "nope", "--max-retries", "0")
    assert client_cli.run_remote_translate(args, ["a"], stdout=io.StringIO(), stderr=err) == 1
    message = err.getvalue().strip()
    assert message.startswith("error: NOT_FOUND: Servable not found for request: Latest(nope)")
    assert "no model named 'nope'" in message and "--model-name" in message


def test_beam_calls_search_as_beam_width_does_and_the_signature_flag_calls_beam_search(server):
    parser = argparse.ArgumentParser()
    client_cli.add_translate_arguments(parser)
    common = ["--server", server.address, "--model-name", "translator", "--batch-size", "1"]
    # --signature beam_search: text only, the width fixed at export.
    args = parser.parse_args([*common, "--signature", "beam_search"])
    (translation,) = client_cli.remote_translations(args, ["a b"])
    assert translation.score == -1.375  # beam_search: 0.125 below the greedy score
    # --beam 4 is --beam-width 4: the search signature with beam_width 4, which the stand-in
    # export (text only, like exports made before decoding inputs) lacks: a clear error
    # naming its version.
    for flag in ("--beam", "--beam-width"):
        args = parser.parse_args([*common, flag, "4"])
        with pytest.raises(ServingError, match="'translator' version 1 has no 'search' signature"):
            client_cli.remote_translations(args, ["a b"])
    err = io.StringIO()
    no_server = parser.parse_args(["--model-name", "translator"])
    assert client_cli.run_remote_translate(no_server, ["a"], stderr=err) == 2
    assert "--server" in err.getvalue()


def test_keras_attention_client_translate(server, tmp_path, capsys):
    argv = ["translate", "--server", server.address, "--model-name", "translator"]
    assert client_cli.main([*argv, "the cat", "a b c"]) == 0
    assert capsys.readouterr().out.splitlines() == ["CAT THE", "C B A"]
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("x y\n")
    json_argv = [*argv, "--signature", "beam_search", "--format", "json", "--file"]
    assert client_cli.main([*json_argv, str(sentences)]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["source"], record["text"]) == ("x y", "Y X")
    assert (
        client_cli.main(["translate", "--server", server.address, "--model-name", "nope", "a"]) == 1
    )
    assert "NOT_FOUND" in capsys.readouterr().err
    assert client_cli.main([*argv, "--file", str(tmp_path / "missing.txt")]) == 2
    assert "cannot read --file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        client_cli.main(["frobnicate"])


def test_serving_line_waits_for_every_model(exports, tmp_path):
    from keras_attention.serving import ModelServer, ServerOptions

    base = tmp_path / "translator"
    base.mkdir()
    options = ServerOptions(
        port=0, model_name="translator", model_base_path=str(base), file_system_poll_wait_seconds=0
    )
    with ModelServer(options) as model_server:
        assert cli.serving_line(model_server, "serve") is None  # no version yet
        add_version(base, 1, exports["upper"])
        add_version(base, 2, exports["lower"])
        model_server.manager.poll_once()
        assert cli.serving_line(model_server, "serve") == (
            f"serve: serving translator (version 2) on gRPC 127.0.0.1:{model_server.port}"
        )


def _start(*argv: str) -> subprocess.Popen:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )


def test_translate_right_after_serve_waits_for_the_server(exports, tmp_path):
    # `keras-attention serve ... &` then at once a client on each API: both wait for it.
    base = tmp_path / "translator"
    add_version(base, 1, exports["upper"])
    port, rest_port = free_port(), free_port()
    server = _start(
        "-m", "keras_attention.cli", "serve", "--model_name", "translator",
        "--model_base_path", str(base), "--port", str(port), "--rest_api_port", str(rest_port),
    )  # fmt: skip
    over_grpc = over_rest = None
    try:
        over_grpc = _start(
            "-m", "keras_attention.cli", "translate", "--server", f"localhost:{port}",
            "--model-name", "translator", "--timeout", "240", "the cat",
        )  # fmt: skip
        over_rest = _start(
            "-m", "keras_attention_client", "translate", "--server",
            f"http://127.0.0.1:{rest_port}", "--model-name", "translator", "--timeout", "240",
            "a dog",
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while None in (over_grpc.poll(), over_rest.poll()) and time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"the server exited ({server.returncode}): {server.stderr.read()}")
            time.sleep(0.2)
        grpc_out, grpc_err = over_grpc.communicate(timeout=10)
        rest_out, rest_err = over_rest.communicate(timeout=10)
        assert server.poll() is None, "the server was up when both clients finished"
        server.send_signal(signal.SIGTERM)
        server_out, server_err = server.communicate(timeout=120)
    finally:
        for process in (server, over_grpc, over_rest):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    assert (over_grpc.returncode, grpc_out, grpc_err) == (0, "CAT THE\n", "")
    assert (over_rest.returncode, rest_out, rest_err) == (0, "DOG A\n", "")
    assert server.returncode == 0, server_err
    assert server_out == (
        f"keras-attention serve: serving translator (version 1) on gRPC 127.0.0.1:{port}, "
        f"REST http://127.0.0.1:{rest_port}\n"
    )


@pytest.mark.parametrize("scheme", ["", "http://"], ids=["grpc", "rest"])
def test_translate_with_nothing_listening_fails_at_its_timeout(scheme, capsys):
    from keras_attention.cli import main

    address = f"{scheme}127.0.0.1:{free_port()}"
    start = time.monotonic()
    assert main(["translate", "--server", address, "--timeout", "2", "hello"]) == 1
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert err.startswith(
        f"keras-attention translate: server error: UNAVAILABLE: No model server answered at "
        f"{address} within 2 s ("
    ), err
    assert "Connection refused" in err
    assert 1.5 <= elapsed < 5
    start = time.monotonic()
    assert client_cli.main(["translate", "--server", address, "--timeout", "1", "hello"]) == 1
    assert f"error: UNAVAILABLE: No model server answered at {address} within 1 s" in (
        capsys.readouterr().err
    )
    assert time.monotonic() - start < 4


def test_keras_attention_client_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        client_cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("keras-attention-client ")
