"""The reranker hook: a local ONNX cross-encoder (a tiny one built for the tests, see
``tests/data/tiny_cross_encoder/build.py``) rescoring retrieval's hits, on the real engine
and through the hosted client; a failing reranker costs a warning, not the block."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local import NewMessage, ScriptedChatModel, create_nams, default_embedder
from nams_local.rerank import (
    CrossEncoderReranker,
    OnnxCrossEncoderReranker,
    Reranker,
    RerankerUnavailableError,
    rerank_scores,
    reranker_from_path,
)
from nams_local.retrieval import RetrievalOptions, retrieve_memories
from nams_local.scope import Scope
from nams_local.server.app import create_app
from tests.asgi import hosted_in_process
from tests.data.unrelated_chat import UNRELATED_CHAT
from tests.recording_logger import RecordingLogger

TINY = Path(__file__).parent.parent / "data" / "tiny_cross_encoder"
USER = Scope(user_id="alex")
SISTER = "My sister lives in Porto."
TRAMS = "The trams in Porto are great."
QUESTION = "Which city does my sister live in?"


def test_the_onnx_cross_encoder_scores_pairs_read_together() -> None:
    reranker = reranker_from_path(TINY)
    assert isinstance(reranker, OnnxCrossEncoderReranker) and isinstance(reranker, Reranker)
    texts = [SISTER, TRAMS, "My sister called: she lives in the city now."]
    scores = reranker.score(QUESTION, texts)
    assert scores[0] > 0.5 > scores[1]  # one word shared / none
    assert scores[2] > scores[0]  # sister, city: more shared, more relevant
    many = reranker.score(QUESTION, texts * 7)  # more than one batch, same answers
    assert many == pytest.approx(scores * 7)


async def test_scores_are_checked_and_run_off_the_event_loop() -> None:
    class Short:
        name = "short"

        def score(self, query: str, texts: Sequence[str]) -> list[float]:
            return [0.5]

    assert await rerank_scores(reranker_from_path(TINY), QUESTION, []) == []
    with pytest.raises(ValueError, match="1 scores for 2"):
        await rerank_scores(Short(), QUESTION, ["a", "b"])


def test_a_folder_without_the_model_files_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(RerankerUnavailableError, match=r"tokenizer\.json"):
        OnnxCrossEncoderReranker(tmp_path)


def test_the_sentence_transformers_cross_encoder_never_downloads(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    if importlib.util.find_spec("sentence_transformers") is None:
        with pytest.raises(RerankerUnavailableError, match="sentence-transformers"):
            reranker_from_path(missing)
    else:
        with pytest.raises(RerankerUnavailableError, match="nothing is downloaded"):
            CrossEncoderReranker(missing).score(QUESTION, [SISTER])


@pytest.fixture
async def engine() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embedder=default_embedder(), extraction="off") as backend:
        yield backend


async def _conversation(backend: SQLiteBackend | HostedBackend, engine: SQLiteBackend) -> str:
    conv = await backend.create_conversation("alex")
    lines = [*UNRELATED_CHAT[:30], TRAMS, SISTER]
    await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
    if engine.store.vector_lane is not None:
        await engine.store.vector_lane.drained()
    return conv.id


async def test_with_a_reranker_only_what_it_finds_relevant_is_shown(engine: SQLiteBackend) -> None:
    conv = await _conversation(engine, engine)
    unfiltered = RetrievalOptions(relevance_floor=0.0, relevance_gate=0.0)
    plain = [
        h.content for h in await retrieve_memories(engine, USER, conv, QUESTION, 5, unfiltered)
    ]
    assert TRAMS in plain  # the nearest, without floor or gate
    options = RetrievalOptions(reranker=reranker_from_path(TINY))
    hits = await retrieve_memories(engine, USER, conv, QUESTION, 5, options)
    assert [h.content for h in hits] == [SISTER]
    assert hits[0].relevance == pytest.approx(0.7310585786)  # the reranker's, not the search's
    nothing = await retrieve_memories(engine, USER, conv, "zzqxv-nothing-matches", 5, options)
    assert nothing == []


async def test_the_reranker_works_through_the_hosted_client_too(engine: SQLiteBackend) -> None:
    options = RetrievalOptions(reranker=reranker_from_path(TINY))
    async with hosted_in_process(create_app(engine), f"rerank-{uuid.uuid4().hex}") as client:
        conv = await _conversation(client, engine)
        hits = await retrieve_memories(client, USER, conv, QUESTION, 5, options)
    assert [h.content for h in hits] == [SISTER]


async def test_a_failing_reranker_costs_a_warning_not_the_block(engine: SQLiteBackend) -> None:
    class Broken:
        name = "broken"

        def score(self, query: str, texts: Sequence[str]) -> list[float]:
            raise RuntimeError("model file is corrupt")

    conv = await _conversation(engine, engine)
    plain = await retrieve_memories(engine, USER, conv, QUESTION, 5)
    logger = RecordingLogger()
    options = RetrievalOptions(reranker=Broken(), logger=logger)
    assert await retrieve_memories(engine, USER, conv, QUESTION, 5, options) == plain
    assert len(logger.warnings) == 1 and "broken" in logger.warnings[0]


async def test_create_nams_passes_the_reranker_to_the_memory_block(engine: SQLiteBackend) -> None:
    conv = await _conversation(engine, engine)
    scripted = ScriptedChatModel(["Porto."])
    nams = create_nams(engine, reranker=reranker_from_path(TINY))
    model = nams.wrap(scripted, {"user_id": "alex", "conversation_id": conv})
    await model.generate([{"role": "user", "content": QUESTION}])
    prompt = scripted.calls[0].last_user_text
    assert SISTER in prompt and TRAMS not in prompt
