"""Train a temporal head in PyTorch, export it, and check it on the emulated board.

    python examples/train_temporal_head.py                  # under a minute on 2 cores
    python examples/train_temporal_head.py --steps 60 --target sim --out /tmp/run

A synthetic sensor stream stands in for Wi-Fi CSI amplitudes: D = 16
subcarrier amplitudes around a baseline of 1, with noise. Each sequence
holds one of four gesture-like patterns, placed at a random time:

  0 still   nothing but noise
  1 push    subcarriers 0-7 dip together, slowly, once
  2 wave    subcarriers 8-15 oscillate for three periods
  3 swipe   a bump travels across all 16 subcarriers

No single frame tells them apart (a frame of a wave at its zero crossing
is a frame of noise); the window does. The head (rvne.torch.TemporalHead,
docs/model.md) is trained on the logits of the last frames of each
sequence, when the gesture is over but still inside the window; accuracy
is printed for held-out sequences; the head is exported as FP32 and FP16
blobs, and both are checked on a target (`rvne check`'s verdict: every
logit within its error bound of the float64 reference); it is also
quantised to an int8 blob, whose argmax agreement with the float head on
the held-out frames is printed. Walk-through:
docs/training.md.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from rvne import check
from rvne.link.device import DEFAULT_TIMEOUT, Device
from rvne.targets import TARGETS, start_target
from rvne.torch import TemporalHead

DIMS = (16, 4, 1, 32, 2, 4)         # D, HQ, HKV, HD, L, C: upstream's default head
CLASSES = ("still", "push", "wave", "swipe")
GESTURE = 24                        # frames a gesture lasts at most
TAIL = 8                            # frames after the gesture the head is trained (and judged) on


def make_sequences(n, length, rng):
    """(frames [n, length, 16] float32, labels [n]) of the synthetic stream."""
    D = DIMS[0]
    labels = rng.integers(0, len(CLASSES), n)
    x = 1.0 + 0.4 * rng.standard_normal((n, length, D))
    ch = np.arange(D)
    for i, c in enumerate(labels):
        t0 = int(rng.integers(0, length - GESTURE - TAIL + 1))     # ends before the tail begins
        t = np.arange(GESTURE)
        amp = rng.uniform(0.4, 1.0)
        if c == 1:      # push: a slow dip of the lower half
            x[i, t0:t0 + GESTURE, :8] -= amp * np.sin(np.pi * t / GESTURE)[:, None]
        elif c == 2:    # wave: the upper half oscillates, three periods
            x[i, t0:t0 + GESTURE, 8:] += amp * np.sin(2 * np.pi * 3 * t / GESTURE + rng.uniform(0, 2 * np.pi))[:, None]
        elif c == 3:    # swipe: a bump crossing every subcarrier
            centre = (t * (D + 4) / GESTURE - 2)[:, None]
            x[i, t0:t0 + GESTURE] += amp * np.exp(-0.5 * ((ch[None, :] - centre) / 1.5) ** 2)
    return x.astype(np.float32), labels


def train(head, args, rng):
    frames, labels = make_sequences(args.train, args.length, rng)
    frames, labels = torch.from_numpy(frames), torch.from_numpy(labels)
    opt = torch.optim.Adam(head.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        idx = torch.from_numpy(rng.integers(0, len(frames), args.batch))
        logits = head(frames[idx], args.window)[:, -TAIL:]                # [B, TAIL, C]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 labels[idx].repeat_interleave(TAIL))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % max(1, args.steps // 10) == 0 or step == args.steps:
            print(f"step {step:4d}/{args.steps}  loss {loss.item():.3f}  ({time.monotonic() - t0:.0f} s)")


def accuracy(head, frames, labels, window):
    """Fraction of sequences whose last frame's argmax is their gesture."""
    with torch.no_grad():
        last = head(torch.from_numpy(frames), window)[:, -1]
    return float((last.argmax(-1).numpy() == labels).mean())


def check_on_target(path, frames, window, target):
    """rvne check's verdict for the blob at `path` on `target`, streaming
    `frames` [N, T, D]: the importable API behind `rvne check --frames`."""
    blob_bytes = Path(path).read_bytes()
    # An emulated core's clock ticks at no chip's rate: count its instructions (-icount), as rvne check does.
    emulated = target.startswith("qemu")
    with start_target(target, blob_bytes, **({"icount": True} if emulated else {})) as running:
        timeout = max(DEFAULT_TIMEOUT, getattr(running, "reply_timeout", 0.0))
        with Device(running.url, timeout=timeout) as dev:
            report = check.run_check(dev, blob_bytes, frames=frames, window=window)
        if emulated:
            report.instructions_per_push = running.instructions(report.device_push)
    print(check.render(report))
    return report.passed


def int8_report(head, args, test_frames, test_labels):
    """Quantise the head to int8 (calibrated on fresh training-distribution
    sequences, not the held-out ones), then the int8 model against the float
    one on every held-out frame: argmax agreement, and accuracy."""
    calibration, _ = make_sequences(64, args.length, np.random.default_rng(args.seed + 2))
    path = args.out / "gesture_head_int8.rvne"
    parsed = head.to_blob(path, dtype="int8", calibration=calibration, window=args.window)
    model = parsed.int8_model()
    with torch.no_grad():
        ref = head(torch.from_numpy(test_frames), args.window).numpy()            # [N, T, C]
    got = np.stack([model.float_logits(model.forward(s, args.window)) for s in test_frames])
    same = ref.argmax(-1) == got.argmax(-1)
    # Every frame, and the last TAIL frames of each sequence: the ones the
    # head is trained on; before a gesture its logits are near ties it was
    # never asked to break, where int8's rounding flips the most argmaxes.
    agree, judged = float(same.mean()), float(same[:, -TAIL:].mean())
    acc8 = float((got[:, -1].argmax(-1) == test_labels).mean())
    print(f"{path}: int8 {parsed.header.total_len} bytes, crc 0x{parsed.crc_stored:08X}, held-out accuracy "
          f"{acc8:.3f}; int8 vs float argmax agreement {100 * judged:.2f}% on the last {TAIL} frames of each "
          f"held-out sequence, {100 * agree:.2f}% over all {same.size} held-out frames")
    if judged < args.min_int8_agreement:
        print(f"int8 agreement {judged:.4f} is below --min-int8-agreement {args.min_int8_agreement}", file=sys.stderr)
        return False
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--batch", type=int, default=64, help="sequences per step (default 64)")
    p.add_argument("--lr", type=float, default=0.01, help="peak learning rate (default 0.01)")
    p.add_argument("--train", type=int, default=4096, help="training sequences (default 4096)")
    p.add_argument("--test", type=int, default=512, help="held-out sequences (default 512)")
    p.add_argument("--length", type=int, default=64, help="frames per sequence (default 64)")
    p.add_argument("--window", type=int, default=48,
                   help="attention window W, in training and on the device (default 48)")
    p.add_argument("--target", choices=TARGETS, default="qemu", help="where to check the blobs (default qemu)")
    p.add_argument("--check", type=int, default=4, help="held-out sequences streamed to the target (default 4)")
    p.add_argument("--out", type=Path, default=Path("."), help="directory for the blobs (default .)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit 1 when held-out accuracy is below this (for tests)")
    p.add_argument("--min-int8-agreement", type=float, default=0.99,
                   help=f"exit 1 when int8 and float agree on fewer of the last {TAIL} held-out frames' argmaxes "
                        "than this (default 0.99)")
    args = p.parse_args(argv)
    if args.window < GESTURE + TAIL:
        p.error(f"--window {args.window}: the last {TAIL} frames must still see the whole gesture "
                f"({GESTURE} frames): use >= {GESTURE + TAIL}")
    if args.length < GESTURE + TAIL:
        p.error(f"--length must be >= {GESTURE + TAIL}")
    torch.manual_seed(args.seed)
    # Tensors this small gain little from a second thread, and spinning threads
    # lose badly on a loaded machine.
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)

    head = TemporalHead(DIMS)
    t0 = time.monotonic()
    train(head, args, rng)
    test_frames, test_labels = make_sequences(args.test, args.length, np.random.default_rng(args.seed + 1))
    acc = accuracy(head, test_frames, test_labels, args.window)
    chance = 1 / len(CLASSES)
    print(f"held-out accuracy {acc:.3f} on {args.test} sequences (chance {chance:.2f}), "
          f"trained in {time.monotonic() - t0:.0f} s")

    args.out.mkdir(parents=True, exist_ok=True)
    # The sequences the checks stream, for `rvne check BLOB --frames` from the shell.
    held_out = args.out / "held_out.npy"
    np.save(held_out, test_frames[:args.check])
    print(f"{held_out}: the {args.check} held-out sequences checked below, [N, T, D] float32")
    ok = True
    for fp16 in (False, True):
        path = args.out / f"gesture_head_{'fp16' if fp16 else 'fp32'}.rvne"
        parsed = head.to_blob(path, fp16=fp16)
        exported = TemporalHead.from_blob(path)
        acc_blob = accuracy(exported, test_frames, test_labels, args.window)
        print(f"{path}: {parsed.header.dtype} {parsed.header.total_len} bytes, crc 0x{parsed.crc_stored:08X}, "
              f"held-out accuracy {acc_blob:.3f}")
        print(f"checking {path.name} on the {args.target} target ({args.check} held-out sequences, W {args.window})")
        ok &= check_on_target(path, test_frames[:args.check], args.window, args.target)
    ok &= int8_report(head, args, test_frames, test_labels)
    if acc < args.min_accuracy:
        print(f"accuracy {acc:.3f} is below --min-accuracy {args.min_accuracy}", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
