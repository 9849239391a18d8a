# Dockerfile -- gpupack on Debian: built with make in one stage, run as non-root from a slim one
# that holds the binary (stripped), its shared libraries, the shipped policies, the example
# cluster and an SBOM. `make image` builds it with docker, podman or buildah, passing the version,
# the commit and SOURCE_DATE_EPOCH (docs/deploy.md, "The image"). By hand:
#   docker build --build-arg GPUPACK_COMMIT=$(git rev-parse --short HEAD) -t gpupack:latest .
# Pin the bases by digest: --build-arg BUILD_BASE=debian:bookworm@sha256:...
#                          --build-arg RUNTIME_BASE=debian:bookworm-slim@sha256:...
ARG BUILD_BASE=debian:bookworm
ARG RUNTIME_BASE=debian:bookworm-slim

FROM ${BUILD_BASE} AS build
# check: scripts/deps.sh (and so the Makefile) wants it; the unit tests do not run here (CI runs
# them on the same sources and Debian release, plain, under sanitizers and under valgrind).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev binutils \
      libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libgnutls28-dev libnghttp2-dev check \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .dockerignore drops .git: the version comes in as build arguments, as the Makefile computes it
# (GPUPACK_VERSION: `git describe` of a vX.Y.Z tag, else empty; GPUPACK_COMMIT: the short commit,
# "-dirty" for a modified tree). `gpupack --version` prints them.
ARG GPUPACK_VERSION=
ARG GPUPACK_COMMIT=
# the commit's time, for whatever in the toolchain reads it (make image passes it)
ARG SOURCE_DATE_EPOCH
RUN make clean \
 && make -j"$(nproc)" WERROR=1 build \
      GIT_TAG="$GPUPACK_VERSION" GIT_COMMIT="$GPUPACK_COMMIT" GIT_DIRTY= \
 && strip --strip-all -o /gpupack bin/gpupack \
 && dpkg-query -W -f '${binary:Package}\t${Version}\n' gcc-12 binutils libc6-dev make \
      libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libgnutls28-dev libnghttp2-dev \
      > /build-packages.txt

FROM ${RUNTIME_BASE} AS runtime
# tzdata: policy time windows read /usr/share/zoneinfo; ca-certificates: API servers whose
# certificate a public CA signed. apt's caches go too (bases without Debian's docker-clean keep them).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcurl4 libjansson4 libyaml-0-2 libgnutls30 libnghttp2-14 ca-certificates tzdata \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old \
      /var/lib/dpkg/*-old /var/log/apt /var/log/dpkg.log /var/log/alternatives.log \
      /var/cache/ldconfig/aux-cache
COPY --from=build /gpupack /usr/local/bin/gpupack
COPY policies/*.yaml /etc/gpupack/policies/
COPY examples/ /usr/share/gpupack/examples/
COPY LICENSE NOTICE /usr/share/doc/gpupack/

# The SBOM, from Debian's records of the finished runtime (scripts/image-sbom.sh); this stage
# only writes it, so the script itself is not in the image.
FROM runtime AS sbom
ARG BUILD_BASE
ARG RUNTIME_BASE
COPY --from=build /build-packages.txt /tmp/build-packages.txt
COPY scripts/image-sbom.sh /tmp/image-sbom.sh
RUN sh /tmp/image-sbom.sh /usr/local/bin/gpupack /tmp/build-packages.txt \
      "$BUILD_BASE" "$RUNTIME_BASE" > /tmp/sbom.txt

FROM runtime
ARG GPUPACK_VERSION=
ARG GPUPACK_COMMIT=
COPY --from=sbom /tmp/sbom.txt /usr/share/doc/gpupack/sbom.txt
LABEL org.opencontainers.image.title="gpupack" \
      org.opencontainers.image.description="Kubernetes scheduler extender: GPU sharing by memory and compute share" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${GPUPACK_VERSION}" \
      org.opencontainers.image.revision="${GPUPACK_COMMIT}"
USER 65532:65532
# No per-thread allocator caches: each of gpupack's ~30 threads would otherwise keep up
# to ~240 KiB of freed blocks that the once-a-minute heap trim cannot give back, filled
# over hours as threads meet new sizes (docs/reliability.md, "The thread caches off, as
# the image now runs"). The verbs' speed is unchanged (bench/malloc-ab.sh, bench/scale.sh).
# Override with -e.
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=0
# 8765: filter, prioritize, bind, probes, /metrics, /ui; 8443: the admission webhook
EXPOSE 8765 8443
ENTRYPOINT ["/usr/local/bin/gpupack"]
# Live mode in a cluster (the Deployment gives its own args). Outside one, give a cluster file:
#   docker run --rm --network host gpupack:latest serve --cluster /usr/share/gpupack/examples/cluster.yaml ...
CMD ["serve", "--listen", "0.0.0.0:8765", "--policies", "/etc/gpupack/policies"]
