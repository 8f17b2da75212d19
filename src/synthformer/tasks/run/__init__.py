"""The running of a task: the run configuration (:mod:`.config`, :mod:`.task_config`), data preparation
(:mod:`.data`), training into a run directory (:mod:`.pipeline`, which alone writes the directory's files), the
rules of ``--resume`` (:mod:`.resume`), starting from a pretrained run (:mod:`.init_from`), reading a run back
(:mod:`.loading`), evaluation (:mod:`.evaluation`) and generation (:mod:`.generation`).

The public names are re-exported by :mod:`synthformer.tasks`; this package's ``__init__`` imports nothing, so
that the contract (:mod:`synthformer.tasks.contract`) can name the configuration's types without loading the
pipeline.
"""
