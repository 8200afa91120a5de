// The dark channel prior chain (SPEC 3) on the CPU: per-pixel steps, atmospheric light, and the
// Dehazer that strings the operators together over planar float buffers sized once per frame
// size.
#include "kernels/dehaze.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/dcp_rules.hpp"
#include "kernels/dehaze_ops.hpp"

namespace hazefree::cpu {
namespace {

int resolve(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

float* rgb_row(float* base, int stride, int y) {
  return base + static_cast<std::ptrdiff_t>(y) * stride;
}

}  // namespace

// ---- per-pixel steps ----------------------------------------------------------------------

void grey_and_channel_min(RgbPlanesF rgb, const PlaneF& grey, const PlaneF& channel_min,
                          int threads) {
  const int w = grey.width, h = grey.height;
#pragma omp parallel for num_threads(resolve(threads)) schedule(static)
  for (int y = 0; y < h; ++y) {
    const float* r = rgb_row(rgb.r, rgb.stride, y);
    const float* g = rgb_row(rgb.g, rgb.stride, y);
    const float* b = rgb_row(rgb.b, rgb.stride, y);
    float* gy = grey.row(y);
    float* m = channel_min.row(y);
    for (int x = 0; x < w; ++x) {
      gy[x] = dcp::grey(r[x], g[x], b[x]);
      m[x] = dcp::min3(r[x], g[x], b[x]);
    }
  }
}

void normalised_channel_min(RgbPlanesF rgb, std::array<float, 3> a, const PlaneF& out,
                            int threads) {
  const int w = out.width, h = out.height;
#pragma omp parallel for num_threads(resolve(threads)) schedule(static)
  for (int y = 0; y < h; ++y) {
    const float* r = rgb_row(rgb.r, rgb.stride, y);
    const float* g = rgb_row(rgb.g, rgb.stride, y);
    const float* b = rgb_row(rgb.b, rgb.stride, y);
    float* m = out.row(y);
    for (int x = 0; x < w; ++x) m[x] = dcp::min3(r[x] / a[0], g[x] / a[1], b[x] / a[2]);
  }
}

void raw_transmission(const PlaneF& filtered, float omega, int threads) {
  const int w = filtered.width, h = filtered.height;
#pragma omp parallel for num_threads(resolve(threads)) schedule(static)
  for (int y = 0; y < h; ++y) {
    float* t = filtered.row(y);
    for (int x = 0; x < w; ++x) t[x] = dcp::raw_transmission(t[x], omega);
  }
}

void recover(RgbPlanesF rgb, const PlaneF& transmission, std::array<float, 3> a,
             const DcpParams& p, int threads) {
  const int w = transmission.width, h = transmission.height;
  const float mean_a = (a[0] + a[1] + a[2]) / 3.0f;
#pragma omp parallel for num_threads(resolve(threads)) schedule(static)
  for (int y = 0; y < h; ++y) {
    float* r = rgb_row(rgb.r, rgb.stride, y);
    float* g = rgb_row(rgb.g, rgb.stride, y);
    float* b = rgb_row(rgb.b, rgb.stride, y);
    const float* tr = transmission.row(y);
    for (int x = 0; x < w; ++x) {
      const float t = dcp::tolerate(tr[x], r[x], g[x], b[x], mean_a, p.k_tolerance);
      r[x] = dcp::recover(r[x], a[0], t, p.t0, p.brightness);
      g[x] = dcp::recover(g[x], a[1], t, p.t0, p.brightness);
      b[x] = dcp::recover(b[x], a[2], t, p.t0, p.brightness);
    }
  }
}

// ---- atmospheric light ----------------------------------------------------------------------

std::array<float, 3> AtmosphereEstimator::estimate(const PlaneF& dark, const PlaneF& grey,
                                                   RgbPlanesF rgb, float top_fraction,
                                                   int threads) {
  constexpr int kB = dcp::kAtmosphereBlock;
  const int w = dark.width, h = dark.height;
  if (w <= 0 || h <= 0 || grey.width != w || grey.height != h)
    throw std::invalid_argument("atmospheric light: planes of different sizes");
  const int bw = (w + kB - 1) / kB, bh = (h + kB - 1) / kB, count = bw * bh;
  blocks_.resize(count);  // no reallocation once the largest size has been seen
#pragma omp parallel for num_threads(resolve(threads)) schedule(static)
  for (int i = 0; i < count; ++i) {
    const int x0 = (i % bw) * kB, y0 = (i / bw) * kB;
    const int x1 = std::min(w, x0 + kB), y1 = std::min(h, y0 + kB);
    BlockMax best{dark.row(y0)[x0], grey.row(y0)[x0], x0, y0, i};
    for (int y = y0; y < y1; ++y) {
      const float* d = dark.row(y);
      const float* g = grey.row(y);
      for (int x = x0; x < x1; ++x)
        // Strict comparisons keep the first pixel in raster order among full ties.
        if (d[x] > best.dark || (d[x] == best.dark && g[x] > best.grey)) best = {d[x], g[x], x, y, i};
    }
    blocks_[i] = best;
  }
  std::sort(blocks_.begin(), blocks_.end(), [](const BlockMax& a, const BlockMax& b) {
    if (a.dark != b.dark) return a.dark > b.dark;
    if (a.grey != b.grey) return a.grey > b.grey;
    return a.index < b.index;
  });
  used_ = dcp::atmosphere_top_count(count, top_fraction);
  double sum[3] = {0.0, 0.0, 0.0};
  for (int k = 0; k < used_; ++k) {
    const BlockMax& b = blocks_[k];
    sum[0] += rgb_row(rgb.r, rgb.stride, b.y)[b.x];
    sum[1] += rgb_row(rgb.g, rgb.stride, b.y)[b.x];
    sum[2] += rgb_row(rgb.b, rgb.stride, b.y)[b.x];
  }
  std::array<float, 3> a{};
  for (int c = 0; c < 3; ++c)
    a[c] = std::max(dcp::kMinAtmosphere, static_cast<float>(sum[c] / used_));
  return a;
}

float haze_estimate(const PlaneF& dark, const std::array<float, 3>& estimate, int threads) {
  const int w = dark.width, h = dark.height;
  std::array<unsigned, dcp::kHazeBins> histogram{};
  // Integer counts: the same whatever the threads and their order.
#pragma omp parallel num_threads(resolve(threads))
  {
    std::array<unsigned, dcp::kHazeBins> local{};
#pragma omp for schedule(static) nowait
    for (int y = 0; y < h; ++y) {
      const float* d = dark.row(y);
      for (int x = 0; x < w; ++x) ++local[static_cast<std::size_t>(dcp::haze_bin(d[x]))];
    }
#pragma omp critical
    for (int b = 0; b < dcp::kHazeBins; ++b) histogram[static_cast<std::size_t>(b)] += local[static_cast<std::size_t>(b)];
  }
  return dcp::haze_estimate(histogram.data(), static_cast<long long>(w) * h, estimate.data());
}

AtmosphereTracker::AtmosphereTracker(const DcpParams& params)
    : smoothing_(params.a_smoothing), max_step_(params.a_max_step), scene_cut_(params.a_scene_cut) {}

std::array<float, 3> AtmosphereTracker::update(const std::array<float, 3>& estimate, float haze_estimate) {
  last_cut_ = dcp::next_atmospheric_light(has_value_, value_.data(), estimate.data(), smoothing_, max_step_,
                                          scene_cut_);
  haze_ = dcp::next_haze_index(last_cut_, haze_, haze_estimate);  // a cut or the first frame
  has_value_ = true;
  return value_;
}

// ---- the chain ------------------------------------------------------------------------------

struct Dehazer::Impl {
  DcpParams params;
  int threads;
  int width = 0, height = 0, stride = 0;
  std::vector<float> storage;  // R, G, B, grey, work, dark planes
  MinFilter min_filter;
  AtmosphereEstimator estimator;
  AtmosphereTracker tracker;
  GuidedFilter guided;
  std::array<float, 3> estimate{0.f, 0.f, 0.f};
  float haze_estimate = 0.f;  // h^ of the last estimate
  float strength = 1.f;       // s(h) of the last frame
  std::vector<StageTime> times;

  Impl(const DcpParams& p, int t) : params(p), threads(resolve(t)), tracker(p) {}

  PlaneF plane(int i) {
    return {storage.data() + static_cast<std::size_t>(i) * stride * height, width, height, stride};
  }

  RgbPlanesF rgb_planes() { return {plane(0).data, plane(1).data, plane(2).data, stride}; }

  // Steps 1 to 3 of `in` into the workspace: its estimate A^ (the state untouched); `stage`
  // marks the end of each stage (process() times them).
  template <typename Mark>
  std::array<float, 3> estimate_light(const ImageView& in, Mark stage) {
    ensure(in.width, in.height);
    const PlaneF grey = plane(3), work = plane(4), dark = plane(5);
    const RgbPlanesF rgb = rgb_planes();
    frame_to_rgb_f32(in, rgb, threads);
    stage("to_rgb");
    grey_and_channel_min(rgb, grey, work, threads);
    min_filter.apply(work, dark, params.patch_radius, threads);
    stage("dark_channel");
    const std::array<float, 3> a = estimator.estimate(dark, grey, rgb, params.a_top_fraction, threads);
    haze_estimate = cpu::haze_estimate(dark, a, threads);
    return a;
  }

  void ensure(int w, int h) {
    if (w == width && h == height) return;
    width = w;
    height = h;
    stride = (w + 15) / 16 * 16;  // 64-byte rows
    storage.assign(static_cast<std::size_t>(stride) * h * 6, 0.f);
  }
};

Dehazer::Dehazer(const DcpParams& params, int threads) {
  ProcessingConfig config;
  config.dcp = params;
  config.threads = threads;
  validate(config);
  impl_ = std::make_unique<Impl>(params, threads);
}

Dehazer::~Dehazer() = default;
Dehazer::Dehazer(Dehazer&&) noexcept = default;
Dehazer& Dehazer::operator=(Dehazer&&) noexcept = default;

void Dehazer::process(const ImageView& in, ImageView& out) {
  // Depth: the chain is float throughout; only the conversions at its ends see the codes, at the
  // frame's own depth (SPEC 7).
  if (in.format != out.format || in.width != out.width || in.height != out.height ||
      in.depth != out.depth)
    throw std::invalid_argument("dehaze: output frame differs from the input in format, depth or size");
  if (in.width <= 0 || in.height <= 0) throw std::invalid_argument("dehaze: empty frame");
  Impl& m = *impl_;
  const DcpParams& p = m.params;
  const int nt = m.threads;
  using Clock = std::chrono::steady_clock;
  m.times.clear();
  auto mark = Clock::now();
  auto stage = [&](const char* name) {
    const auto now = Clock::now();
    m.times.push_back({name, std::chrono::duration<double, std::milli>(now - mark).count()});
    mark = now;
  };

  m.estimate = m.estimate_light(in, stage);
  const PlaneF grey = m.plane(3), work = m.plane(4);
  const RgbPlanesF rgb = m.rgb_planes();
  const std::array<float, 3> a = m.tracker.update(m.estimate, m.haze_estimate);
  // Auto strength scales omega and B (s = 1 without it: the configured values exactly).
  m.strength = dcp::auto_strength(p.auto_strength, m.tracker.haze_index());
  DcpParams applied = p;
  applied.omega = p.omega * m.strength;
  applied.brightness = p.brightness * m.strength;
  stage("atmosphere");
  normalised_channel_min(rgb, a, work, nt);
  m.min_filter.apply(work, work, p.patch_radius, nt);
  raw_transmission(work, applied.omega, nt);
  stage("transmission");
  m.guided.apply(grey, work, work, p.gf_radius, p.gf_eps, p.gf_subsample, nt);
  stage("guided_filter");
  recover(rgb, work, a, applied, nt);
  stage("recovery");
  // The output keeps the stream's colour description.
  ImageView target = out;
  target.matrix = in.matrix;
  target.range = in.range;
  rgb_f32_to_frame(rgb, target, nt);
  stage("from_rgb");
}

std::array<float, 3> Dehazer::estimate(const ImageView& in) {
  if (in.width <= 0 || in.height <= 0) throw std::invalid_argument("dehaze: empty frame");
  return impl_->estimate_light(in, [](const char*) {});
}

bool Dehazer::has_atmospheric_light() const { return impl_->tracker.has_value(); }

void Dehazer::set_atmospheric_light(bool has_value, const std::array<float, 3>& value, float haze) {
  impl_->tracker.set(has_value, value, haze);
}

float Dehazer::haze_estimate() const { return impl_->haze_estimate; }

float Dehazer::haze_index() const { return impl_->tracker.has_value() ? impl_->tracker.haze_index() : 0.f; }

float Dehazer::omega_used() const { return impl_->params.omega * impl_->strength; }

void Dehazer::reset() { impl_->tracker.reset(); }

std::array<float, 3> Dehazer::atmospheric_light() const {
  return impl_->tracker.has_value() ? impl_->tracker.value() : std::array<float, 3>{0.f, 0.f, 0.f};
}

std::array<float, 3> Dehazer::atmospheric_estimate() const { return impl_->estimate; }

std::vector<StageTime> Dehazer::stage_times() const { return impl_->times; }

}  // namespace hazefree::cpu
