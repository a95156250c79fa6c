#!/bin/sh
# install-deps.sh — installs every Debian package predictd's build, tests,
# benchmarks and demo need, and the one npm package a test needs (axe-core,
# below). Uses sudo only when not root.
#   scripts/install-deps.sh                    install (apt-get update first)
#   scripts/install-deps.sh --if-missing       install only when something is missing
#   scripts/install-deps.sh --check            exit 1 if something is missing
#   scripts/install-deps.sh --if-missing build only what compiling the binaries needs
#                                              (make, make install: the Makefile)
#   scripts/install-deps.sh --if-missing image what make image / make image-test need
#                                              (podman, buildah, runc; not in the default set)
set -eu

# Compiling and linking the binaries (libopenmpi-dev: predict-train).
BUILD_PACKAGES="build-essential pkg-config libmicrohttpd-dev libcjson-dev libopenblas-dev libyaml-dev \
libprotobuf-c-dev protobuf-c-compiler libsystemd-dev libopenmpi-dev libgnutls28-dev zlib1g-dev \
libgrpc-dev"
# Tests (cmocka, test peers, mpirun, man -l; chromium renders predict-model evaluate's
# HTML report headless in test_evaluate; python3-scipy checks test_data_validation's distances
# against scipy's jensenshannon; python3-xgboost and python3-pandas train the XGBoost models
# test_daemon_xgboost serves; python3-torch and python3-onnx train and export the MLP
# test_daemon_onnx serves, python3-sklearn its ai.onnx.ml models; python3-yaml and
# python3-jsonschema read and check deploy/'s manifests in test_deploy_manifests),
# make CC=clang / make fuzz, make bench, make demo.
OTHER_PACKAGES="clang libclang-rt-14-dev libcmocka-dev curl python3 systemd wrk nginx-light \
haproxy valgrind openmpi-bin man-db groff-base chromium openssl python3-scipy python3-xgboost \
python3-pandas python3-torch python3-onnx python3-sklearn python3-yaml python3-jsonschema \
python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc"
# The container image (make image, make image-test: docs/deploy.md): Debian's
# podman and buildah, runc (crun fails on some hosts), and the files the
# image takes from this machine (CA certificates, tzdata). Only on request:
# make test needs none of them.
IMAGE_PACKAGES="podman buildah runc ca-certificates tzdata"
PACKAGES="$BUILD_PACKAGES $OTHER_PACKAGES"
case "${2:-all}" in
build) PACKAGES=$BUILD_PACKAGES ;;
image) PACKAGES="$BUILD_PACKAGES $IMAGE_PACKAGES" ;;
esac

missing() {
    out=""
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out="$out $p"
    done
    echo "$out"
}

# The console's accessibility check (test_daemon_ui): axe-core from the npm
# registry, pinned by tests/a11y/package-lock.json, installed into
# tests/a11y/node_modules with the machine's npm (npm ci: the lock's version).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
AXE="$ROOT/tests/a11y/node_modules/axe-core/axe.min.js"
NPM_WANTED=no
[ "${2:-all}" = all ] && NPM_WANTED=yes
npm_missing() { [ "$NPM_WANTED" = yes ] && [ ! -e "$AXE" ]; }
npm_install() {
    npm_missing || return 0
    (cd "$ROOT/tests/a11y" && npm ci --no-audit --no-fund --loglevel=error)
}

case "${1:-}" in
--check)
    m=$(missing)
    npm_missing && m="$m npm:axe-core (tests/a11y)"
    [ -z "$m" ] || { echo "missing packages:$m" >&2; exit 1; }
    exit 0 ;;
--if-missing)
    m=$(missing)
    if [ -z "$m" ]; then
        npm_install
        exit 0
    fi
    echo "install-deps: installing missing packages:$m" >&2 ;;
esac

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# nginx and haproxy are only used as benchmark baselines and test peers on
# loopback; keep their Debian services from starting on install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $PACKAGES
npm_install
