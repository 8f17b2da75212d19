"""Prepared corpora, the task side: a run config's data tokenized once into shards (``synthformer prepare``), and a
run that trains from them (``task.prepared``). The format, reader and writer are :mod:`synthformer.data.prepared`.

What a task type says about it is one object, :class:`.preparation.Preparation`, returned by its
:meth:`~synthformer.tasks.contract.TaskType.preparation` (None: the type cannot be prepared). Preparing:
:mod:`.plan` decides the splits, the units of work and the prepare's identity; :mod:`.tokenizer` gives the
tokenizer (a file, or trained on a bounded seeded sample); :mod:`.work` tokenizes one unit into its shards and
:mod:`.runner` runs units in worker processes; :mod:`.pipeline` runs it all (lock, resume, progress, assembly,
manifest); :mod:`.repair` rewrites damaged shards and :mod:`.moved` recognises a finished corpus whose sources moved
or are gone. Reading back: :mod:`.reading` checks the corpus against the run and builds its datasets.
"""

from .pipeline import DEFAULT_UNIT_BYTES, PrepareError, PrepareResult, check_prepared, prepare_corpus
from .preparation import Preparation
from .tokenizer import DEFAULT_SAMPLE_BYTES

__all__ = ["DEFAULT_SAMPLE_BYTES", "DEFAULT_UNIT_BYTES", "PrepareError", "PrepareResult", "Preparation",
           "check_prepared", "prepare_corpus"]
