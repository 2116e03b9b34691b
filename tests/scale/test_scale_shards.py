"""Shards without Ray: cut on unit boundaries, each translated alone, joined = the in-process output, byte for byte;
the shard store; the options and flags of the Ray layer."""

from __future__ import annotations

import json
import shutil

import pytest
from ray_harness import WRITERS, demo_lines, in_process, write_tsv

from enzh.cli.main import build_parser
from enzh.documents.files import prepare
from enzh.runtime.errors import OptionsError
from enzh.runtime.translator import Translator
from enzh.scale.errors import ScaleError
from enzh.scale.options import ClusterOptions, CorpusOptions, ReplicaOptions, corpus_options, replica_options
from enzh.scale.shards import cut
from enzh.scale.store import ShardStore
from enzh.scale.worker import translate_shard


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(intra_op_threads=1)


def joined(prepared, translator) -> bytes:
    shards = cut(prepared, 7)
    assert [s.index for s in shards] == list(range(len(shards)))
    return b"".join(translate_shard(translator, prepared.options, s.data, s.header)[0] for s in shards)


@pytest.mark.parametrize("format", sorted(WRITERS))
def test_shards_joined_are_the_in_process_output(tmp_path, translator, format):
    source = WRITERS[format](tmp_path / f"in.{format}", demo_lines(60))
    expected = in_process(source, tmp_path / f"ref.{format}", translator, beam_size=1)
    prepared = prepare(source, tmp_path / f"out.{format}", beam_size=1)
    assert len(cut(prepared, 7)) > 3
    assert joined(prepared, translator) == expected


def test_tsv_by_column_index_has_no_header(tmp_path, translator):
    source = write_tsv(tmp_path / "in.tsv", demo_lines(30), header=False)
    expected = in_process(source, tmp_path / "ref.tsv", translator, beam_size=1, field="1")
    prepared = prepare(source, tmp_path / "out.tsv", beam_size=1, field="1")
    assert all(shard.header == b"" for shard in cut(prepared, 7))
    assert joined(prepared, translator) == expected


def test_tsv_header_goes_with_every_shard(tmp_path):
    prepared = prepare(write_tsv(tmp_path / "in.tsv", demo_lines(30)), tmp_path / "out.tsv")
    shards = cut(prepared, 7)
    assert shards[0].header == b"" and shards[0].data.startswith(b"id\ttext\tnote\n")
    assert all(shard.header == b"id\ttext\tnote\n" for shard in shards[1:])


def test_csv_shards_start_on_records_and_carry_the_header(tmp_path):
    prepared = prepare(WRITERS["csv"](tmp_path / "in.csv", demo_lines(30)), tmp_path / "out.csv")
    shards = cut(prepared, 4)
    assert len(shards) == 8 and shards[0].data.startswith(b"id,text,note\r\n")
    assert all(shard.header == b"id,text,note\r\n" for shard in shards[1:])
    for number, shard in enumerate(shards[1:], start=1):  # each starts with its first record's id: no cut inside one
        assert shard.data.startswith(f"{number * 4},".encode())
    assert b"".join(shard.data for shard in shards) == prepared.data


def test_po_shards_carry_the_header_as_written(tmp_path, translator):
    """A template's header is filled in (Language, Plural-Forms) once, in the first shard; every later shard
    gets it as written, so the plural forms resolve the same and it comes back unchanged."""
    import polib

    po = polib.POFile()
    po.metadata = {"Language": "", "Plural-Forms": "nplurals=INTEGER; plural=EXPRESSION;"}
    for i, line in enumerate(demo_lines(30)):
        plural = {"msgid_plural": f"{line} %d", "msgstr_plural": {0: "", 1: ""}} if i % 6 == 3 else {}
        po.append(polib.POEntry(msgid=line, occurrences=[("a.py", str(i))], flags=["c-format"], **plural))
    source = tmp_path / "in.pot"
    po.save(str(source))
    expected = in_process(source, tmp_path / "ref.po", translator, beam_size=1)
    prepared = prepare(source, tmp_path / "out.po", beam_size=1)
    shards = cut(prepared, 7)
    assert len(shards) == 5 and shards[0].header == b"" and b"Language: \\n" in shards[0].data
    assert all(b"Language: zh_CN\\n" in s.header and b"nplurals=1;" in s.header for s in shards[1:])
    assert joined(prepared, translator) == expected


def test_xliff_is_one_shard(tmp_path):
    source = tmp_path / "in.xlf"
    source.write_bytes(
        b'<xliff version="2.0" srcLang="en"><file id="f"><unit id="u"><segment><source>Hi there.'
        b"</source></segment></unit></file></xliff>"
    )
    [shard] = cut(prepare(source, tmp_path / "out.xlf"), 1)
    assert shard.data == source.read_bytes()


def test_subtitle_cuts_move_past_sentences_that_run_over_cues(tmp_path):
    prepared = prepare(WRITERS["srt"](tmp_path / "in.srt", demo_lines(40)), tmp_path / "out.srt")
    shards = cut(prepared, 1)  # one block a shard, except where a sentence runs on into the next cue
    firsts = [int(shard.data.split(b"\n", 1)[0]) - 1 for shard in shards]  # the first cue of each shard
    assert 10 <= len(shards) <= 20 and firsts == sorted(firsts)
    assert not [i for i in firsts if i % 4 in (2, 3)]  # cues 2 and 3 of every 4 continue the cue before them


def test_tree_formats_are_one_shard(tmp_path):
    source = tmp_path / "in.md"
    source.write_text("# Title\n\nWhere is the school?\n\n* This lamp is older than that one.\n", encoding="utf-8")
    [shard] = cut(prepare(source, tmp_path / "out.md"), 1)
    assert shard.data == source.read_bytes()


def test_store_keeps_shards_for_the_same_key_only(tmp_path):
    output = tmp_path / "out.txt"
    store = ShardStore.open(output, "key-1", 3)
    store.write(0, b"zero\n")
    store.write(2, b"two\n")
    (store.directory / ".000001.out.x.enzh-tmp").write_bytes(b"torn")  # a write cut short
    again = ShardStore.open(output, "key-1", 3)
    assert again.done() == {0, 2} and not list(again.directory.glob(".*"))
    with pytest.raises(ScaleError, match="missing"):
        again.assemble(output)
    again.write(1, b"one\n")
    assert again.assemble(output) == len(b"zero\none\ntwo\n") and output.read_bytes() == b"zero\none\ntwo\n"
    manifest = json.loads((again.directory / "manifest.json").read_text())
    assert manifest == {"enzh-shards": 1, "key": "key-1", "shards": 3}
    other = ShardStore.open(output, "key-2", 3)  # other input or options: started over
    assert other.done() == set()
    other.remove()
    assert not other.directory.exists()


def test_ray_flags_need_ray():
    with pytest.raises(OptionsError, match="--workers, --shard-size apply to --ray only"):
        corpus_options(None, 2, None, 10)
    assert corpus_options(None, None, None, None) is None
    options = corpus_options("auto", 3, 2, None)
    assert options == CorpusOptions(cluster=ClusterOptions(address="auto"), workers=3, threads_per_worker=2)
    with pytest.raises(OptionsError, match="--replicas apply to --ray only"):
        replica_options(None, 2, None)
    assert replica_options("local", None, 4) == ReplicaOptions(replicas=1, max_replicas=4)
    with pytest.raises(OptionsError, match="max_replicas"):
        ReplicaOptions(replicas=3, max_replicas=2)
    with pytest.raises(OptionsError, match="local Ray only"):
        ClusterOptions(address="auto", num_cpus=2)


def test_translate_file_has_the_ray_flags():
    args = build_parser().parse_args(
        ["translate-file", "a.txt", "b.txt", "--ray", "local", "--workers", "2", "--threads-per-worker", "1"]
    )
    assert (args.ray, args.workers, args.threads_per_worker, args.shard_size) == ("local", 2, 1, None)
    args = build_parser().parse_args(["serve", "--ray", "auto", "--replicas", "2", "--max-replicas", "5"])
    assert (args.ray, args.replicas, args.max_replicas) == ("auto", 2, 5)


def test_serve_options_for_ray(tmp_path, monkeypatch):
    from enzh.runtime.default_model import DEMO_DIR
    from enzh.scale.serving import prepared_options
    from enzh.serve.options import ServeOptions

    monkeypatch.chdir(DEMO_DIR.parent)
    local = ReplicaOptions(replicas=2)
    options, temporary = prepared_options(ServeOptions(model_dir=DEMO_DIR.name), local)
    assert temporary is not None
    shutil.rmtree(temporary)
    assert options.model_dir == str(DEMO_DIR) and options.files_dir == temporary
    assert options.workers == 1
    cluster = ReplicaOptions(cluster=ClusterOptions(address="auto"))
    options, temporary = prepared_options(ServeOptions(), cluster)
    assert options.model_dir is None and options.files_dir is None and temporary is None  # each node's own demo
    with pytest.raises(OptionsError, match="--replicas"):
        prepared_options(ServeOptions(workers=2), local)
