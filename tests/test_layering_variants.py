"""No module decides by a model variant's name, except the one that defines the variants' parts.

A variant (``"transformer"``, ``"t5"``, ...) is a composition of parts (``synthformer.models.variant_parts``),
defined in ``synthformer.models.variants``: layers, stacks and models call the parts they are given. So a
comparison with a variant's name anywhere else (``config.variant == "t5"``, ``variant in ("t5", ...)``, or a
registered name compared with whatever holds it) is a choice made in the wrong place, and this scan names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from synthformer.models import list_variants

from .test_layering import PACKAGE_DIR, _write_package, module_names, parse_module

#: The module allowed to decide by a variant's name: the one that defines the variants as parts.
VARIANTS_MODULE = "synthformer.models.variants"
#: Packages whose ``variant`` means something else: a study's variants are its arms (a kind and its settings,
#: named by the user), not model variants. A registered variant's name compared there is still reported.
OTHER_VARIANTS: dict[str, str] = {"synthformer.study": "a study's arms"}
#: Settings spelt like a variant: Hugging Face's ``model_type`` ``"t5"`` names its architecture, not ours.
SAME_SPELLING: frozenset[str] = frozenset({"model_type"})


def _name(node: ast.expr) -> str | None:
    """The identifier of a name or an attribute (``variant`` of ``config.variant``), else None."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _strings(node: ast.expr) -> set[str]:
    """The string constants of an operand: the constant itself, or those of a tuple, list or set."""
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def variant_comparisons(root: Path, variant_names: set[str], allowed: str = VARIANTS_MODULE) -> list[str]:
    """``path:line: expression`` for each comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) outside the
    ``allowed`` module in which one operand is a name or attribute called ``variant``, or a string constant that is
    one of ``variant_names`` (alone or in a tuple, list or set) unless another operand is a :data:`SAME_SPELLING`
    setting; and each dict display that maps the key ``"variant"`` to such a name (the settings a check requires,
    compared one by one: the comparison with the name happens through the dict)."""
    found = []
    for module, path in module_names(root).items():
        if module == allowed:
            continue
        other_meaning = any(module == p or module.startswith(p + ".") for p in OTHER_VARIANTS)
        for node in ast.walk(parse_module(path)):
            if isinstance(node, ast.Dict) and not other_meaning:
                if any(isinstance(k, ast.Constant) and k.value == "variant" and _strings(v) & variant_names
                       for k, v in zip(node.keys, node.values, strict=True)):
                    found.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}: {ast.unparse(node)}")
                continue
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            names = {_name(o) for o in operands}
            by_attribute = "variant" in names and not other_meaning
            by_string = bool(set().union(*map(_strings, operands)) & variant_names) and not names & SAME_SPELLING
            if by_attribute or by_string:
                found.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_variant_comparison_outside_the_module_that_defines_the_variants():
    found = variant_comparisons(PACKAGE_DIR, set(list_variants()))
    assert found == [], ("give the layers a part (synthformer.models.variant_parts.VariantParts) instead of "
                         "comparing the variant's name:\n" + "\n".join(found))


def test_the_scan_reads_the_registered_variants():
    """Guards against a scan that looks for nothing (and so passes)."""
    assert {"transformer", "t5"} <= set(list_variants())


def test_the_scan_finds_planted_comparisons_and_spares_the_variants_module(tmp_path):
    root = _write_package(tmp_path, {
        "models/variants.py": "def f(c):\n    return c.variant == 't5'\n",  # the defining module may
        "models/stacks.py": (
            "def f(config, variant):\n"
            "    a = getattr(config, 'variant', 'x') != 't5'\n"  # a registered name, whatever holds it
            "    b = variant in ('transformer', 'other')\n"
            "    c = config.variant is None\n"
            "    return config.norm == 'pre'\n"  # not a variant: spared
        ),
        "hf/convert.py": "def f(model_type):\n    return model_type not in ('t5', 'mt5')\n",  # HF's name: spared
        "hf/check.py": "NEEDS = {'variant': 't5', 'norm': 'pre'}\nOTHER = {'variant_count': 't5'}\n",
        "study/curves.py": "def f(r, v):\n    return r.variant == v.name or r.variant == 't5'\n",
    })
    found = variant_comparisons(root, {"transformer", "t5"}, allowed="synthformer.models.variants")
    assert found == [
        "synthformer/hf/check.py:1: {'variant': 't5', 'norm': 'pre'}",  # checked through a dict
        "synthformer/models/stacks.py:2: getattr(config, 'variant', 'x') != 't5'",
        "synthformer/models/stacks.py:3: variant in ('transformer', 'other')",
        "synthformer/models/stacks.py:4: config.variant is None",
        "synthformer/study/curves.py:2: r.variant == 't5'",  # a study's arm, but compared with a variant's name
    ]
