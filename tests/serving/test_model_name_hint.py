"""`keras-attention translate --server` without `--model-name`: a NOT_FOUND that says what to do."""

from keras_attention.cli import main


def test_missing_model_name_gets_a_hint(server, capsys):
    # The server serves "translator", "slow" and "examples"; none is called "default".
    argv = ["translate", "--server", server.address, "--max-retries", "0", "a b"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "NOT_FOUND: Servable not found for request: Latest(default)" in err
    assert "no model named 'default' (TF Serving's default name; --model-name was not given)" in err
    assert "--model_name" in err and "--model_config_file" in err

    assert main([*argv, "--model-name", "translator"]) == 0
    assert capsys.readouterr().out.splitlines() == ["B A"]


def test_other_errors_get_no_model_name_hint(server, capsys):
    argv = ["translate", "--server", server.address, "--model-name", "translator"]
    assert main([*argv, "--model-version", "99", "--max-retries", "0", "a"]) == 1
    err = capsys.readouterr().err
    assert "Specific(translator, 99)" in err and "--model-name NAME" not in err
