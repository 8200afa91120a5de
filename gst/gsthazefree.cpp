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
//
// This file is the element (its vfuncs, caps, queries and the properties' values); beside it
// gsthazefree_element.hpp (its state), gsthazefree_lanes.cpp (frames in flight on the lanes),
// gsthazefree_cuda.cpp (frames in CUDA memory), gsthazefree_properties (the properties from the
// options table), gsthazefree_formats (the format list and the frames of the public API) and
// gsthazefree_pinned (the page-locked output buffers).
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

#include "gsthazefree_element.hpp"
#include "gsthazefree_formats.hpp"
#include "gsthazefree_pinned.hpp"
#include "gsthazefree_properties.hpp"

GST_DEBUG_CATEGORY(gst_hazefree_debug);

namespace {

using namespace hazefree_gst;

static_assert(G_BYTE_ORDER == G_LITTLE_ENDIAN, "the element's high-depth formats are the little-endian ones");

}  // namespace

G_DEFINE_TYPE(GstHazefree, gst_hazefree, GST_TYPE_VIDEO_FILTER)

gpointer hazefree_gst::element_parent_class() { return gst_hazefree_parent_class; }

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

}  // namespace

// Makes the processor from the current options (again after a property changed, which also
// starts the temporal state afresh, and when frames move between system and CUDA memory);
// false after posting an error naming the key or the cause.
bool hazefree_gst::ensure_processor(GstHazefree* self) {
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

namespace {

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

}  // namespace

bool hazefree_gst::has_cuda_memory(GstCaps* caps, guint i) {
  const GstCapsFeatures* features = gst_caps_get_features(caps, i);
  return features && !gst_caps_features_is_any(features) && gst_caps_features_contains(features, kCudaMemory);
}

namespace {

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
