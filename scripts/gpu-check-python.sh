#!/usr/bin/env bash
# The Python module on a GPU machine: builds the project and the module there (its cmake, ninja,
# nvcc, Python and pybind11; FFmpeg linked statically from a carried prefix; sm_90), runs every
# Python test (the GPU ones with PyTorch and CuPy: identical to the CPU backend, output where
# `out` lies, the caller's stream honoured) and the Python benchmark. Logs, the JUnit report and
# the benchmark's JSON go to $OUT (when set) or build-gpu-python/results.
#
#   scripts/gpu-check-python.sh prepare   HERE (Debian 12): puts what the GPU machine lacks into
#                                          .device/: the static FFmpeg (.device/ffmpeg-static, from
#                                          scripts/build-static-ffmpeg.sh, with its ffprobe) and the
#                                          headers/CMake files of fmt, CLI11, toml++, nlohmann-json
#                                          and pkg-config (.device/deps)
#   scripts/gpu-check-python.sh           THERE, from the repository root, with .device/ffmpeg-static
#                                          and .device/deps carried
#
# Environment: PYTHON (default: the python3 on PATH), FFMPEG_PREFIX (default .device/ffmpeg-static;
# "system" = the system's shared FFmpeg, to try the script on a machine without a GPU), DEPS
# (default .device/deps), BUILD_DIR (default build-gpu-python), JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

fail() { echo "gpu-check-python: $*" >&2; exit 1; }

if [[ ${1:-} == prepare ]]; then
  builder=${FFMPEG_BUILDER:-$root/scripts/build-static-ffmpeg.sh}
  prefix=${FFMPEG_STATIC_BUILD:-/tmp/ffmpeg-static}
  "$builder" "$prefix"
  # libx264-dev for the shared libx264.so copied below.
  if ! dpkg -s libx264-dev >/dev/null 2>&1; then
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends libx264-dev >/dev/null
  fi
  rm -rf .device/ffmpeg-static
  mkdir -p .device/ffmpeg-static
  # Plain files only (cp -L): the device tool may not carry symbolic links.
  cp -rL "$prefix/include" "$prefix/lib" .device/ffmpeg-static/
  # ffprobe for the tests that look into what they wrote (the GPU machine has no FFmpeg programs).
  mkdir -p .device/ffmpeg-static/bin
  cp -L "$prefix/bin/ffprobe" .device/ffmpeg-static/bin/
  strip .device/ffmpeg-static/bin/ffprobe
  deps=.device/deps
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/lib/x86_64-linux-gnu/cmake" "$deps/share/cmake" "$deps/bin"
  multiarch=/usr/lib/x86_64-linux-gnu
  cp -rL /usr/include/fmt /usr/include/CLI /usr/include/toml++ /usr/include/nlohmann "$deps/include/"
  cp -rL "$multiarch/cmake/fmt" "$multiarch/cmake/tomlplusplus" "$deps/lib/x86_64-linux-gnu/cmake/"
  cp -rL /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
  cp -L "$multiarch"/libfmt.so* "$multiarch"/libtomlplusplus.so* "$deps/lib/x86_64-linux-gnu/"
  # libx264 as a shared library: Debian's libx264.a is not position-independent, so it links into
  # the program but not into libhazefree.so; the shared one serves the library there.
  cp -L "$multiarch"/libx264.so.* "$deps/lib/x86_64-linux-gnu/"
  mkdir -p "$deps/x264-shared"
  cp -L "$multiarch/libx264.so" "$deps/x264-shared/libx264.so"
  # pkg-config (pkgconf) in case the GPU machine has none.
  cp -L "$(command -v pkg-config)" "$deps/bin/pkgconf"
  cp -L "$multiarch/libpkgconf.so.3" "$deps/lib/x86_64-linux-gnu/"
  du -sh .device/ffmpeg-static "$deps"
  echo "gpu-check-python: ready; carry \".device/ffmpeg-static\" and \".device/deps\" (about 25 MiB) and run scripts/gpu-check-python.sh there"
  exit 0
fi

python=${PYTHON:-$(command -v python3 || true)}
[[ -n $python ]] || fail "no python3 on PATH (set PYTHON)"
build=${BUILD_DIR:-build-gpu-python}
results=${OUT:-$build/results}
jobs=${JOBS:-$(nproc)}
deps=${DEPS:-$root/.device/deps}
mkdir -p "$results"
log=$results/gpu-check-python.log
: >"$log"
say() { echo "gpu-check-python: $*" | tee -a "$log"; }

# ---- tools ----
command -v cmake >/dev/null || fail "cmake not found"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || fail "nvcc not found (set CUDACXX)"
# pybind11: the Python's own (pip), else CMake's search (a system package such as pybind11-dev).
pybind11_args=()
if pybind11_dir=$("$python" -m pybind11 --cmakedir 2>/dev/null); then
  pybind11_args=(-Dpybind11_DIR="$pybind11_dir")
fi
say "python $("$python" -c 'import sys; print(sys.version.split()[0])') ($python), pybind11 ${pybind11_dir:-found by CMake}"
say "cmake $(cmake --version | head -1), $("$nvcc" --version | tail -1)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a "$log" || true

# ---- dependencies: the carried ones where the machine has none ----
cmake_prefix=()
if [[ -d $deps ]]; then
  cmake_prefix=(-DCMAKE_PREFIX_PATH="$deps")
  # Shared objects take libx264.so before the prefix's libx264.a (not position-independent).
  [[ -d $deps/x264-shared ]] && cmake_prefix+=(-DCMAKE_SHARED_LINKER_FLAGS="-L$deps/x264-shared")
  export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if ! command -v pkg-config >/dev/null; then
  [[ -x $deps/bin/pkgconf ]] || fail "no pkg-config here and none carried in $deps/bin (run '$0 prepare' where one is)"
  wrapper=$root/$build/pkg-config
  mkdir -p "$root/$build"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$deps/lib/x86_64-linux-gnu" "$deps/bin/pkgconf" >"$wrapper"
  chmod +x "$wrapper"
  export PKG_CONFIG=$wrapper
fi

# ---- FFmpeg: the carried static prefix, its .pc files pointed at where it lies now ----
ffmpeg=${FFMPEG_PREFIX:-$root/.device/ffmpeg-static}
static=ON
if [[ $ffmpeg == system ]]; then
  static=OFF
else
  [[ -f $ffmpeg/lib/pkgconfig/libavformat.pc ]] || fail "$ffmpeg: no static FFmpeg there (run '$0 prepare' and carry .device)"
  ffmpeg=$(cd "$ffmpeg" && pwd)
  original=$(sed -n 's/^prefix=//p' "$ffmpeg/lib/pkgconfig/libavformat.pc")
  pcdir=$root/$build/ffmpeg-pkgconfig
  rm -rf "$pcdir"
  mkdir -p "$pcdir"
  for pc in "$ffmpeg"/lib/pkgconfig/*.pc; do
    sed "s|$original|$ffmpeg|g" "$pc" >"$pcdir/$(basename "$pc")"
  done
  export PKG_CONFIG_PATH=$pcdir
  # The carried ffprobe, where the machine has none of its own.
  if [[ -x $ffmpeg/bin/ffprobe ]] && ! command -v ffprobe >/dev/null; then export PATH=$ffmpeg/bin:$PATH; fi
fi

# ---- configure and build ----
say "configuring $build (CUDA sm_90, static FFmpeg $static)"
cmake -S "$root" -B "$root/$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DHAZEFREE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DHAZEFREE_STATIC_FFMPEG=$static -DHAZEFREE_TESTS=OFF -DHAZEFREE_OPENCV_TESTS=OFF \
  -DHAZEFREE_PYTHON=ON -DPython3_EXECUTABLE="$python" "${pybind11_args[@]}" \
  "${cmake_prefix[@]}" >>"$log" 2>&1 || { tail -40 "$log"; fail "configure failed (log: $log)"; }
# The service is left out where cpp-httplib is missing (the GPU machine has none): configure's line.
grep -E '^-- hazefree: service ' "$log" | sed 's/^-- //' || true
say "building hazefree, libhazefree and the Python module ($jobs jobs)"
cmake --build "$root/$build" -j "$jobs" --target hazefree hazefree_library hazefree_python >>"$log" 2>&1 ||
  { tail -40 "$log"; fail "build failed (log: $log)"; }
module=$(ls "$root/$build"/python/hazefree/_hazefree*.so)
if [[ $static == ON ]] && ldd "$module" "$root/$build"/libhazefree.so | grep -E 'libav|libsw'; then
  fail "the module still needs a shared FFmpeg"
fi

export PYTHONPATH=$root/$build/python
export HAZEFREE_BINARY=$root/$build/hazefree
export HAZEFREE_SAMPLES_DIR=$root/samples
"$python" - <<'PY' 2>&1 | tee -a "$log"
import hazefree
ok, why = hazefree._hazefree.gpu_available()
print("gpu-check-python: hazefree", hazefree.__version__, "GPU available:", ok, why)
for name in ("torch", "cupy", "cv2", "skimage", "torchvision"):
    try:
        module = __import__(name)
        print(f"gpu-check-python: {name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001 - report what is missing, the tests skip it
        print(f"gpu-check-python: {name} unavailable ({type(error).__name__}: {error})")
PY

# ---- tests (all of tests/python: the CPU ones too, against this build's program) ----
status=0
say "pytest tests/python"
"$python" -m pytest -v -rs -p no:cacheprovider --junitxml="$results/pytest-python.xml" "$root/tests/python" \
  >"$results/pytest-python.log" 2>&1 || status=$?
tail -40 "$results/pytest-python.log" | tee -a "$log"
[[ $status -eq 0 ]] || say "pytest FAILED (status $status; $results/pytest-python.log)"

# ---- the Python benchmark ----
say "python/bench_hazefree.py"
bench_status=0
"$python" "$root/python/bench_hazefree.py" --json "$results/bench-python.json" >"$results/bench-python.log" 2>&1 ||
  bench_status=$?
if [[ $bench_status -eq 0 ]]; then
  "$python" - "$results/bench-python.json" <<'PY' | tee -a "$log"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"gpu-check-python: {r.get('gpu')} {r['date']}")
for name, m in r["measurements"].items():
    t = m.get("per_call_synchronised") or m.get("per_call")
    print(f"gpu-check-python:   {name}: median {t['median_ms']:.3f} ms (min {t['min_ms']:.3f}, {t['calls']} calls)")
if "dcp_speedup_over_plain_torch" in r:
    print(f"gpu-check-python:   DCP per call {r['dcp_process_median_ms']:.3f} ms (target <= 0.25), "
          f"{r['dcp_speedup_over_plain_torch']:.1f}x a plain PyTorch DCP (target >= 10); met: {r['targets_met']}")
for what, why in r["unavailable"].items():
    print(f"gpu-check-python:   unavailable: {what}: {why}")
PY
else
  tail -20 "$results/bench-python.log" | tee -a "$log"
  say "benchmark FAILED (status $bench_status; $results/bench-python.log)"
fi
((status == 0 && bench_status == 0)) || exit 1
say "done: results in $results"
