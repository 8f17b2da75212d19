"""Messages must be true: what a resume on another number of processes changes, the command that continues a
torchrun run, what tells two tokenizers apart, and ``train.keep_best`` checked against the metrics the task reports
when the config is read (before any checkpoint is written)."""

from __future__ import annotations

import logging

import pytest

from synthformer.cli.train import continue_command
from synthformer.common.config import ConfigError, to_dict
from synthformer.data import ByteTokenizer, CharTokenizer, FixedVocabTokenizer
from synthformer.data.tokenizer_base import tokenizer_difference
from synthformer.tasks import load_run_config
from synthformer.train import TrainConfig
from synthformer.train.resume import process_change, warn_resumed_changes
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml

# -- resuming on another number of processes -------------------------------------------------------------------------


def state(world: int, batch: int) -> dict:
    return {"world_size": world, "config": to_dict(TrainConfig(batch_size=batch))}


def test_the_same_global_batch_on_another_number_of_processes_keeps_the_examples_and_says_so():
    level, message = process_change(state(2, 4), TrainConfig(batch_size=8), 1)
    assert level == logging.INFO and "data order" not in message
    assert message == ("checkpoint was written by 2 process(es), resuming on 1 with the same global batch (8 "
                       "examples): every step sees the examples it would have seen; only rounding (the gradient sums "
                       "run in another order) and the random numbers differ")
    assert process_change(state(2, 4), TrainConfig(batch_size=4), 2) is None


def test_another_global_batch_or_an_iterable_of_batches_is_a_warning_naming_what_changes():
    level, message = process_change(state(2, 4), TrainConfig(batch_size=4), 1)
    assert level == logging.WARNING
    assert "the global batch changes from 2 x 4 = 8 to 1 x 4 = 4 examples" in message
    assert message.endswith("keep train.batch_size x processes = 8 to continue the same run")
    level, message = process_change(state(2, 4), TrainConfig(batch_size=8), 1, map_style=False)
    assert level == logging.WARNING and "an iterable of ready batches, dealt to the processes one batch each" in message


def test_a_new_total_of_steps_is_left_to_the_schedules_own_line(caplog):
    with caplog.at_level(logging.INFO, logger="synthformer"):
        warn_resumed_changes(state(1, 4), TrainConfig(batch_size=4, steps=2000, log_every=5), 1)
    assert "resuming with changed settings: log_every: 10 -> 5" in caplog.text and "steps:" not in caplog.text


# -- the command that continues a run --------------------------------------------------------------------------------

ARGV = ["train", "my config.yaml", "train.lr=3e-4", "--run-dir", "runs/x", "--resume"]


def test_a_plain_run_is_told_the_plain_command():
    assert continue_command(ARGV, {}) == continue_command(ARGV, {"WORLD_SIZE": "1"}) == (
        "synthformer train 'my config.yaml' train.lr=3e-4 --run-dir runs/x --resume")


def test_a_torchrun_run_is_told_the_torchrun_command():
    env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "RANK": "0"}
    assert continue_command(ARGV, env) == ("torchrun --standalone --nproc_per_node 2 -m synthformer.cli.main train "
                                           "'my config.yaml' train.lr=3e-4 --run-dir runs/x --resume")
    several = continue_command(ARGV, {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"})
    assert several.startswith("torchrun --nnodes 2 --nproc_per_node 8 <the launch's --rdzv-* options> -m "
                              "synthformer.cli.main train ") and several.endswith("--resume (on each machine)")
    assert "synthformer train" not in several


# -- what tells two tokenizers apart ---------------------------------------------------------------------------------

NAMES = ("the corpus's", "the one given")


def test_tokenizers_of_another_kind_are_described_once_each():
    text = tokenizer_difference(CharTokenizer.train(["abc"]), ByteTokenizer(), NAMES)
    assert text == "the corpus's is char with 7 ids, the one given byte with 260 ids"


def test_tokenizers_of_one_kind_and_size_are_told_apart_by_a_token_or_a_setting():
    text = tokenizer_difference(CharTokenizer.train(["abc"]), CharTokenizer.train(["abd"]), NAMES)
    assert text == "both are char with 7 ids, but id 6 is 'c' in the corpus's and 'd' in the one given"
    a, b = FixedVocabTokenizer(["x", "y"]), FixedVocabTokenizer(["x", "y"], ignore=["y"])
    assert tokenizer_difference(a, b, NAMES) == ("both are fixed with 6 ids and the same tokens, but other settings "
                                                 "(ignore)")


def test_the_prepared_corpus_names_each_tokenizer_once(tmp_path):
    from synthformer.data.prepared import PreparedCorpus, write_prepared

    folder = tmp_path / "prep"
    write_prepared(folder, CharTokenizer.train(["abc"]), {"train": [("abcabc",)], "valid": [("cab",)]})
    with pytest.raises(ConfigError) as caught:
        PreparedCorpus.open(folder, tokenizer=CharTokenizer.train(["abd"]))
    message = str(caught.value)
    assert ("the corpus was tokenized with another tokenizer than the one given: both are char with 7 ids, but id 6 "
            "is 'c' in the corpus's and 'd' in the one given; use the corpus's tokenizer.json") in message


# -- train.keep_best against the metrics the task reports ------------------------------------------------------------


def load(tmp_path, config: dict, *overrides: str):
    return load_run_config(write_yaml(tmp_path / "run.yaml", config), list(overrides))


def test_keep_best_of_a_metric_the_task_does_not_report_is_refused_when_the_config_is_read(tmp_path):
    with pytest.raises(ConfigError, match=r"^train.keep_best: the evaluation during training of task.type 'lm' "
                                          r"reports no 'accuracy' \(it reports: loss, perplexity, bits_per_character"):
        load(tmp_path, lm_config(tmp_path), "train.keep_best=accuracy")
    assert load(tmp_path, lm_config(tmp_path), "train.keep_best=eval_loss").train.keep_best == "eval_loss"
    assert load(tmp_path, classification_config(tmp_path), "train.keep_best=accuracy").train.keep_best == "accuracy"


def test_keep_best_follows_what_the_evaluation_during_training_computes(tmp_path):
    # the algorithmic tasks report exact match and chrF (their generator's defaults), not BLEU
    assert load(tmp_path, seq2seq_config(), "train.keep_best=exact_match").train.keep_best == "exact_match"
    with pytest.raises(ConfigError, match=r"reports no 'bleu' \(it reports: loss, exact_match, chrf;"):
        load(tmp_path, seq2seq_config(), "train.keep_best=bleu")
    assert load(tmp_path, seq2seq_config(), "train.keep_best=bleu", "eval.metrics=[loss,bleu]").train.keep_best
    # no decoding during training: nothing decoded to keep the best by
    with pytest.raises(ConfigError, match=r"reports no 'exact_match' \(it reports: loss;"):
        load(tmp_path, seq2seq_config(), "train.keep_best=exact_match", "eval.train_decode_examples=0")
    # rouge reports rouge1 .. rougeLsum, once it is asked for
    with pytest.raises(ConfigError, match="reports no 'rougeL'"):
        load(tmp_path, seq2seq_config(), "train.keep_best=rougeL")
    assert load(tmp_path, seq2seq_config(), "train.keep_best=rougeL", "eval.metrics=[loss,rouge]").train.keep_best


def test_the_shared_rouge_keys_are_the_rouge_scorers():
    from synthformer.tasks.contract import TaskType
    from synthformer.tasks.suites.summarization.metrics import ROUGE_TYPES

    assert TaskType.metric_keys["rouge"] == ROUGE_TYPES
