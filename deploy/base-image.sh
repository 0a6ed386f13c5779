#!/usr/bin/env bash
# A Debian bookworm base image with Python 3.11, made without a container registry:
# debootstrap fetches a minimal root file system from the Debian archive apt already uses,
# `podman import` turns it into an image. For `make image` when the official python image is
# not at hand (deploy/Dockerfile takes either as BASE_IMAGE).
#
#   deploy/base-image.sh            prints the image name (built once, then reused)
#
# The tag carries a hash of this script (comments aside): a changed script builds a new base,
# an unchanged one is reused from podman's storage (a minute or more saved per build). Needs
# root, debootstrap and podman. Progress goes to stderr; stdout is the image name alone.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/podman/containers.conf}"
suite=bookworm
packages=python3,python3-venv,ca-certificates
digest="$(grep -v '^[[:space:]]*#' "$0" | sha256sum | cut -c1-12)"  # comments aside
name="localhost/deidstream-base:$suite-$digest"

if command -v podman >/dev/null 2>&1 && podman image exists "$name"; then
  echo "base image: $name (cached)" >&2
  echo "$name"
  exit 0
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "base-image: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "base-image: debootstrap needs root" >&2; exit 1; }

# the first Debian archive in apt's sources (deb822 or one-line format), else Debian's own
mirror="$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'; } \
    | grep -m1 '/debian/\?$' || true
)"
mirror="${mirror:-http://deb.debian.org/debian}"

rootfs="$(mktemp -d /var/tmp/deidstream-base.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
echo "base image: debootstrap $suite from $mirror (about a minute)" >&2
if ! debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" \
  >"$rootfs.log" 2>&1; then
  tail -n 5 "$rootfs.log" >&2
  echo "base-image: debootstrap failed (log: $rootfs.log)" >&2
  exit 1
fi
rm -f "$rootfs.log"
# what an image needs no copy of: downloaded packages, package lists, documentation
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
  "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
  "$rootfs"/usr/share/info/* "$rootfs"/var/log/*.log
# the image must be free of the building host's settings
: >"$rootfs/etc/resolv.conf"
echo deidstream-base >"$rootfs/etc/hostname"

# drop older bases made by earlier versions of this script
podman images --format '{{.Repository}}:{{.Tag}}' \
  | grep '^localhost/deidstream-base:' | grep -vx "$name" \
  | xargs -r podman rmi >/dev/null 2>&1 || true

tar -C "$rootfs" --numeric-owner -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  --message "debootstrap --variant=minbase --include=$packages $suite" \
  - "$name" >/dev/null
echo "base image: $name ($(podman image inspect --format '{{.Size}}' "$name" | awk '{printf "%d MB", $1/1e6}'))" >&2
echo "$name"
