// The join of a job's chunks (SPEC 8): encoded video chunks stream-copied in order into one
// output, with the source's audio, subtitle and data streams copied once, interleaved by time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/media_writer.hpp"

namespace hazefree::io {

// `chunk_files` in time order (each read for its video stream with PacketReader, one opened at a
// time beside the first, whose codec parameters all must share); `source` the input the chunks
// were made from, with its span (InputOptions::trim) when the job covers only one. Writes
// through MediaWriter (temporary name, renamed at the end) and returns the video packets written. Throws IoError naming the file: a chunk encoded with other codec
// parameters than the first, or a total other than `expected_frames` (no output is left then).
// `before_chunk(i)`, where given, is called before chunk i's file is opened (a join that runs
// beside the renders waits there for it; what it throws stops the join, leaving no output).
std::int64_t join_chunks(const std::vector<std::string>& chunk_files, const InputOptions& source,
                         const OutputOptions& output, std::int64_t expected_frames,
                         const std::function<void(std::size_t)>& before_chunk = {});

}  // namespace hazefree::io
