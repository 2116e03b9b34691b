"""Soak test of the HTTP service: a real ``enzh serve`` under a steady mix of good, bad and hostile requests for a
long time, its memory (RSS) sampled throughout, to show that nothing grows without bound.

    python -m enzh.tools.soak --seconds 3600 --clients 4 --out soak.json     # the embedded pair, one hour
    python -m enzh.tools.soak --seconds 300 --sample-s 10 --char-limit 100000000

Every client loops over :data:`KINDS` in a random order: /v1 text and HTML, LibreTranslate text, forms, lists,
alternatives, detection, files (txt, html, docx) and their downloads, and the cases the service must refuse:
invalid JSON, wrong types, texts over the limits, a body over ``--max-body-bytes``, broken multipart, deep HTML
and a zip bomb as files, a client that leaves mid-body. The report gives the RSS of the server process (and of
its workers) at every sample, the drift (the last samples' median against the median of the samples just after
the warm-up, in percent), the answers by status, and any 5xx (there must be none). Timings and memory are
reported, never asserted; the exit code is 1 when a 5xx was answered or the drift is over ``--max-drift``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from enzh.runtime.default_model import DEMO_TEST_SET
from enzh.tools.server_bench import free_port, wait_ready

SENTENCES_FALLBACK = ["The weather is nice today.", "I would like a cup of coffee.", "Where is the station?"]
CHINESE = ["今天天气很好。", "我想喝一杯咖啡。", "火车站在哪里？"]


@dataclass
class Sample:
    t_s: float  # seconds since the load started
    rss_mib: float  # the server's resident memory, its worker processes included
    requests: int  # answers received so far


@dataclass
class Report:
    seconds: float
    clients: int
    command: list[str]
    cpu: str
    samples: list[Sample] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)  # "kind status" -> count
    server_errors: list[str] = field(default_factory=list)  # every 5xx, and every request that raised
    baseline_mib: float = 0.0
    final_mib: float = 0.0
    drift_percent: float = 0.0
    peak_mib: float = 0.0

    def summary(self) -> str:
        lines = [
            f"soak: {self.seconds:.0f} s, {self.clients} clients, {sum(self.statuses.values())} answers, "
            f"{len(self.server_errors)} 5xx or failures; CPU {self.cpu}",
            f"RSS after warm-up {self.baseline_mib:.1f} MiB, at the end {self.final_mib:.1f} MiB "
            f"(drift {self.drift_percent:+.1f} %), peak {self.peak_mib:.1f} MiB",
            "",
            "| t (s) | RSS (MiB) | answers |",
            "|---:|---:|---:|",
        ]
        lines += [f"| {s.t_s:.0f} | {s.rss_mib:.1f} | {s.requests} |" for s in self.samples]
        lines += ["", "| request | status | count |", "|---|---:|---:|"]
        for key, count in sorted(self.statuses.items()):
            kind, status = key.rsplit(" ", 1)
            lines.append(f"| {kind} | {status} | {count} |")
        return "\n".join(lines)


# -- the server -------------------------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (uvicorn's worker processes), in MiB (Linux /proc)."""
    total = 0
    for process in [pid, *_descendants(pid)]:
        try:
            for line in Path(f"/proc/{process}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1024


def _descendants(pid: int) -> list[int]:
    found = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []
    for child in map(int, children):
        found += [child, *_descendants(child)]
    return found


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                flags = next(x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("flags"))
                kind = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
                return f"{name} ({kind}, {os.cpu_count()} logical cores)"
    except (OSError, StopIteration):
        pass
    return "unknown"


# -- the requests -----------------------------------------------------------------------------------------


def _sentences() -> list[str]:
    try:
        lines = DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()
    except OSError:
        return SENTENCES_FALLBACK
    return [line.split("\t")[0] for line in lines if line.strip()][:500] or SENTENCES_FALLBACK


def _docx(text: str) -> bytes:
    try:
        import docx
    except ImportError:  # without the documents extra: a text file instead
        return text.encode()
    document = docx.Document()
    for sentence in text.split(". "):
        document.add_paragraph(sentence)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _zip_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", b" " * (8 << 20))
    return out.getvalue()


Call = Callable[[Any, str, random.Random], int]  # (httpx client, url, rng) -> the status answered


def _kinds(sentences: list[str], max_body: int) -> dict[str, Call]:
    bomb = _zip_bomb()
    docx_cache: dict[str, bytes] = {}

    def text(rng: random.Random, n: int = 3) -> str:
        return " ".join(rng.choice(sentences) for _ in range(rng.randint(1, n)))

    def v1(c: Any, url: str, rng: random.Random) -> int:
        return int(c.post(f"{url}/v1/translate", json={"text": text(rng)}).status_code)

    def v1_list_html(c: Any, url: str, rng: random.Random) -> int:
        texts = [f"<p><b>{text(rng, 1)}</b> <a href='x'>{text(rng, 1)}</a></p>" for _ in range(rng.randint(1, 4))]
        return int(c.post(f"{url}/v1/translate", json={"text": texts, "format": "html"}).status_code)

    def libre(c: Any, url: str, rng: random.Random) -> int:
        return int(c.post(f"{url}/translate", json={"q": text(rng), "source": "en", "target": "zh"}).status_code)

    def libre_form_auto(c: Any, url: str, rng: random.Random) -> int:
        q = rng.choice([text(rng, 1), rng.choice(CHINESE)])
        return int(c.post(f"{url}/translate", data={"q": q, "source": "auto", "target": "zh"}).status_code)

    def zh_en(c: Any, url: str, rng: random.Random) -> int:
        q = [rng.choice(CHINESE) for _ in range(rng.randint(1, 3))]
        return int(c.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en"}).status_code)

    def alternatives(c: Any, url: str, rng: random.Random) -> int:
        body = {"q": text(rng, 1), "source": "en", "target": "zh", "alternatives": 2}
        return int(c.post(f"{url}/translate", json=body).status_code)

    def detect(c: Any, url: str, rng: random.Random) -> int:
        return int(c.post(f"{url}/detect", data={"q": text(rng)}).status_code)

    def file(c: Any, url: str, rng: random.Random) -> int:
        kind = rng.choice(["txt", "html", "docx"])
        body = text(rng, 6)
        if kind == "docx":
            data = docx_cache.setdefault(body, _docx(body)) if len(docx_cache) < 64 else _docx(body)
        elif kind == "html":
            data = f"<html><body><h1>{text(rng, 1)}</h1><p>{body}</p></body></html>".encode()
        else:
            data = body.encode()
        answer = c.post(f"{url}/translate_file", data={"target": "zh"}, files={"file": (f"a.{kind}", data)})
        if answer.status_code == 200:
            return int(c.get(answer.json()["translatedFileUrl"]).status_code)
        return int(answer.status_code)

    def bad_json(c: Any, url: str, rng: random.Random) -> int:
        body = rng.choice([b'{"text": ', b"[1, 2]", b'{"text": 5}', b"\xff\xfe", b'{"text": "' + b"[" * 5000])
        headers = {"Content-Type": "application/json"}
        return int(c.post(f"{url}/v1/translate", content=body, headers=headers).status_code)

    def over_limits(c: Any, url: str, rng: random.Random) -> int:
        body = rng.choice([{"text": "x" * 10_001}, {"text": ["Hi."] * 65}, {"text": "Hi.", "beam_size": 99}])
        return int(c.post(f"{url}/v1/translate", json=body).status_code)

    def too_large(c: Any, url: str, rng: random.Random) -> int:
        return int(c.post(f"{url}/translate", content=b"q=" + b"x" * (max_body + 1)).status_code)

    def broken_multipart(c: Any, url: str, rng: random.Random) -> int:
        headers = {"Content-Type": "multipart/form-data; boundary=B"}
        body = b'--B\r\nContent-Disposition: form-data; name="q"\r\n\r\n' + text(rng).encode()  # never closed
        return int(c.post(f"{url}/translate", content=body, headers=headers).status_code)

    def hostile_files(c: Any, url: str, rng: random.Random) -> int:
        name, data = rng.choice(
            [("a.docx", bomb), ("a.html", b"<b>" * 2000 + b"Hi." + b"</b>" * 2000), ("a.docx", b"PK\x03\x04 junk")]
        )
        return int(c.post(f"{url}/translate_file", data={"target": "zh"}, files={"file": (name, data)}).status_code)

    def leaves_mid_body(c: Any, url: str, rng: random.Random) -> int:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
            s.sendall(b'Content-Length: 1000\r\n\r\n{"text": "Hello')
        return 0  # no answer: the client left

    def reads(c: Any, url: str, rng: random.Random) -> int:
        path = rng.choice(["/languages", "/frontend/settings", "/readyz", "/metrics", "/health", "/spec"])
        return int(c.get(f"{url}{path}").status_code)

    return {
        "v1": v1,
        "v1 html list": v1_list_html,
        "libre json": libre,
        "libre form auto": libre_form_auto,
        "libre zh->en": zh_en,
        "alternatives": alternatives,
        "detect": detect,
        "file + download": file,
        "bad json": bad_json,
        "over limits": over_limits,
        "body too large": too_large,
        "broken multipart": broken_multipart,
        "hostile files": hostile_files,
        "leaves mid-body": leaves_mid_body,
        "reads": reads,
    }


# -- the run ----------------------------------------------------------------------------------------------


def run_soak(
    url: str,
    pid: int,
    seconds: float,
    clients: int,
    sample_s: float,
    max_body: int,
    seed: int = 0,
    rounds: int | None = None,
) -> tuple[list[Sample], Counter[str], list[str]]:
    """``clients`` threads sending every kind of request in a random order, round after round, for ``seconds``
    (or until each has done ``rounds`` rounds), the RSS of ``pid`` sampled every ``sample_s``; returns the
    samples, the answers by kind and status, and the failures (5xx, requests that raised)."""
    import httpx

    kinds = _kinds(_sentences(), max_body)
    statuses: Counter[str] = Counter()
    failures: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    started = time.monotonic()

    def client(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        names = list(kinds)
        with httpx.Client(timeout=60) as http:
            done = 0
            while not stop.is_set() and (rounds is None or done < rounds):
                done += 1
                rng.shuffle(names)
                for name in names:
                    if stop.is_set():
                        return
                    try:
                        status = kinds[name](http, url, rng)
                    except httpx.HTTPError as exc:  # a 413 may cut the connection after its answer
                        status = -1
                        if name != "body too large":
                            with lock:
                                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                    with lock:
                        statuses[f"{name} {status}"] += 1
                        if status >= 500:
                            failures.append(f"{name}: {status}")

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    samples = [Sample(0.0, rss_mib(pid), 0)]
    try:
        next_sample = started + sample_s
        while time.monotonic() - started < seconds and any(t.is_alive() for t in threads):
            time.sleep(0.1)
            if time.monotonic() < next_sample and any(t.is_alive() for t in threads):
                continue
            next_sample += sample_s
            with lock:
                done = sum(statuses.values())
            samples.append(Sample(round(time.monotonic() - started, 1), round(rss_mib(pid), 1), done))
            print(f"  t={samples[-1].t_s:7.1f} s  RSS {samples[-1].rss_mib:7.1f} MiB  answers {done}", flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    return samples, statuses, failures


def drift(samples: list[Sample], warmup_s: float) -> tuple[float, float, float]:
    """(baseline, final, percent): the median RSS of the first samples after ``warmup_s`` and of the last ones
    (a fifth of the run each, at least one sample), and the change between them."""
    after = [s for s in samples if s.t_s >= warmup_s] or samples
    window = max(1, len(after) // 5)
    baseline = statistics.median(s.rss_mib for s in after[:window])
    final = statistics.median(s.rss_mib for s in after[-window:])
    return baseline, final, (final - baseline) / baseline * 100 if baseline else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3600, help="how long the load runs (default 3600)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients, each a closed loop (4)")
    parser.add_argument("--sample-s", type=float, default=30, help="seconds between RSS samples (30)")
    parser.add_argument("--warmup-s", type=float, default=None, help="samples before this are not the baseline")
    parser.add_argument("--max-drift", type=float, default=5.0, help="exit 1 above this drift in percent (5)")
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "serve_args", nargs="*", help="after --: flags for `enzh serve` (default: the embedded pair, 1 worker)"
    )
    args = parser.parse_args(argv)
    port = free_port()
    command = [sys.executable, "-m", "enzh", "serve", "--port", str(port), *args.serve_args]
    max_body = 1 << 20
    if "--max-body-bytes" in args.serve_args:
        max_body = int(args.serve_args[args.serve_args.index("--max-body-bytes") + 1])
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(url, process, timeout=300)
        print(f"soak: enzh {' '.join(command[3:])} for {args.seconds:.0f} s with {args.clients} clients", flush=True)
        samples, statuses, failures = run_soak(
            url, process.pid, args.seconds, args.clients, args.sample_s, max_body, args.seed
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    warmup = args.warmup_s if args.warmup_s is not None else min(300.0, args.seconds / 10)
    baseline, final, percent = drift(samples, warmup)
    report = Report(
        seconds=args.seconds,
        clients=args.clients,
        command=["enzh", *command[3:]],
        cpu=_cpu(),
        samples=samples,
        statuses=dict(statuses),
        server_errors=failures[:100],
        baseline_mib=round(baseline, 1),
        final_mib=round(final, 1),
        drift_percent=round(percent, 2),
        peak_mib=max(s.rss_mib for s in samples),
    )
    print(report.summary())
    if args.out:
        args.out.write_text(json.dumps(asdict(report), indent=2) + "\n", encoding="utf-8")
    for failure in failures[:20]:
        print(f"soak: {failure}", file=sys.stderr)
    return 1 if failures or percent > args.max_drift else 0


if __name__ == "__main__":
    sys.exit(main())
