"""Pillow side of tests/unit/test_decode.c (run with Debian's /usr/bin/python3).

  pillow_reference.py synth DIR        writes the synthetic JPEGs the test decodes
  pillow_reference.py ref DIR FILE...  writes DIR/<i>.ref, Pillow's pixels of the i-th FILE

A .ref file is a text line "c h w maxval" then the samples as little-endian uint16, planar
[c][h][w]: PNG at the file's own depth (maxval 255 or 65535), JPEG at 8 bits with the EXIF
orientation applied (ImageOps.exif_transpose). Palette images expand to RGB, alpha is dropped,
1-bit images become 0/255 gray, as cdl's decoder does. Pillow reduces 16-bit colour PNGs to 8
bits, so those are read by png16_samples below (checked against Pillow's high bytes).
"""
import sys
import warnings
import zlib

import numpy as np
from PIL import Image, ImageOps

ORIENTATION = 0x0112
warnings.simplefilter("ignore")  # palette-transparency notes are not failures


def gradient(w, h):
    """An RGB picture whose every flip and rotation differs (red grows right, green down)."""
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 250 // (w - 1), y * 250 // (h - 1), (x * y) % 64 + 96], axis=-1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def exif_orientation(value, big_endian=False):
    """Raw APP1 Exif payload holding only IFD0 Orientation = value."""
    order = ">" if big_endian else "<"
    tiff = (b"MM" if big_endian else b"II") + np.array([42], order + "u2").tobytes()
    tiff += np.array([8], order + "u4").tobytes() + np.array([1], order + "u2").tobytes()
    entry = np.array([ORIENTATION, 3], order + "u2").tobytes() + np.array([1], order + "u4").tobytes()
    entry += np.array([value, 0], order + "u2").tobytes()
    return b"Exif\0\0" + tiff + entry + b"\0\0\0\0"


def synth(out):
    photo = gradient(48, 32)
    photo.save(f"{out}/progressive.jpg", quality=90, progressive=True, subsampling=2)
    photo.convert("L").save(f"{out}/gray.jpg", quality=90)
    photo.convert("L").save(f"{out}/gray_progressive.jpg", quality=90, progressive=True)
    small = gradient(24, 16)
    for value in range(1, 9):
        small.save(f"{out}/orient_{value}.jpg", quality=95, subsampling=0, exif=exif_orientation(value))
    small.save(f"{out}/orient_6_mm.jpg", quality=95, subsampling=0, exif=exif_orientation(6, True))
    # A valid 8x8 JPEG whose SOF0 header then claims 16385 x 16385 pixels.
    gradient(8, 8).save(f"{out}/huge_header.jpg", quality=90)
    data = bytearray(open(f"{out}/huge_header.jpg", "rb").read())
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = (16385).to_bytes(2, "big") * 2
    open(f"{out}/huge_header.jpg", "wb").write(bytes(data))


def unfilter(raw, h, stride, bpp):
    """PNG scanline filters undone (non-interlaced): rows of stride bytes."""
    out = np.zeros((h + 1, stride), np.int64)  # row 0: the zero row above the image
    for y in range(h):
        kind, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]
        cur, up = np.frombuffer(line, np.uint8).astype(np.int64), out[y]
        if kind == 2:
            cur = (cur + up) & 255
        elif kind in (1, 3, 4):
            for x in range(stride):
                left = cur[x - bpp] if x >= bpp else 0
                corner = up[x - bpp] if x >= bpp else 0
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up[x]) // 2
                else:
                    p = left + up[x] - corner
                    pa, pb, pc = abs(p - left), abs(p - up[x]), abs(p - corner)
                    pred = left if pa <= pb and pa <= pc else up[x] if pb <= pc else corner
                cur[x] = (cur[x] + pred) & 255
        out[y + 1] = cur
    return out[1:]


def png16_samples(path):
    """[c][h][w] samples of a non-interlaced 16-bit PNG, alpha dropped."""
    data, pos, idat = open(path, "rb").read(), 8, b""
    while pos < len(data):
        n, kind = int.from_bytes(data[pos : pos + 4], "big"), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
            color, interlace = body[9], body[12]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert interlace == 0, f"{path}: interlaced 16-bit PNG"
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    rows = unfilter(zlib.decompress(idat), h, w * channels * 2, channels * 2)
    values = (rows[:, 0::2] << 8 | rows[:, 1::2]).reshape(h, w, channels)
    return values[:, :, : 3 if channels >= 3 else 1].transpose(2, 0, 1)


def pixels(path):
    im = Image.open(path)
    if im.format == "PNG" and im.mode in ("RGB", "RGBA") and open(path, "rb").read(25)[24] == 16:
        values = png16_samples(path)
        assert (values >> 8 == np.array(im.convert("RGB")).transpose(2, 0, 1)).all()
        return values, 65535
    if im.format == "JPEG":
        im = ImageOps.exif_transpose(im)
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        return np.array(im).astype(np.uint16)[None], 65535
    if im.mode in ("1", "L", "LA"):
        return np.array(im.convert("L"))[None], 255
    if im.mode in ("P", "PA", "RGB", "RGBA"):
        return np.array(im.convert("RGB")).transpose(2, 0, 1), 255
    raise SystemExit(f"{path}: mode {im.mode} has no reference conversion")


def ref(out, files):
    for i, path in enumerate(files):
        values, maxval = pixels(path)
        c, h, w = values.shape
        with open(f"{out}/{i}.ref", "wb") as f:
            f.write(f"{c} {h} {w} {maxval}\n".encode())
            f.write(values.astype("<u2").tobytes())


if __name__ == "__main__":
    if sys.argv[1] == "synth":
        synth(sys.argv[2])
    else:
        ref(sys.argv[2], sys.argv[3:])
