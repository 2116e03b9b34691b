"""Load benchmark of the HTTP service: N clients for T seconds, continuous against dynamic batching and one at a time.

    python -m enzh.tools.server_bench --clients 1,4,16,64 --seconds 10 --lengths mixed   # starts its own servers
    python -m enzh.tools.server_bench --url http://127.0.0.1:8000 --clients 16    # an already running server

Each client sends one request, waits for the answer, and sends the next (closed loop). With ``--lengths short``
requests hold 1 to 4 sentences from the demo model's held-out set; with ``--lengths mixed`` (the default) 1 to 8,
a quarter of them long (three or four held-out sentences joined into one). With ``--mix both``, half of them
are Chinese (the zh->en demo's held-out sentences, sent with ``"target": "en"``), so the server routes requests
of both directions at once. ``--modes`` picks the servers started (``--batching-mode`` of each; default all
three, one after another, on the same model). Reports throughput (requests and sentences per second), latency
percentiles, errors, the ratio of the p99 under load to the median latency of a single request on an idle
server, and the same for the one-sentence requests alone; for those also their *slowdown*: each one's latency
under load against the same request's median latency alone, whose p99 is reported. ``--rounds N`` runs the modes
N times, the order reversed every other round (each mode a fresh server every round), and ends with a table of
each round's continuous against dynamic figures and their medians. With the servers it starts, it also reports the
CPU the server process used during the load (cores, and CPU ms per translated sentence; Linux), beside the CPU of
its own clients (aiohttp, light on the CPU), which share the machine. ``--server-flags="..."`` adds `enzh serve`
flags to the servers it starts (e.g. ``--server-flags="--express-rows 0"``). Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from enzh.runtime.cpu import cpu_features
from enzh.runtime.default_model import DEMO_TEST_SET, DEMO_ZH_EN_DIR
from enzh.runtime.optional import import_optional
from enzh.tools.stats import percentile


@dataclass
class Result:
    mode: str
    clients: int
    seconds: float
    requests: int
    sentences: int
    errors: int
    statuses: dict[str, int]
    single_p50_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    # The one-sentence requests: their median alone (idle server), and their p50/p99 under this load.
    one_alone_ms: float = float("nan")
    one_p50_ms: float = float("nan")
    one_p99_ms: float = float("nan")
    # The p99 of their slowdowns: each one's latency under load / the same request's median latency alone.
    one_slowdown_p99: float = float("nan")
    round_no: int = 1
    # CPU seconds used during the load: by the server process (NaN: not known, e.g. --url) and by these clients.
    server_cpu_s: float = float("nan")
    client_cpu_s: float = float("nan")

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.seconds

    @property
    def p99_ratio(self) -> float:
        return self.p99_ms / self.single_p50_ms if self.single_p50_ms else float("nan")

    @property
    def one_ratio(self) -> float:
        return self.one_p99_ms / self.one_alone_ms if self.one_alone_ms else float("nan")

    @property
    def server_cores(self) -> float:
        return self.server_cpu_s / self.seconds

    @property
    def client_cores(self) -> float:
        return self.client_cpu_s / self.seconds

    @property
    def server_cpu_ms_per_sentence(self) -> float:
        return self.server_cpu_s * 1000 / self.sentences if self.sentences else float("nan")

    def row(self) -> str:
        def ms(value: float) -> str:  # a cell without samples (every request failed, none of one sentence)
            return "—" if math.isnan(value) else f"{value:.0f}"

        def hundredths(value: float) -> str:  # cores, and CPU ms a sentence (NaN: the server's CPU is not known)
            return "—" if math.isnan(value) else f"{value:.2f}"

        return (
            f"| {self.mode} | {self.clients} | {self.requests_per_s:.1f} | {self.sentences_per_s:.1f} | "
            f"{ms(self.p50_ms)} | {ms(self.p95_ms)} | {ms(self.p99_ms)} | {ms(self.single_p50_ms)} | "
            f"{ratio_cell(self.p99_ratio)} | {ms(self.one_alone_ms)} | {ms(self.one_p50_ms)} | {ms(self.one_p99_ms)} | "
            f"{ratio_cell(self.one_ratio)} | {ratio_cell(self.one_slowdown_p99)} | {self.errors} | "
            f"{hundredths(self.server_cores)} | {hundredths(self.client_cores)} | "
            f"{hundredths(self.server_cpu_ms_per_sentence)} |"
        )


HEADER = (
    "| mode | clients | requests/s | sentences/s | p50 ms | p95 ms | p99 ms | single-request p50 ms "
    "| p99 / single | 1-sentence alone ms | 1-sentence p50 ms | 1-sentence p99 ms | 1-sentence p99 / alone "
    "| 1-sentence p99 slowdown | errors | server CPU cores | client CPU cores | server CPU ms / sentence |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def ratio_cell(value: float, digits: int = 1) -> str:
    """A ratio cell: ``1.5x``, or "—" for a ratio without samples."""
    return "—" if math.isnan(value) else f"{value:.{digits}f}x"


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, all its threads (Linux's /proc; NaN elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


MIXES = ("en", "both")  # English requests only; English and Chinese requests, half each
LENGTHS = ("short", "mixed")  # 1-4 held-out sentences; 1-8, a quarter of them long
MODES = ("continuous", "dynamic", "single")  # the servers' --batching-mode
MODE_NAMES = {"continuous": "continuous batching", "dynamic": "dynamic batching", "single": "one request at a time"}


@dataclass(frozen=True)
class Request:
    text: str
    sentences: int
    target: str | None  # None: the server's default (Chinese)


def workload(seed: int = 0, mix: str = "en", lengths: str = "short") -> list[Request]:
    """Requests of held-out sentences (``mix`` "both": each one English or Chinese at random): 1 to 4 of them
    (``lengths`` "short"), or 1 to 8 with a quarter of them long (``lengths`` "mixed": three or four held-out
    sentences joined into one sentence)."""

    def sources(path: Path) -> list[str]:
        return [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    english = sources(DEMO_TEST_SET)
    chinese = sources(DEMO_ZH_EN_DIR / "test.tsv") if mix == "both" else []
    rng = random.Random(seed)

    def sentence(pool: list[str], zh: bool) -> str:
        if lengths != "mixed" or rng.random() >= 0.25:
            return rng.choice(pool)
        parts = [p.rstrip(".!?。！？") for p in rng.sample(pool, rng.randint(3, 4))]
        if zh:
            return "，".join(parts) + "。"
        return ", and ".join(parts) + "."

    out = []
    for _ in range(500):
        k = rng.randint(1, 8 if lengths == "mixed" else 4)
        zh = bool(chinese) and rng.random() < 0.5
        texts = [sentence(chinese if zh else english, zh) for _ in range(k)]
        out.append(Request(("" if zh else " ").join(texts), k, "en" if zh else None))
    return out


async def _single(url: str, requests: list[Request], beam: int | None, n: int) -> list[float]:
    aiohttp = _aiohttp()
    latencies = []
    async with aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=300)) as client:
        for request in requests[:n]:
            start = time.perf_counter()
            async with client.post("/v1/translate", json=_payload(request, beam)) as response:
                await response.read()
                response.raise_for_status()
            latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def _aiohttp() -> Any:
    """aiohttp, the load's HTTP client: at about 100 requests/s its clients take under 0.1 of a core, where httpx's
    took 0.16 to 0.25 (docs/server.md), CPU taken from the server when they share its cores."""
    return import_optional("aiohttp", "the load benchmark's clients")


def _payload(request: Request, beam: int | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"text": request.text}
    if request.target is not None:
        payload["target"] = request.target
    if beam is not None:
        payload["beam_size"] = beam
    return payload


async def _load(
    url: str, requests: list[Request], beam: int | None, clients: int, seconds: float
) -> tuple[list[float], int, dict[str, int], float, list[tuple[Request, float]]]:
    aiohttp = _aiohttp()
    latencies: list[float] = []
    one: list[tuple[Request, float]] = []  # the one-sentence requests, with their latencies
    statuses: dict[str, int] = {}
    sentences = 0
    stop_at = time.perf_counter() + seconds

    async def client_loop(index: int, client: Any) -> None:
        nonlocal sentences
        position = index * 37
        while time.perf_counter() < stop_at:
            request = requests[position % len(requests)]
            position += 1
            start = time.perf_counter()
            try:
                async with client.post("/v1/translate", json=_payload(request, beam)) as response:
                    await response.read()
                    status = str(response.status)
            except (aiohttp.ClientError, TimeoutError) as exc:
                status = type(exc).__name__
            statuses[status] = statuses.get(status, 0) + 1
            if status == "200":
                latencies.append((time.perf_counter() - start) * 1000)
                sentences += request.sentences
                if request.sentences == 1:
                    one.append((request, latencies[-1]))
            elif status == "429":
                await asyncio.sleep(0.05)

    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(url, connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as client:
        await asyncio.gather(*(client_loop(i, client) for i in range(clients)))
    return latencies, sentences, statuses, time.perf_counter() - started, one


def single_latencies(url: str, beam: int | None, n: int = 30, mix: str = "en", lengths: str = "short") -> list[float]:
    """Latencies of ``n`` requests sent one after another to an otherwise idle server (after a warm-up)."""
    requests = workload(mix=mix, lengths=lengths)
    asyncio.run(_single(url, requests, beam, 5))
    return asyncio.run(_single(url, requests, beam, n))


def one_sentence_alone(
    url: str, beam: int | None, times: int = 3, mix: str = "en", lengths: str = "short"
) -> dict[Request, float]:
    """Every distinct one-sentence request of the workload, with its median latency over ``times`` runs, sent one
    after another to an idle server (what the load's one-sentence latencies are compared with)."""
    distinct = list(dict.fromkeys(r for r in workload(mix=mix, lengths=lengths) if r.sentences == 1))
    runs = [asyncio.run(_single(url, distinct, beam, len(distinct))) for _ in range(times)]
    return {request: statistics.median(run[i] for run in runs) for i, request in enumerate(distinct)}


def measure(
    url: str,
    mode: str,
    clients: int,
    seconds: float,
    beam: int | None,
    single: list[float],
    mix: str = "en",
    lengths: str = "short",
    *,
    one_alone: dict[Request, float] | None = None,
    round_no: int = 1,
    server_pid: int | None = None,
) -> Result:
    server_before = process_cpu_seconds(server_pid) if server_pid is not None else float("nan")
    client_before = sum(os.times()[:2])
    found = asyncio.run(_load(url, workload(mix=mix, lengths=lengths), beam, clients, seconds))
    client_cpu = sum(os.times()[:2]) - client_before
    server_cpu = process_cpu_seconds(server_pid) - server_before if server_pid is not None else float("nan")
    latencies, sentences, statuses, elapsed, one = found
    alone = one_alone or {}
    slowdowns = [latency / alone[request] for request, latency in one if request in alone]
    return Result(
        mode=mode,
        clients=clients,
        seconds=elapsed,
        requests=len(latencies),
        sentences=sentences,
        errors=sum(n for s, n in statuses.items() if s != "200"),
        statuses=statuses,
        single_p50_ms=percentile(single, 0.50),
        p50_ms=percentile(latencies, 0.50),
        p95_ms=percentile(latencies, 0.95),
        p99_ms=percentile(latencies, 0.99),
        one_alone_ms=percentile(list(alone.values()), 0.50),
        one_p50_ms=percentile([latency for _, latency in one], 0.50),
        one_p99_ms=percentile([latency for _, latency in one], 0.99),
        one_slowdown_p99=percentile(slowdowns, 0.99),
        round_no=round_no,
        server_cpu_s=server_cpu,
        client_cpu_s=client_cpu,
    )


def pair_table(results: list[Result]) -> str:
    """Continuous against dynamic batching, round by round at each client count, and the medians over the rounds
    (empty unless both modes ran)."""
    by = {(r.mode, r.clients, r.round_no): r for r in results}
    cont, dyn = MODE_NAMES["continuous"], MODE_NAMES["dynamic"]
    lines = [
        "| clients | round | continuous sentences/s | dynamic sentences/s | ratio | 1-sentence p99 / alone, "
        "continuous | dynamic | 1-sentence p99 slowdown, continuous | dynamic |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cells(values: list[float]) -> str:
        rate_c, rate_d, ratio, *per_sentence = values
        return f"{rate_c:.1f} | {rate_d:.1f} | {ratio_cell(ratio, 2)} | " + " | ".join(map(ratio_cell, per_sentence))

    for clients in dict.fromkeys(r.clients for r in results):
        rows = []
        for round_no in sorted({r.round_no for r in results}):
            c, d = by.get((cont, clients, round_no)), by.get((dyn, clients, round_no))
            if c is None or d is None:
                continue
            rows.append(
                [
                    c.sentences_per_s,
                    d.sentences_per_s,
                    c.sentences_per_s / d.sentences_per_s if d.sentences else float("nan"),
                    c.one_ratio,
                    d.one_ratio,
                    c.one_slowdown_p99,
                    d.one_slowdown_p99,
                ]
            )
            lines.append(f"| {clients} | {round_no} | {cells(rows[-1])} |")
        if len(rows) > 1:
            lines.append(
                f"| {clients} | median | {cells([statistics.median(col) for col in zip(*rows, strict=True)])} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[Any], timeout: float, exited: Callable[[], str] = str) -> None:
    """Poll ``url``/readyz until it answers 200; RuntimeError if ``proc`` exits first (with ``exited()`` appended
    to the message) or ``timeout`` seconds pass."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}{exited()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not become ready in {timeout:.0f} s")


class _Server:
    def __init__(self, extra: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "enzh", "-v", "serve", "--port", str(self.port), "--log-level", "warning", *extra],
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )

    def __enter__(self) -> _Server:
        wait_ready(self.url, self.proc, 300)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.server_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="benchmark this running server instead of starting servers")
    parser.add_argument("--model", help="model directory for the servers started here (default: the demo model)")
    parser.add_argument("--clients", default="1,4,16,64", help="comma-separated client counts (default 1,4,16,64)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--beam-size", type=int, help="beam width sent with every request (default: the server's)")
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime threads of the started servers")
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"the servers started, by --batching-mode, one after another (default {','.join(MODES)})",
    )
    parser.add_argument(
        "--mix",
        choices=MIXES,
        default="en",
        help="en: English requests (default); both: half English, half Chinese (needs a server with both directions)",
    )
    parser.add_argument(
        "--lengths",
        choices=LENGTHS,
        default="mixed",
        help="mixed: 1-8 sentences a request, a quarter of them long (default); short: 1-4 held-out sentences",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the modes this many times, the order reversed every other round, fresh servers each (default 1)",
    )
    parser.add_argument(
        "--server-flags",
        default="",
        metavar="FLAGS",
        help='more `enzh serve` flags for the servers started here, in one string: --server-flags="--express-rows 0"',
    )
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    if args.url and args.server_flags:
        parser.error(
            "--server-flags sets up the servers started here; a server given with --url runs as it was started"
        )
    try:
        server_flags = shlex.split(args.server_flags)
    except ValueError as exc:  # an unclosed quote
        parser.error(f"--server-flags: {exc} in {args.server_flags!r}; quote as in a shell")

    counts = [int(c) for c in str(args.clients).split(",") if c.strip()]
    modes = [m.strip() for m in str(args.modes).split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: unknown {', '.join(unknown)}; choose among {', '.join(MODES)}")
    results = []

    def run_all(url: str, mode: str, round_no: int, pid: int | None = None) -> None:
        single = single_latencies(url, args.beam_size, mix=args.mix, lengths=args.lengths)
        one = one_sentence_alone(url, args.beam_size, mix=args.mix, lengths=args.lengths)
        for clients in counts:
            results.append(
                measure(
                    url,
                    mode,
                    clients,
                    args.seconds,
                    args.beam_size,
                    single,
                    args.mix,
                    args.lengths,
                    one_alone=one,
                    round_no=round_no,
                    server_pid=pid,
                )
            )
            print(f"round {round_no}, {mode}, {clients} clients: statuses {results[-1].statuses}", file=sys.stderr)

    base = ["--threads", str(args.threads), *(["--model", args.model] if args.model else []), *server_flags]
    for round_no in range(1, args.rounds + 1):
        if args.url:
            run_all(args.url.rstrip("/"), "given server", round_no)
            continue
        for mode in modes if round_no % 2 else modes[::-1]:
            with _Server([*base, "--batching-mode", mode]) as server:
                run_all(server.url, MODE_NAMES[mode], round_no, server.proc.pid)
    # Every figure with the CPU it was measured on: int8 kernels and thread scaling differ between CPU kinds.
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M %Z')} on {os.cpu_count()} logical CPUs: {cpu_features().summary()}")
    print()
    print(HEADER)
    for result in results:
        print(result.row())
    pairs = pair_table(results)
    if pairs:
        print()
        print(pairs)
    if args.json:
        Path(args.json).write_text(
            json.dumps([asdict(r) | {"requests_per_s": r.requests_per_s} for r in results], indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
