"""QR codes of a survey's link for respondents, as SVG (``segno``), for printed notices.

One rendering for the command line (a file), the dashboard's ``/surveys/<id>/qr.svg``
and the QR drawn in the survey page, so the three cannot differ: error correction M
(15% of the code may be smudged), a 4-module quiet zone, black on white (a transparent
background disappears on a dark page).
"""

from __future__ import annotations

import io

__all__ = ["qr_inline", "qr_svg"]

SCALE = 4
BORDER = 4


def _code(url: str) -> object:
    import segno

    return segno.make(url, error="m")


def qr_svg(url: str) -> str:
    """A standalone SVG document of ``url``'s QR code, titled with the URL."""
    buffer = io.BytesIO()
    _code(url).save(  # type: ignore[attr-defined]
        buffer,
        kind="svg",
        scale=SCALE,
        border=BORDER,
        dark="#000",
        light="#fff",
        title=f"QR code of {url}",
        encoding="utf-8",
    )
    return buffer.getvalue().decode("utf-8")


def qr_inline(url: str, label: str) -> str:
    """The same code as an ``<svg>`` element for a page: an image named ``label``."""
    svg = _code(url).svg_inline(  # type: ignore[attr-defined]
        scale=SCALE,
        border=BORDER,
        dark="#000",
        light="#fff",
        title=label,
        svgclass="qr",
        omitsize=True,
    )
    return svg.replace("<svg ", '<svg role="img" aria-label="' + _attribute(label) + '" ', 1)


def _attribute(text: str) -> str:
    from html import escape

    return escape(text, quote=True)
