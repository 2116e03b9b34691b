"""``enzh serve``: its flags and the ServeOptions fields stay in sync, and it runs uvicorn with the options."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import pytest

from enzh.cli import serve as serve_cli
from enzh.cli.main import build_parser, main
from enzh.cli.option_flags import add_option_flags, env_name, options_from_args
from enzh.runtime.default_model import default_model_dirs
from enzh.runtime.flags import option
from enzh.serve.options import ENV_OPTIONS, ENV_PREFIX, ServeOptions
from enzh.serve.run import APP_FACTORY


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def serve_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices["serve"]
    return parser


def flag_of(field: str) -> str:
    return serve_cli.FLAGS.get(field, "--" + field.replace("_", "-"))


def test_cli_has_serve():
    args = parse("--port", "0", "--max-batch-tokens", "512", "--no-batching")
    options = serve_cli.options_from_args(args)
    assert options.port == 0 and options.max_batch_tokens == 512 and options.batching is False
    assert args.run is serve_cli.run


def test_serve_defaults_are_the_serve_options_defaults():
    assert serve_cli.options_from_args(parse()) == ServeOptions()


def _other_value(field: dataclasses.Field, default: object) -> object:
    """A valid value of ``field`` that is not its default."""
    if isinstance(default, bool):
        return not default
    if field.name == "model_dirs":
        return ("some/model",)
    if field.name == "glossaries":
        return ("terms.tsv",)
    if field.name == "host":
        return "0.0.0.0"
    if field.name == "default_beam_size":
        return 2
    if field.name == "api_keys":
        return "keys.db"
    if field.name == "cors_origins":
        return "*"
    if field.name == "trusted_proxies":
        return "10.0.0.0/8,::1"
    if field.name == "batching_mode":
        return "dynamic"
    if isinstance(default, int):
        return default + 1
    assert isinstance(default, float), field.name
    return default + 0.5


def test_every_serve_option_has_its_flag():
    flags = {s for action in serve_parser()._actions for s in action.option_strings}
    fields = {f.name: f for f in dataclasses.fields(ServeOptions)}
    assert serve_cli.NOT_FLAGS.issubset(fields)
    defaults = ServeOptions()
    for name, field in fields.items():
        if name in serve_cli.NOT_FLAGS:
            assert flag_of(name) not in flags, f"{name} has a flag: take it out of NOT_FLAGS"
            continue
        flag = flag_of(name)
        assert flag in flags, f"ServeOptions.{name} has no flag {flag} in `enzh serve`"
        value = _other_value(field, getattr(defaults, name))
        argv = [flag] if isinstance(value, bool) else [flag, *value] if isinstance(value, tuple) else [flag, str(value)]
        options = serve_cli.options_from_args(parse(*argv))
        assert getattr(options, name) == value, (flag, value)
        assert options == dataclasses.replace(defaults, **{name: value}), f"{flag} changed another field"
    # and every flag but these sets a field
    own = {flag_of(name) for name in fields if name not in serve_cli.NOT_FLAGS}
    assert flags - own == {"-h", "--help", "--log-level", *serve_cli.RAY_FLAGS}


@pytest.mark.parametrize("workers", [1, 3])
def test_serve_runs_uvicorn_with_the_options(monkeypatch, workers):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append((app, kwargs)))
    monkeypatch.setenv(ENV_OPTIONS, "")  # restored (removed) after the test, whatever serve() sets
    monkeypatch.delenv(ENV_OPTIONS)
    args = parse("--port", "0", "--workers", str(workers), "--drain-timeout-s", "7", "--log-level", "warning")
    assert serve_cli.run(args) == 0
    [(app, kwargs)] = calls
    assert kwargs["port"] == 0 and kwargs["log_level"] == "warning" and kwargs["timeout_graceful_shutdown"] == 12
    # no proxy is trusted by default, not even loopback (uvicorn's own default trusts 127.0.0.1 and ::1)
    assert kwargs["proxy_headers"] is False and kwargs["forwarded_allow_ips"] == []
    if workers == 1:
        served = app.state.service.options
        assert served.drain_timeout_s == 7 and served.model_dirs == tuple(str(d) for d in default_model_dirs())
        assert ENV_OPTIONS not in os.environ
    else:
        assert app == APP_FACTORY and kwargs["factory"] is True and kwargs["workers"] == 3
        options = ServeOptions(**json.loads(os.environ[ENV_OPTIONS]))
        assert options.workers == 3 and options.drain_timeout_s == 7
        assert options.model_dirs == tuple(str(d) for d in default_model_dirs())  # the embedded pair's


def test_trusted_proxies_turn_on_uvicorns_proxy_headers(monkeypatch, capsys):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    assert serve_cli.run(parse("--port", "0", "--trusted-proxies", "10.0.0.1, 10.1.2.3/16,::1")) == 0
    [kwargs] = calls
    assert kwargs["proxy_headers"] is True
    assert kwargs["forwarded_allow_ips"] == ["10.0.0.1/32", "10.1.0.0/16", "::1/128"]  # what uvicorn reads right
    assert main(["serve", "--port", "0", "--trusted-proxies", "localhost"]) == 2  # before uvicorn starts
    assert "trusted_proxies must be IP addresses or networks" in capsys.readouterr().err
    assert len(calls) == 1


def test_model_flag_repeats_and_model_dir_still_names_one_model():
    options = serve_cli.options_from_args(parse("--model", "a", "--model", "b"))
    assert options.model_dirs == ("a", "b") and options.models == ("a", "b") and options.model_dir is None
    assert ServeOptions(model_dir="a").models == ("a",) and ServeOptions().models == ()
    again = ServeOptions(**json.loads(json.dumps(dataclasses.asdict(options))))  # through ENV_OPTIONS (--workers)
    assert again == options and again.model_dirs == ("a", "b")
    with pytest.raises(ValueError, match="not both"):
        ServeOptions(model_dir="a", model_dirs=("b",))
    with pytest.raises(ValueError, match="more than once"):
        ServeOptions(model_dirs=("a", "a"))
    with pytest.raises(ValueError, match="model directories"):
        ServeOptions(model_dirs=("",))


# -- flags made from the fields (enzh.cli.option_flags) ----------------------------------------------------


def test_every_field_with_a_flag_has_its_environment_variable(monkeypatch):
    defaults = ServeOptions()
    for field in dataclasses.fields(ServeOptions):
        if field.name in serve_cli.NOT_FLAGS:
            continue
        value = _other_value(field, getattr(defaults, field.name))
        variable = env_name(ENV_PREFIX, flag_of(field.name))
        text = "1" if isinstance(value, bool) else os.pathsep.join(value) if isinstance(value, tuple) else str(value)
        monkeypatch.setenv(variable, text)
        assert serve_cli.options_from_args(parse()) == dataclasses.replace(defaults, **{field.name: value}), variable
        monkeypatch.delenv(variable)
    assert env_name(ENV_PREFIX, "--max-body-bytes") == "ENZH_SERVE_MAX_BODY_BYTES"


def test_a_flag_wins_over_its_variable_and_bad_variables_are_one_line(monkeypatch, capsys):
    monkeypatch.setenv("ENZH_SERVE_PORT", "9001")
    monkeypatch.setenv("ENZH_SERVE_MODEL", os.pathsep.join(["a", "b"]))
    monkeypatch.setenv("ENZH_SERVE_NO_BATCHING", "0")
    options = serve_cli.options_from_args(parse("--port", "9002"))
    assert options.port == 9002 and options.model_dirs == ("a", "b") and options.batching is True
    monkeypatch.setenv("ENZH_SERVE_PORT", "eighty")
    assert main(["serve"]) == 2
    assert (
        capsys.readouterr().err == "enzh serve: error: ENZH_SERVE_PORT must be an integer (like --port), got 'eighty'\n"
    )
    monkeypatch.setenv("ENZH_SERVE_PORT", "80")
    monkeypatch.setenv("ENZH_SERVE_NO_BATCHING", "maybe")
    assert main(["serve"]) == 2
    assert "ENZH_SERVE_NO_BATCHING must be 1 or 0 (like --no-batching), got 'maybe'" in capsys.readouterr().err
    monkeypatch.setenv("ENZH_SERVE_NO_BATCHING", "1")
    monkeypatch.setenv("ENZH_SERVE_MAX_BEAM_SIZE", "0")  # converted, then refused by ServeOptions itself
    assert main(["serve"]) == 2
    assert "max_beam_size must be an integer >= 1, got 0" in capsys.readouterr().err


def test_the_help_lists_every_flag_with_its_help_and_default(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    packed = "".join(text.split())  # argparse wraps lines at spaces and after hyphens
    for field in dataclasses.fields(ServeOptions):
        if field.name in serve_cli.NOT_FLAGS:
            continue
        assert flag_of(field.name) in text
        assert "".join(field.metadata["help"].split()) in packed, field.name
    expected = [
        "--max-body-bytes N request body size; 413 above, from Content-Length or counted while streaming; default: "
        "1048576",
        "--beam-size N default beam width; default: the model's, from its manifest.json",
        "--no-batching run requests one at a time",
    ]
    for line in expected:
        assert "".join(line.split()) in packed, line
    assert "ENZH_SERVE_HOST" in text


def test_a_new_field_is_a_new_flag():
    """What adding an option takes: one field with option(...); its flag, help and variable follow."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Settings:
        size: int = option(3, "how many", group="sizes")
        ratio: float | None = option(None, "how much", default_text="as it comes")
        names: tuple[str, ...] = option((), "a name; repeat for more", flag="--name", metavar="NAME")
        quiet: bool = option(False, "say less")
        internal: str = option("x", "not for the command line", flag=None)

    parser = argparse.ArgumentParser(prog="demo")
    add_option_flags(parser, Settings, env_prefix="DEMO_")
    args = parser.parse_args(["--size", "5", "--name", "a", "--name", "b", "--quiet"])
    assert options_from_args(args, Settings, env_prefix="DEMO_", environ={"DEMO_RATIO": "0.5"}) == Settings(
        size=5, ratio=0.5, names=("a", "b"), quiet=True
    )
    assert options_from_args(parser.parse_args([]), Settings, env_prefix="DEMO_", environ={}) == Settings()
    text = "".join(parser.format_help().split())
    for line in ("sizes: --size N how many; default: 3", "--ratio X how much; default: as it comes"):
        assert "".join(line.split()) in text, line
    assert "--nameNAMEaname;repeatformore" in text and "--quietsayless" in text and "--internal" not in text
