"""A minimal directed graph with attributes, kept in the order networkx would keep it.

The op graph (:mod:`dnnlens.analysis.graph`) is built and walked by every analysis, and
importing networkx costs more than all of that. :class:`Digraph` stores what the op graph
needs (nodes, edges, their attribute dicts, successors and predecessors in insertion
order); :meth:`Digraph.to_networkx` gives the same graph as a ``networkx.DiGraph`` for
exports and callers that want one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Digraph"]


class Digraph:
    """Directed graph: string nodes with attribute dicts, at most one edge per node pair."""

    def __init__(self, **attrs: Any) -> None:
        self.attrs: dict[str, Any] = dict(attrs)
        self._node: dict[str, dict[str, Any]] = {}
        self._succ: dict[str, dict[str, dict[str, Any]]] = {}
        self._pred: dict[str, dict[str, dict[str, Any]]] = {}
        self._edges: list[tuple[str, str]] = []

    def add_node(self, n: str, **attrs: Any) -> None:
        """Add node ``n`` (or update its attributes)."""
        if n not in self._node:
            self._node[n] = {}
            self._succ[n] = {}
            self._pred[n] = {}
        self._node[n].update(attrs)

    def add_edge(self, u: str, v: str, **attrs: Any) -> None:
        """Add the edge ``u -> v`` (adding missing nodes), or update its attributes."""
        for n in (u, v):
            if n not in self._node:
                self.add_node(n)
        data = self._succ[u].get(v)
        if data is None:
            data = {}
            self._succ[u][v] = data
            self._pred[v][u] = data
            self._edges.append((u, v))
        data.update(attrs)

    def has_edge(self, u: str, v: str) -> bool:
        """Whether the edge ``u -> v`` exists."""
        return v in self._succ.get(u, {})

    def node(self, n: str) -> dict[str, Any]:
        """The attribute dict of node ``n``."""
        return self._node[n]

    def edge(self, u: str, v: str) -> dict[str, Any]:
        """The attribute dict of the edge ``u -> v``."""
        return self._succ[u][v]

    def successors(self, n: str) -> Iterator[str]:
        """Nodes ``n`` has an edge to, in the order those edges were added."""
        return iter(self._succ[n])

    def predecessors(self, n: str) -> Iterator[str]:
        """Nodes with an edge to ``n``, in the order those edges were added."""
        return iter(self._pred[n])

    def edges(self) -> Iterator[tuple[str, str]]:
        """Every edge ``(u, v)`` in networkx's ``DiGraph.edges()`` order.

        That is by source node in the order nodes were added, then by target in the order
        that node's edges were added (not the order edges were added overall).
        """
        return ((u, v) for u, succ in self._succ.items() for v in succ)

    def to_networkx(self) -> nx.DiGraph:
        """The same graph as a ``networkx.DiGraph`` (same orders, copied attributes)."""
        import networkx as nx

        graph = nx.DiGraph(**self.attrs)
        graph.add_nodes_from((n, dict(a)) for n, a in self._node.items())
        graph.add_edges_from((u, v, dict(self._succ[u][v])) for u, v in self._edges)
        return graph
