#!/usr/bin/env bash
# Builds, on this machine, the binaries carried to the GPU machine (which has no FFmpeg):
# a static FFmpeg prefix if missing, the `build-device` tree against it (CUDA for sm_90, FFmpeg
# linked statically), then copies hazefree and hazefree_gpu_tests into .device/ (ignored by git).
#   scripts/build-device.sh            JOBS=2 by default
#   FFMPEG_PREFIX=/tmp/ffmpeg-static   where the static FFmpeg lives (built there when missing)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${FFMPEG_PREFIX:-/tmp/ffmpeg-static}
builder=${FFMPEG_BUILDER:-$root/scripts/build-static-ffmpeg.sh}
jobs=${JOBS:-2}

if [[ ! -f $prefix/.complete ]]; then
  echo "build-device: static FFmpeg missing in $prefix, building it (a few minutes)"
  "$builder" "$prefix"
fi

PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S "$root" -B "$root/build-device" -G Ninja \
  -DHAZEFREE_CUDA=ON -DHAZEFREE_STATIC_FFMPEG=ON -DHAZEFREE_OPENCV_TESTS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-device" -j "$jobs" --target hazefree hazefree_gpu_tests

mkdir -p "$root/.device"
cp "$root/build-device/hazefree" "$root/build-device/tests/hazefree_gpu_tests" "$root/.device/"
# The static ffmpeg/ffprobe programs make and probe test media there (gpu-check.sh pipeline).
cp "$prefix/bin/ffmpeg" "$prefix/bin/ffprobe" "$root/.device/"
# Only system libraries may remain dynamic: the GPU machine has no FFmpeg.
if ldd "$root/.device/hazefree" | grep -E 'libav|libsw|libx264' ; then
  echo "build-device: hazefree still links FFmpeg dynamically" >&2
  exit 1
fi
# Libraries the GPU machine lacks (it has libc, libm, libz, libstdc++, libgcc_s, libgomp, libfmt)
# travel in .device/lib; scripts/gpu-check.sh puts that folder on LD_LIBRARY_PATH.
mkdir -p "$root/.device/lib"
for bin in "$root/.device/hazefree" "$root/.device/hazefree_gpu_tests"; do
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libz.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*|libfmt.so*|ld-linux*) ;;
      *) cp -L "$lib" "$root/.device/lib/" ;;
    esac
  done
done
ls -l "$root/.device" "$root/.device/lib"
