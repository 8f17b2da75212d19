"""Can each tokenizer kind spell every registered text-to-text task's targets and prefixes? The check that
refuses a run whose labels would decode as something else (an IMDb SentencePiece vocabulary without byte
fallback cannot spell ``not_entailment``)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from synthformer.data import build_tokenizer
from synthformer.data.spelling import first_misspelling, spells, unspellable
from synthformer.data.tokenization import TOKENIZER_KINDS
from synthformer.data.tokenizer_spm import BYTE_FALLBACK_MIN_PIECES
from synthformer.tasks.suites.glue.table import GLUE_TASKS

pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")

# The module's tokenizers (a module fixture: the IMDb trainings, most of the module's time) are built once, in
# the one pytest-xdist worker (--dist loadgroup) that runs all its tests, instead of once in each worker.
pytestmark = pytest.mark.xdist_group("imdb-tokenizers")


def declared(name: str) -> dict[str, list[str]]:
    task = GLUE_TASKS[name]
    return {f"{name} target": list(task.target_strings or ()), f"{name} prefix": [task.prefix]}


@pytest.fixture(scope="module")
def imdb_text(shared_data: Path) -> list[str]:
    """3,000 IMDb reviews: the pretraining text of the T5 setting (``_`` about once per 80,000 characters)."""
    with open(shared_data / "imdb" / "train.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in itertools.islice(fh, 3000)]


#: The reviews the sentencepiece kind trains on where what is checked comes from its byte fallback (on from
#: BYTE_FALLBACK_MIN_PIECES requested pieces, whatever the text's size): a third of the 3,000 still gives every
#: piece asked for (2,000 and 8,100) at a third of the training time, SentencePiece's being about linear in the text.
SPM_REVIEWS = 1000


@pytest.fixture(scope="module")
def tokenizers(imdb_text: list[str]) -> dict[str, object]:
    """Every kind trained on the IMDb reviews with its defaults (sentencepiece on :data:`SPM_REVIEWS` of them)."""
    assert BYTE_FALLBACK_MIN_PIECES <= 2000  # the sentencepiece kind below spells through its byte fallback
    return {kind: build_tokenizer(kind, imdb_text[:SPM_REVIEWS] if kind == "sentencepiece" else imdb_text,
                                  None if kind in ("byte", "char", "word") else 2000)
            for kind in TOKENIZER_KINDS}


def test_every_task_declares_its_targets():
    for name, task in GLUE_TASKS.items():
        if task.scoring in ("wsc", "record"):
            assert task.target_strings is None, name  # text of the data: checked on the loaded examples
        else:
            assert task.target_strings and all(isinstance(t, str) and t for t in task.target_strings), name
    scores = GLUE_TASKS["stsb"].target_strings
    assert scores[:3] == ("0.0", "0.2", "0.4") and scores[-1] == "5.0" and len(scores) == 26


@pytest.mark.parametrize("name", sorted(GLUE_TASKS))
@pytest.mark.parametrize("kind", [k for k in TOKENIZER_KINDS if k != "word"])
def test_each_kind_on_each_task(tokenizers, kind, name):
    """Every kind but ``word`` trained on IMDb with its defaults spells every task's targets and prefix."""
    assert unspellable(tokenizers[kind], declared(name)) == []


def test_the_word_kind_is_refused_for_labels_it_cannot_spell(tokenizers):
    """``word`` decodes with spaces around punctuation and knows only the words it saw: it is refused, never
    silently wrong."""
    word = tokenizers["word"]
    for name in GLUE_TASKS:
        for wrong in unspellable(word, declared(name)):
            assert wrong.decoded != wrong.text and word.decode(word.encode(wrong.text)).strip() == wrong.decoded
    found = {m.text: m.decoded for m in unspellable(word, declared("rte"))}
    assert "not_entailment" in found and found["not_entailment"] != "not_entailment"


def test_the_old_imdb_sentencepiece_settings_fail(imdb_text):
    old = build_tokenizer("sentencepiece", imdb_text, 8100, character_coverage=0.9995, byte_fallback=False)
    wrong = first_misspelling(old, declared("rte"))
    assert wrong is not None and wrong.text == "not_entailment" and "⁇" in wrong.decoded
    failing = {name for name in GLUE_TASKS if unspellable(old, declared(name))}
    # exactly the tasks whose labels hold an underscore
    assert failing == {n for n, t in GLUE_TASKS.items() if any("_" in s for s in t.target_strings or ())}
    message = wrong.message(old)
    assert "'not_entailment'" in message and "byte_fallback=true" in message and "\n" not in message


def test_default_sentencepiece_spells_characters_it_never_saw(imdb_text):
    assert BYTE_FALLBACK_MIN_PIECES <= 8100  # unseen characters are spelled through the byte fallback
    tok = build_tokenizer("sentencepiece", [t.replace("_", " ").replace("$", "") for t in imdb_text[:SPM_REVIEWS]],
                          8100)
    assert tok.vocab_size == 8100 and tok.base.byte_fallback
    assert spells(tok, "not_entailment") and spells(tok, "$5 `code` QXZ 東京")


def test_a_small_sentencepiece_keeps_every_character_of_its_text():
    texts = ["the cat sat on the mat_mat $1", "a dog ran"] * 50  # too small for the 256 byte pieces
    tok = build_tokenizer("sentencepiece", texts, 40 + 100)
    assert tok.vocab_size < BYTE_FALLBACK_MIN_PIECES
    assert spells(tok, "mat_mat $1")  # coverage 1.0: the rare '_' and '$' stay pieces
    assert not spells(tok, "Q")  # never seen: <unk>, which the run's check reports


def test_each_distinct_string_is_reported_once_in_order():
    tok = build_tokenizer("char", ["abc d"])
    found = unspellable(tok, {"x target": ["ab", "az", "az"], "y target": ["az", "q d"]})
    assert [(m.what, m.text) for m in found] == [("x target", "az"), ("y target", "q d")]


def test_the_refusal_says_when_byte_fallback_is_on_and_its_ways_out_work():
    """Byte fallback is the default only from BYTE_FALLBACK_MIN_PIECES pieces: the message says so (not "the
    default for new vocabularies"), and both settings it names give a vocabulary that spells the label."""
    texts = ["rte entailment not entailment the cat sat on the mat", "a dog ran"] * 50  # no '_'
    small = build_tokenizer("sentencepiece", texts, 40 + 100)
    wrong = first_misspelling(small, declared("rte"))
    assert wrong is not None and wrong.text == "not_entailment"
    message = wrong.message(small)
    least = BYTE_FALLBACK_MIN_PIECES + 100
    assert f"by default only from {BYTE_FALLBACK_MIN_PIECES:,} pieces" in message
    assert "the default for new" not in message
    assert f"task.vocab_size={least} or more" in message and "task.tokenizer_options.byte_fallback=true" in message
    assert f"this one has {small.base.vocab_size:,} pieces" in message and "\n" not in message
    for fixed in (build_tokenizer("sentencepiece", texts, least),
                  build_tokenizer("sentencepiece", texts, 40 + 100 + 256, byte_fallback=True)):
        assert fixed.base.byte_fallback and spells(fixed, "not_entailment")
    assert not small.base.byte_fallback
