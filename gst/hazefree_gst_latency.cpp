// hazefree-gst-latency: the latency an element adds on a live pipeline, measured per buffer
// between two identity elements around it (`identity name=before` and `identity name=after` in
// the launch line), as the pipeline clock reads when each buffer passes them (matched by PTS).
// GStreamer's latency tracer is not used: it sends a serialized event after every buffer, which
// makes the hazefree element push the frames its lanes hold at once.
//   hazefree-gst-latency SKIP 'videotestsrc is-live=true num-buffers=330 ! ... ! identity name=before !
//                              hazefree ! identity name=after ! fakesink sync=false'
// Prints "N frames: median X ms, p95 Y ms, max Z ms" (the first SKIP buffers left out); exit
// status 1 with one line on an error.
#include <gst/gst.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace {

struct Times {
  std::mutex lock;
  GstClock* clock = nullptr;
  std::map<GstClockTime, GstClockTime> entered;  // PTS -> clock time at `before`
  std::vector<double> ms;                         // in buffer order, at `after`
};

GstClockTime now(Times& t) { return t.clock ? gst_clock_get_time(t.clock) : g_get_monotonic_time() * 1000; }

void on_before(GstElement*, GstBuffer* buffer, gpointer data) {
  auto& t = *static_cast<Times*>(data);
  std::lock_guard guard(t.lock);
  t.entered[GST_BUFFER_PTS(buffer)] = now(t);
}

void on_after(GstElement*, GstBuffer* buffer, gpointer data) {
  auto& t = *static_cast<Times*>(data);
  std::lock_guard guard(t.lock);
  const GstClockTime at = now(t);
  auto it = t.entered.find(GST_BUFFER_PTS(buffer));
  if (it == t.entered.end()) return;
  t.ms.push_back(static_cast<double>(at - it->second) / 1e6);
  t.entered.erase(it);
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: hazefree-gst-latency SKIP 'launch line with identity name=before and name=after'\n");
    return 2;
  }
  const std::size_t skip = static_cast<std::size_t>(std::atoi(argv[1]));
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(argv[2], &error);
  if (!pipeline || error) {
    std::fprintf(stderr, "hazefree-gst-latency: %s\n", error ? error->message : "cannot make the pipeline");
    return 1;
  }
  GstElement* before = gst_bin_get_by_name(GST_BIN(pipeline), "before");
  GstElement* after = gst_bin_get_by_name(GST_BIN(pipeline), "after");
  if (!before || !after) {
    std::fprintf(stderr, "hazefree-gst-latency: the launch line needs identity name=before and identity name=after\n");
    return 1;
  }
  Times times;
  g_object_set(before, "signal-handoffs", TRUE, nullptr);
  g_object_set(after, "signal-handoffs", TRUE, nullptr);
  g_signal_connect(before, "handoff", G_CALLBACK(on_before), &times);
  g_signal_connect(after, "handoff", G_CALLBACK(on_after), &times);
  times.clock = gst_system_clock_obtain();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                                   static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
  int status = 0;
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    GError* e = nullptr;
    gst_message_parse_error(message, &e, nullptr);
    std::fprintf(stderr, "hazefree-gst-latency: %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), e->message);
    g_error_free(e);
    status = 1;
  }
  gst_message_unref(message);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  std::vector<double> ms;
  {
    std::lock_guard guard(times.lock);
    if (times.ms.size() > skip) ms.assign(times.ms.begin() + static_cast<std::ptrdiff_t>(skip), times.ms.end());
  }
  if (status == 0 && ms.empty()) {
    std::fprintf(stderr, "hazefree-gst-latency: no buffer passed both identity elements after the first %zu\n", skip);
    status = 1;
  }
  if (status == 0) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
    std::printf("%zu frames: median %.3f ms, p95 %.3f ms, max %.3f ms\n", ms.size(), at(0.5), at(0.95), ms.back());
  }
  gst_object_unref(before);
  gst_object_unref(after);
  gst_object_unref(bus);
  gst_object_unref(times.clock);
  gst_object_unref(pipeline);
  return status;
}
