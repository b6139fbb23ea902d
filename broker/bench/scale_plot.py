"""PNG plots of ``highwater bench scale``: one figure per measure, log x axis (the steps are decades).

matplotlib is imported here only (the ``bench`` and ``test`` extras), with the Agg backend so
plots are written without a display. Each figure is one measure (records/s, ack p99, RSS)
against one dimension (partitions or connections), one line per series (per broker for RSS).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot loads: plots are written without a display
from matplotlib import pyplot


def write_plot(
    path: Path, title: str, x_label: str, y_label: str, xs: Sequence[float], series: Mapping[str, Sequence[float]]
) -> Path:
    """Draw ``series`` (label → y per x) against ``xs`` on a log x axis and save it as a PNG at ``path``."""
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        for label, ys in series.items():
            axes.plot(xs, ys, marker="o", label=label)
        axes.set_xscale("log")
        axes.set_title(title)
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        axes.grid(True, which="both", alpha=0.3)
        if len(series) > 1:
            axes.legend()
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
    return path
