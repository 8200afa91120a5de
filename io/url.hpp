// What the name of an input or output is, and how a URL is shown in text.
#pragma once

#include <string>
#include <string_view>

namespace hazefree::io {

// `text` with the secrets of every URL in it (scheme://..., also inside a longer message such as
// FFmpeg's "Connection to tcp://user:pass@host:9 failed") replaced by "***":
//   - the user information: "rtsp://admin:s3cret@cam/x" -> "rtsp://***@cam/x" (any scheme);
//   - query values whose name says they are secret: pass, passwd, password, passphrase, pwd,
//     token, key, secret, auth, authorization, signature, credential(s) (alone or ending a name,
//     as in access_token or api_key; any case) and sig: "srt://h:9?passphrase=***";
//   - an SRT streamid whole: it often carries a stream key or user and password
//     (MediaMTX's "publish:path:user:pass", SRS's "#!::r=app/KEY");
//   - the stream key of an RTMP URL (rtmp, rtmps, rtmpt, rtmpe, rtmpte, rtmpts), the last element
//     of a path of two or more: "rtmp://host/live/KEY" -> "rtmp://host/live/***".
// A URL ends at white space or a quote; punctuation at its very end (": Connection refused")
// stays outside it. Applying it twice changes nothing more. The user information ends at the
// last '@' before the first '/', '?' or '#', as FFmpeg splits it; "user:pa/ss@host", which FFmpeg
// would not read as a password, is hidden too.
std::string redact_urls(std::string_view text);

// The local file that the name of an input or output (or a --stats file) names: the name with
// "file:" taken off, or "" for stdin/stdout, pipes and URLs, which name no file.
std::string local_file(const std::string& name);

// Whether two names of local files (local_file()) are one file however they are spelled: the
// same file where both exist, else the same absolute place once "." and "..", and the links of
// the folders that exist, are resolved ("out.mp4", "./out.mp4", "sub/../out.mp4" and
// "/tmp/out.mp4" run in /tmp). False where either names no file.
bool same_local_file(const std::string& a, const std::string& b);

}  // namespace hazefree::io

namespace hazefree::io::detail {

// True for "-", "pipe:..." and names with "://": streams FFmpeg opens itself, not files.
inline bool is_url(const std::string& url) {
  return url == "-" || url.find("://") != std::string::npos || url.rfind("pipe:", 0) == 0;
}

}  // namespace hazefree::io::detail
