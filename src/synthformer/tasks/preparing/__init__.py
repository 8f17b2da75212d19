"""``synthformer prepare``: a run config's data tokenized into a prepared corpus (:mod:`synthformer.data.prepared`).

:mod:`.plan` decides the splits, the units of work and the prepare's identity; :mod:`.tokenizer` gives the
tokenizer (a file, or trained on a bounded seeded sample); :mod:`.work` tokenizes one unit into its shards;
:mod:`.pipeline` runs it all (lock, resume, worker processes, progress, assembly, manifest).
"""

from .pipeline import DEFAULT_UNIT_BYTES, PrepareError, PrepareResult, check_prepared, prepare_corpus
from .tokenizer import DEFAULT_SAMPLE_BYTES

__all__ = ["DEFAULT_SAMPLE_BYTES", "DEFAULT_UNIT_BYTES", "PrepareError", "PrepareResult", "check_prepared",
           "prepare_corpus"]
