"""Planning before flashing (`rvne plan`): what a blob costs on the ESP32-S3
app, from the blob's header alone.

- arena: what rvne_head_arena_size (firmware/core/src/rvne_head.c) returns;
  the same formula is in the menuconfig help (RVNE_ARENA_WINDOW) and
  tests/test_plan.py checks all three agree.
- partition: the blob's bytes against the `rvne` partition of a
  partitions.csv (default: the project's own).
- internal RAM: the arena plus the app's other buffers (docs/esp32s3.md,
  Stack and heap), against a budget (an estimate: measure your board).
- FP16 weights expanded to FP32 at load (RVNE_FP16_EXPAND, docs/model.md
  "FP16 weights"): the RAM it takes (rvne_head_expanded_size) and whether
  the arena with it still fits the budget; if not, the app decodes them at
  every push (INFO weights=no-room).
- MACs per frame with a full window, and an instruction estimate scaled
  phase by phase from the counts on the ESP32-S3's core in Espressif's QEMU
  that tools/bench_icount.py --record wrote (rvne.icount, icount.json).
"""

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from . import icount
from .errors import RvneError
from .flash import partition, slots
from .io import blob as blobmod
from .model import steps
from .model.contract import Dims

FLOAT = 4

# menuconfig defaults (firmware/ports/esp32s3/main/Kconfig.projbuild).
DEFAULT_WINDOW = 100            # RVNE_WINDOW
ARENA_WINDOW = 128              # RVNE_ARENA_WINDOW: the app allocates for max(W, this)
LINE_MAX = 4096                 # RVNE_LINE_MAX
MAX_INPUT_DIM = 256             # RVNE_MAX_INPUT_DIM
QUEUE_DEPTH = 8                 # RVNE_QUEUE_DEPTH
FP16_EXPAND = True              # RVNE_FP16_EXPAND
TASK_STACK = 6144               # RVNE_TASK_STACK
TCB_BYTES = 350                 # FreeRTOS task control block, about
QUEUE_HEADER = 80               # FreeRTOS queue header, about

# The app's flash (sdkconfig.defaults: CONFIG_ESPTOOLPY_FLASHSIZE_8MB); a
# partition ending past it cannot hold anything.
FLASH_SIZE = 8 * 1024 * 1024
# The most flash an ESP32-S3 maps for data at once (its MMU's 32 MiB data
# window), where the app maps the whole blob partition: a larger blob fits
# no board, whatever its flash. `rvne init`/`pack` refuse one unless --force.
BLOB_MAX = 32 * 1024 * 1024


def blob_bytes(dims, fp16=False) -> int:
    """The size of a blob of these dims, from the dims alone (no weights made)."""
    from .model.contract import expected_weights_len

    return blobmod.HEADER_LEN + expected_weights_len(Dims.of(dims), fp16) + blobmod.FOOTER_LEN


def refuse_unholdable(nbytes: int, what: str, fp16_bytes: Optional[int] = None):
    """RvneError when a blob of `nbytes` cannot be held by any board
    (BLOB_MAX); `fp16_bytes`: its size as FP16, to suggest --fp16 only when
    that would fit."""
    if nbytes > BLOB_MAX:
        fp16 = fp16_bytes is not None and fp16_bytes <= BLOB_MAX
        raise RvneError(f"{what} makes a {nbytes:,}-byte blob; no board can hold it: an ESP32-S3 maps at most "
                        f"{BLOB_MAX >> 20} MiB of flash for data (the emulated boards' partition is 2 MiB): "
                        f"use {'--fp16 or ' if fp16 else ''}smaller dims, or pass --force to write it anyway "
                        "(the sim target only)")

# Heap an ESP-IDF v5 app on the ESP32-S3 (512 KiB SRAM) can count on for
# rvne with Wi-Fi running (a CSI pipeline needs it): an estimate, not a
# measurement; check `heap_caps_get_largest_free_block(MALLOC_CAP_8BIT)` on
# the board and pass --ram-budget.
RAM_BUDGET = 256 * 1024



def arena_bytes(dims, window: int, dtype: str = "fp32") -> int:
    """rvne_head_arena_size: caches and activations for window W. An int8
    head (rvne_head.c's state_bytes_i8), in 4-byte words: G*W scores,
    max(Q, D, C) int32 sums, C float logits, every query
    head widened (kr + 1 words each; the heads' outputs reuse them) and the
    softmax's weights (vr words) with 1 read-ahead and 4 more words; the
    16-bit rings, keys in kr-word rows per layer, kv
    head and slot, values in vr-word rows per layer and channel; then the
    int8 x (D), q, o (Q each), k and v (K each) bytes. kr and vr are
    RVNE_I8_ROW_WORDS of head_dim and W: the count rounded up to 4, in
    16-bit pairs."""
    d = Dims.of(dims)
    if dtype == "int8":
        def row_words(n):
            return (n + 3) // 4 * 2
        kr, vr = row_words(d.head_dim), row_words(window)
        words = (d.group * window + max(d.q_dim, d.input_dim, d.n_classes) + d.n_classes
                 + d.n_q_heads * (kr + 1) + vr + 1 + 4 + d.n_layers * d.n_kv_heads * window * kr + d.n_layers * d.kv_dim * vr)
        return FLOAT * words + d.input_dim + 2 * d.q_dim + 2 * d.kv_dim
    floats = (2 * d.input_dim + d.q_dim + d.n_classes + d.n_q_heads
              + window * (2 * d.n_layers * d.kv_dim + d.n_q_heads))
    return FLOAT * floats


def expanded_bytes(dims, fp16: bool) -> int:
    """rvne_head_expanded_size: RAM for FP16 weights expanded to FP32 (0 for FP32)."""
    from .model.contract import expected_weights_len

    return 2 * expected_weights_len(Dims.of(dims), True) if fp16 else 0


def macs_per_frame(dims, window: int) -> int:
    """Multiply-adds of one push with a full window (docs/model.md): the
    q/k/v/o projections and attention over W frames per layer, then the
    classifier."""
    d = Dims.of(dims)
    per_layer = 2 * d.input_dim * d.q_dim + 2 * d.input_dim * d.kv_dim + 2 * d.n_q_heads * window * d.head_dim
    return d.n_layers * per_layer + d.input_dim * d.n_classes


def static_bytes() -> int:
    """temporal_task.c's static buffers: line, reply, decoded frames, drain."""
    return (LINE_MAX + 1) + (LINE_MAX + 16) + FLOAT * (LINE_MAX * 3 // 16 + 1) + FLOAT * MAX_INPUT_DIM


def default_partitions_csv() -> Optional[Path]:
    """The project's partitions.csv: a checkout's (beside host/), else the
    copy an installed rvne carries (rvne/_firmware, targets/build.py)."""
    from .targets.build import PACKAGE_DATA

    here = Path(__file__).resolve().parent
    for path in (here.parents[1] / "partitions.csv", here / PACKAGE_DATA / "partitions.csv"):
        if path.is_file():
            return path
    return None


def model_partition(table, label=None):
    """(partition a blob must fit, layout name, where the model partitions
    end in flash): with `label` that one; else the smaller model slot of the
    table's layout (an update writes either slot; rvne.flash.slots), "slots" or
    "single"."""
    if label is not None:
        part = partition.find_partition(table, label)
        return part, "label", part.end
    lay = slots.layout(table)
    parts = lay.slots + ([lay.selector] if lay.selector is not None else [])
    return min(lay.slots, key=lambda p: p.size), lay.kind, max(p.end for p in parts)


def partition_warning(path, nbytes: int, label: Optional[str] = None) -> Optional[str]:
    """A one-line warning when a blob of nbytes will not fit the default
    model partition (`rvne pack`, `rvne init`); None when it fits or there is
    no default table to compare with."""
    csv = default_partitions_csv()
    if csv is None:
        return None
    try:
        part, _, _ = model_partition(partition.read_csv(str(csv)), label)
    except RvneError:
        return None
    if nbytes <= part.size:
        return None
    return (f"rvne: warning: {path} is {nbytes} bytes, larger than partition {part.name!r} ({part.size} bytes at "
            f"0x{part.offset:x} in {csv.name}); `rvne flash` will refuse it: use --fp16 or smaller dims, "
            f"or grow the partition in partitions.csv (see `rvne plan {path}`)")


@dataclass
class Plan:
    blob: str
    dtype: str
    dims: list
    blob_bytes: int
    partitions: str
    partition_label: str
    layout: str                 # "slots" (updates over the line), "single" (no updates), "label" (--label)
    partition_offset: int
    partition_bytes: int
    flash_bytes: int
    partition_in_flash: bool
    fits_partition: bool
    window: int
    arena_bytes: int
    arena_window: int
    app_arena_bytes: int
    queue_bytes: int
    task_bytes: int
    static_bytes: int
    ram_bytes: int
    ram_budget: int
    fits_ram: bool
    macs_per_frame: int
    insns_per_frame: Optional[int]
    insns_per_frame_c: Optional[int]
    # Where the estimate comes from: the measurement's commit, head, window
    # and compiler (icount.json), or why there is none.
    insns_source: str
    trace_bytes: int = 0            # more arena while tracing (TRACE ON, docs/protocol.md)
    expand_bytes: int = 0           # FP16 weights expanded to FP32 (0: FP32 blob)
    ram_expanded_bytes: int = 0     # ram_bytes + expand_bytes
    fits_ram_expanded: bool = False
    weights: str = "fp32"           # INFO weights= the app will report: fp32, expanded, no-room

    @property
    def ok(self):
        return self.fits_partition and self.fits_ram

    def to_json(self):
        out = asdict(self)
        out["ok"] = self.ok
        return out


def make_plan(path, *, window: int = DEFAULT_WINDOW, partitions_csv=None, label: Optional[str] = None,
              ram_budget: int = RAM_BUDGET, flash_size: int = FLASH_SIZE) -> Plan:
    parsed = blobmod.read_file(path, contract=True)
    h = parsed.header
    dims = Dims.of(h)
    csv = Path(partitions_csv) if partitions_csv else default_partitions_csv()
    if csv is None:
        raise RvneError("this rvne has no partitions.csv (neither a checkout's nor the installed package's); "
                        "pass --partitions partitions.csv, or reinstall rvne with `pip install .` from a clone")
    part, layout, end = model_partition(partition.read_csv(str(csv)), label)
    size = len(parsed.to_bytes())
    expand = expanded_bytes(dims, h.dtype == "fp16")
    app_window = max(window, ARENA_WINDOW)
    app_arena = arena_bytes(dims, app_window, h.dtype)
    queue = QUEUE_DEPTH * dims.input_dim * FLOAT + QUEUE_HEADER
    task = TASK_STACK + TCB_BYTES
    ram = app_arena + queue + task + static_bytes()
    macs = macs_per_frame(dims, window)
    fits_expanded = ram + expand <= ram_budget
    weights = "fp32" if not expand else ("expanded" if fits_expanded else "no-room")
    insns, insns_c, source = insns_estimates("fp16_decode" if weights == "no-room" else h.dtype, dims, window)
    return Plan(
        blob=str(path), dtype=h.dtype, dims=list(dims), blob_bytes=size,
        partitions=str(csv), partition_label=part.name, layout=layout, partition_offset=part.offset,
        partition_bytes=part.size, flash_bytes=flash_size, partition_in_flash=end <= flash_size,
        fits_partition=size <= part.size and end <= flash_size,
        window=window, arena_bytes=arena_bytes(dims, window, h.dtype), arena_window=app_window,
        app_arena_bytes=app_arena, queue_bytes=queue, task_bytes=task, static_bytes=static_bytes(),
        ram_bytes=ram, ram_budget=ram_budget, fits_ram=ram <= ram_budget,
        macs_per_frame=macs, insns_per_frame=insns, insns_per_frame_c=insns_c, insns_source=source,
        trace_bytes=steps.trace_bytes_per_push(dims, None if h.dtype == "int8" else window),
        expand_bytes=expand, ram_expanded_bytes=ram + expand, fits_ram_expanded=fits_expanded, weights=weights,
    )


def insns_estimates(mode: str, dims, window: int):
    """(instructions per frame with the S3 app's assembly kernels, with its
    C kernels, where the numbers come from) for weights run as `mode`
    (rvne.icount.DTYPES: fp32, fp16 expanded at load, fp16_decode): the
    ESP32-S3 core's counts (its ICOUNT register, the app's GCC build) that
    tools/bench_icount.py --record measured, scaled phase by phase
    (icount.estimate). Without a readable record: (None, None, why)."""
    if mode not in icount.DTYPES:
        return None, None, f"no estimate: tools/bench_icount.py measures no {mode} push"
    try:
        rec = icount.load()
    except RvneError as exc:
        return None, None, f"no estimate: {exc}"
    source = (f"tools/bench_icount.py at {rec['commit'][:12]}: dims {','.join(map(str, rec['dims']))} "
              f"W={rec['window']}, {rec['toolchain'].get('esp32s3') or 'the S3 GCC'}")
    fast, slow = icount.estimate(rec, dims, window, mode), icount.estimate(rec, dims, window, mode, kernels="c")
    if fast is None or slow is None:
        return None, None, f"no estimate: {icount.PATH.name} has no {mode} count (rerun tools/bench_icount.py --record)"
    return fast, slow, source


def weights_lines(p: Plan) -> list:
    """The RAM line of FP16 weights expanded at load (docs/model.md, "FP16 weights")."""
    if not p.expand_bytes:
        return []
    if p.fits_ram_expanded:
        then = "FP16 at FP32 speed"
    else:
        then = ("the app falls back to decoding them at every push (INFO weights=no-room): "
                "raise --ram-budget if the board has the heap, or use FP32 weights if the partition holds them")
    return [f"weights    FP16 expanded to FP32 at load (RVNE_FP16_EXPAND, on by default): {p.expand_bytes} bytes more "
            f"RAM, {p.ram_expanded_bytes} in all against the budget {p.ram_budget}: "
            f"{'fits' if p.fits_ram_expanded else 'DOES NOT FIT'}; {then}"]


def render_text(p: Plan) -> str:
    def verdict(ok):
        return "fits" if ok else "DOES NOT FIT"
    over = p.blob_bytes - p.partition_bytes
    lines = [
        f"blob       {p.blob}: {p.dtype} dims {','.join(map(str, p.dims))}, {p.blob_bytes} bytes",
        f"partition  '{p.partition_label}' {p.partition_bytes} bytes at 0x{p.partition_offset:x} ({p.partitions}): "
        f"{verdict(p.fits_partition)}, {100 * p.blob_bytes / p.partition_bytes:.1f}% used"
        + (f" ({over} bytes over: use --fp16, smaller dims, or grow the partition)" if over > 0 else "")
        + ("" if p.partition_in_flash else
           f"; the model partitions end past the {p.flash_bytes // (1024 * 1024)} MiB flash (--flash-size): "
           "move or shrink them in partitions.csv")
        + {"slots": "; two slots, so `rvne update` works over the line",
           "single": "; single-partition layout: `rvne update` is refused (E_NO_SLOTS) until the board is "
                     "flashed with the two-slot partitions.csv"}.get(p.layout, ""),
        f"arena      {p.arena_bytes} bytes at W={p.window}; the app allocates for max(W, RVNE_ARENA_WINDOW)="
        f"{p.arena_window}: {p.app_arena_bytes} bytes",
        f"RAM        {p.ram_bytes} bytes = arena {p.app_arena_bytes} + queue {p.queue_bytes} + task {p.task_bytes}"
        f" + static {p.static_bytes}; budget {p.ram_budget} (an estimate, --ram-budget): {verdict(p.fits_ram)}",
        *weights_lines(p),
        f"trace      {p.trace_bytes} bytes more arena while tracing (rvne check --trace; docs/protocol.md, "
        "Trace); a device without them checks end to end only",
        f"compute    {p.macs_per_frame} MACs per frame with a full window",
    ]
    if p.insns_per_frame is not None:
        how = {"expanded": " (FP16 weights expanded at load)",
               "no-room": " (FP16 weights decoded at every push: the expansion does not fit)"}.get(p.weights, "")
        lines.append(f"estimate   {p.insns_per_frame} instructions per frame{how} with the assembly kernels "
                     f"(the S3 app's default), {p.insns_per_frame_c} with the C kernels "
                     f"(CONFIG_RVNE_XTENSA_ASM_KERNELS off), on the ESP32-S3's core in Espressif's QEMU (its "
                     f"ICOUNT register, the app's GCC build), scaled phase by phase from {p.insns_source}; "
                     "instructions, not cycles")
    else:
        lines.append(f"estimate   {p.insns_source}")
    lines.append("OK" if p.ok else "DOES NOT FIT")
    return "\n".join(lines)
