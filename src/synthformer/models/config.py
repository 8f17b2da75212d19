"""``ModelConfig``: the typed description of every task model, checked when it is created.

One dataclass covers the three architectures (``arch``): the decoder-only language model (``"lm"``), the
encoder-decoder (``"seq2seq"``) and the encoder classifier (``"classifier"``). Fields that only one architecture
reads are validated against ``arch``: a setting that would never reach the model (for example ``num_classes``
on a language model) is an error, not a silent no-op (one of the bugs the guide lists).

Which token mixer each stack uses:

* ``encoder_kind``: the encoder's self-attention (classifier, seq2seq encoder).
* ``decoder_kind``: the decoder's causal self-attention (language model, seq2seq decoder).
* ``cross_kind``: the seq2seq decoder's attention over the encoder output (``"V"``, or the synthetic ``"R"`` /
  ``"D"`` over source positions; the paper's section 5 found synthetic cross-attention worse, so ``"V"`` is the
  default).

Settings of a stack the architecture lacks (``encoder_kind`` on a language model, ``decoder_kind`` on a
classifier), ``pooling`` outside the classifier and ``ffn_kernel_size`` without ``conv_relu`` must keep their
defaults.

A stack's kind is a name accepted by :func:`synthformer.attention.build_mixer` (``"V"``, ``"R+V"``,
``"LightConv"``, ...) or a list with one name per layer. Mixer options come from ``kind_options`` (every
self-attention mixer) updated by ``encoder_kind_options`` / ``decoder_kind_options`` (one stack; a dict, or a list
with one dict per layer, e.g. LightConv's per-layer ``kernel_size``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

ARCHS: tuple[str, ...] = ("lm", "seq2seq", "classifier")
FFN_TYPES: tuple[str, ...] = ("relu", "conv_relu")
NORMS: tuple[str, ...] = ("pre", "post")
POSITIONS: tuple[str, ...] = ("sinusoidal", "learned")
POOLINGS: tuple[str, ...] = ("mean", "cls", "max")
CROSS_KINDS: tuple[str, ...] = ("V", "R", "D")

__all__ = ["ARCHS", "CROSS_KINDS", "FFN_TYPES", "NORMS", "POOLINGS", "POSITIONS", "ModelConfig"]


def _is_int(value: Any) -> bool:
    # bool is an int subclass; True as a layer count is always a mistake
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(name: str, value: Any) -> None:
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _rate(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")


def _check_mixer_name(name: str, value: Any) -> None:
    """A name ``build_mixer`` accepts: a registered attention kind or mixture, or a baseline mixer."""
    # imported here: the attention package imports nothing from models, but keeping the config importable
    # on its own makes it cheap to load in tools that only read configs
    from synthformer.attention import available_mixers, parse_kind

    if not isinstance(value, str):
        raise ValueError(f"{name} must be a token-mixer name such as 'V' or 'R+V', got {value!r}")
    baselines = {m.lower() for m in available_mixers()}
    if value.strip().lower() in baselines:
        return
    try:
        parse_kind(value)
    except ValueError as err:
        raise ValueError(f"{name}={value!r} is not a known token mixer: {err}") from None


@dataclass
class ModelConfig:
    """Configuration of a task model; validated on creation (``ValueError`` naming the field, the bad value and
    what is expected).

    Attributes:
        arch: ``"lm"`` (decoder-only, causal), ``"seq2seq"`` (encoder-decoder) or ``"classifier"`` (encoder).
        vocab_size: input vocabulary (source vocabulary for seq2seq; also the target one unless
            ``tgt_vocab_size`` is set).
        tgt_vocab_size: seq2seq only: target vocabulary; None shares the source vocabulary and then the encoder
            and decoder share one embedding table.
        num_classes: classifier only (required there): number of classes, >= 2.
        d_model: model width.
        n_heads: attention heads (``d_model`` must be divisible by it).
        n_layers: layers of the encoder (classifier, seq2seq) or of the decoder (lm).
        n_decoder_layers: seq2seq only: decoder layers; None means ``n_layers``.
        d_ff: hidden width of the position-wise feed-forward network.
        ffn: ``"relu"`` (linear -> ReLU -> linear) or ``"conv_relu"`` (width-``ffn_kernel_size`` convolution over
            positions -> ReLU -> linear; the paper's LM setting). Convolutions are causal (left-padded) in decoders
            and centred in encoders; padded positions are zeroed before the convolution.
        ffn_kernel_size: width of the ``conv_relu`` convolution (3 in the paper).
        dropout: dropout on embeddings and on every residual branch.
        attention_dropout: dropout inside the token mixers (attention probabilities, or the conv kernels).
        norm: ``"pre"`` (LayerNorm before each sublayer, a final LayerNorm after the stack) or ``"post"``
            (LayerNorm after each residual addition, as in Vaswani et al.).
        positions: ``"sinusoidal"`` (fixed) or ``"learned"`` absolute position embeddings.
        tie_embeddings: lm / seq2seq: the output projection shares the (target) embedding matrix.
        max_len: longest sequence (source and target alike); length-dependent mixer parameters are sized for it.
        encoder_kind: token mixer of the encoder self-attention: a name or one name per layer.
        decoder_kind: token mixer of the decoder (causal) self-attention: a name or one name per layer.
        cross_kind: seq2seq only: ``"V"`` (dot product, the paper's setting), ``"R"`` (a trained
            ``max_len x max_len`` alignment per head over source positions) or ``"D"`` (each target token
            predicts its logits over source positions).
        kind_options: options passed to every self-attention mixer (e.g. ``{"k": 32}`` for ``FR``).
        encoder_kind_options: options for the encoder's mixers only, updating ``kind_options``: a dict, or a list
            of one dict per layer.
        decoder_kind_options: the same for the decoder's mixers.
        label_smoothing: lm / seq2seq: label smoothing of the token cross-entropy (0.1 for MT in the paper).
            The classifier uses plain cross-entropy, so a nonzero value there is an error.
        pooling: classifier only: ``"mean"`` or ``"max"`` over the non-padding positions, or ``"cls"`` (the
            first position; the data must put a summary token, e.g. ``<bos>``, there).
        pad_id: the padding token id; used to derive padding masks a batch does not give.
        bos_id: first decoder input token in generation (seq2seq; LM prompts bring their own).
        eos_id: token that ends a generated sequence.
    """

    arch: str = "lm"
    vocab_size: int = 32000
    tgt_vocab_size: int | None = None
    num_classes: int | None = None
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    n_decoder_layers: int | None = None
    d_ff: int = 2048
    ffn: str = "relu"
    ffn_kernel_size: int = 3
    dropout: float = 0.1
    attention_dropout: float = 0.0
    norm: str = "pre"
    positions: str = "sinusoidal"
    tie_embeddings: bool = True
    max_len: int = 256
    encoder_kind: str | list[str] = "V"
    decoder_kind: str | list[str] = "V"
    cross_kind: str = "V"
    kind_options: dict[str, Any] = field(default_factory=dict)
    encoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    decoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    label_smoothing: float = 0.0
    pooling: str = "mean"
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check every field; raise ``ValueError`` naming the first bad one, its value and what is expected."""
        _choice("arch", self.arch, ARCHS)
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "ffn_kernel_size", "max_len"):
            _positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}): each head gets "
                f"d_model // n_heads channels"
            )
        _choice("ffn", self.ffn, FFN_TYPES)
        _choice("norm", self.norm, NORMS)
        _choice("positions", self.positions, POSITIONS)
        _choice("pooling", self.pooling, POOLINGS)
        _rate("dropout", self.dropout)
        _rate("attention_dropout", self.attention_dropout)
        _rate("label_smoothing", self.label_smoothing)
        if not isinstance(self.tie_embeddings, bool):
            raise ValueError(f"tie_embeddings must be a bool, got {self.tie_embeddings!r}")
        self._validate_arch_fields()
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name)
            limit = self.vocab_size if name == "pad_id" or self.arch != "seq2seq" else self.target_vocab_size
            if not _is_int(value) or not 0 <= value < limit:
                raise ValueError(f"{name} must be an integer in [0, {limit}) (the vocabulary), got {value!r}")
        self._validate_kinds()

    def _validate_arch_fields(self) -> None:
        arch = self.arch
        if self.tgt_vocab_size is not None:
            if arch != "seq2seq":
                raise ValueError(
                    f"tgt_vocab_size={self.tgt_vocab_size!r} is only used by arch='seq2seq', got arch={arch!r}"
                )
            _positive_int("tgt_vocab_size", self.tgt_vocab_size)
        if self.n_decoder_layers is not None:
            if arch != "seq2seq":
                raise ValueError(
                    f"n_decoder_layers={self.n_decoder_layers!r} is only used by arch='seq2seq' (set n_layers for "
                    f"arch={arch!r})"
                )
            _positive_int("n_decoder_layers", self.n_decoder_layers)
        if arch == "classifier":
            if not _is_int(self.num_classes) or self.num_classes < 2:
                raise ValueError(f"num_classes must be an integer >= 2 for arch='classifier', got {self.num_classes!r}")
            if self.label_smoothing:
                raise ValueError(
                    f"label_smoothing={self.label_smoothing!r} is not used by arch='classifier' (plain "
                    f"cross-entropy); expected 0.0"
                )
        elif self.num_classes is not None:
            raise ValueError(f"num_classes={self.num_classes!r} is only used by arch='classifier', got arch={arch!r}")
        if arch == "seq2seq":
            _choice("cross_kind", self.cross_kind, CROSS_KINDS)
        elif self.cross_kind != "V":
            raise ValueError(f"cross_kind={self.cross_kind!r} is only used by arch='seq2seq', got arch={arch!r}")
        # a stack the architecture does not have: a kind set there would silently train something else
        missing = {"lm": "encoder", "classifier": "decoder"}.get(arch)
        if missing is not None:
            used = "decoder" if missing == "encoder" else "encoder"
            for name, default in ((f"{missing}_kind", "V"), (f"{missing}_kind_options", None)):
                if getattr(self, name) != default:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not used by arch={arch!r}, which has no {missing}; "
                        f"set {used}{name[len(missing) :]} instead"
                    )
        if arch != "classifier" and self.pooling != "mean":
            raise ValueError(f"pooling={self.pooling!r} is only used by arch='classifier', got arch={arch!r}")
        if self.ffn != "conv_relu" and self.ffn_kernel_size != 3:
            raise ValueError(
                f"ffn_kernel_size={self.ffn_kernel_size!r} is only used by ffn='conv_relu', got ffn={self.ffn!r}"
            )

    def _validate_kinds(self) -> None:
        if not isinstance(self.kind_options, dict):
            raise ValueError(f"kind_options must be a dict of mixer options, got {self.kind_options!r}")
        for stack in ("encoder", "decoder"):
            n = self.stack_layers(stack)
            kind = getattr(self, f"{stack}_kind")
            if isinstance(kind, (list, tuple)):
                if len(kind) != n:
                    raise ValueError(
                        f"{stack}_kind has {len(kind)} entries but the {stack} has {n} layers; give one kind per "
                        f"layer or a single kind"
                    )
                for i, k in enumerate(kind):
                    _check_mixer_name(f"{stack}_kind[{i}]", k)
            else:
                _check_mixer_name(f"{stack}_kind", kind)
            opts = getattr(self, f"{stack}_kind_options")
            if opts is None or isinstance(opts, dict):
                continue
            if not isinstance(opts, (list, tuple)) or not all(isinstance(o, dict) for o in opts):
                raise ValueError(f"{stack}_kind_options must be None, a dict, or a list of dicts, got {opts!r}")
            if len(opts) != n:
                raise ValueError(
                    f"{stack}_kind_options has {len(opts)} entries but the {stack} has {n} layers; give one dict "
                    f"per layer or a single dict"
                )

    # ------------------------------------------------------------------ derived values
    @property
    def target_vocab_size(self) -> int:
        """The vocabulary the model predicts (``tgt_vocab_size`` for seq2seq when set, else ``vocab_size``)."""
        return self.tgt_vocab_size if self.tgt_vocab_size is not None else self.vocab_size

    @property
    def decoder_layers(self) -> int:
        """Number of decoder layers (``n_decoder_layers`` if set, else ``n_layers``)."""
        return self.n_decoder_layers if self.n_decoder_layers is not None else self.n_layers

    def stack_layers(self, stack: str) -> int:
        """Layers of ``stack`` ("encoder" or "decoder"); the LM's only stack is its decoder."""
        if stack == "decoder" and self.arch == "seq2seq":
            return self.decoder_layers
        return self.n_layers

    def layer_kinds(self, stack: str) -> list[str]:
        """One mixer name per layer of ``stack`` ("encoder" or "decoder")."""
        kind = getattr(self, f"{stack}_kind")
        n = self.stack_layers(stack)
        return list(kind) if isinstance(kind, (list, tuple)) else [kind] * n

    def layer_options(self, stack: str) -> list[dict[str, Any]]:
        """One options dict per layer of ``stack``: ``kind_options`` updated by the stack's own options."""
        n = self.stack_layers(stack)
        opts = getattr(self, f"{stack}_kind_options")
        per_layer = [opts or {}] * n if not isinstance(opts, (list, tuple)) else list(opts)
        return [{**self.kind_options, **o} for o in per_layer]

    # ------------------------------------------------------------------ (de)serialization
    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON/YAML friendly) that :meth:`from_dict` turns back into an equal config."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a dict; unknown keys raise ``ValueError`` listing the valid ones (no silent drops)."""
        valid = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown ModelConfig field(s) {unknown}; valid fields: {', '.join(sorted(valid))}")
        return cls(**data)
