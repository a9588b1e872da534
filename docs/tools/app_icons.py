"""Draws the installed inbox's icons (bot/web/static/icon-192.png and icon-512.png): a white raised hand on the
inbox's accent blue, the whole square filled so that one file serves as both an `any` and a `maskable` icon (the hand
stays inside the centre circle a maskable icon keeps). Standard library only (zlib, struct): the project has no image
library, and the icons change rarely. Run `uv run python docs/tools/app_icons.py` after changing the drawing."""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

ACCENT = (0x34, 0x51, 0xD1)
WHITE = (0xFF, 0xFF, 0xFF)
SAMPLES = 4
"""Samples per pixel along each axis, for smooth edges."""
FINGERS = [  # (x, top, bottom) of each finger, in a unit square
    (0.395, 0.285, 0.56),
    (0.485, 0.245, 0.56),
    (0.575, 0.275, 0.56),
    (0.660, 0.345, 0.58),
]
FINGER_RADIUS = 0.043
THUMB = ((0.375, 0.67), (0.285, 0.515))
PALM = (0.352, 0.50, 0.703, 0.765, 0.085)  # left, top, right, bottom, corner radius


def _segment_distance(x: float, y: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - (ax + t * dx), y - (ay + t * dy))


def _in_palm(x: float, y: float) -> bool:
    left, top, right, bottom, radius = PALM
    qx = max(left + radius - x, 0.0, x - (right - radius))
    qy = max(top + radius - y, 0.0, y - (bottom - radius))
    return math.hypot(qx, qy) <= radius


def in_hand(x: float, y: float) -> bool:
    """Whether the point (unit square, y down) is on the hand."""
    if _in_palm(x, y) or _segment_distance(x, y, *THUMB) <= FINGER_RADIUS:
        return True
    return any(_segment_distance(x, y, (fx, top), (fx, bottom)) <= FINGER_RADIUS for fx, top, bottom in FINGERS)


def draw(size: int) -> bytes:
    """The icon as RGB rows, each led by PNG's filter byte 0."""
    rows = bytearray()
    step = 1.0 / (size * SAMPLES)
    for row in range(size):
        rows.append(0)
        for column in range(size):
            hits = sum(
                in_hand((column * SAMPLES + i + 0.5) * step, (row * SAMPLES + j + 0.5) * step)
                for i in range(SAMPLES)
                for j in range(SAMPLES)
            )
            share = hits / (SAMPLES * SAMPLES)
            rows.extend(round(a + (w - a) * share) for a, w in zip(ACCENT, WHITE, strict=True))
    return bytes(rows)


def png(size: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(draw(size), 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    static = Path(__file__).resolve().parents[2] / "bot" / "web" / "static"
    for size in (192, 512):
        (static / f"icon-{size}.png").write_bytes(png(size))
        print(f"wrote {static / f'icon-{size}.png'}")
