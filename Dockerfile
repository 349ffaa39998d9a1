# Build: docker build -t lbguard/lbguard:0.1.0 .
FROM rust:1.95-bookworm AS build
WORKDIR /src
# Dependencies first, so source edits reuse the cached dependency layer. Every target the
# manifest names must exist, so the bench and the e2e suite get stand-ins.
COPY Cargo.toml Cargo.lock build.rs ./
# The profile of lbguard answering admissions (`scripts/bench-http --profile` writes it): the
# optimizer lays out and inlines by it, the dependencies' code on the request path too (hyper,
# rustls, serde_json), so it comes before them. A profile older than the code still builds:
# functions that changed are optimized without it.
COPY pgo ./pgo
ENV RUSTFLAGS="-Cprofile-use=/src/pgo/lbguard.profdata"
RUN mkdir -p src/bin/lbguard-bench tests/e2e && echo 'fn main() {}' > src/main.rs && echo '' > src/lib.rs \
    && echo 'fn main() {}' > src/bin/lbguard-bench/main.rs && echo 'fn main() {}' > tests/e2e/main.rs \
    && cargo build --release --locked --bin lbguard \
    && rm -rf src
# build.rs hands the linker link/hot-functions.txt, the functions an admission runs through
# in the order they go into the binary. The list names this stage's symbols: the release
# profile as it stands (another profile gives them other hashes) at these paths (/src and the
# image's cargo home enter ThinLTO's `.llvm.` names); `scripts/bench-http --hot-functions`
# profiles this stage to write it. COPY keeps the files' times, older than the dependency
# build: touched, so cargo rebuilds lbguard and reruns build.rs. The image ships the binary
# stripped afterwards.
COPY link ./link
COPY src ./src
RUN touch src/main.rs src/lib.rs link/hot-functions.txt \
    && cargo build --release --locked --bin lbguard \
    && strip -o /src/lbguard target/release/lbguard

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/lbguard /usr/local/bin/lbguard
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
