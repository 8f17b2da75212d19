"""The padding-side matrix: every model family, every registered token mixer (and the paper's mixtures R+V and
D+V), through each interface that serves the family; each case gives a model the same rows padded on the left and
on the right and asserts the same outputs. ``docs/reliability.md``'s "Padding side" table is :func:`table`, kept
equal to these cases by ``test_padding_sides.py``."""

from __future__ import annotations

from dataclasses import dataclass

from synthformer.attention import available_mixers, contract, cross_kinds, get_mixer
from synthformer.models import POOLINGS

MIXTURES = ("R+V", "D+V")
NATIVE, HF = "native", "Hugging Face"


def encoder_kinds() -> tuple[str, ...]:
    """Every registered name (attention kinds and whole token mixers) and the two mixtures."""
    return (*available_mixers(), *MIXTURES)


def decoder_kinds() -> tuple[str, ...]:
    """The registered names that can be causal (Linformer cannot) and the two mixtures."""
    return (*(name for name in available_mixers() if contract.supports_causal(get_mixer(name))), *MIXTURES)


def synthetic_cross_kinds() -> tuple[str, ...]:
    """Every cross-capable kind but V (the encoder rows already run V's cross-attention) and R+V."""
    return (*(kind for kind in cross_kinds() if kind != "V"), "R+V")


@dataclass(frozen=True)
class Row:
    """A row of the table: one family (``key``) through one interface, over ``variants`` (kinds, or poolings)."""

    key: str
    family: str
    api: str
    variants: tuple[str, ...]
    varied: str
    compared: str

    @property
    def row(self) -> str:
        return f"| {self.family} | {self.api} | {self.varied} | {len(self.variants)} | {self.compared} |"


def _rows() -> tuple[Row, ...]:
    lm, enc, cross = decoder_kinds(), encoder_kinds(), synthetic_cross_kinds()
    lm_what = "logits at every real token"
    s2s_what = "teacher-forced logits, greedy tokens"
    cls_what = "class logits"
    poolings = tuple(p for p in POOLINGS if p != "mean")  # mean pooling is the kinds' rows
    pooled = f"pooling {', '.join(poolings)} (kind R+V)"
    return (
        Row("lm", "language model", NATIVE, lm, "decoder kind (every one that can be causal)", lm_what),
        Row("lm", "language model", HF, lm, "decoder kind (every one that can be causal)", lm_what),
        Row("seq2seq", "encoder-decoder", NATIVE, enc, "encoder kind", s2s_what),
        Row("seq2seq", "encoder-decoder", HF, enc, "encoder kind", s2s_what),
        Row("cross", "encoder-decoder", NATIVE, cross, "cross-attention kind (V: the rows above)", s2s_what),
        Row("cross", "encoder-decoder", HF, cross, "cross-attention kind (V: the rows above)", s2s_what),
        Row("t5", "encoder-decoder, T5 variant", NATIVE, ("V", "R"), "encoder kind", s2s_what),
        Row("t5", "encoder-decoder, T5 variant", HF, ("V", "R"), "encoder kind", s2s_what),
        Row("classifier", "classifier", NATIVE, enc, "encoder kind", cls_what),
        Row("classifier", "classifier", HF, enc, "encoder kind", cls_what),
        Row("pooling", "classifier", NATIVE, poolings, pooled, cls_what),
        Row("pooling", "classifier", HF, poolings, pooled, cls_what),
        Row("dual", "dual encoder", NATIVE, enc, "encoder kind", cls_what),
    )


ROWS = _rows()
#: (row key, interface, kind or pooling): one pytest case each
CASES: tuple[tuple[str, str, str], ...] = tuple((r.key, r.api, v) for r in ROWS for v in r.variants)


def table() -> str:
    """The Markdown table docs/reliability.md shows."""
    head = ["| family | interface | varied | cases | compared |", "|---|---|---|---|---|"]
    return "\n".join(head + [r.row for r in ROWS])


def headline() -> str:
    """The count docs/reliability.md shows above the table."""
    n = len(CASES)
    return f"**{n} padding-side cases: left padding gave what right padding gives in {n}, refused in 0**"
