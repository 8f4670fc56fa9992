"""Charts drawn on the server as inline SVG: no script, no build step, nothing to load but the page.

Every text that reaches an SVG is escaped here; the templates mark the result safe. Each function takes plain
numbers and strings, so it is tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

# colours by task status: the board's graph and its legend
STATUS_COLOURS = {
    "pending": "#9aa5b1",
    "assigned": "#f0b429",
    "in_progress": "#2680c2",
    "blocked": "#cb6e17",
    "review": "#9446ed",
    "completed": "#3ebd93",
    "failed": "#e12d39",
    "cancelled": "#616e7c",
}


def sparkline(values: Sequence[float], width: int = 160, height: int = 32, label: str = "") -> Markup:
    """A small line of recent values (oldest left), scaled to its own range."""
    if len(values) < 2:
        return Markup(
            f'<svg class="spark" width="{width}" height="{height}" role="img" aria-label="{escape(label)}"></svg>'
        )
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = width / (len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v - low) / span * (height - 4):.1f}" for i, v in enumerate(values)
    )
    return Markup(
        f'<svg class="spark" width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f'<polyline fill="none" stroke="#2680c2" stroke-width="1.5" points="{points}"/></svg>'
    )


def beta_pdf(x: float, alpha: float, beta: float) -> float:
    """The Beta(alpha, beta) density at x in (0, 1)."""
    log_norm = math.lgamma(alpha + beta) - math.lgamma(alpha) - math.lgamma(beta)
    return math.exp(log_norm + (alpha - 1) * math.log(x) + (beta - 1) * math.log(1 - x))


def beta_density(alpha: float, beta: float, width: int = 240, height: int = 80, label: str = "") -> Markup:
    """A posterior Beta(alpha, beta) over [0, 1] as a filled curve, its mean marked."""
    xs = [(i + 0.5) / 120 for i in range(120)]
    ys = [beta_pdf(x, alpha, beta) for x in xs]
    top = max(ys) or 1.0
    points = " ".join(
        f"{x * width:.1f},{height - 14 - y / top * (height - 18):.1f}" for x, y in zip(xs, ys, strict=True)
    )
    mean = alpha / (alpha + beta)
    return Markup(
        f'<svg class="posterior" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(label)} Beta({alpha:.2f}, {beta:.2f})">'
        f'<polygon fill="#bcccdc" stroke="#2680c2" points="0,{height - 14} {points} {width},{height - 14}"/>'
        f'<line x1="{mean * width:.1f}" x2="{mean * width:.1f}" y1="0" y2="{height - 14}" stroke="#e12d39"/>'
        f'<text x="0" y="{height - 2}" font-size="10">0</text>'
        f'<text x="{width - 8}" y="{height - 2}" font-size="10">1</text>'
        f'<text x="{min(mean * width + 3, width - 60):.1f}" y="10" font-size="10">mean {mean:.2f}</text></svg>'
    )


def series(points: Sequence[tuple[float, float]], width: int = 320, height: int = 100, label: str = "") -> Markup:
    """Values over time as a line with dots, the y axis fixed to [0, 1] (confidence, a parameter's value)."""
    if not points:
        return Markup(f'<svg class="series" width="{width}" height="{height}" aria-label="{escape(label)}"></svg>')
    t0, t1 = points[0][0], points[-1][0]
    span = (t1 - t0) or 1.0
    xy = [(8 + (t - t0) / span * (width - 16), height - 6 - v * (height - 12)) for t, v in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"/>' for x, y in xy)
    return Markup(
        f'<svg class="series" width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f'<line x1="0" x2="{width}" y1="{height / 2}" y2="{height / 2}" stroke="#d9e2ec" stroke-dasharray="3"/>'
        f'<polyline fill="none" stroke="#2680c2" stroke-width="1.5" points="{line}"/>'
        f'<g fill="#2680c2">{dots}</g></svg>'
    )


@dataclass(frozen=True)
class Node:
    """A task (or learning) to draw: its id, label, status (a colour) and what it depends on."""

    id: str
    label: str
    status: str
    depends_on: tuple[str, ...] = ()
    href: str = ""


def layers(nodes: Sequence[Node]) -> dict[str, int]:
    """Each node's depth: 0 without drawn dependencies, else one more than its deepest one. Dependencies not
    among `nodes` are left out; a cycle (not possible on a board, which refuses them) is cut."""
    by_id = {n.id: n for n in nodes}
    depth: dict[str, int] = {}
    for start in nodes:
        stack: list[tuple[str, bool]] = [(start.id, False)]
        on_path: set[str] = set()
        while stack:
            nid, done = stack.pop()
            if done:
                on_path.discard(nid)
                deps = [d for d in by_id[nid].depends_on if d in by_id and d in depth]
                depth[nid] = 1 + max((depth[d] for d in deps), default=-1)
                continue
            if nid in depth or nid in on_path:
                continue
            on_path.add(nid)
            stack.append((nid, True))
            stack.extend((d, False) for d in by_id[nid].depends_on if d in by_id and d not in depth)
    return depth


def dag(nodes: Sequence[Node], box_w: int = 150, box_h: int = 28, gap_x: int = 40, gap_y: int = 10) -> Markup:
    """A task graph left to right by depth: boxes coloured by status, an arrow from each dependency."""
    depth = layers(nodes)
    columns: dict[int, list[Node]] = {}
    for node in nodes:
        columns.setdefault(depth[node.id], []).append(node)
    where: dict[str, tuple[float, float]] = {}
    for col, members in columns.items():
        for row, node in enumerate(members):
            where[node.id] = (col * (box_w + gap_x) + 4, row * (box_h + gap_y) + 4)
    width = (max(columns, default=0) + 1) * (box_w + gap_x)
    height = max((len(m) for m in columns.values()), default=0) * (box_h + gap_y) + 8
    edges, boxes = [], []
    for node in nodes:
        x, y = where[node.id]
        for dep in node.depends_on:
            if dep in where:
                dx, dy = where[dep]
                edges.append(
                    f'<line x1="{dx + box_w:.0f}" y1="{dy + box_h / 2:.0f}" x2="{x:.0f}" y2="{y + box_h / 2:.0f}" '
                    'stroke="#9aa5b1" marker-end="url(#arrow)"/>'
                )
        colour = STATUS_COLOURS.get(node.status, "#9aa5b1")
        text = escape(_cut(node.label, 22))
        box = (
            f'<g class="node" data-task="{escape(node.id)}" data-status="{escape(node.status)}">'
            f"<title>{escape(node.id)}: {escape(node.label)} ({escape(node.status)})</title>"
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{box_w}" height="{box_h}" rx="5" fill="{colour}"/>'
            f'<text x="{x + 6:.0f}" y="{y + box_h / 2 + 4:.0f}" font-size="11" fill="#fff">{text}</text></g>'
        )
        boxes.append(f'<a href="{escape(node.href)}">{box}</a>' if node.href else box)
    return Markup(
        f'<svg class="dag" width="{width}" height="{height}" role="img" aria-label="task graph">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#9aa5b1"/></marker></defs>'
        + "".join(edges)
        + "".join(boxes)
        + "</svg>"
    )


def star(centre: str, around: Sequence[tuple[str, str, str]], width: int = 700) -> Markup:
    """A learning and its relations: `around` is (label, relation type, href), placed on an ellipse around
    the learning (room for their labels beside it), each edge labelled with its type."""
    height = 110 if len(around) <= 2 else 320
    cx, cy = width / 2, height / 2 - 10
    parts = []
    for i, (label, kind, href) in enumerate(around):
        # one or two: beside it, left and right; more: round it, starting at the top
        angle = 2 * math.pi * i / max(1, len(around)) - (0 if len(around) <= 2 else math.pi / 2)
        x, y = cx + (cx - 230) * math.cos(angle), cy + (cy - 20) * math.sin(angle)
        anchor = "start" if math.cos(angle) >= -0.01 else "end"
        dx = 10 if anchor == "start" else -10
        parts.append(
            f'<line x1="{cx}" y1="{cy}" x2="{x:.0f}" y2="{y:.0f}" stroke="#9aa5b1"/>'
            f'<text x="{(cx + x) / 2:.0f}" y="{(cy + y) / 2 - 4:.0f}" font-size="10" fill="#616e7c" '
            f'text-anchor="middle">{escape(kind)}</text>'
            f'<a href="{escape(href)}"><circle cx="{x:.0f}" cy="{y:.0f}" r="7" fill="#2680c2"/>'
            f'<text x="{x + dx:.0f}" y="{y + 4:.0f}" font-size="11" text-anchor="{anchor}">'
            f"{escape(_cut(label, 34))}</text></a>"
        )
    return Markup(
        f'<svg class="relations" width="{width}" height="{height}" role="img" aria-label="relations">'
        + "".join(parts)
        + f'<circle cx="{cx}" cy="{cy}" r="10" fill="#e12d39"/><text x="{cx}" y="{cy + 26}" font-size="12" '
        f'text-anchor="middle" font-weight="600">{escape(_cut(centre, 40))}</text></svg>'
    )


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
