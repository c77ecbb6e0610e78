#!/usr/bin/env bash
# Create (idempotently) the virtualenv holding the SDN controllers that the
# endpoint tests drive: Faucet 1.10.12 and the os-ken it pins (3.1.0, the last
# line that still ships `osken-manager`). They live in their own venv, apart
# from the project's .venv, because Faucet pins exact versions of os-ken,
# eventlet and friends that Tandem itself does not need (Tandem has its own
# OpenFlow codec) and must not be constrained by.
#
# Usage: scripts/setup-controllers.sh [VENV_DIR]   (default: .venv/controllers, git-ignored with .venv)
# Prints the venv path on success. Tests find it via $TANDEM_CONTROLLERS_VENV
# or the default path.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-${TANDEM_CONTROLLERS_VENV:-.venv/controllers}}"
FAUCET_VERSION=1.10.12
OSKEN_VERSION=3.1.0
STAMP="$VENV/.controllers-$FAUCET_VERSION-$OSKEN_VERSION"

if [[ -f "$STAMP" && -x "$VENV/bin/osken-manager" && -x "$VENV/bin/faucet" ]]; then
  echo "$VENV"
  exit 0
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q "faucet==$FAUCET_VERSION" "os-ken==$OSKEN_VERSION"
"$VENV/bin/osken-manager" --version >/dev/null 2>&1 || { echo "error: osken-manager not runnable in $VENV" >&2; exit 1; }
touch "$STAMP"
echo "$VENV"
