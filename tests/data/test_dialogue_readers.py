"""Dialogue readers (ParlAI's two text layouts, JSONL, DailyDialog), their located errors, the exchanges and the
tokenized dialogue dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.data import DataError, build_tokenizer
from synthformer.data.sentinels import SentinelTokenizer
from synthformer.tasks.suites.dialogue.dataset import PARTNER, PERSONA, SELF, DialogueDataset, encode_source
from synthformer.tasks.suites.dialogue.reader import Dialogue, dialogue_exchanges, read_dialogues

# the layout of shared/data/personachat/valid_self_original_no_cands.txt
NUMBERED = """\
1 your persona: i read twenty books a year.
2 your persona: i only eat kosher.
3 hello what are doing today ?\ti am good , i just got off work .
4 i just got done watching a horror movie\ti rather read .
1 your persona: i have two dogs.
2 partner's persona: i like cars.
3 hi ! how are you doing tonight ?\ti'm doing great .\t\tcandidate a|candidate b
"""
# ParlAI's field layout of the same first dialogue
FIELDS = ("text:your persona: i read twenty books a year.\\nyour persona: i only eat kosher.\\nhello what are doing "
          "today ?\tlabels:i am good , i just got off work .\tepisode_done:False\n"
          "text:i just got done watching a horror movie\tlabels:i rather read .\tepisode_done:True\n")
FIRST = Dialogue(("i read twenty books a year.", "i only eat kosher."),
                 ("hello what are doing today ?", "i am good , i just got off work .",
                  "i just got done watching a horror movie", "i rather read ."), 1)


def _write(tmp_path: Path, text: str, name: str = "d.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_parlai_numbered_and_field_layouts_read_the_same_dialogue(tmp_path: Path) -> None:
    numbered = read_dialogues(_write(tmp_path, NUMBERED), "parlai")
    assert numbered[0] == FIRST
    assert numbered[1] == Dialogue(("i have two dogs.",), ("hi ! how are you doing tonight ?", "i'm doing great ."), 5)
    fields = read_dialogues(_write(tmp_path, FIELDS, "f.txt"), "parlai")
    assert fields == [FIRST]


def test_jsonl_and_dailydialog(tmp_path: Path) -> None:
    record = {"persona": list(FIRST.persona), "turns": list(FIRST.turns)}
    assert read_dialogues(_write(tmp_path, json.dumps(record) + "\n", "d.jsonl"), "jsonl") == [FIRST]
    daily = "Hi , Jim . __eou__ Hello ! __eou__ How are you ? __eou__\nA . __eou__ B . __eou__\n"
    dialogues = read_dialogues(_write(tmp_path, daily, "dialogues_train.txt"), "dailydialog")
    assert dialogues == [Dialogue((), ("Hi , Jim .", "Hello !", "How are you ?"), 1), Dialogue((), ("A .", "B ."), 2)]


@pytest.mark.parametrize(("fmt", "text", "line", "problem"), [
    ("parlai", "1 your persona: a.\n3 hi\tho\n", 2, "line number 3 does not follow 1"),
    ("parlai", "1 your persona: a.\n2 hi there\n", 2, "expected 'partner turn<TAB>response' (no tab found)"),
    ("parlai", "1 hi\tho\nhello\tthere\n", 2, "expected 'N text'"),
    ("parlai", "1 hi\tho\n2 your persona: late.\n", 2, "persona line after the dialogue's first turn"),
    ("parlai", "1 hi\t \n", 1, "empty response"),
    ("parlai", "1 your persona: a.\n1 hi\tho\n", 1, "dialogue has persona lines but no turns"),
    ("parlai", "text:hi\tepisode_done:True\n", 1, "ParlAI line without a 'labels:' field"),
    ("jsonl", '{"turns": ["a", "b"]}\n{"turns": ["a"]}\n', 2, "a dialogue needs at least 2 turns, got 1"),
    ("jsonl", '{"turns": ["a", "b"]}\n{"persona": "x", "turns": ["a", "b"]}\n', 2,
     "field 'persona' must be a list of strings"),
    ("jsonl", '{"turns": ["a", "b"]}\n{"turns": ["a", "b"\n', 2, "invalid JSON"),
    ("jsonl", '{"dialog": ["a", "b"]}\n', 1, "missing field 'turns'"),
    ("dailydialog", "A . __eou__ B . __eou__\nonly one __eou__\n", 2, "a dialogue needs at least 2 turns"),
    ("dailydialog", "A . __eou__ __eou__ B . __eou__\n", 1, "empty turn between two '__eou__' markers"),
    ("dailydialog", "A . __eou__ B . __eou__\n\n", 2, "empty line"),
])
def test_malformed_lines_are_located(tmp_path: Path, fmt: str, text: str, line: int, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as err:
        read_dialogues(path, fmt)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert problem in err.value.problem


def test_unknown_format_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown dialogue format 'xml'; valid: parlai, jsonl, dailydialog"):
        read_dialogues(_write(tmp_path, "x\n"), "xml")
    with pytest.raises(DataError, match="no dialogues found"):
        read_dialogues(_write(tmp_path, ""), "jsonl")


def test_exchanges_take_the_persona_speakers_turns_with_a_history_window() -> None:
    exchanges = dialogue_exchanges([FIRST], history=2)
    assert [e.response for e in exchanges] == ["i am good , i just got off work .", "i rather read ."]
    assert exchanges[0].history == ("hello what are doing today ?",)
    assert exchanges[1].history == ("i am good , i just got off work .", "i just got done watching a horror movie")
    no_persona = Dialogue((), ("a", "b", "c"), 1)  # DailyDialog: every turn after the first answers
    assert [(e.history, e.response) for e in dialogue_exchanges([no_persona], None)] == [(("a",), "b"),
                                                                                          (("a", "b"), "c")]
    with pytest.raises(ValueError, match="history must be >= 1"):
        dialogue_exchanges([FIRST], 0)


def test_dataset_marks_speakers_and_cuts_the_oldest_history_first() -> None:
    texts = [*FIRST.persona, *FIRST.turns]
    tok = SentinelTokenizer(build_tokenizer("word", texts, split="whitespace"), 3)
    exchange = dialogue_exchanges([FIRST], history=None)[1]
    ids, cut = encode_source(tok, exchange, None)
    sep = {tok.sentinel_id(n): n for n in (PERSONA, PARTNER, SELF)}
    assert not cut and [sep[i] for i in ids if i in sep] == [PERSONA, PERSONA, PARTNER, SELF, PARTNER]
    assert ids[-1] == tok.eos_id
    last_partner = len(ids) - 1 - ids[::-1].index(tok.sentinel_id(PARTNER))
    assert tok.decode(ids[last_partner + 1 : -1]) == exchange.history[-1]
    short, cut = encode_source(tok, exchange, 16)
    assert cut and len(short) == 16 and short[-1] == tok.eos_id
    # 15 places besides <eos>: the history keeps at least half of them (7, its newest tokens), the persona the rest
    assert short[-8:-1] == ids[-8:-1] and short[:8] == ids[:8]
    dataset = DialogueDataset(dialogue_exchanges([FIRST], 2), tok, max_src_len=16, max_tgt_len=4)
    item = dataset[0]
    assert item["src_ids"].numel() <= 16 and item["tgt_ids"].numel() == 4  # response cut to 3 tokens + <bos>
    assert dataset.length_report.truncated == 2 and dataset.indices == [0, 1]
    assert len(DialogueDataset(dialogue_exchanges([FIRST], 2), tok, 16, 4, overflow="skip")) == 0
    with pytest.raises(ValueError, match="speaker separators"):
        DialogueDataset([], build_tokenizer("word", texts))
