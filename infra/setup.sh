#!/usr/bin/env bash
# Prepare one node of a zerochess Ray cluster. The cluster launcher runs it
# from `setup_commands` on every node, on every `ray up`, so each step is
# skipped when its work is already done.
#
#   1. Debian/Ubuntu packages: stockfish (gating), rsync and an ssh client
#      (the launcher and the head's autoscaler copy files with them),
#      python3-venv, g++ and python3-dev (`pip install -e` compiles the
#      native core, models/native/, C++17), nfs-common when ZEROCHESS_NFS is set;
#   2. the shared run folder: ZEROCHESS_NFS mounted on ZEROCHESS_SHARED;
#   3. a virtual environment with PyTorch ($TORCH_SPEC), then the project
#      (`pip install -e` of the checkout that file_mounts synced) and
#      $RAY_SPEC (ray[default]: the dashboard's dependencies);
#   4. a block at the top of ~/.bashrc that puts the venv first on PATH and
#      exports RAY_AUTH_MODE. The launcher runs every command, including
#      `ray start` and the `python ~/script.py` of `ray submit`, as
#      `bash --login -c -i 'source ~/.bashrc; ...'`; a login shell resets
#      PATH from /etc/profile, so ~/.bashrc is where the venv must go.
#
# Environment (all optional):
#   ZEROCHESS_REPO      the synced checkout            (default: ~/zerochess)
#   ZEROCHESS_VENV      the virtual environment        (default: ~/zerochess-venv)
#   ZEROCHESS_PYTHON    interpreter for a new venv, >= 3.11 (default: python3)
#   TORCH_SPEC          pip requirement for PyTorch    (default: torch==2.13.0;
#                       on Linux x86-64 the PyPI wheel is a CUDA build)
#   RAY_SPEC            pip requirement for Ray        (default: ray[default])
#   RAY_AUTH_MODE       exported in ~/.bashrc          (default: token)
#   ZEROCHESS_NFS       NFS export to mount, e.g. fs-0123abcd.efs.us-west-2.amazonaws.com:/
#   ZEROCHESS_NFS_OPTS  its mount options              (default: nfsvers=4.1)
#   ZEROCHESS_SHARED    mount point                    (default: /mnt/zerochess)
#   ZEROCHESS_NO_INSTALL=1  install nothing: fail if something is missing
#                       (the local launcher test runs the script this way
#                       against the project's existing .venv)
set -euo pipefail

REPO=${ZEROCHESS_REPO:-$HOME/zerochess}
VENV=${ZEROCHESS_VENV:-$HOME/zerochess-venv}
PYTHON=${ZEROCHESS_PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
RAY_SPEC=${RAY_SPEC:-ray[default]}
AUTH_MODE=${RAY_AUTH_MODE:-token}
NFS=${ZEROCHESS_NFS:-}
NFS_OPTS=${ZEROCHESS_NFS_OPTS:-nfsvers=4.1}
SHARED=${ZEROCHESS_SHARED:-/mnt/zerochess}
NO_INSTALL=${ZEROCHESS_NO_INSTALL:-0}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

say() { echo "zerochess setup: $*"; }

missing() {
    if [ "$NO_INSTALL" = 1 ]; then
        say "missing: $* (ZEROCHESS_NO_INSTALL=1, so nothing is installed)" >&2
        exit 1
    fi
}

apt_updated=0
apt_install() {
    missing "Debian packages $*"
    say "apt-get install $*"
    if [ "$apt_updated" = 0 ]; then
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# 1. packages
packages=()
command -v stockfish >/dev/null || [ -x /usr/games/stockfish ] || packages+=(stockfish)
command -v rsync >/dev/null || packages+=(rsync)
command -v ssh >/dev/null || packages+=(openssh-client)
[ -x "$VENV/bin/python" ] || "$PYTHON" -c 'import ensurepip' 2>/dev/null || packages+=(python3-venv)
command -v g++ >/dev/null || packages+=(g++)
"$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || packages+=(python3-dev)
if [ -n "$NFS" ] && ! command -v mount.nfs4 >/dev/null; then packages+=(nfs-common); fi
if [ ${#packages[@]} -gt 0 ]; then apt_install "${packages[@]}"; fi

# 2. the shared run folder (OUT of `zerochess run` must be visible to every node)
if [ -n "$NFS" ]; then
    if ! mountpoint -q "$SHARED"; then
        missing "NFS mount $SHARED"
        say "mounting $NFS on $SHARED"
        $SUDO mkdir -p "$SHARED"
        $SUDO mount -t nfs4 -o "$NFS_OPTS" "$NFS" "$SHARED"
    fi
    [ -w "$SHARED" ] || $SUDO chown "$(id -u):$(id -g)" "$SHARED"
fi

# 3. virtual environment, PyTorch, the project
if [ ! -x "$VENV/bin/python" ]; then
    missing "virtual environment $VENV"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
        say "$PYTHON is $("$PYTHON" --version 2>&1); zerochess needs Python >= 3.11 (set ZEROCHESS_PYTHON)" >&2
        exit 1
    }
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    missing "PyTorch in $VENV"
    say "pip install $TORCH_SPEC"
    # TORCH_SPEC may carry options (--index-url ...): split it on purpose.
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install --quiet $TORCH_SPEC
fi
# Reinstall the project when pyproject.toml, setup.py or a source of the
# native core changed since the last install (a `ray up` after a pull): the
# install compiles models/native/ into models/_native*.so.  Python code
# changes need nothing: the install is editable.
stamp="$VENV/.zerochess-setup"
native_hash=$(cd "$REPO" && cat setup.py models/native/*.cpp models/native/*.h 2>/dev/null | sha256sum | cut -d' ' -f1)
want="$(sha256sum "$REPO/pyproject.toml" | cut -d' ' -f1) $native_hash $RAY_SPEC"
if ! "$VENV/bin/python" -c 'import actors, models, pipeline' 2>/dev/null \
    || { [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$want" ]; }; then
    missing "the zerochess project in $VENV"
    say "pip install -e $REPO $RAY_SPEC"
    "$VENV/bin/python" -m pip install --quiet -e "$REPO" "$RAY_SPEC"
    echo "$want" >"$stamp"
fi

# 4. ~/.bashrc: the venv first on PATH, RAY_AUTH_MODE (at the top: Debian's
# and Ubuntu's ~/.bashrc return early for non-interactive shells)
begin='# >>> zerochess infra-setup >>>'
end='# <<< zerochess infra-setup <<<'
touch ~/.bashrc
new=$(mktemp)
{
    echo "$begin"
    echo "export PATH=\"$VENV/bin:/usr/games:\$PATH\""
    echo "export RAY_AUTH_MODE=$AUTH_MODE"
    echo "$end"
    sed "/^$begin\$/,/^$end\$/d" ~/.bashrc
} >"$new"
cat "$new" >~/.bashrc
rm -f "$new"
say "ok: $("$VENV/bin/python" -c 'import ray, torch; print("ray", ray.__version__, "torch", torch.__version__, "cuda", torch.cuda.is_available())')"
