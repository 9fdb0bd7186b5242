"""The graph picture's layout: deterministic, inside the canvas, the centre in the middle."""

from __future__ import annotations

from nams_local.inspector.picture import layout
from nams_local.models import EntityGraph, GraphEdge, GraphNode


def _graph() -> EntityGraph:
    nodes = [
        GraphNode(id=f"n{i}", name=f"Node {i}", type="person" if i % 2 else "place")
        for i in range(7)
    ]
    edges = [
        GraphEdge(id="e1", source="n0", target="n1", type="KNOWS"),
        GraphEdge(id="e2", source="n1", target="n2", type="LIVES_IN", current=False),
        GraphEdge(id="e3", source="n0", target="n3", type="KNOWS"),
        GraphEdge(id="e4", source="n4", target="n5", type="WORKS_AT"),
    ]
    return EntityGraph(nodes=nodes, edges=edges)


def test_the_same_graph_always_gets_the_same_picture() -> None:
    assert layout(_graph()) == layout(_graph())
    assert layout(_graph(), centre="n0") == layout(_graph(), centre="n0")


def test_every_node_is_on_the_canvas_and_the_centre_in_the_middle() -> None:
    for centre in (None, "n0"):
        picture = layout(_graph(), centre=centre)
        assert len(picture.nodes) == 7 and len(picture.edges) == 4
        for node in picture.nodes:
            assert 0 < node.x < picture.size and 0 < node.y < picture.size, node
    radial = layout(_graph(), centre="n0")
    middle = next(n for n in radial.nodes if n.centre)
    assert (middle.id, middle.x, middle.y) == ("n0", radial.size / 2, radial.size / 2)
    assert [e.current for e in radial.edges] == [True, False, True, True]


def test_separate_components_do_not_pile_up() -> None:
    picture = layout(_graph())
    points = {(round(n.x), round(n.y)) for n in picture.nodes}
    assert len(points) == 7
    xs = [n.x for n in picture.nodes]
    assert max(xs) - min(xs) > picture.size / 3


def test_long_names_are_shortened_in_labels_not_in_titles() -> None:
    long = "x" * 60
    graph = EntityGraph(nodes=[GraphNode(id="a", name=long, type="t")], edges=[])
    node = layout(graph).nodes[0]
    assert len(node.label) == 24 and long in node.title
