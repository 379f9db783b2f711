#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (an Ubuntu image with
# this zip unpacked in /autograder/source). It installs Python and the kit's requirements into a
# virtual environment that run_autograder uses for every submission. The environment lives outside
# /autograder, all of which is off limits to a student's kernel, while the kernel needs its Python.
set -euo pipefail

ROOT="${AUTOGRADER_GRADESCOPE_ROOT:-/autograder}"
VENV="${AUTOGRADER_VENV:-/opt/autograder-venv}"
export DEBIAN_FRONTEND=noninteractive

apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip

python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --upgrade pip
"$VENV/bin/python" -m pip install -r "$ROOT/source/requirements.txt"

# Fail the image build, not every submission, if the kit cannot be imported or finds no lab.
cd "$ROOT/source"
"$VENV/bin/python" -m autograder.gradescope --check
