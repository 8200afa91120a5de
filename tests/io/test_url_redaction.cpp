// Secrets of URLs never reach a message: io::redact_urls on every kind of URL, alone and inside
// longer text, and a reader's error for an unreachable source with a password.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

extern "C" {
#include <libavutil/log.h>
}

#include "io/logging.hpp"
#include "io/media_reader.hpp"
#include "io/url.hpp"
#include "support/test_support.hpp"

using hazefree::io::redact_urls;

TEST_CASE("user:password@ is hidden in a URL of any scheme") {
  CHECK(redact_urls("rtsp://admin:s3cret@127.0.0.1:554/stream1") == "rtsp://***@127.0.0.1:554/stream1");
  CHECK(redact_urls("tcp://user:pass@127.0.0.1:9") == "tcp://***@127.0.0.1:9");
  CHECK(redact_urls("srt://u:p@host:9000?mode=caller") == "srt://***@host:9000?mode=caller");
  CHECK(redact_urls("http://user:pw@example.com/a.m3u8") == "http://***@example.com/a.m3u8");
  CHECK(redact_urls("https://user:pw@example.com") == "https://***@example.com");
  CHECK(redact_urls("RTSP://Admin:X@cam") == "RTSP://***@cam");
  CHECK(redact_urls("rtsp://onlyuser@cam/x") == "rtsp://***@cam/x");
  CHECK(redact_urls("rtsp://a:b@[::1]:554/x") == "rtsp://***@[::1]:554/x");
  // The last '@' of the authority, as FFmpeg splits it: a password with '@' in it.
  CHECK(redact_urls("rtsp://admin:p@ss@cam/x") == "rtsp://***@cam/x");
  // Characters FFmpeg would not read in a password are hidden all the same.
  CHECK(redact_urls("rtsp://admin:pa/ss@cam/x") == "rtsp://***@cam/x");
  CHECK(redact_urls("rtsp://admin:pa?ss@cam/x") == "rtsp://***@cam/x");
  CHECK(redact_urls("rtsp://admin:my pass@cam/x is down") == "rtsp://***@cam/x is down");
}

TEST_CASE("URLs without secrets, and text without URLs, are left as they are") {
  for (const char* text : {"rtsp://127.0.0.1:554/stream1", "udp://239.0.0.1:5000?pkt_size=1316",
                           "tcp://127.0.0.1:9?listen=1&timeout=5", "in.mp4", "-", "pipe:0", "/dev/video0",
                           "file:///tmp/a.mp4", "rtmp://host/live", "srt://host:9000?mode=listener&latency=200",
                           "rtsp://[::1]:554/x", "a message: with: colons", "://not a url", "http://host/x?a@b",
                           "rtsp://cam:554/path@thing", ""})
    CHECK(redact_urls(text) == text);
}

TEST_CASE("query values named as secrets are hidden, whatever their case") {
  CHECK(redact_urls("srt://127.0.0.1:9000?passphrase=abcdefghij&pbkeylen=16") ==
        "srt://127.0.0.1:9000?passphrase=***&pbkeylen=16");
  CHECK(redact_urls("http://h/x?token=T0K&a=1") == "http://h/x?token=***&a=1");
  CHECK(redact_urls("http://h/x?access_token=T&api_key=K&Password=P&pass=Q&pwd=R&secret=S&auth=A") ==
        "http://h/x?access_token=***&api_key=***&Password=***&pass=***&pwd=***&secret=***&auth=***");
  CHECK(redact_urls("https://b.s3/x?X-Amz-Signature=abc&X-Amz-Credential=c&sig=d") ==
        "https://b.s3/x?X-Amz-Signature=***&X-Amz-Credential=***&sig=***");
  CHECK(redact_urls("rtsp://h/x?key=K") == "rtsp://h/x?key=***");
  // An empty value has nothing to hide.
  CHECK(redact_urls("http://h/x?token=&a=1") == "http://h/x?token=&a=1");
}

TEST_CASE("an SRT streamid is hidden whole, '#' and all") {
  CHECK(redact_urls("srt://h:9000?streamid=publish:cam:user:pass") == "srt://h:9000?streamid=***");
  CHECK(redact_urls("srt://h:9000?mode=caller&streamid=#!::r=live/KEY,m=publish&latency=20") ==
        "srt://h:9000?mode=caller&streamid=***&latency=20");
}

TEST_CASE("the stream key of an RTMP URL is hidden") {
  CHECK(redact_urls("rtmp://a.rtmp.youtube.com/live2/abcd-efgh-ijkl") == "rtmp://a.rtmp.youtube.com/live2/***");
  CHECK(redact_urls("rtmps://live-api-s.facebook.com:443/rtmp/FB-123?s_bl=1") ==
        "rtmps://live-api-s.facebook.com:443/rtmp/***?s_bl=1");
  CHECK(redact_urls("rtmp://u:p@host/app/instance/key") == "rtmp://***@host/app/instance/***");
  CHECK(redact_urls("rtmpt://host/app/key") == "rtmpt://host/app/***");
  CHECK(redact_urls("rtmp://host/app") == "rtmp://host/app");  // an application, no key
}

TEST_CASE("URLs inside longer messages: FFmpeg's lines and ours") {
  CHECK(redact_urls("[tcp @ 0x55d0c0] Connection to tcp://user:pass@127.0.0.1:9 failed: Connection refused\n") ==
        "[tcp @ 0x55d0c0] Connection to tcp://***@127.0.0.1:9 failed: Connection refused\n");
  CHECK(redact_urls("rtsp://admin:s3cret@127.0.0.1:9/x: Connection refused") ==
        "rtsp://***@127.0.0.1:9/x: Connection refused");
  CHECK(redact_urls("hazefree: warning: rtmp://h/live/KEY: the source ended; reconnecting") ==
        "hazefree: warning: rtmp://h/live/***: the source ended; reconnecting");
  CHECK(redact_urls("in 'srt://h:1?passphrase=abcdefghij' and \"tcp://a:b@h:2\"") ==
        "in 'srt://h:1?passphrase=***' and \"tcp://***@h:2\"");
  CHECK(redact_urls("(rtsp://a:b@h/x), http://c:d@e/f.") == "(rtsp://***@h/x), http://***@e/f.");
  CHECK(redact_urls("two lines rtsp://a:b@h/x\nrtsp://c:d@i/y") == "two lines rtsp://***@h/x\nrtsp://***@i/y");
  // A URL inside another's path or query.
  CHECK(redact_urls("http://proxy/http://u:p@cam/x") == "http://proxy/http://***@cam/x");
  CHECK(redact_urls("http://h/?next=rtsp://u:p@cam/x") == "http://h/?next=rtsp://***@cam/x");
}

TEST_CASE("redacting twice changes nothing more") {
  for (const char* text : {"rtsp://admin:s3cret@cam/x", "srt://h:9?passphrase=abcdefghij&streamid=a:b:c:d",
                           "rtmp://h/live/KEY?token=x", "Connection to tcp://u:p@h:9 failed"}) {
    const std::string once = redact_urls(text);
    CHECK(redact_urls(once) == once);
  }
}

namespace {

// The message of opening a TCP source with a password where nothing listens (the discard port).
std::string unreachable_source_error() {
  hazefree::io::InputOptions options;
  options.url = "tcp://camuser:Pa55word@127.0.0.1:9";
  try {
    hazefree::io::MediaReader reader(options);
  } catch (const hazefree::io::IoError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("FFmpeg's own lines go through the redaction, with their prefix, and its level filter") {
  const std::string path = hazefree::test::temp_dir("url_redaction") + "/stderr.txt";
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  std::FILE* capture = std::fopen(path.c_str(), "w");
  REQUIRE(capture);
  dup2(fileno(capture), STDERR_FILENO);
  hazefree::io::install_ffmpeg_log_callback();
  const int level = av_log_get_level();
  av_log_set_level(AV_LOG_ERROR);
  unreachable_source_error();
  av_log(nullptr, AV_LOG_ERROR, "whole line rtmp://h/live/%s ", "SplitKey1");
  av_log(nullptr, AV_LOG_ERROR, "written in two calls\n");
  av_log(nullptr, AV_LOG_INFO, "below the level: rtsp://u:InfoPass@h/x\n");
  av_log_set_level(level);
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::fclose(capture);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  const std::string log = text.str();
  INFO(log);
  CHECK(log.find("Pa55word") == std::string::npos);
  CHECK(log.find("[tcp @ 0x") != std::string::npos);
  CHECK(log.find("Connection to tcp://***@127.0.0.1:9") != std::string::npos);
  CHECK(log.find("whole line rtmp://h/live/*** written in two calls\n") != std::string::npos);
  CHECK(log.find("SplitKey1") == std::string::npos);
  CHECK(log.find("InfoPass") == std::string::npos);
  CHECK(log.find("below the level") == std::string::npos);
}

TEST_CASE("a reader's error for an unreachable source holds no password") {
  const std::string message = unreachable_source_error();
  REQUIRE(!message.empty());
  CHECK(message.find("Pa55word") == std::string::npos);
  CHECK(message.find("camuser") == std::string::npos);
  CHECK(message.find("tcp://***@127.0.0.1:9") != std::string::npos);
}
