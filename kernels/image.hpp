// Image views and owning images: the only picture types the kernels know.
// A frame is a set of 8-bit planes in one of a few layouts; the kernels never see FFmpeg.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace hazefree {

// Layouts the processors accept. The I/O layer converts anything else to one of these.
enum class PixelFormat : std::uint8_t {
  yuv420p,  // Y, U, V planes; chroma halved in both directions (rounded up)
  yuv422p,  // chroma halved horizontally
  yuv444p,  // full-size chroma
  nv12,     // Y plane, then one interleaved UV plane halved in both directions
  gray8,    // one plane
  rgb24,    // one interleaved R,G,B plane (PNG/BMP/JPEG stills)
};

// YCbCr matrix (non-constant luminance). Unspecified streams get BT.709 at height >= 720,
// else BT.601 (SPEC 3).
enum class ColorMatrix : std::uint8_t { bt601, bt709, bt2020 };
enum class ColorRange : std::uint8_t { limited, full };

std::string_view to_string(PixelFormat format);

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
};

int plane_count(PixelFormat format);
// Width/height in samples of plane `index` of a width x height frame; bytes per sample in
// `bytes_per_sample` (2 for nv12's UV plane, 3 for rgb24, else 1).
PlaneView plane_geometry(PixelFormat format, int width, int height, int index);
int bytes_per_sample(PixelFormat format, int plane_index);
bool is_yuv(PixelFormat format);
// Chroma subsampling shifts (0 or 1) of a YUV format.
int chroma_shift_x(PixelFormat format);
int chroma_shift_y(PixelFormat format);
// Bytes of the tightly packed frame (each row padded to `row_align` bytes).
std::size_t frame_bytes(PixelFormat format, int width, int height, int row_align = 1);

// Lays out the planes of a width x height frame over `buffer` (at least frame_bytes(...) bytes),
// rows padded to `row_align`.
ImageView make_view(PixelFormat format, int width, int height, std::uint8_t* buffer,
                    int row_align = 1);

// Copies the pixels of `src` into `dst` (same format and size; strides may differ).
void copy_image(const ImageView& src, ImageView& dst);

// Owning image with heap storage; for tests, stills and CPU scratch.
class Image {
 public:
  Image() = default;
  Image(PixelFormat format, int width, int height, int row_align = 64);
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
