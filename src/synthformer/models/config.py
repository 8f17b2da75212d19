"""``ModelConfig``: the settings every architecture shares, and the checks that go with them.

Each architecture has its own config class, a subclass of :class:`ModelConfig` defined next to its model (the
decoder-only :class:`~synthformer.models.LMConfig`, the encoder-decoder
:class:`~synthformer.models.Seq2SeqConfig`, the encoder :class:`~synthformer.models.ClassifierConfig`) and
registered with its builder in :mod:`synthformer.models.registry`. A class holds exactly the fields its model
reads, so a setting that would never reach the model (``num_classes`` on a language model, a bug the guide lists)
cannot be written: it is an unknown field, named in the error.

Token mixers of a stack: ``<stack>_kind`` is a name accepted by :func:`synthformer.attention.build_mixer`
(``"V"``, ``"R+V"``, ``"LightConv"``, ...) or one name per layer; options come from ``kind_options`` (every
self-attention mixer) updated by ``<stack>_kind_options`` (a dict, or one dict per layer, e.g. LightConv's
per-layer ``kernel_size``). The stacks a class has are listed in its ``stacks``.

Attention head width: ``n_heads`` heads of ``d_model // n_heads`` channels each, unless the architecture's
:attr:`ModelConfig.attention_head_dim_field` (``head_dim`` of the language model and the encoder-decoder) sets a
width of its own for every attention layer (self and cross), as T5's ``d_kv``; a mixer's ``head_dim`` option (in
``kind_options``) sets it for the layers the option reaches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from synthformer.common import ConfigError

FFN_TYPES: tuple[str, ...] = ("relu", "conv_relu")
NORMS: tuple[str, ...] = ("pre", "post")
POSITIONS: tuple[str, ...] = ("sinusoidal", "learned")

__all__ = ["FFN_TYPES", "NORMS", "POSITIONS", "ModelConfig"]


def is_int(value: Any) -> bool:
    """An int that is not a bool (True as a layer count is always a mistake)."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(name: str, value: Any) -> None:
    if not is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def rate(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")


def choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")


def check_token_head(config: Any) -> None:
    """The settings of a model that predicts tokens (LM, encoder-decoder): ``label_smoothing`` and
    ``tie_embeddings``."""
    rate("label_smoothing", config.label_smoothing)
    if not isinstance(config.tie_embeddings, bool):
        raise ValueError(f"tie_embeddings must be a bool, got {config.tie_embeddings!r}")


def check_mixer_name(name: str, value: Any) -> None:
    """A name ``build_mixer`` accepts: a registered attention kind, mixture or whole token mixer."""
    from synthformer.attention import resolve_mixer

    if not isinstance(value, str):
        raise ValueError(f"{name} must be a token-mixer name such as 'V' or 'R+V', got {value!r}")
    try:
        resolve_mixer(value)
    except ValueError as err:
        raise ValueError(f"{name}={value!r} is not a known token mixer: {err}") from None


@dataclass
class ModelConfig:
    """Settings shared by every architecture; validated on creation (``ValueError`` naming the field, the bad
    value and what is expected). Use a subclass (``LMConfig``, ``Seq2SeqConfig``, ``ClassifierConfig``).

    Attributes:
        vocab_size: input vocabulary (the source vocabulary of an encoder-decoder).
        d_model: model width.
        n_heads: attention heads (``d_model`` must be divisible by it).
        n_layers: layers of the model's first stack (the LM's decoder, the encoder otherwise).
        d_ff: hidden width of the position-wise feed-forward network.
        ffn: ``"relu"`` (linear -> ReLU -> linear) or ``"conv_relu"`` (width-``ffn_kernel_size`` convolution over
            positions -> ReLU -> linear; the paper's LM setting). Convolutions are causal (left-padded) in decoders
            and centred in encoders; padded positions are zeroed before the convolution.
        ffn_kernel_size: width of the ``conv_relu`` convolution (3 in the paper).
        dropout: dropout on embeddings and on every residual branch.
        attention_dropout: dropout inside the token mixers (attention probabilities, or the conv kernels).
        norm: ``"pre"`` (LayerNorm before each sublayer, a final LayerNorm after the stack) or ``"post"``.
        positions: ``"sinusoidal"`` (fixed) or ``"learned"`` absolute position embeddings.
        max_len: longest sequence; length-dependent mixer parameters are sized for it.
        kind_options: options passed to every self-attention mixer (e.g. ``{"k": 32}`` for ``FR``).
        pad_id: the padding token id; used to derive padding masks a batch does not give.
        bos_id: first decoder input token in generation.
        eos_id: token that ends a generated sequence.
    """

    #: The architecture's registered name (see :mod:`synthformer.models.registry`).
    arch: ClassVar[str] = ""
    #: Self-attention stacks of the architecture, each with ``<stack>_kind`` / ``<stack>_kind_options`` fields.
    stacks: ClassVar[tuple[str, ...]] = ()
    #: Stacks whose self-attention is causal (they can decode incrementally).
    causal_stacks: ClassVar[tuple[str, ...]] = ()
    #: What the model does with a text, declared here so that code outside models/ (Hugging Face export,
    #: analysis, studies) adapts to an architecture without comparing its name: a decoder-only model continues a
    #: text; an encoder-decoder reads it as a source (ended by ``eos``) and writes a target; a classifier gives it
    #: one of ``num_classes`` labels.
    decoder_only: ClassVar[bool] = False
    encoder_decoder: ClassVar[bool] = False
    classifier: ClassVar[bool] = False
    #: Fields of the one config class used before the per-architecture split that this class does not have,
    #: with the value they always held for this architecture; :meth:`from_dict` drops them (old run directories).
    legacy_fields: ClassVar[dict[str, Any]] = {}
    #: The values ``ffn`` and ``positions`` may take in this architecture (the encoder-decoder adds T5's).
    ffn_choices: ClassVar[tuple[str, ...]] = FFN_TYPES
    position_choices: ClassVar[tuple[str, ...]] = POSITIONS
    #: The field that sets the head width of every attention layer (``"head_dim"``: see
    #: :attr:`attention_head_dim`), or None where the architecture has none (the classifier, whose ``head_dim`` is
    #: its MLP head's width; its attention takes the ``head_dim`` option through ``kind_options``).
    attention_head_dim_field: ClassVar[str | None] = None

    vocab_size: int = 32000
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    d_ff: int = 2048
    ffn: str = "relu"
    ffn_kernel_size: int = 3
    dropout: float = 0.1
    attention_dropout: float = 0.0
    norm: str = "pre"
    positions: str = "sinusoidal"
    max_len: int = 256
    kind_options: dict[str, Any] = field(default_factory=dict)
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check every field; raise ``ValueError`` naming the first bad one, its value and what is expected."""
        if type(self) is ModelConfig:
            raise TypeError("ModelConfig is the shared base; use LMConfig, Seq2SeqConfig or ClassifierConfig "
                            "(or ModelConfig.from_dict({'arch': ..., ...}))")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "ffn_kernel_size", "max_len"):
            positive_int(name, getattr(self, name))
        if self.attention_head_dim is not None:
            positive_int(str(self.attention_head_dim_field), self.attention_head_dim)
        elif self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}): each head gets "
                f"d_model // n_heads channels"
            )
        choice("ffn", self.ffn, self.ffn_choices)
        choice("norm", self.norm, NORMS)
        choice("positions", self.positions, self.position_choices)
        rate("dropout", self.dropout)
        rate("attention_dropout", self.attention_dropout)
        if self.ffn != "conv_relu" and self.ffn_kernel_size != 3:
            raise ValueError(
                f"ffn_kernel_size={self.ffn_kernel_size!r} is only used by ffn='conv_relu', got ffn={self.ffn!r}"
            )
        self.validate_arch()
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name)
            limit = self.vocab_size if name == "pad_id" else self.target_vocab_size
            if not is_int(value) or not 0 <= value < limit:
                raise ValueError(f"{name} must be an integer in [0, {limit}) (the vocabulary), got {value!r}")
        self._validate_kinds()

    def validate_arch(self) -> None:
        """Checks of the architecture's own fields (overridden by the subclasses)."""

    def _validate_kinds(self) -> None:
        if not isinstance(self.kind_options, dict):
            raise ValueError(f"kind_options must be a dict of mixer options, got {self.kind_options!r}")
        for stack in self.stacks:
            n = self.stack_layers(stack)
            kind = getattr(self, f"{stack}_kind")
            if isinstance(kind, (list, tuple)):
                if len(kind) != n:
                    raise ValueError(
                        f"{stack}_kind has {len(kind)} entries but the {stack} has {n} layers; give one kind per "
                        f"layer or a single kind"
                    )
                for i, k in enumerate(kind):
                    check_mixer_name(f"{stack}_kind[{i}]", k)
            else:
                check_mixer_name(f"{stack}_kind", kind)
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
        self._validate_head_dims()

    def _validate_head_dims(self) -> None:
        """Every mixer given a head width (:attr:`attention_head_dim`, or a ``head_dim`` option of its own) must
        take one: ``ConfigError`` naming the stack, the mixer and the value otherwise (LightConv, DynamicConv:
        their heads are groups of the d_model channels, with no width of their own)."""
        from synthformer.attention import is_whole_mixer, takes_head_dim

        for stack in self.stacks:
            for i, (kind, opts) in enumerate(zip(self.layer_kinds(stack), self.layer_options(stack), strict=True)):
                width = opts.get("head_dim", self.attention_head_dim)
                if width is None or takes_head_dim(kind) or (is_int(width) and width * self.n_heads == self.d_model):
                    continue  # d_model // n_heads is every mixer's own width: nothing to set
                where = (f"{self.attention_head_dim_field}={width!r}" if "head_dim" not in opts
                         else f"head_dim={width!r} in the options of {stack} layer {i}")
                why = ("a whole token mixer without a head_dim option (LightConv's and DynamicConv's heads are groups "
                       "of the d_model channels sharing one kernel, with no width of their own)"
                       if is_whole_mixer(kind) else "a kind whose class does not declare supports_head_dim")
                label = f"{stack}_kind[{i}]" if isinstance(getattr(self, f"{stack}_kind"), (list, tuple)) else \
                    f"{stack}_kind"
                raise ConfigError(f"{where}: {label}={kind!r} takes no attention head width: it is {why}; leave "
                                  "head_dim unset, or use an attention kind (V, R, D, R+V, ...) or Linformer")

    # ------------------------------------------------------------------ derived values
    @property
    def attention_head_dim(self) -> int | None:
        """The head width the config sets for every attention layer (the :attr:`attention_head_dim_field`), or
        None: ``d_model // n_heads`` (or a mixer's own ``head_dim`` option). Given, each layer's attention is
        ``n_heads * head_dim`` wide inside, its output projection mapping back to ``d_model``."""
        field_name = self.attention_head_dim_field
        return None if field_name is None else getattr(self, field_name)

    @property
    def target_vocab_size(self) -> int:
        """The vocabulary the model reads at its output side (``vocab_size`` unless the architecture differs)."""
        return self.vocab_size

    def stack_layers(self, stack: str) -> int:
        """Layers of ``stack`` (one of :attr:`stacks`)."""
        self._check_stack(stack)
        return self.n_layers

    def layer_kinds(self, stack: str) -> list[str]:
        """One mixer name per layer of ``stack``."""
        self._check_stack(stack)
        kind = getattr(self, f"{stack}_kind")
        n = self.stack_layers(stack)
        return list(kind) if isinstance(kind, (list, tuple)) else [kind] * n

    def layer_options(self, stack: str) -> list[dict[str, Any]]:
        """One options dict per layer of ``stack``: ``kind_options`` updated by the stack's own options."""
        self._check_stack(stack)
        n = self.stack_layers(stack)
        opts = getattr(self, f"{stack}_kind_options")
        per_layer = [opts or {}] * n if not isinstance(opts, (list, tuple)) else list(opts)
        return [{**self.kind_options, **o} for o in per_layer]

    def _check_stack(self, stack: str) -> None:
        if stack not in self.stacks:
            raise ValueError(f"arch {self.arch!r} has no {stack!r} stack; its stacks: {', '.join(self.stacks)}")

    # ------------------------------------------------------------------ (de)serialization
    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON/YAML friendly) with the ``arch`` first; :meth:`from_dict` turns it back into an
        equal config."""
        return {"arch": self.arch, **dataclasses.asdict(self)}

    @classmethod
    def field_names(cls) -> list[str]:
        """The settings of this class, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a dict. On :class:`ModelConfig` itself the ``arch`` key picks the class; on a subclass it
        is optional and must match. Unknown keys raise ``ValueError`` listing the valid ones (no silent drops),
        except the :attr:`legacy_fields` of configs saved before the per-architecture split, at their old values.
        """
        from .registry import config_class

        data = dict(data)
        arch = data.pop("arch", None)
        target = cls
        if cls is ModelConfig:
            if arch is None:
                raise ValueError("a model config needs 'arch' to pick its class (lm, seq2seq, classifier, ...)")
            target = config_class(arch)
        elif arch is not None and arch != cls.arch:
            raise ValueError(f"arch={arch!r} does not match {cls.__name__} (arch {cls.arch!r})")
        valid = target.field_names()
        for key, old in target.legacy_fields.items():
            if key in data and key not in valid and (old is Ellipsis or data[key] == old):
                data.pop(key)
        unknown = sorted(set(data) - set(valid))
        if unknown:
            from .registry import list_archs

            owners = {key: [a for a in list_archs() if key in config_class(a).field_names()] for key in unknown}
            where = "; ".join(f"{key}={data[key]!r} is a setting of arch {' and '.join(repr(a) for a in owners[key])}"
                              for key in unknown if owners[key])
            raise ValueError(f"{', '.join(unknown)}: not a setting of arch {target.arch!r} ({target.__name__})"
                             f"{' (' + where + ')' if where else ''}; valid settings: {', '.join(valid)}")
        return target(**data)
