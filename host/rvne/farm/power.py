"""Reset a place's board through its power switch, with labgrid's own
power driver for the resource the exporter publishes (docs/farm.md).
A place without one is reset over its serial port instead (rvne.link.reset:
DTR/RTS, which RFC 2217 carries to ser2net)."""

from typing import Optional

from .coordinator import Board, Coordinator

# The published power resources labgrid-client's `power` command drives, and their driver.
DRIVERS = {
    "NetworkPowerPort": "NetworkPowerDriver",
    "NetworkUSBPowerPort": "USBPowerDriver",
    "NetworkSiSPMPowerPort": "SiSPMPowerDriver",
    "NetworkYKUSHPowerPort": "YKUSHPowerDriver",
    "PDUDaemonPort": "PDUDaemonDriver",
    "TasmotaPowerPort": "TasmotaPowerDriver",
}


def power_resource(board: Board) -> Optional[tuple]:
    """(name, class) of the place's first power resource, None without one."""
    found = sorted(key for key in board.resources if key[1] in DRIVERS)
    return found[0] if found else None


def power_cycle(coord: Coordinator, board: Board, delay: float = 1.0) -> Optional[str]:
    """Power the board off, wait `delay` seconds, power it on; the resource
    used ("NetworkPowerPort power"), or None when the place has no switch."""
    key = power_resource(board)
    if key is None:
        return None
    from labgrid import Target, target_factory
    from labgrid.resource.remote import RemotePlaceManager

    # A remote resource polls the session for its state, as labgrid-client's own commands do.
    manager = RemotePlaceManager.get()
    manager.session, manager.loop = coord.session, coord.loop
    name, cls = key
    entry = board.resources[key]
    target = Target(board.place)
    try:
        resource = target_factory.make_resource(target, cls, name, entry.args)
        resource.avail, resource.extra, resource._remote_entry = entry.avail, entry.extra, entry
        driver = target_factory.class_from_string(DRIVERS[cls])(target, name=None)
        if hasattr(driver, "delay"):
            driver.delay = float(delay)
        target.activate(driver)
        driver.cycle()
    finally:
        target.cleanup()
    return f"{cls} {name}"
