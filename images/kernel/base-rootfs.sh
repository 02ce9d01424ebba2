#!/usr/bin/env bash
# Builds a minimal Debian bookworm root filesystem with CPython 3.11 and writes it as a tar
# archive for `docker import`. It is the kernel image's base where no public Python base image
# can be pulled: it needs only a Debian mirror, root and debootstrap.
#
# Usage: base-rootfs.sh OUTPUT.tar [MIRROR]
# MIRROR defaults to $PIXELBOX_DEBIAN_MIRROR, else the first Debian mirror apt is configured
# with, else http://deb.debian.org/debian.
set -euo pipefail

out=${1:?usage: base-rootfs.sh OUTPUT.tar [MIRROR]}
suite=bookworm
packages=python3.11

configured_mirror() {
    # First "URIs:" (deb822) or "deb URL" (one-line) entry that points at a Debian archive.
    cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
        | awk '/^URIs:/ {print $2} /^deb / {print $2}' \
        | grep -E '/debian/?$' | head -n 1 || true
}

mirror=${2:-${PIXELBOX_DEBIAN_MIRROR:-$(configured_mirror)}}
mirror=${mirror:-http://deb.debian.org/debian}

if [[ $(id -u) -ne 0 ]]; then
    echo "base-rootfs.sh: debootstrap needs root; run it as root (e.g. through scripts/setup.sh)" >&2
    exit 2
fi
if ! command -v debootstrap >/dev/null; then
    echo "base-rootfs.sh: debootstrap is not installed; run: apt-get install -y debootstrap" >&2
    exit 2
fi

root=$(mktemp -d /var/tmp/pixelbox-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

echo "debootstrap $suite (minbase + $packages) from $mirror"
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
    cat "$root/debootstrap/debootstrap.log" >>"$root.log" 2>/dev/null || true
    tail -n 30 "$root.log" >&2
    echo "base-rootfs.sh: debootstrap failed (full log: $root.log)" >&2
    exit 1
}
rm -f "$root.log"

# Nothing in the kernel image installs packages: drop apt state, caches, docs and locales.
# Python's own __pycache__ stays: the container's root is read-only, so it could not be rebuilt.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/var/log/* "$root"/tmp/* "$root"/root/.cache

tar --numeric-owner --xattrs -C "$root" -cf "$out" .
echo "wrote $out ($(du -h "$out" | cut -f1))"
