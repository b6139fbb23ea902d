"""The scale plots are real PNG files."""

from __future__ import annotations

from pathlib import Path

from broker.bench.scale_plot import write_plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_a_plot_is_written_as_a_png_with_one_line_per_series(tmp_path: Path) -> None:
    path = write_plot(
        tmp_path / "plots" / "rss-vs-partitions.png",
        "RSS vs partitions",
        "partitions",
        "MiB",
        [1, 10, 100],
        {"broker 1": [100.0, 110.0, 150.0], "broker 2": [98.0, 111.0, 160.0]},
    )
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 1000
    assert int.from_bytes(data[16:20], "big") == 640 and int.from_bytes(data[20:24], "big") == 400, "IHDR width, height"
