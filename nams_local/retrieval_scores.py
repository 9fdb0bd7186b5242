"""When retrieval answers "nothing relevant": the relevance gate, its lexical support, and
the relevance floor.

Why more than one number: a bi-encoder plus BM25 cannot tell an answer from an on-topic
non-answer hit by hit ("When is my birthday?" scores "It is Dev's birthday on Monday" as
high as most real answers score their question), so any single per-hit floor high enough
to leave unanswerable questions without a block also drops a third to a half of the real
evidence. Deciding *per question* works better: a block opens only when one hit looks
like an answer, and an open block keeps every hit above the much lower **floor** — so the
paraphrased second piece of evidence, which scores like noise on its own, still comes
along with the first.

"Looks like an answer" is two tests, because one score threshold cannot separate them
(the unanswerable questions' best hits score as high as the answerable ones'):

- **the gate**: a hit scoring at least ``gate`` opens the block on its score alone. With
  the vector weight at 0.8, a hit that shares no word with the question needs a cosine
  of about 0.5 to reach 0.675; unrelated chat sits at 0.2-0.45 against MiniLM questions.
- **lexical support**: a hit scoring at least the lower ``lexical_gate`` opens it when it
  shares a *content word* of the question (``retrieval_terms.content_terms``: no stop or
  question word) that is *rare among the hits this question found* — in at most
  ``RARE_AMONG_HITS`` of them. The hits a question finds are its own background: a word
  most of them share ("project", "company" in every client's description) is the topic
  the store is full of, not the detail the question asks for ("allergic", "February").

Measured on data generated for the purpose (the ``quality`` benchmark's two generators at
the calibration seed 101, not the seed 7 it reports; docs/retrieval.md has the sweep).

Applies only to backends whose scores compare across queries
(``Capabilities.relevance_scores``: the local engine with embeddings); other backends
keep every hit, as the provider keeps them. Unscored hits (reasoning steps) never count
towards the gate and are never dropped by it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .backend import MemoryBackend
from .retrieval_terms import content_terms

__all__ = [
    "DEFAULT_LEXICAL_GATE",
    "DEFAULT_RELEVANCE_FLOOR",
    "DEFAULT_RELEVANCE_GATE",
    "RARE_AMONG_HITS",
    "Relevance",
]

#: Hits scoring below this are "not relevant" even in an open block: a nonsense or
#: off-topic question scores about 0.1, a paraphrased answer sharing no word with the
#: question ("where do I live?" / "I moved to Bangalore in May.") about 0.38-0.46.
DEFAULT_RELEVANCE_FLOOR = 0.3
#: A block opens on one hit scoring at least this, whatever words it shares (chosen on the
#: calibration seed; docs/retrieval.md). 0 turns the gate off (only the floor applies).
DEFAULT_RELEVANCE_GATE = 0.675
#: ... or on one hit scoring at least this that shares a content word of the question rare
#: among the question's hits (lexical support). Not above ``gate``: at or above it, only
#: the gate decides.
DEFAULT_LEXICAL_GATE = 0.55
#: A question's content word is "rare" when at most this many of its hits contain it.
RARE_AMONG_HITS = 1


@dataclass(frozen=True, slots=True)
class Relevance:
    """The floor, gate and lexical gate in force for one retrieval (0 turns either off)."""

    floor: float = 0.0
    gate: float = 0.0
    lexical_gate: float = 0.0

    @classmethod
    def of(
        cls, backend: MemoryBackend, floor: float, gate: float, lexical_gate: float = 0.0
    ) -> Relevance:
        """``floor`` and the gates where the backend's scores compare across queries, else
        all off (hosted NAMS: its scores are per-search ranks, not relevance)."""
        calibrated = getattr(backend.capabilities, "relevance_scores", False) is True
        return cls(floor, gate, lexical_gate) if calibrated else cls()

    def keeps(self, score: float | None) -> bool:
        """Whether a hit scoring ``score`` clears the floor (unscored hits always do)."""
        return score is None or self.floor <= 0.0 or score >= self.floor

    def opens(self, query: str, hits: Iterable[tuple[float | None, str]]) -> bool:
        """Whether a block whose hits are ``(score, text)`` opens for ``query``: one scored
        hit reaches the gate, or reaches the lexical gate with lexical support (no scored
        hit at all: nothing to open)."""
        if self.gate <= 0.0:
            return True
        scored = [(score, text) for score, text in hits if score is not None]
        if any(score >= self.gate for score, _ in scored):
            return True
        low = self.lexical_gate
        wanted = content_terms(query) if 0.0 < low < self.gate else set()
        if not wanted:
            return False
        shared = [content_terms(text) & wanted for _, text in scored]
        seen = Counter(word for words in shared for word in words)
        rare = {word for word, n in seen.items() if n <= RARE_AMONG_HITS}
        return any(
            score >= low and words & rare for (score, _), words in zip(scored, shared, strict=True)
        )
