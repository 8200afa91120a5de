// Frames in CUDA memory (`video/x-raw(memory:CUDAMemory)`): the CUDA context shared with the
// neighbours, the GstCudaBufferPool, and frames processed where they are on the element's stream.
#include "gsthazefree_element.hpp"

#ifdef HAZEFREE_GST_CUDA

#include <exception>
#include <stdexcept>

#include "gsthazefree_formats.hpp"

namespace hazefree_gst {

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
    return GST_BASE_TRANSFORM_CLASS(element_parent_class())->propose_allocation(trans, decide_query, query);
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
    return GST_BASE_TRANSFORM_CLASS(element_parent_class())->decide_allocation(trans, query);
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
  GST_ELEMENT_CLASS(element_parent_class())->set_context(element, context);
}

}  // namespace hazefree_gst

#endif
