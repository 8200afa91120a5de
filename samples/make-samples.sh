#!/bin/sh
# Regenerates every file under samples/ from Debian-packaged sources (opencv-doc, python3-skimage)
# with ffmpeg and Debian's python3 + numpy. Deterministic: same inputs and tool versions, same
# bytes (bitexact flags, fixed noise seed, single-threaded x264).
#   apt-get install -y ffmpeg python3-numpy python3-skimage opencv-doc
set -eu

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
haze="$python $here/add-haze.py"
vtest=$(dpkg -L opencv-doc | grep '/vtest\.avi$' | head -n 1)
skimage_data=$(dpkg -L python3-skimage | grep '/skimage/data/coffee\.png$' | xargs dirname)
ff="ffmpeg -hide_banner -loglevel error -nostdin -y"

mkdir -p "$here/images"

# --- hazy-street.mp4: 100 frames of vtest.avi (768x576, 10 fps) retimed to 25 fps (4 s) -------
width=768 height=576 frames=100
$ff -i "$vtest" -frames:v $frames -f rawvideo -pix_fmt rgb24 - |
  $haze $width $height |
  $ff -f rawvideo -pix_fmt rgb24 -video_size ${width}x$height -framerate 25 -i - \
      -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=4" \
      -f lavfi -i "anoisesrc=color=pink:amplitude=0.05:seed=1:sample_rate=48000:duration=4" \
      -filter_complex "[1:a][2:a]amix=inputs=2:normalize=0,aformat=channel_layouts=stereo[audio]" \
      -map 0:v -map "[audio]" \
      -vf "scale=out_color_matrix=bt601:out_range=tv:flags=bicubic,format=yuv420p" \
      -c:v libx264 -threads 1 -preset slow -crf 24 -g 50 \
      -colorspace smpte170m -color_primaries smpte170m -color_trc smpte170m -color_range tv \
      -c:a aac -b:a 96k \
      -map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact \
      -movflags +faststart "$here/hazy-street.mp4"

# --- stills: scikit-image's coffee (600x400 -> 450x300) and astronaut (512 -> 400) -------------
still() {  # name width height
  $ff -i "$skimage_data/$1.png" -vf "scale=$2:$3:flags=area" -f rawvideo -pix_fmt rgb24 - |
    tee "$here/images/.$1.rgb" |
    $haze "$2" "$3" |
    $ff -f rawvideo -pix_fmt rgb24 -video_size "$2x$3" -i - -frames:v 1 -fflags +bitexact \
        -flags +bitexact -pix_fmt rgb24 "$here/images/$1-hazy.png"
  $ff -f rawvideo -pix_fmt rgb24 -video_size "$2x$3" -i "$here/images/.$1.rgb" -frames:v 1 \
      -fflags +bitexact -flags +bitexact -pix_fmt rgb24 "$here/images/$1.png"
  rm -f "$here/images/.$1.rgb"
}
still coffee 450 300
still astronaut 400 400

# coffee-grey.png: 8-bit grey of coffee.png (swscale's BT.601 luma, full range)
$ff -i "$here/images/coffee.png" -vf "scale=out_range=pc,format=gray" -frames:v 1 \
    -fflags +bitexact -flags +bitexact -pix_fmt gray "$here/images/coffee-grey.png"

ls -l "$here/hazy-street.mp4" "$here/images/"
