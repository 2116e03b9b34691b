"""What the service can be told: :class:`ServeOptions` (every limit is enforced and answered with a JSON error).

Each field is declared once, with its default and its help (:func:`enzh.runtime.flags.option`): `enzh serve`'s
flags, their help and their ``ENZH_SERVE_*`` environment variables are made from them
(:mod:`enzh.cli.option_flags`), so a new field with ``option(...)`` is a new flag. Imports nothing of the web
stack, so the command line can build options without the serve extra.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from enzh.runtime.errors import require
from enzh.runtime.flags import option
from enzh.serve.scheduler import MAX_RUNNING_ROWS, MODES, SchedulerOptions, beam_rows_for, main_lanes_for

# uvicorn's worker processes (``--workers N``) get their options as the JSON of a ServeOptions in this variable.
ENV_OPTIONS = "ENZH_SERVE_OPTIONS"
# `enzh serve`'s flags can be given as environment variables: this and the flag's name (ENZH_SERVE_PORT).
ENV_PREFIX = "ENZH_SERVE_"
# The help sections of `enzh serve` (each field's flag is listed under its group).
MODELS = "models and workers"
BATCHING = "batching and decoding"
LIMITS = "limits (each answered with a JSON error)"
ACCESS = 'keys, per-client limits, timeouts, CORS (docs/server.md "Keys and limits")'
LIBRE = 'LibreTranslate API (docs/server.md "LibreTranslate API")'


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """Everything the service can be told; every limit is enforced and answered with a JSON error."""

    # -- models and workers
    # one model (what model_dirs was before there were several), for code that embeds the app; None: model_dirs
    model_dir: str | None = option(None, "one model directory", flag=None)
    model_dirs: tuple[str, ...] = option(
        (),
        "exported model directory; repeat for several, each text going to the model of its direction",
        flag="--model",
        metavar="DIR",
        default_text="the embedded pair, en->zh and zh->en",
        group=MODELS,
    )
    host: str = option("127.0.0.1", "address to listen on", metavar="HOST", group=MODELS)
    port: int = option(8000, "port to listen on, 0 for any free one", group=MODELS)
    workers: int = option(1, "uvicorn worker processes, each with its own model and scheduler", group=MODELS)
    threads: int = option(0, "ONNX Runtime intra-op threads per worker, 0 for all cores", group=MODELS)
    # -- batching and decoding
    max_batch_tokens: int = option(2048, "source tokens per batch", group=BATCHING)
    max_queue_delay_ms: float = option(5.0, "how long the oldest sentence may wait for a batch to fill", group=BATCHING)
    max_queue_size: int = option(1024, "sentences waiting for the worker; 429 + Retry-After above", group=BATCHING)
    batching: bool = option(
        True, "run requests one at a time (the benchmark's baseline)", flag="--no-batching", group=BATCHING
    )
    # docs/server.md "How requests are batched"
    batching_mode: str = option(
        "continuous",
        "continuous: sentences join and leave a running decode at every step; dynamic: whole token-budget "
        "batches; single: one request at a time (what --no-batching also gives)",
        metavar="|".join(MODES),
        group=BATCHING,
    )
    max_running_rows: int = option(
        MAX_RUNNING_ROWS,
        "continuous batching: decoder rows (sentences x beams) the main lanes run at once (each lane its part)",
        group=BATCHING,
    )
    max_beam_rows: int = option(
        0,
        "continuous batching: a beam search's sentence joins the main lanes only while their rows stay within this "
        "many, each lane's within its part; every running sentence waits for each step over its lane's rows (0: "
        "automatic, by the model's vocabulary: 64 for opus-mt-en-zh's 65,001 tokens, 256 for the demo's)",
        group=BATCHING,
    )
    main_lanes: int = option(
        0,
        "continuous batching: main lanes, each a worker thread whose running decode steps on one thread beside the "
        "others' (0: automatic: the model's decode shards for a small fp32 model, two on a machine of two cores or "
        "with --threads 2, else one lane on all the threads)",
        group=BATCHING,
    )
    express_rows: int = option(
        8,
        "continuous batching: decoder rows of the express lane, where short requests decode on a thread of their own "
        "beside the main batch (0: no express lane)",
        group=BATCHING,
    )
    express_sentences: int = option(
        1, "continuous batching: requests of at most this many sentences go to the express lane", group=BATCHING
    )
    lane_nice: int = option(
        10,
        "continuous batching with an express lane: the main lanes' worker threads run this much nicer (0..19), so "
        "short requests and the HTTP event loop get the cores first",
        group=BATCHING,
    )
    gather_units: int = option(
        8,
        "continuous batching: while the main lanes run, waiting sentences join once this many wait or the oldest has "
        "waited --max-queue-delay-ms, so that they are encoded together (1: at the next step)",
        group=BATCHING,
    )
    gil_switch_ms: float = option(
        1.0,
        "how long a thread that waits for Python's lock may wait before the running one hands it over "
        "(sys.setswitchinterval; Python's own default is 5): the main lanes, the express lane and the HTTP event "
        "loop take turns sooner",
        metavar="MS",
        group=BATCHING,
    )
    default_beam_size: int | None = option(
        None,
        "default beam width",
        flag="--beam-size",
        default_text="the model's, from its manifest.json",
        group=BATCHING,
    )
    max_beam_size: int = option(8, "the widest beam a request may ask for", group=BATCHING)
    # -- limits (every one answered with a JSON error)
    max_chars_per_text: int = option(10_000, "characters of one text; 422 above", group=LIMITS)
    max_texts_per_request: int = option(64, "texts of one request; 422 above", group=LIMITS)
    max_request_chars: int = option(50_000, "characters of all texts of one request together; 422 above", group=LIMITS)
    max_body_bytes: int = option(
        1 << 20, "request body size; 413 above, from Content-Length or counted while streaming", group=LIMITS
    )
    request_timeout_s: float = option(30.0, "deadline while queued and running; 504 after", group=LIMITS)
    drain_timeout_s: float = option(
        30.0, "on SIGTERM, how long in-flight work may take before the server stops", group=LIMITS
    )
    # -- keys, limits, timeouts, CORS (enzh.serve.access, limits, keys, protocol; docs/server.md "Keys and limits")
    api_keys: str | None = option(
        None,
        "an `enzh keys` store: translation endpoints then need one of its keys, else 403",
        metavar="FILE",
        default_text="no keys",
        group=ACCESS,
    )
    req_limit: int = option(
        0, "requests per minute per key (per address without keys); 429 + Retry-After above; 0 = none", group=ACCESS
    )
    char_limit: int = option(
        0,
        "characters per minute, likewise, an uploaded file's text included; a key's own limits in the store "
        "replace both; 0 = none",
        group=ACCESS,
    )
    header_timeout_s: float = option(
        10.0, "a request head must arrive within this, a body may pause at most this long", group=ACCESS
    )
    cors_origins: str = option(
        "", "origins allowed by CORS: '*' = any, else comma-separated", metavar="ORIGINS", group=ACCESS
    )
    # "" = none: those headers are ignored, loopback included, and a client is the address it connects from
    trusted_proxies: str = option(
        "",
        "comma-separated addresses/CIDRs of reverse proxies whose X-Forwarded-For or X-Real-IP names the client",
        metavar="ADDRESSES",
        default_text="none, not even loopback",
        group=ACCESS,
    )
    # -- LibreTranslate API (enzh.serve.libretranslate, modes, files; docs/server.md "LibreTranslate API")
    max_alternatives: int = option(
        3, "most alternatives a request may ask for; at most beam size - 1 are found", group=LIBRE
    )
    download_ttl_s: float = option(
        1800.0, "how long a file translated by /translate_file can be downloaded", group=LIBRE
    )
    # where those files are kept (None: a temporary directory of the process; run.serve sets it for workers)
    files_dir: str | None = option(None, "where translated files are kept", flag=None)
    # Glossary files (enzh.runtime.glossary): one for every model, or one per model in the models' order; their
    # terms are enforced in every request (a request's own glossary adds to them, its entries winning).
    glossaries: tuple[str, ...] = option(
        (),
        "terms with a fixed translation (TSV source<TAB>target[<TAB>flags], docs/quality.md) for every request; "
        "once: for every model, or once per --model, in their order",
        flag="--glossary",
        metavar="FILE",
        default_text="none",
        group=MODELS,
    )
    warmup: bool = option(True, "translate one sentence per model before /readyz says ready", flag=None)
    handle_sigterm: bool = option(True, "drain on SIGTERM (only when serving from the main thread)", flag=None)

    def __post_init__(self) -> None:
        require(
            self.batching_mode in MODES,
            f"batching_mode must be one of {', '.join(MODES)}, got {self.batching_mode!r}",
        )
        require(self.main_lanes >= 0, f"main_lanes must be >= 0 (0: automatic), got {self.main_lanes}")
        require(
            self.max_beam_rows >= 0,
            f"max_beam_rows must be >= 0 (0: automatic, by the model's vocabulary), got {self.max_beam_rows}",
        )
        # A list (the JSON round trip through ENV_OPTIONS) is kept as the tuple it was.
        object.__setattr__(self, "model_dirs", tuple(self.model_dirs))
        require(
            all(isinstance(d, str) and d for d in self.model_dirs),
            f"model_dirs must be model directories (non-empty strings), got {self.model_dirs!r}",
        )
        require(
            not (self.model_dir and self.model_dirs),
            f"give model_dir or model_dirs, not both (model_dir={self.model_dir!r}, model_dirs={self.model_dirs!r})",
        )
        repeated = sorted({d for d in self.model_dirs if self.model_dirs.count(d) > 1})
        require(not repeated, f"model_dirs names {', '.join(repeated)} more than once")
        object.__setattr__(self, "glossaries", tuple(self.glossaries))
        require(
            all(isinstance(g, str) and g for g in self.glossaries),
            f"glossaries must be glossary files (non-empty strings), got {self.glossaries!r}",
        )
        models = len(self.models) or 2  # (none given: the embedded pair)
        require(
            len(self.glossaries) in (0, 1, models),
            f"give one glossary for every model or one per model ({models}), got {len(self.glossaries)}",
        )
        positive = (
            "workers",
            "max_chars_per_text",
            "max_texts_per_request",
            "max_request_chars",
            "max_body_bytes",
            "max_queue_size",
            "max_batch_tokens",
            "max_beam_size",
        )
        for name in positive:
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 1, f"{name} must be an integer >= 1, got {value!r}")
        require(0 <= self.port <= 65535, f"port must be 0..65535, got {self.port}")
        require(
            isinstance(self.gil_switch_ms, (int, float)) and 0 < self.gil_switch_ms <= 1000,
            f"gil_switch_ms must be a number of milliseconds in (0, 1000], got {self.gil_switch_ms!r}",
        )
        require(
            isinstance(self.max_alternatives, int) and self.max_alternatives >= 0,
            f"max_alternatives must be an integer >= 0, got {self.max_alternatives!r}",
        )
        require(
            math.isfinite(self.download_ttl_s) and self.download_ttl_s > 0,
            f"download_ttl_s must be a finite number > 0, got {self.download_ttl_s!r}",
        )
        require(self.threads >= 0, f"threads must be >= 0 (0 = all cores), got {self.threads}")
        for name in ("max_queue_delay_ms", "drain_timeout_s"):
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0, f"{name} must be a finite number >= 0, got {value!r}")
        require(
            math.isfinite(self.request_timeout_s) and self.request_timeout_s > 0,
            f"request_timeout_s must be a finite number > 0, got {self.request_timeout_s!r}",
        )
        require(
            self.default_beam_size is None or 1 <= self.default_beam_size <= self.max_beam_size,
            f"default_beam_size must be 1..max_beam_size ({self.max_beam_size}), got {self.default_beam_size}",
        )
        for name in ("req_limit", "char_limit"):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 0, f"{name} must be an integer >= 0 (0 = none), got {value!r}")
        require(
            math.isfinite(self.header_timeout_s) and self.header_timeout_s > 0,
            f"header_timeout_s must be a finite number > 0, got {self.header_timeout_s!r}",
        )
        require(self.api_keys is None or bool(self.api_keys), "api_keys must be the path of a key store")
        require(
            isinstance(self.trusted_proxies, str), f"trusted_proxies must be a string, got {self.trusted_proxies!r}"
        )
        for proxy in self.trusted_proxy_list():
            require(_is_network(proxy), f"trusted_proxies must be IP addresses or networks (CIDR), got {proxy!r}")
        self.scheduler_options()  # (and the batching options the scheduler checks: express_rows, lane_nice, ...)

    @property
    def models(self) -> tuple[str, ...]:
        """The model directories given (model_dirs, else model_dir); empty: the embedded pair."""
        return self.model_dirs or ((self.model_dir,) if self.model_dir else ())

    def cors_origin_list(self) -> list[str]:
        """The origins of ``cors_origins`` (empty: no CORS headers)."""
        return [origin.strip() for origin in self.cors_origins.split(",") if origin.strip()]

    def trusted_proxy_list(self) -> list[str]:
        """The addresses and networks of ``trusted_proxies`` (empty: no proxy is trusted)."""
        return [proxy.strip() for proxy in self.trusted_proxies.split(",") if proxy.strip()]

    def trusted_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """``trusted_proxies`` as networks (an address is a network of one: ``10.0.0.1`` is ``10.0.0.1/32``)."""
        return [ipaddress.ip_network(proxy, strict=False) for proxy in self.trusted_proxy_list()]

    def scheduler_options(self, scored_tokens: int = 0, shards: int = 1) -> SchedulerOptions:
        """The scheduler's options for a model whose decoder step scores ``scored_tokens`` target tokens a row
        (what the automatic ``max_beam_rows`` goes by; 0: unknown) and that decodes a batch in ``shards`` at once
        (what the automatic ``main_lanes`` goes by)."""
        return SchedulerOptions(
            max_batch_tokens=self.max_batch_tokens,
            max_queue_delay_ms=self.max_queue_delay_ms,
            max_queue_size=self.max_queue_size,
            batching=self.batching,
            mode=self.batching_mode,
            max_running_rows=self.max_running_rows,
            max_beam_rows=self.max_beam_rows or beam_rows_for(scored_tokens),
            lanes=self.main_lanes or main_lanes_for(shards, self.threads),
            express_rows=self.express_rows,
            express_sentences=self.express_sentences,
            lane_nice=self.lane_nice,
            gather_units=self.gather_units,
        )


def _is_network(text: str) -> bool:
    """Whether ``text`` is an IP address or network (``10.0.0.0/8``, ``::1``)."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True
