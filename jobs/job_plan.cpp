#include "jobs/job_plan.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "io/logging.hpp"
#include "io/packet_reader.hpp"
#include "jobs/job_files.hpp"
#include "kernels/temporal_state.hpp"
#include "pipeline/frame_stats.hpp"

namespace hazefree::jobs {
namespace fs = std::filesystem;
using nlohmann::json;

// plan.json's inputs and tasks: one JSON object each, its keys the members' names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InputPlan, input, output, frames, seconds, bytes, modified, chunks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChunkPlan, task, input, number, first_frame, frames, from_start, to_end, first_pts,
                                   end_pts, seek_dts, preroll)

namespace {

// FNV-1a, 64 bits: the same id for the same plan on every host and build.
std::string hash_text(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

// Where `--chunks n` cuts `frames` frames (the first frames of chunks 1 .. n - 1): into equal
// chunks, or, when more chunks than `workers` run in waves, into chunks that shrink linearly
// toward the end (the first three times the last), so that a worker that finishes early takes a
// shorter chunk and the last wave ends together. A cut within an eighth of its chunks' length of
// a keyframe moves onto it (no pre-roll to decode there). Every chunk keeps a frame at least, so
// `n` (at most `frames`) chunks come out even where the shrinking chunks are shorter than a frame.
std::vector<std::int64_t> chunk_boundaries(std::int64_t frames, int n, int workers,
                                           const std::vector<std::int64_t>& keyframes) {
  const bool shrinking = workers > 0 && n > workers;
  auto weight = [&](int i) { return shrinking && n > 1 ? 1.0 + 2.0 * (n - 1 - i) / (n - 1) : 1.0; };
  std::vector<double> before(static_cast<std::size_t>(n) + 1, 0.0);  // weights of chunks 0 .. i - 1
  for (int i = 0; i < n; ++i) before[static_cast<std::size_t>(i) + 1] = before[static_cast<std::size_t>(i)] + weight(i);
  std::vector<std::int64_t> cuts;
  for (int i = 1; i < n; ++i) {
    const double at = before[static_cast<std::size_t>(i)] / before[static_cast<std::size_t>(n)] * static_cast<double>(frames);
    std::int64_t cut = std::llround(at);
    const double length = std::min(weight(i - 1), weight(i)) / before[static_cast<std::size_t>(n)] * static_cast<double>(frames);
    const auto tolerance = static_cast<std::int64_t>(length / 8.0);
    auto it = std::lower_bound(keyframes.begin(), keyframes.end(), cut);
    std::int64_t nearest = -1;
    if (it != keyframes.end()) nearest = *it;
    if (it != keyframes.begin() && (nearest < 0 || cut - *std::prev(it) <= nearest - cut)) nearest = *std::prev(it);
    if (nearest > 0 && std::llabs(nearest - cut) <= tolerance) cut = nearest;
    const std::int64_t earliest = cuts.empty() ? 1 : cuts.back() + 1;  // chunk i - 1 keeps a frame
    const std::int64_t latest = frames - (n - i);                       // and so do chunks i .. n - 1
    cuts.push_back(std::clamp(cut, earliest, latest));
  }
  return cuts;
}

// The chunks' first frames (sorted, without 0) for one input: any frame, wherever the input's
// keyframes are (a chunk that starts between keyframes decodes from the one before its first
// frame and drops the frames before it).
std::vector<std::int64_t> choose_starts(const std::string& input, const std::vector<std::int64_t>& keyframes,
                                        const std::vector<std::int64_t>& sorted_pts, double seconds_per_tick,
                                        const ChunkRequest& request) {
  const auto frames = static_cast<std::int64_t>(sorted_pts.size());
  std::set<std::int64_t> chosen;
  if (!request.chunk_starts.empty()) {
    for (const std::int64_t start : request.chunk_starts) {
      if (start < 0 || start >= frames)
        throw JobError(fmt::format("{}: chunk start {} is outside its {} frames", input, start, frames));
      chosen.insert(start);
    }
  } else if (request.chunk_seconds > 0 && seconds_per_tick > 0) {
    // The first frame at or after each multiple of the chunk length.
    const double first = static_cast<double>(sorted_pts.front()) * seconds_per_tick;
    for (int i = 1;; ++i) {
      const double t = first + i * request.chunk_seconds;
      const auto target_pts = static_cast<std::int64_t>(std::ceil(t / seconds_per_tick - 1e-6));
      const std::int64_t target = std::lower_bound(sorted_pts.begin(), sorted_pts.end(), target_pts) - sorted_pts.begin();
      if (target >= frames) break;
      chosen.insert(target);
    }
  } else {
    // A chunk holds a frame at least: more chunks than frames give one chunk per frame, said.
    if (request.chunks > frames)
      io::warning(fmt::format("{}: --chunks {}: it has {}, so {} of one frame each", input, request.chunks,
                              counted(frames, "frame"), counted(frames, "chunk")));
    const auto n = static_cast<int>(std::min<std::int64_t>(std::max(1, request.chunks), frames));
    for (const std::int64_t cut : chunk_boundaries(frames, n, request.workers, keyframes)) chosen.insert(cut);
  }
  std::vector<std::int64_t> starts;
  for (const std::int64_t s : chosen)
    if (s > 0 && s < frames) starts.push_back(s);
  return starts;
}

// The pictures decoded from the keyframe at `seek_dts` (decode order) and dropped before the
// chunk's first frame (pts `first_pts`): those with an earlier pts, up to the second keyframe at
// or past the cut (an open GOP's next keyframe may still be followed by pictures before it).
std::int64_t count_preroll(const std::vector<io::VideoPacketInfo>& packets, std::int64_t seek_dts, std::int64_t first_pts) {
  std::size_t i = 0;
  while (i < packets.size() && !(packets[i].keyframe && packets[i].dts == seek_dts)) ++i;
  std::int64_t preroll = 0;
  int keys_past = 0;
  for (; i < packets.size(); ++i) {
    if (packets[i].keyframe && packets[i].pts >= first_pts && ++keys_past == 2) break;
    if (packets[i].pts < first_pts) ++preroll;
  }
  return preroll;
}

// Refused as the single run refuses it, before anything is planned or rendered.
void check_output(const std::string& input, const std::string& output, bool overwrite) {
  if (const std::string why = io::output_problem(output, input, overwrite); !why.empty())
    throw JobError(fmt::format("{}: {}", output, why));
}

std::string plan_identity(const Plan& plan) {
  std::ostringstream text;
  text << plan.version << '\n' << plan.settings_toml << '\n' << plan.overwrite << '\n';
  for (const InputPlan& in : plan.inputs)
    text << in.input << '|' << in.output << '|' << in.frames << '|' << in.bytes << '|' << in.modified << '\n';
  for (const ChunkPlan& c : plan.tasks)
    text << c.task << ',' << c.input << ',' << c.number << ',' << c.first_frame << ',' << c.frames << ','
         << c.first_pts << ',' << c.end_pts << ',' << c.seek_dts << ',' << c.preroll << ',' << c.from_start << c.to_end
         << '\n';
  return hash_text(text.str());
}

}  // namespace

std::int64_t modification_time(const std::string& path) {
  std::error_code error;
  const auto t = fs::last_write_time(path, error);
  if (error) return 0;
  return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

ChunkRequest chunk_request(const JobOptions& job) {
  ChunkRequest request;
  request.chunks = job.active() ? job.chunks : 1;
  request.chunk_seconds = job.chunk_seconds;
  for (const std::string& part : comma_list(job.chunk_starts)) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) throw std::invalid_argument(part);
      request.chunk_starts.push_back(v);
    } catch (const std::logic_error&) {
      throw UsageError(fmt::format("--chunk-starts {}: expected frame numbers separated by commas", job.chunk_starts));
    }
  }
  return request;
}

Plan make_plan(const std::vector<std::pair<std::string, std::string>>& inputs_outputs, const RunOptions& settings,
               const ChunkRequest& request, PacketIndexes* indexes) {
  if (inputs_outputs.empty()) throw JobError("job plan: no INPUT OUTPUT pair given");
  Plan plan;
  plan.made_by = std::string("hazefree ") + HAZEFREE_VERSION;
  RunOptions saved = settings;
  // --stats: where the join writes the job's frame statistics, whichever folder a task runs in.
  if (!saved.stats_path.empty()) {
    if (saved.stats_path.rfind("pipe:", 0) == 0 || saved.stats_path == "-")
      throw UsageError("stats", fmt::format("--stats {}: a job joins its chunks' statistics into a file; give a file name",
                                            saved.stats_path));
    if (saved.stats_path.rfind("file:", 0) == 0) saved.stats_path.erase(0, 5);
    saved.stats_path = fs::absolute(saved.stats_path).lexically_normal().string();
    // The join writes FILE, or FILE.0, FILE.1, ... with several inputs: in an existing folder, not
    // over an input or an output, replaced only with -y.
    const std::size_t files = inputs_outputs.size();
    for (std::size_t i = 0; i < files; ++i) {
      const std::string path = files > 1 ? fmt::format("{}.{}", saved.stats_path, i) : saved.stats_path;
      for (const auto& [input, output] : inputs_outputs) {
        try {
          check_stats_file(path, input, output, settings.output_options.overwrite);
        } catch (const std::runtime_error& e) {
          throw JobError(e.what());
        }
      }
    }
  }
  plan.settings_toml = format_config(saved);
  plan.overwrite = settings.output_options.overwrite;
  plan.analysis = carries_temporal_state(settings.processing);

  std::vector<ChunkPlan> chunks;
  std::set<std::string> outputs;
  for (const auto& [input_arg, output_arg] : inputs_outputs) {
    if (input_arg == "-" || input_arg.find("://") != std::string::npos)
      throw JobError(fmt::format("{}: a job needs a file it can read twice (not a pipe or a stream)", input_arg));
    std::error_code error;
    if (!fs::exists(input_arg, error)) throw JobError(fmt::format("{}: No such file or directory", input_arg));
    InputPlan in;
    in.input = fs::absolute(input_arg).lexically_normal().string();
    in.output = fs::absolute(output_arg).lexically_normal().string();
    if (!outputs.insert(in.output).second) throw JobError(fmt::format("{}: named as the output of two inputs", output_arg));
    check_output(in.input, in.output, plan.overwrite);
    io::OutputOptions output = settings.output_options;
    output.url = output_arg;
    if (io::writes_pictures(output))
      throw JobError(fmt::format("{}: a job joins its chunks into one video file; pictures (a still or a sequence) are "
                                 "written by a single run: leave out --chunks", output_arg));
    in.bytes = static_cast<std::int64_t>(fs::file_size(in.input, error));
    in.modified = modification_time(in.input);

    PacketIndexes read_here;  // where the caller keeps none
    PacketIndexes& known = indexes ? *indexes : read_here;
    auto entry = known.find(in.input);
    if (entry == known.end()) {
      try {
        entry = known.emplace(in.input, io::index_video_packets(in.input)).first;
      } catch (const io::IoError& e) {
        throw JobError(e.what());
      }
    }
    const io::VideoIndex& index = entry->second;
    const std::size_t n = index.packets.size();
    std::vector<std::int64_t> sorted_pts(n);
    for (std::size_t i = 0; i < n; ++i) sorted_pts[i] = index.packets[i].pts;
    std::sort(sorted_pts.begin(), sorted_pts.end());
    if (std::adjacent_find(sorted_pts.begin(), sorted_pts.end()) != sorted_pts.end())
      throw JobError(fmt::format("{}: two video packets share a timestamp; this file cannot be cut into chunks", input_arg));
    // Keyframes by presentation position, with the dts to seek to: the keyframe itself where it
    // is a clean start (an IDR), else the keyframe before it in decode order, so that pictures
    // after an open GOP's keyframe that refer back decode fully.
    std::vector<std::int64_t> keyframe_starts;
    std::vector<std::int64_t> seek_of_start;  // parallel to keyframe_starts
    std::int64_t previous_key_dts = LLONG_MIN;
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;  // (frame, seek dts)
    for (std::size_t i = 0; i < n; ++i) {
      const io::VideoPacketInfo& p = index.packets[i];
      if (!p.keyframe) continue;
      const auto frame = std::lower_bound(sorted_pts.begin(), sorted_pts.end(), p.pts) - sorted_pts.begin();
      // A clean start (IDR) needs nothing before it; an open GOP's keyframe needs the GOP before.
      keys.emplace_back(frame, p.clean_start || previous_key_dts == LLONG_MIN ? p.dts : previous_key_dts);
      previous_key_dts = p.dts;
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& [frame, seek] : keys) {
      if (!keyframe_starts.empty() && keyframe_starts.back() == frame) continue;
      keyframe_starts.push_back(frame);
      seek_of_start.push_back(seek);
    }
    const double tick = index.time_base.den ? double(index.time_base.num) / index.time_base.den : 0.0;
    // The span of -ss, -t/-to and --frames: frames lo .. hi - 1 in presentation order; the
    // chunks cut it alone, their frames numbered from its first.
    const std::int64_t all_frames = static_cast<std::int64_t>(n);
    std::int64_t lo = 0, hi = all_frames;
    const io::InputOptions::Trim& trim = settings.input_options.trim;
    if (trim.active()) {
      auto frame_at = [&](double seconds) {
        const std::int64_t pts = io::span_pts(index.start_time_us, seconds, index.time_base);
        return std::lower_bound(sorted_pts.begin(), sorted_pts.end(), pts) - sorted_pts.begin();
      };
      lo = frame_at(trim.start_seconds);
      if (std::isfinite(trim.end_seconds)) hi = frame_at(trim.end_seconds);
      if (trim.max_frames > 0) hi = std::min(hi, lo + trim.max_frames);
      if (lo >= hi)
        throw UsageError("input.start", fmt::format("{}: no frame between -ss {} and the end of the span", input_arg,
                                                    trim.start_seconds));
    }
    const std::vector<std::int64_t> span_pts(sorted_pts.begin() + lo, sorted_pts.begin() + hi);
    std::vector<std::int64_t> span_keyframes;
    for (const std::int64_t f : keyframe_starts)
      if (f >= lo && f < hi) span_keyframes.push_back(f - lo);
    in.frames = hi - lo;
    in.seconds = static_cast<double>(span_pts.back() - span_pts.front()) * tick +
                 (index.frame_rate.num > 0 ? double(index.frame_rate.den) / index.frame_rate.num : 0.0);
    std::vector<std::int64_t> starts = choose_starts(input_arg, span_keyframes, span_pts, tick, request);
    starts.insert(starts.begin(), 0);
    const int input_number = static_cast<int>(plan.inputs.size());
    for (std::size_t k = 0; k < starts.size(); ++k) {
      ChunkPlan c;
      c.input = input_number;
      c.number = static_cast<int>(k);
      c.first_frame = starts[k];
      const std::int64_t end = k + 1 < starts.size() ? starts[k + 1] : in.frames;
      c.frames = end - starts[k];
      c.from_start = k == 0 && lo == 0;
      c.to_end = k + 1 == starts.size() && hi == all_frames;
      c.first_pts = sorted_pts[static_cast<std::size_t>(lo + starts[k])];
      c.end_pts = c.to_end ? 0 : sorted_pts[static_cast<std::size_t>(lo + end)];
      if (!c.from_start) {
        // The keyframe at or before the chunk's first frame (the chunk's own, past the first).
        const auto at = std::upper_bound(keyframe_starts.begin(), keyframe_starts.end(), lo + starts[k]) -
                        keyframe_starts.begin() - 1;
        c.seek_dts = seek_of_start[static_cast<std::size_t>(std::max<std::ptrdiff_t>(at, 0))];
        c.preroll = count_preroll(index.packets, c.seek_dts, c.first_pts);
      }
      chunks.push_back(c);
    }
    plan.inputs.push_back(in);
  }
  // Longest first: the array's first tasks are the ones that take longest.
  std::stable_sort(chunks.begin(), chunks.end(), [](const ChunkPlan& a, const ChunkPlan& b) { return a.frames > b.frames; });
  for (std::size_t t = 0; t < chunks.size(); ++t) {
    chunks[t].task = static_cast<int>(t);
    plan.inputs[static_cast<std::size_t>(chunks[t].input)].chunks.push_back(static_cast<int>(t));
  }
  for (InputPlan& in : plan.inputs)
    std::sort(in.chunks.begin(), in.chunks.end(),
              [&](int a, int b) { return chunks[static_cast<std::size_t>(a)].number < chunks[static_cast<std::size_t>(b)].number; });
  plan.tasks = std::move(chunks);
  plan.id = plan_identity(plan);
  return plan;
}

void save_plan(const std::string& dir, const Plan& plan) {
  json j;
  j["version"] = plan.version;
  j["id"] = plan.id;
  j["made_by"] = plan.made_by;
  j["overwrite"] = plan.overwrite;
  j["analysis"] = plan.analysis;
  j["settings"] = plan.settings_toml;
  j["inputs"] = plan.inputs;
  j["tasks"] = plan.tasks;
  std::error_code error;
  for (const char* folder : {"analysis", "chunks", "state", "logs"}) {
    fs::create_directories(fs::path(dir) / folder, error);
    if (error) throw JobError(fmt::format("{}: cannot create the job directory ({})", dir, error.message()));
  }
  write_file_atomically(plan_path(dir), j.dump(1) + "\n");
  write_file_atomically(dir + "/settings.toml", plan.settings_toml);
}

Plan load_plan(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw JobError(fmt::format("{}: no such job directory", dir));
  const std::string path = plan_path(dir);
  std::ifstream file(path);
  if (!file) throw JobError(fmt::format("{}: no plan.json: not a job directory (make one with `hazefree job plan`)", dir));
  json j;
  try {
    j = json::parse(file);
  } catch (const json::exception& e) {
    throw JobError(fmt::format("{}: plan.json is damaged ({})", dir, e.what()));
  }
  Plan plan;
  try {
    plan.version = j.at("version").get<int>();
    plan.made_by = j.value("made_by", std::string("?"));
    if (plan.version != kPlanVersion)
      throw JobError(fmt::format("{}: planned by {} (job format {}); this is hazefree {} (job format {}): plan the job again",
                                 dir, plan.made_by, plan.version, HAZEFREE_VERSION, kPlanVersion));
    plan.id = j.at("id").get<std::string>();
    plan.overwrite = j.at("overwrite").get<bool>();
    plan.analysis = j.at("analysis").get<bool>();
    plan.settings_toml = j.at("settings").get<std::string>();
    j.at("inputs").get_to(plan.inputs);
    j.at("tasks").get_to(plan.tasks);
  } catch (const json::exception& e) {
    throw JobError(fmt::format("{}: plan.json is damaged ({})", dir, e.what()));
  }
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    const ChunkPlan& c = plan.tasks[t];
    if (c.task != static_cast<int>(t) || c.input < 0 || c.input >= static_cast<int>(plan.inputs.size()))
      throw JobError(fmt::format("{}: plan.json is damaged (task {})", dir, t));
  }
  return plan;
}

RunOptions plan_settings(const Plan& plan) {
  RunOptions options;
  apply_config_text(options, plan.settings_toml, "plan.json settings");
  options.output_options.overwrite = plan.overwrite;
  return options;
}

int task_index(const Plan& plan, const std::string& dir, int chunk_option) {
  int index = chunk_option;
  std::string source = "--chunk";
  if (index < 0) {
    for (const char* variable : {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"}) {
      const char* value = std::getenv(variable);
      if (!value || !*value) continue;
      char* end = nullptr;
      const long parsed = std::strtol(value, &end, 10);
      if (*end != '\0' || parsed < 0 || parsed > INT_MAX)
        throw JobError(fmt::format("{}: {}={} is not a task index", dir, variable, value));
      index = static_cast<int>(parsed);
      source = variable;
      break;
    }
  }
  if (index < 0)
    throw JobError(fmt::format("{}: which task? give --chunk K (or SLURM_ARRAY_TASK_ID / JOB_COMPLETION_INDEX)", dir));
  if (index >= static_cast<int>(plan.tasks.size()))
    throw JobError(fmt::format("{}: {} {} is out of range (the job has tasks 0 to {})", dir, source, index,
                               plan.tasks.size() - 1));
  return index;
}

std::string describe_task(const Plan& plan, int task) {
  const ChunkPlan& c = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(c.input)];
  return fmt::format("{} chunk {}/{} (frames {}-{})", fs::path(in.input).filename().string(), c.number + 1,
                     in.chunks.size(), c.first_frame, c.first_frame + c.frames - 1);
}

}  // namespace hazefree::jobs
