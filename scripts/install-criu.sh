#!/usr/bin/env bash
# Install a CRIU that works on this kernel for the runc restore path (PIXELBOX_RUNC_RESTORE=1,
# runtime/backends/criu.py), at /opt/pixelbox-criu/criu (or $CRIU_DEST/criu).
#
# Debian 12's criu 3.17 cannot start on a 6.x kernel ("vdso: Unexpected rt vDSO area bounds");
# CRIU 4.x can. If the system's `criu check` passes, that one is linked and nothing is unpacked.
# Otherwise the .deb files of a newer criu and of the libraries it needs (Debian sid's criu 4.2.1
# needs sid's glibc: about 30 packages) are unpacked side by side under $CRIU_DEST/root and run through
# their own dynamic loader, so nothing of the system changes. Get them once, for example with a
# private apt state (downloads sid's package index):
#   mkdir -p /tmp/sid/lists/partial /tmp/sid/cache/archives/partial /tmp/sid/debs
#   echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main' \
#     > /tmp/sid/sources.list
#   APT="apt-get -o Dir::Etc::SourceList=/tmp/sid/sources.list -o Dir::Etc::SourceParts=/dev/null
#        -o Dir::State::Lists=/tmp/sid/lists -o Dir::Cache=/tmp/sid/cache"
#   $APT update && (cd /tmp/sid/debs && $APT download criu libcompel1 libc6 ...)
#
# Usage: scripts/install-criu.sh [DIRECTORY-OF-DEBS]   (default: $CRIU_DEBS)
set -euo pipefail

DEST=${CRIU_DEST:-/opt/pixelbox-criu}
DEBS=${1:-${CRIU_DEBS:-}}

if command -v criu >/dev/null && criu check >/dev/null 2>&1; then
    mkdir -p "$DEST"
    ln -sfn "$(command -v criu)" "$DEST/criu"
    echo "==> the system's criu works here: $DEST/criu -> $(command -v criu)"
    exit 0
fi
if [ -z "$DEBS" ] || ! ls "$DEBS"/criu_*.deb >/dev/null 2>&1; then
    echo "no working system criu, and no directory of .deb files with a criu_*.deb given (see the comments)" >&2
    exit 1
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
