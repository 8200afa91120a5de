// Every failure is an IoError whose one-line message names the input or output.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>

#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "support/test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace hazefree;
using hazefree::test::sample_path;
using hazefree::test::temp_dir;

namespace {

// The message of the IoError that opening `url` throws ("" if none).
std::string open_error(const std::string& url, const std::string& format = "") {
  io::InputOptions options;
  options.url = url;
  options.format = format;
  try {
    io::MediaReader reader(options);
    while (reader.read() != io::MediaReader::Item::end) {
    }
  } catch (const io::IoError& error) {
    return error.what();
  }
  return "";
}

std::string writer_error(const io::OutputOptions& output, const std::string& input) {
  io::InputOptions options;
  options.url = input;
  io::MediaReader reader(options);
  try {
    io::MediaWriter writer(output, reader, reader.video().width, reader.video().height,
                           reader.video().format);
  } catch (const io::IoError& error) {
    return error.what();
  }
  return "";
}

bool names(const std::string& message, const std::string& path) {
  return message.rfind(path + ": ", 0) == 0 && message.find('\n') == std::string::npos;
}

}  // namespace

TEST_CASE("unreadable inputs give IoError naming the path") {
  const std::string dir = temp_dir("io_errors_inputs");
  const std::string missing = dir + "/missing.mp4";
  const std::string empty = dir + "/empty.mp4";
  const std::string random = dir + "/random.mp4";
  const std::string text = dir + "/text.png";
  test::write_bytes(empty, "");
  std::mt19937 generator(7);
  std::string noise(64 * 1024, '\0');
  for (char& c : noise) c = static_cast<char>(generator() & 0xff);
  test::write_bytes(random, noise);
  test::write_bytes(text, "this is a text file, not a picture\n");

  for (const std::string& path : {missing, dir, empty, random, text}) {
    CAPTURE(path);
    const std::string message = open_error(path);
    CAPTURE(message);
    CHECK(names(message, path));
  }
  CHECK(open_error(missing).find("No such file or directory") != std::string::npos);
  CHECK(open_error(empty).find("empty") != std::string::npos);
  CHECK(open_error(dir).find("directory") != std::string::npos);
  const std::string unknown = open_error(sample_path("hazy-street.mp4"), "no-such-format");
  CHECK(unknown.find("no-such-format") != std::string::npos);
}

TEST_CASE("an existing output is refused without overwrite") {
  const std::string dir = temp_dir("io_errors_exists");
  const std::string output = dir + "/out.png";
  test::write_bytes(output, "old");
  io::OutputOptions options;
  options.url = output;
  const std::string message = writer_error(options, sample_path("images/coffee.png"));
  CHECK(message == output + ": already exists (use -y to overwrite)");
  CHECK(std::filesystem::file_size(output) == 3);  // untouched

  options.overwrite = true;
  CHECK(test::copy_through(sample_path("images/coffee.png"), options) == 1);
  CHECK(std::filesystem::file_size(output) > 1000);
}

TEST_CASE("the input is refused as output, even with overwrite") {
  const std::string dir = temp_dir("io_errors_same");
  const std::string path = dir + "/in.y4m";
  test::write_y4m(path, 16, 16, 2);
  io::OutputOptions options;
  options.url = path;
  options.overwrite = true;
  const std::string message = writer_error(options, path);
  CAPTURE(message);
  CHECK(names(message, path));
  CHECK(message.find("input") != std::string::npos);
  // The same file by another name.
  options.url = dir + "/../io_errors_same/in.y4m";
  CHECK(names(writer_error(options, path), options.url));
}

TEST_CASE("unknown encoders and formats are named") {
  const std::string dir = temp_dir("io_errors_encoder");
  io::OutputOptions options;
  options.url = dir + "/out.mp4";
  options.encoder = "no_such_encoder";
  std::string message = writer_error(options, sample_path("hazy-street.mp4"));
  CHECK(message == options.url + ": unknown encoder 'no_such_encoder' (ffmpeg -encoders lists them)");
  options.encoder = "aac";
  CHECK(names(writer_error(options, sample_path("hazy-street.mp4")), options.url));
  options.encoder.clear();
  options.url = dir + "/out.unknownext";
  CHECK(names(writer_error(options, sample_path("hazy-street.mp4")), options.url));
  options.url = dir + "/no-folder/out.mp4";
  CHECK(names(writer_error(options, sample_path("hazy-street.mp4")), options.url));
  CHECK(std::filesystem::is_empty(dir));  // nothing left behind
}
