"""What the service can be told: :class:`ServeOptions` (every limit is enforced and answered with a JSON error).

Imports nothing of the web stack, so the command line can build options without the serve extra.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from enzh.runtime.errors import require
from enzh.serve.scheduler import MODES, SchedulerOptions

# uvicorn's worker processes (``--workers N``) get their options as the JSON of a ServeOptions in this variable.
ENV_OPTIONS = "ENZH_SERVE_OPTIONS"


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """Everything the service can be told; every limit is enforced and answered with a JSON error."""

    model_dir: str | None = None  # one model (what model_dirs was before there were several); None: see model_dirs
    # The models served, each with its own batching queue; the direction of a text picks its model. Empty (and no
    # model_dir): the embedded pair, English->Chinese and Chinese->English.
    model_dirs: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1  # uvicorn worker processes, each with its own model and scheduler
    threads: int = 0  # ONNX Runtime intra-op threads per worker (0 = all cores)
    max_chars_per_text: int = 10_000  # 422 above
    max_texts_per_request: int = 64  # 422 above
    max_request_chars: int = 50_000  # all texts of one request together; 422 above
    max_body_bytes: int = 1 << 20  # 413 above (Content-Length or counted while streaming)
    max_queue_size: int = 1024  # sentences waiting for the worker; 429 + Retry-After above
    max_batch_tokens: int = 2048  # source tokens per batch
    max_queue_delay_ms: float = 5.0  # how long the oldest sentence may wait for a batch to fill
    request_timeout_s: float = 30.0  # deadline while queued and running; 504 after
    batching: bool = True  # False: requests are run one at a time (for the benchmark's baseline)
    # continuous: sentences join and leave a running decode at every step; dynamic: whole token-budget batches;
    # single: one request at a time (what batching=False also gives). docs/server.md "How requests are batched"
    batching_mode: str = "continuous"
    default_beam_size: int | None = None  # None: the model's default (manifest.json)
    max_beam_size: int = 8
    drain_timeout_s: float = 30.0  # SIGTERM: how long in-flight work may take before the server stops
    # -- keys, limits, timeouts, CORS (enzh.serve.access, limits, keys, protocol; docs/server.md "Keys and limits")
    api_keys: str | None = None  # an `enzh keys` store: translation endpoints then need one of its keys (else 403)
    req_limit: int = 0  # requests per minute per key (per address without keys); 429 + Retry-After above; 0 = none
    char_limit: int = 0  # characters per minute, likewise; a key's own limits in the store replace both
    header_timeout_s: float = 10.0  # a request head must arrive within this, a body may pause at most this long
    cors_origins: str = ""  # "" = no CORS headers, "*" = any origin, else comma-separated origins
    # comma-separated addresses/CIDRs of reverse proxies whose X-Forwarded-For (X-Real-IP) names the client;
    # "" = none: those headers are ignored, loopback included, and a client is the address it connects from
    trusted_proxies: str = ""
    # -- LibreTranslate API (enzh.serve.libretranslate, modes, files; docs/server.md "LibreTranslate API")
    max_alternatives: int = 3  # most alternatives a request may ask for (at most beam size - 1 are found)
    download_ttl_s: float = 1800.0  # how long a file translated by /translate_file can be downloaded
    files_dir: str | None = None  # where those files are kept (None: a temporary directory of the process)
    warmup: bool = True
    handle_sigterm: bool = True  # drain on SIGTERM (only when serving from the main thread)

    def __post_init__(self) -> None:
        require(
            self.batching_mode in MODES,
            f"batching_mode must be one of {', '.join(MODES)}, got {self.batching_mode!r}",
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

    def scheduler_options(self) -> SchedulerOptions:
        return SchedulerOptions(
            max_batch_tokens=self.max_batch_tokens,
            max_queue_delay_ms=self.max_queue_delay_ms,
            max_queue_size=self.max_queue_size,
            batching=self.batching,
            mode=self.batching_mode,
        )


def _is_network(text: str) -> bool:
    """Whether ``text`` is an IP address or network (``10.0.0.0/8``, ``::1``)."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True
