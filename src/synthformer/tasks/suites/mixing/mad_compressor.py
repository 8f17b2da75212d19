"""Arch ``compressor``: MAD's compression backbone (Poli et al. 2024, the "AutoEncoder" of MAD-Lab; written here
from the paper's and MAD-Lab's descriptions, no code taken) with a token-mixer stack of any kind.

A causal decoder stack of ``decoder_kind`` self-attention reads ``x_1 .. x_n C`` (C, the aggregation token, last);
its final hidden state at C, ``z``, is the whole code of the sequence. A position-wise MLP decoder then rebuilds
every input token from ``z`` alone: ``logits_i = unembed(MLP(z + P_i))`` for ``i = 1 .. n``, where ``P`` is a
position embedding of the decoder's own (learned, or MAD's fixed sin-cos table). The loss is the mean cross-entropy
over the ``n`` reconstructed tokens. Since the stack is causal, only the state at C has read the whole sequence: the
mixer has to gather ("concatenate") every token onto that one position, which is what MAD's compression task asks.

MAD's decoder is non-expanding: ``decoder_layers`` blocks of LayerNorm -> Linear(d, d) -> GELU (MAD: 2), then
LayerNorm -> Linear(d, V). Its stack sees no absolute positions unless the layers bring them; here the input
embedding carries the config's ``positions`` as every synthformer stack does.

``synthformer study --kinds`` sets ``decoder_kind`` (the one self-attention stack), as for the language model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from synthformer.models import (
    Decoder,
    Embeddings,
    MixerFactory,
    ModelConfig,
    choice,
    is_int,
    register_arch,
    sinusoidal_table,
    token_cross_entropy,
)

__all__ = ["DECODER_POSITIONS", "Compressor", "CompressorConfig", "build_compressor"]

#: ``decoder_positions`` values: a learned table, or the fixed sin-cos one MAD uses.
DECODER_POSITIONS: tuple[str, ...] = ("learned", "sinusoidal")


@dataclass
class CompressorConfig(ModelConfig):
    """MAD's compression model (arch ``"compressor"``): the :class:`ModelConfig` settings plus

    Attributes:
        decoder_kind: token mixer of the causal self-attention stack: a name or one name per layer.
        decoder_kind_options: options for the stack's mixers, updating ``kind_options``.
        decoder_layers: LayerNorm -> Linear(d, d) -> GELU blocks of the MLP decoder (MAD: 2; 0: the unembedding
            reads ``z + P_i`` directly).
        decoder_positions: the decoder's position embedding ``P``: ``"learned"`` or ``"sinusoidal"`` (MAD's).
    """

    arch: ClassVar[str] = "compressor"
    stacks: ClassVar[tuple[str, ...]] = ("decoder",)
    causal_stacks: ClassVar[tuple[str, ...]] = ("decoder",)

    decoder_kind: str | list[str] = "V"
    decoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    decoder_layers: int = 2
    decoder_positions: str = "learned"

    def validate_arch(self) -> None:
        if not is_int(self.decoder_layers) or self.decoder_layers < 0:
            raise ValueError(f"decoder_layers must be an integer >= 0, got {self.decoder_layers!r}")
        choice("decoder_positions", self.decoder_positions, DECODER_POSITIONS)


class Compressor(nn.Module):
    """MAD's compression model (see the module docstring).

    Batch contract: ``forward(input_ids (B, n + 1), labels (B, n) | None)`` returns ``{"logits": (B, n, V),
    "loss": scalar}`` (the loss only with labels): the last input is the aggregation token, ``labels[:, i]`` the
    token to rebuild at position ``i`` (-100: not counted). ``encode(input_ids) -> (B, n + 1, d)`` are the stack's
    hidden states; ``decode(z (B, d), n) -> (B, n, V)`` the logits rebuilt from one code.
    """

    def __init__(self, config: CompressorConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        if not isinstance(config, CompressorConfig):
            raise ValueError(f"Compressor needs a CompressorConfig (arch='compressor'), got arch={config.arch!r}")
        self.config = config
        d = config.d_model
        self.embed = Embeddings(config.vocab_size, d, config.max_len, config.positions, config.dropout)
        self.decoder = Decoder(config, cross=False, mixer_factory=mixer_factory)
        if config.decoder_positions == "learned":
            self.code_positions = nn.Parameter(torch.randn(config.max_len, d) * 0.02)  # (max_len, d)
        else:
            self.register_buffer("code_positions", sinusoidal_table(config.max_len, d), persistent=False)
        self.mlp = nn.Sequential(*(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU())
                                   for _ in range(config.decoder_layers)))
        self.unembed = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, config.vocab_size))

    def parts(self) -> dict[str, list[nn.Module]]:
        """The modules ``train.freeze`` names: ``embeddings`` and ``output`` (the unembedding)."""
        return {"embeddings": [self.embed], "output": [self.unembed]}

    def encode(self, input_ids: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """The stack's hidden states (B, L, d) of ``input_ids`` (B, L); position ``t`` has read tokens ``0 .. t``."""
        return self.decoder(self.embed(input_ids), padding_mask=padding_mask)  # (B, L, d)

    def decode(self, z: Tensor, n: int) -> Tensor:
        """Logits (B, n, V) of the ``n`` tokens rebuilt from the codes ``z`` (B, d)."""
        if n > self.config.max_len:
            raise ValueError(f"{n} positions to rebuild, but the decoder's position table has {self.config.max_len}")
        x = z[:, None, :] + self.code_positions[:n].to(z.dtype)[None]  # (B, 1, d) + (1, n, d) -> (B, n, d)
        return self.unembed(self.mlp(x))  # (B, n, V)

    def forward(self, input_ids: Tensor, labels: Tensor | None = None,
                padding_mask: Tensor | None = None) -> dict[str, Tensor]:
        """Logits of the rebuilt tokens (and the loss when ``labels`` are given); see the class docstring."""
        z = self.encode(input_ids, padding_mask)[:, -1]  # (B, d): the state at the aggregation token
        logits = self.decode(z, input_ids.shape[1] - 1)  # (B, n, V)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = token_cross_entropy(logits, labels)
        return out


@register_arch(CompressorConfig)
def build_compressor(config: CompressorConfig, mixer_factory: MixerFactory) -> Compressor:
    """The compression model of ``config``, its stack's mixers made by ``mixer_factory``."""
    return Compressor(config, mixer_factory)
