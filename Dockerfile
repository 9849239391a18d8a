# Dockerfile -- gpupack on Debian: build with make in one stage, run as non-root in a slim one.
#   docker build -t gpupack:latest .
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev \
      libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libgnutls28-dev check \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make clean && make WERROR=1 build

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcurl4 libjansson4 libyaml-0-2 libgnutls30 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/gpupack /usr/local/bin/gpupack
COPY policies/default.yaml /etc/gpupack/policies/default.yaml
USER 65532:65532
EXPOSE 8765
ENTRYPOINT ["/usr/local/bin/gpupack"]
CMD ["serve", "--listen", "0.0.0.0:8765", "--policies", "/etc/gpupack/policies"]
