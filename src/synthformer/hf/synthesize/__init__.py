"""Synthesize a ``transformers`` model: its self-attention layers computed by synthformer's kinds (R, D, R+V, ...)
through ``transformers``' ``AttentionInterface``, its projections, positions, cache and ``generate()`` its own.

Example::

    from transformers import AutoModelForCausalLM
    from synthformer.hf.synthesize import from_pretrained, synthesize

    model = AutoModelForCausalLM.from_pretrained("my-llama/")
    synthesize(model, kind="R+V", max_len=256)     # grown: step 0 gives the pretrained logits
    model.save_pretrained("my-llama-rv/")
    again = from_pretrained("my-llama-rv/")         # the kinds and their weights come back
    # in any process, synthformer imported or not (the folder's auto_map, :mod:`.remote`):
    again = AutoModelForCausalLM.from_pretrained("my-llama-rv/", trust_remote_code=True)

Without ``trust_remote_code=True`` an Auto class takes ``transformers``' own class and drops the synthesized
tensors (the original attention runs).
"""

from .api import MAX_LAYER_PARAMS, from_pretrained, plan, synthesize, synthesized_class, synthesized_layers
from .backend import IMPLEMENTATION, register_backend
from .families import supported_model_types
from .layer import ModelDotProduct, SynthesizedAttention

__all__ = ["IMPLEMENTATION", "MAX_LAYER_PARAMS", "ModelDotProduct", "SynthesizedAttention", "from_pretrained",
           "plan", "register_backend", "supported_model_types", "synthesize", "synthesized_class",
           "synthesized_layers"]
