# One image for every service of the relay (and the reference host API, for the demo).
# Debian 12 packages only, the same list scripts/setup.sh installs.
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ccache pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libboost1.81-dev nlohmann-json3-dev \
      libabsl-dev libgtest-dev libgmock-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY proto proto
COPY common common
COPY gateway gateway
COPY router router
COPY authsvc authsvc
COPY relayctl relayctl
COPY tests tests
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)" \
      --target relay-gateway relay-router relay-authsvc relayctl

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libssl3 php-cli nginx ca-certificates openssl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/ /usr/local/bin/
COPY hostapi /opt/relay/hostapi
COPY deploy /opt/relay/deploy
COPY scripts/make-certs.sh /opt/relay/scripts/make-certs.sh
WORKDIR /opt/relay
USER nobody
