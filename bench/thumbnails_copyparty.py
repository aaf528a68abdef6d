#!/usr/bin/env python3
"""copyparty's own Pillow thumbnailer (copyparty/th_srv.py, `ThumbSrv.conv_pil`
→ `conv_image_pil` → `fancy_pillow`, the installed package's code, not a copy)
over the JPEGs given, once each, in this one process; prints photos/s.

The settings are the ones that give what wirespeed's `?thumbnail` gives: a
JPEG (`?th=j`) of at most 512 px on its longest side, uncropped
(`--th-size 512x512`, format `jf`), at copyparty's default quality
(`--th-qv 40`, progressive). `--best-pillow` instead runs the fastest Pillow
path for the same output (`draft` to 1/4 scale, then `thumbnail`, quality
80), a stricter reference than copyparty's own code. Used by
bench/thumbnails.sh, pinned to one core."""
import os
import sys
import tempfile
import time
import types

from PIL import Image
from copyparty import th_srv

FLAGS = {"thsize": "512x512", "th_qv": 40, "th_qvx": 64}


def copyparty_pil(paths):
    # A ThumbSrv without its hub: the methods conv_pil reaches are
    # copyparty's; only the RAM accounting (a no-op here) and the log stub.
    srv = th_srv.ThumbSrv.__new__(th_srv.ThumbSrv)
    srv.log = lambda *a, **k: None
    srv.wait4ram = lambda need, tpath: None
    vn = types.SimpleNamespace(flags=FLAGS)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for i, p in enumerate(paths):
            srv.conv_pil(p, os.path.join(tmp, f"{i}.jpg"), "jf", vn)
        dt = time.perf_counter() - t0
        sizes = [os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp)]
    return dt, sizes


def best_pillow(paths):
    import io

    side = (512, 512)
    sizes = []
    t0 = time.perf_counter()
    for p in paths:
        with Image.open(p) as im:
            im.draft("RGB", side)
            im.thumbnail(side, Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            im.convert("RGB").save(buf, "JPEG", quality=80)
            sizes.append(buf.tell())
    return time.perf_counter() - t0, sizes


args = sys.argv[1:]
run = copyparty_pil
if args and args[0] == "--best-pillow":
    run, args = best_pillow, args[1:]
dt, sizes = run(args)
print(f"mean thumbnail {sum(sizes) // max(len(sizes), 1)} bytes", file=sys.stderr)
print(f"{len(args) / dt:.1f}")
