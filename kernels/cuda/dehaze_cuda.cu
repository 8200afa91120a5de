// The dark channel prior chain on the GPU (SPEC 3): the operators of kernels/cuda/ in order, on one
// stream, over one workspace of planes. Compiled with -fmad=false (CMakeLists.txt), as every DCP
// kernel file: the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/dehaze_cuda.hpp"

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/dcp_device.cuh"
#include "kernels/cuda/frame_access.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/dcp_rules.hpp"

namespace hazefree::cuda {

// ---- the chain --------------------------------------------------------------------------------

CudaDehazer::CudaDehazer(const DcpParams& params) : params_(params) {
  ProcessingConfig config;
  config.dcp = params;
  validate(config);
}

const std::vector<std::string>& CudaDehazer::stage_names() {
  static const std::vector<std::string> names = {"grey_and_dark_channel", "atmospheric_light",
                                                 "transmission", "guided_filter",
                                                 "recovery_from_rgb"};
  return names;
}

void CudaDehazer::mark(int i, cudaStream_t stream) {
  if (markers_ && i < static_cast<int>(markers_->size()))
    HAZEFREE_CUDA_CHECK(cudaEventRecord((*markers_)[i], stream));
}

void CudaDehazer::ensure(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width;
  height_ = height;
  stride_ = float_stride(width);
  plane_floats_ = std::max(static_cast<std::size_t>(stride_) * height,
                           static_cast<std::size_t>(float_stride(height)) * width);
  recompute_guide_ = static_cast<long>(width) * height <= kRecomputeGuideMaxPixels;
  // The fast filter has workspaces of its own (at a sixteenth of the size for subsample 4).
  const int planes = params_.gf_subsample != 1 ? kExtra0 : (recompute_guide_ ? kExtra2 : kExtra2 + 1);
  planes_.reserve(plane_floats_ * planes);
}

CudaDehazer::ChainPlanes CudaDehazer::chain_planes(int w, int h) const {
  return {{plane(kGrey), w, h, stride_}, {plane(kWork), w, h, stride_}, {plane(kDark), w, h, stride_},
          {plane(kTransposed), h, w, float_stride(h)}};
}

void CudaDehazer::enqueue_light(const ImageView& d_in, AtmosphereState* d_tracker, const StateOrder& order,
                                cudaStream_t stream) {
  if (d_in.width <= 0 || d_in.height <= 0) throw std::invalid_argument("dehaze: empty frame");
  if (!valid_depth(d_in.depth))
    throw std::invalid_argument("dehaze: a depth of " + std::to_string(d_in.depth) +
                                " bits (8 to 16 expected)");
  const int w = d_in.width, h = d_in.height;
  ensure(w, h);
  const ChainPlanes p = chain_planes(w, h);
  const DevicePlaneF &grey = p.grey, &work = p.work, &dark = p.dark, &work_t = p.work_t;
  const int r = params_.patch_radius;
  const bool fused = r <= kPatchTileMaxRadius;
  mark(0, stream);
  if (fused) {
    // The atmospheric-light block maxima come out of the same kernel.
    launch_grey_and_dark_channel(d_in, r, grey, dark, atmosphere_.block_maxima(w, h), stream,
                                 atmosphere_.haze_histogram());
  } else {
    launch_grey_and_channel_min_transposed(d_in, grey, work_t, stream);
    // `work` is free until the raw transmission: the row-filtered plane goes there.
    min_filter_.apply_transposed_in_place(work_t, dark, r, work.data, stream);
  }
  mark(1, stream);
  if (fused) atmosphere_.update_from_block_maxima(d_in, params_, d_tracker, order, stream);
  else atmosphere_.estimate_and_update(dark, grey, d_in, params_, d_tracker, order, stream);
  mark(2, stream);
}

void CudaDehazer::enqueue(const ImageView& d_in, const ImageView& d_out,
                          AtmosphereState* d_tracker, const StateOrder& order,
                          cudaStream_t stream) {
  if (d_in.format != d_out.format || d_in.width != d_out.width || d_in.height != d_out.height ||
      d_in.depth != d_out.depth)
    throw std::invalid_argument("dehaze: output frame differs from the input in format, depth or size");
  enqueue_light(d_in, d_tracker, order, stream);
  const ChainPlanes p = chain_planes(d_in.width, d_in.height);
  const DevicePlaneF &grey = p.grey, &work = p.work, &dark = p.dark, &work_t = p.work_t;
  const int r = params_.patch_radius;
  const bool fused = r <= kPatchTileMaxRadius;
  if (fused) {
    launch_raw_transmission(d_in, atmosphere_.frame_state(), r, params_.omega, work, stream);
  } else {
    launch_normalised_channel_min_transposed(d_in, atmosphere_.frame_state(), work_t, stream);
    // The dark channel has served its purpose (A): its plane takes the row-filtered plane.
    min_filter_.apply_transposed_in_place(work_t, work, r, dark.data, stream, params_.omega,
                                          &atmosphere_.frame_state()->strength);
  }
  mark(3, stream);
  if (params_.gf_subsample == 1) {
    // Exact filter: the horizontal sums in the dark and transposed planes (both done with) and
    // two more; a over t~; b over the grey plane (the guide recomputed from the frame in the
    // last pass) or in a plane of its own for frames above 1080p.
    const GuidedFilterCuda::Scratch scratch{
        {plane(kDark), plane(kTransposed), plane(kExtra0), plane(kExtra1)},
        recompute_guide_ ? nullptr : plane(kExtra2), recompute_guide_ ? &d_in : nullptr};
    guided_.apply(grey, work, work, params_.gf_radius, params_.gf_eps, 1, stream, &scratch);
  } else {
    guided_.apply(grey, work, work, params_.gf_radius, params_.gf_eps, params_.gf_subsample, stream);
  }
  mark(4, stream);
  ImageView out = d_out;
  out.matrix = d_in.matrix;
  out.range = d_in.range;
  launch_recover_to_frame(d_in, work, atmosphere_.frame_state(), params_, out, stream);
  mark(5, stream);
}

}  // namespace hazefree::cuda
