#!/bin/sh
# image.sh -- build the container image from the Dockerfile with docker, podman or buildah and
# copy its SBOM out to build/sbom.txt. `make image` runs it with the version from git; by hand:
#   IMAGE=gpupack:latest GPUPACK_COMMIT=$(git rev-parse --short HEAD) scripts/image.sh
# Environment (all optional):
#   IMAGE               the tag (gpupack:latest; podman and buildah store it as localhost/gpupack:latest)
#   IMAGE_ENGINE        docker, podman or buildah; default: docker if its daemon answers, else
#                       podman, else buildah
#   GPUPACK_VERSION, GPUPACK_COMMIT   what `gpupack --version` shows (the Dockerfile's build args)
#   SOURCE_DATE_EPOCH   the image's creation time (make image: the commit's time); with podman and
#                       buildah also every file's time in the layers (--timestamp)
#   BUILD_BASE, RUNTIME_BASE          the base images, e.g. debian:bookworm-slim@sha256:...
#   IMAGE_BUILD_FLAGS   more flags for the engine's build (CI: --pull=never --isolation=chroot ...)
set -eu
cd "$(dirname "$0")/.."
image=${IMAGE:-gpupack:latest}
engine=${IMAGE_ENGINE:-}
if [ -z "$engine" ]; then
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker
    elif command -v podman >/dev/null 2>&1; then engine=podman
    elif command -v buildah >/dev/null 2>&1; then engine=buildah
    else
        echo "image.sh: no container engine: install docker (and start its daemon), podman or buildah" >&2
        exit 1
    fi
fi

set -- --build-arg "GPUPACK_VERSION=${GPUPACK_VERSION:-}" --build-arg "GPUPACK_COMMIT=${GPUPACK_COMMIT:-}"
[ -n "${BUILD_BASE:-}" ] && set -- "$@" --build-arg "BUILD_BASE=$BUILD_BASE"
[ -n "${RUNTIME_BASE:-}" ] && set -- "$@" --build-arg "RUNTIME_BASE=$RUNTIME_BASE"
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    # docker (BuildKit 0.11+) takes the creation time from this build argument
    set -- "$@" --build-arg "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
    [ "$engine" = docker ] || set -- "$@" --timestamp "$SOURCE_DATE_EPOCH"
fi
case $engine in
    docker|podman) build="$engine build" ;;
    buildah) build="buildah build --layers" ;;
    *) echo "image.sh: IMAGE_ENGINE must be docker, podman or buildah, not $engine" >&2; exit 2 ;;
esac
# IMAGE_BUILD_FLAGS is split on spaces on purpose
# shellcheck disable=SC2086
echo "+ $build $* ${IMAGE_BUILD_FLAGS:-} -t $image ."
# shellcheck disable=SC2086
$build "$@" ${IMAGE_BUILD_FLAGS:-} -t "$image" .

# The SBOM, read from the image without running it
mkdir -p build
sbom=/usr/share/doc/gpupack/sbom.txt
case $engine in
    docker|podman)
        c=$($engine create "$image")
        $engine cp "$c:$sbom" build/sbom.txt.tmp || { $engine rm "$c" >/dev/null; exit 1; }
        $engine rm "$c" >/dev/null ;;
    buildah)
        c=$(buildah from --pull=false "$image")
        if [ "$(id -u)" = 0 ]; then
            cp "$(buildah mount "$c")$sbom" build/sbom.txt.tmp || { buildah rm "$c" >/dev/null; exit 1; }
        else
            buildah unshare sh -c 'cp "$(buildah mount "$1")$2" build/sbom.txt.tmp' sh "$c" "$sbom" ||
                { buildah rm "$c" >/dev/null; exit 1; }
        fi
        buildah rm "$c" >/dev/null ;;
esac
mv build/sbom.txt.tmp build/sbom.txt
echo "image.sh: built $image with $engine: $(awk -F'\t' '$1 == "version" {print $2}' build/sbom.txt); SBOM in build/sbom.txt"
