"""Shared by tests/scale: small corpora of every line-based format, the in-process reference run, a small local
Ray (2 CPUs, no dashboard, a small object store, its files in a temporary directory) and process helpers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from enzh.documents.files import finish, prepare
from enzh.runtime.default_model import DEMO_TEST_SET
from enzh.scale.worker import ShardTranslator


def demo_lines(count: int, offset: int = 0) -> list[str]:
    """``count`` English sentences of the demo test set (short, a few words each)."""
    lines = [line.split("\t")[0] for line in DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()]
    return lines[offset : offset + count]


def write_txt(path: Path, lines: list[str]) -> Path:
    """Plain text with what must survive sharding: a BOM, CRLF and LF line ends, blank and indented lines,
    repeated sentences, two sentences on one line."""
    out = []
    for i, line in enumerate(lines):
        if i % 17 == 5:
            out.append("\r\n")
        if i % 11 == 3:
            line = "    " + line
        if i % 13 == 7:
            line = f"{line} {lines[(i + 1) % len(lines)]}"
        out.append(line + ("\r\n" if i % 3 == 0 else "\n"))
    out.append(lines[0])  # no final newline
    path.write_bytes(b"\xef\xbb\xbf" + "".join(out).encode())
    return path


def write_jsonl(path: Path, lines: list[str]) -> Path:
    records = []
    for i, line in enumerate(lines):
        record: dict[str, Any] = {"id": i, "text": line, "n": i * 0.5}
        if i % 9 == 4:
            record["text"] = None
        records.append(json.dumps(record, ensure_ascii=False))
        if i % 25 == 24:
            records.append("")
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    return path


def write_tsv(path: Path, lines: list[str], header: bool = True) -> Path:
    rows = ["id\ttext\tnote"] if header else []
    rows += [f"{i}\t{line}\tkeep {i}" for i, line in enumerate(lines)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_csv(path: Path, lines: list[str]) -> Path:
    """CSV (the csv module's excel dialect: CRLF) where every fifth record's text runs over two lines (quoted)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "text", "note"])
    for i, line in enumerate(lines):
        writer.writerow([i, f"{line}\n{lines[i - 1]}" if i % 5 == 2 else line, f"keep, {i}"])
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return path


def write_srt(path: Path, lines: list[str]) -> Path:
    """Subtitles where some sentences run over two or three cues (no final punctuation), across shard cuts."""
    blocks = []
    for i, line in enumerate(lines):
        text = line.rstrip(".?!") if i % 4 in (1, 2) else line  # cues 1, 2 of every 4 continue into the next
        start, end = i * 2, i * 2 + 1
        blocks.append(
            f"{i + 1}\n00:00:{start // 60:02d},{start % 60:03d} --> 00:00:{end // 60:02d},{end % 60:03d}\n{text}\n"
        )
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


WRITERS: dict[str, Callable[[Path, list[str]], Path]] = {
    "txt": write_txt,
    "jsonl": write_jsonl,
    "tsv": write_tsv,
    "csv": write_csv,
    "srt": write_srt,
}


def in_process(source: Path, output: Path, translator: Any, **options: Any) -> bytes:
    """The bytes the in-process ``translate-file`` writes (no journal, no progress bar)."""
    finish(prepare(source, output, **options), translator, progress=False, resume=False)
    return output.read_bytes()


@contextlib.contextmanager
def local_ray(num_cpus: int = 2) -> Iterator[Any]:
    """A small Ray on this machine for one test module; shut down (and its files removed) afterwards."""
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    temp = tempfile.mkdtemp(prefix="enzh-ray-t-")
    ray.init(
        num_cpus=num_cpus,
        include_dashboard=False,
        object_store_memory=128 << 20,
        _temp_dir=temp,
        logging_level=logging.WARNING,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


class SlowShardTranslator(ShardTranslator):
    """A worker that takes its time on every shard, so that a test can kill it while it holds shards."""

    delay_s = 0.25

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        time.sleep(self.delay_s)
        return super().__call__(batch)


class FailingShardTranslator(ShardTranslator):
    """A worker whose translation of shard ``fail_on`` raises (an application error: not retried)."""

    fail_on = 3

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        if self.fail_on in [int(index) for index in batch["shard"]]:
            raise RuntimeError(f"shard {self.fail_on} cannot be translated")
        return super().__call__(batch)


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of every process under ``root``."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
        commands[int(entry)] = command
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = commands.get(child, "")
            todo.append(child)
    return found


def processes_mentioning(text: str) -> list[int]:
    """pids of processes whose command line contains ``text``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if text.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.01)


def shard_files(output: Path) -> list[Path]:
    directory = output.with_name(output.name + ".enzh-shards")
    return sorted(directory.glob("*.out")) if directory.is_dir() else []
