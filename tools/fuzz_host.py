"""Coverage-guided fuzzing of the host readers with atheris (libFuzzer for
Python): every reader of untrusted bytes either accepts its input or refuses
it with its named error, never another exception (docs/files.md).

Targets: rvne (blob rules 1-14 and `inspect`), one per foreign format (lwt,
burnpack, milblob, cnn2, safetensors: detection, read with data checks,
decoding of every tensor that passed), detect (all formats through content
detection), npy (the frames reader), npz (the weights reader), pt (a
torch.save'd state dict, rvne.io.torchfile and rvne.io.state_dict), reply (the
serial reply parser and INFO's validation), partition (a flash image's or
a board's partition table, checked as `rvne flash` checks it).

    python tools/fuzz_host.py TARGET --runs 20000       # what CI runs, shorter
    python tools/fuzz_host.py TARGET --seconds 3600    # the long run; the corpus
                                                       # (build/fuzz/host-TARGET) grows
    python tools/fuzz_host.py TARGET --coverage        # line coverage of the readers by the corpus

The corpus is seeded from the test fixtures (tests/fmt_fixtures, the
example blob, valid reply lines). A crash writes the input to
crash-<sha1> in the working directory and exits non-zero.
"""

import argparse
import hashlib
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))        # the fixture writers

FORMATS = ("lwt", "burnpack", "milblob", "cnn2", "safetensors")
TARGETS = ("rvne", *FORMATS, "detect", "npy", "npz", "pt", "reply", "partition")
MAX_LEN = 1 << 16
PT_DIMS = (8, 2, 1, 4, 1, 3)


# -- seeds ---------------------------------------------------------------------
def seeds(target):
    """Valid inputs from the test fixtures: the fuzzer mutates from there."""
    import numpy as np

    from rvne.io import upstream_init
    from rvne.link import protocol

    if target == "rvne":
        return [upstream_init.init_blob(), upstream_init.init_blob(fp16=True),
                upstream_init.init_blob((8, 2, 1, 4, 1, 3))]
    if target in FORMATS or target == "detect":
        from test_fmt_cli import MAKERS

        names = FORMATS if target == "detect" else (target,)
        return [MAKERS[n]()[0] for n in names]
    if target == "npy":
        out = []
        for a in (np.zeros((3, 16), np.float32), np.arange(12, dtype=np.float64).reshape(4, 3),
                  np.asfortranarray(np.ones((2, 5), np.float16))):
            b = io.BytesIO()
            np.save(b, a)
            out.append(b.getvalue())
        return out
    if target == "npz":
        from rvne.io import blob, weights as weights_io

        parsed = blob.parse_loadable(upstream_init.init_blob((8, 2, 1, 4, 1, 3)))
        b = io.BytesIO()
        arrays = {k: v for k, v in parsed.tensors().items()}
        np.savez(b, **arrays, **{weights_io.DIMS_KEY: np.array(str(parsed.header.dims))})
        return [b.getvalue()]
    if target == "pt":
        import torch

        from rvne.torch import TemporalHead

        torch.manual_seed(0)
        sd = TemporalHead(PT_DIMS).state_dict()
        out = []
        for obj in (sd, {"model": {f"module.{k}": v for k, v in sd.items()}, "epoch": 3},
                    {**{k: v.half() for k, v in sd.items()}, "rvne.dims": str(PT_DIMS)}):
            b = io.BytesIO()
            torch.save(obj, b)
            out.append(b.getvalue())
        return out
    if target == "reply":
        return [protocol.build_reply(7, {"n": 2, "logits": protocol.encode_f32(np.arange(6, dtype=np.float32))}),
                protocol.build_error(0, "E_CRC", "bad line"),
                protocol.build_reply(3, {"fw": "0.1.0", "port": "posix", "status": "loaded", "reason": "OK",
                                         "dims": "16,4,1,32,2,4", "dtype": "fp32", "crc": "DC807956",
                                         "blob_len": 41244, "window": 100, "arena": 51200,
                                         "line_max": 16384, "clock": "ns"})]
    if target == "partition":
        from rvne.flash import partition

        return [partition.read_csv(os.path.join(ROOT, "partitions.csv")).to_binary()]
    raise ValueError(target)


def seed_corpus(target, directory):
    os.makedirs(directory, exist_ok=True)
    for data in seeds(target):
        name = hashlib.sha1(data).hexdigest()
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


# -- targets -------------------------------------------------------------------
def make_target(target):
    """A function of one input's bytes that raises only on a real bug."""
    import numpy as np

    from rvne.io import blob, inspect, npyfile
    from rvne.link import protocol
    from rvne.link.device import Info
    from rvne.errors import RvneError
    from rvne.io.formats import base, detect

    def rvne(data):
        try:
            blob.parse_loadable(data)
        except RvneError:
            pass
        inspect.inspect_buffer(data)
        inspect.inspect_buffer(data, exact_length=False)

    def foreign(data, only=None):
        src = base.Source(data, "fuzz")
        mod = detect(src)
        if mod is None or mod == "rvne" or (only and mod.NAME != only):
            return
        report = mod.read(src, data=True)
        report.as_dict()
        if not report.valid:
            assert report.error.code.startswith("E_"), report.error
            return
        for t in report.tensors:
            try:
                mod.tensor_array(src, t)
            except base.FormatError:
                pass

    def npy(data):
        try:
            a = npyfile.load(data)
        except npyfile.NpyError:
            return
        assert a.nbytes == len(data) - npyfile.header(data)[3]

    holder = []      # one memory file, made on first use: libFuzzer's exit() skips any cleanup

    def as_file(data):
        """A path whose file holds `data` (the readers of .npz and .pt open paths)."""
        if not holder:
            holder.append(os.memfd_create("rvne-fuzz"))
        fd = holder[0]
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        return f"/proc/self/fd/{fd}"

    def npz(data):
        from rvne.io import weights as weights_io

        try:
            weights_io.load_npz(as_file(data))
        except RvneError:
            pass

    def pt(data):
        from rvne.io import weights as weights_io

        path = as_file(data)
        for prefix in (None, "model."):
            try:
                weights_io.load_pt(path, dims=PT_DIMS, prefix=prefix)
            except RvneError as exc:
                assert str(exc) and "\n" not in str(exc), repr(exc)

    def reply(data):
        try:
            r = protocol.parse_reply(data)
        except protocol.DeviceError:
            return
        try:
            Info.from_reply(r)
        except protocol.DeviceError:
            pass
        if "logits" in r.fields:
            try:
                protocol.decode_f32(r.fields["logits"])
            except protocol.DeviceError:
                pass

    def table(data):
        from rvne.flash import image as flash_image, partition

        try:
            t = partition.PartitionTable.from_binary(data, require_md5=True)
            t.verify(flash_size=flash_image.FLASH_SIZE)
        except partition.PartitionError:
            pass

    if target == "rvne":
        return rvne
    if target == "partition":
        return table
    if target in FORMATS:
        name = {"safetensors": "safetensors"}.get(target, target)
        return lambda data: foreign(data, name)
    if target == "detect":
        return foreign
    del np
    return {"npy": npy, "npz": npz, "pt": pt, "reply": reply}[target]


_BASE = ["formats/__init__.py", "formats/base.py"]
READER_FILES = {
    "rvne": ["blob.py", "inspect.py", "crc.py"],
    "lwt": ["formats/lwt.py", "formats/jsonsafe.py", *_BASE],
    "burnpack": ["formats/burnpack.py", "formats/cbor.py", *_BASE],
    "milblob": ["formats/milblob.py", *_BASE],
    "cnn2": ["formats/cnn2.py", *_BASE],
    "safetensors": ["formats/safetensors_fmt.py", "formats/jsonsafe.py", *_BASE],
    "detect": ["formats/"], "npy": ["npyfile.py"], "npz": ["weights_io.py", "npyfile.py"],
    "pt": ["torchfile.py", "state_dict.py", "weights_io.py"],
    "reply": ["protocol.py", "device.py"], "partition": ["partition.py"],
}


def start_coverage():
    """Started before rvne is imported, so module-level lines count too."""
    import coverage

    cov = coverage.Coverage(include=[os.path.join(ROOT, "host", "rvne", "*")], branch=False)
    cov.start()
    return cov


def coverage_of(target, corpus, cov):
    """Line coverage of the target's reader modules by every input in `corpus`."""
    fn = make_target(target)
    n = 0
    for name in sorted(os.listdir(corpus)):
        with open(os.path.join(corpus, name), "rb") as f:
            fn(f.read())
        n += 1
    cov.stop()
    total = hit = 0
    for path in cov.get_data().measured_files():
        rel = os.path.relpath(path, os.path.join(ROOT, "host", "rvne"))
        if not any(rel.startswith(p) or rel == p for p in READER_FILES[target]):
            continue
        _, statements, _, missing, _ = cov.analysis2(path)
        total += len(statements)
        hit += len(statements) - len(missing)
        print(f"  {rel:28} {len(statements) - len(missing):5}/{len(statements):<5} lines")
    pct = 100.0 * hit / total if total else 0.0
    print(f"coverage {target}: {n} inputs, {hit}/{total} lines of its readers ({pct:.1f}%)")
    return pct


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("--runs", type=int, help="stop after this many executions")
    ap.add_argument("--seconds", type=int, help="stop after this long")
    ap.add_argument("--corpus", help="corpus directory, seeded from the fixtures (default build/fuzz/host-TARGET)")
    ap.add_argument("--coverage", action="store_true", help="report line coverage of the corpus and exit")
    ap.add_argument("--seed", type=int, default=1, help="libFuzzer's random seed (default 1)")
    args = ap.parse_args()

    cov = start_coverage() if args.coverage else None
    if not args.coverage:
        import atheris

        # Instrumented before anything imports them (seeding does).
        with atheris.instrument_imports(include=["rvne"]):
            import rvne.io.blob  # noqa: F401
            import rvne.link.device  # noqa: F401
            import rvne.io.formats  # noqa: F401
            import rvne.io.inspect  # noqa: F401
            import rvne.io.npyfile  # noqa: F401
            import rvne.flash.partition  # noqa: F401
            import rvne.link.protocol  # noqa: F401
            import rvne.io.upstream_init  # noqa: F401
            import rvne.io.weights  # noqa: F401
            import rvne.io.state_dict  # noqa: F401
            import rvne.io.torchfile  # noqa: F401
            for m in FORMATS:
                __import__(f"rvne.io.formats.{'safetensors_fmt' if m == 'safetensors' else m}")
    # A directory that persists (build/ is not committed): libFuzzer's exit() would skip removing a temporary one.
    corpus = args.corpus or os.path.join(ROOT, "build", "fuzz", f"host-{args.target}")
    seed_corpus(args.target, corpus)
    if args.coverage:
        coverage_of(args.target, corpus, cov)
        return 0
    fn = make_target(args.target)
    argv = [sys.argv[0], corpus, f"-max_len={MAX_LEN}", f"-seed={args.seed}", "-print_final_stats=1",
            "-rss_limit_mb=2048", "-timeout=20"]
    if args.runs is not None:
        argv.append(f"-runs={args.runs}")
    if args.seconds is not None:
        argv.append(f"-max_total_time={args.seconds}")
    atheris.Setup(argv, fn)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
