// A job's plan (SPEC 8): its inputs, the run's settings, and the chunks every task processes.
// Written once by `hazefree job plan` into DIR/plan.json (with the settings also as
// DIR/settings.toml, readable and reusable as a preset); every later stage reads it. The plan
// is made from the inputs' packets alone (no decoding): a chunk starts at any frame and is a
// range of presentation timestamps, so its frames are exactly the single run's frames in that
// range; its decoding starts at the keyframe at or before its first frame (the pre-roll, decoded
// and dropped).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "io/packet_reader.hpp"
#include "jobs/job_options.hpp"
#include "pipeline/options.hpp"

namespace hazefree::jobs {

// A count (any integer: a size, an int) and its noun, singular or plural: "1 chunk", "3 chunks".
template <typename Count>
std::string counted(Count n, const std::string& noun) {
  static_assert(std::is_integral_v<Count>, "counted() takes an integer count");
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// The layout of DIR and of plan.json; a DIR of another version is refused by every stage but plan.
inline constexpr int kPlanVersion = 2;  // 2: chunks cut at any frame, with their pre-roll

// Every failure of a job's stage: one line naming DIR, the task or the input, and the cause.
struct JobError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A stage stopped because the job around it ended first (recorded as interrupted, not failed).
struct JobInterrupted : JobError {
  using JobError::JobError;
};

// One chunk of one input: a task of the analyze and render arrays.
struct ChunkPlan {
  int task = 0;                   // index in the arrays (tasks are numbered longest first)
  int input = 0;                  // index into Plan::inputs
  int number = 0;                 // chunk number within its input, in time order
  std::int64_t first_frame = 0;   // index of its first frame in presentation order
  std::int64_t frames = 0;        // frames in the chunk
  bool from_start = false;        // decoding starts at the beginning (the input's first chunk)
  bool to_end = false;            // up to the end of the input (its last chunk)
  std::int64_t first_pts = 0;     // pts of its first frame (video time base)
  std::int64_t end_pts = 0;       // pts of the next chunk's first frame (unless to_end)
  std::int64_t seek_dts = 0;      // decoding starts at the keyframe at or before this dts
  std::int64_t preroll = 0;       // pictures decoded from there and dropped before its first frame
};

struct InputPlan {
  std::string input;
  std::string output;
  std::int64_t frames = 0;
  double seconds = 0.0;           // duration from the timestamps
  std::int64_t bytes = 0;         // size and modification time when planned: a changed input
  std::int64_t modified = 0;      // makes the plan stale
  std::vector<int> chunks;        // task indices in time order
};

struct Plan {
  int version = kPlanVersion;
  std::string id;                 // identifies this plan's results (a hash of everything above)
  std::string made_by;            // "hazefree 0.1.0"
  std::string settings_toml;      // the run's configuration (format_config)
  bool overwrite = false;         // -y: the outputs may replace existing files
  bool analysis = false;          // the mode carries state between frames: analyze runs
  std::vector<InputPlan> inputs;
  std::vector<ChunkPlan> tasks;   // by task index
};

// How a plan cuts each input.
struct ChunkRequest {
  int chunks = 0;                        // about this many chunks per input (0: not set)
  double chunk_seconds = 0.0;            // or chunks of about this length
  std::vector<std::int64_t> chunk_starts;  // or exactly these first frames (any frame) per input
  // With `chunks`: the workers that will run them at once. When there are more chunks than
  // workers, the chunks shrink toward the end of the input (the first about twice the last), so
  // that the last wave's chunks end close together; 0: chunks of equal length.
  int workers = 0;
};

// The request of a command line's --chunks / --chunk-seconds / --chunk-starts (one chunk per
// input when none is given); throws UsageError for a malformed --chunk-starts.
ChunkRequest chunk_request(const JobOptions& job);

// The inputs' packet indexes by absolute path, kept by a caller that plans the same inputs more
// than once (--chunks auto weighs several chunk counts): each file is read once.
using PacketIndexes = std::map<std::string, io::VideoIndex>;

// Indexes the inputs' packets (or takes them from `indexes`, adding those it reads) and cuts
// them; throws JobError naming the input.
Plan make_plan(const std::vector<std::pair<std::string, std::string>>& inputs_outputs,
               const RunOptions& settings, const ChunkRequest& request, PacketIndexes* indexes = nullptr);

// A file's modification time as InputPlan::modified records it: whole seconds of the file
// system's clock (std::filesystem's, whose epoch is not the Unix one); 0 when unreadable.
std::int64_t modification_time(const std::string& path);

// DIR/plan.json: written under a temporary name and renamed; read with its version checked.
void save_plan(const std::string& dir, const Plan& plan);
Plan load_plan(const std::string& dir);
// RunOptions from the plan's settings (the same keys the single run uses).
RunOptions plan_settings(const Plan& plan);

// The task of `chunk_option` (>= 0), else SLURM_ARRAY_TASK_ID, else JOB_COMPLETION_INDEX;
// JobError when none is given or it is out of range.
int task_index(const Plan& plan, const std::string& dir, int chunk_option);

// "in.mp4 chunk 2/7 (frames 240-359)" for messages.
std::string describe_task(const Plan& plan, int task);

}  // namespace hazefree::jobs
