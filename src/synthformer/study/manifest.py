"""What a study is (its variants and seeds) and its manifest ``study.json``, which makes a study resumable.

A study is a base run config, the attention kinds and grid points to vary (their product: the *variants*) and a
number of seeds. The manifest records all of it when the study starts; re-running the same command finds the
manifest equal and continues, while a different study aimed at the same directory is refused in one line naming
what differs (mixing the runs of two studies in one table would be silent nonsense).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.attention import paper_names
from synthformer.common import ConfigError, apply_overrides, atomic_write_text, to_dict
from synthformer.train import EXECUTION_SETTINGS, RunDir, RunError, config_differences

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_KINDS",
    "MANIFEST",
    "PAPER_NAMES",
    "StudySpec",
    "Variant",
    "check_manifest",
    "kind_label",
    "parse_grid",
]

#: The manifest's file name in the study directory.
MANIFEST = "study.json"

#: The eight variants of the paper's main tables.
DEFAULT_KINDS: tuple[str, ...] = ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V")

#: The paper's names of its synthesizers (mixtures keep their short form, as in the paper's tables).
PAPER_NAMES: dict[str, str] = paper_names()  # declared by each kind's class (``paper_name``)

_VERSION = 1


def kind_label(kind: str) -> str:
    """``Random (R)`` for the paper's single kinds; mixtures and other mixers as they are spelled (``R+V``)."""
    return f"{PAPER_NAMES[kind]} ({kind})" if kind in PAPER_NAMES else kind


def parse_grid(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["model.n_heads=2,4"]`` -> ``[("model.n_heads", ["2", "4"])]``.

    Raises:
        ConfigError: an item without ``=``, without values, a repeated value or a key given twice.
    """
    grid: list[tuple[str, list[str]]] = []
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        parts = [v.strip() for v in values.split(",")] if sep else []
        if not key or not parts or any(not v for v in parts):
            raise ConfigError(f"--grid: expected KEY=V1,V2,... (e.g. model.n_heads=2,4,8), got {item!r}")
        if len(set(parts)) != len(parts):
            raise ConfigError(f"--grid {key}: a value is repeated in {values!r}")
        if key in (k for k, _ in grid):
            raise ConfigError(f"--grid: key {key!r} given twice; give all its values in one --grid {key}=...")
        grid.append((key, parts))
    return grid


@dataclass(frozen=True)
class Variant:
    """One variant of a study: an attention kind (or the config's own) at one grid point."""

    kind: str | None
    """The attention kind set on every self-attention stack (``None``: the config's kinds)."""
    point: tuple[tuple[str, str], ...] = ()
    """The grid point: ``(key, value)`` overrides."""

    @property
    def name(self) -> str:
        """Short name for tables and files: ``R+V``, ``model.n_heads=4``, ``R model.n_heads=4``."""
        parts = ([self.kind] if self.kind else []) + [f"{k}={v}" for k, v in self.point]
        return " ".join(parts) or "base"

    @property
    def label(self) -> str:
        """The name with the paper's name of the kind: ``Random (R)``, ``Random (R), n_heads=4``."""
        parts = ([kind_label(self.kind)] if self.kind else []) + [f"{k.rsplit('.', 1)[-1]}={v}" for k, v in self.point]
        return ", ".join(parts) or "base"

    @property
    def dir_name(self) -> str:
        """The variant's folder in the study directory (``R+V``, ``R_model.n_heads=4``)."""
        return self.name.replace(" ", "_").replace("/", "-")


@dataclass
class StudySpec:
    """A study: the base config (as a dict), its overrides, the kinds and grid that make the variants, the seeds.

    Args:
        config: ``to_dict`` of the base run config (overrides applied, data paths absolute).
        kinds: attention kinds (empty: the config's own kinds, e.g. a grid-only study).
        grid: ``(key, values)`` pairs; variants are the product ``kinds x grid``.
        seeds: the ``train.seed`` of each run of a variant.
        overrides: the dotted overrides given on the command line (recorded, for the continue command).
    """

    config: dict[str, Any]
    kinds: list[str]
    grid: list[tuple[str, list[str]]]
    seeds: list[int]
    overrides: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigError("--seeds: expected at least 1 seed")
        if len(set(self.kinds)) != len(self.kinds):
            raise ConfigError(f"--kinds: duplicate kinds in {self.kinds}")
        kind_keys = [k for k, _ in self.grid if k.endswith("_kind")]
        if self.kinds and kind_keys:
            raise ConfigError(f"--grid {kind_keys[0]}: a kind key cannot be varied together with --kinds (which "
                              "sets every stack's kind); give the kinds in --kinds")

    @property
    def variants(self) -> list[Variant]:
        """The product ``kinds x grid points``, kinds outermost, in the order given."""
        points = list(itertools.product(*[[(key, v) for v in values] for key, values in self.grid]))
        kinds: list[str | None] = list(self.kinds) or [None]
        variants = [Variant(kind, tuple(point)) for kind in kinds for point in points]
        names = [v.dir_name for v in variants]
        if len(set(names)) != len(names):
            raise ConfigError(f"study: two variants share a folder name in {names}")
        return variants

    def variant_config(self, base: Any, variant: Variant) -> Any:
        """``base`` (a RunConfig) with the variant's grid point and kind applied."""
        from synthformer.tasks import with_kind

        run = apply_overrides(base, [f"{k}={v}" for k, v in variant.point]) if variant.point else base
        return with_kind(run, variant.kind) if variant.kind else run

    def to_json(self) -> dict[str, Any]:
        """The manifest's content."""
        return {"version": _VERSION, "config": self.config, "overrides": list(self.overrides),
                "kinds": list(self.kinds), "grid": [[k, list(v)] for k, v in self.grid], "seeds": list(self.seeds)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudySpec:
        """Read a manifest's content back."""
        return cls(dict(data["config"]), list(data["kinds"]), [(k, list(v)) for k, v in data["grid"]],
                   [int(s) for s in data["seeds"]], list(data.get("overrides", [])))

    @classmethod
    def from_run(cls, base: Any, kinds: Sequence[str], grid: Sequence[tuple[str, list[str]]], seeds: int,
                 overrides: Sequence[str] = ()) -> StudySpec:
        """A spec from a base RunConfig: ``seeds`` runs per variant with ``train.seed`` = base seed + 0, 1, ..."""
        from synthformer.tasks import absolute_paths

        if seeds < 1:
            raise ConfigError(f"--seeds: expected an integer >= 1, got {seeds}")
        first = int(base.train.seed)
        return cls(to_dict(absolute_paths(base)), [_canonical(k) for k in kinds], [(k, list(v)) for k, v in grid],
                   list(range(first, first + seeds)), list(overrides))


def _canonical(kind: str) -> str:
    """The paper's spelling of a kind (``random+vanilla`` -> ``R+V``), so that V is found and folders match."""
    from synthformer.attention import canonical_kind

    try:
        return canonical_kind(kind)
    except ValueError:  # a whole token mixer (Linformer, ...) or an unknown kind, reported by with_kind
        return kind


def _more_seeds(saved: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether ``current`` only adds seeds after ``saved``'s (``--seeds 2`` continued as ``--seeds 3``)."""
    old, new = saved.get("seeds"), current.get("seeds")
    return isinstance(old, list) and isinstance(new, list) and len(new) > len(old) and new[: len(old)] == old


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between two manifests, as ``key: saved -> current`` (config keys dotted); more seeds after
    the saved ones are no difference (the study grows, its finished runs stay valid)."""
    out = []
    for key in ("kinds", "grid", "seeds"):
        if saved.get(key) != current.get(key) and not (key == "seeds" and _more_seeds(saved, current)):
            out.append(f"{key}: {saved.get(key)} -> {current.get(key)}")

    out += [d for d in config_differences(saved.get("config", {}), current.get("config", {}))
            if not d.startswith(EXECUTION_SETTINGS)]
    return out


def check_manifest(out: Path, spec: StudySpec) -> bool:
    """Write ``out/study.json`` for a new study, or check that the one there is the same study.

    Returns:
        True if the study directory already held this study (a continued study).

    Raises:
        RunError: ``out`` is a file, holds a damaged manifest, or holds a different study (the first differences
            named).
    """
    if out.exists() and not out.is_dir():
        raise RunError(f"study directory {out} exists and is not a directory")
    path = out / MANIFEST
    current = json.loads(json.dumps(spec.to_json()))  # tuples -> lists, as the saved one reads back
    if path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(saved, dict):
                raise ValueError("not an object")
        except (ValueError, UnicodeDecodeError) as err:
            raise RunError(f"{path}: not a study manifest ({err}); remove it or choose another --out") from None
        diffs = _differences(saved, current)
        if diffs:
            more = f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else ""
            raise RunError(f"{out} holds a different study ({'; '.join(diffs[:3])}{more}); continue it with its own "
                           "command, or choose another --out")
        if _more_seeds(saved, current):
            logger.info("%s: adding seeds %s to the study's %s", out, current["seeds"][len(saved["seeds"]):],
                        saved["seeds"])
            atomic_write_text(path, json.dumps({**saved, "seeds": current["seeds"]}, indent=1) + "\n")
        return True
    if out.is_dir() and any(p.name != RunDir.LOCK for p in out.iterdir()):  # the lock this check runs under
        raise RunError(f"{out} is not empty and holds no {MANIFEST}: not a study directory; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(current, indent=1) + "\n")
    return False
