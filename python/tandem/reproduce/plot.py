"""Small matplotlib helpers shared by the experiments: a headless figure, the paper's
points drawn in one recognisable style (black crosses/diamonds labelled "paper"), and
the fallback bar chart of paper vs Tandem values. Writes PNG files only."""

from __future__ import annotations

from pathlib import Path

PAPER_STYLE = dict(color="black", marker="D", linestyle="none", markersize=7, markerfacecolor="none",
                   markeredgewidth=1.5)


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    return pyplot


def subplots(n: int = 1, width: float = 5.0, height: float = 3.6):
    p = plt()
    fig, axes = p.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def paper_points(ax, xs, ys, label: str = "paper") -> None:
    ax.plot(xs, ys, label=label, **PAPER_STYLE)


def paper_hline(ax, y: float, label: str) -> None:
    ax.axhline(y, color="black", linestyle=":", linewidth=1.2, label=label)


def save(fig, path: Path, title: str | None = None) -> None:
    if title:
        fig.suptitle(title, fontsize=10)
    for ax in fig.axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt().close(fig)


def paper_vs_ours_bars(rows: list[dict], title: str, path: Path) -> None:
    """One pair of bars per paper value (normalised to the paper's value = 1)."""
    fig, (ax,) = subplots(1, max(5.0, 1.2 * len(rows) + 2), 3.6)
    labels = [r["key"] for r in rows]
    paper = [1.0 for _ in rows]
    ours = [(r["ours"] / r["paper"]) if r["ours"] is not None and r["paper"] else 0.0 for r in rows]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], paper, 0.4, label="paper", color="0.7", edgecolor="black")
    ax.bar([x + 0.2 for x in xs], ours, 0.4, label="Tandem", color="tab:blue")
    ax.set_xticks(list(xs), labels, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel("value / paper's value")
    save(fig, path, title)
