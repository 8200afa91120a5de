#include <unistd.h>

extern "C" {
#include <libavutil/log.h>
}

#include <cstdio>
#include <string>

#include "fuzz_harness.hpp"
#include "io/media_reader.hpp"

namespace hazefree::fuzz {

void reader_one_input(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (av_log_set_level(AV_LOG_QUIET), true);
  (void)quiet;
  // A file, as users give them: probing, seeking and the size checks all take that path.
  const std::string path = "/tmp/hazefree-fuzz-reader-" + std::to_string(getpid());
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  try {
    io::InputOptions options;
    options.url = path;
    options.decoder_threads = 1;  // the decode path itself, deterministic
    io::MediaReader reader(options);
    const io::VideoInfo& info = reader.video();
    // Small pictures only: a header claiming a huge size is valid, and only slow.
    if (info.width > 0 && info.height > 0 && static_cast<long>(info.width) * info.height <= 512 * 512) {
      for (int items = 0; items < 16; ++items) {
        const io::MediaReader::Item item = reader.read();
        if (item == io::MediaReader::Item::end) break;
        if (item == io::MediaReader::Item::packet) (void)reader.take_packet();
      }
    }
  } catch (const io::IoError&) {
  }
  std::remove(path.c_str());
}

}  // namespace hazefree::fuzz

#ifdef HAZEFREE_FUZZ_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hazefree::fuzz::reader_one_input(data, size);
  return 0;
}
#endif
