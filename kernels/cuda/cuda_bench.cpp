// Device-resident chain timings: generated frame uploaded once, then N timed frames with CUDA
// events around each (graph replay and plain launches), warm-up excluded, medians reported.
#include "kernels/cuda/cuda_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/device_frame.hpp"

namespace hazefree::cuda {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A hazy-looking frame: smooth gradients plus noise, so that no stage runs on trivial data.
void fill_frame(const ImageView& f) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> noise(-12, 12);
  for (int p = 0; p < f.plane_count; ++p) {
    const PlaneView& pl = f.planes[p];
    const int row_bytes = pl.width * bytes_per_sample(f.format, p);
    for (int y = 0; y < pl.height; ++y) {
      std::uint8_t* row = pl.data + static_cast<std::size_t>(y) * pl.stride;
      for (int x = 0; x < row_bytes; ++x) {
        const double base = 128.0 + 70.0 * std::sin(0.013 * x + 0.7 * p) * std::cos(0.017 * y);
        row[x] = static_cast<std::uint8_t>(std::clamp(static_cast<int>(base) + noise(rng), 0, 255));
      }
    }
  }
}

}  // namespace

double measure_device_bandwidth_gbps() {
  constexpr std::size_t kBytes = std::size_t(1) << 30;  // 1 GiB each way: far beyond the L2
  DeviceBuffer<std::uint8_t> a(kBytes), b(kBytes);
  HAZEFREE_CUDA_CHECK(cudaMemset(a.get(), 1, kBytes));
  Stream stream;
  Event start, stop;
  std::vector<double> times;
  for (int i = 0; i < 12; ++i) {
    start.record(stream.get());
    HAZEFREE_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), kBytes, cudaMemcpyDeviceToDevice, stream.get()));
    stop.record(stream.get());
    stop.synchronize();
    if (i >= 2) times.push_back(elapsed_ms(start, stop));
  }
  return 2.0 * kBytes / (median(times) * 1e-3) / 1e9;
}

CudaBenchResult bench_cuda_chain(const ProcessingConfig& config, PixelFormat format, int width,
                                 int height, int iterations, int warmup, bool haze_index) {
  CudaBenchResult result;
  result.width = width;
  result.height = height;
  result.format = format;
  result.iterations = iterations;
  // Device memory taken by one lane: free memory before the processor and after its first frame
  // (the context exists already, so it is not counted).
  HAZEFREE_CUDA_CHECK(cudaFree(nullptr));
  std::size_t free_before = 0, free_after = 0, total = 0;
  HAZEFREE_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  CudaProcessor processor(config, 1);
  processor.set_haze_index(haze_index);
  const std::string d = processor.description();
  result.gpu = d.size() > 7 ? d.substr(6, d.size() - 7) : d;  // "cuda (NAME)"

  const std::size_t bytes = frame_bytes(format, width, height, 64);
  PinnedBuffer<std::uint8_t> h_in(bytes), h_out(bytes);
  ImageView host_in = make_view(format, width, height, h_in.get(), 64);
  ImageView host_out = make_view(format, width, height, h_out.get(), 64);
  fill_frame(host_in);
  const ImageView d_in = processor.device_input(0, format, width, height,
                                                default_matrix_for_height(height),
                                                is_yuv(format) ? ColorRange::limited : ColorRange::full);
  const ImageView d_out = processor.device_output(0);
  const cudaStream_t s = processor.stream(0);
  processor.enqueue_device(0);
  HAZEFREE_CUDA_CHECK(cudaStreamSynchronize(s));
  HAZEFREE_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  result.device_bytes = free_before > free_after ? free_before - free_after : 0;
  result.frame_bytes = frame_bytes(format, width, height, 1);
  Event start, stop;

  // Copies from pinned memory.
  std::vector<double> up, down;
  for (int i = 0; i < warmup + iterations; ++i) {
    start.record(s);
    copy_frame_async(host_in, d_in, cudaMemcpyHostToDevice, s);
    stop.record(s);
    stop.synchronize();
    if (i >= warmup) up.push_back(elapsed_ms(start, stop));
    start.record(s);
    copy_frame_async(d_out, host_out, cudaMemcpyDeviceToHost, s);
    stop.record(s);
    stop.synchronize();
    if (i >= warmup) down.push_back(elapsed_ms(start, stop));
  }
  result.upload_ms = median(up);
  result.download_ms = median(down);

  // Plain launches with stage events.
  processor.set_stage_timing(true);
  std::vector<double> plain;
  std::vector<std::vector<double>> stages;
  std::vector<std::string> names;
  for (int i = 0; i < warmup + iterations; ++i) {
    start.record(s);
    processor.enqueue_device(0);
    stop.record(s);
    stop.synchronize();
    if (i < warmup) continue;
    plain.push_back(elapsed_ms(start, stop));
    const std::vector<StageTime> t = processor.stage_times();
    if (stages.empty()) {
      stages.resize(t.size());
      for (const StageTime& st : t) names.push_back(st.name);
    }
    for (std::size_t k = 0; k < t.size() && k < stages.size(); ++k) stages[k].push_back(t[k].ms);
  }
  result.stream_ms = median(plain);
  // The device-resident chain has no upload/download stage: drop those (zero-length) entries.
  for (std::size_t k = 0; k < stages.size(); ++k)
    if (names[k] != "upload" && names[k] != "download") result.stages.push_back({names[k], median(stages[k])});

  // Graph replays.
  processor.set_stage_timing(false);
  std::vector<double> graph;
  for (int i = 0; i < warmup + iterations; ++i) {
    start.record(s);
    processor.launch_device_graph(0);
    stop.record(s);
    stop.synchronize();
    if (i >= warmup) graph.push_back(elapsed_ms(start, stop));
  }
  result.chain_ms = median(graph);
  result.chain_min_ms = graph.empty() ? 0.0 : *std::min_element(graph.begin(), graph.end());
  return result;
}

}  // namespace hazefree::cuda
