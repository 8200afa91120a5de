// Uses the installed hazefree library: prints the version from the header's macros, equalizes a
// generated grey ramp with the CPU backend and dehazes a generated RGB frame; with two
// arguments, also runs the whole pipeline on a file (`hazefree_example in.mp4 out.mp4`).
#include <hazefree/hazefree.hpp>

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  std::printf("hazefree %d.%d.%d (%s)\n", HAZEFREE_VERSION_MAJOR, HAZEFREE_VERSION_MINOR,
              HAZEFREE_VERSION_PATCH, HAZEFREE_VERSION_STRING);
  try {
    std::printf("%zu configuration keys\n", hazefree::configuration_keys().size());

    // A grey ramp from 100 to 163 equalizes to the full range 0..255.
    const int width = 64, height = 16;
    std::vector<std::uint8_t> grey(width * height), equalized(width * height);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) grey[y * width + x] = static_cast<std::uint8_t>(100 + x);
    hazefree::Processor he({{"mode", "he"}, {"color", "grey"}, {"backend", "cpu"}});
    he.process(hazefree::Frame::gray8(grey.data(), width, height, width),
               hazefree::Frame::gray8(equalized.data(), width, height, width));
    std::printf("he: %d..%d -> %d..%d\n", grey.front(), grey[width - 1], equalized.front(), equalized[width - 1]);

    // A hazy-looking RGB frame: DCP estimates its atmospheric light.
    std::vector<std::uint8_t> rgb(width * height * 3), dehazed(rgb.size());
    for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(150 + (i * 7) % 80);
    hazefree::Processor dcp({{"mode", "dcp"}, {"backend", "cpu"}, {"dcp.gf_radius", "8"}});
    dcp.process(hazefree::Frame::rgb24(rgb.data(), width, height, width * 3),
                hazefree::Frame::rgb24(dehazed.data(), width, height, width * 3));
    const auto a = dcp.atmospheric_light();
    std::printf("dcp: atmospheric light %.3f %.3f %.3f\n", a[0], a[1], a[2]);

    if (argc == 3) {
      hazefree::RunControl control;
      control.overwrite = true;
      const hazefree::RunResult result = hazefree::run(argv[1], argv[2], {{"mode", "he"}}, control);
      std::printf("run: %lld frames on %s\n", static_cast<long long>(result.frames_out), result.processor.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hazefree_example: %s\n", e.what());
    return 1;
  }
  return 0;
}
