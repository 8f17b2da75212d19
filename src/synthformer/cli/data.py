"""``synthformer data list`` and ``synthformer data get NAME``: the named data sets configs read (``task.data``)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from ._common import CliError, HelpFormatter, add_common_options

__all__ = ["register", "run_get", "run_list"]

_EPILOG = """\
examples:
  synthformer data list                          # every named data set: its source, and where it is on this machine
  synthformer data get tiny_shakespeare          # fetch it (through Hugging Face datasets) into the cache runs read
  synthformer data get sst2 --out ~/data         # write ~/data/sst2/; runs find it with SYNTHFORMER_DATA=~/data

A config names its data set (task.data: sst2). A run looks for it in $SYNTHFORMER_DATA/NAME, then
../shared/data/NAME (the project's machines and CI), then the cache of fetched copies
($SYNTHFORMER_CACHE/data, default ~/.cache/synthformer/data); else it fetches it there through 'datasets', or,
without the network (HF_DATASETS_OFFLINE=1), stops with one line saying how to provide it. task.train=PATH (and
task.valid, task.test) replaces a split with your own file. --from PATH reads a local copy instead of the
source (a folder in the hub data set's layout, or the source's file or archive): no network needed.
docs/data.md, "Where the data comes from", has the table of sources and licences.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``data`` verb with its ``list`` and ``get`` actions."""
    p = sub.add_parser(
        "data", help="list the named data sets, or fetch one", formatter_class=HelpFormatter, epilog=_EPILOG,
        description="The named data sets that configs read (task.data): where each comes from, whether this "
                    "machine has it, and fetching one into the local layout the task readers read.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="every named data set, its source, and where it is here",
                                 formatter_class=HelpFormatter, epilog=_EPILOG)
    listing.add_argument("--json", action="store_true", help="print the list as JSON")
    add_common_options(listing)
    listing.set_defaults(handler=run_list, default_log_level=logging.WARNING)
    get = actions.add_parser("get", help="fetch a named data set and write its local layout",
                             formatter_class=HelpFormatter, epilog=_EPILOG)
    get.add_argument("name", metavar="NAME", help="a named data set (synthformer data list)")
    get.add_argument("--out", metavar="DIR", default=None,
                     help="write DIR/NAME (default: the cache of fetched copies, which runs read)")
    get.add_argument("--from", dest="source", metavar="PATH", default=None,
                     help="read this local copy instead of the source: a folder in the hub data set's layout, or "
                          "the source's file or archive")
    get.add_argument("--overwrite", action="store_true", help="fetch again over a copy already in DIR/NAME")
    add_common_options(get)
    get.set_defaults(handler=run_get, default_log_level=logging.INFO)
    for action in (listing, get):
        action.set_defaults(verb_parser=action)


def run_list(args: argparse.Namespace) -> int:
    """Print every named data set with its source and where it is on this machine."""
    from synthformer.data import CATALOG, cache_root, status

    rows = [status(entry) for entry in CATALOG.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        here = f"here: {r['local']} ({r['found_in']})" if r["local"] else "not on this machine"
        hf = f"; in the Hugging Face cache: {r['hf_cache']}" if r["hf_cache"] else ""
        print(f"{r['name']:<{width}}  {r['title']}, {r['task']}")
        print(f"{'':<{width}}  source: {r['source']}; licence: {r['licence']}")
        print(f"{'':<{width}}  {here}{hf}")
    print(f"fetched copies go to {cache_root()} (synthformer data get NAME)")
    return 0


def run_get(args: argparse.Namespace) -> int:
    """Fetch one data set and write its local layout; print where it is."""
    from synthformer.data import FetchError, cache_root, fetch, fetch_blocker, get_data_set, holds

    entry = get_data_set(args.name)
    root = Path(args.out).expanduser() if args.out else cache_root()
    target = root / entry.name
    if holds(entry, target) and not args.overwrite:
        print(f"{entry.name}: already in {target} (--overwrite fetches it again)")
        return 0
    if args.source is None:
        blocker = fetch_blocker()
        if blocker is not None:
            raise CliError(f"cannot fetch {entry.name} from {entry.source.describe()} here ({blocker}); run this "
                           f"on a machine with the network, or give a local copy with --from PATH")
    elif not Path(args.source).exists():
        raise CliError(f"--from: no file or folder at {args.source}")
    try:
        folder = fetch(entry, root, location=args.source)
    except FetchError as err:
        raise CliError(f"cannot fetch {entry.name}: {err}") from None
    print(f"{entry.name}: written to {folder} (from {args.source or entry.source.describe()})")
    if args.out:
        print(f"runs find it with SYNTHFORMER_DATA={root}")
    if entry.note:
        print(f"note: {entry.note}")
    return 0
