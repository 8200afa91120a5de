// The element's state and what its files share: gsthazefree.cpp is the element (vfuncs, caps,
// queries, properties' values), gsthazefree_lanes.cpp the frames in flight on the lanes (system
// memory), gsthazefree_cuda.cpp frames in CUDA memory (context, pool, in-place processing).
#pragma once

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

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "gsthazefree_pinned.hpp"

GST_DEBUG_CATEGORY_EXTERN(gst_hazefree_debug);
#define GST_CAT_DEFAULT gst_hazefree_debug

namespace hazefree_gst {

constexpr const char* kCudaMemory = "memory:CUDAMemory";
constexpr int kDefaultLanes = 2;

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

}  // namespace hazefree_gst

G_BEGIN_DECLS
#define GST_TYPE_HAZEFREE (gst_hazefree_get_type())
G_DECLARE_FINAL_TYPE(GstHazefree, gst_hazefree, GST, HAZEFREE, GstVideoFilter)
G_END_DECLS

struct _GstHazefree {
  GstVideoFilter parent;
  hazefree_gst::State* state;
};

namespace hazefree_gst {

// GstVideoFilter's class, for the vfuncs that chain up.
gpointer element_parent_class();

// Makes the processor from the current options (again after a property changed, and when frames
// move between system and CUDA memory); false after posting an error naming the key or the cause.
bool ensure_processor(GstHazefree* self);
// True when structure i of `caps` is in CUDA memory.
bool has_cuda_memory(GstCaps* caps, guint i);

// ---- the lanes (gsthazefree_lanes.cpp) ----
void discard_in_flight(State& state);
GstFlowReturn drain_in_flight(GstHazefree* self);
GstFlowReturn generate_output(GstBaseTransform* trans, GstBuffer** out);

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

#ifdef HAZEFREE_GST_CUDA
// ---- CUDA memory (gsthazefree_cuda.cpp) ----
std::string cuda_memory_refusal(GstHazefree* self);
GstFlowReturn transform_cuda(GstHazefree* self, GstBuffer* inbuf, GstBuffer* outbuf);
gboolean propose_allocation(GstBaseTransform* trans, GstQuery* decide_query, GstQuery* query);
gboolean decide_allocation(GstBaseTransform* trans, GstQuery* query);
void set_context(GstElement* element, GstContext* context);
#endif

}  // namespace hazefree_gst
