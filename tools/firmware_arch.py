#!/usr/bin/env python3
"""The firmware's architecture as docs/targets.md describes it ("Layout of
firmware/"), checked: no include or call circle between the files of one
room (the portable core, the kernels, the code several Xtensa ports
share, each port), and no port reaching into another port's folder: a
port builds from its own folder, the core, firmware/kernels and
firmware/xtensa, which names no port's folder either.

A room's files group into modules by stem (rvne_line.c and rvne/line.h
are `line`; flash_cut.c and flash_cut.h are `flash_cut`). A module
depends on another when one of its files includes one of the other's, or
names a function the other defines without `static` (a call, or a pointer
handed on as a callback). A circle is a set of two or more modules that
all reach each other. A port reaches into another port when one of its
build files or #include lines names a path inside that port's folder.

    python3 tools/firmware_arch.py [--root DIR]    prints each finding; exit 1 if any
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = (".c", ".h", ".S", ".inc")
BUILD_FILES = re.compile(r"(\.mk|\.cmake|\.sh|\.ld|^Makefile|^CMakeLists\.txt)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
# A name at the start of a line, then its parameter list: a definition when '{' follows.
DEF_START = re.compile(r"^(?!static\b|typedef\b|extern\b|return\b|else\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(",
                       re.M)
ASM_GLOBAL = re.compile(r"^\s*\.glob(?:a)?l\s+([A-Za-z_]\w*)", re.M)
SHARED = "xtensa"                       # firmware/xtensa: board code and runtime several ports build


def rooms(root):
    """{room: folder}: the core, the kernels and the shared code (when they have a folder), each port."""
    fw = os.path.join(root, "firmware")
    out = {"core": os.path.join(fw, "core")}
    for room in ("kernels", SHARED):
        if os.path.isdir(os.path.join(fw, room)):
            out[room] = os.path.join(fw, room)
    ports = os.path.join(fw, "ports")
    for name in sorted(os.listdir(ports)):
        if os.path.isdir(os.path.join(ports, name)):
            out["ports/" + name] = os.path.join(ports, name)
    return out


def walk(folder):
    for d, dirs, files in os.walk(folder):
        dirs[:] = sorted(x for x in dirs if x != "build" and not x.startswith("."))
        for f in sorted(files):
            yield os.path.join(d, f)


def module_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem[5:] if stem.startswith("rvne_") else stem


def strip(text):
    """The C or assembly text without comments and string literals (an include's name is read before)."""
    return COMMENT.sub(lambda m: " " if m.group(0)[0] in "/" else '""', text)


def definitions(code):
    """Names a C file defines without `static`."""
    names = set()
    for m in DEF_START.finditer(code):
        depth, i = 0, m.end() - 1
        while i < len(code):
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
            if depth == 0:
                break
        rest = code[i:].lstrip()
        if rest.startswith("{"):
            names.add(m.group(1))
    return names


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def graph(folder):
    """{module: {module it depends on: why}} for one room."""
    files = [p for p in walk(folder) if p.endswith(SOURCES)]
    texts = {p: read(p) for p in files}
    codes = {p: strip(t) for p, t in texts.items()}
    owner = {}                          # extern function -> module defining it
    own = {}                            # file -> names it defines (its own, static too)
    for p in files:
        if p.endswith(".c"):
            own[p] = definitions(codes[p]) | set(re.findall(r"^static\b[^;{=]*?\b([A-Za-z_]\w*)\s*\(", codes[p], re.M))
            for name in definitions(codes[p]):
                owner.setdefault(name, module_of(p))
        elif p.endswith(".S"):
            own[p] = set(ASM_GLOBAL.findall(codes[p]))
            for name in own[p]:
                owner.setdefault(name, module_of(p))
    deps = {}
    for p in files:
        mod = module_of(p)
        edges = deps.setdefault(mod, {})
        rel = os.path.relpath(p, folder)
        for inc in INCLUDE.findall(texts[p]):
            for q in files:
                if (q == os.path.normpath(os.path.join(os.path.dirname(p), inc)) or q.endswith("/" + inc)) \
                        and module_of(q) != mod:
                    edges.setdefault(module_of(q), f"{rel} includes {inc}")
        if p.endswith(".c"):
            for name in set(IDENT.findall(codes[p])) - own.get(p, set()):
                if name in owner and owner[name] != mod:
                    edges.setdefault(owner[name], f"{rel} uses {name}")
    return deps


def circles(deps):
    """Strongly connected sets of two or more modules (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in deps.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return sorted(out)


MAKE_VAR = re.compile(r"^\s*([A-Za-z_]\w*)\s*[:?]?=\s*(.*)$")


def room_lines(folder):
    """(path, line number, text) of a room's build files (comments dropped) and #include lines."""
    for p in walk(folder):
        name = os.path.basename(p)
        build = BUILD_FILES.search(name)
        if not build and not p.endswith(SOURCES):
            continue
        for n, line in enumerate(read(p).splitlines(), 1):
            if build:
                yield p, n, line.split("#", 1)[0] if not name.endswith(".ld") else line
            elif INCLUDE.match(line):
                yield p, n, line


def reaches(root):
    """(file, line number, other port) for each path a port or the shared code names inside a
    port's folder (not its own), literally (ports/NAME, ../NAME) or through a make variable set to
    one (LX6_DIR := $(FW)/ports/lx6)."""
    all_rooms = rooms(root)
    ports = [r.split("/", 1)[1] for r in all_rooms if r.startswith("ports/")]
    literal = re.compile(r"(?:ports/|\.\./)(%s)(?=[/\"'\s)}]|$)" % "|".join(map(re.escape, ports)))
    owner = {}                          # make variable -> the port whose folder it names
    lines = {port: list(room_lines(all_rooms["ports/" + port])) for port in ports}
    if SHARED in all_rooms:
        lines[SHARED] = list(room_lines(all_rooms[SHARED]))
    for _ in range(3):                  # variables set from variables (RT_DIR := $(LX6_DIR)/rt)
        for port in lines:
            for _p, _n, text in lines[port]:
                m = MAKE_VAR.match(text)
                if not m or m.group(1) in owner:
                    continue
                if "$(lastword $(MAKEFILE_LIST))" in m.group(2):       # the folder of the file setting it
                    if port != SHARED:
                        owner[m.group(1)] = port
                    continue
                hit = literal.search(m.group(2)) or next(
                    (v for v in re.findall(r"\$[({](\w+)[)}]", m.group(2)) if v in owner), None)
                if hit:
                    owner[m.group(1)] = hit.group(1) if hasattr(hit, "group") else owner[hit]
    found = set()
    for port in lines:
        for p, n, text in lines[port]:
            named = [m.group(1) for m in literal.finditer(text)]
            named += [owner[v] for v in re.findall(r"\$[({](\w+)[)}]", text) if v in owner]
            for other in named:
                if other != port:
                    found.add((os.path.relpath(p, root), n, other))
    return sorted(found)


def problems(root=ROOT):
    out = []
    for room, folder in rooms(root).items():
        deps = graph(folder)
        for comp in circles(deps):
            why = "; ".join(deps[a][b] for a in comp for b in comp if b in deps.get(a, {}))
            out.append(f"circle in firmware/{room}: {' <-> '.join(comp)} ({why})")
    for (port, other), where in reach_pairs(root).items():
        room = SHARED if port == SHARED else "ports/" + port
        out.append(f"firmware/{room} reaches into firmware/ports/{other}/ ({len(where)} place(s), first "
                   f"{where[0]}; a port builds from its own folder, the core, firmware/kernels and "
                   f"firmware/{SHARED}, which builds from no port's)")
    return out


def reach_pairs(root=ROOT):
    """{(port or SHARED, other port): ["path:line", ...]} of reaches()."""
    pairs = {}
    for path, n, other in reaches(root):
        parts = path.split("/")
        port = parts[2] if parts[1] == "ports" else parts[1]
        pairs.setdefault((port, other), []).append(f"{path}:{n}")
    return dict(sorted(pairs.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=ROOT, help="the checkout (default: this one)")
    args = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(args.root, "firmware", "ports")):
        print(f"firmware_arch: {args.root} has no firmware/ports: pass --root the checkout's top", file=sys.stderr)
        return 2
    found = problems(args.root)
    for line in found:
        print(line)
    print(f"firmware_arch: {len(found)} problem(s)" if found else "firmware_arch: no circle, no port reaching "
          "into another")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
