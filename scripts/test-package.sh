#!/usr/bin/env bash
# The Debian package end to end (SPEC 11), on this machine: builds it with scripts/package.sh
# (CMAKE_ARGS passes through), checks it with lintian (no errors), installs it with apt-get,
# then with no environment variables of ours uses it as a user would: the program on the sample,
# ffmpeg and melt through the frei0r filters, gst-inspect-1.0, Debian's python3, pkg-config,
# examples/ built against it, man; finally removes it and checks that none of its files remain.
# Installs and removes a system package: run it as root or with sudo (scripts/test.sh does).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(sed -nE 's/^project\(hazefree VERSION ([0-9.]+) .*/\1/p' "$root/CMakeLists.txt")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb=$root/dist/hazefree_${version}_${arch}.deb
work=$(mktemp -d /tmp/hazefree-package-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)

fail() { echo "package test: $*" >&2; exit 1; }
# A command as a user's shell runs it: a clean environment, the system PATH.
clean() { env -i HOME="$work" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"; }
step() {
  local what=$1; shift
  local out
  out=$(cd "$work" && clean "$@" 2>&1) || { echo "$out" | tail -n 20 >&2; fail "$what failed: $*"; }
  printf '  ok  %s\n' "$what"
  step_output=$out
}

"$root/scripts/package.sh"
[[ -f $deb ]] || fail "scripts/package.sh made no $deb"

echo "lintian:"
lintian_out=$(lintian --tag-display-limit 0 --display-info --show-overrides "$deb" 2>&1 || true)
[[ -n $lintian_out ]] && echo "$lintian_out" | sed 's/^/  /'
if grep -q "^E: " <<<"$lintian_out"; then fail "lintian reports errors on $deb"; fi

DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 ||
  { tail -n 20 "$work/install.log"; fail "apt-get install $deb failed"; }
mapfile -t files < <(dpkg -L hazefree | while read -r f; do [[ -f $f || -L $f ]] && echo "$f"; done)
echo "installed: ${#files[@]} files"

step "hazefree on the sample" hazefree -q -y "$root/samples/hazy-street.mp4" "$work/dehazed.mp4"
step "ffmpeg -vf frei0r=hazefree_dehaze" ffmpeg -nostdin -v error -i "$root/samples/hazy-street.mp4" -frames:v 10 \
  -vf frei0r=hazefree_dehaze -y "$work/ffmpeg.mp4"
step "ffmpeg -vf frei0r=hazefree_clahe:127|2" ffmpeg -nostdin -v error -i "$root/samples/hazy-street.mp4" \
  -frames:v 5 -vf "frei0r=hazefree_clahe:127|2" -f null -
step "melt -filter frei0r.hazefree_clahe" melt -silent -quiet "$root/samples/hazy-street.mp4" out=9 \
  -filter frei0r.hazefree_clahe window=63 clip=2 -consumer "avformat:$work/melt.mp4" an=1 real_time=0
step "gst-inspect-1.0 hazefree" gst-inspect-1.0 hazefree
step "gst-launch-1.0 with hazefree" gst-launch-1.0 -q videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=64,height=48 \
  ! hazefree mode=ahe ! fakesink
step "/usr/bin/python3 -c 'import hazefree'" /usr/bin/python3 -c \
  "import hazefree, numpy; out = hazefree.Processor(mode='he').process(numpy.zeros((4, 6, 3), numpy.uint8)); print(hazefree.__version__, out.shape)"
[[ $step_output == "$version (4, 6, 3)" ]] || fail "python3: printed '$step_output', expected '$version (4, 6, 3)'"
step "pkg-config --modversion hazefree" pkg-config --modversion hazefree
[[ $step_output == "$version" ]] || fail "pkg-config --modversion hazefree printed '$step_output', expected $version"
step "examples/ with find_package" cmake -S "$root/examples" -B "$work/example-config" -G Ninja -DCMAKE_BUILD_TYPE=Release
step "examples/ built" cmake --build "$work/example-config"
step "examples/ run" "$work/example-config/hazefree_example"
step "examples/ with pkg-config" cmake -S "$root/examples" -B "$work/example-pc" -G Ninja -DHAZEFREE_EXAMPLE_PKG_CONFIG=ON
step "examples/ built (pkg-config)" cmake --build "$work/example-pc"
step "examples/ run (pkg-config)" "$work/example-pc/hazefree_example"
step "man -w hazefree" man -w hazefree
man_text=$(clean man -P cat hazefree 2>/dev/null)
keys=$(clean /usr/bin/python3 -c "import hazefree; print(' '.join(k.name for k in hazefree.config_keys()))")
for key in $keys; do
  grep -qF -- "$key" <<<"$man_text" || fail "man hazefree does not list the configuration key $key"
done
echo "  ok  man hazefree lists all $(wc -w <<<"$keys") configuration keys"
[[ -f /usr/share/hazefree/configs/clahe.toml ]] || fail "presets not in /usr/share/hazefree/configs"
[[ -f /usr/share/kdenlive/effects/frei0r_hazefree_clahe.xml ]] || fail "Kdenlive effects not installed"
[[ -f /usr/share/doc/hazefree/copyright && -f /usr/share/doc/hazefree/changelog.gz ]] ||
  fail "copyright or changelog.gz missing in /usr/share/doc/hazefree"

DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get remove -y -qq hazefree >"$work/remove.log" 2>&1 ||
  { tail -n 20 "$work/remove.log"; fail "apt-get remove hazefree failed"; }
left=()
for f in "${files[@]}"; do [[ -e $f || -L $f ]] && left+=("$f"); done
# and no folder of its own (byte-compiled Python included)
for d in /usr/share/hazefree /usr/include/hazefree /usr/share/doc/hazefree /usr/lib/python3/dist-packages/hazefree \
         "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/cmake/hazefree"; do
  [[ -e $d ]] && left+=("$d")
done
((${#left[@]} == 0)) || fail "apt-get remove left ${#left[@]} files, e.g. ${left[0]}"
echo "  ok  apt-get remove left none of the ${#files[@]} files"
echo "package test: passed ($deb)"
