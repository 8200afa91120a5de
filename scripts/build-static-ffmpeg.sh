#!/usr/bin/env bash
# The static FFmpeg that scripts/build-device.sh links into the binaries carried to a GPU machine
# (which has no FFmpeg): libav* archives, headers, pkg-config files and the ffmpeg/ffprobe
# programs, built from Debian's own ffmpeg and x264 source packages with only what hazefree and
# its GPU scripts use. NVDEC, CUVID and NVENC are loaded from the NVIDIA driver at run time.
#   scripts/build-static-ffmpeg.sh PREFIX     (about ten minutes on 2 cores; does nothing when
#                                             PREFIX already holds this configuration)
# What it holds beyond a plain transcoder, and why:
# - libx264 built with -fPIC from Debian's x264 source, so that a shared object (libhazefree.so,
#   the frei0r filters) can take it, which Debian's libx264.a cannot: such a link also needs
#   -Wl,-Bsymbolic for FFmpeg's own assembly, as FFmpeg's shared libraries are linked;
# - the mjpeg encoder and the mpjpeg and hls muxers: `hazefree serve`'s snapshots, previews and
#   HLS outputs (scripts/serve-bench.sh);
# - the frei0r filter: `ffmpeg -vf frei0r=hazefree_*` (scripts/frei0r-bench.sh).
set -euo pipefail
prefix=$(realpath -m "${1:?usage: $0 PREFIX}")
stamp="hazefree-1"  # changed with the configuration below: an older prefix is built again
if [[ -f $prefix/.complete && $(cat "$prefix/.complete") == "$stamp" ]]; then
  echo "static FFmpeg already in $prefix"
  exit 0
fi
rm -rf "$prefix"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export DEBIAN_FRONTEND=noninteractive
need=(nasm pkg-config zlib1g-dev libffmpeg-nvenc-dev frei0r-plugins-dev xz-utils dpkg-dev debian-archive-keyring)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's source packages through a source list of our own (the system's apt setup is untouched),
# made from the machine's own apt sources: every entry of the release's suite (deb822 stanzas in
# sources.list.d/*.sources, one-line entries in sources.list and sources.list.d/*.list) switched to
# deb-src, so the sources come from whatever mirror the machine uses.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
mkdir -p "$work/lists/partial"
shopt -s nullglob
for f in /etc/apt/sources.list.d/*.sources; do
  awk -v suite="$codename" '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uris != "") {
        print "Types: deb-src"; print "URIs: " uris; print "Suites: " suite
        print "Components: " components; if (signed != "") print "Signed-By: " signed; print ""
      }
      types = uris = suites = components = signed = ""
    }
    /^[ \t]*$/ { flush(); next }
    /^#/ { next }
    { key = tolower($1); sub(/^[^:]*:[ \t]*/, "") }
    key == "types:" { types = $0 } key == "uris:" { uris = $0 } key == "suites:" { suites = $0 }
    key == "components:" { components = $0 } key == "signed-by:" { signed = $0 }
    END { flush() }' "$f"
done >"$work/system-src.sources"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f $f ]] || continue
  awk -v suite="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i == suite) { $1 = "deb-src"; print; break } }' "$f"
done >"$work/system-src.list"
shopt -u nullglob
if [[ ! -s $work/system-src.sources && ! -s $work/system-src.list ]]; then
  echo "build-static-ffmpeg: no apt source for Debian $codename in /etc/apt (sources.list, sources.list.d)" >&2
  exit 1
fi
[[ -s $work/system-src.list ]] || rm -f "$work/system-src.list"
[[ -s $work/system-src.sources ]] || rm -f "$work/system-src.sources"
apt_src=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work" -o "Dir::State::Lists=$work/lists")
apt-get "${apt_src[@]}" update -qq
(cd "$work" && apt-get "${apt_src[@]}" source --download-only -qq x264 ffmpeg)

# x264: static, position-independent, every bit depth.
tar -C "$work" -xf "$work"/x264_*.orig.tar.*
x264_src=$(find "$work" -maxdepth 1 -type d -name 'x264*' | head -n1)
(cd "$x264_src" &&
  ./configure --prefix="$prefix" --enable-static --enable-pic --disable-cli --disable-opencl --bit-depth=all \
    >"$work/x264-configure.log" 2>&1 &&
  make -j"$(nproc)" >"$work/x264-make.log" 2>&1 &&
  make install >/dev/null) || { tail -30 "$work"/x264-*.log; exit 1; }

tar -C "$work" -xf "$work"/ffmpeg_*.orig.tar.xz
ffmpeg_src=$(find "$work" -maxdepth 1 -type d -name 'ffmpeg-*' | head -n1)
cd "$ffmpeg_src"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig ./configure --prefix="$prefix" --pkg-config-flags=--static \
  --extra-cflags="-I$prefix/include" --extra-ldflags="-L$prefix/lib" \
  --enable-gpl --enable-static --disable-shared --disable-doc --disable-debug --enable-pic \
  --disable-autodetect --enable-pthreads --enable-zlib --disable-everything \
  --enable-ffmpeg --enable-ffprobe --enable-libx264 --enable-frei0r \
  --enable-ffnvcodec --enable-cuda --enable-cuvid --enable-nvdec --enable-nvenc \
  --enable-protocol=file,pipe,tcp,udp,rtp \
  --enable-demuxer=mov,matroska,avi,mpegts,h264,hevc,yuv4mpegpipe,rawvideo,image2,image2pipe,aac,mp3,wav,rtsp,sdp,rtp \
  --enable-muxer=mp4,mov,matroska,avi,mpegts,h264,yuv4mpegpipe,rawvideo,null,image2,framemd5,md5,mjpeg,mpjpeg,hls \
  --enable-decoder=h264,hevc,mpeg4,mpeg2video,mjpeg,png,tiff,ffv1,rawvideo,aac,mp3,pcm_s16le,h264_cuvid,hevc_cuvid \
  --enable-encoder=wrapped_avframe,libx264,libx264rgb,mpeg4,ffv1,rawvideo,png,tiff,mjpeg,aac,pcm_s16le,h264_nvenc,hevc_nvenc \
  --enable-hwaccel=h264_nvdec,hevc_nvdec \
  --enable-parser=h264,hevc,aac,mpeg4video,mpegaudio,png,mjpeg,ffv1 \
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,aac_adtstoasc,extract_extradata,null \
  --enable-indev=lavfi \
  --enable-filter=frei0r,scale,format,null,anull,aformat,aresample,copy,fps,trim,setpts,split,hstack,vstack,testsrc,testsrc2,color,histeq,psnr,ssim,framemd5,hwupload_cuda,hwdownload,scale_cuda,crop,pad \
  --enable-swscale --enable-swresample --enable-avfilter --enable-avdevice \
  >"$work/ffmpeg-configure.log" 2>&1 || { tail -30 "$work/ffmpeg-configure.log"; exit 1; }
make -j"$(nproc)" >"$work/ffmpeg-make.log" 2>&1 || { tail -40 "$work/ffmpeg-make.log"; exit 1; }
make install >/dev/null
# Nothing of x264 may be left to find at run time.
rm -f "$prefix"/lib/libx264.so*
if ldd "$prefix/bin/ffmpeg" | grep -q x264; then
  echo "build-static-ffmpeg: ffmpeg links libx264 dynamically" >&2
  exit 1
fi
echo "$stamp" >"$prefix/.complete"
echo "static FFmpeg in $prefix ($(du -sh "$prefix" | cut -f1))"
