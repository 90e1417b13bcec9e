#!/usr/bin/env bash
# The release artifact of the plugin, built and then proven in the real Iggy runtime:
#
#   scripts/release.sh
#
# 1. Builds the plugin's `.so` with RocksDB and its compression libraries (snappy, lz4, zstd,
#    zlib, bzip2) compiled from the sources their -sys crates carry, position-independent and
#    linked in statically, and with libstdc++ linked in statically, so that it needs nothing on
#    the host beyond the C runtime (libc, libm, libgcc_s). The suites' builds link the system's
#    RocksDB instead (.cargo/config.toml): a distribution's librocksdb.a is compiled for
#    executables and cannot go into a shared object, and compiling RocksDB costs a cold build
#    about 700 CPU-seconds (docs/install.md). The build has a target directory of its own
#    (target/artifact), kept between runs, and the version comes from `cargo metadata`.
# 2. Packs dist/iggy_connector_fluss_source-<version>-linux-<arch>.tar.gz: one directory of that
#    name holding the `.so`, LICENSE, README.md, CHANGELOG.md, docs/, config.toml,
#    example_config/ and SHA256SUMS (of those files); dist/<archive>.sha256 beside it is for
#    `sha256sum -c`.
# 3. Smoke test of the unpacked archive's `.so`, which FLUSS_PLUGIN_LIBRARY names to the test
#    suites (built as scripts/test.sh builds them): tests/artifact.rs (the files, no shared
#    library beyond the C runtime, the glibc docs/install.md and the README name),
#    tests/symbols.rs (the five symbols, it loads), then `iggy-connectors` from IGGY_BIN_DIR
#    loading it against a local Fluss cluster:
#    a log table as JSON through a restart of the runtime, as Arrow IPC, and a primary-key
#    table's KV snapshot (tests/runtime). It needs what scripts/test-runtime.sh needs:
#    IGGY_BIN_DIR, Java 17+ and Maven.
#
# Any failure stops the script with a non-zero status, and the archive is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
started=$(date +%s)
say() { echo "release: $* (at $(($(date +%s) - started)) s)" >&2; }
fail() {
  echo "release: FAILED: $*" >&2
  exit 1
}

if [ -z "${IGGY_BIN_DIR:-}" ] || [ ! -x "$IGGY_BIN_DIR/iggy-connectors" ]; then
  fail "IGGY_BIN_DIR must name the directory of iggy-server, iggy-connectors and iggy (apache/iggy cc269ef; CONTRIBUTING.md, \"The Iggy binaries\"): the smoke test loads the artifact in the real runtime"
fi
for tool in cc c++ objdump sha256sum python3; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (docs/install.md lists the prerequisites)"
done

package=iggy_connector_fluss_source
read -r version target_dir < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
version = next(p["version"] for p in meta["packages"] if p["name"] == sys.argv[1])
print(version, meta["target_directory"])' "$package")
arch=$(uname -m)
name=$package-$version-linux-$arch
work=$(mktemp -d)
dist=$ROOT/dist
archive=$dist/$name.tar.gz
# The archive is kept only when the smoke test passes.
cleanup() {
  local status=$?
  rm -rf "$work"
  if [ "$status" != 0 ]; then rm -f "$archive" "$archive.sha256"; fi
}
trap cleanup EXIT

# 1. The build. Cargo reads .cargo/config.toml from its working directory upwards, so run from
# outside the checkout it links nothing of the system's (no ROCKSDB_LIB_DIR, no pkg-config
# libzstd), and librocksdb-sys compiles its bundled RocksDB; *_COMPILE insists on it even when
# the caller's environment names a system library. The compression features are named here only:
# the suites' builds keep theirs. `-lstdc++`, which librocksdb-sys asks for, finds the C++
# compiler's libstdc++.a first in a directory of its own, and scripts/release-glibc-compat.c
# keeps that archive from raising the glibc the library needs; both are passed to the plugin's
# link only. Their paths stay put and the object's name carries its source's hash: cargo
# compiles the plugin again when the arguments change, and only then.
link=$target_dir/artifact/link
cxx_lib=$(c++ -print-file-name=libstdc++.a)
[[ $cxx_lib == /* && -f $cxx_lib ]] ||
  fail "the C++ compiler has no libstdc++.a (Debian/Ubuntu: sudo apt-get install -y build-essential)"
mkdir -p "$link/static-cxx"
ln -sfn "$cxx_lib" "$link/static-cxx/libstdc++.a"
compat=$link/glibc-compat-$(sha256sum scripts/release-glibc-compat.c | cut -c1-16).o
[ -f "$compat" ] || cc -O2 -fPIC -Wall -Werror -c scripts/release-glibc-compat.c -o "$compat"
if [ -d "$target_dir/artifact/release" ]; then
  say "building $name"
else
  say "building $name (this first build in target/artifact compiles every dependency and RocksDB)"
fi
(
  cd "$work"
  env -u ROCKSDB_LIB_DIR -u ROCKSDB_STATIC -u ROCKSDB_INCLUDE_DIR -u SNAPPY_LIB_DIR -u LZ4_LIB_DIR \
    -u ZSTD_SYS_USE_PKG_CONFIG -u RUSTFLAGS -u RUSTC_WORKSPACE_WRAPPER \
    ROCKSDB_COMPILE=1 SNAPPY_COMPILE=1 LZ4_COMPILE=1 CARGO_TARGET_DIR="$target_dir/artifact" \
    cargo rustc --release --locked --manifest-path "$ROOT/Cargo.toml" -p "$package" --lib \
    --features rocksdb/snappy,rocksdb/lz4,rocksdb/zstd,rocksdb/zlib,rocksdb/bzip2 \
    -- -L "native=$link/static-cxx" -C "link-arg=$compat"
) || fail "the build failed (above)"
library=$target_dir/artifact/release/lib$package.so
[ -f "$library" ] || fail "the build did not produce $library"

# 2. The archive.
stage=$work/stage/$name
mkdir -p "$stage" "$dist"
rm -f "$archive" "$archive.sha256"
cp "$library" LICENSE README.md CHANGELOG.md config.toml "$stage/"
cp -r docs example_config "$stage/"
(cd "$stage" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"$work/sums")
mv "$work/sums" "$stage/SHA256SUMS"
# Reproducible: sorted names, one owner, the commit's time on every file.
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%FT%TZ)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
  -C "$work/stage" -czf "$archive" "$name"
(cd "$dist" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
say "packed $archive ($(du -h "$archive" | cut -f1))"

# 3. The smoke test, of what the archive holds.
unpacked=$work/unpacked
mkdir -p "$unpacked"
(cd "$dist" && sha256sum -c --quiet "$name.tar.gz.sha256") || fail "the archive does not match its checksum"
tar -xzf "$archive" -C "$unpacked"
(cd "$unpacked/$name" && sha256sum -c --quiet SHA256SUMS) || fail "the unpacked files do not match SHA256SUMS"
export FLUSS_PLUGIN_LIBRARY=$unpacked/$name/lib$package.so
libs=$(objdump -p "$FLUSS_PLUGIN_LIBRARY" | awk '$1 == "NEEDED" {print $2}' | tr '\n' ' ')
glibc=$(objdump -p "$FLUSS_PLUGIN_LIBRARY" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -V | tail -n 1)
say "the library needs ${libs}and ${glibc/_/ } or newer"

source scripts/cargo-env.sh
tests=(cargo test --release --workspace --no-fail-fast)
say "smoke test: what the library needs from the host, its symbols"
"${tests[@]}" --test artifact --test symbols -- --test-threads=1 ||
  fail "tests/artifact.rs or tests/symbols.rs failed against $FLUSS_PLUGIN_LIBRARY"
say "smoke test: the library in iggy-connectors (a log table as JSON and Arrow IPC, a primary-key snapshot)"
"${tests[@]}" --test runtime -- --test-threads=1 --exact \
  log_json::every_row_arrives_once_in_bucket_order_through_a_graceful_restart \
  arrow_ipc::arrow_ipc_payloads_decode_to_the_rows_written \
  snapshot::a_snapshot_of_200_000_keys_replays_to_the_table ||
  fail "the runtime tests failed against $FLUSS_PLUGIN_LIBRARY"

say "done: $archive and $archive.sha256"
