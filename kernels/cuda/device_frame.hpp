// A frame in device memory, laid out like common/image.hpp's make_view (rows padded for
// aligned, coalesced access), and the plane-by-plane copies between host and device frames.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_memory.hpp"
#include "common/image.hpp"

namespace hazefree::cuda {

inline constexpr int kDeviceRowAlign = 128;  // bytes; one L2 line per row start

class DeviceFrame {
 public:
  // Reallocates only when the frame needs more bytes than held; the view always follows.
  void shape(PixelFormat format, int width, int height, int depth = 8) {
    storage_.reserve(frame_bytes(format, width, height, kDeviceRowAlign, depth));
    view_ = make_view(format, width, height, storage_.get(), kDeviceRowAlign, depth);
  }
  ImageView& view() { return view_; }
  const ImageView& view() const { return view_; }
  std::size_t bytes() const { return storage_.bytes(); }

 private:
  DeviceBuffer<std::uint8_t> storage_;
  ImageView view_{};
};

// Row bytes of plane `i` of a frame.
inline std::size_t plane_row_bytes(const ImageView& f, int i) {
  return static_cast<std::size_t>(f.planes[i].width) * bytes_per_sample(f.format, i, f.depth);
}

// Copies every plane (same format and size on both sides) on `stream`; `kind` says the direction.
inline void copy_frame_async(const ImageView& src, const ImageView& dst, cudaMemcpyKind kind,
                             cudaStream_t stream, int first_plane = 0, int last_plane = -1) {
  const int end = last_plane < 0 ? src.plane_count : last_plane + 1;
  for (int i = first_plane; i < end; ++i) {
    HAZEFREE_CUDA_CHECK(cudaMemcpy2DAsync(dst.planes[i].data, dst.planes[i].stride,
                                          src.planes[i].data, src.planes[i].stride,
                                          plane_row_bytes(src, i), src.planes[i].height, kind,
                                          stream));
  }
}

}  // namespace hazefree::cuda
