"""The ``tokenizers`` library's two subword models, reimplemented: BPE (NLLB) and Unigram (mBART-50), and the
merges transformers generates for a BPE converted from a SentencePiece model."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

_K_UNK_PENALTY = 10.0
_WORD_CACHE = 1 << 16


class Bpe:
    """tokenizers' BPE model (dropout off, fuse_unk on, no byte fallback, no continuing prefix)."""

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], unk_token: str) -> None:
        self.vocab = vocab
        self._id_to_token = {idx: token for token, idx in vocab.items()}
        self._unk = vocab.get(unk_token)
        table: dict[int, int] = {}
        for rank, (left, right) in enumerate(merges):
            a, b, merged = vocab.get(left), vocab.get(right), vocab.get(left + right)
            if a is None or b is None or merged is None:
                missing = next(t for t, i in ((left, a), (right, b), (left + right, merged)) if i is None)
                raise ValueError(f"BPE merge {left!r} + {right!r}: {missing!r} is not in the vocabulary")
            table[(a << 32) | b] = (rank << 32) | merged  # a later duplicate of a pair wins, as in tokenizers
        self._merges = table
        self._cache: dict[str, list[int]] = {}

    def id_to_token(self, idx: int) -> str | None:
        return self._id_to_token.get(idx)

    def encode(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        vocab = self.vocab
        symbols: list[int] = []
        pending_unk = False
        for ch in word:
            idx = vocab.get(ch)
            if idx is None:
                pending_unk = self._unk is not None  # quirk: a run of unknown characters is ONE <unk> (fuse_unk)
                continue
            if pending_unk:
                symbols.append(self._unk)  # type: ignore[arg-type]
                pending_unk = False
            symbols.append(idx)
        if pending_unk:
            symbols.append(self._unk)  # type: ignore[arg-type]
        out = self._merge(symbols) if len(symbols) > 1 else symbols
        if len(self._cache) >= _WORD_CACHE:
            self._cache.clear()
        self._cache[word] = out
        return out

    def _merge(self, symbols: list[int]) -> list[int]:
        # Lowest merge rank first, leftmost among equal ranks (tokenizers' Word::merge_all, with its stale checks).
        merges = self._merges
        n = len(symbols)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap: list[tuple[int, int, int]] = []
        for i in range(n - 1):
            m = merges.get((symbols[i] << 32) | symbols[i + 1])
            if m is not None:
                heap.append((m >> 32, i, m & 0xFFFFFFFF))
        heapq.heapify(heap)
        while heap:
            _, pos, new_id = heapq.heappop(heap)
            if not alive[pos]:
                continue
            right = nxt[pos]
            if right >= n:
                continue
            m = merges.get((symbols[pos] << 32) | symbols[right])
            if m is None or (m & 0xFFFFFFFF) != new_id:
                continue  # stale: one of the two symbols was merged since
            symbols[pos] = new_id
            alive[right] = False
            nxt[pos] = nxt[right]
            if nxt[pos] < n:
                prv[nxt[pos]] = pos
            left = prv[pos]
            if left >= 0:
                m = merges.get((symbols[left] << 32) | new_id)
                if m is not None:
                    heapq.heappush(heap, (m >> 32, left, m & 0xFFFFFFFF))
            if nxt[pos] < n:
                m = merges.get((new_id << 32) | symbols[nxt[pos]])
                if m is not None:
                    heapq.heappush(heap, (m >> 32, pos, m & 0xFFFFFFFF))
        return [s for s, keep in zip(symbols, alive, strict=True) if keep]


class Unigram:
    """tokenizers' Unigram model (Viterbi over every vocabulary entry, fuse_unk on, no byte fallback)."""

    def __init__(self, pieces: Sequence[tuple[str, float]], unk_id: int) -> None:
        if not 0 <= unk_id < len(pieces):
            raise ValueError(f"Unigram unk_id {unk_id} is outside the vocabulary of {len(pieces)} pieces")
        self._pieces = [piece for piece, _ in pieces]
        self._scores = [float(score) for _, score in pieces]
        # quirk: EVERY entry is a candidate, special tokens and language codes included (score 0.0, the best
        # score there is), so text that normalizes to "</s>" or "en_XX" inside a word becomes that token.
        self.vocab: dict[str, int] = {}
        for idx, piece in enumerate(self._pieces):
            self.vocab[piece] = idx  # a later duplicate wins, as in tokenizers
        longest: dict[str, int] = {}
        for piece in self.vocab:
            if piece and len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._longest = longest
        self._unk = unk_id
        self._unk_score = min(self._scores, default=0.0) - _K_UNK_PENALTY
        self._cache: dict[str, list[int]] = {}

    def id_to_token(self, idx: int) -> str | None:
        return self._pieces[idx] if 0 <= idx < len(self._pieces) else None

    def encode(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        out = self._viterbi(word)
        if len(self._cache) >= _WORD_CACHE:
            self._cache.clear()
        self._cache[word] = out
        return out

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        vocab, scores, longest, unk = self.vocab, self._scores, self._longest, self._unk
        best = [0.0] * (n + 1)
        start_of = [-1] * (n + 1)  # -1: no path ends here yet
        node_id = [0] * (n + 1)
        for s in range(n):
            if s and start_of[s] < 0:
                continue
            base = best[s]
            single = False
            for e in range(s + 1, min(n, s + longest.get(word[s], 0)) + 1):
                idx = vocab.get(word[s:e])
                if idx is None:
                    continue
                score = base + scores[idx]
                if start_of[e] < 0 or score > best[e]:  # quirk: ties keep the shorter (earlier) candidate
                    best[e], start_of[e], node_id[e] = score, s, idx
                if e == s + 1:
                    single = True
            if not single:  # no piece is this one character: the unknown node
                score = base + self._unk_score
                if start_of[s + 1] < 0 or score > best[s + 1]:
                    best[s + 1], start_of[s + 1], node_id[s + 1] = score, s, unk
        # back-track; a run of unknown nodes is fused into one string, looked up again (normally <unk>)
        strings: list[str] = []
        end = n
        unk_end = -1
        while end > 0:
            start = start_of[end]
            if node_id[end] == unk:
                if unk_end < 0:
                    unk_end = end
            else:
                if unk_end >= 0:
                    strings.append(word[end:unk_end])
                    unk_end = -1
                strings.append(word[start:end])
            end = start
        if unk_end >= 0:
            strings.append(word[0:unk_end])
        strings.reverse()
        return [vocab.get(s, unk) for s in strings]


def generate_merges(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """transformers' generate_merges(vocab) for a SentencePiece vocabulary {piece: spm id}: every split of every
    piece into two pieces, ordered by the merged piece's id, then by the lengths of the halves."""
    merges: list[tuple[str, str, int]] = []
    for merged, rank in vocab.items():
        local = [
            (merged[:i], merged[i:], rank) for i in range(1, len(merged)) if merged[:i] in vocab and merged[i:] in vocab
        ]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])))
    return [(left, right) for left, right, _ in merges]
