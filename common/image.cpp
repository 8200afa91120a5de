#include "common/image.hpp"

#include <cstring>
#include <stdexcept>

namespace hazefree {

std::string_view to_string(PixelFormat format) {
  switch (format) {
    case PixelFormat::yuv420p: return "yuv420p";
    case PixelFormat::yuv422p: return "yuv422p";
    case PixelFormat::yuv444p: return "yuv444p";
    case PixelFormat::nv12: return "nv12";
    case PixelFormat::gray8: return "gray";
    case PixelFormat::rgb24: return "rgb24";
  }
  return "unknown";
}

std::string format_name(PixelFormat format, int depth) {
  if (depth <= 8) return std::string(to_string(format));
  switch (format) {
    case PixelFormat::nv12: return depth <= 10 ? "p010" : "p016";
    case PixelFormat::rgb24: return depth == 16 ? "rgb48" : "rgb" + std::to_string(3 * depth);
    default: return std::string(to_string(format)) + std::to_string(depth);
  }
}

int plane_count(PixelFormat format) {
  switch (format) {
    case PixelFormat::yuv420p:
    case PixelFormat::yuv422p:
    case PixelFormat::yuv444p: return 3;
    case PixelFormat::nv12: return 2;
    case PixelFormat::gray8:
    case PixelFormat::rgb24: return 1;
  }
  return 0;
}

bool is_yuv(PixelFormat format) {
  return format != PixelFormat::gray8 && format != PixelFormat::rgb24;
}

int chroma_shift_x(PixelFormat format) {
  return (format == PixelFormat::yuv420p || format == PixelFormat::yuv422p ||
          format == PixelFormat::nv12)
             ? 1
             : 0;
}

int chroma_shift_y(PixelFormat format) {
  return (format == PixelFormat::yuv420p || format == PixelFormat::nv12) ? 1 : 0;
}

int bytes_per_sample(PixelFormat format, int plane_index, int depth) {
  const int bytes = sample_bytes(depth);
  if (format == PixelFormat::rgb24) return 3 * bytes;
  if (format == PixelFormat::nv12 && plane_index == 1) return 2 * bytes;
  return bytes;
}

PlaneView plane_geometry(PixelFormat format, int width, int height, int index, int depth) {
  if (index < 0 || index >= plane_count(format)) throw std::out_of_range("plane index");
  PlaneView p;
  if (index == 0) {
    p.width = width;
    p.height = height;
  } else {
    const int sx = chroma_shift_x(format), sy = chroma_shift_y(format);
    p.width = (width + (1 << sx) - 1) >> sx;
    p.height = (height + (1 << sy) - 1) >> sy;
  }
  p.stride = p.width * bytes_per_sample(format, index, depth);
  return p;
}

static int align_up(int value, int align) { return (value + align - 1) / align * align; }

std::size_t frame_bytes(PixelFormat format, int width, int height, int row_align, int depth) {
  std::size_t total = 0;
  for (int i = 0; i < plane_count(format); ++i) {
    const PlaneView p = plane_geometry(format, width, height, i, depth);
    total += static_cast<std::size_t>(align_up(p.stride, row_align)) * p.height;
  }
  return total;
}

ImageView make_view(PixelFormat format, int width, int height, std::uint8_t* buffer,
                    int row_align, int depth) {
  if (!valid_depth(depth))
    throw std::invalid_argument("a frame's depth must be 8 to 16 bits, not " + std::to_string(depth));
  ImageView v;
  v.depth = depth;
  v.format = format;
  v.width = width;
  v.height = height;
  v.plane_count = plane_count(format);
  v.matrix = default_matrix_for_height(height);
  v.range = is_yuv(format) ? ColorRange::limited : ColorRange::full;
  std::size_t offset = 0;
  for (int i = 0; i < v.plane_count; ++i) {
    PlaneView p = plane_geometry(format, width, height, i, depth);
    p.stride = align_up(p.stride, row_align);
    p.data = buffer + offset;
    offset += static_cast<std::size_t>(p.stride) * p.height;
    v.planes[i] = p;
  }
  return v;
}

void copy_image(const ImageView& src, ImageView& dst) {
  if (src.format != dst.format || src.width != dst.width || src.height != dst.height ||
      src.depth != dst.depth)
    throw std::invalid_argument("copy_image: format, size or depth differs");
  for (int i = 0; i < src.plane_count; ++i) {
    const PlaneView& s = src.planes[i];
    const PlaneView& d = dst.planes[i];
    const std::size_t row =
        static_cast<std::size_t>(s.width) * bytes_per_sample(src.format, i, src.depth);
    for (int y = 0; y < s.height; ++y)
      std::memcpy(d.data + static_cast<std::size_t>(y) * d.stride,
                  s.data + static_cast<std::size_t>(y) * s.stride, row);
  }
  dst.matrix = src.matrix;
  dst.range = src.range;
}

Image::Image(PixelFormat format, int width, int height, int row_align, int depth) {
  if (width <= 0 || height <= 0) throw std::invalid_argument("image size must be positive");
  if (!valid_depth(depth))
    throw std::invalid_argument("a frame's depth must be 8 to 16 bits, not " + std::to_string(depth));
  storage_.reset(new std::uint8_t[frame_bytes(format, width, height, row_align, depth)]());
  view_ = make_view(format, width, height, storage_.get(), row_align, depth);
}

}  // namespace hazefree
