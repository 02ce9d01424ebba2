#!/usr/bin/env bash
# Install a CRIU that works on this kernel for the runc restore path (runtime/backends/criu.py), at
# /opt/pixelbox-criu/criu (or $CRIU_DEST/criu). scripts/setup.sh runs it; quick when one works already.
#
# Debian 12's criu 3.17 cannot start on a 6.x kernel ("vdso: Unexpected rt vDSO area bounds");
# CRIU 4.x can. If the system's `criu check` passes, that one is linked and nothing is unpacked.
# Otherwise the .deb files of a newer criu and of the libraries it needs (Debian sid's criu 4.x needs
# sid's glibc: about 26 packages, 8 MB) are unpacked side by side under $CRIU_DEST/root and run through
# their own dynamic loader, so nothing of the system changes. Without a directory of .deb files they
# are downloaded from the Debian archive through a private apt state (the system's sources, lists and
# package state are not touched) into $CRIU_DEBS (default /var/cache/pixelbox/criu-debs).
#
# Usage: scripts/install-criu.sh [DIRECTORY-OF-DEBS]
set -euo pipefail

DEST=${CRIU_DEST:-/opt/pixelbox-criu}
DEBS=${1:-${CRIU_DEBS:-/var/cache/pixelbox/criu-debs}}
SUITE=${CRIU_SUITE:-sid}

if [ -x "$DEST/criu" ] && "$DEST/criu" check >/dev/null 2>&1; then
    echo "==> criu: $DEST/criu works here ($("$DEST/criu" --version | head -1))"
    exit 0
fi
if command -v criu >/dev/null && criu check >/dev/null 2>&1; then
    mkdir -p "$DEST"
    ln -sfn "$(command -v criu)" "$DEST/criu"
    echo "==> the system's criu works here: $DEST/criu -> $(command -v criu)"
    exit 0
fi
# Downloads criu and its dependency closure from Debian $SUITE into $DEBS, with apt state of its own.
download_debs() {
    local state
    state=$(mktemp -d)
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$DEBS"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $SUITE main" \
        >"$state/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Dir::State::status=/dev/null
        -o APT::Sandbox::User=root)
    echo "==> criu: downloading criu and its libraries from Debian $SUITE into $DEBS"
    apt-get "${opts[@]}" update -qq
    local packages
    packages=$(apt-cache "${opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
        --no-breaks --no-replaces --no-enhances criu | grep -v '^ \|<' | sort -u)
    rm -f "$DEBS"/*.deb
    # shellcheck disable=SC2086
    (cd "$DEBS" && apt-get "${opts[@]}" download -qq $packages)
    rm -rf "$state"
}

if ! ls "$DEBS"/criu_*.deb >/dev/null 2>&1; then
    download_debs || { echo "could not download criu's .deb files from Debian $SUITE into $DEBS" >&2; exit 1; }
fi

NEW="$DEST.new.$$"
rm -rf "$NEW"
mkdir -p "$NEW/root"
for deb in "$DEBS"/*.deb; do
    case "$(basename "$deb")" in runsc_*) continue ;; esac
    dpkg-deb -x "$deb" "$NEW/root"
done
LIBS="$DEST/root/usr/lib/x86_64-linux-gnu:$DEST/root/lib/x86_64-linux-gnu"
cat >"$NEW/criu" <<EOF
#!/bin/sh
# CRIU from $(ls "$DEBS"/criu_*.deb | xargs -n1 basename), with the libraries unpacked beside it
exec $DEST/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $LIBS $DEST/root/usr/sbin/criu "\$@"
EOF
chmod 755 "$NEW/criu"
rm -rf "$DEST.old"
if [ -e "$DEST" ]; then mv "$DEST" "$DEST.old"; fi
mv "$NEW" "$DEST"
rm -rf "$DEST.old"
"$DEST/criu" --version | head -1
"$DEST/criu" check
