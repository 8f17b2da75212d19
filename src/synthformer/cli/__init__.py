"""The ``synthformer`` command line: ``train``, ``eval``, ``generate`` and ``compare`` (see :mod:`.main`)."""
