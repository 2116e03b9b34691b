"""A ``translate-file --ray local`` driver killed (SIGKILL, its whole process group: Ray too) after some shards
are done, then started again: it skips the finished shards and writes exactly the in-process bytes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from ray_harness import demo_lines, in_process, processes_mentioning, shard_files, wait_until, write_txt

from enzh.documents.files import prepare
from enzh.runtime.translator import Translator
from enzh.scale.shards import cut

pytest.importorskip("ray")


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_killed_driver_resumes_and_writes_the_same_bytes(tmp_path):
    source = write_txt(tmp_path / "corpus.txt", demo_lines(1000))
    expected = in_process(source, tmp_path / "ref.txt", Translator.load(intra_op_threads=1), beam_size=1)
    output = tmp_path / "out.txt"
    total = len(cut(prepare(source, output, beam_size=1), 5))
    # Ray's session files (and so its processes' command lines) go under a directory of this test only.
    scratch = tempfile.mkdtemp(prefix="enzh-t-")
    env = {**os.environ, "TMPDIR": scratch}
    command = [sys.executable, "-m", "enzh", "-v", "translate-file", str(source), str(output), "--beam-size", "1"]
    command += ["--ray", "local", "--workers", "1", "--shard-size", "5"]
    try:
        with open(tmp_path / "first.log", "wb") as log:
            first = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                wait_until(lambda: len(shard_files(output)) >= 3 or first.poll() is not None, 120, "three shards")
            finally:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait(30)
        killed_with = len(shard_files(output))
        log_text = (tmp_path / "first.log").read_text(errors="replace")
        assert 3 <= killed_with < total, f"{killed_with} shards when killed\n{log_text[-3000:]}"
        assert not output.exists()
        time.sleep(0.5)
        _kill_all(processes_mentioning(scratch))  # whatever of the first Ray outlived its process group
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        assert f"{killed_with} of {total} shards already translated" in again.stderr
        assert output.read_bytes() == expected
        assert not output.with_name(output.name + ".enzh-shards").exists()
    finally:
        _kill_all(processes_mentioning(scratch))
        shutil.rmtree(scratch, ignore_errors=True)
