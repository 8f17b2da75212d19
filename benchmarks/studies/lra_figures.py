"""The Pathfinder images of docs/lra.md: what the generator draws, as the model sees it (one gray level per pixel).

    python benchmarks/studies/lra_figures.py    # writes docs/figures/lra_pathfinder.png

Top row: four Pathfinder-32 images (1024 pixels), connected and not; bottom: two Path-X images (128 x 128, 16,384
pixels). Seeds are fixed, so the figure repeats exactly.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from synthformer.plotting import new_figure, save_png
from synthformer.tasks.suites.lra.pathfinder import PATHFINDER_SPECS, draw_image

OUT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "lra_pathfinder.png"
#: (size, seed, connected) of each panel, in reading order
PANELS = [(32, 1, True), (32, 2, False), (32, 3, True), (32, 4, False), (128, 5, True), (128, 6, False)]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    fig = new_figure((8.0, 4.6), layout="constrained")
    grid = fig.add_gridspec(2, 4)
    axes = [fig.add_subplot(grid[0, i]) for i in range(4)] + [fig.add_subplot(grid[1, 0:2]),
                                                               fig.add_subplot(grid[1, 2:4])]
    for ax, (size, seed, connected) in zip(axes, PANELS, strict=True):
        image = draw_image(random.Random(seed), PATHFINDER_SPECS[size], connected)
        ax.imshow(image.pixels, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        name = "Pathfinder-32" if size == 32 else "Path-X (128 x 128)"
        ax.set_title(f"{name}: {'connected (1)' if connected else 'not connected (0)'}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    return save_png(fig, args.out, dpi=90)


if __name__ == "__main__":
    print(main())
