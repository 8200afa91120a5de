// Image views and owning images: the picture types io, kernels and pipeline share.
// A frame is a set of planes in one of a few layouts at a depth of 8 to 16 bits per sample
// (SPEC 7); the kernels never see FFmpeg.
//
// Depth: 8-bit samples take one byte. Samples of 9 to 16 bits take two bytes (a native-endian
// std::uint16_t) holding the value in the low `depth` bits (FFmpeg's yuv420p10le, gray12le,
// rgb48le, ...), except nv12, whose 16-bit samples hold it in the high bits (NVDEC's P010 and
// P016: value << (16 - depth)); sample_shift() gives that shift.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace hazefree {

// Layouts the processors accept. The I/O layer converts anything else to one of these.
enum class PixelFormat : std::uint8_t {
  yuv420p,  // Y, U, V planes; chroma halved in both directions (rounded up)
  yuv422p,  // chroma halved horizontally
  yuv444p,  // full-size chroma
  nv12,     // Y plane, then one interleaved UV plane halved in both directions (P010/P016 at depth)
  gray8,    // one plane (gray10, gray12, gray16 at depth)
  rgb24,    // one interleaved R,G,B plane (PNG/BMP/JPEG stills; rgb48 at depth 16)
};

// YCbCr matrix (non-constant luminance). Unspecified streams get BT.709 at height >= 720,
// else BT.601 (SPEC 3).
enum class ColorMatrix : std::uint8_t { bt601, bt709, bt2020 };
enum class ColorRange : std::uint8_t { limited, full };

// The layout's name at 8 bits ("yuv420p", "gray", "rgb24").
std::string_view to_string(PixelFormat format);
// The format's name at `depth` ("yuv420p10", "gray16", "rgb48", "p010"); to_string at 8.
std::string format_name(PixelFormat format, int depth);

// Depths a frame may have: 8 to 16 bits per sample.
inline constexpr int kMinDepth = 8;
inline constexpr int kMaxDepth = 16;
inline constexpr bool valid_depth(int depth) { return depth >= kMinDepth && depth <= kMaxDepth; }
// Bytes of one sample at `depth`: 1 at 8 bits, else 2.
inline constexpr int sample_bytes(int depth) { return depth > 8 ? 2 : 1; }
// The largest code at `depth`, M = 2^depth - 1.
inline constexpr int max_code(int depth) { return (1 << depth) - 1; }

struct PlaneView {
  std::uint8_t* data = nullptr;
  int stride = 0;  // bytes between rows
  int width = 0;   // samples per row (an nv12 UV plane counts UV pairs; rgb24 counts pixels)
  int height = 0;
};

// A non-owning view of one frame. Plane widths/heights follow from format, width, height.
struct ImageView {
  PixelFormat format = PixelFormat::yuv420p;
  int width = 0;
  int height = 0;
  ColorMatrix matrix = ColorMatrix::bt601;
  ColorRange range = ColorRange::limited;
  std::array<PlaneView, 3> planes{};
  int plane_count = 0;
  int depth = 8;  // bits per sample, 8..16 (see the top of this file)
};

// Left shift of the value inside a stored sample: 16 - depth for nv12 above 8 bits (P010/P016),
// else 0.
inline int sample_shift(PixelFormat format, int depth) {
  return format == PixelFormat::nv12 && depth > 8 ? 16 - depth : 0;
}
inline int sample_shift(const ImageView& view) { return sample_shift(view.format, view.depth); }

int plane_count(PixelFormat format);
// Width/height in samples of plane `index` of a width x height frame at `depth`; bytes per sample
// in `bytes_per_sample` (at 8 bits: 2 for nv12's UV plane, 3 for rgb24, else 1; twice that above
// 8 bits).
PlaneView plane_geometry(PixelFormat format, int width, int height, int index, int depth = 8);
int bytes_per_sample(PixelFormat format, int plane_index, int depth = 8);
bool is_yuv(PixelFormat format);
// Chroma subsampling shifts (0 or 1) of a YUV format.
int chroma_shift_x(PixelFormat format);
int chroma_shift_y(PixelFormat format);
// Bytes of the tightly packed frame (each row padded to `row_align` bytes).
std::size_t frame_bytes(PixelFormat format, int width, int height, int row_align = 1,
                        int depth = 8);

// Lays out the planes of a width x height frame at `depth` over `buffer` (at least
// frame_bytes(...) bytes), rows padded to `row_align`. Throws std::invalid_argument for a depth
// outside 8..16.
ImageView make_view(PixelFormat format, int width, int height, std::uint8_t* buffer,
                    int row_align = 1, int depth = 8);

// Copies the pixels of `src` into `dst` (same format, size and depth; strides may differ).
void copy_image(const ImageView& src, ImageView& dst);

// Owning image with heap storage; for tests, stills and CPU scratch.
class Image {
 public:
  Image() = default;
  Image(PixelFormat format, int width, int height, int row_align = 64, int depth = 8);
  ImageView& view() { return view_; }
  const ImageView& view() const { return view_; }
  bool empty() const { return view_.width == 0; }

 private:
  std::unique_ptr<std::uint8_t[]> storage_;
  ImageView view_{};
};

// Default matrix for a stream that does not say (SPEC 3).
inline ColorMatrix default_matrix_for_height(int height) {
  return height >= 720 ? ColorMatrix::bt709 : ColorMatrix::bt601;
}

}  // namespace hazefree
