"""Pathfinder images: every label is what a flood fill on the image says, the curves are dashed and kept apart,
the counts, sizes and seeds behave."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest

from synthformer.tasks.suites.lra import PATHFINDER_SPECS, generate_pathfinder
from synthformer.tasks.suites.lra.pathfinder import PathfinderSpec, draw_image


def flood(pixels: np.ndarray, start: tuple[int, int], reach: int) -> set[tuple[int, int]]:
    """The lit pixels (> 0) reachable from ``start`` in steps of Chebyshev distance at most ``reach`` (the test's
    oracle: written from the definition, sharing nothing with the generator)."""
    size = pixels.shape[0]
    seen = {start}
    todo = deque([start])
    while todo:
        r, c = todo.popleft()
        for dr in range(-reach, reach + 1):
            for dc in range(-reach, reach + 1):
                nr, nc = r + dr, c + dc
                if 0 <= nr < size and 0 <= nc < size and pixels[nr, nc] > 0 and (nr, nc) not in seen:
                    seen.add((nr, nc))
                    todo.append((nr, nc))
    return seen


def components(pixels: np.ndarray, reach: int) -> int:
    """Number of groups of lit pixels under the same flood fill."""
    left = {tuple(p) for p in np.argwhere(pixels > 0)}
    count = 0
    while left:
        left -= flood(pixels, next(iter(left)), reach)
        count += 1
    return count


IMAGES = [(size, seed, connected) for size, seeds in ((32, range(24)), (128, range(2)))
          for seed in seeds for connected in (True, False)]


@pytest.mark.parametrize(("size", "seed", "connected"), IMAGES)
def test_label_is_what_a_flood_fill_finds(size: int, seed: int, connected: bool) -> None:
    spec = PATHFINDER_SPECS[size]
    image = draw_image(random.Random(seed), spec, connected)
    first, second = image.markers
    # a fill that jumps the dash gaps reaches the second marker exactly when the markers share a curve
    assert (second in flood(image.pixels, first, spec.reach)) is connected
    # every curve is its own group (the distractors never touch), and the dashes are real gaps: without jumps
    # (plain 8-neighbours) a curve falls apart into its dashes
    assert components(image.pixels, spec.reach) == spec.n_paths
    assert components(image.pixels, 1) > spec.n_paths
    # two 3 x 3 markers at full intensity on a black background
    for r, c in image.markers:
        assert (image.pixels[r - 1:r + 2, c - 1:c + 2] == 255).all()
    assert image.pixels.dtype == np.uint8 and (image.pixels == 0).mean() > 0.5


def test_generated_records_have_one_token_per_pixel_and_balanced_labels() -> None:
    records = generate_pathfinder(10, size=32, seed=1)
    assert [len(pixels) for pixels, _ in records] == [1024] * 10
    assert sorted(label for _, label in records) == ["0"] * 5 + ["1"] * 5
    assert len(generate_pathfinder(1, size=128, seed=0)[0][0]) == 128 * 128  # Path-X: 16K tokens


def test_generation_is_seeded() -> None:
    first = generate_pathfinder(6, size=32, seed=3)
    assert generate_pathfinder(6, size=32, seed=3) == first
    assert generate_pathfinder(6, size=32, seed=4) != first


def test_bad_requests_name_the_value() -> None:
    with pytest.raises(ValueError, match="64"):
        generate_pathfinder(2, size=64)
    with pytest.raises(ValueError, match="-1"):
        generate_pathfinder(-1)
    crowded = PathfinderSpec(size=32, n_paths=40, min_steps=30, max_steps=30, dash=3, gap=1, max_turn=0.3)
    with pytest.raises(RuntimeError, match="could not place 40 curves"):
        draw_image(random.Random(0), crowded, True, attempts=2)
