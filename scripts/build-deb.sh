#!/usr/bin/env bash
# Builds the Debian package of Spindle (make deb): build/deb/spindle_<version>_amd64.deb from the
# compiled tree of `make build`, with dpkg-deb alone (no debhelper: the build is `make build`, and
# a debian/ source tree run by dpkg-buildpackage would run it again and own a second copy of
# the install steps; the maintainer scripts below are what dh_installsystemd would write).
#
#   scripts/build-deb.sh <version> [outdir]      DEB_COMPRESS=xz|gzip|zstd|none (default xz)
#
# Layout of the package:
#   /usr/lib/spindle/{bin/spindle,lib,dist/console,native/node,package.json,node_modules}
#       the broker, its production npm dependencies (npm install --omit=dev from the lock file)
#   /usr/lib/spindle/node/bin/node      the build machine's Node.js 20 (Debian 12's nodejs is 18)
#   /usr/lib/spindle/bin/nats-server    nats-server (ensure-nats.sh's version), for clustered nodes
#   /usr/bin/spindle                    -> ../lib/spindle/bin/spindle
#   /lib/systemd/system/spindle.service deploy/spindle.service
#   /etc/spindle/spindle.yaml           conffile: every key, commented (scripts/default-config.ts)
#   /usr/lib/sysctl.d/99-spindle.conf   deploy/99-spindle.conf
#   /usr/share/doc/spindle/             deploy/README.md, docs/operating/, examples/cluster-example/
# The maintainer scripts are in deploy/debian/. Depends: from dpkg-shlibdeps over every ELF file
# in the package, plus adduser (postinst makes the user).
set -euo pipefail

version=${1:?usage: build-deb.sh <version> [outdir]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/build/deb}
compress=${DEB_COMPRESS:-xz}
arch=amd64
pkg=spindle
stage=$out/stage
lib=$stage/usr/lib/spindle

say() { echo "build-deb: $*"; }

[ -f "$root/lib/main.js" ] && [ -f "$root/native/node/spindle.linux-x64-gnu.node" ] && [ -f "$root/dist/console/index.html" ] \
  || { echo "build-deb: the compiled tree is missing: run \"make build\" first" >&2; exit 2; }
node_bin=$(readlink -f "${SPINDLE_NODE:-$(command -v node)}")
node_major=$("$node_bin" -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || { echo "build-deb: $node_bin is Node.js $node_major; the package carries Node.js 20 (set SPINDLE_NODE)" >&2; exit 2; }
# nats-server of the version scripts/ensure-nats.sh installs, built here as a position-independent
# executable without symbols (Debian's hardening; the Go build cache makes a rebuild quick).
nats_version=$(sed -n 's/^version=${NATS_SERVER_VERSION:-\(v[0-9.]*\)}$/\1/p' "$root/scripts/ensure-nats.sh")
nats_version=${NATS_SERVER_VERSION:-$nats_version}
command -v go >/dev/null 2>&1 || { echo "build-deb: Go is needed to build nats-server (not found)" >&2; exit 2; }
mkdir -p "$out/nats-$nats_version"
nats_bin="$out/nats-$nats_version/nats-server"
[ -x "$nats_bin" ] || GOBIN="$out/nats-$nats_version" GOFLAGS=-buildmode=pie go install -trimpath -ldflags='-s -w' "github.com/nats-io/nats-server/v2@$nats_version"

rm -rf "$stage"
mkdir -p "$lib/bin" "$lib/native/node" "$lib/dist" "$lib/node/bin" "$stage/usr/bin" "$stage/DEBIAN" \
  "$stage/lib/systemd/system" "$stage/etc/spindle" "$stage/usr/lib/sysctl.d" "$stage/usr/share/doc/$pkg/examples"

say "staging the broker"
cp "$root/bin/spindle" "$lib/bin/spindle"
cp -r "$root/lib" "$lib/lib"
cp -r "$root/dist/console" "$lib/dist/console"
cp "$root/native/node/spindle.linux-x64-gnu.node" "$lib/native/node/"
# The version the broker reports; the package's own version may differ (DEB_VERSION).
cp "$root/package.json" "$root/package-lock.json" "$lib/"

say "npm install --omit=dev"
# npm install, not npm ci: see the Makefile's node_modules/.installed (our registry lacks optional
# platform packages of development tools; production dependencies are all there). The lock has no
# "resolved" addresses, so npm asks the registry for each package unless its cache has it.
(cd "$lib" && npm install --omit=dev --prefer-offline --no-audit --no-fund --no-update-notifier --loglevel=error)
rm -rf "$lib/node_modules/.bin" "$lib/node_modules/.package-lock.json" "$lib/package-lock.json"
# Dotfiles of the npm packages (.npmignore, .eslintrc, .gitattributes, ...): their authors' tooling.
find "$lib/node_modules" -type f -name '.*' -delete
# Prebuilt addons for other systems, architectures or Node ABIs than this package's: never loaded
# here, and lintian (rightly) refuses binaries of another architecture.
abi=$("$node_bin" -p process.versions.modules)
find "$lib/node_modules" -name '*.node' \( -name '*darwin*' -o -name '*win32*' -o -name '*arm*' -o -name '*musl*' \
  -o \( -name 'uws_linux_x64_*' ! -name "uws_linux_x64_${abi}.node" \) \) -delete
find "$lib/node_modules" -type d -path '*/prebuilds/*' ! -name 'linux-x64' -prune -exec rm -rf {} +

say "Node.js $("$node_bin" --version) from $node_bin, nats-server from $nats_bin"
cp "$node_bin" "$lib/node/bin/node"
cp "$nats_bin" "$lib/bin/nats-server"
# What dh_strip does (node: 99 MB with its symbols and debug sections; addons find Node's API in
# its dynamic symbol table, which stays).
strip --remove-section=.comment --remove-section=.note "$lib/node/bin/node"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$lib/native/node/"*.node
ln -s ../lib/spindle/bin/spindle "$stage/usr/bin/spindle"

say "unit, configuration, sysctl, docs"
cp "$root/deploy/spindle.service" "$stage/lib/systemd/system/spindle.service"
(cd "$root" && node --import tsx scripts/default-config.ts --package) > "$stage/etc/spindle/spindle.yaml"
cp "$root/deploy/99-spindle.conf" "$stage/usr/lib/sysctl.d/99-spindle.conf"
cp -r "$root/deploy/cluster-example" "$stage/usr/share/doc/$pkg/examples/"
cp "$root/deploy/README.md" "$stage/usr/share/doc/$pkg/README.md"
cp -r "$root/docs/operating" "$stage/usr/share/doc/$pkg/operating"
cp "$root/deploy/debian/copyright" "$stage/usr/share/doc/$pkg/copyright"
{
  echo "$pkg ($version) unstable; urgency=medium"
  echo
  echo "  * Built from $(cd "$root" && git describe --always --dirty 2>/dev/null || echo 'a source tree') by make deb."
  echo
  echo " -- Spindle maintainers <maintainers@users.noreply.a-seed-627a1bb2.example>  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(cd "$root" && git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n > "$stage/usr/share/doc/$pkg/changelog.gz"
install -D -m 0644 "$root/deploy/debian/lintian-overrides" "$stage/usr/share/lintian/overrides/$pkg"

# Ownership root:root (dpkg-deb --root-owner-group); modes as dh_fixperms sets them.
chmod -R u=rwX,go=rX "$stage"
find "$stage" -type f -name '*.node' -exec chmod 0644 {} +
find "$lib/node_modules" -type f -perm /111 -exec chmod 0644 {} +
chmod 0755 "$lib/bin/spindle" "$lib/bin/nats-server" "$lib/node/bin/node"

say "Depends (dpkg-shlibdeps)"
shlib=$(mktemp -d)
trap 'rm -rf "$shlib"' EXIT
mkdir -p "$shlib/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: %s\n' "$pkg" "$pkg" "$arch" > "$shlib/debian/control"
mapfile -t elves < <(find "$stage" -type f \( -name '*.node' -o -perm /111 \) -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
shlibs=$(cd "$shlib" && dpkg-shlibdeps -O -e"${elves[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
depends="adduser, $shlibs"

installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: Spindle maintainers <maintainers@users.noreply.a-seed-627a1bb2.example>
Installed-Size: $installed_size
Depends: $depends
Recommends: ca-certificates
Section: net
Priority: optional
Homepage: https://spindle.invalid/
Description: high-throughput MQTT 3.1.1 and 5.0 broker
 Spindle is an MQTT broker for bare-metal hosts: TypeScript on Node.js 20 with
 a Rust core for connection I/O, packet framing and topic matching. Around the
 broker: persistence (embedded SQLite, PostgreSQL, MariaDB), an admin HTTP API
 and web console, a rule engine, scripts, auth and ACL policies, MQTT bridges
 and clustering over NATS.
 .
 The package carries its own Node.js 20 and nats-server in /usr/lib/spindle.
EOF
echo /etc/spindle/spindle.yaml > "$stage/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  install -m 0755 "$root/deploy/debian/$script" "$stage/DEBIAN/$script"
done
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles"

deb="$out/${pkg}_${version}_${arch}.deb"
say "dpkg-deb -Z$compress"
dpkg-deb --root-owner-group -Z"$compress" --build "$stage" "$deb" >/dev/null
say "$deb: $(du -h "$deb" | cut -f1) ($((installed_size / 1024)) MB installed)"
say "Depends: $depends"
