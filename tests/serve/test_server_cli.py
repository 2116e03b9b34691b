"""``enzh serve``: its flags and the ServeOptions fields stay in sync, and it runs uvicorn with the options."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import pytest

from enzh.cli import serve as serve_cli
from enzh.cli.main import build_parser, main
from enzh.runtime.default_model import default_model_dirs
from enzh.serve.options import ENV_OPTIONS, ServeOptions
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
