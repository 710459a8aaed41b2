# Sourced by tools/*.sh from the checkout's top: the project's own venv,
# $RVNE_VENV (default .venv in the checkout; a relative path is taken from
# there). tools/bootstrap.sh creates it and installs rvne into it; nothing
# is installed into the system interpreter.
RVNE_VENV=${RVNE_VENV:-.venv}

# Run what follows in that venv: python3, pip, rvne and make's $(PYTHON).
rvne_activate() {
    VIRTUAL_ENV=$(cd "$RVNE_VENV" && pwd)
    export VIRTUAL_ENV PATH="$VIRTUAL_ENV/bin:$PATH" PYTHON="$VIRTUAL_ENV/bin/python"
    unset PYTHONHOME
}

# pytest in that venv, its exit status with 5 (no test collected) taken as
# success: the test scripts' one way to run it.
pytest_rc() {
    local r=0
    "$PYTHON" -m pytest "$@" || r=$?
    if [ $r -eq 5 ]; then
        echo "pytest: no tests were collected (exit 5), treated as success"
        r=0
    fi
    return $r
}
