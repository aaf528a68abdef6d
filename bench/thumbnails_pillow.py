#!/usr/bin/env python3
"""What copyparty's Pillow thumbnailer does for a JPEG (copyparty/th_srv.py
`conv_pil`): open, `draft` (libjpeg's DCT scaling), `thumbnail`, save as
JPEG; over the files given, once each, in one process. Prints photos/s.
Used by bench/thumbnails.sh, pinned to one core."""
import io
import sys
import time

from PIL import Image

SIDE = (512, 512)
files = sys.argv[1:]
t0 = time.perf_counter()
for f in files:
    with Image.open(f) as im:
        im.draft("RGB", SIDE)
        im.thumbnail(SIDE, Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        im.convert("RGB").save(buf, "JPEG", quality=80)
dt = time.perf_counter() - t0
print(f"{len(files) / dt:.1f}")
