"""The vectors of texts this store embedded lately, so the same text is not embedded twice.

Why: on two busy cores a 45-token message costs the model ~13 ms of CPU and that price
hardly falls with batch size, so the only large saving left is not running the model at
all. The same text comes back more often than one would think: an entity called
"Melbourne", "React" or "Dev" is new in each workspace that mentions it (and embedded
once per workspace), a user says "thanks" or repeats a question, a client retries a
write, a message's passage is also another message. A vector depends only on the text
and the model, so the batcher (``embedding_batcher``) answers such texts from here and
runs the model on the rest.

Keys are BLAKE2b digests of the text (a long text is never kept as a key); at most
``MAX_ENTRIES`` vectors are held (about 6 MB at 384 dimensions), least recently used
dropped first; ``NAMS_EMBED_CACHE_ENTRIES`` sets another bound (``0``: off, which is how
a benchmark measures what the cache saves). Search queries have their own cache in the embedder
(``BaseEmbedder.query_future``) and do not pass through here.

Shared by every workspace of the store, like the embedder's query cache: a vector says
nothing about who embedded its text first, and nothing here is readable by a request.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from nams_local.embeddings import Matrix, Vector

__all__ = ["ENTRIES_ENV", "MAX_ENTRIES", "TextVectors"]

#: Vectors held at most.
MAX_ENTRIES = 4096
#: The environment variable that sets another bound (``0`` turns the cache off).
ENTRIES_ENV = "NAMS_EMBED_CACHE_ENTRIES"


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TextVectors:
    """A bounded, thread-safe LRU of ``text -> vector`` (read-only arrays)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._vectors: OrderedDict[bytes, Vector] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls) -> TextVectors:
        raw = os.environ.get(ENTRIES_ENV, "").strip()
        if not raw:
            return cls()
        try:
            entries = int(raw)
        except ValueError:
            entries = -1
        if entries < 0:
            raise ValueError(f"{ENTRIES_ENV} must be a whole number >= 0, got {raw!r}")
        return cls(entries)

    def __len__(self) -> int:
        return len(self._vectors)

    def known(self, texts: Sequence[str]) -> list[Vector | None]:
        """Each text's vector, or ``None`` where it is not held."""
        if self.max_entries == 0:
            return [None] * len(texts)
        keys = [_key(text) for text in texts]
        out: list[Vector | None] = []
        with self._lock:
            for key in keys:
                vector = self._vectors.get(key)
                if vector is not None:
                    self._vectors.move_to_end(key)
                out.append(vector)
        return out

    def keep(self, texts: Sequence[str], vectors: Matrix) -> None:
        """Hold each text's vector (row ``i`` of ``vectors`` is ``texts[i]``'s)."""
        if self.max_entries == 0 or not texts:
            return
        rows = np.array(vectors, dtype=np.float32, copy=True)  # not a view of the caller's
        rows.setflags(write=False)
        keys = [_key(text) for text in texts]
        with self._lock:
            for key, row in zip(keys, rows, strict=True):
                self._vectors[key] = row
                self._vectors.move_to_end(key)
            while len(self._vectors) > self.max_entries:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
