// The GStreamer element `hazefree` (plugin gsthazefree): a video filter (GstVideoFilter) that runs
// hazefree::Processor of the public API on I420, NV12 and GRAY8 frames in system memory.
//
// Thin by design: every configuration key a Processor uses becomes a property generated from
// hazefree::configuration_keys() (the one options table behind the CLI, TOML presets and Python):
// "dcp.patch_radius" is `patch-radius`, "mode" is `mode`, choices are enums, ranges and defaults
// come from the table. Values are checked by the library when the processor is made (at start, or
// at the next frame after a property changed): a bad one is an error on the bus naming the key.
// The temporal state (DCP's atmospheric light, HE's history) restarts on flush (seeks), on a new
// segment and on a new stream.
#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>
#include <gst/video/video.h>

#include <hazefree/hazefree.hpp>

#include <cmath>
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

constexpr const char* kFormats = "{ I420, NV12, GRAY8 }";

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
  hazefree::Frame f;
  switch (GST_VIDEO_FRAME_FORMAT(frame)) {
    case GST_VIDEO_FORMAT_I420:
      f = hazefree::Frame::i420(data(0), stride(0), data(1), stride(1), data(2), stride(2), width, height);
      break;
    case GST_VIDEO_FORMAT_NV12: f = hazefree::Frame::nv12(data(0), stride(0), data(1), stride(1), width, height); break;
    default: f = hazefree::Frame::gray8(data(0), width, height, stride(0)); break;
  }
  f.matrix = frame_matrix(frame->info);
  f.range = frame_range(frame->info);
  return f;
}

// The element's C++ state, beside the GObject instance.
struct State {
  std::mutex lock;            // the options, against property changes from other threads
  hazefree::Options options;  // every property's key, as text
  bool options_changed = true;
  std::unique_ptr<hazefree::Processor> processor;  // streaming thread only
  bool reset_pending = false;                      // under `lock`: flush, new segment, new stream
  std::string last_refused;                        // under `lock`: caps already warned about
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

void set_property(GObject* object, guint id, const GValue* value, GParamSpec* spec) {
  GstHazefree* self = GST_HAZEFREE(object);
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

// Makes the processor from the current options (again after a property changed, which also
// starts the temporal state afresh); false after posting an error naming the key or the cause.
bool ensure_processor(GstHazefree* self) {
  State& state = *self->state;
  hazefree::Options options;
  bool rebuild = false, reset = false;
  {
    std::lock_guard guard(state.lock);
    rebuild = state.options_changed || !state.processor;
    if (rebuild) options = state.options;
    state.options_changed = false;
    reset = state.reset_pending;
    state.reset_pending = false;
  }
  if (rebuild) {  // a new processor starts with a fresh temporal state
    try {
      state.processor = std::make_unique<hazefree::Processor>(options);
      GST_INFO_OBJECT(self, "processing on %s", state.processor->description().c_str());
    } catch (const hazefree::OptionError& e) {
      state.processor.reset();
      GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("%s", e.what()), ("property of key %s", e.key().c_str()));
      return false;
    } catch (const std::exception& e) {
      state.processor.reset();
      GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("%s", e.what()), (nullptr));
      return false;
    }
  } else if (reset) {
    state.processor->reset();
  }
  return true;
}

gboolean start(GstBaseTransform* trans) { return ensure_processor(GST_HAZEFREE(trans)) ? TRUE : FALSE; }

gboolean stop(GstBaseTransform* trans) {
  State& state = *GST_HAZEFREE(trans)->state;
  state.processor.reset();
  std::lock_guard guard(state.lock);
  state.options_changed = true;  // the next start makes a fresh processor
  return TRUE;
}

gboolean sink_event(GstBaseTransform* trans, GstEvent* event) {
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_STOP:     // a flushing seek
    case GST_EVENT_SEGMENT:        // a new segment
    case GST_EVENT_STREAM_START: {  // a new stream
      State& state = *GST_HAZEFREE(trans)->state;
      std::lock_guard guard(state.lock);
      state.reset_pending = true;
      break;
    }
    default: break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->sink_event(trans, event);
}

// Why the element cannot take `caps` (fixed), in words.
std::string refusal(GstCaps* caps) {
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  const GstCapsFeatures* features = gst_caps_get_features(caps, 0);
  const gchar* format = gst_structure_get_string(s, "format");
  const bool system_memory = !features || gst_caps_features_is_any(features) ||
                             gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
  if (!gst_structure_has_name(s, "video/x-raw"))
    return std::string("hazefree takes raw video (I420, NV12 or GRAY8), not ") + gst_structure_get_name(s) +
           ": decode it first";
  if (!system_memory) {
    const std::unique_ptr<gchar, decltype(&g_free)> text(gst_caps_features_to_string(features), g_free);
    return std::string("hazefree takes video in system memory, not ") + text.get() +
           ": put a download element (e.g. cudadownload) before it";
  }
  return std::string("hazefree takes I420, NV12 or GRAY8 video, not ") + (format ? format : "this format") +
         ": put videoconvert before it";
}

// Caps sent to the element that it cannot take (the caps event fails, and upstream with it): an
// error on the bus that says why, instead of only upstream's "not-negotiated".
gboolean accept_caps(GstBaseTransform* trans, GstPadDirection direction, GstCaps* caps) {
  const gboolean accepted =
      GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->accept_caps(trans, direction, caps);
  if (accepted || direction != GST_PAD_SINK || !gst_caps_is_fixed(caps)) return accepted;
  const std::unique_ptr<gchar, decltype(&g_free)> described(gst_caps_to_string(caps), g_free);
  GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("%s", refusal(caps).c_str()), ("refused caps: %s", described.get()));
  return accepted;
}

// Most upstream elements ask first what the element takes, with what they can give as the
// filter, and fail with "not-negotiated" when the answer is empty. When they can give only one
// kind of caps (one format, or one memory), the element says why on the bus: a warning, just
// before upstream's error (once per refused caps).
gboolean query(GstBaseTransform* trans, GstPadDirection direction, GstQuery* query) {
  const gboolean answered = GST_BASE_TRANSFORM_CLASS(gst_hazefree_parent_class)->query(trans, direction, query);
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
  State& state = *GST_HAZEFREE(trans)->state;
  {
    std::lock_guard guard(state.lock);
    if (state.last_refused == described.get()) return answered;
    state.last_refused = described.get();
  }
  GST_ELEMENT_WARNING(trans, STREAM, FORMAT, ("%s", refusal(filter).c_str()), ("refused caps: %s", described.get()));
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

void finalize(GObject* object) {
  GstHazefree* self = GST_HAZEFREE(object);
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

  gst_element_class_set_static_metadata(
      element_class, "hazefree", "Filter/Effect/Video",
      "Dehazing with the dark channel prior, global HE and sliding-window AHE/CLAHE (CPU or CUDA)", "hazefree");
  GstCaps* caps = gst_caps_from_string(
      (std::string("video/x-raw, format=(string)") + kFormats +
       ", width=(int)[1, 2147483647], height=(int)[1, 2147483647], framerate=(fraction)[0/1, 2147483647/1]")
          .c_str());
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);

  transform_class->start = start;
  transform_class->stop = stop;
  transform_class->sink_event = sink_event;
  transform_class->accept_caps = accept_caps;
  transform_class->query = query;
  filter_class->transform_frame = transform_frame;
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
