"""ONNX Runtime sessions for an exported model directory, and the incremental decoder over them."""

from __future__ import annotations

import collections
import logging
import mmap
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from enzh.runtime.candidates import BIAS_INPUT, Selection, SourceShortlist
from enzh.runtime.cpu import cpu_features
from enzh.runtime.decoding import Step
from enzh.runtime.manifest import Manifest, ModelDirError, map_stored
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.rows import ROWS_OF_INPUT_IDS, RowsOnDemand

logger = logging.getLogger("enzh")


def session_options(options: RuntimeOptions) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = options.intra_op_threads
    so.inter_op_num_threads = options.inter_op_threads
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if options.spin_threads else "0")
    so.log_severity_level = 3
    return so


def _create(path: Path, options: RuntimeOptions, shared: dict[str, ort.OrtValue]) -> ort.InferenceSession:
    available = ort.get_available_providers()
    missing = [p for p in options.providers if p not in available]
    if missing:
        raise ValueError(
            f"ONNX Runtime execution provider(s) {missing} are not available here; available: {available}. "
            "Install the matching onnxruntime package or pick an available provider."
        )
    try:
        so = session_options(options)
        for name, value in shared.items():
            so.add_initializer(name, value)
        return ort.InferenceSession(str(path), sess_options=so, providers=list(options.providers))
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelDirError(f"ONNX Runtime could not load {path}: {exc}") from exc


class _Binding:
    """One session's I/O binding. Binds through the C++ binding object that ``ort.IOBinding`` wraps when it has
    one: the wrapper's checks and device lookup cost ~1 µs a bind, and a decoder rebinds ~25 buffers every
    time its batch shrinks. Falls back to the public methods on an onnxruntime without it."""

    def __init__(self, session: ort.InferenceSession) -> None:
        self.io = session.io_binding()
        self._raw: Any = getattr(self.io, "_iobinding", None)
        self._device: Any = None
        try:
            self._device = ort.capi.onnxruntime_inference_collection.OrtDevice.make("cpu", 0)._get_c_device()
        except AttributeError:
            self._raw = None

    def input(self, name: str, array: np.ndarray, pointer: int | None = None) -> None:
        """Bind ``array`` (C-contiguous, kept alive by the caller) as input ``name``; ``pointer``: its data
        address when the caller has it at hand."""
        address = array.ctypes.data if pointer is None else pointer
        if self._raw is not None:
            self._raw.bind_input(name, self._device, array.dtype.type, array.shape, address)
        else:
            self.io.bind_input(name, "cpu", 0, array.dtype.type, list(array.shape), address)

    def output(self, name: str, array: np.ndarray, pointer: int | None = None) -> None:
        """Bind ``array`` as the buffer ONNX Runtime writes output ``name`` into."""
        address = array.ctypes.data if pointer is None else pointer
        if self._raw is not None:
            self._raw.bind_output(name, self._device, array.dtype.type, array.shape, address)
        else:
            self.io.bind_output(name, "cpu", 0, array.dtype.type, list(array.shape), address)


@dataclass
class EncoderOutput:
    """What the encoder graph returns for one batch: the decoder's attention bias and cross keys/values."""

    cross_bias: np.ndarray
    cross: list[np.ndarray]  # per decoder layer: key, value, key, value, ...
    selection: Selection | None = None  # source-aware shortlist: the batch's candidates and projection inputs


def shared_weights(directory: Path, manifest: Manifest) -> dict[str, np.ndarray]:
    """Memory-map the weights named in manifest.shared_initializers from the external-data file (all but the
    tables read row by row on demand: :func:`rows_on_demand`)."""
    return {
        name: map_stored(directory, info)
        for name, info in manifest.shared_initializers.items()
        if info.get("rows_of") != ROWS_OF_INPUT_IDS
    }


def rows_on_demand(directory: Path, manifest: Manifest) -> dict[str, RowsOnDemand]:
    """The shared tables that the graphs only gather rows of by their ``input_ids`` (int8 embeddings), held in
    memory that fills as rows are gathered (:mod:`enzh.runtime.rows`)."""
    return {
        name: RowsOnDemand(directory, info)
        for name, info in manifest.shared_initializers.items()
        if info.get("rows_of") == ROWS_OF_INPUT_IDS
    }


_WARNED: set[str] = set()  # directories warned about (once per process each)


def warn_if_int8_saturates(directory: Path, manifest: Manifest) -> None:
    """Warn when an int8 variant stores signed weight codes (``int8_weights="s8"``, or a variant written before
    the setting existed) and this CPU's u8s8 kernels saturate (:mod:`enzh.runtime.cpu`)."""
    quantization = manifest.quantization
    if manifest.precision != "int8" or quantization.get("int8_weights", "s8") != "s8":
        return
    if "DynamicQuantizeMatMul" not in str(quantization.get("linear", "")) + str(quantization.get("embedding_table")):
        return
    cpu = cpu_features()
    if cpu.u8s8_saturates and str(directory) not in _WARNED:
        _WARNED.add(str(directory))
        logger.warning(
            "%s stores int8 weights as signed codes, and this CPU (%s) has no VNNI: ONNX Runtime's u8s8 kernels "
            "saturate here and the logits drift (docs/precision.md). Re-quantize it with `enzh quantize FP32_DIR "
            "OUT --precision int8` (its default --int8-weights s7 is exact on every CPU).",
            directory,
            cpu.summary(),
        )


class ModelSessions:
    """The encoder and decoder sessions of one model directory, and its optional aligner (created on first use)."""

    def __init__(self, directory: Path, manifest: Manifest, options: RuntimeOptions) -> None:
        self.directory = directory
        self.manifest = manifest
        self.options = options
        warn_if_int8_saturates(directory, manifest)
        # Weights used by both graphs (the embedding shared by encoder, decoder and output projection) are
        # mapped from weights.bin once and handed to both sessions, so they exist once in memory.
        self._shared = shared_weights(directory, manifest)
        # An int8 embedding's rows: read into memory as the lookups need them (fill_rows before every run).
        self._rows = rows_on_demand(directory, manifest)
        arrays = {**self._shared, **{name: table.array for name, table in self._rows.items()}}
        values = {name: ort.OrtValue.ortvalue_from_numpy(array) for name, array in arrays.items()}
        self._shared_values = values
        self.encoder = _create(directory / manifest.graphs["encoder"], options, values)
        self.decoder = _create(directory / manifest.graphs["decoder"], options, values)
        # Small models: steps of few rows run in a one-thread session of the same graph (RuntimeOptions), and a
        # batch's sentences are decoded in shards by as many threads at once, each shard encoded on its thread.
        parameters = int(manifest.architecture.get("parameters", 0))
        self.serial_rows = options.serial_rows_for(parameters)
        self.shards = options.shards_for(parameters, manifest.precision)
        serial = replace(options, intra_op_threads=1)
        self.decoder_serial = None
        if self.serial_rows:
            self.decoder_serial = _create(directory / manifest.graphs["decoder"], serial, values)
        self.encoder_serial = None
        if self.shards > 1 and options.intra_op_threads != 1:
            self.encoder_serial = _create(directory / manifest.graphs["encoder"], serial, values)
        self._aligner: ort.InferenceSession | None = None
        self._aligner_lock = threading.Lock()
        self._solo: tuple[ort.InferenceSession, ort.InferenceSession] | None = None  # (decoder, encoder), one_thread()
        self._solo_lock = threading.Lock()
        # Weight pre-packing read every page of the mapping while building its packed copy; drop those pages
        # again so only rows the embedding lookup really touches stay resident.
        for array in self._shared.values():
            if isinstance(array, np.memmap) and hasattr(mmap, "MADV_DONTNEED"):
                array._mmap.madvise(mmap.MADV_DONTNEED)  # type: ignore[attr-defined]
        arch = manifest.architecture
        self.layers = int(arch["decoder_layers"])
        self.heads = int(arch["decoder_heads"])
        self.head_dim = int(arch["d_model"]) // self.heads
        # The cache's head size, zero-padded for GroupQueryAttention when the model's is not a multiple of 8.
        past = next(i for i in self.decoder.get_inputs() if i.name == "past_key_0")
        self.cache_head_dim = int(past.shape[3])
        # float32, or float16 in variants quantized with cache="float16" (enzh.export.graph.half_precision_cache).
        self.cache_dtype = np.float16 if past.type == "tensor(float16)" else np.float32
        self._cross_names = [n for i in range(self.layers) for n in (f"cross_key_{i}", f"cross_value_{i}")]
        self.vocab = int(arch["target_vocab_size"])
        # A variant quantized with a shortlist scores only these token ids (enzh.quantize.settings.QuantizeSettings);
        # its scores are spread over the whole vocabulary (-inf elsewhere) before the search sees them.
        ids = (manifest.quantization.get("shortlist") or {}).get("ids")
        self.shortlist = np.asarray(ids, dtype=np.int64) if ids else None
        self.scored = self.vocab if self.shortlist is None else len(self.shortlist)
        # A variant quantized with a source shortlist scores, per batch, the candidates of its source pieces
        # (enzh.runtime.candidates): chosen by encode(), bound by the batch's decoder, spread back the same way.
        self.source_shortlist = (
            SourceShortlist(
                directory,
                manifest,
                bias_input=BIAS_INPUT in {i.name for i in self.decoder.get_inputs()},
                rows=self._rows,
            )
            if "source_shortlist" in manifest.quantization
            else None
        )
        self._past_names = [n for i in range(self.layers) for n in (f"past_key_{i}", f"past_value_{i}")]
        self._present_names = [n for i in range(self.layers) for n in (f"present_key_{i}", f"present_value_{i}")]
        # Cache buffers handed back by finished decoders, reused by the next (fresh ones cost a page fault per
        # touched page, inside the first steps' runs): flat arrays, as many decoders' worth as run at once
        # (shards), at least two.
        self._spare_caches: list[np.ndarray] = []
        self._spare_lock = threading.Lock()

    @property
    def row_positions(self) -> bool:
        """Whether the decoder takes one position per row (``position [R]``: rows can join a running decode at any
        step, enzh.runtime.running); decoders exported before it take one for all (``python -m enzh.export.upgrade``
        rewrites them)."""
        position = next(i for i in self.decoder.get_inputs() if i.name == "position")
        return not isinstance(position.shape[0], int)

    @property
    def decoder_sessions(self) -> list[ort.InferenceSession]:
        """The decoder's sessions: the main one, and the one-thread one for few rows when the model has it."""
        return [self.decoder] if self.decoder_serial is None else [self.decoder, self.decoder_serial]

    def one_thread(self) -> tuple[ort.InferenceSession, ort.InferenceSession]:
        """(decoder, encoder) sessions that run on one thread: the model's own one-thread ones where it has them
        (or the main ones, when they are one-thread already), else made on the first call (continuous batching's
        lanes step on them beside each other)."""
        with self._solo_lock:
            if self._solo is None:
                serial = replace(self.options, intra_op_threads=1)
                values = self._shared_values
                one = self.options.intra_op_threads == 1
                decoder = self.decoder_serial or (self.decoder if one else None)
                encoder = self.encoder_serial or (self.encoder if one else None)
                self._solo = (
                    decoder or _create(self.directory / self.manifest.graphs["decoder"], serial, values),
                    encoder or _create(self.directory / self.manifest.graphs["encoder"], serial, values),
                )
            return self._solo

    def fill_rows(self, ids: np.ndarray) -> None:
        """Read the rows of ``ids`` into the on-demand tables (none: nothing to do) before a run gathers them."""
        for table in self._rows.values():
            table.fill(ids)

    @property
    def encoder_sessions(self) -> list[ort.InferenceSession]:
        """The encoder's sessions: the main one, and the one-thread one for shards when the model has it."""
        return [self.encoder] if self.encoder_serial is None else [self.encoder, self.encoder_serial]

    def encode(
        self,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        *,
        select: bool = True,
        one_thread: bool = False,
        session: ort.InferenceSession | None = None,
    ) -> EncoderOutput:
        """The encoder's outputs for a padded batch; with a source shortlist (and ``select``) also the batch's
        candidate tokens and the projection columns its decoder reads (:meth:`select`). ``one_thread``: on the
        one-thread session, when the model has one (a shard encoded beside others); ``session``: on that one."""
        self.fill_rows(input_ids)
        serial = self.encoder_serial if one_thread else None
        encoder = session or serial or self.encoder
        outputs = encoder.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        selection = self.select(input_ids, attention_mask) if select else None
        return EncoderOutput(cross_bias=outputs[0], cross=list(outputs[1:]), selection=selection)

    def select(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> Selection | None:
        """A source-shortlist variant's candidates for a padded batch (None for every other model)."""
        if self.source_shortlist is None:
            return None
        return self.source_shortlist.select(input_ids, attention_mask)

    def decoder_for(
        self, encoded: EncoderOutput, capacity: int = 64, *, consume: bool = False, one_thread: bool = False
    ) -> OrtDecoder:
        """A decoder over ``encoded``; ``capacity`` = steps to reserve cache for (grows when exceeded). With
        ``consume`` the decoder may rewrite ``encoded``'s arrays in place (the caller does not read them again);
        with ``one_thread`` every step runs on the one-thread session, when the model has one (a shard of a batch
        decoded beside others). Used as a context manager, the decoder hands its cache buffers to the next one
        when it ends."""
        return OrtDecoder(self, encoded, capacity, consume=consume, one_thread=one_thread)

    def take_caches(self, count: int, size: int, dtype: type) -> list[np.ndarray]:
        """``count`` flat cache buffers of at least ``size`` elements: spare ones first, zeros for the rest."""
        with self._spare_lock:
            # Spares too small for this decoder are dropped rather than kept beside new ones (peak memory).
            fitting = sorted((a for a in self._spare_caches if a.size >= size and a.dtype == dtype), key=len)
            taken, self._spare_caches = fitting[:count], fitting[count:]
        # np.zeros maps fresh pages lazily: the unused tail of the capacity costs no memory.
        return taken + [np.zeros(size, dtype=dtype) for _ in range(count - len(taken))]

    def give_back_caches(self, buffers: list[np.ndarray]) -> None:
        """Keep a finished decoder's flat cache buffers for the next decoder (the largest ones, as many decoders'
        worth as run at once, at least two)."""
        with self._spare_lock:
            spares = sorted([*self._spare_caches, *buffers], key=lambda a: a.size, reverse=True)
            self._spare_caches = spares[: 2 * self.layers * max(2, self.shards)]

    @property
    def aligner(self) -> ort.InferenceSession:
        """The alignment graph's session, created on first use (``ModelDirError`` when the directory has none)."""
        if self._aligner is None:
            name = self.manifest.graphs.get("aligner")
            if name is None:
                raise ModelDirError(
                    f"{self.directory} has no alignment graph (aligner.onnx); re-export the model with this "
                    "version of enzh (`enzh export`) to get one"
                )
            with self._aligner_lock:
                if self._aligner is None:
                    # The mapped shared weights it reads (the embedding, the positions) are not copied again;
                    # ONNX Runtime ignores those it does not read.
                    self._aligner = _create(self.directory / name, self.options, self._shared_values)
        return self._aligner

    def align(self, input_ids: np.ndarray, attention_mask: np.ndarray, decoder_input_ids: np.ndarray) -> np.ndarray:
        """Cross-attention weights ``[B, T, S]`` of the teacher-forced ``decoder_input_ids [B, T]`` (the start
        token + target ids) on the padded source batch: the layers and heads of ``manifest.alignment``, row t
        while predicting target token t. Padded source columns are 0; padded target rows are to be ignored."""
        aligner = self.aligner
        encoded = self.encode(input_ids, attention_mask, select=False)
        available = {"cross_bias": encoded.cross_bias, **dict(zip(self._cross_names, encoded.cross, strict=True))}
        feeds = {"input_ids": np.ascontiguousarray(decoder_input_ids, dtype=np.int64)}
        self.fill_rows(feeds["input_ids"])
        for item in aligner.get_inputs():
            if item.name != "input_ids":
                feeds[item.name] = available[item.name]
        result: np.ndarray = aligner.run(["cross_attention"], feeds)[0]
        return result


class OrtDecoder:
    """A running batch of decoder rows (implements :class:`enzh.runtime.decoding.IncrementalDecoder`).

    Everything large stays where it is between steps (ONNX Runtime I/O binding): the self-attention cache is one
    preallocated buffer per layer and kind, ``[rows, H, capacity, dh]``, that the graph updates in place; the
    logits and log-probabilities are written into preallocated arrays; the cross keys/values are bound once.
    Only the chosen tokens go in and the ``top_k`` best log-probabilities per row come out. Rows are grouped
    by sentence (a sentence's beams are contiguous), so the cross keys/values hold one entry per sentence.
    """

    def __init__(
        self,
        sessions: ModelSessions,
        encoded: EncoderOutput,
        capacity: int = 64,
        *,
        consume: bool = False,
        one_thread: bool = False,
        session: ort.InferenceSession | None = None,
    ) -> None:
        self.s = sessions
        self._only = session  # every step on this session (None: chosen per step by its rows)
        # Steps of at most this many rows run on the one-thread session (when the model has one).
        self._serial_rows = sessions.serial_rows if not one_thread else np.iinfo(np.int64).max
        self.cross_bias = np.ascontiguousarray(encoded.cross_bias)
        self.cross = [np.ascontiguousarray(a) for a in encoded.cross]
        self.rows = int(self.cross_bias.shape[0])
        self._row_sentence = np.arange(self.rows)  # index into the cross arrays of every row
        # The token ids the projection scores (None: all): the variant's global shortlist or this batch's.
        self.selection = encoded.selection
        if self.selection is None and sessions.source_shortlist is not None:
            raise ValueError("a source-shortlist variant's decoder needs encode()'s selection of candidates")
        self.shortlist = sessions.shortlist if self.selection is None else self.selection.ids
        self.scored = sessions.vocab if self.shortlist is None else len(self.shortlist)
        # The projection's outputs: the scored tokens, then a source shortlist's padding columns (-inf), if any.
        self.width = self.scored if self.selection is None else len(self.selection.columns)
        self.position = 0
        self.capacity = max(1, capacity)
        self._cache: list[np.ndarray] = []  # allocated on the first step (a beam search first widens the batch)
        self._flat: list[np.ndarray] = []  # the flat buffers the cache arrays are views of
        self._pointers: list[int] = []  # their data addresses (a row slice starts at the same address)
        self._scores = np.empty((2, 0, self.width), dtype=np.float32)
        self._spread: list[np.ndarray | None] = [None, None]  # shortlist only: [rows, vocab] logits, log-probs
        self._session: ort.InferenceSession | None = None  # the session of the current row count (_use)
        self._bindings: dict[int, _Binding] = {}
        self._cross_bound = False
        # The cross arrays are the encoder's until the first reorder copies them (unless the caller gave them).
        self._owns_cross = consume
        self._bound: tuple[int, int, bool] | None = None  # (rows, buffer generation, logits) of the binding
        self._bound_k = 0  # the top_k the top-k outputs are bound for (their shape is [rows, top_k])
        self._generation = 0  # bumped whenever the buffers are reallocated
        self._ids = np.zeros((0, 1), dtype=np.int64)
        self._position = np.zeros(1, dtype=np.int64)
        self._top_k = np.ones(1, dtype=np.int64)
        self._top = (np.empty((0, 1), dtype=np.float32), np.empty((0, 1), dtype=np.int64))  # top-k outputs
        self._released = False

    def __enter__(self) -> OrtDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Hand the cache buffers to the sessions' next decoder; this decoder cannot step again."""
        if not self._released:
            self._released = True
            self.s.give_back_caches(self._flat)
            self._cache, self._flat, self._pointers = [], [], []

    @property
    def past(self) -> list[np.ndarray]:
        """The self-attention cache of every layer (key, value, key, ...), ``[rows, H, position, dh]`` views."""
        return [c[: self.rows, :, : self.position, : self.s.head_dim] for c in self._cache]

    def _allocate(self, rows: int, capacity: int) -> None:
        shape = (rows, self.s.heads, capacity, self.s.cache_head_dim)
        size = rows * self.s.heads * capacity * self.s.cache_head_dim
        flat = self.s.take_caches(2 * self.s.layers, size, self.s.cache_dtype)
        cache = [buffer[:size].reshape(shape) for buffer in flat]
        for new, old in zip(cache, self._cache, strict=False):
            new[: self.rows, :, : self.position] = old[: self.rows, :, : self.position]
        if self._flat:
            self.s.give_back_caches(self._flat)
        self._cache, self._flat, self.capacity = cache, flat, capacity
        self._pointers = [c.ctypes.data for c in cache]
        self._scores = np.empty((2, rows, self.width), dtype=np.float32)
        self._spread = [None, None]
        self._ids = np.zeros((rows, 1), dtype=np.int64)
        self._generation += 1

    def _use(self, rows: int) -> ort.InferenceSession:
        """The session for a step of ``rows`` rows (the one-thread one for few rows, when the model has it); on a
        change, its own I/O binding, bound from scratch at this step."""
        serial = self.s.decoder_serial
        session = serial if serial is not None and rows <= self._serial_rows else self.s.decoder
        session = self._only or session
        if session is not self._session:
            self._session = session
            binding = self._bindings.get(id(session))
            if binding is None:
                binding = self._bindings[id(session)] = _Binding(session)
            self._binding = binding
            self._cross_bound, self._bound, self._bound_k = False, None, 0
        return session

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        """Feed one token per row; return this step's scores (see :class:`enzh.runtime.decoding.Step`). With
        ``logits=False`` the logits are not kept: ONNX Runtime writes them and then, in place, their
        log-softmax into the same buffer (one ``[rows, vocab]`` array less)."""
        rows = self.rows
        if self._released:
            raise RuntimeError("step() on a released decoder")
        if len(tokens) != rows:
            raise ValueError(f"step() got {len(tokens)} tokens for {rows} rows")
        if not self._cache or len(self._cache[0]) < rows or self.position >= self.capacity:
            self._allocate(
                max(rows, len(self._cache[0]) if self._cache else 0), max(self.capacity, 2 * self.position, 1)
            )
        session = self._use(rows)
        binding = self._binding
        if not self._cross_bound:
            binding.input("cross_bias", self.cross_bias)
            for name, array in zip(self.s._cross_names, self.cross, strict=True):
                binding.input(name, array)
            if self.selection is not None:  # the same columns for every step of this batch
                for name, array in self.selection.feeds.items():
                    binding.input(name, array)
            self._cross_bound = True
        if self._bound != (rows, self._generation, logits):
            # (Re)bind what lives in preallocated buffers; later steps only write into them.
            binding.io.clear_binding_outputs()
            binding.input("input_ids", self._ids[:rows])
            binding.input("position", self._position_input(rows))
            binding.input("top_k", self._top_k)
            names = zip(self.s._past_names, self.s._present_names, self._cache, self._pointers, strict=True)
            for name, out_name, cache, pointer in names:
                view = cache[:rows]
                binding.input(name, view, pointer)
                binding.output(out_name, view, pointer)
            binding.output("logits", self._scores[0 if logits else 1, :rows])
            binding.output("log_probs", self._scores[1, :rows])
            self._bound = (rows, self._generation, logits)
            self._bound_k = 0
        k = min(max(1, top_k), self.scored)  # TopK runs over the scored tokens only
        if k != self._bound_k:
            # The top-k outputs are [rows, k]: bound to arrays of that shape, rebound (alone) whenever k changes,
            # e.g. when min_length is reached and eos stops being banned. (Bound arrays, not ONNX Runtime's own
            # outputs: no get_outputs() and no OrtValue wrappers per step.)
            self._top = (np.empty((rows, k), dtype=np.float32), np.empty((rows, k), dtype=np.int64))
            binding.output("top_log_probs", self._top[0])
            binding.output("top_ids", self._top[1])
            self._bound_k = k
        self._ids[:rows, 0] = tokens
        self.s.fill_rows(self._ids[:rows])
        self._top_k[0] = k
        self._run_step(session, binding, rows)
        return Step(
            logits=self._scores_of(0, rows) if logits else None,
            log_probs=self._scores_of(1, rows),
            top_log_probs=self._top[0],
            top_ids=self._top[1],
        )

    def _position_input(self, rows: int) -> np.ndarray:
        """The array bound as ``position``: one position for every row (a running batch binds one per row)."""
        return self._position

    def _run_step(self, session: ort.InferenceSession, binding: _Binding, rows: int) -> None:
        """Run the bound step at the current position and advance it."""
        self._position[0] = self.position
        session.run_with_iobinding(binding.io)
        self.position += 1

    def _scores_of(self, kind: int, rows: int) -> np.ndarray:
        """This step's logits (0) or log-probabilities (1), ``[rows, vocab]``; with a shortlist the scored
        tokens' values are written into a -inf array of the whole vocabulary."""
        scores = self._scores[kind, :rows]
        if self.shortlist is None:
            return scores
        spread = self._spread[kind]
        if spread is None:
            spread = self._spread[kind] = np.full((len(self._scores[kind]), self.s.vocab), -np.inf, np.float32)
        spread[:rows, self.shortlist] = scores[:, : self.scored]
        return spread[:rows]

    def _gather_cross(self, keep: np.ndarray) -> None:
        """New cross entry i = old entry keep[i]. The first time into copies of our own; later, when there are
        no more entries than before (finished sentences dropped), in place: only the entries that move are
        copied, and the arrays become their first len(keep) entries (still contiguous)."""
        arrays = [self.cross_bias, *self.cross]
        if self._owns_cross and len(keep) <= len(self.cross_bias):
            moved = (keep != np.arange(len(keep))).nonzero()[0]
            _copy_rows(arrays, moved, keep[moved])
            arrays = [array[: len(keep)] for array in arrays]
        else:
            arrays = [np.ascontiguousarray(array[keep]) for array in arrays]
            self._owns_cross = True
        self.cross_bias, self.cross = arrays[0], arrays[1:]
        self._cross_bound = False

    def _cross_entries(self, rows: np.ndarray) -> np.ndarray | None:
        """The cross entries the new rows need, in order (None: the current ones, unchanged); records which entry
        each new row reads. If every sentence's rows stay contiguous and equally many, one entry per sentence (a
        beam reorder within sentences changes nothing); otherwise every row gets its own entry."""
        count = len(rows)
        entries = len(self.cross_bias)
        if len(self._row_sentence) == entries and count <= entries:
            # One row per entry (greedy search): distinct rows keep their own entries, in their new order.
            seen = np.zeros(entries, dtype=bool)
            seen[rows] = True
            if int(seen.sum()) == count:
                self._row_sentence = np.arange(count)
                return rows
        owners = self._row_sentence[rows]
        if count == len(self._row_sentence) and np.array_equal(owners, self._row_sentence):
            return None  # every row stays with its sentence's entry (beam search's reorder within sentences)
        sentences = owners[np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))]
        per = count // max(1, len(sentences))
        if len(np.unique(sentences)) == len(sentences) and np.array_equal(owners, np.repeat(sentences, per)):
            self._row_sentence = np.repeat(np.arange(len(sentences)), per)
            return sentences
        self._row_sentence = np.arange(count)
        return owners

    def reorder(self, rows: np.ndarray) -> None:
        """New row i = old row rows[i]: copies the cache rows that change; cross entries follow sentences."""
        rows = np.asarray(rows, dtype=np.int64)
        count = len(rows)
        keep = self._cross_entries(rows)
        if keep is not None and not np.array_equal(keep, np.arange(len(self.cross_bias))):
            self._gather_cross(keep)
        # Self-attention cache: only rows whose source row differs are copied, and only the filled positions.
        if self._cache and self.position:
            if count > len(self._cache[0]):
                self._allocate(count, self.capacity)
            moved = (rows != np.arange(count)).nonzero()[0]
            if len(moved):
                self._copy_cache(moved, rows[moved])
        self.rows = count

    def _copy_cache(self, targets: np.ndarray, sources: np.ndarray) -> None:
        """Self-attention cache row ``targets[i]`` = row ``sources[i]``, the filled positions (the batch's)."""
        _copy_rows([cache[:, :, : self.position] for cache in self._cache], targets, sources)


def copy_rows_in_order(arrays: list[np.ndarray], targets: np.ndarray, sources: np.ndarray, lengths: np.ndarray) -> None:
    """``array[targets[i], :, :lengths[i]] = array[sources[i], :, :lengths[i]]`` for every cache array
    ``[rows, H, positions, dh]``: each row one slice, straight from its source (a fancy index reads every moved row
    into a temporary first and copies the longest row's positions for all), in an order that reads a row before
    it is overwritten. In a cycle (beams that swap rows) one row is set aside first."""
    pending = dict(zip(targets.tolist(), zip(sources.tolist(), lengths.tolist(), strict=True), strict=True))
    readers = collections.Counter(source for source, _ in pending.values())
    ready = [target for target in pending if not readers[target]]
    aside: dict[int, list[np.ndarray]] = {}
    while pending:
        if not ready:  # (every row left is still read by another: a cycle)
            row = next(iter(pending))
            length = max(n for source, n in pending.values() if source == row)
            aside[row] = [array[row, :, :length].copy() for array in arrays]
            readers[row] = 0
            ready.append(row)
        target = ready.pop()
        source, length = pending.pop(target)
        if source in aside:
            for array, kept in zip(arrays, aside[source], strict=True):
                array[target, :, :length] = kept[:, :length]
            continue
        for array in arrays:
            array[target, :, :length] = array[source, :, :length]
        readers[source] -= 1
        if not readers[source] and source in pending:
            ready.append(source)


def _copy_rows(arrays: list[np.ndarray], targets: np.ndarray, sources: np.ndarray) -> None:
    """``array[targets] = array[sources]`` for every array. A few rows that do not overlap (rows from the end of
    a batch filling the places of dropped ones) are copied one slice each, cheaper than fancy indexing."""
    if not len(targets):
        return
    if len(targets) <= 4 and sources.min() > targets.max():
        for target, source in zip(targets.tolist(), sources.tolist(), strict=True):
            for array in arrays:
                array[target] = array[source]
    else:
        for array in arrays:
            array[targets] = array[sources]
