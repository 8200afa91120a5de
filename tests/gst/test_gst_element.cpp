// The GStreamer element `hazefree`: its properties against the options table, caps negotiation
// and refusal, exactness (HE on grey stills against cv::equalizeHist, DCP on the sample clip
// against the command line, frame by frame), the temporal state's resets on flush, new segment
// and new stream, EOS; in process through GstHarness and end to end through gst-launch-1.0.
#include <doctest/doctest.h>

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <hazefree/hazefree.hpp>

#include "io/media_reader.hpp"
#include "support/test_support.hpp"

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

namespace fs = std::filesystem;

// The plugin of this build, found through GST_PLUGIN_PATH (gst-launch-1.0 children inherit it).
void init_gstreamer() {
  static const bool done = [] {
    setenv("GST_PLUGIN_PATH", HAZEFREE_GST_PLUGIN_DIR, 1);
    setenv("GST_REGISTRY_1_0", HAZEFREE_GST_PLUGIN_DIR "/registry.bin", 1);
    gst_init(nullptr, nullptr);
    return true;
  }();
  (void)done;
  GstElementFactory* factory = gst_element_factory_find("hazefree");
  REQUIRE_MESSAGE(factory != nullptr, "the hazefree element is not in " HAZEFREE_GST_PLUGIN_DIR);
  gst_object_unref(factory);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Launched {
  int status = -1;
  std::string err;
};

// gst-launch-1.0 with `pipeline` (shell words), bounded by `timeout` seconds.
Launched gst_launch(const std::string& pipeline, int seconds = 120) {
  const std::string dir = hazefree::test::temp_dir("gst-launch-" + std::to_string(getpid()));
  const std::string err = dir + "/stderr";
  const std::string command = "timeout " + std::to_string(seconds) + " gst-launch-1.0 -q " + pipeline +
                              " >'" + dir + "/stdout' 2>'" + err + "' </dev/null";
  const int raw = std::system(command.c_str());
  Launched result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  result.err = slurp(err) + slurp(dir + "/stdout");  // gst-launch prints bus errors on stdout or stderr
  return result;
}

// A buffer of `bytes` bytes holding `content`.
GstBuffer* make_buffer(std::size_t bytes, const std::vector<std::uint8_t>& content) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  gst_buffer_fill(buffer, 0, content.data(), std::min(bytes, content.size()));
  return buffer;
}

std::vector<std::uint8_t> buffer_bytes(GstBuffer* buffer) {
  std::vector<std::uint8_t> bytes(gst_buffer_get_size(buffer));
  gst_buffer_extract(buffer, 0, bytes.data(), bytes.size());
  return bytes;
}

// A harness around one hazefree element made from a launch line ("hazefree mode=he ...").
struct Harness {
  GstHarness* h;
  explicit Harness(const std::string& launch, const std::string& caps) {
    h = gst_harness_new_parse(launch.c_str());
    REQUIRE(h != nullptr);
    gst_harness_set_src_caps_str(h, caps.c_str());
  }
  ~Harness() { gst_harness_teardown(h); }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  std::vector<std::uint8_t> process(const std::vector<std::uint8_t>& frame) {
    REQUIRE(gst_harness_push(h, make_buffer(frame.size(), frame)) == GST_FLOW_OK);
    GstBuffer* out = gst_harness_pull(h);
    REQUIRE(out != nullptr);
    std::vector<std::uint8_t> bytes = buffer_bytes(out);
    gst_buffer_unref(out);
    return bytes;
  }
};

// Tightly packed I420 of a hazy-looking scene: `level` sets how bright the haze is.
std::vector<std::uint8_t> i420_scene(int width, int height, int level, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::uint8_t> frame(static_cast<std::size_t>(width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      frame[static_cast<std::size_t>(y * width + x)] =
          static_cast<std::uint8_t>(std::min(235, level + (x * 40) / width + static_cast<int>(random() % 20)));
  for (std::size_t i = static_cast<std::size_t>(width * height); i < frame.size(); ++i)
    frame[i] = static_cast<std::uint8_t>(120 + random() % 16);
  return frame;
}

// The pictures of a y4m file (C420 layouts: each FRAME's bytes).
std::vector<std::string> y4m_frames(const std::string& bytes, std::size_t frame_bytes) {
  std::vector<std::string> frames;
  std::size_t at = bytes.find('\n');
  while (at != std::string::npos && at + 1 < bytes.size()) {
    const std::size_t header_end = bytes.find('\n', at + 1);
    if (header_end == std::string::npos || header_end + 1 + frame_bytes > bytes.size()) break;
    frames.push_back(bytes.substr(header_end + 1, frame_bytes));
    at = header_end + frame_bytes;
  }
  return frames;
}

const hazefree::ConfigKeyInfo* key_info(const std::string& name) {
  for (const hazefree::ConfigKeyInfo& info : hazefree::configuration_keys())
    if (info.name == name) return &info;
  return nullptr;
}

std::string property_of(const std::string& key) {
  std::string name = key.substr(key.rfind('.') + 1);
  for (char& c : name)
    if (c == '_') c = '-';
  return name;
}

}  // namespace

TEST_CASE("gst: the public key list describes each value's type, interval and choices") {
  const hazefree::ConfigKeyInfo* omega = key_info("dcp.omega");
  REQUIRE(omega != nullptr);
  CHECK(omega->kind == hazefree::ConfigKeyInfo::Kind::number);
  CHECK(omega->minimum == 0.0);
  CHECK(omega->minimum_excluded);
  CHECK(omega->maximum == 1.0);
  CHECK_FALSE(omega->maximum_excluded);
  CHECK(omega->processor_key);
  const hazefree::ConfigKeyInfo* window = key_info("ahe.window");
  REQUIRE(window != nullptr);
  CHECK(window->kind == hazefree::ConfigKeyInfo::Kind::integer);
  CHECK(window->minimum == 3.0);
  CHECK(window->maximum == 8191.0);
  const hazefree::ConfigKeyInfo* eps = key_info("dcp.gf_eps");
  REQUIRE(eps != nullptr);
  CHECK(std::isinf(eps->maximum));
  CHECK(eps->maximum_excluded);
  const hazefree::ConfigKeyInfo* mode = key_info("mode");
  REQUIRE(mode != nullptr);
  CHECK(mode->kind == hazefree::ConfigKeyInfo::Kind::choice);
  CHECK(mode->choices == std::vector<std::string>{"dcp", "he", "ahe"});
  CHECK(key_info("he.roi")->kind == hazefree::ConfigKeyInfo::Kind::text);
  CHECK_FALSE(key_info("input.timeout")->processor_key);
  CHECK_FALSE(key_info("output.crf")->processor_key);
  CHECK_FALSE(key_info("side_by_side")->processor_key);
  CHECK(key_info("threads")->processor_key);
  // Which modes' Processor uses each key; odd-only integers.
  CHECK(window->modes == std::vector<std::string>{"ahe"});
  CHECK(window->odd_only);
  CHECK_FALSE(key_info("dcp.patch_radius")->odd_only);
  CHECK(omega->modes == std::vector<std::string>{"dcp"});
  CHECK(key_info("color")->modes == std::vector<std::string>{"he", "ahe"});
  CHECK(mode->modes == std::vector<std::string>{"dcp", "he", "ahe"});
  for (const hazefree::ConfigKeyInfo& info : hazefree::configuration_keys()) {
    INFO("key " << info.name);
    CHECK(info.processor_key == !info.modes.empty());
  }
  // A key that takes words besides a number is text, its range in words.
  CHECK(key_info("input.reconnect")->kind == hazefree::ConfigKeyInfo::Kind::text);
  CHECK(key_info("input.reconnect")->range == "auto, unlimited or [0, 1000000]");
}

TEST_CASE("gst: every key a Processor uses is a property, with the table's type, range and default") {
  init_gstreamer();
  GstElement* element = gst_element_factory_make("hazefree", nullptr);
  REQUIRE(element != nullptr);
  GObjectClass* klass = G_OBJECT_GET_CLASS(element);
  // Each property's nick is its key; the keys of the file run (input.*, ...) are none of them.
  std::vector<std::string> nicks;
  guint count = 0;
  GParamSpec** specs = g_object_class_list_properties(klass, &count);
  for (guint i = 0; i < count; ++i) nicks.push_back(g_param_spec_get_nick(specs[i]));
  g_free(specs);
  int checked = 0;
  for (const hazefree::ConfigKeyInfo& info : hazefree::configuration_keys()) {
    GParamSpec* spec = g_object_class_find_property(klass, property_of(info.name).c_str());
    INFO("key " << info.name);
    if (!info.processor_key) {
      CHECK(std::find(nicks.begin(), nicks.end(), info.name) == nicks.end());
      continue;
    }
    REQUIRE(spec != nullptr);
    CHECK(std::string(g_param_spec_get_nick(spec)) == info.name);
    switch (info.kind) {
      case hazefree::ConfigKeyInfo::Kind::integer: {
        REQUIRE(G_IS_PARAM_SPEC_INT(spec));
        const GParamSpecInt* p = G_PARAM_SPEC_INT(spec);
        CHECK(p->default_value == std::stoi(info.default_value));
        CHECK(p->minimum == static_cast<int>(info.minimum));
        CHECK(p->maximum == static_cast<int>(info.maximum));
        break;
      }
      case hazefree::ConfigKeyInfo::Kind::number: {
        REQUIRE(G_IS_PARAM_SPEC_DOUBLE(spec));
        const GParamSpecDouble* p = G_PARAM_SPEC_DOUBLE(spec);
        CHECK(static_cast<float>(p->default_value) == std::stof(info.default_value));
        CHECK(p->minimum == info.minimum);
        if (!std::isinf(info.maximum)) CHECK(p->maximum == info.maximum);
        break;
      }
      case hazefree::ConfigKeyInfo::Kind::choice: {
        REQUIRE(G_IS_PARAM_SPEC_ENUM(spec));
        GEnumClass* values = G_PARAM_SPEC_ENUM(spec)->enum_class;
        REQUIRE(values->n_values == info.choices.size());
        for (guint i = 0; i < values->n_values; ++i) CHECK(values->values[i].value_nick == info.choices[i]);
        CHECK(values->values[G_PARAM_SPEC_ENUM(spec)->default_value].value_nick == info.default_value);
        break;
      }
      case hazefree::ConfigKeyInfo::Kind::boolean: CHECK(G_IS_PARAM_SPEC_BOOLEAN(spec)); break;
      case hazefree::ConfigKeyInfo::Kind::text: CHECK(G_IS_PARAM_SPEC_STRING(spec)); break;
    }
    ++checked;
  }
  CHECK(checked >= 20);
  // Ranges as the specification writes them.
  CHECK(G_PARAM_SPEC_INT(g_object_class_find_property(klass, "window"))->minimum == 3);
  CHECK(G_PARAM_SPEC_INT(g_object_class_find_property(klass, "window"))->maximum == 8191);
  CHECK(G_PARAM_SPEC_INT(g_object_class_find_property(klass, "patch-radius"))->default_value == 7);
  CHECK(G_PARAM_SPEC_DOUBLE(g_object_class_find_property(klass, "omega"))->maximum == 1.0);
  // Values set as properties are the keys' values.
  g_object_set(element, "mode", 2, "window", 127, "clip", 2.5, "roi", "1,2,30,40", nullptr);
  gint window = 0;
  gdouble clip = 0;
  gchar* roi = nullptr;
  gint mode = 0;
  g_object_get(element, "mode", &mode, "window", &window, "clip", &clip, "roi", &roi, nullptr);
  CHECK(mode == 2);
  CHECK(window == 127);
  CHECK(clip == 2.5);
  CHECK(std::string(roi) == "1,2,30,40");
  g_free(roi);
  gst_object_unref(element);

  const Launched inspect = [] {
    Launched r;
    const std::string dir = hazefree::test::temp_dir("gst-inspect-" + std::to_string(getpid()));
    r.status = std::system(("gst-inspect-1.0 hazefree >'" + dir + "/out' 2>&1").c_str());
    r.err = slurp(dir + "/out");
    return r;
  }();
  CHECK(inspect.status == 0);
  CHECK(inspect.err.find("patch-radius") != std::string::npos);
  CHECK(inspect.err.find("key dcp.patch_radius") != std::string::npos);
  CHECK(inspect.err.find("auto-strength") != std::string::npos);  // SPEC 13's boolean key
  CHECK(inspect.err.find("key dcp.auto_strength") != std::string::npos);
}

TEST_CASE("gst: auto-strength leaves a clear scene about as it is and dehazes a hazy one as the fixed strength") {
  init_gstreamer();
  const int width = 64, height = 48;
  const std::string caps = "video/x-raw,format=I420,width=64,height=48,framerate=25/1";
  const auto run = [&](const char* properties, const std::vector<std::uint8_t>& frame) {
    Harness harness(std::string("hazefree backend=cpu ") + properties, caps);
    return harness.process(frame);
  };
  // The summed change of the samples.
  const auto change = [](const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    REQUIRE(a.size() == b.size());
    long sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
    return sum;
  };
  // Clear: black stripes (luma 16) every 32 columns across a light grey scene, neutral chroma:
  // the darkest pixels are black, so the index is 0; pixels away from the stripes are dehazed
  // with the fixed strength. Hazy: the helper's veiled scene.
  std::vector<std::uint8_t> clear = i420_scene(width, height, 120, 5), hazy = i420_scene(width, height, 150, 5);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; x += 32)
      for (int k = 0; k < 2; ++k) clear[static_cast<std::size_t>(y * width + x + k)] = 16;
  for (std::size_t i = static_cast<std::size_t>(width * height); i < clear.size(); ++i) clear[i] = 128;
  const long fixed_change = change(run("", clear), clear);
  const long auto_change = change(run("auto-strength=true", clear), clear);
  INFO("summed change: fixed " << fixed_change << ", auto " << auto_change);
  CHECK(fixed_change > 0);
  CHECK(auto_change * 10 < fixed_change);
  CHECK(run("auto-strength=true", hazy) == run("auto-strength=false", hazy));
}

TEST_CASE("gst: I420, NV12 and GRAY8 are negotiated and processed, other sizes included") {
  init_gstreamer();
  struct Case {
    const char* format;
    int width, height;
  };
  const Case cases[] = {{"I420", 64, 48}, {"NV12", 33, 17}, {"GRAY8", 1, 1}, {"GRAY8", 3, 2}, {"I420", 5, 3}};
  for (const Case& c : cases) {
    INFO(c.format << " " << c.width << "x" << c.height);
    const std::string caps_text = std::string("video/x-raw,format=") + c.format + ",width=" + std::to_string(c.width) +
                                  ",height=" + std::to_string(c.height) + ",framerate=25/1";
    GstVideoInfo info;
    GstCaps* given = gst_caps_from_string(caps_text.c_str());
    REQUIRE(gst_video_info_from_caps(&info, given));
    gst_caps_unref(given);
    for (const char* mode : {"dcp", "he", "ahe"}) {
      Harness harness(std::string("hazefree backend=cpu window=3 mode=") + mode, caps_text);
      std::vector<std::uint8_t> frame(GST_VIDEO_INFO_SIZE(&info));
      for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<std::uint8_t>(16 + (i * 37) % 200);
      const std::vector<std::uint8_t> out = harness.process(frame);
      CHECK(out.size() == frame.size());
      GstCaps* caps = gst_pad_get_current_caps(harness.h->sinkpad);
      REQUIRE(caps != nullptr);
      CHECK(std::string(gst_structure_get_string(gst_caps_get_structure(caps, 0), "format")) == c.format);
      gst_caps_unref(caps);
    }
  }
}

namespace {

// Runs `launch` until EOS or an error; the bus's warnings and errors as "source: text" lines.
std::vector<std::string> bus_messages(GstElement* pipeline) {
  std::vector<std::string> lines;
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  for (;;) {
    GstMessage* message = gst_bus_timed_pop_filtered(
        bus, 20 * GST_SECOND,
        static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_EOS));
    if (!message) {
      lines.push_back("(timed out)");
      break;
    }
    const GstMessageType type = GST_MESSAGE_TYPE(message);
    if (type != GST_MESSAGE_EOS) {
      GError* error = nullptr;
      if (type == GST_MESSAGE_ERROR) gst_message_parse_error(message, &error, nullptr);
      else gst_message_parse_warning(message, &error, nullptr);
      lines.push_back(std::string(type == GST_MESSAGE_ERROR ? "error " : "warning ") +
                      GST_OBJECT_NAME(GST_MESSAGE_SRC(message)) + ": " + error->message);
      g_error_free(error);
    }
    gst_message_unref(message);
    if (type != GST_MESSAGE_WARNING) break;
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return lines;
}

}  // namespace

TEST_CASE("gst: a format it cannot take is refused with a clear message on the bus") {
  init_gstreamer();
  const std::string why = "hazefree takes I420, NV12, GRAY8, Y42B or Y444 video, not RGB: put videoconvert before it";
  SUBCASE("upstream asks first (most elements): a warning that says why, then upstream's error") {
    GstElement* pipeline = gst_pipeline_new(nullptr);
    GstElement* source = gst_element_factory_make("videotestsrc", nullptr);
    GstElement* rgb = gst_element_factory_make("capsfilter", nullptr);
    GstElement* filter = gst_element_factory_make("hazefree", "filter");
    GstElement* sink = gst_element_factory_make("fakesink", nullptr);
    GstCaps* caps = gst_caps_from_string("video/x-raw,format=RGB,width=64,height=48");
    g_object_set(source, "num-buffers", 3, nullptr);
    g_object_set(rgb, "caps", caps, nullptr);
    gst_caps_unref(caps);
    gst_bin_add_many(GST_BIN(pipeline), source, rgb, filter, sink, nullptr);
    REQUIRE(gst_element_link(source, rgb));
    // Linked without a check, as a pad that appears at run time may be.
    REQUIRE(gst_element_link_pads_full(rgb, "src", filter, "sink", GST_PAD_LINK_CHECK_NOTHING));
    REQUIRE(gst_element_link_pads_full(filter, "src", sink, "sink", GST_PAD_LINK_CHECK_NOTHING));
    const std::vector<std::string> lines = bus_messages(pipeline);
    INFO("bus: " << lines.size() << " messages, first: " << (lines.empty() ? "" : lines[0]));
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "warning filter: " + why);
    CHECK(lines[1].rfind("error ", 0) == 0);  // upstream's not-negotiated
  }
  SUBCASE("caps sent without asking: an error that says why") {
    // appsrc ! hazefree, linked without a check: appsrc sends its caps as they are.
    GstElement* pipeline = gst_pipeline_new(nullptr);
    GstElement* source = gst_element_factory_make("appsrc", nullptr);
    GstElement* filter = gst_element_factory_make("hazefree", "filter");
    GstElement* sink = gst_element_factory_make("fakesink", nullptr);
    GstCaps* caps = gst_caps_from_string("video/x-raw,format=RGB,width=4,height=2,framerate=25/1");
    g_object_set(source, "caps", caps, "format", GST_FORMAT_TIME, nullptr);
    gst_caps_unref(caps);
    gst_bin_add_many(GST_BIN(pipeline), source, filter, sink, nullptr);
    REQUIRE(gst_element_link_pads_full(source, "src", filter, "sink", GST_PAD_LINK_CHECK_NOTHING));
    REQUIRE(gst_element_link_pads_full(filter, "src", sink, "sink", GST_PAD_LINK_CHECK_NOTHING));
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstFlowReturn flow = GST_FLOW_OK;
    g_signal_emit_by_name(source, "push-buffer", gst_buffer_new_allocate(nullptr, 4 * 2 * 3, nullptr), &flow);
    g_signal_emit_by_name(source, "end-of-stream", &flow);
    const std::vector<std::string> lines = bus_messages(pipeline);
    REQUIRE(!lines.empty());
    CHECK(lines[0] == "error filter: " + why);
  }
}

TEST_CASE("gst: gst-launch-1.0 refuses to link it to a format it cannot take, and videoconvert before it works") {
  init_gstreamer();
  const Launched refused = gst_launch(
      "videotestsrc num-buffers=3 ! capsfilter caps=video/x-raw,format=RGB,width=64,height=48 ! hazefree ! fakesink");
  CHECK(refused.status != 0);
  CHECK(refused.err.find("could not link") != std::string::npos);
  CHECK(refused.err.find("hazefree") != std::string::npos);
  const Launched converted = gst_launch(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGB,width=64,height=48 ! videoconvert ! hazefree backend=cpu "
      "! fakesink");
  INFO(converted.err);
  CHECK(converted.status == 0);
}

TEST_CASE("gst: a value outside its key's range is an error on the bus naming the key") {
  init_gstreamer();
  // omega's range is (0, 1]: 0 passes the property's closed spec, the library refuses it.
  const Launched omega = gst_launch("videotestsrc num-buffers=2 ! video/x-raw,width=32,height=24 ! hazefree omega=0 "
                                    "backend=cpu ! fakesink");
  CHECK(omega.status != 0);
  CHECK(omega.err.find("dcp.omega = 0 is outside (0, 1]") != std::string::npos);
  const Launched window = gst_launch("videotestsrc num-buffers=2 ! video/x-raw,width=32,height=24 ! hazefree mode=ahe "
                                     "window=4 backend=cpu ! fakesink");
  CHECK(window.status != 0);
  CHECK(window.err.find("ahe.window") != std::string::npos);
  // Outside the property's own range: GLib refuses the value and the default stays.
  GstElement* element = gst_element_factory_make("hazefree", nullptr);
  GValue value = G_VALUE_INIT;
  g_value_init(&value, G_TYPE_INT);
  g_value_set_int(&value, 2000);
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), "patch-radius");
  CHECK(g_param_value_validate(spec, &value));  // clamped: 2000 is not a valid patch-radius
  CHECK(g_value_get_int(&value) == 1000);
  g_value_unset(&value);
  gst_object_unref(element);
}

TEST_CASE("gst: the temporal state restarts on flush, new segment and new stream, not otherwise") {
  init_gstreamer();
  const int width = 64, height = 48;
  Harness harness("hazefree backend=cpu mode=dcp", "video/x-raw,format=I420,width=64,height=48,framerate=25/1");
  // A bright haze, then darker pictures (not so dark that it counts as a scene cut): the
  // atmospheric light moves towards them by at most a_max_step per frame, so the bright picture
  // after them is processed with another light.
  const std::vector<std::uint8_t> bright = i420_scene(width, height, 180, 1);
  const std::vector<std::uint8_t> dark = i420_scene(width, height, 140, 2);
  std::vector<std::vector<std::uint8_t>> first;
  first.push_back(harness.process(bright));
  for (int i = 0; i < 3; ++i) first.push_back(harness.process(dark));
  // Without a reset the bright picture comes out differently: the state matters.
  CHECK(harness.process(bright) != first[0]);

  auto replay = [&] {
    CHECK(harness.process(bright) == first[0]);
    for (int i = 0; i < 3; ++i) CHECK(harness.process(dark) == first[static_cast<std::size_t>(i + 1)]);
  };
  SUBCASE("flush (a flushing seek)") {
    CHECK(gst_harness_push_event(harness.h, gst_event_new_flush_start()));
    CHECK(gst_harness_push_event(harness.h, gst_event_new_flush_stop(TRUE)));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    CHECK(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
    replay();
  }
  SUBCASE("new segment") {
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    segment.base = 10 * GST_SECOND;
    CHECK(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
    replay();
  }
  SUBCASE("new stream") {
    CHECK(gst_harness_push_event(harness.h, gst_event_new_stream_start("another")));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    CHECK(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
    replay();
  }
}

TEST_CASE("gst: EOS passes through after the last frame, and a pipeline ends cleanly") {
  init_gstreamer();
  Harness harness("hazefree backend=cpu mode=he", "video/x-raw,format=GRAY8,width=16,height=8,framerate=25/1");
  std::vector<std::uint8_t> frame(16 * 8);
  for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<std::uint8_t>(i);
  harness.process(frame);
  CHECK(gst_harness_push_event(harness.h, gst_event_new_eos()));
  bool eos = false;
  while (GstEvent* event = gst_harness_try_pull_event(harness.h)) {
    if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) eos = true;
    gst_event_unref(event);
  }
  CHECK(eos);
  const Launched run = gst_launch("videotestsrc num-buffers=20 ! video/x-raw,format=NV12,width=96,height=64 ! "
                                  "hazefree backend=cpu ! fakesink sync=false");
  INFO(run.err);
  CHECK(run.status == 0);
}

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("gst: HE on grey stills equals OpenCV's equalizeHist (harness, and gst-launch-1.0 on PNG files)") {
  init_gstreamer();
  std::mt19937 random(7);
  for (const auto [width, height] : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {97, 61}, {640, 480}}) {
    INFO(width << "x" << height);
    cv::Mat grey(height, width, CV_8UC1);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        grey.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(40 + (x + 2 * y) % 90 + random() % 30);
    cv::Mat expected;
    cv::equalizeHist(grey, expected);
    // GStreamer's GRAY8 rows are padded to 4 bytes.
    const int stride = (width + 3) / 4 * 4;
    std::vector<std::uint8_t> frame(static_cast<std::size_t>(stride * height), 0);
    for (int y = 0; y < height; ++y) std::memcpy(&frame[static_cast<std::size_t>(y * stride)], grey.ptr(y), width);
    Harness harness("hazefree backend=cpu mode=he color=grey",
                    "video/x-raw,format=GRAY8,width=" + std::to_string(width) + ",height=" + std::to_string(height) +
                        ",framerate=0/1");
    const std::vector<std::uint8_t> out = harness.process(frame);
    REQUIRE(out.size() == frame.size());
    int differences = 0;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        differences += out[static_cast<std::size_t>(y * stride + x)] != expected.at<std::uint8_t>(y, x);
    CHECK(differences == 0);
  }

  // End to end: PNG files through pngdec ! hazefree ! pngenc.
  const std::string dir = hazefree::test::temp_dir("gst-he-png-" + std::to_string(getpid()));
  for (const std::string& name : {std::string("street-grey"), std::string("gradient")}) {
    cv::Mat grey(241, 317, CV_8UC1);
    for (int y = 0; y < grey.rows; ++y)
      for (int x = 0; x < grey.cols; ++x)
        grey.at<std::uint8_t>(y, x) =
            static_cast<std::uint8_t>(name == "gradient" ? 60 + (x + y) / 8 : 80 + ((x * 7) ^ (y * 3)) % 70);
    const std::string in = dir + "/" + name + ".png", out = dir + "/" + name + "-he.png";
    REQUIRE(cv::imwrite(in, grey));
    const Launched run = gst_launch("filesrc location='" + in + "' ! pngdec ! hazefree backend=cpu mode=he color=grey ! "
                                    "pngenc ! filesink location='" + out + "'");
    INFO(run.err);
    REQUIRE(run.status == 0);
    cv::Mat expected, got = cv::imread(out, cv::IMREAD_UNCHANGED);
    cv::equalizeHist(grey, expected);
    REQUIRE(got.type() == CV_8UC1);
    CHECK(cv::countNonZero(got != expected) == 0);
  }
}
#endif

TEST_CASE("gst: DCP on the sample clip equals the command line frame by frame") {
  init_gstreamer();
  // The clip's first pictures, decoded once, as raw I420 (the input of both).
  const std::string dir = hazefree::test::temp_dir("gst-dcp-clip-" + std::to_string(getpid()));
  const std::string raw = dir + "/clip.yuv";
  hazefree::io::InputOptions input;
  input.url = hazefree::test::sample_path("hazy-street.mp4");
  hazefree::io::MediaReader reader(input);
  const int width = reader.video().width, height = reader.video().height;
  REQUIRE(reader.video().format == hazefree::PixelFormat::yuv420p);
  const std::size_t frame_bytes = static_cast<std::size_t>(width * height + 2 * (width / 2) * (height / 2));
  constexpr int kFrames = 12;
  {
    std::ofstream out(raw, std::ios::binary);
    int frames = 0;
    while (frames < kFrames) {
      const auto item = reader.read();
      if (item == hazefree::io::MediaReader::Item::end) break;
      if (item != hazefree::io::MediaReader::Item::video_frame) {
        reader.take_packet();
        continue;
      }
      const hazefree::ImageView& v = reader.frame().view;
      for (int p = 0; p < 3; ++p)
        for (int y = 0; y < v.planes[p].height; ++y)
          out.write(reinterpret_cast<const char*>(v.planes[p].data + static_cast<std::ptrdiff_t>(y) * v.planes[p].stride),
                    v.planes[p].width);
      ++frames;
    }
    REQUIRE(frames == kFrames);
  }
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  const std::string cli_out = dir + "/cli.y4m", gst_out = dir + "/gst.yuv";
  const std::string command = std::string("'") + HAZEFREE_BINARY + "' -q -y -b cpu --input-format rawvideo --set input.size=" +
                              size + " --set input.pixel_format=yuv420p --set input.framerate=25 '" + raw + "' '" +
                              cli_out + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  const Launched run = gst_launch("filesrc location='" + raw + "' ! rawvideoparse format=i420 width=" +
                                  std::to_string(width) + " height=" + std::to_string(height) +
                                  " framerate=25/1 colorimetry=bt601 ! hazefree backend=cpu mode=dcp ! filesink location='" +
                                  gst_out + "'");
  INFO(run.err);
  REQUIRE(run.status == 0);
  const std::vector<std::string> cli = y4m_frames(slurp(cli_out), frame_bytes);
  const std::string gst = slurp(gst_out);
  REQUIRE(cli.size() == kFrames);
  REQUIRE(gst.size() == frame_bytes * kFrames);
  for (std::size_t i = 0; i < cli.size(); ++i) {
    INFO("frame " << i);
    CHECK(gst.compare(i * frame_bytes, frame_bytes, cli[i]) == 0);
  }
  // And the frames are not the input (the filter did something).
  CHECK(gst.compare(0, frame_bytes, slurp(raw), 0, frame_bytes) != 0);
}

namespace {

// appsrc ! hazefree ! fakesink with `caps` sent as they are (no caps query first), one buffer of
// `bytes` bytes and EOS: the bus's warnings and errors.
std::vector<std::string> push_with_caps(const std::string& caps_text, const std::string& properties, std::size_t bytes) {
  GstElement* pipeline = gst_pipeline_new(nullptr);
  GstElement* source = gst_element_factory_make("appsrc", nullptr);
  GstElement* filter = gst_parse_bin_from_description(("hazefree name=filter " + properties).c_str(), FALSE, nullptr);
  GstElement* sink = gst_element_factory_make("fakesink", nullptr);
  REQUIRE(filter != nullptr);
  GstElement* element = gst_bin_get_by_name(GST_BIN(filter), "filter");
  gst_object_ref(element);
  gst_bin_remove(GST_BIN(filter), element);
  gst_object_unref(filter);
  GstCaps* caps = gst_caps_from_string(caps_text.c_str());
  g_object_set(source, "caps", caps, "format", GST_FORMAT_TIME, nullptr);
  gst_caps_unref(caps);
  gst_bin_add_many(GST_BIN(pipeline), source, element, sink, nullptr);
  gst_object_unref(element);
  REQUIRE(gst_element_link_pads_full(source, "src", element, "sink", GST_PAD_LINK_CHECK_NOTHING));
  REQUIRE(gst_element_link_pads_full(element, "src", sink, "sink", GST_PAD_LINK_CHECK_NOTHING));
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstFlowReturn flow = GST_FLOW_OK;
  g_signal_emit_by_name(source, "push-buffer", gst_buffer_new_allocate(nullptr, bytes, nullptr), &flow);
  g_signal_emit_by_name(source, "end-of-stream", &flow);
  return bus_messages(pipeline);
}

bool caps_have_cuda_memory(GstCaps* caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstCapsFeatures* features = gst_caps_get_features(caps, i);
    if (features && !gst_caps_features_is_any(features) && gst_caps_features_contains(features, "memory:CUDAMemory"))
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("gst: memory:CUDAMemory without a GPU or on the CPU backend is refused with a clear error on the bus") {
  init_gstreamer();
  std::string why_no_gpu;
  if (hazefree::gpu_available(&why_no_gpu)) {
    MESSAGE("a usable GPU is present: the refusal without one is checked on machines without (gpu-check-gst.sh "
            "runs the CUDA memory path)");
  }
  const std::string cuda_caps = "video/x-raw(memory:CUDAMemory),format=NV12,width=64,height=48,framerate=25/1";
  GstElement* element = gst_element_factory_make("hazefree", nullptr);
  REQUIRE(element != nullptr);
  GstPad* sink = gst_element_get_static_pad(element, "sink");
  GstCaps* templ = gst_pad_get_pad_template_caps(sink);
#ifdef HAZEFREE_GST_CUDA
  // Offered on the CUDA backend (first, so that nvh264dec keeps its frames on the GPU), not with
  // backend=cpu.
  CHECK(caps_have_cuda_memory(templ));
  GstCaps* offered = gst_pad_query_caps(sink, nullptr);
  CHECK(caps_have_cuda_memory(offered));
  gst_caps_unref(offered);
  g_object_set(element, "backend", 2, nullptr);  // cpu
  {
    gint backend = -1;
    g_object_get(element, "backend", &backend, nullptr);
    GEnumValue* value = g_enum_get_value(G_ENUM_CLASS(g_type_class_peek(G_PARAM_SPEC_VALUE_TYPE(
                                             g_object_class_find_property(G_OBJECT_GET_CLASS(element), "backend")))),
                                         backend);
    REQUIRE(value != nullptr);
    REQUIRE(std::string(value->value_nick) == "cpu");
  }
  offered = gst_pad_query_caps(sink, nullptr);
  CHECK_FALSE(caps_have_cuda_memory(offered));
  CHECK(gst_caps_get_size(offered) > 0);
  gst_caps_unref(offered);
#else
  CHECK_FALSE(caps_have_cuda_memory(templ));
#endif
  gst_caps_unref(templ);
  gst_object_unref(sink);
  gst_object_unref(element);

  // NV12 64x48 in CUDA memory, sent without asking first.
  const std::size_t bytes = 64 * 48 * 3 / 2;
  const std::vector<std::string> lines = push_with_caps(cuda_caps, "", bytes);
  INFO("bus: " << lines.size() << " messages, first: " << (lines.empty() ? "" : lines[0]));
  REQUIRE(!lines.empty());
#ifdef HAZEFREE_GST_CUDA
  if (why_no_gpu.empty()) {
    // With a GPU the caps are taken; appsrc's buffer is system memory under CUDA caps, which
    // the element names (the CUDA pipelines themselves run in gpu-check-gst.sh).
    CHECK(lines[0].find("not CUDA memory") != std::string::npos);
  } else {
    CHECK(lines[0] == "error filter: hazefree cannot take memory:CUDAMemory: " + why_no_gpu +
                          ": put cudadownload before it, or give it system memory");
  }
  const std::vector<std::string> cpu = push_with_caps(cuda_caps, "backend=cpu", bytes);
  REQUIRE(!cpu.empty());
  CHECK(cpu[0] == "error filter: hazefree backend=cpu cannot take memory:CUDAMemory (it needs the CUDA backend): "
                  "put cudadownload before it, or give it system memory");
#else
  CHECK(lines[0] == "error filter: hazefree takes video in system memory, not memory:CUDAMemory (built without "
                    "gst-plugins-bad's CUDA library): put a download element (e.g. cudadownload) before it");
#endif
}

TEST_CASE("gst: the lanes: frames leave in order, at once on the CPU backend, equal to Processor::process") {
  init_gstreamer();
  // The public API first: no lanes on the CPU backend, enqueue() processes at once.
  hazefree::Processor direct({{"backend", "cpu"}, {"mode", "dcp"}});
  CHECK(direct.lanes() == 0);
  const int width = 64, height = 48;
  const std::string caps = "video/x-raw,format=I420,width=64,height=48,framerate=25/1";
  std::vector<std::vector<std::uint8_t>> frames, expected;
  for (int i = 0; i < 6; ++i) frames.push_back(i420_scene(width, height, 130 + 10 * i, static_cast<unsigned>(i)));
  hazefree::Processor lanes({{"backend", "cpu"}, {"mode", "dcp"}});
  for (const std::vector<std::uint8_t>& frame : frames) {
    std::vector<std::uint8_t> in = frame, out(frame.size()), queued(frame.size());
    auto view = [&](std::vector<std::uint8_t>& bytes) {
      std::uint8_t* y = bytes.data();
      std::uint8_t* u = y + width * height;
      std::uint8_t* v = u + (width / 2) * (height / 2);
      return hazefree::Frame::i420(y, width, u, width / 2, v, width / 2, width, height);
    };
    direct.process(view(in), view(out));
    lanes.enqueue(0, view(in), view(queued));
    lanes.wait(0);
    CHECK(queued == out);
    expected.push_back(out);
  }
  CHECK_THROWS_AS(lanes.wait(1), std::out_of_range);

  // The element, with either lanes setting: each frame comes out before the next goes in.
  for (const char* setting : {"lanes=1", "lanes=2"}) {
    INFO(setting);
    Harness harness(std::string("hazefree backend=cpu mode=dcp ") + setting, caps);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      GstBuffer* in = make_buffer(frames[i].size(), frames[i]);
      GST_BUFFER_PTS(in) = i * 40 * GST_MSECOND;
      GST_BUFFER_DURATION(in) = 40 * GST_MSECOND;
      REQUIRE(gst_harness_push(harness.h, in) == GST_FLOW_OK);
      GstBuffer* out = gst_harness_try_pull(harness.h);
      REQUIRE(out != nullptr);
      CHECK(buffer_bytes(out) == expected[i]);
      CHECK(GST_BUFFER_PTS(out) == i * 40 * GST_MSECOND);  // its own frame, in order
      CHECK(GST_BUFFER_DURATION(out) == 40 * GST_MSECOND);
      gst_buffer_unref(out);
    }
    // A drain query and EOS find nothing held back.
    GstQuery* drain = gst_query_new_drain();
    CHECK(gst_pad_peer_query(harness.h->srcpad, drain));
    gst_query_unref(drain);
    CHECK(gst_harness_buffers_in_queue(harness.h) == 0);
  }
  GstElement* element = gst_element_factory_make("hazefree", nullptr);
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), "lanes");
  REQUIRE(spec != nullptr);
  CHECK(G_PARAM_SPEC_INT(spec)->minimum == 1);
  CHECK(G_PARAM_SPEC_INT(spec)->maximum == 2);
  CHECK(G_PARAM_SPEC_INT(spec)->default_value == 2);
  gst_object_unref(element);
}

// ---- high bit depth (SPEC 7) ------------------------------------------------------------------

namespace {

// The library's frame over the planes of one raw GStreamer frame of `info` at `data`.
hazefree::Frame library_frame(const GstVideoInfo& info, std::uint8_t* data) {
  auto plane = [&](int i) { return data + GST_VIDEO_INFO_PLANE_OFFSET(&info, i); };
  auto stride = [&](int i) { return static_cast<std::ptrdiff_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, i)); };
  const int w = GST_VIDEO_INFO_WIDTH(&info), h = GST_VIDEO_INFO_HEIGHT(&info);
  const int depth = static_cast<int>(GST_VIDEO_INFO_COMP_DEPTH(&info, 0));
  hazefree::Frame f;
  switch (GST_VIDEO_INFO_FORMAT(&info)) {
    case GST_VIDEO_FORMAT_I420_10LE:
      f = hazefree::Frame::i420(plane(0), stride(0), plane(1), stride(1), plane(2), stride(2), w, h, depth);
      break;
    case GST_VIDEO_FORMAT_P010_10LE:
    case GST_VIDEO_FORMAT_P016_LE: f = hazefree::Frame::nv12(plane(0), stride(0), plane(1), stride(1), w, h, depth); break;
    case GST_VIDEO_FORMAT_Y444_16LE:
      f = hazefree::Frame::yuv444p(plane(0), stride(0), plane(1), stride(1), plane(2), stride(2), w, h, depth);
      break;
    case GST_VIDEO_FORMAT_GRAY16_LE: f = hazefree::Frame::gray16(plane(0), w, h, stride(0), depth); break;
    default: FAIL("format not covered by the test"); break;
  }
  // The caps below say bt709 (limited range for YUV); GRAY16 is full range.
  f.matrix = hazefree::FrameMatrix::bt709;
  f.range = GST_VIDEO_INFO_IS_YUV(&info) ? hazefree::FrameRange::limited : hazefree::FrameRange::full;
  return f;
}

// Samples of two bytes, as values.
std::vector<std::uint16_t> samples16(const std::string& bytes, std::size_t offset, std::size_t count) {
  std::vector<std::uint16_t> values(count);
  std::memcpy(values.data(), bytes.data() + offset, count * 2);
  return values;
}

}  // namespace

TEST_CASE("gst: 10-bit I420 from videotestsrc through hazefree mode=he equals the library at 10 bits") {
  init_gstreamer();
  const std::string dir = hazefree::test::temp_dir("gst-i420-10");
  const std::string in_raw = dir + "/in.raw", out_raw = dir + "/out.raw";
  constexpr int kFrames = 6, kWidth = 96, kHeight = 64;
  // One source, teed: the element's input and output of the same frames, each written as is.
  const std::string caps = "video/x-raw,format=I420_10LE,width=" + std::to_string(kWidth) +
                           ",height=" + std::to_string(kHeight) + ",framerate=25/1,colorimetry=bt709";
  const Launched run = gst_launch("videotestsrc num-buffers=" + std::to_string(kFrames) + " horizontal-speed=3 ! " + caps +
                                  " ! tee name=t t. ! queue ! filesink location='" + in_raw +
                                  "' t. ! queue ! hazefree backend=cpu mode=he ! " + caps +
                                  " ! filesink location='" + out_raw + "'");
  INFO(run.err);
  REQUIRE(run.status == 0);
  GstVideoInfo info;
  REQUIRE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420_10LE, kWidth, kHeight));
  const std::size_t frame_bytes = GST_VIDEO_INFO_SIZE(&info);
  std::string in = slurp(in_raw);
  const std::string out = slurp(out_raw);
  REQUIRE(in.size() == frame_bytes * kFrames);
  REQUIRE(out.size() == in.size());
  hazefree::Processor he({{"mode", "he"}, {"backend", "cpu"}});
  std::vector<std::uint8_t> expected(frame_bytes);
  for (int i = 0; i < kFrames; ++i) {
    INFO("frame " << i);
    auto* frame = reinterpret_cast<std::uint8_t*>(in.data()) + i * frame_bytes;
    std::fill(expected.begin(), expected.end(), 0);
    he.process(library_frame(info, frame), library_frame(info, expected.data()));
    const std::size_t y_offset = i * frame_bytes + GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
    const std::size_t y_samples = static_cast<std::size_t>(kWidth) * kHeight;  // rows unpadded at this width
    REQUIRE(GST_VIDEO_INFO_PLANE_STRIDE(&info, 0) == kWidth * 2);
    CHECK(out.compare(y_offset, y_samples * 2, reinterpret_cast<const char*>(expected.data()), y_samples * 2) == 0);
    // Chroma is kept (luma HE), and the luma is equalized at 10 bits: more than 256 codes, all legal.
    CHECK(out.compare(i * frame_bytes + GST_VIDEO_INFO_PLANE_OFFSET(&info, 1),
                      frame_bytes - GST_VIDEO_INFO_PLANE_OFFSET(&info, 1), in,
                      i * frame_bytes + GST_VIDEO_INFO_PLANE_OFFSET(&info, 1),
                      frame_bytes - GST_VIDEO_INFO_PLANE_OFFSET(&info, 1)) == 0);
    const std::vector<std::uint16_t> luma = samples16(out, y_offset, y_samples);
    const std::vector<std::uint16_t> before = samples16(in, y_offset, y_samples);
    CHECK(luma != before);
    CHECK(*std::max_element(luma.begin(), luma.end()) <= 940);  // 235 << 2: limited range kept
    CHECK(*std::min_element(luma.begin(), luma.end()) >= 64);   // 16 << 2
  }
}

TEST_CASE("gst: P010, P016, Y444_16LE and GRAY16_LE frames are processed at their depth as the library does") {
  init_gstreamer();
  struct Case {
    const char* format;
    GstVideoFormat video_format;
    const char* properties;    // of the element
    hazefree::Options options;  // the same for the library
  };
  const std::vector<Case> cases = {
      {"P010_10LE", GST_VIDEO_FORMAT_P010_10LE, "mode=dcp gf-radius=8", {{"mode", "dcp"}, {"dcp.gf_radius", "8"}}},
      {"P016_LE", GST_VIDEO_FORMAT_P016_LE, "mode=he color=rgb", {{"mode", "he"}, {"color", "rgb"}}},
      {"Y444_16LE", GST_VIDEO_FORMAT_Y444_16LE, "mode=ahe window=15 clip=2",
       {{"mode", "ahe"}, {"ahe.window", "15"}, {"ahe.clip", "2"}}},
      {"GRAY16_LE", GST_VIDEO_FORMAT_GRAY16_LE, "mode=he", {{"mode", "he"}}},
  };
  for (const Case& c : cases) {
    INFO(c.format << " " << c.properties);
    const int width = 64, height = 48;
    GstVideoInfo info;
    REQUIRE(gst_video_info_set_format(&info, c.video_format, width, height));
    const int depth = static_cast<int>(GST_VIDEO_INFO_COMP_DEPTH(&info, 0));
    // Plausible codes of the format's depth in every component: a hazy gradient with noise,
    // chroma near neutral; P010/P016 hold them in the high bits.
    std::vector<std::uint8_t> frame(GST_VIDEO_INFO_SIZE(&info), 0);
    std::mt19937 random(static_cast<unsigned>(depth));
    const int s = depth - 8;
    for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
      const int rows = GST_VIDEO_INFO_COMP_HEIGHT(&info, p);
      const int samples = GST_VIDEO_INFO_PLANE_STRIDE(&info, p) / 2;
      for (int y = 0; y < rows; ++y)
        for (int x = 0; x < samples; ++x) {
          const bool luma = p == 0;
          int value = luma ? (150 << s) + ((x * 60) << s) / width + static_cast<int>(random() % (16u << s))
                           : (120 << s) + static_cast<int>(random() % (16u << s));
          if (c.video_format == GST_VIDEO_FORMAT_P010_10LE || c.video_format == GST_VIDEO_FORMAT_P016_LE)
            value <<= 16 - depth;
          const auto sample = static_cast<std::uint16_t>(value);
          std::memcpy(frame.data() + GST_VIDEO_INFO_PLANE_OFFSET(&info, p) +
                          static_cast<std::size_t>(y) * GST_VIDEO_INFO_PLANE_STRIDE(&info, p) + 2 * x,
                      &sample, 2);
        }
    }
    hazefree::Options options = c.options;
    options["backend"] = "cpu";
    hazefree::Processor processor(options);
    std::vector<std::uint8_t> expected(frame.size(), 0);
    processor.process(library_frame(info, frame.data()), library_frame(info, expected.data()));
    CHECK(expected != frame);

    const std::string colorimetry = GST_VIDEO_INFO_IS_YUV(&info) ? ",colorimetry=bt709" : "";
    Harness harness(std::string("hazefree backend=cpu ") + c.properties,
                    std::string("video/x-raw,format=") + c.format + ",width=64,height=48,framerate=25/1" + colorimetry);
    CHECK(harness.process(frame) == expected);
  }
}

TEST_CASE("gst: a deep format it cannot take is refused with the deep formats it takes") {
  init_gstreamer();
  const std::vector<std::string> lines = push_with_caps("video/x-raw,format=I420_10BE,width=4,height=2,framerate=25/1",
                                                        "backend=cpu", 4 * 2 * 2 * 3 / 2);
  REQUIRE(!lines.empty());
  CHECK(lines[0] == "error filter: hazefree takes I420, NV12, GRAY8, Y42B or Y444 video, or at 10 to 16 bits I420_10LE, "
                    "I420_12LE, I422_10LE, I422_12LE, Y444_10LE, Y444_12LE, Y444_16LE, P010_10LE, P012_LE, P016_LE "
                    "or GRAY16_LE, not I420_10BE: put videoconvert before it");
}
