// What the equalization operators on the GPU pass between them: planes of 8-bit and of 9..16-bit
// samples, and the he_temporal history of one stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>


namespace hazefree::cuda {

// he_temporal history of one stream, shared by the lanes: 8-bit channels, the BITS index, and
// channels of depth 9..16 (wide_bins[c] = 2^depth bins of wide[c]).
struct HeHistory {
  float channel[3][256];
  float bits[4096];
  int has_channel[3];
  int has_bits;
  float wide[3][65536];
  int has_wide[3];
  int wide_bins[3];
};
void reset_he_history(HeHistory* d_history, cudaStream_t stream);

// One 8-bit plane on the device.
struct DevicePlaneU8 {
  std::uint8_t* data = nullptr;
  int width = 0, height = 0, stride = 0;
};

// One plane of 9..16-bit samples on the device: uint16 samples, `stride` samples between rows,
// the value stored << shift (P010/P016).
struct DevicePlaneU16 {
  std::uint16_t* data = nullptr;
  int width = 0, height = 0, stride = 0, shift = 0;
};

// The source and destination planes of one call in a kernel's arguments (src[], dst[],
// src_stride, dst_stride: the planes of a call share one geometry).
template <typename Args, typename Plane>
void set_planes(Args& a, const Plane* src, const Plane* dst, int planes) {
  for (int p = 0; p < planes; ++p) {
    a.src[p] = src[p].data;
    a.dst[p] = dst[p].data;
  }
  a.src_stride = src[0].stride;
  a.dst_stride = dst[0].stride;
}

}  // namespace hazefree::cuda
