"""``deniable-aggregator key ...``: show and rotate the survey signing key.

``key show`` prints the key id, public key, rotation sequence and chain (never
the private key) and creates nothing.  ``key rotate`` replaces the key with a
new one and appends a link signed by the old key and endorsed by the new one to
the chain beside the key file (docs/key-rotation.md); running servers pick the
new key up within a second and sign every survey with it, and pinned devices
follow the chain.  Copy both files to every machine that serves the database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli_common import add_json, load_settings, print_json
from .terminal import EXIT_NOT_FOUND, _fail

__all__ = ["register"]


def _key_path(args: argparse.Namespace) -> Path:
    config = load_settings(args)
    path = Path(config["SIGNING_KEY_PATH"])
    if not path.exists():
        raise _fail(
            f"no signing key at {path}; run 'deniable-aggregator init' first "
            "(or give --data-dir, --signing-key or DENIABLE_HOME)",
            EXIT_NOT_FOUND,
        )
    return path


def cmd_key_show(args: argparse.Namespace) -> int:
    from . import signing

    path = _key_path(args)
    key = signing.load_key(path)
    document = key.public_document()
    if args.json:
        print_json({**document, "path": str(path), "chain_path": str(signing.chain_path(path))})
        return 0
    print(f"key id:     {key.key_id}")
    print(f"public key: {key.public_key} (Ed25519)")
    print(f"sequence:   {document['sequence']} rotation(s) since the first key")
    print(f"key file:   {path}")
    if key.encryption is not None:
        print(
            f"encryption: {key.encryption.key_id} (X25519, for sealed reports; "
            f"{len(key.encryption.retired)} retired key(s) kept) in "
            f"{signing.encryption_key_path(path)}"
        )
    if key.chain:
        print(f"chain file: {signing.chain_path(path)}")
        for link in key.chain:
            print(f"  {link['sequence']}: {link['previous_key_id']} -> {link['key_id']}")
    return 0


def cmd_key_rotate(args: argparse.Namespace) -> int:
    from . import signing

    path = _key_path(args)
    old, new = signing.rotate_key(path)
    if args.json:
        print_json(
            {"previous_key_id": old.key_id, "key_id": new.key_id, "sequence": len(new.chain)}
        )
    else:
        print(f"rotated signing key {old.key_id} -> {new.key_id} (sequence {len(new.chain)})")
        if new.encryption is not None:
            print(
                f"rotated encryption key -> {new.encryption.key_id} (the previous ones still "
                "open reports a relay holds)"
            )
    print(
        f"the chain is in {signing.chain_path(path)}; copy it, {path} and the encryption key "
        f"files ({signing.encryption_key_path(path).name}, "
        f"{signing.retired_encryption_path(path).name}) to every machine that serves this "
        "database; running servers switch within a second",
        file=sys.stderr,
    )
    return 0


def register(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``key show`` and ``key rotate`` to the command line."""
    key = commands.add_parser(
        "key",
        help="show or rotate the survey signing key",
        description="Show or rotate the Ed25519 key that signs surveys (docs/key-rotation.md).",
    )
    actions = key.add_subparsers(dest="key_command", metavar="ACTION", parser_class=parser_class)
    actions.required = True
    sub = actions.add_parser(
        "show",
        help="print the key id, public key and rotation chain",
        description="Print the public key, its id, its rotation sequence "
        "and chain. Creates nothing.",
    )
    add_json(sub, "the key document served at /api/v1/key, with the file paths")
    sub.set_defaults(func=cmd_key_show)
    sub = actions.add_parser(
        "rotate",
        help="replace the key; devices follow a link signed by the old key",
        description="Generate a new key, append a rotation link signed by the old key and "
        "endorsed by the new one to the chain file, and replace the key file (the old "
        "private key is overwritten: back it up first if you must keep it).",
    )
    add_json(sub, "the old and new key ids")
    sub.set_defaults(func=cmd_key_rotate)
