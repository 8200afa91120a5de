#!/usr/bin/env bash
# Installs what hazefree needs on a fresh Debian 12 machine (apt packages, only the missing
# ones), then configures and builds it in build/. Used by demo.sh and test.sh.
#   BUILD_DIR   build folder (default build)
#   CMAKE_ARGS  extra CMake arguments (e.g. -DHAZEFREE_CUDA=OFF)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}

packages=(build-essential cmake ninja-build pkg-config
          libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavdevice-dev
          libfmt-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev doctest-dev
          libopencv-dev
          python3-dev pybind11-dev python3-numpy python3-pytest python3-opencv  # the Python module and its tests
          ffmpeg gir1.2-gst-rtsp-server-1.0 python3-gi  # live-source tests: real servers on loopback
          libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev  # the GStreamer element (gst/)
          libgstreamer-plugins-bad1.0-dev  # its CUDA memory path (gst-plugins-bad's CUDA library)
          gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-tools  # and its tests
          frei0r-plugins-dev melt  # the frei0r filters (frei0r/) and their tests through melt
          debhelper dh-python lintian man-db  # the Debian package and its test (scripts/test-package.sh)
          slurm-wlm munge  # the jobs' test cluster on localhost (slurmctld, two slurmd, munged)
          clang libclang-rt-14-dev libomp-14-dev  # the fuzz targets of scripts/test.sh
          libcpp-httplib-dev  # the service's HTTP (serve/)
          python3-prometheus-client python3-selenium chromium chromium-driver)  # and its tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python module is built for Debian's python3 (numpy, pytest and OpenCV come from apt for
# it), whichever python3 comes first on PATH.
python_args=()
[[ -x /usr/bin/python3 ]] && python_args=(-DPython3_EXECUTABLE=/usr/bin/python3)
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_args[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
