"""Generation from a trained run, text in and text out: the run's task type decides what generating means (LM
continuations by sampling, seq2seq outputs by beam search, classifier predictions, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract import Generated, GenerateOptions

if TYPE_CHECKING:
    from ..contract import LoadedRun

__all__ = ["Generated", "generate_texts"]


def generate_texts(run: LoadedRun, inputs: list[str], *, max_new_tokens: int | None = None, temperature: float = 1.0,
                   top_k: int | None = None, top_p: float | None = None, beam: int | None = None,
                   seed: int = 0, batch_size: int = 32, length_penalty: float | None = None,
                   min_length: int | None = None, no_repeat_ngram_size: int | None = None) -> list[Generated]:
    """Generate for each input text with a loaded run (:meth:`TaskType.generate` of its task type).

    * LM: sample a continuation of each prompt (``temperature`` 0 is greedy; ``top_k`` / ``top_p`` filter;
      ``seed`` makes the draws repeat). Prompts longer than the context keep their last tokens, and
      ``max_new_tokens`` is capped so prompt and continuation fit in the model's ``max_len``.
    * seq2seq, summarization, dialogue: decode each source with beam search (``beam``, default ``eval.beam`` of
      the run; 1 is greedy); ``length_penalty``, ``min_length`` and ``no_repeat_ngram_size`` default to the run's
      ``eval`` settings.
    * classification: the predicted label.

    Raises:
        ValueError: an empty LM prompt or bad sampling settings.
    """
    options = GenerateOptions(max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                              beam=beam, seed=seed, batch_size=batch_size, length_penalty=length_penalty,
                              min_length=min_length, no_repeat_ngram_size=no_repeat_ngram_size)
    return run.config.task.task_type.generate(run, inputs, options)
