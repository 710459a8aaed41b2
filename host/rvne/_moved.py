"""The module paths of rvne's flat layout, before the host package was
grouped by layer (README, "Layout"), kept for one release: importing an old
path (`import rvne.blob`, `from rvne import device`, `rvne.formats.lwt`)
gives the module at its new path, the same object, with a
DeprecationWarning that names the new path."""

import sys

MOVED = {
    "rvne.contract": "rvne.model.contract",
    "rvne.reference": "rvne.model.reference",
    "rvne.bounds": "rvne.model.bounds",
    "rvne.verdict": "rvne.model.verdict",
    "rvne.steps": "rvne.model.steps",
    "rvne.blob": "rvne.io.blob",
    "rvne.crc": "rvne.io.crc",
    "rvne.files": "rvne.io.files",
    "rvne.atomic": "rvne.io.atomic",
    "rvne.npyfile": "rvne.io.npyfile",
    "rvne.weights_io": "rvne.io.weights",
    "rvne.state_dict": "rvne.io.state_dict",
    "rvne.torchfile": "rvne.io.torchfile",
    "rvne.upstream_init": "rvne.io.upstream_init",
    "rvne.inspect": "rvne.io.inspect",
    "rvne.formats": "rvne.io.formats",
    "rvne.protocol": "rvne.link.protocol",
    "rvne.device": "rvne.link.device",
    "rvne.ports": "rvne.link.ports",
    "rvne.board_reset": "rvne.link.reset",
    "rvne.update": "rvne.link.update",
    "rvne.partition": "rvne.flash.partition",
    "rvne.slots": "rvne.flash.slots",
    "rvne.flash_image": "rvne.flash.image",
    "rvne.board_flash": "rvne.flash.board",
    "rvne.children": "rvne.targets.children",
    "rvne.progress": "rvne.commands._progress",
}


def new_path(name):
    """The new dotted path of old module path `name`, or None."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _Alias:
    """A meta path finder whose loader puts the new module in sys.modules
    under the old name, so both names are one module (patching either
    patches it)."""

    def find_spec(self, name, path=None, target=None):
        new = new_path(name)
        if new is None:
            return None
        import importlib.util
        import warnings

        warnings.warn(f"{name} moved to {new}; the old path will be removed in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        import importlib

        # The import system returns what sys.modules holds under the old name
        # once this returns: the new module, with its own spec untouched.
        sys.modules[module.__name__] = importlib.import_module(new_path(module.__name__))


def install():
    """Put the finder first (before the path finder, which would load a
    second copy of a module under an old package path); idempotent."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
