"""Attention transfer: start a synthesized model from what its pretrained self-attention does on sample text.

* :func:`mean_attention` and :func:`init_random_from_attention`: ``R`` (and ``Fix``) of each synthesized layer
  set to the log of the pretrained layer's attention probabilities averaged over the sample's sequences, per
  head, so that ``softmax(R)`` is that mean attention where the sample reached.
* :func:`distill`: the synthesized layers' own tensors fitted by MSE so that each synthesized module's output
  matches the pretrained module's output on the pretrained model's own inputs to it (layer by layer: an error of
  one layer does not feed the next during the fit).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.attention import Mixture, Random

from .families import self_attention_modules
from .layer import ATTRIBUTE

__all__ = ["distill", "init_random_from_attention", "mean_attention", "pretrained_copy"]

logger = logging.getLogger(__name__)


def _run(model: nn.Module, ids: Tensor, **kwargs: object) -> object:
    if model.config.is_encoder_decoder:
        return model(input_ids=ids, decoder_input_ids=ids, **kwargs)
    return model(input_ids=ids, **kwargs)


@torch.no_grad()
def mean_attention(model: nn.Module, batches: Sequence[Tensor]) -> list[Tensor]:
    """Per self-attention module (module order), the attention probabilities of ``model`` (not yet synthesized)
    averaged over every sequence of ``batches`` (each (B, L) token ids, one length): (H, L, L) each."""
    was = model.config._attn_implementation
    model.set_attn_implementation("eager")  # the only implementation that returns its probabilities
    try:
        totals: list[Tensor] | None = None
        count = 0
        for ids in batches:
            out = _run(model, ids, output_attentions=True)
            probs = (list(out.encoder_attentions) + list(out.decoder_attentions) if model.config.is_encoder_decoder
                     else list(out.attentions))  # each (B, H, L, L)
            sums = [p.float().sum(0) for p in probs]  # (H, L, L)
            totals = sums if totals is None else [t + s for t, s in zip(totals, sums, strict=True)]
            count += ids.shape[0]
    finally:
        model.set_attn_implementation(was)
    if totals is None:
        raise ValueError("mean_attention needs at least one batch of token ids")
    return [t / count for t in totals]


@torch.no_grad()
def init_random_from_attention(model: nn.Module, means: Sequence[Tensor], eps: float = 1e-6) -> int:
    """Set the ``R`` table of every synthesized layer's R or Fix part (alone, or in a mixture without V, whose
    start :func:`~.api.synthesize` keeps at zero) to ``log(mean + eps)`` over the sample's L x L corner; the rest
    of R keeps its initialisation. ``means`` as :func:`mean_attention` returns them. Returns the tables set."""
    done = 0
    for target, mean in zip(self_attention_modules(model), means, strict=True):
        layer = target.module._modules.get(ATTRIBUTE)
        if layer is None:
            continue
        parts = layer.synth.parts if isinstance(layer.synth, Mixture) else [layer.synth]
        if any(p.name == "V" for p in parts):
            continue  # a grown mixture: R stays 0 so that it starts at the pretrained function
        for part in parts:
            if isinstance(part, Random):
                n = min(mean.shape[-1], part.max_len)
                part.R[:, :n, :n] = torch.log(mean[:, :n, :n] + eps).to(part.R.dtype)  # (H, n, n)
                done += 1
    return done


def pretrained_copy(model: nn.Module) -> nn.Module:
    """A frozen copy of ``model`` before synthesis, the teacher of :func:`distill`."""
    teacher = copy.deepcopy(model).eval()
    teacher.requires_grad_(False)
    return teacher


def _record(modules: list[nn.Module], store: dict[int, tuple]) -> list:
    handles = []
    for i, module in enumerate(modules):
        def pre(mod: nn.Module, args: tuple, kwargs: dict, i: int = i) -> None:
            store[i] = (args, kwargs)

        def post(mod: nn.Module, args: tuple, kwargs: dict, output: object, i: int = i) -> None:
            store[i] = (*store[i], output[0] if isinstance(output, tuple) else output)

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True))
    return handles


def distill(model: nn.Module, teacher: nn.Module, batches: Sequence[Tensor], steps: int, lr: float = 1e-2,
            ) -> list[float]:
    """Fit the synthesized layers' tensors (only theirs) so that each synthesized module gives the teacher's
    module output on the teacher's inputs to it: ``sum_l MSE(module_l(inputs_l), teacher_l(inputs_l))``.

    Args:
        model: the synthesized model; teacher: :func:`pretrained_copy` of it before synthesis.
        batches: (B, L) token ids, cycled; steps: optimizer steps (Adam, ``lr``).

    Returns:
        the loss of every step.
    """
    students = self_attention_modules(model)
    chosen = [i for i, s in enumerate(students) if s.module._modules.get(ATTRIBUTE) is not None]
    teachers = [t.module for t in self_attention_modules(teacher)]
    params = [p for i in chosen for p in students[i].module._modules[ATTRIBUTE].parameters() if p.requires_grad]
    if not params or steps <= 0:
        return []
    optimizer = torch.optim.Adam(params, lr=lr)
    store: dict[int, tuple] = {}
    handles = _record([teachers[i] for i in chosen], store)
    losses = []
    try:
        for step in range(steps):
            store.clear()
            with torch.no_grad():
                _run(teacher, batches[step % len(batches)], use_cache=False)  # the students reread no cache
            loss = torch.zeros(())
            for n, i in enumerate(chosen):
                args, kwargs, target = store[n]
                out = students[i].module(*args, **kwargs)
                loss = loss + F.mse_loss((out[0] if isinstance(out, tuple) else out).float(), target.float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    finally:
        for h in handles:
            h.remove()
    logger.info("distilled %d layers for %d steps: MSE %.4g -> %.4g", len(chosen), steps, losses[0], losses[-1])
    return losses
