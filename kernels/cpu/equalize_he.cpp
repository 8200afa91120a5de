// Global histogram equalization on the CPU (SPEC 4): OpenCV's equalizeHist rule, he_temporal,
// ROI, every colour mode. OpenMP: per-thread private histograms merged, then a parallel LUT map.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/equalize_common.hpp"
#include "kernels/equalize.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu {
namespace rules = equalize_rules;
using detail::ChannelIn;
using detail::ChannelOut;

namespace {

// 256-bin histogram of a rectangle of one plane. Each thread counts into four interleaved
// private histograms (consecutive equal values would otherwise serialise on one counter), then
// merges into `hist` under a critical section.
void histogram_256(ChannelIn src, rules::HistogramRect r, int threads, std::uint32_t* hist) {
  std::fill(hist, hist + rules::kBins, 0u);
  const int rows = r.y1 - r.y0;
#pragma omp parallel num_threads(std::min(threads, rows))
  {
    std::uint32_t local[4][rules::kBins] = {};
#pragma omp for schedule(static) nowait
    for (int y = r.y0; y < r.y1; ++y) {
      const std::uint8_t* row = src.data + static_cast<std::size_t>(y) * src.stride;
      int x = r.x0;
      for (; x + 4 <= r.x1; x += 4) {
        ++local[0][row[x]];
        ++local[1][row[x + 1]];
        ++local[2][row[x + 2]];
        ++local[3][row[x + 3]];
      }
      for (; x < r.x1; ++x) ++local[0][row[x]];
    }
#pragma omp critical(hazefree_he_merge)
    for (int i = 0; i < rules::kBins; ++i)
      hist[i] += local[0][i] + local[1][i] + local[2][i] + local[3][i];
  }
}

// 2^depth-bin histogram of a rectangle of one plane at depth 9..16 (values read >> src.shift,
// bits above the depth ignored): four private histograms per thread in `local` (threads x 4 x
// bins), four as at 8 bits so that runs of equal samples (smooth pictures) do not wait on the
// previous increment of the same counter. Each thread folds its four, then every thread sums a
// slice of the bins over the team: no merge is serialised (16 threads merging 1024-bin
// histograms one at a time were a tenth of a 1080p frame's HE).
void histogram_wide(detail::WideIn src, rules::HistogramRect r, int bins, int threads,
                    std::vector<std::uint32_t>& local_storage, std::uint32_t* hist) {
  const int rows = r.y1 - r.y0;
  const int team = std::max(1, std::min(threads, rows));
  const std::size_t per_thread = 4 * static_cast<std::size_t>(bins);
  local_storage.resize(static_cast<std::size_t>(team) * per_thread);
  const int shift = src.shift, mask = bins - 1;
  std::uint32_t* const all = local_storage.data();
#pragma omp parallel num_threads(team)
  {
    const int members = omp_get_num_threads();
    std::uint32_t* local = all + static_cast<std::size_t>(omp_get_thread_num()) * per_thread;
    std::uint32_t* const h[4] = {local, local + bins, local + 2 * bins, local + 3 * bins};
    std::fill(local, local + per_thread, 0u);
    // The usual input has no shift: its loop has none (a variable shift costs as much as the
    // increment it feeds).
    auto count_row = [&](const std::uint16_t* row, auto bin) {
      int x = r.x0;
      for (; x + 4 <= r.x1; x += 4) {
        ++h[0][bin(row[x])];
        ++h[1][bin(row[x + 1])];
        ++h[2][bin(row[x + 2])];
        ++h[3][bin(row[x + 3])];
      }
      for (; x < r.x1; ++x) ++h[0][bin(row[x])];
    };
#pragma omp for schedule(static)
    for (int y = r.y0; y < r.y1; ++y) {
      const std::uint16_t* row = src.data + static_cast<std::size_t>(y) * src.stride;
      if (shift == 0) count_row(row, [mask](std::uint16_t v) { return v & mask; });
      else count_row(row, [shift, mask](std::uint16_t v) { return (v >> shift) & mask; });
    }
#pragma omp for schedule(static)
    for (int i = 0; i < bins; ++i) {
      std::uint32_t sum = 0;
      for (int t = 0; t < members; ++t) {
        const std::uint32_t* l = all + static_cast<std::size_t>(t) * per_thread + i;
        sum += l[0] + l[bins] + l[2 * bins] + l[3 * bins];
      }
      hist[i] = sum;
    }
  }
}

// The mask (2^depth - 1) keeps stray bits above the depth from indexing past the LUT. `lut`
// already holds the output's shift (P010's high bits); the usual input without one takes a loop
// with no shift at all (the variable shift was half of this function's time).
void map_plane_wide(detail::WideIn src, detail::WideOut dst, int width, int height,
                    const std::uint16_t* lut, int mask, int threads) {
#pragma omp parallel for schedule(static) num_threads(std::min(threads, height))
  for (int y = 0; y < height; ++y) {
    const std::uint16_t* s = src.data + static_cast<std::size_t>(y) * src.stride;
    std::uint16_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    if (src.shift == 0) {
      for (int x = 0; x < width; ++x) d[x] = lut[s[x] & mask];
    } else {
      const int shift = src.shift;
      for (int x = 0; x < width; ++x) d[x] = lut[(s[x] >> shift) & mask];
    }
  }
}

void map_plane(ChannelIn src, ChannelOut dst, int width, int height, const std::uint8_t* lut,
               int threads) {
#pragma omp parallel for schedule(static) num_threads(std::min(threads, height))
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* s = src.data + static_cast<std::size_t>(y) * src.stride;
    std::uint8_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) d[x] = lut[s[x]];
  }
}

}  // namespace

struct HistogramEqualizer::Impl final : detail::ChannelEqualizer {
  HeParams params;
  ColorMode color;
  int threads;
  detail::ColorRouter router;

  // he_temporal state: one float histogram per channel (3 x 2^depth bins: 256 at 8 bits) or the
  // BITS one (4096).
  bool has_history[3] = {false, false, false};
  std::array<std::vector<float>, 3> history;
  bool has_bits_history = false;
  std::vector<float> bits_history;
  int history_width = 0, history_height = 0, history_depth = 0;
  FrameEstimate last;  // the last frame's histograms (he_temporal only), for jobs' analysis

  rules::HistogramRect rect{0, 0, 0, 0};
  std::vector<std::uint32_t> bits_hist;
  std::vector<std::uint32_t> bits_local;  // one private 4096-bin histogram per thread
  std::vector<std::uint16_t> bits_lut;
  // Depth 9..16: the histogram, the per-thread histograms and the LUT of 2^depth bins.
  std::vector<std::uint32_t> wide_hist, wide_local;
  std::vector<std::uint16_t> wide_lut;

  Impl(const HeParams& p, ColorMode c, int t)
      : params(p), color(c), threads(detail::resolve_threads(t)), router(threads) {}

  bool temporal() const { return params.temporal < 1.f; }

  void reset() {
    for (bool& h : has_history) h = false;
    has_bits_history = false;
  }

  // The smoothed histogram of `channel` for a frame of `bins` bins. A history handed over by
  // set_history() must have the frame's bins.
  std::vector<float>& history_for(int channel, int bins, int depth) {
    std::vector<float>& h = history[channel];
    if (has_history[channel] && h.size() != static_cast<std::size_t>(bins))
      throw std::invalid_argument(fmt::format(
          "he: the he_temporal history has {} bins; this {}-bit frame needs {}", h.size(), depth, bins));
    h.resize(static_cast<std::size_t>(bins));
    return h;
  }

  void equalize(int channel, ChannelIn src, ChannelOut dst, int width, int height,
                const std::uint8_t* codes) override {
    std::uint32_t hist[rules::kBins];
    histogram_256(src, rect, threads, hist);
    std::uint8_t lut[rules::kBins];
    if (temporal()) {
      std::vector<float>& h = history_for(channel, rules::kBins, 8);
      for (int i = 0; i < rules::kBins; ++i)
        h[i] = rules::he_history_step(has_history[channel], params.temporal, hist[i], h[i]);
      has_history[channel] = true;
      last.channel_histograms[channel].assign(hist, hist + rules::kBins);
      rules::he_lut_256_from_float(h.data(), lut);
    } else {
      rules::he_lut_256(hist, lut);
    }
    for (int i = 0; i < rules::kBins; ++i) lut[i] = codes[lut[i]];
    map_plane(src, dst, width, height, lut, threads);
  }

  // SPEC 7: the same rule over 2^depth bins with M = 2^depth - 1.
  void equalize_wide(int channel, detail::WideIn src, detail::WideOut dst, int width, int height,
                     int depth, const std::uint16_t* codes) override {
    const int bins = rules::he_bins(depth);
    const int max_code = rules::depth_max_code(depth);
    wide_hist.resize(static_cast<std::size_t>(bins));
    wide_lut.resize(static_cast<std::size_t>(bins));
    histogram_wide(src, rect, bins, threads, wide_local, wide_hist.data());
    if (temporal()) {
      std::vector<float>& h = history_for(channel, bins, depth);
      for (int i = 0; i < bins; ++i)
        h[static_cast<std::size_t>(i)] =
            rules::he_history_step(has_history[channel], params.temporal, wide_hist[static_cast<std::size_t>(i)], h[static_cast<std::size_t>(i)]);
      has_history[channel] = true;
      last.channel_histograms[channel] = wide_hist;
      rules::he_lut_from_float(h.data(), bins, max_code, wide_lut.data());
    } else {
      rules::he_lut(wide_hist.data(), bins, max_code, wide_lut.data());
    }
    for (std::uint16_t& e : wide_lut) e = static_cast<std::uint16_t>(codes[e] << dst.shift);
    map_plane_wide(src, dst, width, height, wide_lut.data(), max_code, threads);
  }

  void bits(const ImageView& in, ImageView& out) {
    detail::ColorRouter::check_same_geometry(in, out);
    out.matrix = in.matrix;
    out.range = in.range;
    const detail::RgbScratch rgb = router.to_rgb(in);
    const int w = in.width;
    bits_hist.assign(rules::kBitsBins, 0u);
    bits_lut.resize(rules::kBitsBins);
    bits_local.resize(static_cast<std::size_t>(threads) * rules::kBitsBins);
    const int rows = rect.y1 - rect.y0;
#pragma omp parallel num_threads(std::min(threads, rows))
    {
      std::uint32_t* local = bits_local.data() + static_cast<std::size_t>(omp_get_thread_num()) * rules::kBitsBins;
      std::fill(local, local + rules::kBitsBins, 0u);
#pragma omp for schedule(static) nowait
      for (int y = rect.y0; y < rect.y1; ++y) {
        const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
        for (int x = rect.x0; x < rect.x1; ++x)
          ++local[rules::bits_index(rgb.r[o + x], rgb.g[o + x], rgb.b[o + x])];
      }
#pragma omp critical(hazefree_he_merge)
      for (int i = 0; i < rules::kBitsBins; ++i) bits_hist[i] += local[i];
    }
    if (temporal()) {
      bits_history.resize(rules::kBitsBins);
      for (int i = 0; i < rules::kBitsBins; ++i)
        bits_history[i] = rules::he_history_step(has_bits_history, params.temporal, bits_hist[i], bits_history[i]);
      has_bits_history = true;
      last.bits_histogram.assign(bits_hist.begin(), bits_hist.end());
      rules::he_lut_4096_from_float(bits_history.data(), bits_lut.data());
    } else {
      rules::he_lut_4096(bits_hist.data(), bits_lut.data());
    }
    const std::uint16_t* lut = bits_lut.data();
#pragma omp parallel for schedule(static) num_threads(std::min(threads, in.height))
    for (int y = 0; y < in.height; ++y) {
      const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
      for (int x = 0; x < w; ++x) {
        const int r = rgb.r[o + x], g = rgb.g[o + x], b = rgb.b[o + x];
        const rules::Rgb c = rules::bits_apply(lut[rules::bits_index(r, g, b)], r, g, b);
        rgb.r[o + x] = static_cast<std::uint8_t>(c.r);
        rgb.g[o + x] = static_cast<std::uint8_t>(c.g);
        rgb.b[o + x] = static_cast<std::uint8_t>(c.b);
      }
    }
    router.from_rgb(rgb, out);
  }

  void process(const ImageView& in, ImageView& out) {
    // A new frame size is a new stream configuration: the smoothed histogram no longer applies
    // (a history given before the first frame, by set_history(), does).
    if (history_width != 0 && (in.width != history_width || in.height != history_height ||
                               in.depth != history_depth))
      reset();
    history_width = in.width;
    history_height = in.height;
    history_depth = in.depth;
    if (color == ColorMode::rgb_bits && in.depth > 8)
      throw std::invalid_argument(fmt::format(
          "color = rgb-bits works on 8-bit frames only; this frame is {}-bit ({})", in.depth,
          format_name(in.format, in.depth)));
    rect = rules::histogram_rect(params.roi, in.width, in.height);
    for (auto& h : last.channel_histograms) h.clear();
    last.bits_histogram.clear();
    if (color == ColorMode::rgb_bits) bits(in, out);
    else router.run(in, out, color, *this);
  }
};

HistogramEqualizer::HistogramEqualizer(const HeParams& params, ColorMode color, int threads)
    : impl_(std::make_unique<Impl>(params, color, threads)) {}
HistogramEqualizer::~HistogramEqualizer() = default;
HistogramEqualizer::HistogramEqualizer(HistogramEqualizer&&) noexcept = default;
HistogramEqualizer& HistogramEqualizer::operator=(HistogramEqualizer&&) noexcept = default;

void HistogramEqualizer::process(const ImageView& in, ImageView& out) { impl_->process(in, out); }
void HistogramEqualizer::reset() { impl_->reset(); }

FrameEstimate HistogramEqualizer::last_histograms() const { return impl_->last; }

TemporalState HistogramEqualizer::history() const {
  const Impl& m = *impl_;
  TemporalState state;
  for (int c = 0; c < 3; ++c)
    if (m.has_history[c]) state.channel_history[c] = m.history[c];
  if (m.has_bits_history) state.bits_history = m.bits_history;
  return state;
}

void HistogramEqualizer::set_history(const TemporalState& state) {
  Impl& m = *impl_;
  for (int c = 0; c < 3; ++c) {
    // 2^d bins for a depth d of 8..16 (256 at 8 bits); process() checks them against the frame.
    const std::vector<float>& h = state.channel_history[c];
    const std::size_t bins = h.size();
    if (!h.empty() && (bins < rules::kBins || bins > (std::size_t{1} << kMaxDepth) || (bins & (bins - 1)) != 0))
      throw std::invalid_argument("he: a channel history of " + std::to_string(h.size()) +
                                  " bins (2^d expected for a depth d of 8 to 16: 256, 1024, ...)");
    m.has_history[c] = !h.empty();
    m.history[c] = h;
  }
  const std::vector<float>& b = state.bits_history;
  if (!b.empty() && b.size() != static_cast<std::size_t>(rules::kBitsBins))
    throw std::invalid_argument("he: a BITS history of " + std::to_string(b.size()) + " bins (4096 expected)");
  m.has_bits_history = !b.empty();
  m.bits_history = b;
}

}  // namespace hazefree::cpu
