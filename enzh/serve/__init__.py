"""The HTTP service (needs the ``[serve]`` extra), one module per concern:

``options`` (ServeOptions), ``app`` (create_app, its routes, uvicorn's worker factory), ``service`` (loading,
readiness, drain, translating a request), ``scheduler`` (batches across requests), ``payload`` (reading and
validating bodies), ``schemas`` (pydantic models, OpenAPI), ``errors`` (JSON errors), ``middleware`` (body
limit, metrics), ``metrics`` (Prometheus), ``sigterm`` (the drain on SIGTERM), ``run`` (serve with uvicorn);
``access`` (API keys, per-minute limits, CORS), ``keys`` (the key store), ``limits`` (the moving window),
``protocol`` (uvicorn's h11 protocol with a read timeout); ``static/`` holds the web page. ``enzh serve`` is
:mod:`enzh.cli.serve`, ``enzh keys`` :mod:`enzh.cli.keys`.
"""
