"""Hugging Face integration (the ``hf`` extra): ``SynthesizerConfig`` and Auto-class models wrapping the native ones.

Importing this package registers ``model_type = "synthesizer"`` with ``AutoConfig``, ``AutoModelForCausalLM``,
``AutoModelForSeq2SeqLM`` and ``AutoModelForSequenceClassification``. ``import synthformer`` never imports it, so
the core library works without ``transformers``.

Example::

    import synthformer.hf  # registers the Auto classes
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained("exported/")   # a folder written by 'synthformer export'
    tokenizer = AutoTokenizer.from_pretrained("exported/")
    ids = tokenizer("ROMEO:", return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=50, num_beams=4)
"""

from .auto import MODEL_CLASSES, register_auto_classes
from .cache import SynthesizerCache
from .causal_lm import SynthesizerForCausalLM
from .classification import SynthesizerForSequenceClassification
from .config import SynthesizerConfig
from .modeling_base import SynthesizerPreTrainedModel
from .seq2seq import SynthesizerForConditionalGeneration
from .synthesize.remote import install_load_warning

register_auto_classes()
install_load_warning()  # a plain load of a synthesized transformers folder says what it dropped

__all__ = [
    "MODEL_CLASSES",
    "SynthesizerCache",
    "SynthesizerConfig",
    "SynthesizerForCausalLM",
    "SynthesizerForConditionalGeneration",
    "SynthesizerForSequenceClassification",
    "SynthesizerPreTrainedModel",
    "register_auto_classes",
]
