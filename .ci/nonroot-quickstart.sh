# Sourced by .ci/run: the README's first command as a user without root. Once an administrator
# has installed the system packages, `scripts/quickstart.sh --messages 3` must run fully as an
# ordinary user, with an ordinary PATH (no /sbin), in a fresh clone.
#
# The user (NONROOT_USER) gets a fresh clone of this checkout, Rust through hard links to the
# toolchain and crate registry CI uses (readable, nothing copied), and a copy of this checkout's
# compiled dependencies, taken once CI's own quickstart has built them: its cargo then compiles
# only the workspace's crates (their paths differ), not a second cold build.
#
#   nonroot_quickstart_start DIR   as root: prepares the user and the clone, then starts the
#                                  quickstart as the user in the background; its stdout, stderr,
#                                  exit status and duration go to DIR
#   nonroot_quickstart_check DIR   waits for it; fails (status 1) unless it exited 0 and printed
#                                  at least 3 messages of each demo table

NONROOT_USER=${NONROOT_USER:-fluss-quickstart}

nonroot_quickstart_start() {
  local out=$1 home sysroot registry
  mkdir -p "$out"
  id -u "$NONROOT_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$NONROOT_USER"
  home=$(getent passwd "$NONROOT_USER" | cut -d: -f6)
  rm -rf "${home:?}/clone" "$home/rust" "$home/.cargo"
  git clone --quiet --no-hardlinks "$PWD" "$home/clone"
  mkdir -p "$home/clone/target/release"
  cp -a target/release/build target/release/deps target/release/.fingerprint "$home/clone/target/release/"
  chown -R "$NONROOT_USER:" "$home/clone"
  # Hard links where the file system allows them. Directories belong to the user (cargo creates
  # files in them); the files stay root's, read-only to the user.
  sysroot=$(readlink -f "$(rustc --print sysroot)")
  registry=${CARGO_HOME:-$HOME/.cargo}/registry
  mkdir -p "$home/.cargo"
  cp -al "$sysroot" "$home/rust" 2>/dev/null || cp -a "$sysroot" "$home/rust"
  cp -al "$registry" "$home/.cargo/registry" 2>/dev/null || cp -a "$registry" "$home/.cargo/registry"
  find "$home/.cargo" -type d -exec chown "$NONROOT_USER:" {} +
  (
    started=$(date +%s)
    set +e
    runuser -u "$NONROOT_USER" -- env -i HOME="$home" USER="$NONROOT_USER" LANG=C.UTF-8 \
      PATH="$home/rust/bin:/usr/local/bin:/usr/bin:/bin" CARGO_HOME="$home/.cargo" \
      bash -c 'cd ~/clone && exec scripts/quickstart.sh --messages 3' \
      </dev/null >"$out/stdout" 2>"$out/stderr"
    echo $? >"$out/status.part"
    echo $(($(date +%s) - started)) >"$out/seconds"
    mv "$out/status.part" "$out/status"
  ) &
  NONROOT_QUICKSTART_PID=$!
}

nonroot_quickstart_check() {
  local out=$1 table count
  wait "$NONROOT_QUICKSTART_PID" || true
  echo "ci: the quickstart as $NONROOT_USER: $(cat "$out/seconds") s, exit status $(cat "$out/status")" >&2
  if [ "$(cat "$out/status")" != 0 ]; then
    tail -n 30 "$out/stderr" >&2
    return 1
  fi
  for table in demo.orders demo.customers; do
    count=$(grep -c "\"fluss_table\":\"$table\"" "$out/stdout" || true)
    if [ "$count" -lt 3 ]; then
      echo "ci: the quickstart as $NONROOT_USER printed $count messages of $table, expected at least 3" >&2
      return 1
    fi
  done
  tail -n 2 "$out/stderr" >&2
}

# What nonroot_quickstart_start left in the user's home (the clone with its build, the links).
nonroot_quickstart_clean() {
  local home
  home=$(getent passwd "$NONROOT_USER" | cut -d: -f6)
  [ -n "$home" ] && rm -rf "$home/clone" "$home/rust" "$home/.cargo"
}
