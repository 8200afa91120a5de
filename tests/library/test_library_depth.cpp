// The public C++ API at high bit depth (SPEC 7): frames of two-byte samples made by the Frame
// factories are processed at their own depth. Global HE on grey and limited-range YUV frames at
// 10 and 16 bits equals a naive SPEC 7 oracle written here; P010 gives what 10-bit I420 gives;
// DCP on 16-bit RGB gives the CPU backend's result; bad depths throw FrameError naming the
// argument; FrameReader hands out RGB at the frames' depth or at 8 bits.
#include <doctest/doctest.h>
#include <hazefree/hazefree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "kernels/processor.hpp"
#include "support/test_support.hpp"

namespace {

// One plane of two-byte samples with `padding` samples of 0xBEEF after each row.
struct Plane16 {
  std::vector<std::uint16_t> samples;
  int row = 0;     // samples of a row
  int stride = 0;  // samples between rows
  std::ptrdiff_t stride_bytes() const { return static_cast<std::ptrdiff_t>(stride) * 2; }
  std::uint16_t& at(int x, int y) { return samples[static_cast<std::size_t>(y) * stride + x]; }
  std::uint16_t at(int x, int y) const { return samples[static_cast<std::size_t>(y) * stride + x]; }
};

Plane16 make_plane(int row, int height, int padding = 5) {
  Plane16 p;
  p.row = row;
  p.stride = row + padding;
  p.samples.assign(static_cast<std::size_t>(p.stride) * height, 0xBEEF);
  return p;
}

bool padding_untouched(const Plane16& p, int height) {
  for (int y = 0; y < height; ++y)
    for (int x = p.row; x < p.stride; ++x)
      if (p.at(x, y) != 0xBEEF) return false;
  return true;
}

// Codes of depth `depth` with an uneven histogram: a smooth ramp over part of the range plus
// noise, so that the equalization moves nearly every code.
void fill_codes(Plane16& p, int width, int height, int depth, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const int max = (1 << depth) - 1;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double ramp = 0.2 + 0.45 * (x + 2.0 * y) / (width + 2.0 * height);
      const int noise = static_cast<int>(rng() % static_cast<unsigned>(std::max(2, max / 40)));
      p.at(x, y) = static_cast<std::uint16_t>(std::min(max, static_cast<int>(ramp * max) + noise));
    }
}

// SPEC 7's global HE LUT at depth d, written from the text: 2^d bins, the first non-empty bin
// i0; unchanged when it holds every sample; else scale = float(M) / (N - hist[i0]), lut[i0] = 0
// and lut[v] = float(sum of hist over (i0, v]) * scale rounded half to even, at most M.
std::vector<int> he_lut_oracle(const std::vector<int>& codes, int depth) {
  const int bins = 1 << depth;
  const int max = bins - 1;
  std::vector<long long> hist(static_cast<std::size_t>(bins), 0);
  for (int c : codes) ++hist[static_cast<std::size_t>(c)];
  std::vector<int> lut(static_cast<std::size_t>(bins));
  for (int v = 0; v < bins; ++v) lut[static_cast<std::size_t>(v)] = v;
  int i0 = 0;
  while (hist[static_cast<std::size_t>(i0)] == 0) ++i0;
  const long long n = static_cast<long long>(codes.size());
  if (hist[static_cast<std::size_t>(i0)] == n) return lut;
  const float scale = static_cast<float>(max) / static_cast<float>(n - hist[static_cast<std::size_t>(i0)]);
  lut[static_cast<std::size_t>(i0)] = 0;
  long long sum = 0;
  for (int v = i0 + 1; v < bins; ++v) {
    sum += hist[static_cast<std::size_t>(v)];
    const float product = static_cast<float>(sum) * scale;
    lut[static_cast<std::size_t>(v)] = static_cast<int>(std::min<long>(std::lrint(product), max));
  }
  return lut;
}

std::vector<int> codes_of(const Plane16& p, int width, int height, int shift = 0) {
  std::vector<int> codes;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) codes.push_back(p.at(x, y) >> shift);
  return codes;
}

}  // namespace

TEST_CASE("library depth: HE on grey frames at 10 and 16 bits equals the SPEC 7 rule") {
  for (const int depth : {10, 16}) {
    for (const auto& [w, h] : {std::pair{61, 37}, std::pair{256, 160}}) {
      INFO("gray", depth, " ", w, "x", h);
      Plane16 in = make_plane(w, h);
      Plane16 out = make_plane(w, h);
      fill_codes(in, w, h, depth, static_cast<std::uint32_t>(depth * 100 + w));
      hazefree::Processor he({{"mode", "he"}, {"backend", "cpu"}});
      he.process(hazefree::Frame::gray16(in.samples.data(), w, h, in.stride_bytes(), depth),
                 hazefree::Frame::gray16(out.samples.data(), w, h, out.stride_bytes(), depth));
      const std::vector<int> lut = he_lut_oracle(codes_of(in, w, h), depth);
      int wrong = 0, moved = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          wrong += out.at(x, y) != lut[in.at(x, y)];
          moved += out.at(x, y) != in.at(x, y);
        }
      CHECK(wrong == 0);
      CHECK(moved > w * h / 2);
      CHECK(padding_untouched(out, h));
    }
  }
}

TEST_CASE("library depth: luma HE of limited-range 10-bit I420 and P010 follows SPEC 7") {
  const int depth = 10, s = depth - 8, max = (1 << depth) - 1;
  const int w = 50, h = 31, cw = (w + 1) / 2, ch = (h + 1) / 2;
  Plane16 y = make_plane(w, h), u = make_plane(cw, ch, 3), v = make_plane(cw, ch, 7);
  fill_codes(y, w, h, depth, 7);
  for (int j = 0; j < ch; ++j)
    for (int i = 0; i < cw; ++i) {
      u.at(i, j) = static_cast<std::uint16_t>((64 << s) + i * 5);
      v.at(i, j) = static_cast<std::uint16_t>((200 << s) - j * 3);
    }
  Plane16 oy = make_plane(w, h), ou = make_plane(cw, ch, 3), ov = make_plane(cw, ch, 7);
  hazefree::Processor he({{"mode", "he"}, {"color", "luma"}, {"backend", "cpu"}});
  const hazefree::Frame in = hazefree::Frame::i420(y.samples.data(), y.stride_bytes(), u.samples.data(),
                                                   u.stride_bytes(), v.samples.data(), v.stride_bytes(), w, h, depth);
  CHECK(in.range == hazefree::FrameRange::automatic);  // limited for YUV
  he.process(in, hazefree::Frame::i420(oy.samples.data(), oy.stride_bytes(), ou.samples.data(), ou.stride_bytes(),
                                       ov.samples.data(), ov.stride_bytes(), w, h, depth));
  // Each equalized code e is put back into the legal range: (16 << s) + ((219 << s) e + M / 2) / M.
  const std::vector<int> lut = he_lut_oracle(codes_of(y, w, h), depth);
  int wrong = 0;
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) {
      const int e = lut[y.at(i, j)];
      wrong += oy.at(i, j) != (16 << s) + ((219 << s) * e + max / 2) / max;
    }
  CHECK(wrong == 0);
  CHECK(ou.samples == u.samples);  // chroma kept, padding included (it is copied as it was)
  CHECK(ov.samples == v.samples);

  // The same picture as P010 (the value in the high 10 bits, UV interleaved) gives the same codes.
  Plane16 py = make_plane(w, h), puv = make_plane(2 * cw, ch), qy = make_plane(w, h), quv = make_plane(2 * cw, ch);
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) py.at(i, j) = static_cast<std::uint16_t>(y.at(i, j) << 6);
  for (int j = 0; j < ch; ++j)
    for (int i = 0; i < cw; ++i) {
      puv.at(2 * i, j) = static_cast<std::uint16_t>(u.at(i, j) << 6);
      puv.at(2 * i + 1, j) = static_cast<std::uint16_t>(v.at(i, j) << 6);
    }
  hazefree::Processor he_p010({{"mode", "he"}, {"color", "luma"}, {"backend", "cpu"}});
  he_p010.process(hazefree::Frame::nv12(py.samples.data(), py.stride_bytes(), puv.samples.data(), puv.stride_bytes(),
                                        w, h, depth),
                  hazefree::Frame::nv12(qy.samples.data(), qy.stride_bytes(), quv.samples.data(), quv.stride_bytes(),
                                        w, h, depth));
  int differ = 0;
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) differ += (qy.at(i, j) >> 6) != oy.at(i, j) || (qy.at(i, j) & 63) != 0;
  CHECK(differ == 0);
}

TEST_CASE("library depth: DCP on a 16-bit RGB frame keeps its size and gives the CPU backend's result") {
  const int w = 96, h = 64;
  Plane16 in = make_plane(3 * w, h, 6), out = make_plane(3 * w, h, 6);
  std::mt19937 rng(5);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      // A hazy scene: bright, low-contrast colours with a gradient.
      const int base = 30000 + 200 * x + 90 * y;
      for (int c = 0; c < 3; ++c)
        in.at(3 * x + c, y) = static_cast<std::uint16_t>(std::min(65535, base + 3000 * c + static_cast<int>(rng() % 2000)));
    }
  hazefree::Processor dcp({{"mode", "dcp"}, {"backend", "cpu"}, {"dcp.gf_radius", "8"}});
  const hazefree::Frame frame_in = hazefree::Frame::rgb48(in.samples.data(), w, h, in.stride_bytes());
  CHECK(frame_in.depth == 16);
  dcp.process(frame_in, hazefree::Frame::rgb48(out.samples.data(), w, h, out.stride_bytes()));
  CHECK(padding_untouched(out, h));

  // The same frame through the backend directly, as the library wraps it.
  hazefree::ProcessingConfig config;
  config.backend = hazefree::Backend::cpu;
  config.mode = hazefree::Mode::dcp;
  config.dcp.gf_radius = 8;
  auto reference = hazefree::make_cpu_processor(config);
  std::vector<std::uint8_t> expected(hazefree::frame_bytes(hazefree::PixelFormat::rgb24, w, h, 1, 16));
  hazefree::ImageView expected_view =
      hazefree::make_view(hazefree::PixelFormat::rgb24, w, h, expected.data(), 1, 16);
  hazefree::ImageView in_view = expected_view;
  in_view.planes[0].data = reinterpret_cast<std::uint8_t*>(in.samples.data());
  in_view.planes[0].stride = static_cast<int>(in.stride_bytes());
  reference->process(in_view, expected_view);
  int wrong = 0, changed = 0;
  std::set<int> codes;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < 3 * w; ++x) {
      std::uint16_t e;
      std::memcpy(&e, expected.data() + (static_cast<std::size_t>(y) * 3 * w + x) * 2, 2);
      wrong += out.at(x, y) != e;
      changed += out.at(x, y) != in.at(x, y);
      codes.insert(out.at(x, y));
    }
  CHECK(wrong == 0);
  CHECK(changed > w * h);
  CHECK(codes.size() > 1000);  // far more codes than 8 bits hold
  CHECK(dcp.atmospheric_light() == reference->atmospheric_light());
}

TEST_CASE("library depth: a bad depth, or out at another depth than in, throws FrameError naming the frame") {
  const int w = 16, h = 8;
  std::vector<std::uint16_t> a(static_cast<std::size_t>(w * h * 3)), b(a.size());
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(w * h * 3));
  hazefree::Processor he({{"mode", "he"}, {"backend", "cpu"}});
  const hazefree::Frame good = hazefree::Frame::gray16(a.data(), w, h, w * 2, 12);
  CHECK_THROWS_WITH_AS(he.process(hazefree::Frame::gray16(a.data(), w, h, w * 2, 17),
                                  hazefree::Frame::gray16(b.data(), w, h, w * 2, 17)),
                       doctest::Contains("in: depth 17 bits per sample; expected 8 to 16"), hazefree::FrameError);
  hazefree::Frame seven = hazefree::Frame::gray8(bytes.data(), w, h, w);
  seven.depth = 7;
  CHECK_THROWS_WITH_AS(he.process(hazefree::Frame::gray8(bytes.data(), w, h, w), seven),
                       doctest::Contains("out: depth 7 bits per sample"), hazefree::FrameError);
  CHECK_THROWS_WITH_AS(he.process(good, hazefree::Frame::gray16(b.data(), w, h, w * 2, 10)),
                       doctest::Contains("out: gray10 at 10 bits per sample, expected the input's 12 bits (gray12)"),
                       hazefree::FrameError);
  CHECK_THROWS_WITH_AS(he.process(good, hazefree::Frame::gray8(bytes.data(), w, h, w)),
                       doctest::Contains("expected the input's 12 bits"), hazefree::FrameError);
  // Rows of two-byte samples: a stride of one byte per sample is too short.
  CHECK_THROWS_WITH_AS(he.process(hazefree::Frame::rgb48(a.data(), w, h, w * 3), hazefree::Frame::rgb48(b.data(), w, h, w * 6)),
                       doctest::Contains("in: plane 0 stride 48 is not in [96,"), hazefree::FrameError);
  CHECK_NOTHROW(he.process(good, hazefree::Frame::gray16(b.data(), w, h, w * 2, 12)));
  // rgb-bits is an 8-bit filter (SPEC 7): refused at depth with one line.
  hazefree::Processor bits({{"mode", "he"}, {"color", "rgb-bits"}, {"backend", "cpu"}});
  try {
    bits.process(hazefree::Frame::rgb48(a.data(), w, h, w * 6), hazefree::Frame::rgb48(b.data(), w, h, w * 6));
    FAIL("rgb-bits accepted a 16-bit frame");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("rgb-bits") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
}

TEST_CASE("library depth: FrameReader hands out RGB at the frames' depth or at 8 bits") {
  const std::string clip = hazefree::test::sample_path("hazy-street.mp4");
  const hazefree::Options options{{"mode", "he"}, {"backend", "cpu"}, {"output.depth", "10"}};
  hazefree::FrameReader deep(clip, options), reduced(clip, options);
  hazefree::FrameReader eight(clip, {{"mode", "he"}, {"backend", "cpu"}});
  CHECK(deep.depth() == 10);
  CHECK(eight.depth() == 8);
  const int w = deep.width(), h = deep.height();
  std::vector<std::uint16_t> rgb10(static_cast<std::size_t>(w) * h * 3);
  std::vector<std::uint8_t> rgb8(rgb10.size());
  CHECK_THROWS_WITH_AS(deep.next(hazefree::Frame::rgb48(rgb10.data(), w, h, w * 6, 12)),
                       doctest::Contains("rgb: 12 bits per sample, expected 8 or the frames' 10"), hazefree::FrameError);
  CHECK_THROWS_AS(eight.next(hazefree::Frame::rgb48(rgb10.data(), w, h, w * 6, 10)), hazefree::FrameError);
  for (int frame = 0; frame < 3; ++frame) {
    INFO("frame ", frame);
    REQUIRE(deep.next(hazefree::Frame::rgb48(rgb10.data(), w, h, w * 6, 10)));
    REQUIRE(reduced.next(hazefree::Frame::rgb24(rgb8.data(), w, h, w * 3)));
    std::set<int> codes;
    int far = 0, above = 0;
    for (std::size_t i = 0; i < rgb10.size(); ++i) {
      codes.insert(rgb10[i]);
      above += rgb10[i] > 1023;
      // The 8-bit RGB comes from the same processed frame reduced to 8 bits first: within a
      // few codes of the 10-bit RGB scaled down.
      far += std::abs(rgb8[i] - static_cast<int>(std::lround(rgb10[i] * 255.0 / 1023.0))) > 3;
    }
    CHECK(above == 0);
    CHECK(codes.size() > 256);  // processed and converted at 10 bits, not 8
    CHECK(far == 0);
  }
}

TEST_CASE("library depth: the CUDA backend gives the CPU backend's frames at 10, 12 and 16 bits (GPU only)") {
  std::string why;
  if (!hazefree::gpu_available(&why)) {
    MESSAGE("no usable GPU, skipped: " << why);
    return;
  }
  struct Case {
    hazefree::Options options;
    int depth;
    bool rgb;
  };
  const std::vector<Case> cases = {
      {{{"mode", "he"}}, 10, false},
      {{{"mode", "he"}, {"color", "rgb"}}, 16, true},
      {{{"mode", "he"}, {"he.temporal", "0.5"}}, 12, false},
      {{{"mode", "ahe"}, {"ahe.window", "31"}, {"ahe.clip", "2"}}, 12, false},
      {{{"mode", "ahe"}, {"color", "rgb"}, {"ahe.window", "15"}}, 10, true},
      {{{"mode", "dcp"}}, 16, true},
      {{{"mode", "dcp"}}, 10, true},
  };
  const int w = 203, h = 117;
  for (const Case& c : cases) {
    INFO(c.options.at("mode"), " depth ", c.depth, c.rgb ? " rgb" : " grey");
    hazefree::Options cpu_options = c.options, gpu_options = c.options;
    cpu_options["backend"] = "cpu";
    gpu_options["backend"] = "cuda";
    hazefree::Processor cpu(cpu_options), gpu(gpu_options), lanes(gpu_options);
    REQUIRE(gpu.on_gpu());
    const int row = c.rgb ? 3 * w : w;
    auto frame = [&](Plane16& p) {
      return c.rgb ? hazefree::Frame::rgb48(p.samples.data(), w, h, p.stride_bytes(), c.depth)
                   : hazefree::Frame::gray16(p.samples.data(), w, h, p.stride_bytes(), c.depth);
    };
    // Three frames of a sequence (the temporal state moves), through process() and through two
    // lanes (enqueue/wait, frames in flight at once).
    std::vector<Plane16> in, cpu_out, gpu_out, lane_out;
    for (int i = 0; i < 3; ++i) {
      in.push_back(make_plane(row, h));
      fill_codes(in.back(), row, h, c.depth, static_cast<std::uint32_t>(11 * i + c.depth));
      cpu_out.push_back(make_plane(row, h));
      gpu_out.push_back(make_plane(row, h));
      lane_out.push_back(make_plane(row, h));
    }
    const int lane_count = std::max(1, lanes.lanes());
    for (int i = 0; i < 3; ++i) {
      cpu.process(frame(in[i]), frame(cpu_out[i]));
      gpu.process(frame(in[i]), frame(gpu_out[i]));
      if (i >= lane_count) lanes.wait(i % lane_count);
      lanes.enqueue(i % lane_count, frame(in[i]), frame(lane_out[i]));
    }
    for (int i = std::max(0, 3 - lane_count); i < 3; ++i) lanes.wait(i % lane_count);
    const int tolerance = c.options.at("mode") == "dcp" ? 1 : 0;  // SPEC 7: DCP within 1 code
    for (int i = 0; i < 3; ++i) {
      INFO("frame ", i);
      int beyond = 0, lane_differs = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < row; ++x) {
          beyond += std::abs(gpu_out[i].at(x, y) - cpu_out[i].at(x, y)) > tolerance;
          lane_differs += lane_out[i].at(x, y) != gpu_out[i].at(x, y);
        }
      CHECK(beyond == 0);
      CHECK(lane_differs == 0);
      CHECK(padding_untouched(gpu_out[i], h));
      CHECK(padding_untouched(lane_out[i], h));
    }
  }
}
