"""The retrieval-quality benchmark runs end to end on tiny sets (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks._quality_data import QUESTION_TYPES, generate_quality
from benchmarks._quality_household import HOUSEHOLD_TYPES, generate_household
from benchmarks._report import replace_section
from benchmarks.quality import load_locomo, main, recall
from nams_local.retrieval import (
    DEFAULT_LEXICAL_GATE,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RELEVANCE_GATE,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "locomo_tiny.json"
CROSS_ENCODER = FIXTURE.parent / "tiny_cross_encoder"
TINY = [
    "--users", "4",
    "--sessions", "3",
    "--turns", "8",
    "--facts", "4",
    "--distractor-entities", "5",
    "--embedder", "hashing",
    "--weights", "0.7",
    "--household-users", "2",
    "--quiet",
]  # fmt: skip


def run(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    out, readme = tmp_path / "results", tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\nhand-written intro stays\n")
    assert main([*TINY, *extra, "--results", str(out), "--readme", str(readme)]) == 0
    assert (out / "quality.png").read_bytes().startswith(b"\x89PNG")
    return json.loads((out / "quality.json").read_text()), readme.read_text()


def test_the_synthetic_set_is_deterministic_and_consistent() -> None:
    one = generate_quality(users=3, sessions=3, turns_per_session=8, facts_per_user=5, seed=3)
    two = generate_quality(users=3, sessions=3, turns_per_session=8, facts_per_user=5, seed=3)
    other = generate_quality(users=3, sessions=3, turns_per_session=8, facts_per_user=5, seed=4)
    assert one == two and one != other
    assert {q.type for q in one.questions} == set(QUESTION_TYPES)
    for user in one.users:
        keys = {m.key: m for m in user.messages}
        entities = {e.key for e in user.entities}
        for q in (q for q in one.questions if q.user_id == user.user_id):
            assert q.entity in entities
            evidence = [keys[k] for k in q.evidence]  # every evidence key names a message
            assert all(m.role == "user" for m in evidence)
            if q.type == "restated":
                assert len(evidence) == 2 and evidence[0].session < evidence[1].session
            else:
                assert len(evidence) == 1


def test_the_household_set_is_deterministic_with_multi_hop_and_temporal_questions() -> None:
    one = generate_household(users=4, sessions=6, turns_per_session=16, seed=3)
    assert one == generate_household(users=4, sessions=6, turns_per_session=16, seed=3)
    assert one != generate_household(users=4, sessions=6, turns_per_session=16, seed=4)
    assert {q.type for q in one.questions} <= set(HOUSEHOLD_TYPES)
    texts = {m.key: m.content for u in one.users for m in u.messages}
    for q in one.questions:
        assert len(q.evidence) == (2 if q.type == "multi-hop" else 1)
        if q.type == "temporal":  # the asked month is named in the evidence
            month = q.question.rsplit(" ", 1)[-1].rstrip("?")
            assert month in texts[q.evidence[0]]
    asked = {(q.user_id, q.fact) for q in one.questions}
    assert one.negatives and all((n.user_id, n.fact) not in asked for n in one.negatives)
    assert all(not n.evidence for n in one.negatives)


def test_quality_benchmark_scores_every_mode_and_target(tmp_path: Path) -> None:
    results, readme = run(tmp_path, "--reranker", str(CROSS_ENCODER))
    assert results["reranker"] == "onnx:tiny_cross_encoder"
    for corpus in results["corpora"]:  # the block with the reranker, beside the sweep
        assert 0 <= corpus["floor_sweep"]["reranker 0.5"]["precision_unanswerable"] <= 1
    synthetic, household = results["corpora"]
    assert household["corpus"] == "household" and household["questions"] == 2 * 5
    assert set(household["recall"]) == {"messages", "memory block"}
    for row in [*synthetic["floor_sweep"].values(), *household["floor_sweep"].values()]:
        assert 0 <= row["precision_unanswerable"] <= 1  # unanswerable questions were asked
    sweep = synthetic["floor_sweep"]
    off = sweep["floor 0 gate 0"]  # no floor, no gate: something always comes back
    assert off["precision_unanswerable"] == 0
    floor, gate, lexical = DEFAULT_RELEVANCE_FLOOR, DEFAULT_RELEVANCE_GATE, DEFAULT_LEXICAL_GATE
    default = sweep[f"floor {floor:g} gate {gate:g} lexical {lexical:g}"]
    assert (
        synthetic["verdict"]["precision_unanswerable_at_default_floor"]
        == (default["precision_unanswerable"])
    )
    assert synthetic["questions"] == 16 and synthetic["messages"] == 4 * 3 * 8
    table = synthetic["recall"]
    assert set(table) == {"messages", "entities", "memory block"}
    for rows in table.values():
        assert set(rows) == {"text", "vector", "default", "hybrid w=0.7"}
        for row in rows.values():
            at = row["overall"]
            assert 0 <= at["@1"] <= at["@5"] <= at["@10"] <= 1  # recall grows with k
            assert set(row["by_type"]) == set(QUESTION_TYPES)
    # something is found: the set has signal, and the default finds most of it
    assert table["messages"]["default"]["overall"]["@10"] > 0.5
    assert table["entities"]["default"]["overall"]["@10"] > 0.5
    verdict = synthetic["verdict"]
    assert verdict["message_recall_at_10_default"] == table["messages"]["default"]["overall"]["@10"]
    assert readme.startswith("# Benchmarks\n\nhand-written intro stays\n")
    assert "<!-- bench:quality -->" in readme and "evidence recall@k" in readme
    assert "![quality](results/quality.png)" in readme
    # the command as run, without the output options (they change no figure)
    assert "Command: `python -m benchmarks quality --users 4 --sessions 3" in readme
    assert "--results" not in readme and "--quiet" not in readme


def test_locomo_files_load_and_score(tmp_path: Path) -> None:
    corpus = load_locomo(FIXTURE)
    assert [len(u.messages) for u in corpus.users] == [10, 7]
    # the category-5 question has no evidence; "D9:9" is not in the file; "D1:2; D2:2" is two
    assert corpus.notes["questions_skipped_without_evidence"] == 1
    assert len(corpus.questions) == 7
    by_question = {q.question: q for q in corpus.questions}
    assert by_question["What kind of business did Gina start?"].evidence == (
        "locomo-tiny-2:D1:2",
        "locomo-tiny-2:D2:2",
    )
    assert by_question["Where is Jon's studio?"].evidence == ("locomo-tiny-2:D2:1",)
    photo = corpus.users[0].messages[5].content
    assert "park run" in photo  # image captions are part of the turn

    results, _ = run(tmp_path, "--no-synthetic", "--locomo", str(FIXTURE))
    (locomo,) = results["corpora"]
    assert locomo["questions"] == 7
    assert set(locomo["recall"]) == {"messages", "memory block"}  # no entities in LoCoMo
    assert set(locomo["questions_by_type"]) == {"1 multi-hop", "2 temporal", "4 single-hop"}
    # 17 messages and k = 10: most evidence is in the top 10 of any sensible ranking
    assert locomo["recall"]["messages"]["default"]["overall"]["@10"] >= 0.5


def test_recall_counts_evidence_in_the_top_k() -> None:
    assert recall(["a", "b"], ["x", "a", "y", "b"], 1) == 0.0
    assert recall(["a", "b"], ["x", "a", "y", "b"], 2) == 0.5
    assert recall(["a", "b"], ["x", "a", "y", "b"], 10) == 1.0


def test_readme_sections_are_replaced_in_place(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("intro\n\n<!-- bench:a -->\nold\n<!-- /bench:a -->\n\noutro\n")
    replace_section(readme, "a", "new")
    replace_section(readme, "b", "first b")
    replace_section(readme, "b", "second b")
    text = readme.read_text()
    assert text.startswith("intro\n\n<!-- bench:a -->\nnew\n<!-- /bench:a -->\n\noutro\n")
    assert "old" not in text and "first b" not in text
    assert text.count("<!-- bench:b -->") == 1 and "second b" in text
