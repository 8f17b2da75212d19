"""The rows of the benchmark table: which token mixer each model of the paper's Table 4 (and Table 7) uses.

A row is one model of the paper's speed comparison: the same preset (width, depth, FFN, vocabulary) with only
the self-attention token mixer swapped. Row names are those of the paper's Table 4 ("Transformer",
"Dynamic Conv", "Lightweight Conv", "Synthesizer (D)", ...); the encoder rows of Table 7 ("Synthesizer (FR)",
"Synthesizer (FR+V)", "Linformer") are added for encoder (classification) presets.

Choices the paper leaves open, made here:

* Convolution kernel sizes grow with depth, as in fairseq's LightConv/DynamicConv language-model and
  translation settings (``3, 7, 15, 31, 31, 31`` for 6 layers; layers beyond the fourth keep 31). They are given
  to the models as per-layer mixer options, so each layer gets its own width.
* Convolutions use ``impl="auto"``: each call picks the band-matrix or the unfold formulation by length (the
  fast one for that length, see :func:`synthformer.mixers.choose_impl`).
* ``FR`` and Linformer use ``k = 32`` (paper section 4.3: "We use k=32 for both factorized models").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from synthformer.models import ModelConfig

__all__ = [
    "parse_overrides",
    "ALL_ROWS",
    "DECODER_ROWS",
    "ENCODER_ROWS",
    "FAIRSEQ_KERNEL_SIZES",
    "Row",
    "conv_kernel_sizes",
    "default_rows",
    "has_decoder",
    "resolve_rows",
    "row_config",
    "valid_row_names",
]

#: fairseq's per-layer kernel sizes for the LightConv/DynamicConv LM (``decoder_kernel_size_list``); deeper
#: stacks repeat the last width.
FAIRSEQ_KERNEL_SIZES: tuple[int, ...] = (3, 7, 15, 31, 31, 31)


@dataclass(frozen=True)
class Row:
    """One model of the table.

    Attributes:
        name: the paper's name for it (Table 4 / Table 7).
        kind: the token-mixer name :func:`synthformer.attention.build_mixer` takes.
        options: mixer options shared by every layer.
        conv: True for LightConv/DynamicConv: each layer also gets its kernel size from
            :func:`conv_kernel_sizes`.
        encoder_only: the mixer cannot be causal (Linformer), so decoder presets refuse the row.
        paper_speed_ratio: steps/s relative to the Transformer as the paper reports it (Table 4 for LM rows,
            Table 7 for the encoder-only comparison), for reference; None where the paper gives none.
        aliases: further spellings accepted by :func:`resolve_rows` (besides the name and the kind).
    """

    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    conv: bool = False
    encoder_only: bool = False
    paper_speed_ratio: float | None = None
    aliases: tuple[str, ...] = ()


# Paper ratios: Table 4 steps/s divided by the Transformer's 3.90; Table 7 steps/s divided by 1.09.
_ROWS: tuple[Row, ...] = (
    Row("Transformer", "V", paper_speed_ratio=1.0, aliases=("vanilla",)),
    Row(
        "Dynamic Conv",
        "DynamicConv",
        {"impl": "auto"},
        conv=True,
        paper_speed_ratio=2.65 / 3.90,
        aliases=("dyconv", "dynamic convolution"),
    ),
    Row(
        "Lightweight Conv",
        "LightConv",
        {"impl": "auto"},
        conv=True,
        paper_speed_ratio=4.05 / 3.90,
        aliases=("lightweight convolution",),
    ),
    Row("Synthesizer (D)", "D", paper_speed_ratio=3.61 / 3.90),
    Row("Synthesizer (R)", "R", paper_speed_ratio=4.26 / 3.90),
    Row("Synthesizer (R+V)", "R+V", paper_speed_ratio=3.79 / 3.90),
    Row("Synthesizer (D+V)", "D+V", paper_speed_ratio=3.34 / 3.90),
    Row("Synthesizer (FR)", "FR", {"k": 32}, paper_speed_ratio=1.10 / 1.09),
    Row("Synthesizer (FR+V)", "FR+V", {"k": 32}, paper_speed_ratio=0.80 / 1.09),
    Row("Linformer", "Linformer", {"k": 32}, encoder_only=True, paper_speed_ratio=1.09 / 1.09),
)

#: Every row, by name, in the paper's order.
ALL_ROWS: dict[str, Row] = {row.name: row for row in _ROWS}
#: Default rows of a decoder (language-model) preset: the paper's Table 4.
DECODER_ROWS: tuple[str, ...] = (
    "Transformer",
    "Dynamic Conv",
    "Lightweight Conv",
    "Synthesizer (D)",
    "Synthesizer (R)",
    "Synthesizer (R+V)",
    "Synthesizer (D+V)",
)
#: Default rows of an encoder (classification) preset: Table 4's plus the factorized models of Table 7.
ENCODER_ROWS: tuple[str, ...] = DECODER_ROWS + ("Synthesizer (FR)", "Synthesizer (FR+V)", "Linformer")


def _key(name: str) -> str:
    # "Syn (R+V)", "synthesizer(r+v)" and "R+V" should all find the same row: compare without case or spaces
    return "".join(name.split()).lower()


def _lookup() -> dict[str, str]:
    table: dict[str, str] = {}
    for row in _ROWS:
        spellings = [row.name, row.kind, *row.aliases]
        if row.name.startswith("Synthesizer ("):
            spellings.append("Syn " + row.name[len("Synthesizer ") :])  # the short form of Tables 5-7
        for spelling in spellings:
            table[_key(spelling)] = row.name
    return table


_LOOKUP = _lookup()


def valid_row_names() -> list[str]:
    """Every row name, in the paper's order."""
    return list(ALL_ROWS)


def has_decoder(config: ModelConfig) -> bool:
    """True if the preset has a causal decoder stack (language model, encoder-decoder)."""
    return bool(config.causal_stacks)


def default_rows(config: ModelConfig) -> list[str]:
    """The rows the table shows when none are asked for: Table 4's for presets with a decoder, Table 4's plus
    Table 7's factorized models for encoder presets."""
    return list(DECODER_ROWS if has_decoder(config) else ENCODER_ROWS)


def resolve_rows(rows: list[str] | None, config: ModelConfig, preset: str = "this preset") -> list[Row]:
    """Turn the requested row names into rows, checking that each can be built for ``config``.

    Names are matched without case or spaces and may be the paper's name ("Synthesizer (R)"), its short form
    ("Syn (R)") or the mixer kind ("R", "LightConv"). Duplicates are dropped; the Transformer is always
    included (first), since every speed is reported as a ratio to it.

    Raises:
        ValueError: an unknown name (the message lists the valid rows), or an encoder-only row (Linformer) for
            a preset with a causal decoder.
    """
    names = default_rows(config) if rows is None else list(rows)
    unknown = [name for name in names if _key(name) not in _LOOKUP]
    if unknown:
        raise ValueError(
            f"unknown benchmark row(s) {unknown}; valid rows: {', '.join(repr(n) for n in valid_row_names())} "
            f"(the short form 'Syn (R)' or the mixer kind 'R' also work)"
        )
    resolved: list[str] = []
    for name in ["Transformer", *names]:
        canonical = _LOOKUP[_key(name)]
        if canonical not in resolved:
            resolved.append(canonical)
    if has_decoder(config):
        refused = [name for name in resolved if ALL_ROWS[name].encoder_only]
        if refused:
            raise ValueError(
                f"row(s) {refused} cannot run on {preset!r} (arch={config.arch!r}): its decoder is causal, and "
                f"Linformer's length projection mixes every position into each compressed key, so it cannot be "
                f"causal (the paper compares it on encoding tasks only); use an encoder preset such as 'cls-base'"
            )
    return [ALL_ROWS[name] for name in resolved]


def conv_kernel_sizes(n_layers: int) -> list[int]:
    """Per-layer kernel sizes for ``n_layers`` convolution layers: fairseq's 3, 7, 15, 31, 31, 31, ...

    The first ``n_layers`` entries of the schedule; stacks deeper than 6 layers repeat 31.
    """
    return [FAIRSEQ_KERNEL_SIZES[min(i, len(FAIRSEQ_KERNEL_SIZES) - 1)] for i in range(n_layers)]


def _stack_options(row: Row, n_layers: int) -> dict[str, Any] | list[dict[str, Any]]:
    if not row.conv:
        return dict(row.options)
    return [{**row.options, "kernel_size": k} for k in conv_kernel_sizes(n_layers)]


def row_config(base: ModelConfig, row: Row | str) -> ModelConfig:
    """The preset ``base`` with every self-attention stack switched to ``row``'s token mixer.

    The language model's decoder, the classifier's encoder, or both stacks of an encoder-decoder (whose
    cross-attention stays dot-product, as in the paper). Everything else of ``base`` (width, depth, FFN,
    vocabulary, ``max_len``, dropout) is kept, so rows differ only in their token mixer.
    """
    if isinstance(row, str):
        key = _key(row)
        if key not in _LOOKUP:
            raise ValueError(f"unknown benchmark row {row!r}; valid rows: {', '.join(valid_row_names())}")
        row = ALL_ROWS[_LOOKUP[key]]
    changes: dict[str, Any] = {}
    for stack in base.stacks:
        changes[f"{stack}_kind"] = row.kind
        changes[f"{stack}_kind_options"] = _stack_options(row, base.stack_layers(stack))
    return dataclasses.replace(base, **changes)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["n_layers=2", "dropout=0.0"]`` -> ``{"n_layers": 2, "dropout": 0.0}`` (values read as YAML scalars)."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects KEY=VALUE (a ModelConfig field), got {item!r}")
        overrides[key.strip()] = yaml.safe_load(value) if value.strip() else None
    return overrides
