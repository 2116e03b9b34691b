"""A running batch: sentences join a decode between two steps and leave it as soon as they are done.

Continuous batching for the service (enzh.serve.scheduler): one decoder keeps stepping while sentences come and
go. Sentences whose settings only ban fixed tokens (Marian's) share one vectorized search per lane and settings:
:class:`_GreedyPool` or :class:`~enzh.runtime.beam_pool.BeamPool`, each sentence at its own length. Others that are
added together form a *cohort*, searched by the same greedy or beam search as a batch of its own
(:func:`enzh.runtime.decoding.greedy_steps` / :func:`~enzh.runtime.decoding.beam_steps`, generators). Every step,
the rows of all pools and cohorts run as one decoder step and each search gets its own rows of the result back.
Each row has its own position (the decoder graph takes ``position [R]``), its own self-attention cache row and
its sentence's cross-attention entry (widened with masked columns when a longer source joins). So a sentence's
tokens and score are those it gets decoded alone, whatever joins or leaves beside it.

A beam search joins by whole sentences (its beams are contiguous rows, one cross entry per sentence). Decoders
exported before per-row positions (``python -m enzh.export.upgrade DIR`` rewrites them) and source-shortlist
variants (their projection's columns are a whole batch's) cannot: :meth:`Translator.running_batch
<enzh.runtime.translator.Translator.running_batch>` returns None for them, and the service batches their sentences
whole (dynamic batching).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnxruntime as ort

from enzh.runtime.batching import length_groups, pad_batch
from enzh.runtime.beam_pool import BeamPool, Done, pooled_beam
from enzh.runtime.decoding import (
    Finished,
    Hypothesis,
    Reorder,
    Search,
    Step,
    StepRequest,
    _check_vocab,
    _greedy_from_top,
    beam_steps,
    greedy_steps,
)
from enzh.runtime.options import DecodingSettings
from enzh.runtime.parallel import ShardRunner
from enzh.runtime.processors import fixed_bans, log_softmax
from enzh.runtime.sessions import EncoderOutput, ModelSessions, OrtDecoder, _Binding, copy_rows_in_order

_MASKED = float(np.finfo(np.float32).min)  # the encoder's bias on padded source columns


class RowDecoder(OrtDecoder):
    """An :class:`OrtDecoder` whose rows have positions of their own, and to which sentences are added between
    steps (``beams`` rows each, at position 0)."""

    def __init__(
        self,
        sessions: ModelSessions,
        encoded: EncoderOutput,
        beams: int,
        capacity: int,
        *,
        one_thread: bool = False,
        session: ort.InferenceSession | None = None,
    ) -> None:
        super().__init__(sessions, encoded, capacity, consume=True, one_thread=one_thread, session=session)
        self.beams = beams
        sentences = self.rows
        self._row_sentence = np.repeat(np.arange(sentences), beams)
        self.rows = sentences * beams
        self.positions = np.zeros(self.rows, dtype=np.int64)  # every row's own position
        self._row_positions = np.zeros(self.rows, dtype=np.int64)  # the buffer bound as the graph's position
        self._vacant = np.zeros(self.rows, dtype=bool)  # rows of sentences that left, not yet reused or dropped
        self._store: list[np.ndarray] = []  # the cross arrays' buffers (bias, keys, values), with room to grow

    def _allocate(self, rows: int, capacity: int) -> None:
        # Sentences keep joining: room for twice the rows held, so that a growing batch reallocates (and copies
        # its cache into fresh pages, tens of ms for a hundred rows) a few times, not at every join.
        held = len(self._cache[0]) if self._cache else 0
        super()._allocate(max(rows, 2 * held) if rows > held else rows, capacity)
        if len(self._row_positions) < len(self._cache[0]):
            self._row_positions = np.zeros(len(self._cache[0]), dtype=np.int64)

    def _position_input(self, rows: int) -> np.ndarray:
        return self._row_positions[:rows]

    def _run_step(self, session: ort.InferenceSession, binding: _Binding, rows: int) -> None:
        self.positions[self._vacant] = 0  # (a vacant row idles at position 0: nobody reads its output)
        self._row_positions[:rows] = self.positions
        session.run_with_iobinding(binding.io)
        self.positions += 1
        self.position = int(self.positions.max())

    def vacate(self, rows: np.ndarray) -> None:
        """Mark ``rows`` as left: they keep stepping, unread, until a sentence is added into them or they are
        reordered away."""
        self._vacant[rows] = True
        self.positions[rows] = 0

    def add(self, encoded: EncoderOutput, free: Sequence[int] = ()) -> np.ndarray:
        """Add ``encoded``'s sentences, ``beams`` rows each at position 0: into the vacant blocks ``free`` (block
        b: rows b*beams to b*beams+beams-1) as far as they go, the rest after the current rows. Returns each
        sentence's first row."""
        count = len(encoded.cross_bias)
        entries = len(self.cross_bias)
        beams = self.beams
        # One cross entry per sentence while every sentence has its beams in a block (entry b: block b); else
        # one per row. Vacant blocks are reused in the first layout only.
        blocks = self.rows == entries * beams and np.array_equal(
            self._row_sentence, np.repeat(np.arange(entries), beams)
        )
        new = [encoded.cross_bias, *encoded.cross]
        into = np.asarray(list(free)[:count] if blocks else [], dtype=np.int64)
        if len(into):
            self._write_cross([array[: len(into)] for array in new], into)
            reused = (into[:, None] * beams + np.arange(beams)).ravel()
            self.positions[reused] = 0
            self._vacant[reused] = False
        extra = count - len(into)
        if not extra:
            return into * beams
        rest = [array[len(into) :] for array in new]
        if not blocks:
            rest = [np.repeat(array, beams, axis=0) for array in rest]
        self._write_cross(rest, None)
        new_rows = np.repeat(np.arange(extra), beams) if blocks else np.arange(extra * beams)
        self._row_sentence = np.concatenate([self._row_sentence, entries + new_rows])
        added = extra * beams
        if self._cache and len(self._cache[0]) < self.rows + added:
            self._allocate(self.rows + added, self.capacity)  # (copies the rows there are, so before they grow)
        self.positions = np.concatenate([self.positions, np.zeros(added, dtype=np.int64)])
        self._vacant = np.concatenate([self._vacant, np.zeros(added, dtype=bool)])
        first = self.rows + np.arange(extra, dtype=np.int64) * beams
        self.rows += added
        return np.concatenate([into * beams, first])

    def _write_cross(self, new: list[np.ndarray], at: np.ndarray | None) -> None:
        """Write the entries ``new`` (bias, then keys and values) into entries ``at`` (None: after the current
        ones) of buffers with room for more entries and columns (reallocated, twice as many entries, when they are
        full or too narrow; padded columns masked). The graph's inputs are bound again only when the arrays
        change shape or place."""
        entries = len(self.cross_bias)
        total = entries + (len(new[0]) if at is None else 0)
        store = self._store
        backed = bool(store) and self.cross_bias.ctypes.data == store[0].ctypes.data
        needed = max(self.cross_bias.shape[-1], new[0].shape[-1])
        moved = not backed or len(store[0]) < total or store[0].shape[-1] < needed
        if moved:
            capacity = max(2 * total, 8)
            columns = -(-needed // 16) * 16  # room for a slightly longer source without reallocating
            old = [self.cross_bias, *self.cross]
            store = [_buffer(array, capacity, columns, bias=i == 0) for i, array in enumerate(old)]
            for i, (buffer, array) in enumerate(zip(store, old, strict=True)):
                _put(buffer, array, 0, bias=i == 0)
            self._store = store
        place: int | np.ndarray = entries if at is None else at
        for i, (buffer, array) in enumerate(zip(store, new, strict=True)):
            _put(buffer, array, place, bias=i == 0)
        if moved or total != entries:
            self.cross_bias, self.cross = store[0][:total], [buffer[:total] for buffer in store[1:]]
            self._cross_bound = False
        self._owns_cross = True

    def _copy_cache(self, targets: np.ndarray, sources: np.ndarray) -> None:
        # (rows have positions of their own: a young sentence's rows copy its few positions, not the oldest's)
        copy_rows_in_order(self._cache, targets, sources, self.positions[sources])

    def reorder(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        positions = self.positions[rows]
        vacant = self._vacant[rows]
        super().reorder(rows)
        self.positions = positions
        self._vacant = vacant
        self.position = int(positions.max()) if len(positions) else 0


def _buffer(array: np.ndarray, entries: int, columns: int, *, bias: bool) -> np.ndarray:
    """An empty cross buffer like ``array`` with room for ``entries`` entries of ``columns`` source columns: the
    bias ([E, 1, 1, S]) masked, keys and values ([E, H, S, dh]) zero."""
    if bias:
        return np.full((entries, 1, 1, columns), _MASKED, dtype=array.dtype)
    return np.zeros((entries, array.shape[1], columns, array.shape[3]), dtype=array.dtype)


def _put(buffer: np.ndarray, array: np.ndarray, at: int | np.ndarray, *, bias: bool) -> None:
    """Write ``array``'s entries into ``buffer``, from entry ``at`` on (or into the entries ``at``), its columns
    first; the bias masks the rest of each entry's columns (the keys and values there are left as they are: masked,
    they are never read, and every value a buffer holds is finite, zeros or an earlier sentence's)."""
    if not isinstance(at, int) and np.array_equal(at, np.arange(at[0], at[0] + len(at))):
        at = int(at[0])  # (a run of entries: a slice, no fancy indexing)
    entries: slice | np.ndarray = slice(at, at + len(array)) if isinstance(at, int) else at
    if bias:  # columns on the last axis
        buffer[entries, :, :, : array.shape[-1]] = array
        buffer[entries, :, :, array.shape[-1] :] = _MASKED
    else:
        buffer[entries, :, : array.shape[2]] = array


@dataclass(eq=False)
class _Cohort:
    """Sentences added together: one search over them (a generator of enzh.runtime.decoding), and where its rows
    are in the decoder."""

    search: Search
    tags: list[Hashable]
    lengths: list[int]
    cancelled: np.ndarray  # per sentence: stop it (the search reads it after each step)
    rows: np.ndarray  # the decoder row of each of the search's rows
    request: StepRequest | None = None  # the step it waits for (None: it has ended)

    def advance(self, reply: Step | None) -> list[Done]:
        """Run the search up to its next step request (or its end), following its reorders; the sentences done."""
        done: list[Done] = []
        while True:
            try:
                op = self.search.send(reply)
            except StopIteration:
                self.request, self.rows = None, self.rows[:0]
                return done
            reply = None
            if isinstance(op, StepRequest):
                self.request = op
                return done
            if isinstance(op, Reorder):
                self.rows = self.rows[op.rows]
            elif isinstance(op, Finished):
                i = op.sentence
                done.append((self.tags[i], op.hypotheses, self.lengths[i], bool(self.cancelled[i])))

    def advance_from(self, step: Step) -> list[Done]:
        """:meth:`advance` with this search's rows of a step of the whole decoder."""
        assert self.request is not None
        return self.advance(_rows_of(step, self.rows, self.request))

    def cancel(self, wanted: set[Hashable]) -> None:
        for i, tag in enumerate(self.tags):
            if tag in wanted:
                self.cancelled[i] = True


def pooled_greedy(settings: DecodingSettings, beams: int) -> bool:
    """Whether sentences of these settings can share one :class:`_GreedyPool`: greedy search whose logits
    processors only ban the same tokens at every step (no forced first token, no minimum length, no repetition
    rules: Marian's settings), so each row's step is decided from its own best few, whatever its length."""
    return (
        beams == 1
        and settings.forced_bos_token_id is None
        and settings.min_length <= 1
        and fixed_bans(1, settings) is not None
    )


class _GreedyPool:
    """Every greedy sentence of a lane whose settings :func:`pooled_greedy` accepts, each row at its own length:
    one vectorized step for all of them. Step for step what :func:`~enzh.runtime.decoding.greedy_steps` does for
    a sentence alone (its best allowed token, renormalized over the allowed ones; eos forced on its last step; done
    at eos or its own max_length), so the tokens and scores are the same."""

    def __init__(self, settings: DecodingSettings) -> None:
        self.eos = settings.eos_token_id
        self.start = settings.decoder_start_token_id
        self.bans = fixed_bans(1, settings) or ()
        self.forced = settings.forced_eos_token_id
        self.checked = False
        self.rows = np.zeros(0, dtype=np.int64)
        self.tags: list[Hashable] = []
        self.lengths = np.zeros(0, dtype=np.int64)  # source tokens
        self.max_length = np.zeros(0, dtype=np.int64)
        self.length = np.zeros(0, dtype=np.int64)  # tokens so far, start token included
        self.total = np.zeros(0, dtype=np.float32)
        self.history = np.zeros((0, 1), dtype=np.int64)
        self.cancelled = np.zeros(0, dtype=bool)
        self.request: StepRequest | None = None

    def add(self, rows: np.ndarray, tags: list[Hashable], lengths: list[int], max_length: int) -> None:
        count = len(tags)
        width = max(self.history.shape[1], max_length)
        history = np.zeros((len(self.tags) + count, width), dtype=np.int64)
        history[: len(self.tags), : self.history.shape[1]] = self.history
        history[len(self.tags) :, 0] = self.start
        self.history = history
        self.rows = np.concatenate([self.rows, rows])
        self.tags += tags
        self.lengths = np.concatenate([self.lengths, np.asarray(lengths, dtype=np.int64)])
        self.max_length = np.concatenate([self.max_length, np.full(count, max_length, dtype=np.int64)])
        self.length = np.concatenate([self.length, np.ones(count, dtype=np.int64)])
        self.total = np.concatenate([self.total, np.zeros(count, dtype=np.float32)])
        self.cancelled = np.concatenate([self.cancelled, np.zeros(count, dtype=bool)])
        self._ask()

    def _ask(self) -> None:
        last = self.history[np.arange(len(self.tags)), self.length - 1]
        self.request = StepRequest(last, 1 + len(self.bans), False) if len(self.tags) else None

    def advance_from(self, step: Step) -> list[Done]:
        """Every sentence's next token from ``step``, a step of the whole decoder (this pool reads its rows)."""
        if not self.checked:
            _check_vocab(self.bans, step)
            self.checked = True
        # 1. Every row's best allowed token and its renormalized log-probability (all scores where the best few
        #    hold none); the forced eos, with log-probability 0, on a row's last step. (Worked out for all the
        #    decoder's rows, then this pool's taken: cheaper than copying its rows of the scores first.)
        best = _greedy_from_top(step, self.bans)
        if best is None:
            scores = step.log_probs[self.rows]
            scores[:, list(self.bans)] = -np.inf
            tokens = scores.argmax(axis=1)
            log_probs = log_softmax(scores)[np.arange(len(tokens)), tokens]
        else:
            tokens, log_probs = best[0][self.rows], best[1][self.rows]
        if self.forced is not None:
            last = self.length == self.max_length - 1
            tokens[last], log_probs[last] = self.forced, 0.0
        self.total += log_probs
        self.history[np.arange(len(tokens)), self.length] = tokens
        self.length += 1
        # 2. A row is done at eos or its max_length (or when cancelled).
        finished = (self.length >= self.max_length) | (tokens == self.eos) | self.cancelled
        done: list[Done] = []
        for row in finished.nonzero()[0].tolist():
            hypothesis = Hypothesis(tuple(self.history[row, 1 : self.length[row]].tolist()), float(self.total[row]))
            done.append((self.tags[row], [hypothesis], int(self.lengths[row]), bool(self.cancelled[row])))
        if done:
            keep = ~finished
            self.rows, self.lengths, self.max_length = self.rows[keep], self.lengths[keep], self.max_length[keep]
            self.length, self.total, self.history = self.length[keep], self.total[keep], self.history[keep]
            self.cancelled = self.cancelled[keep]
            self.tags = [tag for tag, k in zip(self.tags, keep.tolist(), strict=True) if k]
        self._ask()
        return done

    def cancel(self, wanted: set[Hashable]) -> None:
        for i, tag in enumerate(self.tags):
            if tag in wanted:
                self.cancelled[i] = True


class RunningBatch:
    """Sentences decoded together, joining and leaving between steps (see the module docstring).

    ``settings_for(source_length)``: a sentence's decoding settings (its output bound depends on its length);
    ``beams``: the beam width every sentence of this batch uses. With a ``runner`` of several threads (small fp32
    models, enzh.runtime.parallel) the sentences are dealt to as many lanes, each a decoder on the one-thread
    sessions, whose steps run at once. ``one_thread``: one lane, encoded and stepped on one-thread sessions (the
    service's lanes, each stepping beside the others).
    """

    def __init__(
        self,
        sessions: ModelSessions,
        settings_for: Callable[[int], DecodingSettings],
        *,
        beams: int,
        pad_token_id: int,
        max_positions: int,
        runner: ShardRunner | None = None,
        one_thread: bool = False,
    ) -> None:
        self.sessions = sessions
        self.settings_for = settings_for
        self.beams = beams
        self.pad_token_id = pad_token_id
        self.max_positions = max_positions
        runner = self.runner = None if one_thread else runner
        count = max(1, runner.threads if runner is not None else 1)
        solo = sessions.one_thread() if one_thread else None
        self.lanes = [_Lane(sessions, beams, pad_token_id, one_thread=count > 1, solo=solo) for _ in range(count)]

    @property
    def rows(self) -> int:
        return sum(lane.rows for lane in self.lanes)

    @property
    def sentences(self) -> int:
        """Sentences in the batch (cancelled ones until their rows have left)."""
        return sum(lane.sentences for lane in self.lanes)

    @property
    def tokens(self) -> int:
        """Their source tokens."""
        return sum(lane.tokens for lane in self.lanes)

    def add(self, sources: Sequence[Sequence[int]], tags: Sequence[Hashable]) -> None:
        """Encode ``sources`` (id lists, each ending in eos) and add them; they take their first step with the
        others at the next :meth:`step`. ``tags`` name them in what :meth:`step` returns."""
        if len(tags) != len(sources):
            raise ValueError(f"add() got {len(tags)} tags for {len(sources)} sources")
        for i, source in enumerate(sources):
            if not 0 < len(source) <= self.max_positions:
                raise ValueError(f"source {i} has {len(source)} tokens; the model accepts 1..{self.max_positions}")
        if not sources:
            return
        # Each sentence goes to the lane with the fewest rows; a lane encodes its new sentences on its own thread
        # at its next step.
        load = [lane.rows + len(lane.pending) * self.beams for lane in self.lanes]
        for i in sorted(range(len(sources)), key=lambda i: -len(sources[i])):
            lane = min(range(len(load)), key=load.__getitem__)
            load[lane] += self.beams
            self.lanes[lane].pending.append((list(sources[i]), tags[i], self.settings_for(len(sources[i]))))

    def step(self) -> list[tuple[Hashable, list[Hypothesis]]]:
        """One decoder step for every sentence in the batch (the lanes' at once); the sentences done since the
        last call, with their hypotheses (best first), cancelled ones left out."""
        busy = [lane for lane in self.lanes if lane.cohorts or lane.pending]
        if len(busy) > 1 and self.runner is not None:
            found = self.runner.map(lambda i: busy[int(i[0])].step(), [np.array([i]) for i in range(len(busy))])
            return [done for part in found for done in part]
        return [done for lane in busy for done in lane.step()]

    def cancel(self, tags: Iterable[Hashable]) -> None:
        """Stop the sentences of ``tags``: their rows leave after the next step, and nothing is returned for them."""
        wanted = set(tags)
        for lane in self.lanes:
            lane.cancel(wanted)

    def close(self) -> None:
        """Hand the decoders' buffers back (the batch can be used again: its next sentences start new ones)."""
        for lane in self.lanes:
            lane.close()


class _Lane:
    """One decoder of a running batch and the searches whose rows it holds.

    A sentence keeps its rows (a block of ``beams``) from joining to leaving; a sentence that joins takes the block
    of one that has left, or new rows after the others. Blocks left vacant keep stepping, unread, until a sentence
    takes them; when more than a quarter of the blocks are vacant the decoder is compacted (the sentences at the end
    move into the vacant blocks and the rows after them are dropped)."""

    def __init__(
        self,
        sessions: ModelSessions,
        beams: int,
        pad_token_id: int,
        *,
        one_thread: bool,
        solo: tuple[ort.InferenceSession, ort.InferenceSession] | None = None,
    ) -> None:
        self.sessions = sessions
        self.beams = beams
        self.pad_token_id = pad_token_id
        self.one_thread = one_thread
        self.solo = solo  # (decoder, encoder) sessions every step and encoding run on (None: chosen by rows)
        self.pending: list[tuple[list[int], Hashable, DecodingSettings]] = []  # added, not yet encoded
        self._decoder: RowDecoder | None = None
        self.cohorts: list[_Cohort | _GreedyPool | BeamPool] = []
        self._pools: dict[
            DecodingSettings, _GreedyPool | BeamPool
        ] = {}  # by the settings they share (max_length aside)
        self._finished: list[tuple[Hashable, list[Hypothesis]]] = []
        self._changed = False  # sentences left since the rows were last settled
        self._free: list[int] = []  # vacant blocks, for the next sentences to join
        self.sentences = 0
        self.tokens = 0

    @property
    def rows(self) -> int:
        """The rows of the sentences in this lane (vacant ones not counted)."""
        return self.sentences * self.beams if self._decoder is not None else 0

    def _join_pending(self) -> bool:
        """Encode the sentences added since the last step (on this lane's thread, in groups of similar lengths)
        and join them; whether any joined."""
        pending, self.pending = self.pending, []
        for members in length_groups([len(source) for source, _, _ in pending]):
            self._join([pending[i] for i in members])
        return bool(pending)

    def _join(self, pending: list[tuple[list[int], Hashable, DecodingSettings]]) -> None:
        sources = [source for source, _, _ in pending]
        ids, mask = pad_batch(sources, self.pad_token_id)
        encoded = self.sessions.encode(
            ids,
            mask,
            select=False,
            one_thread=self.one_thread or len(ids) == 1,
            session=self.solo[1] if self.solo is not None else None,
        )
        settings = [item[2] for item in pending]
        if self._decoder is None:
            self._decoder = RowDecoder(
                self.sessions,
                encoded,
                self.beams,
                capacity=max(s.max_length for s in settings),
                one_thread=self.one_thread,
                session=self.solo[0] if self.solo is not None else None,
            )
            self._free = []
            rows = np.arange(len(pending), dtype=np.int64) * self.beams
        else:
            rows = self._decoder.add(encoded, self._free)
            taken = set((rows // self.beams).tolist())
            self._free = [block for block in self._free if block not in taken]
        lengths = [len(source) for source in sources]
        self.sentences += len(pending)
        self.tokens += sum(lengths)
        # (before its first step a search has one row per sentence: the first of the sentence's block)
        groups: dict[DecodingSettings, list[int]] = {}
        for i, each in enumerate(settings):
            groups.setdefault(each, []).append(i)
        for each, members in groups.items():
            tags = [pending[i][1] for i in members]
            self._start(each, rows[members], tags, [lengths[i] for i in members])

    def _start(self, settings: DecodingSettings, rows: np.ndarray, tags: list[Hashable], lengths: list[int]) -> None:
        """Start searching sentences of the same settings: in the lane's greedy or beam pool of those settings
        (max_length aside) when :func:`pooled_greedy` or :func:`~enzh.runtime.beam_pool.pooled_beam` allows, else
        as a cohort of their own."""
        kind = (
            _GreedyPool
            if pooled_greedy(settings, self.beams)
            else BeamPool
            if pooled_beam(settings, self.beams)
            else None
        )
        if kind is not None:
            key = replace(settings, max_length=2)
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = kind(settings)
                self.cohorts.append(pool)
            pool.add(rows, tags, lengths, settings.max_length)
            return
        count = len(tags)
        cancelled = np.zeros(count, dtype=bool)
        search = (
            beam_steps(count, settings, 1, cancelled) if self.beams > 1 else greedy_steps(count, settings, cancelled)
        )
        cohort = _Cohort(search, tags, lengths, cancelled, rows)
        self.cohorts.append(cohort)
        self._take(cohort.advance(None))

    def cancel(self, wanted: set[Hashable]) -> None:
        self.pending = [item for item in self.pending if item[1] not in wanted]
        for cohort in self.cohorts:
            cohort.cancel(wanted)

    def step(self) -> list[tuple[Hashable, list[Hypothesis]]]:
        # 1. New sentences join, into the blocks of those that left first; a beam search's new sentences get
        #    their beams' rows (until its first step a sentence reads one row).
        if self._join_pending() and self.beams > 1:
            self._settle()
        asking = [c for c in self.cohorts if c.request is not None]
        if asking and self._decoder is not None:
            # 2. One decoder step for every row (a vacant row gets a token too; nobody reads its output).
            requests = [c.request for c in asking if c.request is not None]
            tokens = np.zeros(self._decoder.rows, dtype=np.int64)
            for cohort, request in zip(asking, requests, strict=True):
                tokens[cohort.rows] = request.tokens
            top_k = max(r.top_k for r in requests)
            logits = any(r.logits for r in requests)
            step = self._decoder.step(tokens, top_k, logits=logits)
            # 3. Every search reads its rows and says which sentences are done.
            for cohort in asking:
                self._take(cohort.advance_from(step))
        self.cohorts = [c for c in self.cohorts if c.request is not None or len(c.rows)]
        self._pools = {k: p for k, p in self._pools.items() if p.request is not None}
        # 4. The searches' reorders and the rows of the sentences that left (for a beam search, every step).
        if self._changed or self.beams > 1 or not self.cohorts:
            self._settle()
            self._changed = False
        found, self._finished = self._finished, []
        return found

    def close(self) -> None:
        if self._decoder is not None:
            self._decoder.release()
            self._decoder = None
        self.cohorts, self._pools, self.pending, self._free = [], {}, [], []
        self.sentences = self.tokens = 0

    def _take(self, done: list[Done]) -> None:
        for tag, hypotheses, length, cancelled in done:
            self._changed = True
            self.sentences -= 1
            self.tokens -= length
            if not cancelled:
                self._finished.append((tag, hypotheses))

    def _settle(self) -> None:
        """Put every sentence's rows in its block, in its search's order (the rows a beam search reordered to),
        and mark the blocks of the sentences that left vacant; with more than a quarter vacant, compact instead
        (no sentences left: release the decoder)."""
        decoder = self._decoder
        if decoder is None:
            return
        live = [c for c in self.cohorts if len(c.rows)]
        if not live:
            self.close()
            return
        beams = self.beams
        lines = np.concatenate([c.rows.reshape(-1, beams) for c in live])  # a sentence's rows per line
        blocks = lines[:, 0] // beams
        total = decoder.rows // beams
        if (total - len(blocks)) * 4 > total:
            self._compact(live, lines, blocks)
            return
        order = np.arange(decoder.rows)
        new_rows = blocks[:, None] * beams + np.arange(beams)
        order[new_rows.ravel()] = lines.ravel()
        if not np.array_equal(order, np.arange(len(order))):
            decoder.reorder(order)
        self._assign(live, new_rows)
        used = np.zeros(total, dtype=bool)
        used[blocks] = True
        vacant = np.flatnonzero(~used)
        self._free = vacant.tolist()
        if len(vacant):
            decoder.vacate((vacant[:, None] * beams + np.arange(beams)).ravel())

    def _compact(self, live: list[_Cohort | _GreedyPool | BeamPool], lines: np.ndarray, blocks: np.ndarray) -> None:
        """Reorder the decoder to the rows of the sentences in it: those beyond the new row count move into the
        vacant blocks (fewest rows copied), the others stay where they are."""
        assert self._decoder is not None
        beams = self.beams
        count = len(blocks)
        target = blocks.copy()
        moving = blocks >= count
        if moving.any():
            free = np.setdiff1d(np.arange(count), blocks[~moving])
            target[moving] = free[: int(moving.sum())]
        new_rows = target[:, None] * beams + np.arange(beams)
        order = np.empty(count * beams, dtype=np.int64)
        order[new_rows.ravel()] = lines.ravel()
        self._decoder.reorder(order)
        self._assign(live, new_rows)
        self._free = []

    @staticmethod
    def _assign(live: list[_Cohort | _GreedyPool | BeamPool], new_rows: np.ndarray) -> None:
        """Give each search the rows its sentences now have (``new_rows``: one line per sentence, in order)."""
        start = 0
        for cohort in live:
            sentences = len(cohort.rows) // new_rows.shape[1]
            cohort.rows = new_rows[start : start + sentences].ravel()
            start += sentences


def _rows_of(step: Step, rows: np.ndarray, request: StepRequest) -> Step:
    """The rows ``rows`` of ``step`` (views when they are a run of rows, as they mostly are), with the top-k and
    the logits that ``request`` asked for."""
    k = min(request.top_k, step.top_ids.shape[1])
    first = int(rows[0])
    index: slice | np.ndarray = rows
    if int(rows[-1]) - first + 1 == len(rows) and np.array_equal(rows, np.arange(first, first + len(rows))):
        index = slice(first, first + len(rows))
    return Step(
        logits=step.logits[index] if request.logits and step.logits is not None else None,
        log_probs=step.log_probs[index],
        top_log_probs=step.top_log_probs[index, :k],
        top_ids=step.top_ids[index, :k],
    )
