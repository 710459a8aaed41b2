"""Write numpy's binary16 -> binary32 conversion of all 65536 half patterns
as 65536 little-endian u32 float bit patterns: the oracle of test_fp16.c.

    python3 gen_fp16_table.py OUT.bin
"""

import sys

import numpy as np


def table():
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return halves.astype(np.float32).view(np.uint32).astype("<u4")


def main(argv):
    if len(argv) != 2:
        print("usage: gen_fp16_table.py OUT.bin", file=sys.stderr)
        return 2
    with open(argv[1], "wb") as f:
        f.write(table().tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
