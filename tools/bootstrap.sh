#!/usr/bin/env bash
# Install what rvne's build and tests need on a fresh Debian machine (we run
# as root in CI; elsewhere use sudo): the apt packages, then this package
# with its test extras, editable, into the project's own venv ($RVNE_VENV,
# default .venv in the checkout; tools/venv.sh), made from $PYTHON (default
# python3) when missing. The system interpreter's packages are never
# touched. Idempotent: skips what is present.
#   bash tools/bootstrap.sh          everything tools/test_all.sh needs
#   bash tools/bootstrap.sh --main   only what tools/demo.sh's main job needs: the
#                                    emulated board's tools, rvne without extras (no torch)
#   bash tools/bootstrap.sh --s3     only what tools/test_s3.sh (and the main job on
#                                    qemu-esp32s3) needs beside ESP-IDF's own tools: make,
#                                    Espressif QEMU's runtime libraries, rvne with its test
#                                    extras (no torch, no Debian Xtensa toolchains: an ESP-IDF
#                                    container need not have them)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/venv.sh
MODE=test
case "${1:-}" in
    --main) MODE=main ;;
    --s3) MODE=s3 ;;
    "") ;;
    *) echo "bootstrap: unknown option '$1' (--main, --s3 or none)" >&2; exit 2 ;;
esac
TORCH_CPU="torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need_apt=()
command -v make >/dev/null || need_apt+=(make)
if [ "$MODE" != s3 ]; then
    command -v qemu-system-xtensa >/dev/null || need_apt+=(qemu-system-misc)
    # The esp32-class board's compiler (Xtensa backend with -mcpu=esp32): Debian's LLVM 22,
    # linked by the LX106 binutils' ld.
    command -v llc-22 >/dev/null && command -v clang-22 >/dev/null || need_apt+=(clang-22 llvm-22)
    command -v xtensa-lx106-elf-ld >/dev/null || need_apt+=(binutils-xtensa-lx106)
fi
if [ "$MODE" = test ]; then
    command -v cc >/dev/null || need_apt+=(gcc)
    command -v xtensa-lx106-elf-gcc >/dev/null || need_apt+=(gcc-xtensa-lx106)
    [ -f /usr/lib/xtensa-lx106-elf/picolibc.specs ] || need_apt+=(picolibc-xtensa-lx106-elf)
    command -v valgrind >/dev/null || need_apt+=(valgrind)
    command -v clang >/dev/null || need_apt+=(clang libclang-rt-14-dev)
    command -v cmake >/dev/null || need_apt+=(cmake)   # tests/test_esp32s3_cmake.py
    # The signed-policy virtual device (make posix-signed, tests/test_update_signed.py).
    [ -f /usr/include/mbedtls/rsa.h ] || need_apt+=(libmbedtls-dev)
    # tests/test_farm.py: labgrid's exporter publishes a serial port through ser2net
    command -v ser2net >/dev/null || [ -x /usr/sbin/ser2net ] || need_apt+=(ser2net)
fi
# The project's venv, and those tests/test_fmt_oracle.py and tests/test_install.py
# build: Debian's python3 needs python3-venv for them.
PY=${PYTHON:-python3}
"$PY" -c "import ensurepip, venv" 2>/dev/null || need_apt+=(python3-venv)
# Espressif's QEMU (target qemu-esp32s3), when given or asked for: its runtime libraries.
if [ -n "${RVNE_QEMU_ESP:-}" ] || [ "$MODE" = s3 ]; then
    for lib in libglib2.0-0 libpixman-1-0 libgcrypt20 libslirp0 zlib1g; do
        dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q "ok installed" || need_apt+=("$lib")
    done
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "bootstrap: apt-get install ${need_apt[*]}"
    # Others may be installing on the same machine: wait for dpkg's lock.
    $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${need_apt[@]}" >/dev/null
fi

# Debian's mbedtls, as source, for the bare-metal lx6 board's signed build
# (firmware/ports/lx6/mbedtls.mk compiles the few modules a signature check
# needs with the board's compiler): the source package of the libmbedtls-dev
# the virtual device links, from a deb-src entry added for it, unpacked into
# .deps/mbedtls (RVNE_MBEDTLS_SRC overrides the place).
MBEDTLS_SRC=${RVNE_MBEDTLS_SRC:-.deps/mbedtls}
if [ "$MODE" = test ] && [ ! -f "$MBEDTLS_SRC/library/rsa.c" ]; then
    mbed_ver=$(dpkg-query -W -f='${source:Version}' libmbedtls-dev)
    if ! apt-get indextargets 2>/dev/null | grep -q '^Identifier: Sources'; then
        . /etc/os-release
        echo "bootstrap: adding a deb-src entry for $VERSION_CODENAME (apt-get source mbedtls)"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$VERSION_CODENAME" | $SUDO tee /etc/apt/sources.list.d/rvne-deb-src.sources >/dev/null
        $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
    fi
    command -v dpkg-source >/dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq dpkg-dev >/dev/null
    echo "bootstrap: apt-get source mbedtls=$mbed_ver into $MBEDTLS_SRC"
    mbed_tmp=$(mktemp -d)
    (cd "$mbed_tmp" && apt-get source -qq "mbedtls=$mbed_ver" >/dev/null 2>&1)
    mkdir -p "$(dirname "$MBEDTLS_SRC")"
    rm -rf "$MBEDTLS_SRC"
    mv "$mbed_tmp"/mbedtls-*/ "$MBEDTLS_SRC"
    rm -rf "$mbed_tmp"
fi

if ! "$RVNE_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "bootstrap: $PY -m venv $RVNE_VENV"
    "$PY" -m venv "$RVNE_VENV"
fi
VPY=$RVNE_VENV/bin/python
if [ "$MODE" = test ]; then
    # rvne.torch's tests run in CI, never skipped. The CPU build, from PyTorch's CPU
    # index (README, Install, gives the same command): PyPI's own Linux torch is the
    # multi-GB CUDA build.
    "$VPY" -c "import torch; assert torch.__version__.split('+')[0] == '2.13.0'" 2>/dev/null || {
        echo "bootstrap: pip install $TORCH_CPU into $RVNE_VENV"
        # shellcheck disable=SC2086
        "$VPY" -m pip install -q --disable-pip-version-check $TORCH_CPU
    }
fi
# The editable install is redone only when what pip reads from this checkout
# changed (the stamp: a hash of pyproject.toml and setup.py, and the extras):
# a warm run installs nothing. The test install covers the main job's.
STAMP=$RVNE_VENV/.rvne-install
want=$(cat pyproject.toml setup.py | sha256sum | cut -c1-16)
have=$(cat "$STAMP" 2>/dev/null || true)
if [ "$have" != "$want test" ] && [ "$have" != "$want $MODE" ]; then
    spec=.
    [ "$MODE" != main ] && spec='.[test]'
    echo "bootstrap: pip install -e $spec into $RVNE_VENV"
    "$VPY" -m pip install -q --disable-pip-version-check -e "$spec"
    echo "$want $MODE" > "$STAMP"
fi

# esptool's pyserial and labgrid's fork of it (pyserial-labgrid, the farm
# extra) both install the `serial` module, and pip leaves whichever it wrote
# last: upstream 3.5's RFC 2217 client gets no reply through ser2net, the
# fork's does (docs/farm.md). Put the fork back whenever labgrid is here.
if fork=$("$VPY" -c "import importlib.metadata as m; print(m.version('pyserial-labgrid'))" 2>/dev/null); then
    "$VPY" -c "import serial, sys; sys.exit(serial.__version__ != '$fork')" || {
        echo "bootstrap: pyserial-labgrid $fork back over pyserial's serial module in $RVNE_VENV"
        "$VPY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "pyserial-labgrid==$fork"
    }
fi

# ESP-IDF (IDF_PATH set, as export.sh or .ci/run leave it) without a Python
# environment given (IDF_PYTHON_ENV_PATH): make the one ESP-IDF's install.sh
# would, where idf.py and rvne look for it, from the tree's pinned
# python-requirements.txt (PyPI). A full ESP-IDF without that file brings its
# own: run its install.sh.
if [ -n "${IDF_PATH:-}" ] && [ -z "${IDF_PYTHON_ENV_PATH:-}" ]; then
    reqs=$IDF_PATH/python-requirements.txt
    hdr=$IDF_PATH/components/esp_common/include/esp_idf_version.h
    if [ ! -f "$reqs" ] || [ ! -f "$hdr" ]; then
        echo "bootstrap: $IDF_PATH has no python-requirements.txt; make ESP-IDF's Python environment with its install.sh"
    else
        idf_ver=$(awk '/define ESP_IDF_VERSION_MAJOR/{ma=$3} /define ESP_IDF_VERSION_MINOR/{mi=$3} END{print ma "." mi}' "$hdr")
        py_ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        idf_env=${IDF_TOOLS_PATH:-$HOME/.espressif}/python_env/idf${idf_ver}_py${py_ver}_env
        idf_want=$(sha256sum "$reqs" | cut -d' ' -f1)
        mkdir -p "$(dirname "$idf_env")"
        # One bootstrap at a time makes it; the others find it made.
        (
            flock 9
            if [ "$(cat "$idf_env/.rvne-requirements" 2>/dev/null)" != "$idf_want" ]; then
                echo "bootstrap: ESP-IDF's Python environment $idf_env (pip install -r $reqs)"
                [ -x "$idf_env/bin/python" ] || "$PY" -m venv "$idf_env"
                "$idf_env/bin/python" -m pip install -q --disable-pip-version-check -r "$reqs"
                echo "$idf_want" > "$idf_env/.rvne-requirements"
            fi
        ) 9>"$idf_env.lock"
    fi
fi
