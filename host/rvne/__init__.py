"""rvne: put a GQA temporal head on an ESP32-S3 and prove it computes what the host computed.

Formats and contracts live in docs/ (format.md, model.md, protocol.md).
"""

__version__ = "0.1.0"

from . import _moved

_moved.install()
