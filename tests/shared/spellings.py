"""Every non-canonical spelling of a sealed blob that both services must refuse (422).

A blob travels as base64url without padding (docs/protocol.md §10.5); any other spelling
of the same or other bytes is refused, so one blob has exactly one text.
"""

from __future__ import annotations

from deniable.sealing import encode_blob

__all__ = ["ALPHABET", "noncanonical_spellings"]

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def noncanonical_spellings(raw: bytes) -> dict[str, str]:
    """Name -> text of ``raw`` (or of nothing) that is not its canonical spelling.

    ``raw`` must hold a ``-`` or ``_`` in its canonical text and a length that is not a
    multiple of 3 (so there is padding to add and trailing bits to set).
    """
    text = encode_blob(raw)
    assert ("-" in text or "_" in text) and len(raw) % 3, "pick another raw"
    last = ALPHABET.index(text[-1])
    return {
        "padded": text + "=" * (-len(text) % 4),
        "space inside": text[:8] + " " + text[8:],
        "newline after": text + "\n",
        "standard alphabet": text.replace("-", "+").replace("_", "/"),
        "trailing bits set": text[:-1] + ALPHABET[last ^ 1],
        "empty": "",
        "stars": "***",
        "spaced": "AAAA AAAA",
    }
