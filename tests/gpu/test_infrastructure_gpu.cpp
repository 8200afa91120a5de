// The CUDA backend's plumbing: error reporting, availability, stage times, the device graph.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_bench.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/processor.hpp"

namespace hazefree {

TEST_CASE("CUDA errors name the expression, the place and the error") {
  std::string message;
  try {
    HAZEFREE_CUDA_CHECK(cudaSetDevice(100000));
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("cudaSetDevice(100000)") != std::string::npos);
  CHECK(message.find("cudaErrorInvalidDevice") != std::string::npos);
  CHECK(message.find("test_infrastructure_gpu.cpp:") != std::string::npos);
  cudaGetLastError();
}

TEST_CASE("the backend reports itself and its stage times") {
  std::string why;
  REQUIRE(cuda_available(&why));
  for (const Mode mode : {Mode::dcp, Mode::he, Mode::ahe}) {
    ProcessingConfig c;
    c.mode = mode;
    auto p = make_cuda_processor(c);
    CHECK(p->description().rfind("cuda (", 0) == 0);
    Image in = gpu_test::make_image(PixelFormat::nv12, 64, 48);
    gpu_test::fill_smooth(in.view(), 3);
    Image out = gpu_test::make_image(PixelFormat::nv12, 64, 48);
    p->process(in.view(), out.view());
    const std::vector<StageTime> t = p->stage_times();
    REQUIRE(t.size() >= 3);
    CHECK(t.front().name == "upload");
    CHECK(t.back().name == "download");
    for (const StageTime& s : t) CHECK(s.ms >= 0.0);
  }
}

TEST_CASE("invalid parameters are refused at construction") {
  ProcessingConfig c;
  c.dcp.t0 = 0.f;
  CHECK_THROWS_AS(make_cuda_processor(c), std::invalid_argument);
  ProcessingConfig e;
  e.mode = Mode::ahe;
  e.color = ColorMode::rgb_bits;
  CHECK_THROWS_AS(make_cuda_processor(e), std::invalid_argument);
}

TEST_CASE("the graph replay of the device chain equals plain launches") {
  for (const Mode mode : {Mode::dcp, Mode::he, Mode::ahe}) {
    ProcessingConfig c;
    c.mode = mode;
    cuda::CudaProcessor a(c, 1), b(c, 1);
    const int w = 333, h = 197;
    Image host = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    gpu_test::fill_smooth(host.view(), 11);
    Image out_a = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    Image out_b = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    for (cuda::CudaProcessor* p : {&a, &b}) {
      const ImageView d_in = p->device_input(0, PixelFormat::yuv420p, w, h, ColorMatrix::bt601, ColorRange::limited);
      for (int i = 0; i < d_in.plane_count; ++i)
        HAZEFREE_CUDA_CHECK(cudaMemcpy2D(d_in.planes[i].data, d_in.planes[i].stride, host.view().planes[i].data,
                                         host.view().planes[i].stride, d_in.planes[i].width, d_in.planes[i].height,
                                         cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < 3; ++i) {
      a.enqueue_device(0);
      b.launch_device_graph(0);
    }
    HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
    const ImageView da = a.device_output(0), db = b.device_output(0);
    for (int i = 0; i < da.plane_count; ++i) {
      HAZEFREE_CUDA_CHECK(cudaMemcpy2D(out_a.view().planes[i].data, out_a.view().planes[i].stride, da.planes[i].data,
                                       da.planes[i].stride, da.planes[i].width, da.planes[i].height,
                                       cudaMemcpyDeviceToHost));
      HAZEFREE_CUDA_CHECK(cudaMemcpy2D(out_b.view().planes[i].data, out_b.view().planes[i].stride, db.planes[i].data,
                                       db.planes[i].stride, db.planes[i].width, db.planes[i].height,
                                       cudaMemcpyDeviceToHost));
    }
    INFO(to_string(mode));
    CHECK(gpu_test::compare(out_a.view(), out_b.view()).differing == 0);
  }
}

// A copy of `frame` in memory of the caller's (`storage`), each row `extra` bytes longer.
ImageView copy_with_stride(const ImageView& frame, std::uint8_t* storage, int extra) {
  ImageView copy = frame;
  std::size_t at = 0;
  for (int i = 0; i < frame.plane_count; ++i) {
    const std::size_t row = static_cast<std::size_t>(frame.planes[i].width) * bytes_per_sample(frame.format, i, frame.depth);
    copy.planes[i].data = storage + at;
    copy.planes[i].stride = static_cast<int>(row) + extra;
    for (int y = 0; y < frame.planes[i].height; ++y)
      std::memcpy(copy.planes[i].data + static_cast<std::size_t>(y) * copy.planes[i].stride,
                  frame.planes[i].data + static_cast<std::size_t>(y) * frame.planes[i].stride, row);
    at += static_cast<std::size_t>(copy.planes[i].stride) * frame.planes[i].height;
  }
  return copy;
}

std::size_t bytes_with_stride(const ImageView& frame, int extra) {
  std::size_t bytes = 0;
  for (int i = 0; i < frame.plane_count; ++i)
    bytes += (static_cast<std::size_t>(frame.planes[i].width) * bytes_per_sample(frame.format, i, frame.depth) + extra) *
             frame.planes[i].height;
  return bytes;
}

TEST_CASE("pageable host frames (uploaded through the lane's staging) give the frames of page-locked ones") {
  // Two frames in flight on two lanes, each from pageable memory with odd row lengths, against
  // the same frames from page-locked memory; and DCP's estimate from both.
  for (const PixelFormat format : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::rgb24}) {
    for (const gpu_test::Size size : {gpu_test::Size{333, 197}, gpu_test::Size{1920, 1080}}) {
      ProcessingConfig c;
      c.mode = Mode::dcp;
      cuda::CudaProcessor pageable(c, 2), pinned(c, 2);
      std::vector<Image> frames;
      for (int k = 0; k < 2; ++k) {
        frames.push_back(gpu_test::make_image(format, size.w, size.h));
        gpu_test::fill_smooth(frames.back().view(), 40 + k);
      }
      const int extra = 37;
      std::vector<std::vector<std::uint8_t>> plain;
      std::vector<cuda::PinnedBuffer<std::uint8_t>> locked;
      std::vector<ImageView> from_plain, from_locked;
      for (const Image& f : frames) {
        plain.emplace_back(bytes_with_stride(f.view(), extra));
        locked.emplace_back(bytes_with_stride(f.view(), extra));
        from_plain.push_back(copy_with_stride(f.view(), plain.back().data(), extra));
        from_locked.push_back(copy_with_stride(f.view(), locked.back().get(), extra));
      }
      INFO(format_name(format, 8), " ", size.w, "x", size.h);
      CHECK(pageable.estimate(from_plain[0]).light == pinned.estimate(from_locked[0]).light);
      std::vector<Image> out_plain, out_locked;
      for (int k = 0; k < 2; ++k) {
        out_plain.push_back(gpu_test::make_image(format, size.w, size.h));
        out_locked.push_back(gpu_test::make_image(format, size.w, size.h));
      }
      for (int k = 0; k < 2; ++k) {
        pageable.enqueue(k, from_plain[static_cast<std::size_t>(k)], out_plain[static_cast<std::size_t>(k)].view());
        pinned.enqueue(k, from_locked[static_cast<std::size_t>(k)], out_locked[static_cast<std::size_t>(k)].view());
      }
      // The pageable sources are overwritten once enqueued: the uploads read the staged copies.
      for (auto& bytes : plain) std::memset(bytes.data(), 0, bytes.size());
      for (int k = 0; k < 2; ++k) {
        pageable.wait(k);
        pinned.wait(k);
        CHECK(gpu_test::compare(out_plain[static_cast<std::size_t>(k)].view(), out_locked[static_cast<std::size_t>(k)].view()).differing == 0);
      }
    }
  }
}

TEST_CASE("the kernel benchmark runs and reports every stage") {
  ProcessingConfig c;
  const cuda::CudaBenchResult r = cuda::bench_cuda_chain(c, PixelFormat::yuv420p, 320, 240, 5, 2);
  CHECK(r.chain_ms > 0.0);
  CHECK(r.stream_ms > 0.0);
  CHECK(r.stages.size() == cuda::CudaDehazer::stage_names().size());
  CHECK(!r.gpu.empty());
}

}  // namespace hazefree
