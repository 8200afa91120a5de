#!/usr/bin/env bash
# Builds the Debian package dist/hazefree_<version>_<arch>.deb for the distribution it runs on
# (debhelper: debian/), installing the missing build dependencies first. Then:
#   sudo apt install ./dist/hazefree_*.deb
# The build happens in a copy of the source tree, dist/src/hazefree-<version>/, kept between
# runs so that the next one only rebuilds what changed.
#   CMAKE_ARGS  extra CMake arguments (e.g. -DHAZEFREE_CUDA=OFF where nvcc is present but not wanted)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=$(sed -nE 's/^project\(hazefree VERSION ([0-9.]+) .*/\1/p' CMakeLists.txt)
changelog_version=$(sed -nE '1s/^hazefree \(([^)]+)\).*/\1/p' debian/changelog)
if [[ -z $version || $version != "$changelog_version" ]]; then
  echo "package: debian/changelog is at version '${changelog_version}', CMakeLists.txt at '${version}': add a changelog entry" >&2
  exit 1
fi
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
stage=$root/dist/src/hazefree-$version
mkdir -p "$stage"

# The tree as git sees it (tracked and untracked files, not ignored ones), or all of it but the
# build folders outside git.
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
    tar -C "$root" --null -T - -cf - | tar -C "$stage" -xf -
else
  tar -C "$root" --exclude='./build*' --exclude=./dist --exclude=./obj-* -cf - . | tar -C "$stage" -xf -
fi

sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
if ! (cd "$stage" && dpkg-checkbuilddeps >/dev/null 2>&1); then
  echo "package: installing the build dependencies of debian/control"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    dpkg-dev debhelper dh-python >/dev/null
  (cd "$stage" && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get build-dep -y -qq ./ >/dev/null)
fi

# An earlier build's tree (obj-*) is kept: no clean before building.
clean=()
compgen -G "$stage/obj-*" >/dev/null && clean=(--no-pre-clean)
(cd "$stage" &&
  HAZEFREE_CMAKE_ARGS="${CMAKE_ARGS:-}" DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" \
    dpkg-buildpackage -b -us -uc "${clean[@]}" >"$root/dist/build.log" 2>&1) || {
  tail -n 40 "$root/dist/build.log"
  echo "package: dpkg-buildpackage failed in $stage (log: dist/build.log)" >&2
  exit 1
}
deb=hazefree_${version}_${arch}.deb
mv -f "$root/dist/src/$deb" "$root/dist/$deb"
rm -f "$root"/dist/src/hazefree_"${version}"_*.buildinfo "$root"/dist/src/hazefree_"${version}"_*.changes
echo "package: dist/$deb"
