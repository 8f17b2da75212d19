"""The token-mixing study's settings (docs/results/mixing.md): the kinds, the learning-rate grid, every benchmark
setting with the grid whose choices it trains at, and the settings dropped with why. ``mixing_study.py`` trains
them; the page's tables, its figures and ``mixing_status.py`` read them through it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import yaml
from records import ROOT

KINDS: tuple[str, ...] = ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V", "Conv", "LightConv", "DynamicConv")
LRS: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
SEEDS = 3


@dataclass(frozen=True)
class Setting:
    """One benchmark setting: its family (MQAR, MAD: the page's table it is a column of), the learning-rate grid
    whose choices it trains at (:data:`LR_SETTING`'s key; a family's main grid is named as the family), its config
    and overrides."""

    name: str
    family: str
    grid: str
    config: str
    overrides: tuple[str, ...] = ()

    @cached_property  # read once per setting: harvest asks it for every run
    def steps(self) -> int:
        """The training budget in steps: the config's ``train.steps`` (an override wins). A harvested run counts for
        this setting only if it trained this many steps, so the rows of an earlier budget stay in the record as
        history (the page's first MQAR grid) without being chosen from or tabled as current."""
        steps = self.option("train.steps")
        if steps is not None:
            return int(steps)
        return int(yaml.safe_load((ROOT / self.config).read_text(encoding="utf-8"))["train"]["steps"])

    def option(self, key: str) -> str | None:
        """The value this setting's overrides give ``key`` (e.g. ``task.generator_options.num_pairs``), else None
        (the config's own value holds)."""
        for o in self.overrides:
            name, _, value = o.partition("=")
            if name == key:
                return value
        return None


def _mqar(seq_len: int, pairs: int, width: int = 128) -> Setting:
    """An MQAR setting: ``pairs`` pairs in ``seq_len`` tokens, the tail after them full of queries. A width other
    than 128 has its own grid (``mqar-dWIDTH``): at width 64, V at the rate its width-128 grid chose (3e-4) stays
    at the guess where 1e-3 learns the task (the calibration table), so a rate chosen at one width does not carry
    to another."""
    suffix = f"-d{width}" if width != 128 else ""
    queries = (seq_len + 1 - 2 * pairs) // 2
    return Setting(f"mqar-{seq_len}x{pairs}{suffix}", "mqar", f"mqar{suffix}", "configs/mixing_mqar.yaml",
                   (f"task.generator_options.seq_len={seq_len}", f"task.generator_options.num_pairs={pairs}",
                    f"task.generator_options.num_queries={queries}", f"task.max_len={seq_len}",
                    f"model.d_model={width}", f"model.d_ff={2 * width}"))


def _mad(task: str, seq_len: int, heads: int = 1, steps: int | None = None, options: tuple[str, ...] = ()) -> Setting:
    """A MAD task of ``seq_len`` tokens at MAD's data defaults (the generator's, ``options`` overriding some) in
    ``configs/mixing_mad.yaml``'s model and budget, or with ``heads`` heads and a budget of ``steps`` where V does
    not learn the task in that one (every kind of the task then trains so: same width, depth, heads and budget). A
    budget other than the config's also keeps the rows of the earlier setting out of the table
    (:attr:`Setting.steps`); heads or data options alone would not."""
    if task == "compression":
        return Setting("compression", "mad", "mad", "configs/mixing_compression.yaml")
    extra = (*options, *((f"model.n_heads={heads}",) if heads != 1 else ()),
             *((f"train.steps={steps}",) if steps else ()))
    return Setting(task, "mad", "mad", "configs/mixing_mad.yaml",
                   (f"task.generator=mixing:{task}", f"task.max_len={seq_len}", *extra))


#: Every setting, in training order within a seed.
SETTINGS: tuple[Setting, ...] = (
    _mqar(64, 2), _mqar(64, 4), _mqar(64, 8), _mqar(64, 8, 64),
    # fuzzy recall: with one head V answered 0.25 of the queries after 1,000 steps and 0.46 after 3,000 (rising);
    # with 4 heads 0.82 after 3,000 (calibration rows mad-fuzzy_recall-V-*): MAD's task, 4 heads, 3,000 steps.
    # Selective copying: with one head V stopped at half the copies (3,000 steps); with 4 heads it copied 0.90 of
    # them at MAD's 256 tokens and 0.97 at 128 (16 to copy in both) in 3,000 steps, the shorter in about a third of
    # the time (calibration rows mad-selective_copy-*): 128 tokens, 4 heads, 3,000 steps. Noisy recall: with one
    # head and 1,000 steps V learned it on seed 0 only (0.32 on seeds 1 and 2, its plateau); with 4 heads both
    # seeds learn it by step 1,500 (calibration rows mad-noisy_recall-V-h4-s3000-seed*): 4 heads, 3,000 steps
    _mad("recall", 128), _mad("noisy_recall", 128, heads=4, steps=3000),
    _mad("fuzzy_recall", 128, heads=4, steps=3000),
    _mad("selective_copy", 128, heads=4, steps=3000, options=("task.generator_options.seq_len=128",)),
    _mad("memorization", 32), _mad("compression", 32),
)
#: grid -> the setting its learning rates are chosen on (seed 0, validation split). MQAR's middle setting at width
#: 128 serves the numbers of pairs, width 64 has its own (each kind its own rate, so a kind's rate is never
#: V's unless its own grid says so); the MAD tasks' rates are chosen on in-context recall (MAD sweeps every task
#: setting, this CPU cannot).
LR_SETTING: dict[str, str] = {"mqar": "mqar-64x8", "mqar-d64": "mqar-64x8-d64", "mad": "recall"}
#: Settings that were in :data:`SETTINGS` and left it, with why: their recorded rows stay as history, their run
#: folders are not harvested. 16 pairs: V itself stayed at the ``1 / pairs`` guess (3,000 steps at two rates, 6,000
#: at 1e-3, and 128 tokens with 48 queries: the calibration table), so the setting says nothing about the others.
#: Width 32 at 8 pairs: V stayed at the guess at each rate of its own grid (0.116, 0.127, 0.131 on validation), and
#: at 4 pairs reached 0.25 at 1e-3 and 0.50 at 3e-3 (the calibration table): below what V learns in this budget, so
#: the width axis is 64 and 128 (Zoology's smallest width is 64 too).
DROPPED: dict[str, str] = {"mqar-64x16": "V did not learn 16 pairs in this budget (docs/results/mixing.md)",
                           "mqar-64x8-d32": "V did not learn 8 pairs at width 32 at any rate of its grid "
                                            "(docs/results/mixing.md)"}
#: Grids that train at another grid's choices instead of their own (borrower -> lender). None now: the MAD tasks
#: borrowed MQAR's rates at first, and V at its MQAR rate (3e-4) did not learn in-context recall in MAD's 1,000
#: steps (0.31, where 1e-3 reaches 0.99: the calibration table), so MAD has its own grid; width 64 trained its seed
#: 0 at MQAR's choices too, with V at the guess.
RATES_FROM: dict[str, str] = {}


def setting(name: str) -> Setting:
    """The setting called ``name``."""
    for s in SETTINGS:
        if s.name == name:
            return s
    raise KeyError(f"no setting {name!r}; known: {', '.join(s.name for s in SETTINGS)}")


def families() -> list[str]:
    """The benchmark families, in the order of :data:`SETTINGS`."""
    return list(dict.fromkeys(s.family for s in SETTINGS))
