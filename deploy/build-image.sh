#!/usr/bin/env bash
# `make image`: builds deploy/Dockerfile with podman and prints the image name last.
#
#   IMAGE       the tag to build (default localhost/deidstream:<version in pyproject.toml>)
#   BASE_IMAGE  the base of both stages; unset: the official python:3.11-slim when podman
#               already has it, else the Debian base deploy/base-image.sh makes (no registry
#               is contacted unless BASE_IMAGE names an image podman must pull)
#   REBUILD=1   build even when the image was built from the same sources and base
#   PIP_CA      CA bundle handed to pip as a build secret (default: the host's bundle; it is
#               mounted for the install step only and never stored in the image)
#
# Installs podman, runc (and debootstrap for the local base) with apt-get when they are
# missing; where it cannot, it stops with one line naming what is missing.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/podman/containers.conf}"
fail() { echo "make image: $*" >&2; exit 1; }

# ensure TOOL... : installs the missing ones (Debian package names equal the commands)
ensure() {
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 \
    || fail "missing ${missing[*]}, and no apt-get to install them (install: ${missing[*]})"
  [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}; as root: apt-get install ${missing[*]}"
  echo "installing ${missing[*]} (apt-get)" >&2
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
    || fail "apt-get install ${missing[*]} failed"
}

# slirp4netns and catatonit: the image test's pod (apt brings them as podman's Recommends,
# unless recommends are off)
ensure podman runc slirp4netns catatonit
podman info >/dev/null 2>&1 \
  || fail "podman does not work here: $(podman info 2>&1 | grep -m1 -i error || echo 'podman info failed')"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/pyproject.toml" | head -n1)"
image="${IMAGE:-localhost/deidstream:$version}"
base="${BASE_IMAGE:-}"
pull=(--pull=missing)
if [ -z "$base" ]; then
  if podman image exists docker.io/library/python:3.11-slim; then
    base=docker.io/library/python:3.11-slim
  else
    ensure debootstrap
    base="$("$here/base-image.sh")"
  fi
  pull=(--pull=never)
fi

secret=()
ca="${PIP_CA:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$ca" ] && secret=(--secret "id=pip-ca,src=$ca")

# what the image is made of: an image built from the same files on the same base is kept
inputs="$(
  cd "$root" && {
    echo "$base $(podman image inspect --format '{{.Id}}' "$base" 2>/dev/null || true)"
    find pyproject.toml README.md pipelines surrogates keystore service deploy/Dockerfile \
      deploy/Dockerfile.dockerignore -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
      | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -c1-16
)"
built="$(podman image inspect --format '{{index .Labels "org.deidstream.inputs"}}' "$image" 2>/dev/null || true)"
if [ "$built" = "$inputs" ] && [ -z "${REBUILD:-}" ]; then
  echo "$image is up to date (same sources and base; REBUILD=1 builds it again)" >&2
  echo "$image"
  exit 0
fi

old="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
echo "building $image on $base" >&2
start=$SECONDS
# --layers=false: no intermediate (untagged) images are kept, only the tagged result
podman build --format docker --layers=false "${pull[@]}" "${secret[@]}" \
  --build-arg "BASE_IMAGE=$base" --label "org.deidstream.inputs=$inputs" \
  --ignorefile "$here/Dockerfile.dockerignore" \
  -f "$here/Dockerfile" -t "$image" "$root" >&2 \
  || fail "podman build failed (output above)"
new="$(podman image inspect --format '{{.Id}}' "$image")"
# the previous build of this tag would stay behind untagged: drop it unless a container uses it
if [ -n "$old" ] && [ "$old" != "$new" ]; then
  podman rmi "$old" >/dev/null 2>&1 || echo "previous $image ($old) is still used by a container" >&2
fi
# local bases of earlier versions of deploy/base-image.sh, now that no image of ours needs them
if [ "${base#localhost/deidstream-base:}" != "$base" ]; then
  podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/deidstream-base:' \
    | grep -vx "$base" | xargs -r podman rmi >/dev/null 2>&1 || true
fi
size="$(podman image inspect --format '{{.Size}}' "$image")"
echo "built $image: $((size / 1000000)) MB in $((SECONDS - start)) s (base $base)" >&2
echo "$image"
