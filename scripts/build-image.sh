#!/usr/bin/env bash
# Builds an OCI image of Spindle (make image): build/image/spindle_<version>.oci.tar, an
# oci-archive (podman load, skopeo copy oci-archive:... docker-daemon:..., or a registry push).
# Only Debian's packages go in: buildah from scratch, the debootstrap minbase of Debian 12 (the
# tarball test/helpers/debian-root.ts caches in ~/.cache/spindle, made here when missing), and the
# .deb of make deb installed in it with apt-get in a chroot, so no base image is pulled from a
# registry and nothing is run by a container runtime. buildah keeps its storage under build/image
# (vfs driver: no overlay mount needed), away from the machine's own /var/lib/containers.
#
#   scripts/build-image.sh <version>
set -euo pipefail

version=${1:?usage: build-image.sh <version>}
root=$(cd "$(dirname "$0")/.." && pwd)
deb=$root/build/deb/spindle_${version}_amd64.deb
out=$root/build/image
base=$HOME/.cache/spindle/debian-bookworm-minbase.tar
[ -f "$deb" ] || { echo "build-image: $deb is missing: run make deb" >&2; exit 2; }
if ! command -v buildah >/dev/null 2>&1; then
  echo "build-image: installing buildah"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends buildah >/dev/null
fi
mkdir -p "$out"
b=(buildah --root "$out/storage" --runroot "$out/run" --storage-driver vfs)

if [ ! -f "$base" ]; then
  echo "build-image: debootstrap --variant=minbase bookworm (cached in $base)"
  tmp=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$tmp" http://deb.debian.org/debian >/dev/null
  mkdir -p "$(dirname "$base")"
  tar -C "$tmp" --numeric-owner -cf "$base.$$.tmp" . && mv "$base.$$.tmp" "$base"
  if grep -q " $tmp[ /]" /proc/self/mountinfo; then echo "build-image: $tmp still has mounts; left in place" >&2; else rm -rf "$tmp"; fi
fi

ctr=$("${b[@]}" from scratch)
mnt=$("${b[@]}" mount "$ctr")
cleanup() {
  umount "$mnt/proc" 2>/dev/null || true
  "${b[@]}" rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "build-image: Debian 12 minbase + $(basename "$deb")"
tar -C "$mnt" --numeric-owner -xpf "$base"
chmod 0755 "$mnt"
cp /etc/resolv.conf "$mnt/etc/resolv.conf"
cp "$deb" "$mnt/tmp/"
mount -t proc proc "$mnt/proc"
in_root() { chroot "$mnt" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >/dev/null
# The generated admin password would be the same in every container of the image: without it the
# broker generates one at its first start and prints it once (or pass SPINDLE_ADMIN_PASSWORD).
rm -f "$mnt/etc/spindle/spindle.env"
in_root apt-get clean
rm -rf "$mnt/var/lib/apt/lists/"* "$mnt/tmp/"* "$mnt/var/log/"*.log "$mnt/var/cache/debconf/"*-old
: > "$mnt/etc/resolv.conf"
umount "$mnt/proc"

# What the unit does, as image settings: its user, directory and command; the data a volume.
"${b[@]}" config \
  --user spindle:spindle --workingdir /var/lib/spindle \
  --entrypoint '["/usr/bin/spindle"]' --cmd '--config /etc/spindle/spindle.yaml' \
  --port 1883 --port 8083 --port 8883 --port 8080 --volume /var/lib/spindle \
  --stop-signal SIGTERM \
  --label org.opencontainers.image.title=spindle --label "org.opencontainers.image.version=$version" \
  --label org.opencontainers.image.base.name=debian:bookworm-minbase \
  "$ctr"
"${b[@]}" commit --quiet --format oci "$ctr" "spindle:$version" >/dev/null
archive=$out/spindle_${version}.oci.tar
rm -f "$archive"
"${b[@]}" push --quiet "spindle:$version" "oci-archive:$archive:spindle:$version"
"${b[@]}" rmi "spindle:$version" >/dev/null
echo "build-image: $archive: $(du -h "$archive" | cut -f1)"
