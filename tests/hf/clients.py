"""What the client tests share: three tiny trained runs exported as Hugging Face folders, and a fresh offline
interpreter to load them in (no ``import synthformer`` before the client loads the folder by path)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from synthformer.cli.main import main
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def train_and_export(tmp: Path, only: tuple[str, ...] = ("lm", "rev", "cls")) -> dict[str, tuple[Path, Path]]:
    """{name: (run directory, exported folder)} for a byte-level LM (``lm``: R+V, 32 positions), the digit-reversal
    encoder-decoder (``rev``) and the SST-2-style classifier (``cls``), those in ``only``, each trained for a few
    steps."""
    configs = {"lm": lm_config(tmp), "rev": seq2seq_config(), "cls": classification_config(tmp)}
    configs["lm"]["task"].update(tokenizer="byte", max_len=32)
    configs = {name: configs[name] for name in only}
    root = logging.getLogger()  # the CLI configures the root logger: put it back as it was
    level, handlers = root.level, list(root.handlers)
    out = {}
    try:
        for name, config in configs.items():
            run_dir, folder = tmp / name, tmp / f"{name}_hf"
            assert main(["train", str(write_yaml(tmp / f"{name}.yaml", config)), "--run-dir", str(run_dir),
                         "-q"]) == 0
            assert main(["export", str(run_dir), str(folder), "-q"]) == 0
            out[name] = (run_dir, folder)
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
    return out


def fresh_env(tmp: Path) -> dict[str, str]:
    """The environment of a fresh client process: offline, with its own cache of remote-code modules."""
    return {**os.environ, **OFFLINE, "HF_MODULES_CACHE": str(tmp / "hf_modules"), "HF_HOME": str(tmp / "hf_home")}


def run_fresh(script: str, args: dict, tmp: Path, timeout: int = 900) -> dict:
    """Run ``script`` (which prints one JSON line last) in a new interpreter with ``args`` as JSON in argv[1].
    ``timeout`` guards against a hang only: on a busy machine importing the clients alone takes minutes."""
    done = subprocess.run([sys.executable, "-c", script, json.dumps(args)], capture_output=True, text=True,
                          env=fresh_env(tmp), timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
