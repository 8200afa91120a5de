// The `hazefree._hazefree` extension: a thin pybind11 layer over include/hazefree/hazefree.hpp.
// It translates arrays, streams and errors and calls the public API; the Python package
// (python/hazefree/__init__.py) adds the framework glue (PyTorch, CuPy) on top of it.
//
// Errors: a frame that does not fit raises TypeError (dtype, kind of object) or ValueError
// (shape, layout, overlap) naming the argument; a bad option ValueError; no GPU RuntimeError.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cstdint>
#include <exception>
#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include <pthread.h>

#include "hazefree/hazefree.hpp"

namespace py = pybind11;

namespace {

// ---- DLPack (the stable C ABI of dlpack.h, legacy "dltensor" capsules) ----
struct DLDevice {
  std::int32_t device_type;  // kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null = compact row-major
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

// What a DLPack capsule describes: pointer (with the byte offset), shape, strides in elements
// (row-major ones filled in when absent), dtype and device. The capsule is consumed: marked used
// and its deleter called (the producer's object, which the caller holds, keeps the memory).
py::dict dlpack_view(py::capsule capsule, const std::string& what) {
  PyObject* raw = capsule.ptr();
  if (!PyCapsule_IsValid(raw, "dltensor"))
    throw py::type_error(what + ": __dlpack__() did not return a 'dltensor' capsule (already consumed, or a versioned one)");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  const DLTensor& t = managed->dl_tensor;
  py::dict info;
  info["ptr"] = reinterpret_cast<std::uintptr_t>(static_cast<char*>(t.data) + t.byte_offset);
  py::list shape, strides;
  std::vector<std::int64_t> compact(static_cast<std::size_t>(std::max(t.ndim, 0)));
  std::int64_t step = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    compact[static_cast<std::size_t>(i)] = step;
    step *= t.shape[i];
  }
  for (int i = 0; i < t.ndim; ++i) {
    shape.append(t.shape[i]);
    strides.append(t.strides ? t.strides[i] : compact[static_cast<std::size_t>(i)]);
  }
  info["shape"] = py::tuple(shape);
  info["strides"] = py::tuple(strides);  // elements
  info["dtype"] = py::make_tuple(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  info["device"] = py::make_tuple(t.device.device_type, t.device.device_id);
  if (PyCapsule_SetName(raw, "used_dltensor") != 0) throw py::error_already_set();
  if (managed->deleter) managed->deleter(managed);
  return info;
}

// ---- host frames (numpy) ----
// uint8 arrays are 8-bit frames; uint16 arrays hold codes of `depth` (9..16) bits in the low bits
// of each sample (the package checks the depth and the values before calling).
hazefree::Frame host_frame(const py::array& array, const char* what, bool writable, int depth) {
  const std::string name(what);
  const py::ssize_t item = depth > 8 ? 2 : 1;
  const bool fits = item == 1 ? py::isinstance<py::array_t<std::uint8_t>>(array)
                              : py::isinstance<py::array_t<std::uint16_t>>(array);
  if (!fits || array.dtype().kind() != 'u' || array.itemsize() != item)
    throw py::type_error(name + ": dtype " + std::string(py::str(array.dtype())) + ", expected " +
                         (item == 1 ? "uint8" : "uint16") + " (depth " + std::to_string(depth) + ")");
  const bool rgb = array.ndim() == 3;
  if (!(array.ndim() == 2 || (rgb && array.shape(2) == 3)))
    throw py::value_error(name + ": shape " + std::string(py::str(py::tuple(py::cast(std::vector<py::ssize_t>(
                                                  array.shape(), array.shape() + array.ndim()))))) +
                          ", expected (height, width, 3) RGB or (height, width) grey");
  const py::ssize_t height = array.shape(0), width = array.shape(1);
  if (height <= 0 || width <= 0) throw py::value_error(name + ": empty frame (height and width must be > 0)");
  if (height > INT32_MAX / 8 || width > INT32_MAX / 8) throw py::value_error(name + ": frame too large");
  const py::ssize_t pixel = (rgb ? 3 : 1) * item;
  if ((rgb && array.strides(2) != item) || array.strides(1) != pixel || array.strides(0) < width * pixel)
    throw py::value_error(name + ": rows must be contiguous (pixel stride " + std::to_string(pixel) +
                          " bytes, row stride >= " + std::to_string(width * pixel) +
                          "); use numpy.ascontiguousarray");
  if (writable && !array.writeable()) throw py::value_error(name + ": array is read-only");
  void* data = const_cast<void*>(array.data());
  const int w = static_cast<int>(width), h = static_cast<int>(height);
  if (depth > 8)
    return rgb ? hazefree::Frame::rgb48(data, w, h, array.strides(0), depth)
               : hazefree::Frame::gray16(data, w, h, array.strides(0), depth);
  return rgb ? hazefree::Frame::rgb24(data, w, h, array.strides(0))
             : hazefree::Frame::gray8(data, w, h, array.strides(0));
}

// ---- Ctrl-C during run(): the first SIGINT stops the run as the CLI's does ----
std::atomic<bool> g_interrupt{false};
extern "C" void on_sigint(int) { g_interrupt.store(true); }

class SigintStops {
 public:
  // Only the main thread receives Python's SIGINT; elsewhere the handler is left alone.
  explicit SigintStops(bool active) : active_(active) {
    if (!active_) return;
    g_interrupt.store(false);
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~SigintStops() {
    if (active_) sigaction(SIGINT, &previous_, nullptr);
  }
  SigintStops(const SigintStops&) = delete;
  SigintStops& operator=(const SigintStops&) = delete;

 private:
  bool active_;
  struct sigaction previous_ {};
};

// A Processor or FrameReader with the lock that makes concurrent calls from Python threads (the
// GIL is released while they run) wait for each other instead of racing on the workspaces.
template <typename T>
struct Locked {
  template <typename... Args>
  explicit Locked(Args&&... args) : object(std::forward<Args>(args)...) {}
  T object;
  std::mutex mutex;
};
using PyProcessor = Locked<hazefree::Processor>;
using PyFrameReader = Locked<hazefree::FrameReader>;

bool on_main_thread() {
  py::module_ threading = py::module_::import("threading");
  return threading.attr("current_thread")().is(threading.attr("main_thread")());
}

}  // namespace

PYBIND11_MODULE(_hazefree, m) {
  m.doc() = "hazefree's C++ core (use the `hazefree` package, not this module directly)";
  m.attr("__version__") = HAZEFREE_VERSION_STRING;
  m.attr("version_info") = py::make_tuple(HAZEFREE_VERSION_MAJOR, HAZEFREE_VERSION_MINOR, HAZEFREE_VERSION_PATCH);

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const hazefree::OptionError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const hazefree::FrameError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const hazefree::GpuUnavailableError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def("config_keys", [] {
    py::list keys;
    for (const hazefree::ConfigKeyInfo& k : hazefree::configuration_keys()) {
      const char* kind = "text";
      switch (k.kind) {
        case hazefree::ConfigKeyInfo::Kind::integer: kind = "integer"; break;
        case hazefree::ConfigKeyInfo::Kind::number: kind = "number"; break;
        case hazefree::ConfigKeyInfo::Kind::boolean: kind = "boolean"; break;
        case hazefree::ConfigKeyInfo::Kind::choice: kind = "choice"; break;
        case hazefree::ConfigKeyInfo::Kind::text: break;
      }
      keys.append(py::make_tuple(k.name, k.help, k.range, k.default_value, kind, k.minimum, k.maximum,
                                 k.minimum_excluded, k.maximum_excluded, py::tuple(py::cast(k.choices)),
                                 py::tuple(py::cast(k.modes))));
    }
    return keys;
  }, "Every configuration key as (name, help, range, default, kind, minimum, maximum, minimum_excluded, "
     "maximum_excluded, choices, modes) tuples.");

  m.def("validate_options", [](const hazefree::Options& options) { hazefree::validate_options(options); },
        "Raises ValueError for the first unknown key or bad value.");

  m.def("gpu_available", [] {
    std::string why;
    const bool ok = hazefree::gpu_available(&why);
    return py::make_tuple(ok, why);
  }, "(True, '') when the CUDA backend can run here, else (False, why).");

  m.def("dlpack_view", &dlpack_view, py::arg("capsule"), py::arg("what"),
        "Consumes a DLPack capsule: dict of ptr, shape, strides (elements), dtype, device.");

  py::class_<PyProcessor>(m, "Processor")
      .def(py::init<const hazefree::Options&>(), py::arg("options"))
      .def("process_host", [](PyProcessor& p, const py::array& in, py::array& out, int depth) {
        const hazefree::Frame fin = host_frame(in, "frame", false, depth);
        const hazefree::Frame fout = host_frame(out, "out", true, depth);
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(p.mutex);
        p.object.process(fin, fout);
      }, py::arg("frame"), py::arg("out"), py::arg("depth") = 8)
      // Row strides in bytes; `depth` > 8 for frames of two-byte samples.
      .def("process_device", [](PyProcessor& p, bool rgb, int width, int height, std::uintptr_t in_ptr,
                                std::int64_t in_row_stride, std::uintptr_t out_ptr, std::int64_t out_row_stride,
                                std::uintptr_t stream, int depth) {
        auto frame = [&](std::uintptr_t ptr, std::int64_t stride) {
          void* data = reinterpret_cast<void*>(ptr);
          if (depth > 8)
            return rgb ? hazefree::Frame::rgb48(data, width, height, stride, depth)
                       : hazefree::Frame::gray16(data, width, height, stride, depth);
          return rgb ? hazefree::Frame::rgb24(data, width, height, stride)
                     : hazefree::Frame::gray8(data, width, height, stride);
        };
        const hazefree::Frame fin = frame(in_ptr, in_row_stride), fout = frame(out_ptr, out_row_stride);
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(p.mutex);
        p.object.process_device(fin, fout, reinterpret_cast<void*>(stream));
      }, py::arg("rgb"), py::arg("width"), py::arg("height"), py::arg("in_ptr"), py::arg("in_row_stride"),
         py::arg("out_ptr"), py::arg("out_row_stride"), py::arg("stream"), py::arg("depth") = 8)
      .def("reset", [](PyProcessor& p) {
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(p.mutex);
        p.object.reset();
      })
      .def("atmospheric_light", [](PyProcessor& p) {
        std::array<float, 3> a{};
        {
          py::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(p.mutex);
          a = p.object.atmospheric_light();
        }
        return py::make_tuple(a[0], a[1], a[2]);
      })
      .def("haze_index", [](PyProcessor& p) {
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(p.mutex);
        return p.object.haze_index();
      })
      .def("description", [](PyProcessor& p) { return p.object.description(); })
      .def("on_gpu", [](PyProcessor& p) { return p.object.on_gpu(); })
      .def("option", [](PyProcessor& p, const std::string& key) { return p.object.option(key); }, py::arg("key"));

  m.def("run", [](const std::string& input, const std::string& output, const hazefree::Options& options,
                  py::object progress, bool overwrite, bool verbose) {
    // On the main thread, the first Ctrl-C sets g_interrupt (our handler replaces Python's for the
    // run, since Python's only runs between bytecodes); elsewhere a flag of this run's own.
    const bool main_thread = on_main_thread();
    std::atomic<bool> own_flag{false};
    std::atomic<bool>* stop = main_thread ? &g_interrupt : &own_flag;
    std::mutex error_mutex;
    std::exception_ptr callback_error;
    hazefree::RunControl control;
    control.overwrite = overwrite;
    control.verbose = verbose;
    control.cancel = stop;
    if (!progress.is_none()) {
      control.progress = [&](const hazefree::RunProgress& p) {
        py::gil_scoped_acquire gil;
        try {
          py::dict live;
          live["frames_dropped"] = p.frames_dropped;
          live["reconnects"] = p.reconnects;
          live["seconds_lost"] = p.seconds_lost;
          live["latency_seconds"] = p.latency_seconds;
          live["atmospheric_light"] =
              py::make_tuple(p.atmospheric_light[0], p.atmospheric_light[1], p.atmospheric_light[2]);
          // DCP's haze index and omega of the last frame (None in the he/ahe modes).
          live["haze_index"] = p.haze_index >= 0.f ? py::object(py::float_(p.haze_index)) : py::object(py::none());
          live["omega"] = p.omega >= 0.f ? py::object(py::float_(p.omega)) : py::object(py::none());
          progress(p.frames, p.expected_frames, p.seconds, live);
        } catch (py::error_already_set&) {
          // The callback raised: stop the run (the output is finished) and raise it afterwards.
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!callback_error) callback_error = std::current_exception();
          stop->store(true);
        }
      };
    }
    hazefree::RunResult result;
    {
      SigintStops sigint(main_thread);
      py::gil_scoped_release release;
      result = hazefree::run(input, output, options, control);
    }
    const bool stopped = stop->exchange(false);
    if (callback_error) std::rethrow_exception(callback_error);
    if (stopped) {
      // Ctrl-C: the output is finished and valid up to here, as the CLI leaves it.
      PyErr_SetString(PyExc_KeyboardInterrupt, ("hazefree.run: interrupted; " + output + " holds the " +
                                                std::to_string(result.frames_out) + " frames written").c_str());
      throw py::error_already_set();
    }
    py::dict summary;
    summary["frames_in"] = result.frames_in;
    summary["frames_out"] = result.frames_out;
    summary["frames_dropped"] = result.frames_dropped;
    summary["packets_copied"] = result.packets_copied;
    summary["seconds"] = result.seconds;
    summary["processor"] = result.processor;
    return summary;
  }, py::arg("input"), py::arg("output"), py::arg("options"), py::arg("progress"), py::arg("overwrite"),
     py::arg("verbose"));

  py::class_<PyFrameReader>(m, "FrameReader")
      .def(py::init<const std::string&, const hazefree::Options&>(), py::arg("input"), py::arg("options"))
      .def_property_readonly("width", [](PyFrameReader& r) { return r.object.width(); })
      .def_property_readonly("height", [](PyFrameReader& r) { return r.object.height(); })
      .def_property_readonly("frame_rate", [](PyFrameReader& r) { return r.object.frame_rate(); })
      .def_property_readonly("frame_count", [](PyFrameReader& r) { return r.object.frame_count(); })
      .def_property_readonly("depth", [](PyFrameReader& r) { return r.object.depth(); })
      .def("description", [](PyFrameReader& r) { return r.object.processor().description(); })
      .def("next", [](PyFrameReader& r, py::array& out, int depth) {
        const hazefree::Frame frame = host_frame(out, "out", true, depth);
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(r.mutex);
        return r.object.next(frame);
      }, py::arg("out"), py::arg("depth") = 8);
}
