// The fuzz harnesses, shared by the libFuzzer targets (HAZEFREE_FUZZ, clang) and by the replay
// suite that runs every committed corpus input in the normal test run. A harness returns
// normally for any input; only the documented error types may be thrown inside and are caught
// there, so anything else escaping (or a sanitizer report) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hazefree::fuzz {

// TOML bytes into apply_config_file(); the same bytes, line by line, into set_config_value()
// as key=value; and, split at white space, into parse_command_line() as argv words.
void config_one_input(const std::uint8_t* data, std::size_t size);
// Arbitrary bytes as a media file into io::MediaReader, reading a few small pictures.
void reader_one_input(const std::uint8_t* data, std::size_t size);
// Raw HTTP request bytes into the service's HTTP side, in memory, as one connection's requests
// (the head checks, httplib's parser, Host and token checks, limits, the routes and the PATCH
// body); the first byte chooses a service without (even) or with (odd) a token.
void serve_one_input(const std::uint8_t* data, std::size_t size);

}  // namespace hazefree::fuzz
