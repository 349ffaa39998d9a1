# Build: docker build -t lbguard/lbguard:0.1.0 .
FROM rust:1.95-bookworm AS build
WORKDIR /src
# The image ships a stripped binary (no debug info, no symbols); local release builds keep
# their line tables for backtraces.
ENV CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols
# Dependencies first, so source edits reuse the cached dependency layer. Every target the
# manifest names must exist, so the bench and the e2e suite get stand-ins.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src/bin/lbguard-bench tests/e2e && echo 'fn main() {}' > src/main.rs && echo '' > src/lib.rs \
    && echo 'fn main() {}' > src/bin/lbguard-bench/main.rs && echo 'fn main() {}' > tests/e2e/main.rs \
    && cargo build --release --locked --bin lbguard \
    && rm -rf src
COPY src ./src
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --bin lbguard

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/lbguard /usr/local/bin/lbguard
# The chart runs it as 65532 with a read-only root filesystem; it writes nothing.
USER 65532:65532
# The image as the CLI: `podman run -v "$PWD:/manifests:ro" IMAGE check .` names files as the
# repository does (what code scanning matches SARIF results against).
WORKDIR /manifests
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/lbguard"]
# Both roles take their command: the chart runs `serve ...`, CI runs `check ...`. Without
# one, the image says how to use it for each instead of guessing.
CMD ["--help"]
