"""On a small local Ray (2 CPUs): corpus jobs write the in-process bytes, a SIGKILLed worker loses nothing, and
the service on Ray Serve answers the v1 and LibreTranslate APIs from two replicas."""

from __future__ import annotations

import os
import signal
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from ray_harness import (
    WRITERS,
    FailingShardTranslator,
    SlowShardTranslator,
    demo_lines,
    descendants,
    in_process,
    local_ray,
    shard_files,
    wait_until,
)

from enzh.documents.files import prepare
from enzh.runtime.translator import Translator
from enzh.scale.corpus import CorpusReport, translate_on_ray
from enzh.scale.errors import ScaleError
from enzh.scale.options import CorpusOptions, ReplicaOptions

pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_cluster():
    with local_ray(num_cpus=2) as ray:
        yield ray


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(intra_op_threads=1)


@pytest.mark.parametrize("format", ["txt", "jsonl"])  # every format: test_scale_shards, without Ray
def test_corpus_on_ray_writes_the_in_process_bytes(tmp_path, ray_cluster, translator, format):
    source = WRITERS[format](tmp_path / f"in.{format}", demo_lines(240))
    expected = in_process(source, tmp_path / f"ref.{format}", translator, beam_size=1)
    output = tmp_path / f"out.{format}"
    report = translate_on_ray(
        prepare(source, output, beam_size=1), CorpusOptions(workers=2, shard_size=40), progress=False
    )
    assert output.read_bytes() == expected
    assert report.shards > 2 and report.reused == 0 and report.sentences > 0
    assert sum(report.workers.values()) == report.shards
    assert not output.with_name(output.name + ".enzh-shards").exists()


def test_a_chinese_corpus_goes_to_the_zh_en_model_on_ray(tmp_path, ray_cluster):
    """The CLI tells the file's language, and the workers load the zh->en model it picked: the in-process bytes."""
    from enzh.cli.main import main
    from enzh.runtime.default_model import DEMO_ZH_EN_DIR

    lines = [
        zh for zh, _ in (line.split("\t") for line in (DEMO_ZH_EN_DIR / "test.tsv").read_text("utf-8").splitlines())
    ]
    source = tmp_path / "zh.txt"
    source.write_text("\n".join(lines[:120]) + "\n", encoding="utf-8")
    zh_en = Translator.load(DEMO_ZH_EN_DIR, intra_op_threads=1)
    expected = "".join(f"{t}\n" for t in zh_en.translate(lines[:120], beam_size=1))
    args = ["translate-file", str(source), str(tmp_path / "en.txt"), "--beam-size", "1", "--ray", "local"]
    assert main([*args, "--workers", "2", "--shard-size", "40"]) == 0
    assert (tmp_path / "en.txt").read_text(encoding="utf-8") == expected


def test_a_killed_worker_loses_nothing(tmp_path, ray_cluster, translator):
    source = WRITERS["jsonl"](tmp_path / "in.jsonl", demo_lines(300))
    expected = in_process(source, tmp_path / "ref.jsonl", translator, beam_size=1)
    output = tmp_path / "out.jsonl"
    prepared = prepare(source, output, beam_size=1)
    reports: list[CorpusReport] = []
    errors: list[BaseException] = []

    def job() -> None:
        try:
            options = CorpusOptions(workers=2, shard_size=10)
            reports.append(translate_on_ray(prepared, options, progress=False, worker=SlowShardTranslator))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=job)
    thread.start()
    try:
        wait_until(lambda: len(shard_files(output)) >= 3 or not thread.is_alive(), 90, "three finished shards")
        actors = [pid for pid, command in descendants(os.getpid()).items() if "ShardTranslator" in command]
        assert actors, "no worker actor process found"
        finished_at_kill = len(shard_files(output))
        os.kill(actors[0], signal.SIGKILL)
    finally:
        thread.join(180)
    assert not errors, errors
    [report] = reports
    assert finished_at_kill < report.shards, "the job was over before the kill"
    assert output.read_bytes() == expected
    assert sum(report.workers.values()) == report.shards and len(report.workers) >= 2


def test_a_failing_shard_fails_the_job_and_a_rerun_resumes(tmp_path, ray_cluster, translator):
    source = WRITERS["txt"](tmp_path / "in.txt", demo_lines(100))
    expected = in_process(source, tmp_path / "ref.txt", translator, beam_size=1)
    output = tmp_path / "out.txt"
    options = CorpusOptions(workers=1, shard_size=10)
    with pytest.raises(ScaleError, match="shard 3 cannot be translated.*run the same command again"):
        translate_on_ray(prepare(source, output, beam_size=1), options, progress=False, worker=FailingShardTranslator)
    kept = [int(path.stem) for path in shard_files(output)]
    assert 3 not in kept and not output.exists()
    report = translate_on_ray(prepare(source, output, beam_size=1), options, progress=False)
    assert report.reused == len(kept) and sum(report.workers.values()) == report.shards - len(kept)
    assert output.read_bytes() == expected


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_replicas_answer_the_api(ray_cluster, translator):
    httpx = pytest.importorskip("httpx")
    serve = pytest.importorskip("ray.serve")
    from enzh.scale.serve_app import DEPLOYMENT, build
    from enzh.serve.options import ServeOptions

    port = _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        application = build(ServeOptions(threads=1), ReplicaOptions(replicas=2, cpus_per_replica=0.5))
        serve.run(application, name="enzh-test", route_prefix="/")
        status = serve.status().applications["enzh-test"]
        assert status.deployments[DEPLOYMENT].replica_states.get("RUNNING") == 2
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/readyz").status_code == 200
            text = "Where is the school?"
            v1 = client.post("/v1/translate", json={"text": [text, "Paul arrived."], "beam_size": 1})
            assert v1.status_code == 200, v1.text
            assert v1.json()["translations"] == translator.translate([text, "Paul arrived."], beam_size=1)
            default = client.post("/v1/translate", json={"text": text}).json()["translations"][0]
            libre = client.post("/translate", json={"q": text, "source": "en", "target": "zh"})
            assert libre.status_code == 200, libre.text
            assert libre.json()["translatedText"] == default == translator.translate([text])[0]
            bad = client.post("/v1/translate", json={"text": 5})
            assert 400 <= bad.status_code < 500 and "error" in bad.json()

            lines = demo_lines(12, offset=100)

            def ask(line: str) -> str:
                answer = client.post("/v1/translate", json={"text": line, "beam_size": 1})
                assert answer.status_code == 200, answer.text
                return str(answer.json()["translations"][0])

            with ThreadPoolExecutor(6) as pool:
                assert list(pool.map(ask, lines)) == translator.translate(lines, beam_size=1)
    finally:
        serve.shutdown()


def test_serve_app_builder_arguments():
    from enzh.scale.serve_app import build_app, deployment_options
    from enzh.serve.options import ServeOptions

    build_app({"replicas": "2", "max_replicas": 4, "threads": "2", "default_beam_size": "1", "model": "none"})
    with pytest.raises(ScaleError, match="unknown arguments \\['bogus'\\]"):
        build_app({"bogus": "1"})
    fixed = deployment_options(ServeOptions(threads=2), ReplicaOptions(replicas=3))
    assert fixed["num_replicas"] == 3 and fixed["ray_actor_options"] == {"num_cpus": 2}
    assert "autoscaling_config" not in fixed
    scaled = deployment_options(ServeOptions(), ReplicaOptions(replicas=1, max_replicas=5))
    assert "num_replicas" not in scaled and scaled["ray_actor_options"] == {"num_cpus": 1}
    assert scaled["autoscaling_config"]["min_replicas"] == 1 and scaled["autoscaling_config"]["max_replicas"] == 5
