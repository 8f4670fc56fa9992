"""The performance page's charts, drawn from a benchmark's JSON line (the last line `benchmarks.cores` or
`benchmarks.relevance` prints, kept under docs/data/) as plain SVG: no plotting library, the same numbers the
tables give.

    python -m benchmarks.plots docs/data/cores-h200-2026-11-26.json --out docs/plots --leave-out coordinators_3

Writes `<name>-writes.svg` (writes/s by commit threads and with the embedder off / on the CPU / on the GPU,
beside the storage limit and the SQLite-WAL peer) and `<name>-embedding.svg` (texts/s through the coordinator by
pool, beside the bare model); for `relevance`, `<name>-hit1.svg`, `<name>-recall5.svg` and, with `--learn`,
`<name>-learn.svg`; for `soak`, `<name>-memory.svg` (the coordinator's memory by part over time); for `scale`,
`<name>-memory.svg` and `<name>-p99.svg` (RSS and search p99 against learnings stored), and `<name>-restart.svg`
where it crashed too (seconds to every learning findable, after a clean stop and a crash). Then it
prints one JSON line naming them. `tests/test_benchmarks.py` draws them again
and compares: a chart cannot drift from its data.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import click

_BAR_H, _GAP, _LABEL_W, _BAR_W, _VALUE_W = 22, 6, 230, 380, 90
_COLOURS = {"groove": "#2680c2", "peer": "#9aa5b1", "embedder": "#f0b429"}
_RANKERS = {"groove": ("groove", "groove"), "minilm": ("MiniLM alone", "peer"), "bm25": ("BM25 alone", "peer")}


def bars(title: str, rows: list[tuple[str, float, str]], unit: str, digits: int = 0) -> str:
    """A horizontal bar chart: (label, value, colour key) per row, scaled to the largest value, each value
    written with `digits` decimals."""
    top = max((value for _, value, _ in rows), default=1.0) or 1.0
    height = 30 + len(rows) * (_BAR_H + _GAP)
    width = _LABEL_W + _BAR_W + _VALUE_W
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" font-family="sans-serif" font-size="13">',
        f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>',
    ]
    for i, (label, value, colour) in enumerate(rows):
        y = 26 + i * (_BAR_H + _GAP)
        length = round(_BAR_W * value / top, 1)
        parts.append(f'<text x="{_LABEL_W - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>')
        parts.append(f'<rect x="{_LABEL_W}" y="{y}" width="{length}" height="{_BAR_H}" fill="{_COLOURS[colour]}"/>')
        parts.append(f'<text x="{_LABEL_W + length + 6}" y="{y + 15}">{value:,.{digits}f} {escape(unit)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def cores_charts(line: dict[str, Any], leave_out: frozenset[str] = frozenset()) -> dict[str, str]:
    """The charts of one `benchmarks.cores` JSON line, by file suffix; the peers named in `leave_out` (a figure
    known to be wrong) are not drawn."""
    checked = {True: ", front checks", False: ""}  # runs before these options have no `front_checks`, `writers`
    writes = [
        (
            f"{row['commit_threads']} commit thread(s)"
            + (f", {row['writers']} writer(s)" if "writers" in row else "")
            + checked[row.get("front_checks", False)],
            row["per_s"],
            "groove",
        )
        for row in line["curve"]
    ]
    writes += [(f"embedder on, {row['device']}", row["per_s"], "embedder") for row in line["embedder"]]
    writes += [(f"peer: {name}", rate, "peer") for name, rate in line["peers"].items() if name not in leave_out]
    embedding = [
        (f"pool {row['layout']} ({row['device']})", row["texts_per_s"], "embedder") for row in line["embedding"]
    ]
    embedding.append(("bare model, one process", line["bare_texts_per_s"], "peer"))
    where = f"{line['machine']['cpus']} cores, {line['agents']} agents x {line['in_flight']} in flight"
    return {
        "writes": bars(f"Writes/s ({where})", writes, "/s"),
        "embedding": bars("Texts embedded per second, through the coordinator", embedding, "/s"),
    }


def relevance_charts(line: dict[str, Any]) -> dict[str, str]:
    """The charts of one `benchmarks.relevance` JSON line: hit@1 and recall@5 by data set and ranker (LoCoMo's
    conversations pooled), and, with `--learn`, recall@5 of the questions kept out of the sessions, before and
    after them."""
    figures = {name: figures for name, figures in line["sets"].items() if name.startswith("coding")}
    figures |= line["pooled"]
    charts = {}
    for metric in ("hit@1", "recall@5"):
        rows = [
            (f"{name}: {label}", figures[name][who][metric], colour)
            for name in figures
            for who, (label, colour) in _RANKERS.items()
        ]
        charts[metric.replace("@", "")] = bars(f"{metric} by data set (higher is better)", rows, "", 3)
    if "learn" in line:
        rows = []
        for name, learned in sorted(_learned(line).items()):
            rows += [(f"{name}: before", learned["before"], "peer"), (f"{name}: after", learned["after"], "groove")]
        charts["learn"] = bars("recall@5 of the questions kept out, before and after the sessions", rows, "", 3)
    return charts


# memory parts, bottom up, as the soak samples them (stats.memory_mb), and their colours
_PARTS = {
    "interpreter": ("interpreter", "#9aa5b1"),
    "rocksdb": ("RocksDB (estimated)", "#2680c2"),
    "vectors": ("vectors", "#f0b429"),
    "keywords": ("keyword index", "#8719e0"),
    "caches": ("caches", "#3ebd93"),
    "heap_free": ("C heap, free", "#e8e8e8"),
    "unaccounted": ("unaccounted", "#ef4e4e"),
}
_CACHES = ("row_cache", "reply_cache", "votes", "query_vectors", "locations", "embedding_backlog")


def soak_charts(line: dict[str, Any]) -> dict[str, str]:
    """The coordinator's memory by part over a soak, stacked, with the whole process tree as a line."""
    samples = [s for s in line["samples"] if s.get("memory_mb")]
    width, height, left, top, plot_w, plot_h = 760, 330, 60, 30, 520, 250
    t_end = max(s["t_s"] for s in samples) or 1.0
    y_top = max(s.get("tree_mb", s["rss_mb"]) for s in samples) * 1.05

    def xy(t: float, mb: float) -> str:
        return f"{left + plot_w * t / t_end:.1f},{top + plot_h * (1 - mb / y_top):.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        'aria-label="coordinator memory by part over the soak" font-family="sans-serif" font-size="12">',
        '<text x="0" y="16" font-weight="bold">Memory by part over the soak (MB; line: the whole process tree)</text>',
    ]
    below = [0.0] * len(samples)
    for i, (key, (label, colour)) in enumerate(_PARTS.items()):
        names = _CACHES if key == "caches" else (key,)
        above = [
            b + max(0.0, sum(s["memory_mb"].get(n, 0.0) for n in names)) for b, s in zip(below, samples, strict=True)
        ]
        ring = [xy(s["t_s"], a) for s, a in zip(samples, above, strict=True)] + [
            xy(s["t_s"], b) for s, b in zip(reversed(samples), reversed(below), strict=True)
        ]
        parts.append(f'<polygon points="{" ".join(ring)}" fill="{colour}" stroke="none"/>')
        parts.append(f'<rect x="{left + plot_w + 20}" y="{top + 18 * i}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{left + plot_w + 38}" y="{top + 18 * i + 11}">{escape(label)}</text>')
        below = above
    tree = " ".join(xy(s["t_s"], s.get("tree_mb", s["rss_mb"])) for s in samples)
    parts.append(f'<polyline points="{tree}" fill="none" stroke="#102a43" stroke-width="2"/>')
    for mb in range(0, int(y_top) + 1, 250):
        y = top + plot_h * (1 - mb / y_top)
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{mb}</text>')
    for minute in range(0, int(t_end / 60) + 1, 10):
        x = left + plot_w * minute * 60 / t_end
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{minute} min</text>')
    parts.append("</svg>")
    return {"memory": "\n".join(parts) + "\n"}


def lines(title: str, series: list[tuple[str, str, list[tuple[float, float]]]], unit: str, digits: int = 0) -> str:
    """A line chart against learnings: (label, colour, points) per series, both axes from 0; each point's value
    labelled with `digits` decimals."""
    width, height, left, top, plot_w, plot_h = 760, 300, 70, 30, 500, 220
    x_top = max((x for _, _, points in series for x, _ in points), default=1.0) or 1.0
    y_top = max((y for _, _, points in series for _, y in points), default=1.0) * 1.1 or 1.0

    def xy(x: float, y: float) -> str:
        return f"{left + plot_w * x / x_top:.1f},{top + plot_h * (1 - y / y_top):.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" font-family="sans-serif" font-size="12">',
        f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#9aa5b1"/>',
    ]
    for i, (label, colour, points) in enumerate(series):
        parts.append(
            f'<polyline points="{" ".join(xy(x, y) for x, y in points)}" fill="none" stroke="{colour}" '
            'stroke-width="2"/>'
        )
        for x, y in points:
            x_px, y_px = xy(x, y).split(",")
            parts.append(f'<circle cx="{x_px}" cy="{y_px}" r="3" fill="{colour}"/>')
            parts.append(f'<text x="{x_px}" y="{float(y_px) - 7:.1f}" text-anchor="middle">{y:,.{digits}f}</text>')
        parts.append(f'<rect x="{left + plot_w + 20}" y="{top + 18 * i}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{left + plot_w + 38}" y="{top + 18 * i + 11}">{escape(label)}</text>')
    for x in sorted({x for _, _, points in series for x, _ in points}):
        parts.append(
            f'<text x="{left + plot_w * x / x_top:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{x:,.0f}</text>'
        )
    parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 34}" text-anchor="middle">learnings</text>')
    parts.append(f'<text x="{left - 8}" y="{top + 4}" text-anchor="end">{escape(unit)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def scale_charts(line: dict[str, Any]) -> dict[str, str]:
    """`benchmarks.scale`: the process tree's RSS against learnings (filling, and restarted once settled), and
    search p99 by words and by meaning; where the run also crashed, the seconds until every tier's newest learning
    was findable again, after a clean stop and after a crash."""
    marks = line["marks"]
    rss = [("while filling", _COLOURS["groove"], [(m["learnings"], m["rss_mb"]) for m in marks])]
    restarted = [(m["learnings"], m["restart"]["rss_mb_settled"]) for m in marks if "restart" in m]
    if restarted:
        rss.append(("restarted, settled", _COLOURS["embedder"], restarted))
    p99 = [
        ("by words", _COLOURS["groove"], [(m["learnings"], m["words_ms"]["p99_ms"]) for m in marks]),
        ("by meaning", _COLOURS["embedder"], [(m["learnings"], m["meaning_ms"]["p99_ms"]) for m in marks]),
    ]
    charts = {
        "memory": lines("Process tree RSS against learnings stored (MB)", rss, "MB"),
        "p99": lines("Search p99 against learnings stored (ms)", p99, "ms"),
    }
    starts = [
        (label, colour, [(m["learnings"], m[kind]["findable_s"]) for m in marks if m.get(kind, {}).get("findable_s")])
        for kind, label, colour in (
            ("restart", "after a clean stop", _COLOURS["groove"]),
            ("crash", "after a crash", _COLOURS["embedder"]),
        )
    ]
    if any(kind == "after a crash" and points for kind, _, points in starts):
        title = "Start to every learning findable against learnings stored (s)"
        charts["restart"] = lines(title, [s for s in starts if s[2]], "s", digits=1)
    return charts


def _learned(line: dict[str, Any]) -> dict[str, dict[str, float]]:
    """recall@5 before and after the sessions, LoCoMo's conversations pooled (each held question once)."""
    out: dict[str, dict[str, float]] = {}
    pooled: dict[str, float] = {"before": 0.0, "after": 0.0, "n": 0.0}
    for name, learned in line["learn"].items():
        if name.startswith("coding"):
            out[name] = {when: learned[when]["recall@5"] for when in ("before", "after")}
            continue
        held = line["sets"][name]["questions"] // 2
        for when in ("before", "after"):
            pooled[when] += learned[when]["recall@5"] * held
        pooled["n"] += held
    if pooled["n"]:
        out["locomo"] = {when: pooled[when] / pooled["n"] for when in ("before", "after")}
    return out


@click.command()
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("docs/plots"), show_default=True)
@click.option("--leave-out", multiple=True, help="A peer not to draw (a figure known to be wrong); repeatable.")
def main(data: Path, out: Path, leave_out: tuple[str, ...]) -> None:
    """Draw the charts of a benchmark's JSON line (DATA: a file holding it) into OUT."""
    try:
        line = json.loads(data.read_text().strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as exc:
        raise click.BadParameter(f"{data} holds no JSON line: {exc}", param_hint="DATA") from None
    kind = line.get("bench", line.get("benchmark"))
    drawers = {"cores": lambda: cores_charts(line, frozenset(leave_out)), "relevance": lambda: relevance_charts(line)}
    drawers["soak"] = lambda: soak_charts(line)
    drawers["scale"] = lambda: scale_charts(line)
    if kind not in drawers:
        raise click.BadParameter(
            f"{data} is a {kind!r} line; charts are drawn for `cores`, `relevance`, `soak` and `scale`",
            param_hint="DATA",
        )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    charts = drawers[kind]()
    for suffix, svg in charts.items():
        path = out / f"{data.stem}-{suffix}.svg"
        path.write_text(svg)
        written.append(str(path))
    click.echo(json.dumps({"bench": "plots", "data": str(data), "written": written}))


if __name__ == "__main__":
    main()
