// A frei0r (API 1.2) filter over the public API (SPEC 11): one mode of hazefree::Processor on
// RGBA8888 frames. Built three times, as hazefree_dehaze (dcp), hazefree_clahe (ahe) and
// hazefree_histeq (he), by HAZEFREE_FREI0R_MODE and HAZEFREE_FREI0R_NAME.
//
// Parameters are the keys of the mode (filter_keys.hpp) in natural units: FFmpeg's vf_frei0r and
// MLT pass doubles through unscaled. A rejected value keeps the previous one and is said once on
// stderr. The temporal state (DCP's atmospheric light, HE's histogram) carries from one
// f0r_update to the next and restarts when the host's time goes backwards or jumps by more than
// two frame intervals (a seek), and when a parameter changes. Nothing escapes to the host: a
// failing frame is said once and passed through unchanged.
extern "C" {
#include <frei0r.h>  // a C header without its own extern "C"
}

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <hazefree/hazefree.hpp>

#include "filter_keys.hpp"
#include "row_team.hpp"

#ifndef HAZEFREE_FREI0R_MODE
#error "HAZEFREE_FREI0R_MODE (dcp, he, ahe) must be defined"
#endif

#define HAZEFREE_FREI0R_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using hazefree_frei0r::FilterParam;
using hazefree_frei0r::ParamType;

constexpr const char* kMode = HAZEFREE_FREI0R_MODE;
constexpr const char* kName = HAZEFREE_FREI0R_NAME;
// Frames below this many pixels are converted on one thread (waking the others costs more).
constexpr std::ptrdiff_t kParallelPixels = 1 << 16;

const std::vector<FilterParam>& params() {
  static const std::vector<FilterParam> list = hazefree_frei0r::filter_params(kMode);
  return list;
}

// Explanations with the key, its range and its default, kept alive for the hosts' pointers.
const std::vector<std::string>& explanations() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> out;
    for (const FilterParam& p : params())
      out.push_back(p.key.help + " (" + p.key.name + ": " + p.key.range + ", default " +
                    (p.key.default_value.empty() ? "empty" : p.key.default_value) + ")");
    return out;
  }();
  return list;
}

// A host buffer of bytes: page-locked where the CUDA backend is present (its copies are faster),
// else ordinary memory.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { release(); }
  std::uint8_t* get(std::size_t bytes, bool pinned) {
    if (bytes <= size_ && pinned == pinned_) return data_;
    release();
    if (pinned) data_ = static_cast<std::uint8_t*>(hazefree::allocate_pinned(bytes));
    pinned_ = data_ != nullptr;
    if (data_ == nullptr) {
      plain_.reset(new std::uint8_t[bytes]);
      data_ = plain_.get();
    }
    size_ = bytes;
    return data_;
  }

 private:
  void release() {
    if (pinned_ && data_ != nullptr) hazefree::free_pinned(data_);
    plain_.reset();
    data_ = nullptr;
    size_ = 0;
    pinned_ = false;
  }
  std::unique_ptr<std::uint8_t[]> plain_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool pinned_ = false;
};

// One parameter of an instance.
struct ParamValue {
  std::string text;     // as the options table takes it
  std::string refused;  // the last value refused, said once
  double number = 0.0;  // what the host reads back (number and boolean parameters)
};

struct Instance {
  int width = 0;
  int height = 0;
  std::vector<ParamValue> values;  // by parameter index (params())
  std::unique_ptr<hazefree::Processor> processor;
  bool failed = false;         // the processor could not be made with these values: pass through
  std::string failure_said;    // the last failure said on stderr
  HostBuffer h_rgb_in;
  HostBuffer h_rgb_out;
  std::unique_ptr<hazefree_frei0r::RowTeam> team;  // made on the first frame large enough
  bool have_time = false;
  double last_time = 0.0;
  double interval = 0.0;  // the smallest forward step of time seen: one frame interval

  hazefree::Options options() const {
    hazefree::Options o{{"mode", kMode}, {"backend", "auto"}};
    for (std::size_t i = 0; i < params().size(); ++i) o[params()[i].key.name] = values[i].text;
    return o;
  }
};

void say_once(std::string& said, const std::string& line) {
  if (said == line) return;
  said = line;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

std::string shown(const std::string& text) { return text.empty() ? "\"\"" : text; }

// Sets parameter `index` to `text` when the options table takes it with the other values;
// otherwise keeps the previous value and says so once.
void set_value(Instance& inst, int index, const std::string& text, const std::string& why_not_text = {}) {
  const auto i = static_cast<std::size_t>(index);
  const FilterParam& p = params()[i];
  ParamValue& value = inst.values[i];
  std::string why = why_not_text;
  if (why.empty()) {
    if (text == value.text) return;  // hosts set every parameter on every frame
    hazefree::Options candidate = inst.options();
    candidate[p.key.name] = text;
    try {
      hazefree::validate_options(candidate);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (!why.empty()) {
    say_once(value.refused, std::string(kName) + ": " + p.name + " = " + shown(text) + " refused (" + why +
                                "); keeping " + shown(value.text));
    return;
  }
  value.text = text;
  value.refused.clear();
  if (p.type != ParamType::text) value.number = hazefree_frei0r::number_of_text(p, text);
  inst.processor.reset();  // made again, with a fresh state, before the next frame
  inst.failed = false;
}

// RGBA -> RGB, the processor, RGB + the input's alpha -> RGBA.
void process_frame(Instance& inst, const std::uint8_t* in, std::uint8_t* out) {
  const std::size_t pixels = static_cast<std::size_t>(inst.width) * static_cast<std::size_t>(inst.height);
  const bool pinned = inst.processor->on_gpu();
  std::uint8_t* h_in = inst.h_rgb_in.get(pixels * 3, pinned);
  std::uint8_t* h_out = inst.h_rgb_out.get(pixels * 3, pinned);
  // The conversions run on a few threads (FFmpeg calls the filter from one thread, and at 1080p
  // one core spends milliseconds on each), which sleep between frames (row_team.hpp).
  const auto n = static_cast<std::ptrdiff_t>(pixels);
  const auto convert = [&](const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& body) {
    if (n < kParallelPixels) return body(0, n);
    if (!inst.team) inst.team = std::make_unique<hazefree_frei0r::RowTeam>(hazefree_frei0r::RowTeam::default_helpers());
    inst.team->run(n, body);
  };
  convert([&](std::ptrdiff_t begin, std::ptrdiff_t end) {
    for (std::ptrdiff_t p = begin; p < end; ++p) {
      h_in[3 * p] = in[4 * p];
      h_in[3 * p + 1] = in[4 * p + 1];
      h_in[3 * p + 2] = in[4 * p + 2];
    }
  });
  const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(inst.width) * 3;
  inst.processor->process(hazefree::Frame::rgb24(h_in, inst.width, inst.height, stride),
                          hazefree::Frame::rgb24(h_out, inst.width, inst.height, stride));
  convert([&](std::ptrdiff_t begin, std::ptrdiff_t end) {
    for (std::ptrdiff_t p = begin; p < end; ++p) {
      out[4 * p] = h_out[3 * p];
      out[4 * p + 1] = h_out[3 * p + 1];
      out[4 * p + 2] = h_out[3 * p + 2];
      out[4 * p + 3] = in[4 * p + 3];
    }
  });
}

// A seek: time going backwards, or forwards by more than two frame intervals.
bool time_restarts(Instance& inst, double time) {
  if (!std::isfinite(time)) return false;
  bool restart = false;
  if (inst.have_time) {
    const double step = time - inst.last_time;
    if (step < 0.0 || (inst.interval > 0.0 && step > 2.0 * inst.interval)) {
      restart = true;
    } else if (step > 0.0 && (inst.interval == 0.0 || step < inst.interval)) {
      inst.interval = step;
    }
  }
  inst.have_time = true;
  inst.last_time = time;
  return restart;
}

}  // namespace

HAZEFREE_FREI0R_EXPORT int f0r_init() { return 1; }

// Nothing to release: MLT calls this before it destroys its instances.
HAZEFREE_FREI0R_EXPORT void f0r_deinit() {}

HAZEFREE_FREI0R_EXPORT void f0r_get_plugin_info(f0r_plugin_info_t* info) {
  static const std::string explanation = std::string(HAZEFREE_FREI0R_EXPLANATION) + " (hazefree " +
                                         HAZEFREE_VERSION_STRING + ", mode " + kMode + ")";
  info->name = kName;
  info->author = "hazefree";
  info->plugin_type = F0R_PLUGIN_TYPE_FILTER;
  info->color_model = F0R_COLOR_MODEL_RGBA8888;
  info->frei0r_version = FREI0R_MAJOR_VERSION;
  info->major_version = HAZEFREE_VERSION_MAJOR;
  info->minor_version = HAZEFREE_VERSION_MINOR;
  try {
    info->num_params = static_cast<int>(params().size());
  } catch (...) {
    info->num_params = 0;
  }
  info->explanation = explanation.c_str();
}

HAZEFREE_FREI0R_EXPORT void f0r_get_param_info(f0r_param_info_t* info, int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= params().size()) return;
  const FilterParam& p = params()[static_cast<std::size_t>(index)];
  info->name = p.name.c_str();
  info->type = static_cast<int>(p.type);
  info->explanation = explanations()[static_cast<std::size_t>(index)].c_str();
}

HAZEFREE_FREI0R_EXPORT f0r_instance_t f0r_construct(unsigned int width, unsigned int height) {
  try {
    auto inst = std::make_unique<Instance>();
    inst->width = static_cast<int>(width);
    inst->height = static_cast<int>(height);
    // FFmpeg before 6 hands frei0r filters frames whose rows are padded to 32 or 64 bytes when
    // the width is not a multiple of 16, against frei0r's rows of width x 4 bytes: the picture
    // comes out sheared. The plugin cannot see the host's padding, so it says so, once.
    static bool width_said = false;
    if (width % 16 != 0 && height > 1 && !width_said) {
      width_said = true;
      std::fprintf(stderr,
                   "%s: frames %u pixels wide: FFmpeg before 6 pads the rows of frei0r frames whose width is "
                   "not a multiple of 16, which shears the picture; scale to a multiple of 16 first (e.g. "
                   "scale=%u:-2), or use FFmpeg 6 or later (MLT is not affected)\n",
                   kName, width, width / 16 * 16 > 0 ? width / 16 * 16 : 16);
    }
    for (const FilterParam& p : params()) {
      ParamValue value;
      value.text = p.key.default_value;
      if (p.type != ParamType::text) value.number = hazefree_frei0r::number_of_text(p, p.key.default_value);
      inst->values.push_back(std::move(value));
    }
    return inst.release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: cannot make an instance of %ux%u: %s\n", kName, width, height, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: cannot make an instance of %ux%u\n", kName, width, height);
  }
  return nullptr;
}

HAZEFREE_FREI0R_EXPORT void f0r_destruct(f0r_instance_t instance) { delete static_cast<Instance*>(instance); }

HAZEFREE_FREI0R_EXPORT void f0r_set_param_value(f0r_instance_t instance, f0r_param_t param, int index) {
  if (instance == nullptr || param == nullptr || index < 0 || static_cast<std::size_t>(index) >= params().size())
    return;
  auto& inst = *static_cast<Instance*>(instance);
  const FilterParam& p = params()[static_cast<std::size_t>(index)];
  try {
    if (p.type == ParamType::text) {
      const char* text = *static_cast<f0r_param_string*>(param);
      set_value(inst, index, text != nullptr ? text : "");
    } else {
      const double value = *static_cast<f0r_param_double*>(param);
      std::string why;
      const auto text = hazefree_frei0r::text_of_number(p, value, why);
      char shown_value[32];
      std::snprintf(shown_value, sizeof shown_value, "%g", value);
      set_value(inst, index, text ? *text : shown_value, text ? std::string() : why);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s not set: %s\n", kName, p.name.c_str(), e.what());
  } catch (...) {
  }
}

HAZEFREE_FREI0R_EXPORT void f0r_get_param_value(f0r_instance_t instance, f0r_param_t param, int index) {
  if (instance == nullptr || param == nullptr || index < 0 || static_cast<std::size_t>(index) >= params().size())
    return;
  auto& inst = *static_cast<Instance*>(instance);
  const auto i = static_cast<std::size_t>(index);
  if (params()[i].type == ParamType::text) {
    *static_cast<f0r_param_string*>(param) = const_cast<char*>(inst.values[i].text.c_str());
  } else {
    *static_cast<f0r_param_double*>(param) = inst.values[i].number;
  }
}

HAZEFREE_FREI0R_EXPORT void f0r_update(f0r_instance_t instance, double time, const std::uint32_t* inframe,
                                       std::uint32_t* outframe) {
  if (instance == nullptr || inframe == nullptr || outframe == nullptr) return;
  auto& inst = *static_cast<Instance*>(instance);
  const auto* in = reinterpret_cast<const std::uint8_t*>(inframe);
  auto* out = reinterpret_cast<std::uint8_t*>(outframe);
  const std::size_t bytes = static_cast<std::size_t>(inst.width) * static_cast<std::size_t>(inst.height) * 4;
  try {
    const bool restart = time_restarts(inst, time);
    if (inst.failed) {
      std::memmove(out, in, bytes);
      return;
    }
    if (!inst.processor) {
      try {
        inst.processor = std::make_unique<hazefree::Processor>(inst.options());
      } catch (const std::exception& e) {
        inst.failed = true;
        say_once(inst.failure_said, std::string(kName) + ": cannot start (" + e.what() + "); frames pass unchanged");
        std::memmove(out, in, bytes);
        return;
      }
    } else if (restart) {
      inst.processor->reset();
    }
    process_frame(inst, in, out);
  } catch (const std::exception& e) {
    say_once(inst.failure_said, std::string(kName) + ": frame at time " + std::to_string(time) + " not processed (" +
                                    e.what() + "); passed unchanged");
    if (out != reinterpret_cast<const std::uint8_t*>(in)) std::memmove(out, in, bytes);
  } catch (...) {
    if (out != reinterpret_cast<const std::uint8_t*>(in)) std::memmove(out, in, bytes);
  }
}
