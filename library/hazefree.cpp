// The public API of include/hazefree/hazefree.hpp over the rooms' own interfaces: the options
// table and run_pipeline (pipeline/), the FrameProcessor backends (kernels/processor.hpp,
// kernels/device_processor.hpp) and the MediaReader (io/) for FrameReader. It translates types
// and errors and adds no processing of its own.
#include "hazefree/hazefree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <vector>

#include "io/jpeg_encoder.hpp"
#include "io/media_reader.hpp"
#include "io/run_log_level.hpp"
#include "kernels/device_processor.hpp"
#include "common/image.hpp"
#include "kernels/processor.hpp"
#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/processor_factory.hpp"

namespace hazefree {
namespace {

// "\"dcp\"" -> "dcp": the table writes strings as TOML; the API gives the value as text.
std::string unquote(const std::string& text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return text.substr(1, text.size() - 2);
  return text;
}

// The typed description of a key (ConfigKeyInfo::kind and what goes with it), from its row.
void describe_value(const ConfigKey& key, ConfigKeyInfo& info) {
  const bool with_words = !key.choices.empty();
  switch (key.kind) {
    case ConfigKind::integer: info.kind = with_words ? ConfigKeyInfo::Kind::text : ConfigKeyInfo::Kind::integer; break;
    case ConfigKind::number: info.kind = with_words ? ConfigKeyInfo::Kind::text : ConfigKeyInfo::Kind::number; break;
    case ConfigKind::boolean: info.kind = ConfigKeyInfo::Kind::boolean; break;
    case ConfigKind::choice: info.kind = ConfigKeyInfo::Kind::choice; break;
    case ConfigKind::text: info.kind = ConfigKeyInfo::Kind::text; break;
  }
  info.processor_key = !key.modes.empty();
  for (const Mode mode : key.modes) info.modes.push_back(to_string(mode));
  if (info.kind == ConfigKeyInfo::Kind::choice) info.choices = key.choices;
  if (info.kind != ConfigKeyInfo::Kind::integer && info.kind != ConfigKeyInfo::Kind::number) return;
  info.minimum = key.bounds.minimum;
  info.maximum = key.bounds.maximum;
  info.minimum_excluded = key.bounds.minimum_excluded;
  info.maximum_excluded = key.bounds.maximum_excluded;
  info.odd_only = key.bounds.odd;
}

// Options by key -> the run's options, every error as OptionError naming the key.
RunOptions apply_options(const Options& options) {
  RunOptions run;
  for (const auto& [key, value] : options) {
    try {
      set_config_value(run, key, value);
    } catch (const UsageError& e) {
      throw OptionError(key, e.what());
    }
  }
  try {
    validate(run.processing);
  } catch (const KeyError& e) {
    throw OptionError(e.key(), e.what());
  }
  return run;
}

PixelFormat pixel_format(FrameFormat format) {
  switch (format) {
    case FrameFormat::rgb24: return PixelFormat::rgb24;
    case FrameFormat::gray8: return PixelFormat::gray8;
    case FrameFormat::i420: return PixelFormat::yuv420p;
    case FrameFormat::nv12: return PixelFormat::nv12;
    case FrameFormat::yuv422p: return PixelFormat::yuv422p;
    case FrameFormat::yuv444p: return PixelFormat::yuv444p;
  }
  throw FrameError(fmt::format("frame format {}: not a FrameFormat", static_cast<int>(format)));
}

// A frame of the API -> the kernels' view, checked: `what` names the argument in messages.
ImageView image_view(const Frame& frame, const char* what) {
  ImageView view;
  view.format = pixel_format(frame.format);
  if (frame.width <= 0 || frame.height <= 0)
    throw FrameError(fmt::format("{}: empty frame ({}x{}); width and height must be > 0", what, frame.width, frame.height));
  view.width = frame.width;
  view.height = frame.height;
  if (!valid_depth(frame.depth))
    throw FrameError(fmt::format("{}: depth {} bits per sample; expected {} to {}", what, frame.depth, kMinDepth,
                                 kMaxDepth));
  view.depth = frame.depth;
  const bool yuv = is_yuv(view.format);
  switch (frame.matrix) {
    case FrameMatrix::automatic: view.matrix = default_matrix_for_height(frame.height); break;
    case FrameMatrix::bt601: view.matrix = ColorMatrix::bt601; break;
    case FrameMatrix::bt709: view.matrix = ColorMatrix::bt709; break;
    case FrameMatrix::bt2020: view.matrix = ColorMatrix::bt2020; break;
  }
  switch (frame.range) {
    case FrameRange::automatic: view.range = yuv ? ColorRange::limited : ColorRange::full; break;
    case FrameRange::limited: view.range = ColorRange::limited; break;
    case FrameRange::full: view.range = ColorRange::full; break;
  }
  view.plane_count = hazefree::plane_count(view.format);
  for (int i = 0; i < view.plane_count; ++i) {
    PlaneView plane = plane_geometry(view.format, frame.width, frame.height, i, view.depth);
    const Plane& given = frame.planes[static_cast<std::size_t>(i)];
    const std::ptrdiff_t row_bytes =
        static_cast<std::ptrdiff_t>(plane.width) * bytes_per_sample(view.format, i, view.depth);
    if (given.data == nullptr) throw FrameError(fmt::format("{}: plane {} has no data (null pointer)", what, i));
    if (given.stride < row_bytes || given.stride > std::numeric_limits<int>::max())
      throw FrameError(fmt::format("{}: plane {} stride {} is not in [{}, {}] (bytes of a row of {} samples)", what, i,
                                   given.stride, row_bytes, std::numeric_limits<int>::max(), plane.width));
    plane.data = given.data;
    plane.stride = static_cast<int>(given.stride);
    view.planes[static_cast<std::size_t>(i)] = plane;
  }
  return view;
}

// The kernels' view -> a frame of the API (the same memory).
Frame api_frame(const ImageView& view) {
  Frame frame;
  if (view.width <= 0 || view.height <= 0) return frame;  // no picture (one on the GPU)
  switch (view.format) {
    case PixelFormat::rgb24: frame.format = FrameFormat::rgb24; break;
    case PixelFormat::gray8: frame.format = FrameFormat::gray8; break;
    case PixelFormat::yuv420p: frame.format = FrameFormat::i420; break;
    case PixelFormat::nv12: frame.format = FrameFormat::nv12; break;
    case PixelFormat::yuv422p: frame.format = FrameFormat::yuv422p; break;
    case PixelFormat::yuv444p: frame.format = FrameFormat::yuv444p; break;
  }
  frame.width = view.width;
  frame.height = view.height;
  frame.depth = view.depth;
  switch (view.matrix) {
    case ColorMatrix::bt601: frame.matrix = FrameMatrix::bt601; break;
    case ColorMatrix::bt709: frame.matrix = FrameMatrix::bt709; break;
    case ColorMatrix::bt2020: frame.matrix = FrameMatrix::bt2020; break;
  }
  frame.range = view.range == ColorRange::full ? FrameRange::full : FrameRange::limited;
  for (int i = 0; i < view.plane_count; ++i)
    frame.planes[static_cast<std::size_t>(i)] = {view.planes[static_cast<std::size_t>(i)].data,
                                                 view.planes[static_cast<std::size_t>(i)].stride};
  return frame;
}

// Byte range [first, last) a plane covers.
std::pair<std::uintptr_t, std::uintptr_t> plane_bytes(const ImageView& view, int i) {
  const PlaneView& p = view.planes[static_cast<std::size_t>(i)];
  const auto first = reinterpret_cast<std::uintptr_t>(p.data);
  const auto row =
      static_cast<std::uintptr_t>(p.width) * static_cast<std::uintptr_t>(bytes_per_sample(view.format, i, view.depth));
  return {first, first + static_cast<std::uintptr_t>(p.stride) * static_cast<std::uintptr_t>(p.height - 1) + row};
}

void check_pair(const ImageView& in, const ImageView& out) {
  if (in.format != out.format || in.width != out.width || in.height != out.height)
    throw FrameError(fmt::format("out: {} {}x{} frame, expected the input's {} {}x{}", to_string(out.format), out.width,
                                 out.height, to_string(in.format), in.width, in.height));
  // The processors write at the input's depth: a change of depth is a conversion of its own
  // (output.depth in a run), never a side effect of the output's buffer.
  if (in.depth != out.depth)
    throw FrameError(fmt::format("out: {} at {} bits per sample, expected the input's {} bits ({})",
                                 format_name(out.format, out.depth), out.depth, in.depth,
                                 format_name(in.format, in.depth)));
  for (int i = 0; i < in.plane_count; ++i) {
    for (int j = 0; j < out.plane_count; ++j) {
      const auto a = plane_bytes(in, i);
      const auto b = plane_bytes(out, j);
      if (a.first < b.second && b.first < a.second)
        throw FrameError("out: overlaps the input frame; processing needs a separate output");
    }
  }
}

}  // namespace

// ---- configuration keys -----------------------------------------------------------------------

const std::vector<ConfigKeyInfo>& configuration_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> list;
    for (const ConfigKey& k : config_keys()) {
      ConfigKeyInfo info;
      info.name = k.name;
      info.help = k.help;
      info.range = k.range;
      info.default_value = unquote(default_text(k));
      describe_value(k, info);
      list.push_back(std::move(info));
    }
    return list;
  }();
  return keys;
}

void validate_options(const Options& options) { (void)apply_options(options); }

// ---- frames ---------------------------------------------------------------------------------

Frame Frame::rgb24(void* data, int width, int height, std::ptrdiff_t stride) {
  Frame f;
  f.format = FrameFormat::rgb24;
  f.width = width;
  f.height = height;
  f.planes[0] = {static_cast<std::uint8_t*>(data), stride};
  return f;
}

Frame Frame::gray8(void* data, int width, int height, std::ptrdiff_t stride) {
  Frame f = rgb24(data, width, height, stride);
  f.format = FrameFormat::gray8;
  return f;
}

// The depth is kept as given: a depth outside 8..16 is refused by the call that takes the frame,
// with the argument's name.
Frame Frame::rgb48(void* data, int width, int height, std::ptrdiff_t stride, int depth) {
  Frame f = rgb24(data, width, height, stride);
  f.depth = depth;
  return f;
}

Frame Frame::gray16(void* data, int width, int height, std::ptrdiff_t stride, int depth) {
  Frame f = gray8(data, width, height, stride);
  f.depth = depth;
  return f;
}

namespace {
Frame planar_yuv(FrameFormat format, void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                 std::ptrdiff_t v_stride, int width, int height, int depth) {
  Frame f;
  f.format = format;
  f.width = width;
  f.height = height;
  f.depth = depth;
  f.planes = {Plane{static_cast<std::uint8_t*>(y), y_stride}, Plane{static_cast<std::uint8_t*>(u), u_stride},
              Plane{static_cast<std::uint8_t*>(v), v_stride}};
  return f;
}
}  // namespace

Frame Frame::i420(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                  std::ptrdiff_t v_stride, int width, int height, int depth) {
  return planar_yuv(FrameFormat::i420, y, y_stride, u, u_stride, v, v_stride, width, height, depth);
}

Frame Frame::yuv422p(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                     std::ptrdiff_t v_stride, int width, int height, int depth) {
  return planar_yuv(FrameFormat::yuv422p, y, y_stride, u, u_stride, v, v_stride, width, height, depth);
}

Frame Frame::yuv444p(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                     std::ptrdiff_t v_stride, int width, int height, int depth) {
  return planar_yuv(FrameFormat::yuv444p, y, y_stride, u, u_stride, v, v_stride, width, height, depth);
}

Frame Frame::nv12(void* y, std::ptrdiff_t y_stride, void* uv, std::ptrdiff_t uv_stride, int width, int height,
                  int depth) {
  Frame f;
  f.format = FrameFormat::nv12;
  f.width = width;
  f.height = height;
  f.depth = depth;
  f.planes[0] = {static_cast<std::uint8_t*>(y), y_stride};
  f.planes[1] = {static_cast<std::uint8_t*>(uv), uv_stride};
  return f;
}

int plane_count(FrameFormat format) { return hazefree::plane_count(pixel_format(format)); }

// ---- Processor ----------------------------------------------------------------------------------

struct Processor::Impl {
  RunOptions options;
  std::unique_ptr<FrameProcessor> backend;
  DeviceFrameProcessor* device = nullptr;  // the backend's device-frame interface, if any
};

Processor::Processor(const Options& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = apply_options(options);
  const ProcessingConfig& config = impl_->options.processing;
  if (config.backend == Backend::cuda) {
    std::string why;
    if (!cuda_available(&why)) throw GpuUnavailableError("backend=cuda: " + why);
    impl_->backend = make_cuda_processor(config);
  } else {
    impl_->backend = create_processor(config, false);
  }
  impl_->device = dynamic_cast<DeviceFrameProcessor*>(impl_->backend.get());
}

Processor::~Processor() = default;
Processor::Processor(Processor&&) noexcept = default;
Processor& Processor::operator=(Processor&&) noexcept = default;

void Processor::process(const Frame& in, const Frame& out) {
  const ImageView in_view = image_view(in, "in");
  ImageView out_view = image_view(out, "out");
  check_pair(in_view, out_view);
  impl_->backend->process(in_view, out_view);
}

void Processor::process_device(const Frame& in, const Frame& out, void* cuda_stream) {
  if (impl_->device == nullptr)
    throw GpuUnavailableError("device frames need the CUDA backend; this processor runs on " +
                              impl_->backend->description());
  const ImageView in_view = image_view(in, "in");
  const ImageView out_view = image_view(out, "out");
  check_pair(in_view, out_view);
  impl_->device->process_device(in_view, out_view, cuda_stream);
}

int Processor::lanes() const { return impl_->backend->lanes(); }

void Processor::enqueue(int lane, const Frame& in, const Frame& out) {
  if (lane < 0 || lane >= std::max(1, lanes()))
    throw std::out_of_range(fmt::format("lane {}: this processor has lanes 0 to {}", lane, std::max(1, lanes()) - 1));
  const ImageView in_view = image_view(in, "in");
  const ImageView out_view = image_view(out, "out");
  check_pair(in_view, out_view);
  impl_->backend->enqueue(lane, in_view, out_view);
}

void Processor::wait(int lane) {
  if (lane < 0 || lane >= std::max(1, lanes()))
    throw std::out_of_range(fmt::format("lane {}: this processor has lanes 0 to {}", lane, std::max(1, lanes()) - 1));
  impl_->backend->wait(lane);
}

void* allocate_pinned(std::size_t bytes) { return allocate_pinned_host(bytes); }
void free_pinned(void* memory) { free_pinned_host(memory); }

void Processor::reset() { impl_->backend->reset(); }

std::array<float, 3> Processor::atmospheric_light() const { return impl_->backend->atmospheric_light(); }

float Processor::haze_index() const {
  if (impl_->options.processing.mode != Mode::dcp) return 0.f;
  const TemporalState state = impl_->backend->temporal_state();
  return state.has_light ? state.haze : 0.f;
}

std::string Processor::description() const { return impl_->backend->description(); }

bool Processor::on_gpu() const { return impl_->device != nullptr; }

std::string Processor::option(const std::string& key) const {
  for (const ConfigKey& k : config_keys())
    if (k.name == key) return unquote(k.get(impl_->options));
  throw OptionError(key, fmt::format("unknown configuration key '{}'", key));
}

bool gpu_available(std::string* why_not) { return cuda_available(why_not); }

std::size_t gpu_memory_used() { return cuda_available() ? gpu_memory_in_use() : 0; }

// ---- run ----------------------------------------------------------------------------------------

RunResult run(const std::string& input, const std::string& output, const Options& options,
              const RunControl& control) {
  RunOptions run_options = apply_options(options);
  run_options.input = input;
  run_options.output = output;
  run_options.output_options.overwrite = control.overwrite;
  run_options.quiet = true;  // no progress line: the caller has the callback
  run_options.verbose = control.verbose;
  run_options.stats_append = control.append_stats;
  run_options.hooks.stop = control.cancel;
  const auto start = std::chrono::steady_clock::now();
  if (control.progress) {
    const ProgressCallback progress = control.progress;
    run_options.hooks.on_frame_written = [progress, start](const FrameWritten& written) {
      RunProgress p;
      p.frames = written.frames;
      p.expected_frames = written.expected_frames;
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      p.frames_dropped = written.frames_dropped;
      p.reconnects = written.reconnects;
      p.seconds_lost = written.seconds_lost;
      p.latency_seconds = written.latency_seconds;
      p.atmospheric_light = written.atmospheric_light;
      p.haze_index = written.haze_index;
      p.omega = written.omega;
      progress(p);
    };
    run_options.hooks.sample_atmospheric_light = true;
  }
  if (control.on_frame) {
    const auto on_frame = control.on_frame;
    run_options.hooks.on_frame_processed = [on_frame](const ImageView& input, const ImageView& output) {
      on_frame(api_frame(input), api_frame(output));
    };
  }
  if (control.option_changes) {
    // The run's options as the changes leave them: each change is applied over the last.
    auto current = std::make_shared<RunOptions>(run_options);
    const auto option_changes = control.option_changes;
    run_options.hooks.processing_change = [current, option_changes]() -> std::optional<ProcessingConfig> {
      Options changes;
      if (!option_changes(changes)) return std::nullopt;
      for (const auto& [key, value] : changes) {
        const auto& keys = config_keys();
        const std::string& name = key;  // a lambda may not capture a structured binding (C++17; clang refuses)
        const auto row = std::find_if(keys.begin(), keys.end(), [&](const ConfigKey& k) { return k.name == name; });
        if (row != keys.end() && row->modes.empty())
          throw OptionError(key, fmt::format("{}: cannot change while the run goes on (not a processor key)", key));
        try {
          set_config_value(*current, key, value);
        } catch (const UsageError& e) {
          throw OptionError(key, e.what());
        }
      }
      try {
        validate(current->processing);
      } catch (const KeyError& e) {
        throw OptionError(e.key(), e.what());
      }
      return current->processing;
    };
  }
  try {
    finalize_options(run_options);
  } catch (const UsageError& e) {
    throw OptionError(e.key(), e.what());
  }
  if (input.empty()) throw OptionError("input", "input: empty path");
  if (output.empty()) throw OptionError("output", "output: empty path");
  // FFmpeg's and the encoders' own lines (x264's statistics) only when verbose, as the CLI's -v,
  // unless the program chose FFmpeg's level itself (the service's -v).
  const io::RunLogLevel log_level(control.verbose);
  RunSummary summary;
  try {
    summary = run_pipeline(run_options);
  } catch (const UsageError& e) {  // found once the input is open: -ss past its end, an encoder option
    throw OptionError(e.key(), e.what());
  }
  RunResult result;
  result.frames_in = summary.frames_in;
  result.frames_out = summary.frames_out;
  result.frames_dropped = summary.frames_dropped;
  result.packets_copied = summary.packets_copied;
  result.seconds = summary.seconds;
  result.cancelled = summary.interrupted;
  result.processor = summary.processor;
  return result;
}

std::vector<std::uint8_t> encode_jpeg(const Frame& frame, int max_width, int quality) {
  return io::encode_jpeg(image_view(frame, "frame"), max_width, quality);
}

// ---- FrameReader --------------------------------------------------------------------------------

struct FrameReader::Impl {
  std::string input;
  RunOptions options;
  std::optional<io::MediaReader> reader;
  std::optional<Processor> processor;
};

FrameReader::FrameReader(const std::string& input, const Options& options) : impl_(std::make_unique<Impl>()) {
  impl_->input = input;
  impl_->options = apply_options(options);
  impl_->options.input = input;
  try {
    finalize_options(impl_->options);
  } catch (const UsageError& e) {
    throw OptionError(e.key(), e.what());
  }
  const bool nvdec = !impl_->options.input_options.hwdec.empty();
  const char* needs_cuda = "input.hwdec=cuda keeps pictures on the GPU: it needs the CUDA backend";
  if (nvdec && impl_->options.processing.backend == Backend::cpu) throw OptionError("input.hwdec", needs_cuda);
  // NVDEC first: FFmpeg's CUDA device must start the GPU's context (with its own flags) before
  // the backend uses it.
  if (nvdec) impl_->reader.emplace(impl_->options.input_options);
  impl_->processor.emplace(options);
  if (nvdec && !impl_->processor->on_gpu()) throw OptionError("input.hwdec", needs_cuda);
  if (!nvdec) impl_->reader.emplace(impl_->options.input_options);
}

FrameReader::~FrameReader() = default;
FrameReader::FrameReader(FrameReader&&) noexcept = default;
FrameReader& FrameReader::operator=(FrameReader&&) noexcept = default;

int FrameReader::width() const { return impl_->reader->video().width; }
int FrameReader::height() const { return impl_->reader->video().height; }
double FrameReader::frame_rate() const { return impl_->reader->video().frame_rate.value(); }
std::int64_t FrameReader::frame_count() const { return impl_->reader->video().frame_count; }
int FrameReader::depth() const { return impl_->reader->video().depth; }
const Processor& FrameReader::processor() const { return *impl_->processor; }

bool FrameReader::next(const Frame& rgb) {
  Impl& d = *impl_;
  const ImageView out = image_view(rgb, "rgb");
  if (out.format != PixelFormat::rgb24 || out.width != width() || out.height != height())
    throw FrameError(fmt::format("rgb: {} {}x{} frame, expected rgb24 {}x{}", to_string(out.format), out.width,
                                 out.height, width(), height()));
  if (out.depth != 8 && out.depth != depth())
    throw FrameError(fmt::format("rgb: {} bits per sample, expected 8 or the frames' {}", out.depth, depth()));
  for (;;) {
    const io::MediaReader::Item item = d.reader->read();
    if (item == io::MediaReader::Item::end) return false;
    if (item == io::MediaReader::Item::packet) {
      (void)d.reader->take_packet();  // other streams are not handed out
      continue;
    }
    // The backend processes and converts (kernels/rgb_output.hpp): host frames, or
    // GPU-decoded pictures (hwdec) on the CUDA backend, which stay on the device until the RGB
    // comes back.
    d.processor->impl_->backend->process_to_rgb(d.reader->frame().view, out);
    return true;
  }
}

}  // namespace hazefree
