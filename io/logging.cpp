#include "io/logging.hpp"

extern "C" {
#include <libavutil/log.h>
}

namespace hazefree::io {

void set_ffmpeg_log_level(LogLevel level) {
  switch (level) {
    case LogLevel::silent: av_log_set_level(AV_LOG_FATAL); break;
    case LogLevel::quiet: av_log_set_level(AV_LOG_ERROR); break;
    case LogLevel::normal: av_log_set_level(AV_LOG_WARNING); break;
    case LogLevel::verbose: av_log_set_level(AV_LOG_INFO); break;
  }
}

}  // namespace hazefree::io
