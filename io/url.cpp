#include "io/url.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

namespace hazefree::io {
namespace {

constexpr std::string_view kMask = "***";
constexpr auto npos = std::string_view::npos;

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

// Where a URL written in a message ends.
bool ends_url(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`';
}

// Punctuation of the message around the URL ("...x: Connection refused", "(rtsp://...)").
bool is_trailing_punctuation(char c) { return c != '\0' && std::strchr(".,;:!?)]}", c) != nullptr; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view text, std::string_view end) {
  return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

// A query parameter whose value is a secret.
bool is_secret_name(std::string_view raw) {
  const std::string name = lower(raw);
  if (name == "sig" || name == "streamid") return true;
  static constexpr std::string_view kEndings[] = {"pass",  "passwd", "password", "passphrase",    "pwd",
                                                  "token", "key",    "secret",   "auth",          "authorization",
                                                  "signature", "credential", "credentials"};
  for (const std::string_view ending : kEndings)
    if (ends_with(name, ending)) return true;
  return false;
}

// "user:password" rather than "host[:port]" or "[v6 address]:port": something not a port number
// follows the first ':'.
bool looks_like_user_password(std::string_view authority) {
  if (authority.empty() || authority.front() == '[') return false;
  const auto colon = authority.find(':');
  if (colon == npos || colon + 1 == authority.size()) return false;
  for (std::size_t i = colon + 1; i < authority.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(authority[i]))) return true;
  return false;
}

// The authority of what follows "scheme://": up to the first '/', '?' or '#'.
std::size_t authority_end(std::string_view rest) {
  const auto end = rest.find_first_of("/?#");
  return end == npos ? rest.size() : end;
}

std::string redact_path(std::string_view path, bool rtmp) {
  if (!rtmp) return redact_urls(path);  // a URL inside the path (a proxy's) has its own secrets
  // RTMP: app[/instance]/KEY: the last element of two or more is the stream key.
  std::size_t elements = 0, last_begin = 0, last_end = 0;
  for (std::size_t i = 0; i < path.size();) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const auto slash = path.find('/', i);
    const std::size_t end = slash == npos ? path.size() : slash;
    ++elements;
    last_begin = i;
    last_end = end;
    i = end;
  }
  if (elements < 2) return std::string(path);
  return std::string(path.substr(0, last_begin)) + std::string(kMask) + std::string(path.substr(last_end));
}

std::string redact_query(std::string_view query) {
  std::string out;
  for (std::size_t i = 0;;) {
    const auto amp = query.find('&', i);
    const std::string_view parameter = query.substr(i, amp == npos ? npos : amp - i);
    const auto eq = parameter.find('=');
    if (eq != npos && eq + 1 < parameter.size() && is_secret_name(parameter.substr(0, eq))) {
      out.append(parameter.substr(0, eq + 1));
      out.append(kMask);
    } else if (eq != npos) {
      out.append(parameter.substr(0, eq + 1));
      out += redact_urls(parameter.substr(eq + 1));  // a URL as a value ("?next=http://u:p@h")
    } else {
      out.append(parameter);
    }
    if (amp == npos) return out;
    out += '&';
    i = amp + 1;
  }
}

// One URL: "scheme://[user[:password]@]host[:port][/path][?query]"; `scheme_length` > 0.
std::string redact_url(std::string_view url, std::size_t scheme_length) {
  const std::string scheme = lower(url.substr(0, scheme_length));
  std::string out(url.substr(0, scheme_length + 3));
  std::string_view rest = url.substr(scheme_length + 3);

  std::size_t authority = authority_end(rest);
  std::size_t at = rest.substr(0, authority).rfind('@');
  if (at == npos && authority < rest.size() && looks_like_user_password(rest.substr(0, authority)))
    at = rest.find('@', authority);  // a password with '/', '?' or '#' in it
  if (at != npos) {
    out.append(kMask);
    rest.remove_prefix(at);
    authority = authority_end(rest);
  }
  out.append(rest.substr(0, authority));
  rest.remove_prefix(authority);

  // A query runs to the URL's end: an SRT streamid may hold a '#' ("#!::r=app/key").
  const auto question = rest.find('?');
  const std::string_view path = rest.substr(0, question);
  out += redact_path(path, scheme.rfind("rtmp", 0) == 0);
  if (question == npos) return out;
  out += '?';
  out += redact_query(rest.substr(question + 1));
  return out;
}

}  // namespace

std::string redact_urls(std::string_view text) {
  std::string out;
  std::size_t copied = 0;  // text before this is in `out`
  std::size_t search = 0;
  for (;;) {
    const auto separator = text.find("://", search);
    if (separator == npos) break;
    search = separator + 3;
    std::size_t start = separator;
    while (start > copied && is_scheme_char(text[start - 1])) --start;
    while (start < separator && !std::isalpha(static_cast<unsigned char>(text[start]))) ++start;
    if (start == separator) continue;  // no scheme: not a URL

    std::size_t end = search;
    while (end < text.size() && !ends_url(text[end])) ++end;
    // "rtsp://admin:my pass@cam/x": FFmpeg takes white space in a password as it is. When the
    // part before the space is user:password-like, the URL goes on to the '@' on the same line.
    const std::string_view token = text.substr(search, end - search);
    if (token.find('@') == npos && looks_like_user_password(token.substr(0, authority_end(token)))) {
      const auto at = text.find('@', end);
      if (at != npos && text.find('\n', end) > at && text.substr(end, at - end).find("://") == npos) {
        end = at;
        while (end < text.size() && !ends_url(text[end])) ++end;
      }
    }
    while (end > search && is_trailing_punctuation(text[end - 1])) --end;

    out.append(text.substr(copied, start - copied));
    out += redact_url(text.substr(start, end - start), separator - start);
    copied = end;
    search = std::max(search, end);
  }
  out.append(text.substr(copied));
  return out;
}

std::string local_file(const std::string& name) {
  if (name.empty() || detail::is_url(name)) return "";
  return name.rfind("file:", 0) == 0 ? name.substr(5) : name;
}

bool same_local_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  const std::string file_a = local_file(a), file_b = local_file(b);
  if (file_a.empty() || file_b.empty()) return false;
  std::error_code ec_a, ec_b;
  if (fs::exists(file_a, ec_a) && fs::exists(file_b, ec_b)) return fs::equivalent(file_a, file_b, ec_a);
  // Absolute first: weakly_canonical() leaves a relative path whose first part does not exist
  // relative ("out.mp4", "sub/../out.mp4"), which then never equals "/tmp/out.mp4". The folders
  // that exist are resolved (links, ".."), the rest compared as written, "." and ".." taken out.
  const fs::path abs_a = fs::absolute(file_a, ec_a), abs_b = fs::absolute(file_b, ec_b);
  if (ec_a || ec_b) return false;
  if (abs_a.lexically_normal() == abs_b.lexically_normal()) return true;
  const fs::path ca = fs::weakly_canonical(abs_a, ec_a), cb = fs::weakly_canonical(abs_b, ec_b);
  return !ec_a && !ec_b && !ca.empty() && ca == cb;
}

}  // namespace hazefree::io
