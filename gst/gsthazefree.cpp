// The GStreamer element `hazefree` (plugin gsthazefree): a video filter (GstVideoFilter) that runs
// hazefree::Processor of the public API on I420, NV12 and GRAY8 frames in system memory, and on
// their forms of 10 to 16 bits per sample (I420_10LE, P010_10LE, GRAY16_LE, Y444_16LE, ...),
// processed at their own depth (SPEC 7) without conversion.
//
// Thin by design: every configuration key a Processor uses becomes a property generated from
// hazefree::configuration_keys() (the one options table behind the CLI, TOML presets and Python):
// "dcp.patch_radius" is `patch-radius`, "mode" is `mode`, choices are enums, ranges and defaults
// come from the table. Values are checked by the library when the processor is made (at start, or
// at the next frame after a property changed): a bad one is an error on the bus naming the key.
// The temporal state (DCP's atmospheric light, HE's history) restarts on flush (seeks), on a new
// segment and on a new stream.
//
// Two ways frames go through it:
//  - System memory: frames are handed to the processor's lanes (Processor::enqueue/wait): on the
//    CUDA backend frame n is processed while frame n-1 is downloaded and pushed (`lanes=2`, one
//    frame held back), into page-locked output buffers so that the download is asynchronous;
//    frames leave in input order, and those in flight are pushed before any serialized event
//    (EOS, caps, segment, ...) and on a drain query, and dropped on a flush. On the CPU backend
//    (no lanes) each frame is processed before the next is taken.
//  - CUDA memory (`video/x-raw(memory:CUDAMemory)`, as nvh264dec or cudaupload give it; built
//    when gst-plugins-bad's CUDA library is found): the CUDA context is shared with the
//    neighbours (context query), frames are processed where they are (Processor::process_device
//    on the element's own stream in that context) into buffers of a GstCudaBufferPool, and the
//    stream is synchronised before a buffer leaves (GStreamer 1.22's CUDA memory carries no
//    stream of its own: a buffer handed on is complete).
#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>
#include <gst/video/video.h>

#ifdef HAZEFREE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

#include <hazefree/hazefree.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_hazefree_debug);
#define GST_CAT_DEFAULT gst_hazefree_debug

namespace {

// The 8-bit formats first: where upstream offers several, negotiation keeps 8-bit video 8-bit.
// Then those of two-byte samples that map onto the library's frames as they are: planar YUV
// 4:2:0/4:2:2/4:4:4 and grey with the value in the low bits (little-endian, as the library's
// samples are native-endian on the little-endian hosts it is built for), and P010/P012/P016
// with the value in the high bits (hazefree::Frame::nv12 at depth).
// The one list of formats: the caps and the messages are made from it.
constexpr const char* kEightBitFormats[] = {"I420", "NV12", "GRAY8", "Y42B", "Y444"};
constexpr const char* kDeepFormats[] = {"I420_10LE", "I420_12LE", "I422_10LE", "I422_12LE",
                                        "Y444_10LE", "Y444_12LE", "Y444_16LE", "P010_10LE",
                                        "P012_LE",   "P016_LE",   "GRAY16_LE"};

// "{ I420, NV12, ..., GRAY16_LE }": every format, as a caps list.
const char* caps_formats() {
  static const std::string list = [] {
    std::string text;
    for (const char* name : kEightBitFormats) text += std::string(text.empty() ? "" : ", ") + name;
    for (const char* name : kDeepFormats) text += std::string(", ") + name;
    return "{ " + text + " }";
  }();
  return list.c_str();
}

// "I420, NV12, ... or Y444": a list of formats, in words.
template <std::size_t count>
std::string in_words(const char* const (&formats)[count]) {
  std::string text;
  for (std::size_t i = 0; i < count; ++i)
    text += std::string(i == 0 ? "" : i + 1 == count ? " or " : ", ") + formats[i];
  return text;
}
static_assert(G_BYTE_ORDER == G_LITTLE_ENDIAN, "the element's high-depth formats are the little-endian ones");
constexpr const char* kCudaMemory = "memory:CUDAMemory";
constexpr int kDefaultLanes = 2;

// One property: the configuration key it sets and how its value is typed.
struct Property {
  std::string key;   // "dcp.patch_radius"
  std::string name;  // "patch-radius"
  hazefree::ConfigKeyInfo info;
  GType enum_type = G_TYPE_INVALID;  // choice keys
};

// Built once, in class_init, from the options table; property id i + 1 is properties()[i].
std::vector<Property>& properties() {
  static std::vector<Property> list;
  return list;
}

std::string property_name(const std::string& text) {
  std::string name;
  for (char c : text) name += (c == '_' || c == '.') ? '-' : c;
  return name;
}

// "mode" -> "GstHazefreeMode", "color" -> "GstHazefreeColor".
std::string enum_type_name(const std::string& key) {
  std::string name = "GstHazefree";
  bool upper = true;
  for (char c : key) {
    if (c == '.' || c == '_' || c == '-') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(g_ascii_toupper(c)) : c;
    upper = false;
  }
  return name;
}

GType register_choices(const hazefree::ConfigKeyInfo& info) {
  // GLib keeps the table for the life of the type: it is allocated once and never freed.
  auto* values = g_new0(GEnumValue, info.choices.size() + 1);
  for (std::size_t i = 0; i < info.choices.size(); ++i) {
    values[i].value = static_cast<gint>(i);
    values[i].value_name = g_strdup(info.choices[i].c_str());
    values[i].value_nick = g_strdup(info.choices[i].c_str());
  }
  return g_enum_register_static(g_intern_string(enum_type_name(info.name).c_str()), values);
}

gint clamp_int(double value) {
  if (value <= G_MININT) return G_MININT;
  if (value >= G_MAXINT) return G_MAXINT;
  return static_cast<gint>(value);
}

GParamSpec* param_spec(const Property& p) {
  const hazefree::ConfigKeyInfo& info = p.info;
  const std::string blurb = info.help + " (" + info.range + "; key " + info.name + ")";
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  const gchar* name = g_intern_string(p.name.c_str());
  const gchar* nick = g_intern_string(info.name.c_str());
  const gchar* text = g_intern_string(blurb.c_str());
  switch (info.kind) {
    case hazefree::ConfigKeyInfo::Kind::integer: {
      // An excluded end of an integer range is the next integer.
      const gint min = clamp_int(info.minimum_excluded ? std::floor(info.minimum) + 1 : std::ceil(info.minimum));
      const gint max = clamp_int(info.maximum_excluded ? std::ceil(info.maximum) - 1 : std::floor(info.maximum));
      return g_param_spec_int(name, nick, text, min, max, std::stoi(info.default_value), flags);
    }
    case hazefree::ConfigKeyInfo::Kind::number: {
      // An excluded end stays in the spec (GLib has no open interval): the library refuses it
      // with a message naming the key when the processor is made.
      const double min = std::isinf(info.minimum) ? -G_MAXDOUBLE : info.minimum;
      const double max = std::isinf(info.maximum) ? G_MAXDOUBLE : info.maximum;
      return g_param_spec_double(name, nick, text, min, max, g_ascii_strtod(info.default_value.c_str(), nullptr),
                                 flags);
    }
    case hazefree::ConfigKeyInfo::Kind::boolean:
      return g_param_spec_boolean(name, nick, text, info.default_value == "true", flags);
    case hazefree::ConfigKeyInfo::Kind::choice: {
      gint default_index = 0;
      for (std::size_t i = 0; i < info.choices.size(); ++i)
        if (info.choices[i] == info.default_value) default_index = static_cast<gint>(i);
      return g_param_spec_enum(name, nick, text, p.enum_type, default_index, flags);
    }
    case hazefree::ConfigKeyInfo::Kind::text:
      break;
  }
  return g_param_spec_string(name, nick, text, info.default_value.c_str(), flags);
}

hazefree::FrameMatrix frame_matrix(const GstVideoInfo& info) {
  switch (GST_VIDEO_INFO_COLORIMETRY(&info).matrix) {
    case GST_VIDEO_COLOR_MATRIX_BT601: return hazefree::FrameMatrix::bt601;
    case GST_VIDEO_COLOR_MATRIX_BT709: return hazefree::FrameMatrix::bt709;
    case GST_VIDEO_COLOR_MATRIX_BT2020: return hazefree::FrameMatrix::bt2020;
    default: return hazefree::FrameMatrix::automatic;
  }
}

hazefree::FrameRange frame_range(const GstVideoInfo& info) {
  switch (GST_VIDEO_INFO_COLORIMETRY(&info).range) {
    case GST_VIDEO_COLOR_RANGE_0_255: return hazefree::FrameRange::full;
    case GST_VIDEO_COLOR_RANGE_16_235: return hazefree::FrameRange::limited;
    default: return hazefree::FrameRange::automatic;
  }
}

// A mapped GstVideoFrame as a frame of the public API (no copy).
hazefree::Frame api_frame(GstVideoFrame* frame) {
  auto data = [frame](int i) { return GST_VIDEO_FRAME_PLANE_DATA(frame, i); };
  auto stride = [frame](int i) { return static_cast<std::ptrdiff_t>(GST_VIDEO_FRAME_PLANE_STRIDE(frame, i)); };
  const int width = GST_VIDEO_FRAME_WIDTH(frame);
  const int height = GST_VIDEO_FRAME_HEIGHT(frame);
  // Bits per sample: the format's own (10 for I420_10LE and P010_10LE, 16 for GRAY16_LE).
  const int depth = static_cast<int>(GST_VIDEO_FORMAT_INFO_DEPTH(frame->info.finfo, 0));
  hazefree::Frame f;
  switch (GST_VIDEO_FRAME_FORMAT(frame)) {
    case GST_VIDEO_FORMAT_I420:
    case GST_VIDEO_FORMAT_I420_10LE:
    case GST_VIDEO_FORMAT_I420_12LE:
      f = hazefree::Frame::i420(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_Y42B:
    case GST_VIDEO_FORMAT_I422_10LE:
    case GST_VIDEO_FORMAT_I422_12LE:
      f = hazefree::Frame::yuv422p(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_Y444:
    case GST_VIDEO_FORMAT_Y444_10LE:
    case GST_VIDEO_FORMAT_Y444_12LE:
    case GST_VIDEO_FORMAT_Y444_16LE:
      f = hazefree::Frame::yuv444p(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_NV12:
    case GST_VIDEO_FORMAT_P010_10LE:
    case GST_VIDEO_FORMAT_P012_LE:
    case GST_VIDEO_FORMAT_P016_LE:
      f = hazefree::Frame::nv12(data(0), stride(0), data(1), stride(1), width, height, depth);
      break;
    case GST_VIDEO_FORMAT_GRAY16_LE: f = hazefree::Frame::gray16(data(0), width, height, stride(0), depth); break;
    default: f = hazefree::Frame::gray8(data(0), width, height, stride(0)); break;
  }
  f.matrix = frame_matrix(frame->info);
  f.range = frame_range(frame->info);
  return f;
}

// Page-locked output buffers of the lanes, recycled: a block comes back when downstream
// releases its buffer (from any thread), and is freed when its size is no longer the pool's.
struct PinnedPool {
  std::mutex lock;
  std::size_t bytes = 0;
  std::vector<void*> free;
  ~PinnedPool() {
    for (void* block : free) hazefree::free_pinned(block);
  }
};

struct PinnedBlock {
  std::shared_ptr<PinnedPool> pool;
  void* data;
  std::size_t bytes;
};

void release_pinned(gpointer user_data) {
  auto* block = static_cast<PinnedBlock*>(user_data);
  {
    std::lock_guard guard(block->pool->lock);
    if (block->bytes == block->pool->bytes) block->pool->free.push_back(block->data);
    else hazefree::free_pinned(block->data);
  }
  delete block;
}

// A GstBuffer of `bytes` page-locked bytes; nullptr where there is no such memory (no GPU).
GstBuffer* pinned_buffer(const std::shared_ptr<PinnedPool>& pool, std::size_t bytes) {
  void* data = nullptr;
  {
    std::lock_guard guard(pool->lock);
    if (pool->bytes != bytes) {
      for (void* block : pool->free) hazefree::free_pinned(block);
      pool->free.clear();
      pool->bytes = bytes;
    }
    if (!pool->free.empty()) {
      data = pool->free.back();
      pool->free.pop_back();
    }
  }
  if (!data) data = hazefree::allocate_pinned(bytes);
  if (!data) return nullptr;
  auto* block = new PinnedBlock{pool, data, bytes};
  return gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), data, bytes, 0, bytes, block, release_pinned);
}

// One frame handed to a lane and not yet pushed: its buffers stay mapped until the lane is done.
struct InFlight {
  std::shared_ptr<hazefree::Processor> processor;  // the one it was enqueued on
  int lane = 0;
  GstBuffer* in = nullptr;
  GstBuffer* out = nullptr;
  GstVideoFrame in_frame{};
  GstVideoFrame out_frame{};
};

// The element's C++ state, beside the GObject instance.
struct State {
  std::mutex lock;            // the options, against property changes from other threads
  hazefree::Options options;  // every property's key, as text
  bool options_changed = true;
  int lanes = kDefaultLanes;  // under `lock`: the `lanes` property
  std::shared_ptr<hazefree::Processor> processor;  // streaming thread only
  bool reset_pending = false;                      // under `lock`: flush, new segment, new stream
  std::string last_refused;                        // under `lock`: caps already warned about
  // System memory through the lanes (streaming thread only).
  std::deque<InFlight> in_flight;  // oldest first
  int next_lane = 0;
  std::shared_ptr<PinnedPool> pinned = std::make_shared<PinnedPool>();
  bool pinned_unavailable = false;  // allocate_pinned() said no: the negotiated pool's buffers
  std::atomic<bool> holds_frames{false};  // a frame is held back between calls (latency query)
  // CUDA memory.
  bool cuda_memory = false;  // the negotiated caps are memory:CUDAMemory
#ifdef HAZEFREE_GST_CUDA
  GstCudaContext* cuda_context = nullptr;  // under `lock`: shared with the neighbours
  GstCudaContext* processor_context = nullptr;  // the context `processor` was made in (or none)
  CUstream stream = nullptr;                    // the element's stream, in processor_context
#endif
};

}  // namespace

G_BEGIN_DECLS
#define GST_TYPE_HAZEFREE (gst_hazefree_get_type())
G_DECLARE_FINAL_TYPE(GstHazefree, gst_hazefree, GST, HAZEFREE, GstVideoFilter)
G_END_DECLS

struct _GstHazefree {
  GstVideoFilter parent;
  State* state;
};

G_DEFINE_TYPE(GstHazefree, gst_hazefree, GST_TYPE_VIDEO_FILTER)

namespace {

// The `lanes` property: after the configuration keys' properties.
guint lanes_property_id() { return static_cast<guint>(properties().size() + 1); }

void set_property(GObject* object, guint id, const GValue* value, GParamSpec* spec) {
  GstHazefree* self = GST_HAZEFREE(object);
  if (id == lanes_property_id()) {
    std::lock_guard guard(self->state->lock);
    self->state->lanes = g_value_get_int(value);
    return;
  }
  if (id == 0 || id > properties().size()) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    return;
  }
  const Property& p = properties()[id - 1];
  std::string text;
  switch (p.info.kind) {
    case hazefree::ConfigKeyInfo::Kind::integer: text = std::to_string(g_value_get_int(value)); break;
    case hazefree::ConfigKeyInfo::Kind::number: {
      gchar buffer[G_ASCII_DTOSTR_BUF_SIZE];
      text = g_ascii_dtostr(buffer, sizeof buffer, g_value_get_double(value));
      break;
    }
    case hazefree::ConfigKeyInfo::Kind::boolean: text = g_value_get_boolean(value) ? "true" : "false"; break;
    case hazefree::ConfigKeyInfo::Kind::choice:
      text = p.info.choices.at(static_cast<std::size_t>(g_value_get_enum(value)));
      break;
    case hazefree::ConfigKeyInfo::Kind::text: text = g_value_get_string(value) ? g_value_get_string(value) : ""; break;
  }
  std::lock_guard guard(self->state->lock);
  if (self->state->options[p.key] != text) {
    self->state->options[p.key] = text;
    self->state->options_changed = true;
  }
}

void get_property(GObject* object, guint id, GValue* value, GParamSpec* spec) {
  GstHazefree* self = GST_HAZEFREE(object);
  if (id == lanes_property_id()) {
    std::lock_guard guard(self->state->lock);
    g_value_set_int(value, self->state->lanes);
    return;
  }
  if (id == 0 || id > properties().size()) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    return;
  }
  const Property& p = properties()[id - 1];
  std::string text;
  {
    std::lock_guard guard(self->state->lock);
    text = self->state->options[p.key];
  }
  switch (p.info.kind) {
    case hazefree::ConfigKeyInfo::Kind::integer:
      g_value_set_int(value, static_cast<gint>(g_ascii_strtoll(text.c_str(), nullptr, 10)));
      break;
    case hazefree::ConfigKeyInfo::Kind::number: g_value_set_double(value, g_ascii_strtod(text.c_str(), nullptr)); break;
    case hazefree::ConfigKeyInfo::Kind::boolean: g_value_set_boolean(value, text == "true"); break;
    case hazefree::ConfigKeyInfo::Kind::choice:
      for (std::size_t i = 0; i < p.info.choices.size(); ++i)
        if (p.info.choices[i] == text) g_value_set_enum(value, static_cast<gint>(i));
      break;
    case hazefree::ConfigKeyInfo::Kind::text: g_value_set_string(value, text.c_str()); break;
  }
}

#ifdef HAZEFREE_GST_CUDA
// The CUDA context current on this thread for the scope (none: nothing happens). The CUDA
// runtime behind the library works in the context current on the calling thread.
class ContextScope {
 public:
  explicit ContextScope(GstCudaContext* context) : pushed_(context && gst_cuda_context_push(context)) {}
  ~ContextScope() {
    if (pushed_) gst_cuda_context_pop(nullptr);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_;
};
#endif

// Drops the processor (and the element's CUDA stream), in the context it was made in.
void release_processor(State& state) {
#ifdef HAZEFREE_GST_CUDA
  ContextScope scope(state.processor_context);
  state.processor.reset();
  if (state.stream) CuStreamDestroy(state.stream);
  state.stream = nullptr;
  if (state.processor_context) gst_object_unref(state.processor_context);
  state.processor_context = nullptr;
#else
  state.processor.reset();
#endif
}

// Makes the processor from the current options (again after a property changed, which also
// starts the temporal state afresh, and when frames move between system and CUDA memory);
// false after posting an error naming the key or the cause.
bool ensure_processor(GstHazefree* self) {
  State& state = *self->state;
  hazefree::Options options;
  bool rebuild = false, reset = false;
  {
    std::lock_guard guard(state.lock);
    rebuild = state.options_changed || !state.processor;
    options = state.options;
    state.options_changed = false;
    reset = state.reset_pending;
    state.reset_pending = false;
  }
#ifdef HAZEFREE_GST_CUDA
  GstCudaContext* context = state.cuda_memory ? state.cuda_context : nullptr;
  if (context != state.processor_context) rebuild = true;
#endif
  if (rebuild) {  // a new processor starts with a fresh temporal state
    release_processor(state);
    try {
#ifdef HAZEFREE_GST_CUDA
      ContextScope scope(context);
      state.processor = std::make_shared<hazefree::Processor>(options);
      if (context) {
        state.processor_context = GST_CUDA_CONTEXT(gst_object_ref(context));
        if (!state.processor->on_gpu())
          throw std::runtime_error("memory:CUDAMemory needs the CUDA backend; this processor runs on " +
                                   state.processor->description());
        if (!gst_cuda_result(CuStreamCreate(&state.stream, CU_STREAM_NON_BLOCKING)))
          throw std::runtime_error("cannot create a CUDA stream in the shared CUDA context");
      }
#else
      state.processor = std::make_shared<hazefree::Processor>(options);
#endif
      GST_INFO_OBJECT(self, "processing on %s (%s)", state.processor->description().c_str(),
                      state.cuda_memory ? "CUDA memory, in place on the GPU" : "system memory");
    } catch (const hazefree::OptionError& e) {
      release_processor(state);
      GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s", e.what()), ("property of key %s", e.key().c_str()));
      return false;
    } catch (const std::exception& e) {
      release_processor(state);
      GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("%s", e.what()), (nullptr));
      return false;
    }
  } else if (reset) {
#ifdef HAZEFREE_GST_CUDA
    ContextScope scope(state.processor_context);
#endif
    state.processor->reset();
  }
  return true;
}

// ---- frames in flight on the lanes (system memory) ----

void unmap_and_release(InFlight& f, bool keep_out) {
  gst_video_frame_unmap(&f.in_frame);
  gst_video_frame_unmap(&f.out_frame);
  gst_buffer_unref(f.in);
  if (!keep_out) gst_buffer_unref(f.out);
}

// Waits for the oldest frame in flight and hands its output buffer over.
GstFlowReturn finish_oldest(GstHazefree* self, GstBuffer** out) {
  State& state = *self->state;
  InFlight f = state.in_flight.front();
  state.in_flight.pop_front();
  try {
    f.processor->wait(f.lane);
  } catch (const std::exception& e) {
    unmap_and_release(f, false);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  }
  unmap_and_release(f, true);
  *out = f.out;
  return GST_FLOW_OK;
}

// Frames in flight dropped (a flush, a stop): waited for, not pushed.
void discard_in_flight(State& state) {
  while (!state.in_flight.empty()) {
    InFlight f = state.in_flight.front();
    state.in_flight.pop_front();
    try {
      f.processor->wait(f.lane);
    } catch (const std::exception&) {
      // the frame is dropped anyway
    }
    unmap_and_release(f, false);
  }
  state.next_lane = 0;
}

// Frames in flight pushed downstream in order (before a serialized event, on a drain query).
GstFlowReturn drain_in_flight(GstHazefree* self) {
  State& state = *self->state;
  while (!state.in_flight.empty()) {
    GstBuffer* out = nullptr;
    GstFlowReturn ret = finish_oldest(self, &out);
    if (ret == GST_FLOW_OK) ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), out);
    if (ret != GST_FLOW_OK) {
      GST_DEBUG_OBJECT(self, "draining stopped: %s", gst_flow_get_name(ret));
      discard_in_flight(state);
      return ret;
    }
  }
  state.next_lane = 0;
  return GST_FLOW_OK;
}

// Frames the lanes may hold at once: 1 on the CPU backend (no lanes) or with lanes=1.
int depth(State& state) {
  int wanted = 0;
  {
    std::lock_guard guard(state.lock);
    wanted = state.lanes;
  }
  return std::max(1, std::min(wanted, state.processor ? state.processor->lanes() : 0));
}

// Hands `in` (taken) to the next lane.
GstFlowReturn start_frame(GstHazefree* self, GstBuffer* in) {
  GstBaseTransform* trans = GST_BASE_TRANSFORM(self);
  GstVideoFilter* filter = GST_VIDEO_FILTER(self);
  State& state = *self->state;
  bool change = false;
  {
    std::lock_guard guard(state.lock);
    change = state.options_changed || state.reset_pending || !state.processor;
  }
  if (change && !state.in_flight.empty()) {
    // The frames before a new processor or a reset finish on the one they started on.
    const GstFlowReturn ret = drain_in_flight(self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref(in);
      return ret;
    }
  }
  if (!ensure_processor(self)) {
    gst_buffer_unref(in);
    return GST_FLOW_ERROR;
  }
  GstBuffer* out = nullptr;
  if (state.processor->lanes() > 0 && !state.pinned_unavailable) {
    out = pinned_buffer(state.pinned, GST_VIDEO_INFO_SIZE(&filter->out_info));
    if (out) {
      GST_BASE_TRANSFORM_GET_CLASS(trans)->copy_metadata(trans, in, out);
    } else {
      GST_INFO_OBJECT(self, "no page-locked memory: output buffers from the negotiated pool");
      state.pinned_unavailable = true;
    }
  }
  if (!out) {
    const GstFlowReturn ret = GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->prepare_output_buffer(trans, in, &out);
    if (ret != GST_FLOW_OK || !out) {
      gst_buffer_unref(in);
      return ret != GST_FLOW_OK ? ret : GST_FLOW_ERROR;
    }
  }
  InFlight f;
  f.processor = state.processor;
  f.lane = state.next_lane % std::max(1, state.processor->lanes());
  f.in = in;
  f.out = out;
  if (!gst_video_frame_map(&f.in_frame, &filter->in_info, in, GST_MAP_READ)) {
    gst_buffer_unref(in);
    gst_buffer_unref(out);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("hazefree: an input buffer smaller than its caps say (cannot map it)"),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  if (!gst_video_frame_map(&f.out_frame, &filter->out_info, out, GST_MAP_WRITE)) {
    gst_video_frame_unmap(&f.in_frame);
    gst_buffer_unref(in);
    gst_buffer_unref(out);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("hazefree: cannot map an output buffer for writing"), (nullptr));
    return GST_FLOW_ERROR;
  }
  try {
    f.processor->enqueue(f.lane, api_frame(&f.in_frame), api_frame(&f.out_frame));
  } catch (const std::exception& e) {
    unmap_and_release(f, false);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  }
  state.next_lane = f.lane + 1;
  state.in_flight.push_back(f);
  return GST_FLOW_OK;
}

// System memory: the input queued by submit_input_buffer goes to a lane; the oldest frame leaves
// once the lanes are full (at once on the CPU backend or with lanes=1). CUDA memory: the base
// class's one frame at a time (transform below).
GstFlowReturn generate_output(GstBaseTransform* trans, GstBuffer** out) {
  GstHazefree* self = GST_HAZEFREE(trans);
  State& state = *self->state;
  if (state.cuda_memory) return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->generate_output(trans, out);
  *out = nullptr;
  if (GstBuffer* in = trans->queued_buf) {
    trans->queued_buf = nullptr;
    const GstFlowReturn ret = start_frame(self, in);
    if (ret != GST_FLOW_OK) return ret;
  }
  const int frames = depth(state);
  state.holds_frames = frames > 1;
  if (state.in_flight.empty() || static_cast<int>(state.in_flight.size()) < frames) return GST_FLOW_OK;
  return finish_oldest(self, out);
}

gboolean start(GstBaseTransform* trans) { return ensure_processor(GST_HAZEFREE(trans)) ? TRUE : FALSE; }

gboolean stop(GstBaseTransform* trans) {
  State& state = *GST_HAZEFREE(trans)->state;
  discard_in_flight(state);
  release_processor(state);
  state.pinned_unavailable = false;
#ifdef HAZEFREE_GST_CUDA
  if (state.cuda_context) gst_object_unref(state.cuda_context);
  state.cuda_context = nullptr;
#endif
  std::lock_guard guard(state.lock);
  state.options_changed = true;  // the next start makes a fresh processor
  return TRUE;
}

gboolean sink_event(GstBaseTransform* trans, GstEvent* event) {
  GstHazefree* self = GST_HAZEFREE(trans);
  State& state = *self->state;
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) discard_in_flight(state);  // the streaming thread is stopped
  else if (GST_EVENT_IS_SERIALIZED(event) && !state.in_flight.empty()) drain_in_flight(self);  // frames before it
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_STOP:     // a flushing seek
    case GST_EVENT_SEGMENT:        // a new segment
    case GST_EVENT_STREAM_START: {  // a new stream
      std::lock_guard guard(state.lock);
      state.reset_pending = true;
      break;
    }
    default: break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->sink_event(trans, event);
}

#ifdef HAZEFREE_GST_CUDA
std::string cuda_memory_refusal(GstHazefree* self);
#endif

bool has_cuda_memory(GstCaps* caps, guint i) {
  const GstCapsFeatures* features = gst_caps_get_features(caps, i);
  return features && !gst_caps_features_is_any(features) && gst_caps_features_contains(features, kCudaMemory);
}

gboolean set_caps(GstBaseTransform* trans, GstCaps* in, GstCaps* out) {
  State& state = *GST_HAZEFREE(trans)->state;
  state.cuda_memory = gst_caps_get_size(in) > 0 && has_cuda_memory(in, 0);
#ifdef HAZEFREE_GST_CUDA
  if (state.cuda_memory && !state.cuda_context) {  // caps set without the accept-caps query
    const std::string why = cuda_memory_refusal(GST_HAZEFREE(trans));
    if (!why.empty()) {
      GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("%s", why.c_str()), (nullptr));
      return FALSE;
    }
  }
#endif
  return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->set_caps(trans, in, out);
}

// CUDA memory is offered on the CUDA backend only: with backend=cpu the neighbours negotiate
// system memory (nvh264dec then downloads).
GstCaps* transform_caps(GstBaseTransform* trans, GstPadDirection direction, GstCaps* caps, GstCaps* filter) {
  GstCaps* result = GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->transform_caps(trans, direction, caps, filter);
  State& state = *GST_HAZEFREE(trans)->state;
  bool cpu = false;
  {
    std::lock_guard guard(state.lock);
    cpu = state.options["backend"] == "cpu";
  }
  if (!cpu || !result) return result;
  result = gst_caps_make_writable(result);
  for (guint i = gst_caps_get_size(result); i > 0; --i)
    if (has_cuda_memory(result, i - 1)) gst_caps_remove_structure(result, i - 1);
  return result;
}

// Why the element cannot take `caps` (fixed), in words.
std::string refusal(GstHazefree* self, GstCaps* caps) {
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  const GstCapsFeatures* features = gst_caps_get_features(caps, 0);
  const gchar* format = gst_structure_get_string(s, "format");
  const bool system_memory = !features || gst_caps_features_is_any(features) ||
                             gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
  if (!gst_structure_has_name(s, "video/x-raw"))
    return "hazefree takes raw video (" + in_words(kEightBitFormats) + "), not " + gst_structure_get_name(s) +
           ": decode it first";
#ifdef HAZEFREE_GST_CUDA
  const bool cuda_memory = !system_memory && gst_caps_features_contains(features, kCudaMemory);
  if (cuda_memory && gst_structure_get_string(s, "format")) {
    std::lock_guard guard(self->state->lock);
    if (self->state->options["backend"] == "cpu")
      return "hazefree backend=cpu cannot take memory:CUDAMemory (it needs the CUDA backend): put cudadownload "
             "before it, or give it system memory";
  }
  if (!system_memory && !cuda_memory) {
    const std::unique_ptr<gchar, decltype(&g_free)> text(gst_caps_features_to_string(features), g_free);
    return std::string("hazefree takes video in system memory or memory:CUDAMemory, not ") + text.get() +
           ": put a download element before it";
  }
#else
  (void)self;
  if (!system_memory) {
    const std::unique_ptr<gchar, decltype(&g_free)> text(gst_caps_features_to_string(features), g_free);
    return std::string("hazefree takes video in system memory, not ") + text.get() +
           " (built without gst-plugins-bad's CUDA library): put a download element (e.g. cudadownload) before it";
  }
#endif
  // Deep video is told the deep formats (the list of 8-bit ones is what most senders need).
  const GstVideoFormat refused = format ? gst_video_format_from_string(format) : GST_VIDEO_FORMAT_UNKNOWN;
  const GstVideoFormatInfo* refused_info =
      refused != GST_VIDEO_FORMAT_UNKNOWN ? gst_video_format_get_info(refused) : nullptr;
  if (refused_info && GST_VIDEO_FORMAT_INFO_DEPTH(refused_info, 0) > 8)
    return "hazefree takes " + in_words(kEightBitFormats) + " video, or at 10 to 16 bits " + in_words(kDeepFormats) +
           ", not " + format + ": put videoconvert before it";
  return "hazefree takes " + in_words(kEightBitFormats) + " video, not " + (format ? format : "this format") +
         ": put videoconvert before it";
}

#ifdef HAZEFREE_GST_CUDA
// Empty when frames in CUDA memory can be taken: the CUDA backend, a GPU, and a CUDA context
// shared with the neighbours (or made for device 0); else why not, in words.
std::string cuda_memory_refusal(GstHazefree* self) {
  State& state = *self->state;
  const std::string advice = ": put cudadownload before it, or give it system memory";
  {
    std::lock_guard guard(state.lock);
    if (state.options["backend"] == "cpu")
      return "hazefree backend=cpu cannot take memory:CUDAMemory (it needs the CUDA backend)" + advice;
  }
  std::string why;
  if (!hazefree::gpu_available(&why)) return "hazefree cannot take memory:CUDAMemory: " + why + advice;
  if (!gst_cuda_ensure_element_context(GST_ELEMENT(self), -1, &state.cuda_context))
    return "hazefree cannot take memory:CUDAMemory: no CUDA context from its neighbours, and none could be made "
           "for device 0 (gst-plugins-bad's CUDA library could not load libcuda or open the device)" + advice;
  return {};
}
#endif

// Caps sent to the element that it cannot take (the caps event fails, and upstream with it): an
// error on the bus that says why, instead of only upstream's "not-negotiated".
gboolean accept_caps(GstBaseTransform* trans, GstPadDirection direction, GstCaps* caps) {
  gboolean accepted = GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->accept_caps(trans, direction, caps);
  if (direction != GST_PAD_SINK || !gst_caps_is_fixed(caps)) return accepted;
  const std::unique_ptr<gchar, decltype(&g_free)> described(gst_caps_to_string(caps), g_free);
#ifdef HAZEFREE_GST_CUDA
  if (accepted && has_cuda_memory(caps, 0)) {
    const std::string why = cuda_memory_refusal(GST_HAZEFREE(trans));
    if (!why.empty()) {
      GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("%s", why.c_str()), ("refused caps: %s", described.get()));
      return FALSE;
    }
  }
#endif
  if (accepted) return accepted;
  GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("%s", refusal(GST_HAZEFREE(trans), caps).c_str()),
                    ("refused caps: %s; formats taken: %s", described.get(), caps_formats()));
  return accepted;
}

// Most upstream elements ask first what the element takes, with what they can give as the
// filter, and fail with "not-negotiated" when the answer is empty. When they can give only one
// kind of caps (one format, or one memory), the element says why on the bus: a warning, just
// before upstream's error (once per refused caps). Also: the CUDA context shared with the
// neighbours, the frames in flight pushed on a drain query, and the frame held back by the lanes
// counted in the latency.
gboolean query(GstBaseTransform* trans, GstPadDirection direction, GstQuery* query) {
  GstHazefree* self = GST_HAZEFREE(trans);
#ifdef HAZEFREE_GST_CUDA
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT &&
      gst_cuda_handle_context_query(GST_ELEMENT(trans), query, self->state->cuda_context))
    return TRUE;
#endif
  if (GST_QUERY_TYPE(query) == GST_QUERY_DRAIN && direction == GST_PAD_SINK && !self->state->in_flight.empty())
    drain_in_flight(self);
  const gboolean answered = GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->query(trans, direction, query);
  if (answered && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY && direction == GST_PAD_SRC) {
    State& state = *self->state;
    int lanes = 0;
    {
      std::lock_guard guard(state.lock);
      lanes = state.lanes;
    }
    const GstVideoInfo& info = GST_VIDEO_FILTER(trans)->in_info;
    if (lanes > 1 && !state.cuda_memory && state.holds_frames && GST_VIDEO_INFO_FPS_N(&info) > 0) {
      gboolean live = FALSE;
      GstClockTime min = 0, max = 0;
      gst_query_parse_latency(query, &live, &min, &max);
      const GstClockTime frame =
          gst_util_uint64_scale_int(GST_SECOND, GST_VIDEO_INFO_FPS_D(&info), GST_VIDEO_INFO_FPS_N(&info));
      gst_query_set_latency(query, live, min + frame, GST_CLOCK_TIME_IS_VALID(max) ? max + frame : max);
    }
  }
  if (!answered || direction != GST_PAD_SINK || GST_QUERY_TYPE(query) != GST_QUERY_CAPS) return answered;
  GstCaps* filter = nullptr;
  GstCaps* result = nullptr;
  gst_query_parse_caps(query, &filter);
  gst_query_parse_caps_result(query, &result);
  if (!filter || !result || gst_caps_get_size(filter) != 1 || !gst_caps_is_empty(result)) return answered;
  const GstStructure* s = gst_caps_get_structure(filter, 0);
  const GstCapsFeatures* features = gst_caps_get_features(filter, 0);
  const bool other_memory = features && !gst_caps_features_is_any(features) &&
                            !gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
  if (gst_structure_has_name(s, "video/x-raw") && !gst_structure_get_string(s, "format") && !other_memory)
    return answered;  // no single format to name
  const std::unique_ptr<gchar, decltype(&g_free)> described(gst_caps_to_string(filter), g_free);
  State& state = *self->state;
  {
    std::lock_guard guard(state.lock);
    if (state.last_refused == described.get()) return answered;
    state.last_refused = described.get();
  }
  const std::string why = refusal(self, filter);
  GST_ELEMENT_WARNING(trans, STREAM, FORMAT, ("%s", why.c_str()),
                      ("refused caps: %s; formats taken: %s", described.get(), caps_formats()));
  return answered;
}

GstFlowReturn transform_frame(GstVideoFilter* filter, GstVideoFrame* in, GstVideoFrame* out) {
  GstHazefree* self = GST_HAZEFREE(filter);
  if (!ensure_processor(self)) return GST_FLOW_ERROR;
  try {
    self->state->processor->process(api_frame(in), api_frame(out));
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

#ifdef HAZEFREE_GST_CUDA
// A frame in CUDA memory, processed where it is into a buffer of the CUDA pool.
GstFlowReturn transform_cuda(GstHazefree* self, GstBuffer* inbuf, GstBuffer* outbuf) {
  State& state = *self->state;
  GstVideoFilter* filter = GST_VIDEO_FILTER(self);
  if (!ensure_processor(self)) return GST_FLOW_ERROR;
  for (GstBuffer* buffer : {inbuf, outbuf}) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
    if (!gst_is_cuda_memory(memory) || GST_CUDA_MEMORY_CAST(memory)->context != state.processor_context) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED,
                        ("hazefree: a %s buffer is not CUDA memory of the shared CUDA context",
                         buffer == inbuf ? "input" : "output"),
                        (nullptr));
      return GST_FLOW_ERROR;
    }
  }
  ContextScope scope(state.processor_context);
  GstVideoFrame in, out;
  if (!gst_video_frame_map(&in, &filter->in_info, inbuf, static_cast<GstMapFlags>(GST_MAP_READ | GST_MAP_CUDA))) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("hazefree: cannot map the input's CUDA memory"), (nullptr));
    return GST_FLOW_ERROR;
  }
  if (!gst_video_frame_map(&out, &filter->out_info, outbuf, static_cast<GstMapFlags>(GST_MAP_WRITE | GST_MAP_CUDA))) {
    gst_video_frame_unmap(&in);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("hazefree: cannot map the output's CUDA memory"), (nullptr));
    return GST_FLOW_ERROR;
  }
  GstFlowReturn ret = GST_FLOW_OK;
  try {
    state.processor->process_device(api_frame(&in), api_frame(&out), state.stream);
    // Downstream takes the buffer as complete (GStreamer 1.22's CUDA memory has no stream).
    if (!gst_cuda_result(CuStreamSynchronize(state.stream)))
      throw std::runtime_error("the CUDA stream failed while processing a frame in CUDA memory");
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("%s", e.what()), (nullptr));
    ret = GST_FLOW_ERROR;
  }
  gst_video_frame_unmap(&out);
  gst_video_frame_unmap(&in);
  return ret;
}

// A GstCudaBufferPool of the shared context for upstream (CUDA memory caps), else the video
// filter's own proposal.
gboolean propose_allocation(GstBaseTransform* trans, GstQuery* decide_query, GstQuery* query) {
  GstHazefree* self = GST_HAZEFREE(trans);
  GstCaps* caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (!caps || gst_caps_get_size(caps) == 0 || !has_cuda_memory(caps, 0) || !self->state->cuda_context)
    return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->propose_allocation(trans, decide_query, query);
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return FALSE;
  if (gst_query_get_n_allocation_pools(query) == 0) {
    GstBufferPool* pool = gst_cuda_buffer_pool_new(self->state->cuda_context);
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 0, 0);
    if (!gst_buffer_pool_set_config(pool, config)) {
      gst_object_unref(pool);
      return FALSE;
    }
    guint size = GST_VIDEO_INFO_SIZE(&info);
    config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr);
    gst_structure_free(config);
    gst_query_add_allocation_pool(query, pool, size, 0, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

// Output buffers in CUDA memory: downstream's pool when it is a CUDA pool of the shared context,
// else a new GstCudaBufferPool.
gboolean decide_allocation(GstBaseTransform* trans, GstQuery* query) {
  GstHazefree* self = GST_HAZEFREE(trans);
  GstCaps* caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (!caps || gst_caps_get_size(caps) == 0 || !has_cuda_memory(caps, 0))
    return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->decide_allocation(trans, query);
  GstCudaContext* context = self->state->cuda_context;
  if (!context) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("hazefree: CUDA memory out without a CUDA context"), (nullptr));
    return FALSE;
  }
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return FALSE;
  GstBufferPool* pool = nullptr;
  guint size = GST_VIDEO_INFO_SIZE(&info), min = 0, max = 0;
  const bool update = gst_query_get_n_allocation_pools(query) > 0;
  if (update) {
    gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
    if (pool && (!GST_IS_CUDA_BUFFER_POOL(pool) || GST_CUDA_BUFFER_POOL(pool)->context != context)) {
      gst_object_unref(pool);
      pool = nullptr;
    }
  }
  if (!pool) pool = gst_cuda_buffer_pool_new(context);
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), min, max);
  if (!gst_buffer_pool_set_config(pool, config)) {
    gst_object_unref(pool);
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("hazefree: the CUDA buffer pool refused its configuration"), (nullptr));
    return FALSE;
  }
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr);
  gst_structure_free(config);
  if (update) gst_query_set_nth_allocation_pool(query, 0, pool, size, min, max);
  else gst_query_add_allocation_pool(query, pool, size, min, max);
  gst_object_unref(pool);
  return TRUE;
}

void set_context(GstElement* element, GstContext* context) {
  gst_cuda_handle_set_context(element, context, -1, &GST_HAZEFREE(element)->state->cuda_context);
  GST_ELEMENT_CLASS(gst_hazefree_parent_class)->set_context(element, context);
}
#endif

// System memory: the video filter's frame mapping and transform_frame (the lanes path goes
// through generate_output instead); CUDA memory: transform_cuda.
GstFlowReturn transform(GstBaseTransform* trans, GstBuffer* inbuf, GstBuffer* outbuf) {
#ifdef HAZEFREE_GST_CUDA
  if (GST_HAZEFREE(trans)->state->cuda_memory) return transform_cuda(GST_HAZEFREE(trans), inbuf, outbuf);
#endif
  return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->transform(trans, inbuf, outbuf);
}

void finalize(GObject* object) {
  GstHazefree* self = GST_HAZEFREE(object);
  discard_in_flight(*self->state);
  release_processor(*self->state);
#ifdef HAZEFREE_GST_CUDA
  if (self->state->cuda_context) gst_object_unref(self->state->cuda_context);
#endif
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_hazefree_parent_class)->finalize(object);
}

}  // namespace

static void gst_hazefree_class_init(GstHazefreeClass* klass) {
  GObjectClass* object_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass* transform_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstVideoFilterClass* filter_class = GST_VIDEO_FILTER_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(gst_hazefree_debug, "hazefree", 0, "hazefree dehazing and equalization");

  object_class->set_property = set_property;
  object_class->get_property = get_property;
  object_class->finalize = finalize;

  // Property names: the key's last part ("dcp.patch_radius" -> patch-radius), or the whole key
  // where two keys would share one.
  std::map<std::string, int> leaf_uses;
  auto leaf = [](const std::string& key) { return key.substr(key.rfind('.') + 1); };
  for (const hazefree::ConfigKeyInfo& info : hazefree::configuration_keys())
    if (info.processor_key) ++leaf_uses[leaf(info.name)];
  std::vector<Property>& list = properties();
  for (const hazefree::ConfigKeyInfo& info : hazefree::configuration_keys()) {
    if (!info.processor_key) continue;
    Property p;
    p.key = info.name;
    p.name = property_name(leaf_uses[leaf(info.name)] > 1 ? info.name : leaf(info.name));
    p.info = info;
    if (info.kind == hazefree::ConfigKeyInfo::Kind::choice) p.enum_type = register_choices(info);
    list.push_back(std::move(p));
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    g_object_class_install_property(object_class, static_cast<guint>(i + 1), param_spec(list[i]));
  g_object_class_install_property(
      object_class, lanes_property_id(),
      g_param_spec_int("lanes", "lanes",
                       "Frames in flight on the CUDA backend with system memory: 2 overlaps the upload and "
                       "download of one frame with the processing of the next (one frame is held back: a "
                       "frame's more latency on a live source), 1 processes each frame before taking the next "
                       "(no effect on the CPU backend, nor with CUDA memory)",
                       1, 2, kDefaultLanes,
                       static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));

  gst_element_class_set_static_metadata(
      element_class, "hazefree", "Filter/Effect/Video",
      "Dehazing with the dark channel prior, global HE and sliding-window AHE/CLAHE (CPU or CUDA)", "hazefree");
  const std::string fields = std::string(", format=(string)") + caps_formats() +
                             ", width=(int)[1, 2147483647], height=(int)[1, 2147483647], "
                             "framerate=(fraction)[0/1, 2147483647/1]";
#ifdef HAZEFREE_GST_CUDA
  // CUDA memory first: where upstream can give both (nvh264dec), frames stay on the GPU.
  GstCaps* caps = gst_caps_from_string(
      (std::string("video/x-raw(") + kCudaMemory + ")" + fields + "; video/x-raw" + fields).c_str());
#else
  GstCaps* caps = gst_caps_from_string(("video/x-raw" + fields).c_str());
#endif
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);

  transform_class->start = start;
  transform_class->stop = stop;
  transform_class->sink_event = sink_event;
  transform_class->accept_caps = accept_caps;
  transform_class->query = query;
  transform_class->set_caps = set_caps;
  transform_class->transform_caps = transform_caps;
  transform_class->generate_output = generate_output;
  transform_class->transform = transform;
  filter_class->transform_frame = transform_frame;
#ifdef HAZEFREE_GST_CUDA
  transform_class->propose_allocation = propose_allocation;
  transform_class->decide_allocation = decide_allocation;
  element_class->set_context = set_context;
  gst_cuda_memory_init_once();
#endif
}

static void gst_hazefree_init(GstHazefree* self) {
  self->state = new State;
  for (const Property& p : properties()) self->state->options[p.key] = p.info.default_value;
}

static gboolean plugin_init(GstPlugin* plugin) {
  return gst_element_register(plugin, "hazefree", GST_RANK_NONE, GST_TYPE_HAZEFREE);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, hazefree,
                  "hazefree: real-time video dehazing and contrast equalization", plugin_init,
                  HAZEFREE_VERSION_STRING, "unknown", "hazefree", "hazefree")
