"""``enzh keys add|list|remove --db FILE``: the API keys of ``enzh serve --api-keys FILE`` (docs/server.md).

``add`` prints the new key once (the store keeps only its hash); ``list`` shows each key's id (the start of
its hash), name and limits; ``remove`` takes the key or its id, or ``--name``. Changes apply to a running server
at once.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from enzh.serve.keys import KeyRecord, KeyStore, KeyStoreError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("keys", help="manage the API keys of `enzh serve --api-keys FILE`")
    actions = p.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a key (printed once: only its hash is stored)")
    list_ = actions.add_parser("list", help="list the keys (ids, names, limits; never the keys)")
    remove = actions.add_parser("remove", help="remove a key, given in full or by the id `list` shows")
    for action in (add, list_, remove):
        action.add_argument("--db", required=True, metavar="FILE", help="the key store (SQLite); add creates it")
    add.add_argument("--name", default="", help="a label (who the key is for)")
    add.add_argument("--req-limit", type=int, metavar="N", help="requests/minute (default: the server's; 0 = none)")
    add.add_argument("--char-limit", type=int, metavar="N", help="characters/minute (default: the server's; 0 = none)")
    add.add_argument("--key", help="store this key instead of a new random one (e.g. one moved from elsewhere)")
    remove.add_argument("key", nargs="?", help="the key, or its id (one that starts with '-' goes after `--`)")
    remove.add_argument("--name", help="remove every key with this name instead")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "add":
        with KeyStore(args.db, create=True) as store:
            key = store.add(args.key, name=args.name, req_limit=args.req_limit, char_limit=args.char_limit)
        print(key)
        print("enzh keys: keep this key now; the store holds only its hash", file=sys.stderr)
        return 0
    with KeyStore(args.db) as store:
        if args.action == "list":
            records = store.records()
            print("\n".join(_line(r) for r in records) if records else "There are no API keys")
            return 0
        return _remove(store, args)


def _remove(store: KeyStore, args: argparse.Namespace) -> int:
    if (args.key is None) == (args.name is None):
        print("enzh keys remove: give a key (or its id), or --name", file=sys.stderr)
        return 2
    try:
        removed = store.remove_named(args.name) if args.name is not None else [store.remove(args.key)]
    except KeyStoreError as exc:
        print(f"enzh keys remove: {exc}", file=sys.stderr)
        return 1
    if not removed:
        print(f"enzh keys remove: no key is named {args.name!r}", file=sys.stderr)
        return 1
    for record in removed:
        print(f"removed {record.key_id} {record.name}".rstrip())
    return 0


def _limit(value: int | None) -> str:
    return "default" if value is None else "none" if value == 0 else str(value)


def _line(record: KeyRecord) -> str:
    """id, requests/min, characters/min, created, name."""
    limits = f"req/min={_limit(record.req_limit)} chars/min={_limit(record.char_limit)}"
    return f"{record.key_id}  {limits}  {record.created}  {record.name}".rstrip()
