"""Hugging Face integration (the ``hf`` extra): ``SynthesizerConfig`` and the Auto-class models wrapping the native ones."""
