#!/usr/bin/env bash
# Prepares .device/gst/ (ignored by git) for scripts/gpu-check-gst.sh on the GPU machine, which
# has no GStreamer and no FFmpeg:
#   - the element with the CUDA backend: libgsthazefree.so and libhazefree.so (FFmpeg linked
#     statically, sm_90), built in build-device/ as scripts/build-device.sh does;
#   - Debian's GStreamer 1.22 runtime: the .deb files fetched with `apt-get download` and unpacked
#     with `dpkg -x` (libraries, gst-launch-1.0, the core, videotestsrc, videoconvertscale and
#     rawparse plugins, the core tracers; from gst-plugins-bad the nvcodec plugin (nvh264dec,
#     cudaupload, cudadownload), h264parse and libgstcuda-1.0 for the CUDA memory path), plus
#     the libraries they need that the GPU machine lacks, copied from this machine;
#   - hazefree-gst-latency (gst/hazefree_gst_latency.cpp), the latency the element adds;
#   - the static ffmpeg program, to decode the sample clip there, and the hazefree program (its
#     bench is what the element's cost is compared with).
#   scripts/build-device-gst.sh        JOBS=2 by default; FFMPEG_PREFIX as for build-device.sh
# Carry: .device/gst (the device tool's `carry`), then run scripts/gpu-check-gst.sh there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${FFMPEG_PREFIX:-/tmp/ffmpeg-static}
builder=${FFMPEG_BUILDER:-$root/scripts/build-static-ffmpeg.sh}
jobs=${JOBS:-2}
out=$root/.device/gst

# Returns at once when the prefix is current.
"$builder" "$prefix"

# libx264-dev for the shared libx264.so copied below (setup.sh does not install it).
if ! dpkg -s libx264-dev >/dev/null 2>&1; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends libx264-dev >/dev/null
fi

# Debian's libx264.a is not position-independent: it links into the program, but libhazefree.so
# takes the shared libx264 (found first in this folder, and carried in .device/gst/lib).
x264_shared=$root/build-device/x264-shared
mkdir -p "$x264_shared"
cp -L /usr/lib/x86_64-linux-gnu/libx264.so "$x264_shared/libx264.so"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S "$root" -B "$root/build-device" -G Ninja \
  -DHAZEFREE_CUDA=ON -DHAZEFREE_STATIC_FFMPEG=ON -DHAZEFREE_OPENCV_TESTS=OFF -DHAZEFREE_GSTREAMER=ON \
  -DCMAKE_SHARED_LINKER_FLAGS="-L$x264_shared" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-device" -j "$jobs" --target gsthazefree hazefree hazefree-gst-latency
# The CUDA memory path is compiled in only with gst-plugins-bad's CUDA library.
if ! objdump -p "$root/build-device/gst/libgsthazefree.so" | grep -q 'NEEDED.*libgstcuda-1.0'; then
  echo "build-device-gst: the element was built without CUDA memory (install libgstreamer-plugins-bad1.0-dev)" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out/lib" "$out/plugins" "$out/bin"
cp "$root/build-device/gst/libgsthazefree.so" "$out/plugins/"
soname=$(objdump -p "$root/build-device/gst/libgsthazefree.so" | awk '/NEEDED/ && /libhazefree/ {print $2}')
cp -L "$root/build-device/$soname" "$out/lib/$soname"
cp "$prefix/bin/ffmpeg" "$root/build-device/hazefree" "$out/bin/"  # decoding there; the CLI's bench
cp "$root/build-device/gst/hazefree-gst-latency" "$out/bin/"

# Debian's packages, as they are.
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download -q libgstreamer1.0-0 gstreamer1.0-tools libgstreamer-plugins-base1.0-0 \
   gstreamer1.0-plugins-base liborc-0.4-0 libgstreamer-plugins-bad1.0-0 gstreamer1.0-plugins-bad >/dev/null)
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$debs/root"; done
multiarch=$debs/root/usr/lib/x86_64-linux-gnu
# Plain files under their sonames (the device tool may not carry symbolic links).
# GStreamer's core and base libraries, and libgstcuda-1.0 (not the rest of gst-plugins-bad's:
# what nvcodec needs of them comes with the libraries below).
cp -L "$multiarch"/libgstreamer-1.0.so.0 "$multiarch"/libgstbase-1.0.so.0 "$multiarch"/libgstcheck-1.0.so.0 \
  "$multiarch"/libgstcontroller-1.0.so.0 "$multiarch"/libgstnet-1.0.so.0 "$multiarch"/libgstvideo-1.0.so.0 \
  "$multiarch"/libgstcuda-1.0.so.0 "$multiarch"/liborc-0.4.so.0 "$out/lib/"
cp "$debs/root/usr/bin/gst-launch-1.0" "$debs/root/usr/bin/gst-inspect-1.0" "$out/bin/"
for plugin in coreelements coretracers videotestsrc videoconvertscale rawparse app nvcodec videoparsersbad; do
  cp "$multiarch/gstreamer-1.0/libgst$plugin.so" "$out/plugins/"
done

# Whatever else they load that is not among the GPU machine's own libraries (libc, libm, libz,
# libstdc++, libgcc_s, libgomp, libfmt): taken from this machine (Debian 12, the same builds).
for file in "$out"/lib/*.so* "$out"/plugins/*.so "$out"/bin/gst-* "$out"/bin/hazefree "$out"/bin/hazefree-gst-latency; do
  LD_LIBRARY_PATH=$out/lib ldd "$file" | awk '/=> \//{print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libz.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*|libfmt.so*|ld-linux*|libpthread.so*|\
      libdl.so*|librt.so*|libresolv.so*) ;;
      *) [[ -e $out/lib/$(basename "$lib") ]] || cp -L "$lib" "$out/lib/" ;;
    esac
  done
done
if LD_LIBRARY_PATH=$out/lib ldd "$out/lib/$soname" | grep -E 'libav|libsw'; then
  echo "build-device-gst: libhazefree still links FFmpeg dynamically" >&2
  exit 1
fi
# Unresolved ones would fail there: say so here.
if LD_LIBRARY_PATH=$out/lib ldd "$out"/lib/*.so* "$out"/plugins/*.so "$out"/bin/gst-* | grep 'not found'; then
  echo "build-device-gst: libraries not found (above)" >&2
  exit 1
fi
# The device tool carries at most 64 MiB in all.
size=$(du -sm "$out" | cut -f1)
if ((size > 60)); then
  echo "build-device-gst: $out is $size MiB, over what can be carried (64 MiB in all)" >&2
  exit 1
fi
du -sh "$out"
echo "build-device-gst: ready; carry .device/gst and run scripts/gpu-check-gst.sh on the GPU machine"
