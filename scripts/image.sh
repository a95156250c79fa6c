#!/bin/sh
# image.sh — builds predictd's OCI image (make image) with Debian's buildah,
# from this build's binaries and this machine's Debian files only
# (scripts/image-root.sh): no base image, no registry. Tags it
# predictd:VERSION (server/srv.h's SRV_VERSION_STRING) and prints its size.
#   BUILD=build scripts/image.sh [TAG]
# docs/deploy.md says how to run, test (make image-test) and push it.
set -eu
BUILD=${BUILD:-build}
VERSION=$(sed -n 's/^#define SRV_VERSION_STRING "predictd \(.*\)"$/\1/p' server/srv.h)
TAG=${1:-predictd:$VERSION}
ROOT=$BUILD/image/root

command -v buildah >/dev/null || { echo "image.sh: buildah is missing (scripts/install-deps.sh --if-missing image)" >&2; exit 1; }
scripts/image-root.sh "$BUILD" "$ROOT"

export BUILDAH_FORMAT=docker
c=$(buildah from scratch)
trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
buildah add --quiet "$c" "$ROOT" / >/dev/null
# TF Serving's image: MODEL_NAME under MODEL_BASE_PATH unless the command
# line names a model (srv_args_env); REST 8501, gRPC 8500 (when predictd has
# gRPC); the numeric user so that Kubernetes' runAsNonRoot can check it.
buildah config \
    --author "predictd" \
    --created-by "scripts/image.sh" \
    --label org.opencontainers.image.title=predictd \
    --label org.opencontainers.image.version="$VERSION" \
    --label org.opencontainers.image.description="predictd: TF Serving REST and KServe v2 model server" \
    --user 10001:10001 \
    --workingdir /var/lib/predictd \
    --env MODEL_NAME=model \
    --env MODEL_BASE_PATH=/models \
    --env TZ=UTC \
    --port 8501 --port 8500 \
    --volume /models \
    --entrypoint '["/usr/bin/predictd"]' \
    --cmd '[]' \
    --stop-signal SIGTERM \
    --healthcheck 'CMD /usr/bin/predictctl --timeout 2 ready' \
    --healthcheck-interval 10s --healthcheck-timeout 3s --healthcheck-start-period 30s \
    --healthcheck-retries 3 \
    "$c"
# HEALTHCHECK and STOPSIGNAL are Docker image fields (OCI images have no
# health check): the docker format keeps them; podman and Docker run both.
buildah commit --quiet --format docker --rm "$c" "$TAG" >/dev/null
trap - EXIT
size=$(podman image inspect --format '{{.Size}}' "$TAG" 2>/dev/null || buildah inspect --format '{{.Size}}' "$TAG")
echo "image $TAG: $size bytes ($(awk "BEGIN { printf \"%.1f\", $size / 1e6 }") MB) uncompressed"
