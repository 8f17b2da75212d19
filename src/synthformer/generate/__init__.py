"""Generation on the decoding cache: greedy and beam search for encoder-decoders, sampling for language models.

All functions use the model's incremental cache (one new token per step) when every token mixer has one, and
recompute the prefix at every step otherwise; ``use_cache=True/False`` forces either.

Example::

    from synthformer.generate import beam_search, sample

    out = beam_search(mt_model, src_ids, beam_size=4, alpha=0.6)  # the paper's MT decoding
    out.tokens, out.lengths, out.scores
    text_ids = sample(lm, [[bos]], max_new_tokens=50, top_p=0.9, generator=torch.Generator().manual_seed(0))
"""

from .output import GenerationOutput
from .sampling import filter_logits, sample
from .search import Stepper, beam_search, beam_search_loop, gnmt_length_penalty, greedy_loop, greedy_search
from .steppers import LMStepper, Seq2SeqStepper, resolve_use_cache

__all__ = [
    "GenerationOutput",
    "LMStepper",
    "Seq2SeqStepper",
    "Stepper",
    "beam_search",
    "beam_search_loop",
    "filter_logits",
    "gnmt_length_penalty",
    "greedy_loop",
    "greedy_search",
    "resolve_use_cache",
    "sample",
]
