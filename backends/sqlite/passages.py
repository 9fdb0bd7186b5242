"""Passage vectors: a long message is also indexed sentence by sentence.

One vector per message dilutes a fact said in passing inside a long message about
something else ("… Oh, and we adopted a beagle called Biscuit. …"): the message's vector
is about the rest, and "what is my dog's name?" does not find it (buried facts scored
recall@10 0.60 on the ``quality`` set with whole-message vectors only). So a message of
``MIN_SENTENCES`` or more sentences also gets one vector per passage (a sentence, or a
window of consecutive sentences when there are more than ``MAX_PASSAGES``), and a search
scores a message by its best vector.

How it fits the rest without a second code path: ``PassageEmbedder.embed`` returns one
*wide* row per message — its whole-text vector followed by ``MAX_PASSAGES`` passage
vectors (zeros where the message has fewer) — so every writer of message vectors (the
vector lane, leftovers on open, the rebuild) stays one row per message, and
``PassageIndex.add`` splits each row into index rows keyed ``pk + j * STRIDE``
(``j = 0`` the whole text). A search asks the inner index for more neighbours than it
returns and keeps each message's best similarity. Only short messages cost what they
cost before; a long one costs ``1 + passages`` embeddings and index rows.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from nams_local.embeddings import WrappedEmbedder

from .embedding_batcher import EmbeddingBatcher
from .embedding_stats import MESSAGES, PASSAGES
from .vectors import IndexWrapper, Vectors

__all__ = [
    "MAX_PASSAGES",
    "MIN_SENTENCES",
    "STRIDE",
    "PassageEmbedder",
    "PassageIndex",
    "passages",
]

#: A message of at least this many sentences gets passage vectors.
MIN_SENTENCES = 5
#: At most this many passage vectors per message (sentences are grouped beyond it).
MAX_PASSAGES = 6
#: Index rows of one message: ``pk`` (whole text), ``pk + STRIDE``, ``pk + 2 * STRIDE``…
STRIDE = 1 << 40
#: A passage shorter than this many characters is merged into its neighbour.
MIN_PASSAGE_CHARS = 24

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")


def passages(text: str) -> list[str]:
    """The passages of ``text`` to index besides the whole (``[]`` for a short text)."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and len(sentences[-1]) < MIN_PASSAGE_CHARS:
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    if len(sentences) < MIN_SENTENCES:
        return []
    if len(sentences) <= MAX_PASSAGES:
        return sentences
    n = len(sentences)  # MAX_PASSAGES windows of consecutive sentences, sizes within 1
    cuts = [i * n // MAX_PASSAGES for i in range(MAX_PASSAGES + 1)]
    return [" ".join(sentences[a:b]) for a, b in itertools.pairwise(cuts)]


class PassageEmbedder(WrappedEmbedder):
    """The message embedder: one wide row per text (see the module docstring).

    Everything but ``embed`` is the wrapped embedder's; queries stay one plain vector.
    """

    def embed(self, texts: Sequence[str]) -> Vectors:
        texts = list(texts)
        dim = self.inner.dimension
        parts = [passages(t) for t in texts]
        flat = [*texts, *(p for ps in parts for p in ps)]
        if isinstance(self.inner, EmbeddingBatcher):
            callers = [MESSAGES] * len(texts) + [PASSAGES] * (len(flat) - len(texts))
            embedded = self.inner.embed(flat, callers)
        else:
            embedded = self.inner.embed(flat)
        wide = np.zeros((len(texts), (1 + MAX_PASSAGES) * dim), dtype=np.float32)
        wide[:, :dim] = embedded[: len(texts)]
        at = len(texts)
        for row, ps in enumerate(parts):
            for j in range(len(ps)):
                wide[row, (1 + j) * dim : (2 + j) * dim] = embedded[at]
                at += 1
        return wide


class PassageIndex(IndexWrapper):
    """A ``VectorIndex`` of messages whose rows may carry passage vectors."""

    def add(
        self,
        conn: Connection,
        rows: Sequence[tuple[int, str, str]],
        vectors: NDArray[np.float32],
    ) -> None:
        """Plain ``(n, dimension)`` rows index the whole text only; wide rows (from
        ``PassageEmbedder``) also index each non-zero passage vector. A message's text never
        changes, so its passages are written once (``delete`` removes them)."""
        if not rows:
            return
        dim = self.dimension
        if vectors.shape[1] == dim:
            self.inner.add(conn, rows, vectors)
            return
        keys: list[tuple[int, str, str]] = []
        picked: list[NDArray[np.float32]] = []
        for (pk, part, sub), wide in zip(rows, vectors, strict=True):
            for j in range(1 + MAX_PASSAGES):
                vector = wide[j * dim : (j + 1) * dim]
                if j == 0 or vector.any():
                    keys.append((pk + j * STRIDE, part, sub))
                    picked.append(vector)
        self.inner.add(conn, keys, np.stack(picked))

    def delete(self, conn: Connection, pks: Sequence[int]) -> None:
        self.inner.delete(conn, [pk + j * STRIDE for pk in pks for j in range(1 + MAX_PASSAGES)])

    def search(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` messages with the most similar whole text or passage."""
        best: dict[int, float] = {}
        for rowid, similarity in self.inner.search(conn, vector, 2 * k, part, sub):
            pk = rowid % STRIDE
            if similarity > best.get(pk, -2.0):
                best[pk] = similarity
        ranked = sorted(
            best.items(), key=lambda item: -item[1]
        )  # stable: ties keep the index's order
        return ranked[:k]

    def rows(self, conn: Connection, part: str) -> list[tuple[int, str, bytes]]:
        """The whole-text vectors of one partition (passage rows left out)."""
        return [row for row in self.inner.rows(conn, part) if row[0] < STRIDE]
