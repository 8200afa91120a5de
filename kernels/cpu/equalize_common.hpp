// Colour-mode plumbing shared by the CPU HE and AHE chains (SPEC 4): which 8-bit channels of a
// frame get equalized, through which conversion, and how the results return to the frame.
// Internal to kernels/cpu.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"

namespace hazefree::cpu::detail {

// A single-channel 8-bit plane, tightly or loosely packed (`stride` bytes between rows).
struct ChannelIn {
  const std::uint8_t* data;
  int stride;
};
struct ChannelOut {
  std::uint8_t* data;
  int stride;
};

// A single-channel plane of 9..16-bit samples (SPEC 7): uint16 samples, `stride` samples
// between rows, the value stored << `shift` (nv12's P010/P016; 0 otherwise).
struct WideIn {
  const std::uint16_t* data;
  int stride;
  int shift;
};
struct WideOut {
  std::uint16_t* data;
  int stride;
  int shift;
};

// One equalization of one channel: src -> dst (never aliasing), each equalized code e written
// as codes[e] (the identity, or the limited-range mapping). `channel` tells apart the channels
// of one frame (R, G, B) for state kept per channel (he_temporal). equalize_wide() is the same
// at depth 9..16: codes has 2^depth entries.
class ChannelEqualizer {
 public:
  virtual ~ChannelEqualizer() = default;
  virtual void equalize(int channel, ChannelIn src, ChannelOut dst, int width, int height,
                        const std::uint8_t* codes) = 0;
  virtual void equalize_wide(int channel, WideIn src, WideOut dst, int width, int height,
                             int depth, const std::uint16_t* codes) = 0;
};

// Planar 8-bit RGB of a frame, for the BITS filter.
struct RgbScratch {
  std::uint8_t* r;
  std::uint8_t* g;
  std::uint8_t* b;
  int stride;
};

// Owns the scratch planes (allocated when the frame size changes, never per frame) and routes a
// frame through a ChannelEqualizer according to the colour mode.
class ColorRouter {
 public:
  explicit ColorRouter(int threads) : threads_(threads) {}

  // luma, rgb, grey (rgb_bits goes through to_rgb / from_rgb). Throws std::invalid_argument when
  // `out` does not have the format, size and depth of `in`. Frames of depth 9..16 go through
  // run_wide().
  void run(const ImageView& in, ImageView& out, ColorMode mode, ChannelEqualizer& op);

  // The frame as planar RGB in scratch (rgb24 deinterleaved; YUV through frame_to_rgb_u8;
  // gray8 replicated), and back (gray8 takes OpenCV's grey of the result).
  RgbScratch to_rgb(const ImageView& in);
  void from_rgb(const RgbScratch& rgb, ImageView& out);

  static void check_same_geometry(const ImageView& in, const ImageView& out);

 private:
  // The colour modes at depth 9..16 (SPEC 7): grey frames are the plane itself; YUV luma / grey
  // equalize the Y plane (limited range through the depth's mapping); rgb converts to RGB codes
  // of the frame's depth and back in fixed point; rgb48 luma / grey use OpenCV's YCrCb / grey at
  // depth.
  void run_wide(const ImageView& in, ImageView& out, ColorMode mode, ChannelEqualizer& op);
  void ensure(int width, int height);
  void ensure_wide(int width, int height);
  std::uint16_t* wide_plane(int index) {
    return wide_scratch_.data() + static_cast<std::size_t>(index) * wide_plane_samples_;
  }
  std::uint8_t* plane(int index) { return scratch_.data() + static_cast<std::size_t>(index) * plane_bytes_; }

  int threads_;
  int width_ = 0, height_ = 0;
  std::size_t plane_bytes_ = 0;
  std::vector<std::uint8_t> scratch_;  // 6 planes: 3 in, 3 out
  int wide_width_ = 0, wide_height_ = 0;
  std::size_t wide_plane_samples_ = 0;
  std::vector<std::uint16_t> wide_scratch_;  // 6 planes of 16-bit samples: 3 in, 3 out
};

// Identity and limited-range code tables.
const std::uint8_t* identity_codes();
const std::uint8_t* limited_range_codes();
// The same at depth 9..16 (2^depth entries each; built once per depth).
const std::uint16_t* identity_codes_wide(int depth);
const std::uint16_t* limited_range_codes_wide(int depth);

int resolve_threads(int threads);

}  // namespace hazefree::cpu::detail
