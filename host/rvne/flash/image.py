"""The 4 MiB flash image of the emulated board (QEMU lx60 / lx106), laid out
like the ESP32-S3's: boot stub at 0x0, partition table at 0x8000, firmware in
the factory app partition, the blob in slot `rvne_a` with a selector record
naming it (or in `rvne`, the single-partition layout before two slots;
docs/flash-layout.md, rvne.flash.slots). partitions.csv is the single source of
the layout.

    python -m rvne.flash.image --boot boot.bin --app rvne.bin \\
        --partitions partitions.csv -o flash.img      (what `make` runs)
    python -m rvne.flash.image --partitions partitions.csv --blob m.rvne -o flash.img
                                                      (for `rvne-vdev --flash`: no firmware needed)
"""

import argparse
import os
import sys

from ..errors import FlashError, PartitionError, RvneError, naming
from ..io import files, signed
from ..io.atomic import write_atomic
from . import partition, slots

FLASH_SIZE = 4 * 1024 * 1024      # QEMU's lx60 pflash must be exactly this
# Sizes an image may have: the lx60 boards' 4 MiB, and what Espressif's QEMU
# takes for an ESP32-S3's flash (target qemu-esp32s3: 8 MiB, esptool merge_bin).
FLASH_SIZES = (2 << 20, 4 << 20, 8 << 20, 16 << 20)
SIZES_TEXT = f"{FLASH_SIZE} (4 MiB: the lx60 boards) or 2, 8 or 16 MiB (an ESP32-S3's flash)"
ERASED = 0xFF
BOOT_OFFSET = 0x0
BOOT_MAX = partition.TABLE_OFFSET  # the stub must end before the table


def _factory(table):
    for p in table:
        if p.type == partition.APP and p.subtype == partition.SUBTYPES[partition.APP]["factory"]:
            return p
    raise PartitionError("the partition table has no factory app partition; add one to partitions.csv")


def build_image(boot: bytes, app: bytes, table: partition.PartitionTable) -> bytes:
    """Erased flash with the boot stub, the table and the app in place."""
    table.verify(flash_size=FLASH_SIZE)
    if len(boot) > BOOT_MAX:
        raise FlashError(f"boot stub is {len(boot)} bytes, more than the {BOOT_MAX} before the partition table")
    factory = _factory(table)
    if len(app) > factory.size:
        raise FlashError(f"firmware is {len(app)} bytes, larger than the factory partition "
                         f"({factory.size} bytes at 0x{factory.offset:x}); enlarge it in partitions.csv")
    img = bytearray([ERASED]) * FLASH_SIZE
    img[BOOT_OFFSET:BOOT_OFFSET + len(boot)] = boot
    t = table.to_binary()
    img[partition.TABLE_OFFSET:partition.TABLE_OFFSET + len(t)] = t
    img[factory.offset:factory.offset + len(app)] = app
    return bytes(img)


def read_table(image, *, strict=False) -> partition.PartitionTable:
    """The partition table the image itself carries (as the firmware reads it).
    `strict` (before writing into it): the table must carry its MD5 row and
    pass gen_esp32part's checks against this flash, so no partition lies
    over the boot stub, the table or past the end (docs/flash-layout.md)."""
    if len(image) not in FLASH_SIZES:
        raise FlashError(f"flash image is {len(image)} bytes, expected {SIZES_TEXT}; "
                         "write a fresh one with `rvne image IMG`")
    end = partition.TABLE_OFFSET + partition.TABLE_MAX
    table = partition.PartitionTable.from_binary(image[partition.TABLE_OFFSET:end], require_md5=strict)
    if strict:
        try:
            table.verify(flash_size=len(image))
        except PartitionError as exc:
            raise PartitionError(f"its partition table is unusable: {exc}; write a fresh image with "
                                 "`rvne image IMG`") from None
    return table


def with_partition(image, data, label) -> bytes:
    """A copy of `image` whose partition `label` holds `data` followed by
    erased bytes. `data` is not validated (tests put corrupt blobs there)."""
    return _with_writes(image, [(read_table(image).find(label), bytes(data))])


def with_model(image, data, record=True) -> bytes:
    """A copy of `image` holding `data` as `rvne flash` writes a model, by
    the layout of the image's own table: slot A and a selector record naming
    it (its last four bytes as the blob's CRC), or the single `rvne`.
    `record=False`: `data` goes raw into slot A under an erased selector, so
    the firmware boots slot A whatever it holds (tests boot corrupt blobs)."""
    lay = slots.layout(read_table(image))
    if record:
        return _with_writes(image, slots.flash_writes(lay, bytes(data)))
    writes = [(lay.first, bytes(data))]
    if lay.selector is not None:
        writes.append((lay.selector, b""))
    return _with_writes(image, writes)


def _with_writes(image, writes) -> bytes:
    img = bytearray(image)
    for p, data in writes:
        if len(data) > p.size:
            raise FlashError(f"{len(data)} bytes do not fit partition {p.name!r} ({p.size} bytes at 0x{p.offset:x})")
        if p.end > len(img):
            raise FlashError(f"partition {p.name!r} ends at 0x{p.end:x}, past the 0x{len(img):x}-byte image")
        img[p.offset:p.offset + len(data)] = data
        img[p.offset + len(data):p.end] = bytes([ERASED]) * (p.size - len(data))
    return bytes(img)


def write_blob(image_path, blob_bytes, label=None):
    """`rvne flash BLOB --image IMG`: validate the blob as the firmware will
    load it (rules 1-14), lock the image (two flashes of one image would
    otherwise each write over the other's copy), check its own partition
    table, find the model partitions there and write them: slot A and the
    selector, or the single `rvne` (rvne.flash.slots); `label` writes that one
    partition instead, raw. On any refusal the image is left untouched.
    Returns the Partition the blob went into."""
    signed.check_model(bytes(blob_bytes))
    blob_bytes = bytes(blob_bytes)
    fd, st = files.lock_regular(image_path)
    try:
        if st.st_size not in FLASH_SIZES:   # before reading: the size alone refuses a 6 GiB file
            raise FlashError(f"{image_path}: flash image is {st.st_size} bytes, expected {SIZES_TEXT}; "
                             "write a fresh one with `rvne image IMG`")
        image = files.read_fd(fd, image_path, st.st_size)
        try:
            table = read_table(image, strict=True)
            writes = ([(table.find(label), blob_bytes)] if label is not None
                      else slots.flash_writes(slots.layout(table), blob_bytes))
        except (PartitionError, FlashError) as exc:
            raise type(exc)(f"{image_path}: {exc}") from None
        p = writes[0][0]
        if len(blob_bytes) > p.size:
            raise FlashError(f"blob is {len(blob_bytes)} bytes, larger than partition {p.name!r} "
                             f"({p.size} bytes at 0x{p.offset:x}); enlarge it in partitions.csv and rebuild the image")
        write_atomic(image_path, _with_writes(image, writes), prefix=".flash-")
    finally:
        os.close(fd)     # releases the lock, after the rename
    return p


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m rvne.flash.image",
                                 description="Build the emulated board's 4 MiB flash image.")
    ap.add_argument("--boot", help="boot stub binary (flash offset 0; default none: the virtual device needs none)")
    ap.add_argument("--app", help="firmware binary (factory app partition; default none)")
    ap.add_argument("--partitions", required=True, help="partitions.csv")
    ap.add_argument("--blob", help="optional blob to write as `rvne flash` does")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    try:
        boot = files.read(args.boot, FLASH_SIZE) if args.boot else b""
        app = files.read(args.app, FLASH_SIZE) if args.app else b""
        table = partition.read_csv(args.partitions)
        image = build_image(boot, app, table)
        if args.blob:
            data = files.read(args.blob, FLASH_SIZE)
            signed.check_model(data)
            image = with_model(image, data)
        write_atomic(args.output, image, prefix=".flash-")
    except (RvneError, OSError) as exc:
        print(f"flash_image: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
