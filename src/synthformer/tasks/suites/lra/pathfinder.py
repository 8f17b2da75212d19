"""Pathfinder (Linsley et al. 2018; Long Range Arena's Pathfinder-32 and Path-X): are two dots joined by a path?

Written here from the task's description (no code of Linsley's generator or of LRA is used): an image holds
``n_paths`` dashed curves on a black background; two of the curve ends carry a marker (a small bright square).
Label 1 ("connected"): both markers sit on the two ends of the same curve; label 0: they sit on ends of two
different curves. Every image has the same number of curves drawn from the same distribution and exactly two
markers, so the amount of ink says nothing about the label: only following a curve does.

How a curve is drawn (:func:`draw_image`): a start pixel and a heading are drawn at random; each step moves one
pixel length along the heading, which turns by at most ``max_turn`` radians per step (a smooth contour, as
Linsley's "paddles" make). Steps alternate ``dash`` drawn steps and ``gap`` blank ones, so the curve is dashed and
a model cannot find the connection by a local blob of ink. Every pixel of a curve (its end squares included) keeps
a Chebyshev distance of at least ``gap + 2`` from every pixel of every other curve, so curves never touch or cross.
Consequently a flood fill that may jump over ``gap`` blank pixels (steps of Chebyshev distance ``gap + 1``)
follows a curve through its gaps but never reaches another curve: the label is exactly what such a flood fill
from one marker finds (the tests check it on every generated image).

Pixels are intensities 0-255: the background 0, each curve one intensity drawn from ``[160, 255]``, markers 255.
An image is flattened row by row into ``size * size`` bytes (1024 for Pathfinder-32, 16384 for Path-X at
128 x 128), one token per pixel, as LRA feeds pixels to its models.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

__all__ = ["PATHFINDER_SPECS", "PathfinderImage", "PathfinderSpec", "draw_image", "generate_pathfinder"]


@dataclass(frozen=True)
class PathfinderSpec:
    """The drawing parameters of one image size.

    Attributes:
        size: image side in pixels (the sequence length is ``size * size``).
        n_paths: curves per image, the one or two marked ones included.
        min_steps, max_steps: curve length in steps (one pixel length each).
        dash, gap: drawn and blank steps of the dash pattern.
        max_turn: largest change of heading per step, radians.
    """

    size: int
    n_paths: int
    min_steps: int
    max_steps: int
    dash: int
    gap: int
    max_turn: float

    @property
    def reach(self) -> int:
        """Chebyshev distance between consecutive drawn pixels of a curve across a gap, at most."""
        return self.gap + 1

    @property
    def margin(self) -> int:
        """Smallest Chebyshev distance between pixels of two different curves (larger than :attr:`reach`)."""
        return self.gap + 2


#: LRA's two sizes: Pathfinder-32 (1024 tokens) and Path-X (128 x 128, 16384 tokens). Curve lengths are about
#: half the image side at 32 and scale with it, as Linsley's "hard" contours (14 paddles) do at LRA's sizes.
PATHFINDER_SPECS: dict[int, PathfinderSpec] = {
    32: PathfinderSpec(size=32, n_paths=4, min_steps=14, max_steps=22, dash=3, gap=1, max_turn=0.35),
    128: PathfinderSpec(size=128, n_paths=8, min_steps=56, max_steps=88, dash=5, gap=2, max_turn=0.25),
}

_MARKER_RADIUS = 1  # a marker is the 3 x 3 square around a curve end
_TURN_TRIES = 12  # headings tried before a blocked curve is abandoned
_CURVE_TRIES = 25  # curves started per curve wanted before an image is started over


@dataclass(frozen=True)
class PathfinderImage:
    """One generated image.

    Attributes:
        pixels: (size, size) uint8 intensities.
        markers: the two marker centres, ``(row, col)`` each.
        connected: True when the markers are the ends of one curve (label 1).
    """

    pixels: np.ndarray
    markers: tuple[tuple[int, int], tuple[int, int]]
    connected: bool

    def tokens(self) -> bytes:
        """The image flattened row by row, one byte (0-255) per pixel."""
        return self.pixels.tobytes()


class _Canvas:
    """Which pixels a new curve may use: inside the border and at least ``margin`` away from earlier curves."""

    def __init__(self, spec: PathfinderSpec) -> None:
        self.spec = spec
        self.blocked = np.zeros((spec.size, spec.size), dtype=bool)

    def free(self, pixel: tuple[int, int]) -> bool:
        r, c = pixel
        lo, hi = _MARKER_RADIUS, self.spec.size - 1 - _MARKER_RADIUS  # room for a marker square at any end
        return lo <= r <= hi and lo <= c <= hi and not self.blocked[r, c]

    def reserve(self, pixels: list[tuple[int, int]]) -> None:
        """Block every pixel closer than ``margin`` (Chebyshev) to ``pixels``."""
        m = self.spec.margin - 1
        for r, c in pixels:
            self.blocked[max(r - m, 0):r + m + 1, max(c - m, 0):c + m + 1] = True


def _square(pixel: tuple[int, int]) -> list[tuple[int, int]]:
    r, c = pixel
    k = _MARKER_RADIUS
    return [(r + dr, c + dc) for dr in range(-k, k + 1) for dc in range(-k, k + 1)]


def _curve(rng: random.Random, canvas: _Canvas) -> list[tuple[int, int]] | None:
    """The drawn pixels of one curve, in order (first and last are its ends), or None when it got stuck."""
    spec = canvas.spec
    period = spec.dash + spec.gap
    steps = rng.randint(spec.min_steps, spec.max_steps)
    while (steps - 1) % period >= spec.dash:  # end on a drawn step, so both ends carry ink
        steps -= 1
    y, x = rng.uniform(0, spec.size - 1), rng.uniform(0, spec.size - 1)
    heading = rng.uniform(0, 2 * math.pi)
    start = (round(y), round(x))
    if not all(canvas.free(p) for p in _square(start)):
        return None
    drawn = [start]
    for step in range(1, steps):
        for _ in range(_TURN_TRIES):
            turn = heading + rng.uniform(-spec.max_turn, spec.max_turn)
            ny, nx = y + math.sin(turn), x + math.cos(turn)
            pixel = (round(ny), round(nx))
            # every visited position stays free, blank steps too: a gap never jumps over another curve's margin
            if canvas.free(pixel) and (step < steps - 1 or all(canvas.free(p) for p in _square(pixel))):
                break
        else:
            return None
        heading, y, x = turn, ny, nx
        if step % period < spec.dash and pixel != drawn[-1]:
            drawn.append(pixel)
    return drawn


def draw_image(rng: random.Random, spec: PathfinderSpec, connected: bool, attempts: int = 100) -> PathfinderImage:
    """One image with ``spec``'s parameters whose markers are (``connected``) or are not joined by a curve.

    Args:
        attempts: images started over (when the curves drawn so far leave no room for the next) before giving up.

    Raises:
        RuntimeError: the curves did not fit in ``attempts`` images (a spec with too many or too long curves).
    """
    for _ in range(attempts):
        canvas = _Canvas(spec)
        curves: list[list[tuple[int, int]]] = []
        tries = 0
        while len(curves) < spec.n_paths and tries < _CURVE_TRIES * spec.n_paths:
            tries += 1
            curve = _curve(rng, canvas)
            if curve is None or len(curve) < 2:
                continue
            curves.append(curve)
            canvas.reserve(curve + _square(curve[0]) + _square(curve[-1]))
        if len(curves) == spec.n_paths:
            break
    else:
        raise RuntimeError(f"could not place {spec.n_paths} curves of {spec.min_steps}-{spec.max_steps} steps in "
                           f"a {spec.size} x {spec.size} image; use fewer or shorter curves")
    pixels = np.zeros((spec.size, spec.size), dtype=np.uint8)
    for curve in curves:
        level = rng.randint(160, 255)
        for r, c in curve:
            pixels[r, c] = level
    # curve 0 carries the first marker; the second goes on its other end (connected) or on an end of curve 1
    first = curves[0][rng.choice((0, -1))]
    if connected:
        second = curves[0][-1] if first == curves[0][0] else curves[0][0]
    else:
        second = curves[1][rng.choice((0, -1))]
    for centre in (first, second):
        for r, c in _square(centre):
            pixels[r, c] = 255
    return PathfinderImage(pixels, (first, second), connected)


def generate_pathfinder(num_examples: int, size: int = 32, seed: int = 0) -> list[tuple[bytes, str]]:
    """``num_examples`` images of side ``size`` (a key of :data:`PATHFINDER_SPECS`), half of them connected (in a
    seeded random order), as ``(pixels as bytes, label "0" | "1")`` records, reproducibly for ``seed``.

    Raises:
        ValueError: a negative count or a size without a spec.
    """
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    if size not in PATHFINDER_SPECS:
        raise ValueError(f"pathfinder size must be one of {sorted(PATHFINDER_SPECS)}, got {size!r}")
    rng = random.Random(seed)
    labels = [i % 2 == 0 for i in range(num_examples)]
    rng.shuffle(labels)
    spec = PATHFINDER_SPECS[size]
    return [(draw_image(rng, spec, connected).tokens(), str(int(connected))) for connected in labels]
