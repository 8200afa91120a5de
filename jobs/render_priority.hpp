// The job's last renders end together. Once no chunk is left to hand out, the renders still
// running are the job's end: a render with fewer frames left than the one with the most gives up
// part of its share of the cores to it, by a higher nice value for its threads (x264's, its
// decoder's, its processing's: they take the name of the render's thread, hf-render-TASK). No
// render pauses, so no core idles while any render has work: the share moves, the work does not.
// On a 16-core host the twelve equal renders of a 3008-frame job ended up to a second apart, the
// cores idling as they ended one by one (docs/SCALING.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace hazefree::jobs {

// The name of the thread that runs render `task` (15 characters at most, as Linux keeps them).
std::string render_thread_name(int task);

// The nice value each running render takes, by task, from the frames it has left: 0 for the one
// with the most, one step more for each tenth fewer, at most `most` (the CPU share of a nice value
// falls by about a fifth a step). Nothing when fewer than two renders have frames left.
std::map<int, int> balanced_nice(const std::map<int, std::int64_t>& frames_left, int most = 10);

// Sets the nice value of every thread of this process named for a render in `nice` (by task), each
// raised by `floor`. Where a nice value cannot be lowered (no CAP_SYS_NICE), returns the floor
// that keeps the renders' differences (their values raised together); else `floor`.
int apply_render_nice(const std::map<int, int>& nice, int floor);

}  // namespace hazefree::jobs
