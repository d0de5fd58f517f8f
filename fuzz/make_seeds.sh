#!/usr/bin/env bash
# Remakes the seed corpora in fuzz/corpus/ (committed; a few KiB to 47 KiB each). Needs build-asan/ (run
# scripts/sanitize.sh once) for the store's, the analysis's and the report's seeds, written by
# saddlescope's own writers.
set -euo pipefail
cd "$(dirname "$0")/.."
c=fuzz/corpus
rm -rf "$c" && mkdir -p "$c"/{fuzz_idx,fuzz_config,fuzz_study,fuzz_mnist_archive,fuzz_png}
build-asan/fuzz/fuzz_make_seeds "$c"

# An analysis.json that `saddlescope analyze` wrote on a real study (the planted fault, docs/results/), its
# runs absent: the report of what was analysed elsewhere.
{ printf '@@ F analysis/analysis.json\n'; cat docs/results/analysis/fault/analysis.json; } >"$c/fuzz_report/fault-analysis-only"

# Configs and studies: the shipped ones.
cp examples/*.toml "$c/fuzz_config/"
cp studies/*.toml "$c/fuzz_study/"

# IDX: images (2, 2, 3) and labels (2), as MNIST's files are laid out.
printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x03\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xff' >"$c/fuzz_idx/images"
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x07\x03' >"$c/fuzz_idx/labels"

# MNIST archives (tar streams; the fuzz target gzips them): the package's layout with short files, and
# members that are links, a directory and a FIFO in place of the data files.
t=$(mktemp -d)
mkdir -p "$t/package/data"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  cp "$c/fuzz_idx/images" "$t/package/data/$f"
done
tar -C "$t" --format=gnu --owner=0 --group=0 --mtime=@0 -cf "$c/fuzz_mnist_archive/layout.tar" package
rm "$t/package/data/train-images-idx3-ubyte" "$t/package/data/t10k-labels-idx1-ubyte"
ln -s /etc/passwd "$t/package/data/train-images-idx3-ubyte"
mkfifo "$t/package/data/t10k-labels-idx1-ubyte"
rm "$t/package/data/train-labels-idx1-ubyte" && mkdir "$t/package/data/train-labels-idx1-ubyte"
tar -C "$t" --format=gnu --owner=0 --group=0 --mtime=@0 -cf "$c/fuzz_mnist_archive/special.tar" package
rm -rf "$t"

# PNG: 8-bit grey, RGB and RGBA images of 3x4 pixels, one row filter per row (0 to 3, then Paeth).
python3 - "$c/fuzz_png" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
for colour, channels in ((0, 1), (2, 3), (6, 4)):
    rows = b''.join(bytes([y % 5]) + bytes((7 * x + 31 * y) & 255 for x in range(3 * channels)) for y in range(4))
    png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 3, 4, 8, colour, 0, 0, 0)) +
           chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))
    open(f'{sys.argv[1]}/{channels}-channels.png', 'wb').write(png)
PY
du -sh "$c"
