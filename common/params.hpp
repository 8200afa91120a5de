// Parameter structs of the algorithms (SPEC sections 3 and 4). One struct per algorithm,
// shared by the CPU and CUDA backends. Every field: effect, unit, default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hazefree {

enum class Mode : std::uint8_t { dcp, he, ahe };
enum class ColorMode : std::uint8_t { luma, rgb, grey, rgb_bits };
enum class Backend : std::uint8_t { automatic, cpu, cuda };

// Dark channel prior dehazing (SPEC 3). Colours are in [0,1].
struct DcpParams {
  int patch_radius = 7;             // dark channel / raw transmission patch radius r, (2r+1)^2 window
  float omega = 0.95f;              // haze kept: t~ = 1 - omega * dark(I/A), in (0,1]
  float a_top_fraction = 0.01f;     // fraction of 32x32 blocks averaged for A, in (0,1]
  float a_smoothing = 0.8f;         // inter-frame step towards the new estimate, in (0,1]
  float a_max_step = 5.0f / 255.f;  // largest change of A per frame and channel, >= 0
  float a_scene_cut = 0.2f;         // mean |A^_n - A_{n-1}| above which A resets (a cut), >= 0
  int gf_radius = 32;               // guided filter radius, >= 1
  float gf_eps = 1e-3f;             // guided filter regulariser, > 0
  int gf_subsample = 1;             // fast guided filter subsampling factor, >= 1 (1 = exact)
  float k_tolerance = 80.0f / 255.f;  // bright-region tolerance K, >= 0 (0 = off)
  float t0 = 0.1f;                  // lower bound of the transmission in recovery, in (0,1]
  float brightness = 0.2f;          // brightness boost B of J + (1-J) J B, in [0,1]
  // Auto strength (SPEC 13): omega and B scaled by s(h) of the frame's haze index h
  // (kernels/dcp_rules.hpp); off: the configured values exactly.
  bool auto_strength = false;
};

// Region of interest for the HE histogram (pixels of the luma/full-size plane).
struct Roi {
  int x = 0, y = 0, w = 0, h = 0;  // w == 0 or h == 0: whole frame
  bool empty() const { return w <= 0 || h <= 0; }
};

// Global histogram equalization (SPEC 4).
struct HeParams {
  float temporal = 1.0f;  // he_temporal: H_n = a h_n + (1-a) H_{n-1}, in (0,1]; 1 = off
  Roi roi;                // histogram only inside this rectangle; LUT applied to the whole frame
};

// Sliding-window AHE / CLAHE (SPEC 4).
struct AheParams {
  int window = 63;    // window side w, odd, >= 3
  float clip = 0.0f;  // CLAHE clip limit in OpenCV units, >= 0 (0 = plain AHE)
};

// Everything a frame processor needs.
struct ProcessingConfig {
  Mode mode = Mode::dcp;
  ColorMode color = ColorMode::luma;
  Backend backend = Backend::automatic;
  int threads = 0;  // CPU threads for OpenMP, 0 = all cores, 1 = sequential
  DcpParams dcp;
  HeParams he;
  AheParams ahe;
};

std::string to_string(Mode mode);
std::string to_string(ColorMode mode);
std::string to_string(Backend backend);
std::optional<Mode> parse_mode(const std::string& text);
std::optional<ColorMode> parse_color_mode(const std::string& text);
std::optional<Backend> parse_backend(const std::string& text);

// Throws KeyError (common/config_key.hpp, a std::invalid_argument) naming the key and the
// accepted range when a value is out of the bounds of its key's row (e.g. "dcp.t0 = 0 is outside
// (0, 1]"), or against another key (rgb-bits without he).
void validate(const ProcessingConfig& config);

}  // namespace hazefree
