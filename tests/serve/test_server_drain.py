"""`enzh serve` as a real process: SIGTERM flips readiness, refuses new work, finishes in-flight work, exits."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx
from server_harness import ProcessServer


def test_sigterm_drains_in_flight_work_then_exits(demo_dir):
    server = ProcessServer(demo_dir, "--max-batch-tokens", "256", "--drain-timeout-s", "60").wait_ready()
    # Enough work that the six requests are still running when SIGTERM arrives (~100 sentences each, beam 4).
    text = " ".join(["I would like a cup of coffee. The weather is nice today. Where is the train station?"] * 32)
    try:
        expected = httpx.post(f"{server.url}/v1/translate", json={"text": text, "beam_size": 4}, timeout=60).json()

        async def scenario():
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                in_flight = [
                    asyncio.create_task(client.post("/v1/translate", json={"text": text, "beam_size": 4}))
                    for _ in range(6)
                ]
                await asyncio.sleep(0.3)  # all six are queued or running
                server.proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.1)
                async with httpx.AsyncClient(base_url=server.url, timeout=30) as fresh:
                    ready = await fresh.get("/readyz")
                    refused = await fresh.post("/v1/translate", json={"text": "Hello."})
                    live = await fresh.get("/livez")
                done = await asyncio.gather(*in_flight, return_exceptions=True)
                return ready, refused, live, done

        ready, refused, live, done = asyncio.run(scenario())
        assert ready.status_code == 503 and ready.json()["status"] == "draining"
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "draining"
        assert int(refused.headers["retry-after"]) >= 1
        assert live.status_code == 200
        assert [getattr(r, "status_code", r) for r in done] == [200] * 6
        assert all(r.json()["translations"] == expected["translations"] for r in done)
        # then the process exits on its own (uvicorn re-raises the SIGTERM it handled: -15 or 0)
        deadline = time.monotonic() + 60
        while server.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.proc.returncode in (0, -signal.SIGTERM), server.output()
        log = server.output()
        assert "draining" in log and "Application shutdown complete" in log
    finally:
        server.stop()
