// The frames in flight on the processor's lanes (system memory): frame n is processed while
// frame n-1 is downloaded and pushed, into page-locked output buffers.
#include <algorithm>
#include <exception>

#include "gsthazefree_element.hpp"
#include "gsthazefree_formats.hpp"

namespace hazefree_gst {
namespace {

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

}  // namespace

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

namespace {

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
    const GstFlowReturn ret = GST_BASE_TRANSFORM_CLASS(element_parent_class())->prepare_output_buffer(trans, in, &out);
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

}  // namespace

// System memory: the input queued by submit_input_buffer goes to a lane; the oldest frame leaves
// once the lanes are full (at once on the CPU backend or with lanes=1). CUDA memory: the base
// class's one frame at a time (transform below).
GstFlowReturn generate_output(GstBaseTransform* trans, GstBuffer** out) {
  GstHazefree* self = GST_HAZEFREE(trans);
  State& state = *self->state;
  if (state.cuda_memory) return GST_BASE_TRANSFORM_CLASS(element_parent_class())->generate_output(trans, out);
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

}  // namespace hazefree_gst
